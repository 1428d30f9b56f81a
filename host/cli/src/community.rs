//! `hermetic push`, `pull`, `keygen`, `sign`, `verify`, and loading the tools a policy
//! names by reference: community tools from OCI registries (see `hermetic-distribution`).

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use hermetic::policy::trust::TrustPolicy;
use hermetic::{Registry, ToolSource};
use hermetic_distribution::lock::{Lock, Locked};
use hermetic_distribution::{
    ClientOptions, PublicKey, Reference, SigningKey, Store, Trust, TrustedKeys,
};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Where the tool store is and how to reach registries.
#[derive(Args, Debug, Clone, Default)]
pub struct RegistryArgs {
    /// Plain HTTP instead of HTTPS: only for a registry on this machine (localhost,
    /// 127.0.0.1, ::1).
    #[arg(long)]
    pub insecure: bool,
}

impl RegistryArgs {
    fn options(&self) -> ClientOptions {
        ClientOptions {
            insecure: self.insecure,
            ..ClientOptions::default()
        }
    }
}

/// The tool store: `--store`, else the policy's `[trust] store`, else the default.
pub fn store_dir(flag: Option<&Path>, trust: Option<&TrustPolicy>) -> Result<PathBuf> {
    flag.map(Path::to_path_buf)
        .or_else(|| trust.and_then(|t| t.store.clone()))
        .or_else(Store::default_dir)
        .ok_or_else(|| anyhow!("no tool store: give --store DIR (HOME is not set)"))
}

fn trusted_keys(keys: &[String]) -> Result<TrustedKeys> {
    keys.iter()
        .map(|k| PublicKey::parse(k).with_context(|| "[trust] keys"))
        .collect::<Result<Vec<_>>>()
        .map(TrustedKeys::new)
}

/// `hermetic push FILE REF`.
pub fn push(file: &Path, reference: &str, registry: &RegistryArgs) -> Result<ExitCode> {
    let reference = Reference::parse(reference)?;
    let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    eprintln!(
        "pushing {} ({} bytes) to {reference} …",
        file.display(),
        bytes.len()
    );
    let pushed = hermetic_distribution::push(&bytes, &reference, &registry.options())?;
    eprintln!("component {}", pushed.component);
    out!("oci://{}", pushed.pinned);
    Ok(ExitCode::SUCCESS)
}

/// `hermetic keygen --out KEY`: KEY (0600) and KEY.pub.
pub fn keygen(out: &Path) -> Result<ExitCode> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let (pem, key) = SigningKey::generate()?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(out)
        .with_context(|| format!("cannot create {} (it must not exist yet)", out.display()))?;
    file.write_all(pem.as_bytes())?;
    let public = public_path(out);
    std::fs::write(&public, format!("{}\n", key.public()))
        .with_context(|| format!("cannot write {}", public.display()))?;
    eprintln!(
        "private key {} (keep it secret), public key {} (id {}): list it under [trust] keys",
        out.display(),
        public.display(),
        key.public().id()
    );
    out!("{}", key.public());
    Ok(ExitCode::SUCCESS)
}

fn public_path(key: &Path) -> PathBuf {
    let mut name = key.as_os_str().to_owned();
    name.push(".pub");
    PathBuf::from(name)
}

fn read_key(path: &Path) -> Result<SigningKey> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the key {}", path.display()))?;
    Ok(SigningKey::from_pem(&text)?)
}

/// `hermetic sign FILE|REF --key KEY`.
pub fn sign(target: &str, key: &Path, registry: &RegistryArgs) -> Result<ExitCode> {
    let key = read_key(key)?;
    let path = Path::new(target);
    if path.is_file() {
        let sig = hermetic_distribution::sign_file(path, &key)?;
        eprintln!(
            "signed {} ({}) with key {}: {}",
            path.display(),
            sig.digest,
            sig.key,
            hermetic_distribution::signature_file(path).display()
        );
    } else {
        let reference = Reference::parse(target)?;
        let (pinned, sig) =
            hermetic_distribution::sign_pushed(&reference, &key, &registry.options())?;
        eprintln!(
            "signed oci://{pinned} (component {}) with key {}",
            sig.digest, sig.key
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// What `verify` and `pull` trust: `--key`s when given, else the policy's `[trust]`.
#[derive(Args, Debug, Clone, Default)]
pub struct TrustArgs {
    /// Trust this public key (`ed25519:…` or a KEY.pub file; repeatable). With
    /// --key, a signature by one of these keys is required.
    #[arg(long = "key", value_name = "PUB")]
    pub keys: Vec<String>,
}

impl TrustArgs {
    fn trust(&self, policy: Option<&TrustPolicy>, tenant: &str) -> Result<Trust> {
        if !self.keys.is_empty() {
            let mut keys = Vec::new();
            for k in &self.keys {
                let text = if k.starts_with("ed25519:") {
                    k.clone()
                } else {
                    std::fs::read_to_string(k)
                        .with_context(|| format!("cannot read the key {k}"))?
                };
                keys.push(PublicKey::parse(text.trim())?);
            }
            return Ok(Trust {
                keys: TrustedKeys::new(keys),
                require_signature: true,
            });
        }
        Ok(match policy {
            Some(p) => Trust {
                keys: trusted_keys(&p.keys)?,
                require_signature: p.requires_signature(tenant),
            },
            None => Trust::default(),
        })
    }
}

/// `hermetic verify FILE|REF`: exit 0 when a trusted key signed it, 1 otherwise.
pub fn verify(
    target: &str,
    trust_args: &TrustArgs,
    policy: Option<&TrustPolicy>,
    store_flag: Option<&Path>,
    registry: &RegistryArgs,
) -> Result<ExitCode> {
    let mut trust = trust_args.trust(policy, "")?;
    if trust.keys.is_empty() {
        bail!("no trusted keys: give --key PUB or a --policy with [trust] keys");
    }
    trust.require_signature = true;
    let path = Path::new(target);
    let result = if path.is_file() {
        let bytes = std::fs::read(path)?;
        let digest = hermetic_distribution::Digest::of(&bytes);
        trust
            .check(&digest, &hermetic_distribution::file_signatures(path))
            .map(|k| (digest, k))
            .map_err(anyhow::Error::from)
    } else {
        let reference = Reference::parse(target)?;
        let dir = store_dir(store_flag, policy)?;
        let store = Store::open(&dir)?;
        match hermetic_distribution::pull(&reference, &store, &trust, &registry.options()) {
            Ok(p) => Ok((p.component, p.signer)),
            Err(e) => Err(e.into()),
        }
    };
    match result {
        Ok((digest, Some(key))) => {
            out!("verified: {digest} signed by trusted key {}", key.id());
            Ok(ExitCode::SUCCESS)
        }
        Ok((digest, None)) => {
            out!("not verified: {digest}");
            Ok(ExitCode::from(1))
        }
        Err(e) => {
            out!("refused: {e:#}");
            Ok(ExitCode::from(1))
        }
    }
}

/// `hermetic pull [REF]`: one reference, or every source of the policy (then the
/// digests its tags resolved to go to `hermetic.lock` beside it).
pub fn pull(
    reference: Option<&str>,
    trust_args: &TrustArgs,
    policy: Option<(&Path, &TrustPolicy)>,
    tenant: &str,
    store_flag: Option<&Path>,
    registry: &RegistryArgs,
) -> Result<ExitCode> {
    let trust_policy = policy.map(|(_, t)| t);
    let trust = trust_args.trust(trust_policy, tenant)?;
    let store = Store::open(&store_dir(store_flag, trust_policy)?)?;
    if !trust.require_signature {
        eprintln!(
            "warning: no signature is required (give --key, or a --policy whose [trust] has require_signature = true): the content is checked against its digest only"
        );
    }
    let one = |reference: &Reference| -> Result<hermetic_distribution::Pulled> {
        eprintln!("pulling {reference} …");
        let pulled = hermetic_distribution::pull(reference, &store, &trust, &registry.options())?;
        eprintln!(
            "  component {} ({}){}",
            pulled.component,
            pulled.path.display(),
            pulled
                .signer
                .as_ref()
                .map(|k| format!(", signed by trusted key {}", k.id()))
                .unwrap_or_default()
        );
        Ok(pulled)
    };
    if let Some(reference) = reference {
        let pulled = one(&Reference::parse(reference)?)?;
        out!("oci://{}", pulled.pinned);
        return Ok(ExitCode::SUCCESS);
    }
    let Some((policy_path, trust_policy)) = policy else {
        bail!("give a reference to pull, or --policy to pull every tool it names by source");
    };
    if trust_policy.sources.is_empty() {
        bail!(
            "{} names no tool by source ([tools.NAME] source = \"oci://…\")",
            policy_path.display()
        );
    }
    let lock_path = Lock::path_beside(policy_path);
    let mut lock = Lock::load(&lock_path)?;
    for (name, source) in &trust_policy.sources {
        let reference = Reference::parse(source)?;
        let pulled = one(&reference).with_context(|| format!("tools.{name}"))?;
        if reference.digest.is_none() {
            let pinned = format!("oci://{}", pulled.pinned);
            let previous = lock.tools.get(name).map(|l| l.pinned.clone());
            if previous.as_deref().is_some_and(|p| p != pinned) {
                eprintln!(
                    "  {name}: {source} moved to a new digest (was {})",
                    previous.unwrap_or_default()
                );
            }
            lock.tools.insert(
                name.clone(),
                Locked {
                    source: source.clone(),
                    pinned,
                },
            );
        }
    }
    lock.tools
        .retain(|name, _| trust_policy.sources.contains_key(name));
    lock.save(&lock_path)?;
    eprintln!("wrote {}", lock_path.display());
    Ok(ExitCode::SUCCESS)
}

/// Loads every tool the policy names by source from the store: no network. Each must
/// be there (else: the `pull` to run), match its digests, pass the signature check
/// and name itself as its policy entry does.
pub fn load_sources(
    registry: &Registry,
    policy_path: &Path,
    trust_policy: &TrustPolicy,
    store_dir: &Path,
    require_signature: bool,
) -> Result<()> {
    if trust_policy.sources.is_empty() {
        return Ok(());
    }
    let store = Store::open(store_dir)?;
    let lock = Lock::load(&Lock::path_beside(policy_path))?;
    let trust = Trust {
        keys: trusted_keys(&trust_policy.keys)?,
        require_signature,
    };
    for (name, source) in &trust_policy.sources {
        let reference = Reference::parse(source).with_context(|| format!("tools.{name}.source"))?;
        let pinned = match &reference.digest {
            Some(_) => reference,
            None => lock.pinned(name, source).ok_or_else(|| {
                anyhow!(
                    "tools.{name}.source {source} is a tag that is not in {}: run `hermetic pull --policy {}` to resolve and fetch it",
                    Lock::path_beside(policy_path).display(),
                    policy_path.display()
                )
            })?,
        };
        let (bytes, component) = hermetic_distribution::stored_component(&pinned, &store, &trust)
            .with_context(|| format!("tools.{name}"))?;
        let mut tool = registry
            .load(&bytes, ToolSource::Oci(format!("oci://{pinned}")))
            .with_context(|| format!("tools.{name}: oci://{pinned}"))?;
        tool.withheld = review(
            name,
            &tool.declaration,
            &component,
            trust_policy.reviewed.get(name).map(String::as_str),
            reference_was_pinned(source),
            &store,
        );
        if let Some(reason) = &tool.withheld {
            eprintln!("warning: {reason}");
        }
        let own = tool.schema["name"].as_str().unwrap_or_default();
        if own != name {
            bail!(
                "tools.{name}: oci://{pinned} is the tool {own:?}, not {name:?}: name the policy entry after the tool"
            );
        }
        registry
            .register(tool)
            .with_context(|| format!("tools.{name}"))?;
    }
    Ok(())
}

/// A hook's component from an OCI source: pinned by digest (a hook sits in front of
/// every call it applies to: no tags), read from the store (`hermetic pull REF` puts it
/// there), signature checked as a tool's is.
pub fn hook_bytes(
    name: &str,
    source: &str,
    trust_policy: &TrustPolicy,
    store_dir: &Path,
    require_signature: bool,
) -> Result<Vec<u8>> {
    let reference = Reference::parse(source).with_context(|| format!("hooks.{name}.source"))?;
    if reference.digest.is_none() {
        bail!(
            "hooks.{name}.source {source}: pin a hook by digest (oci://HOST/REPOSITORY@sha256:…; `hermetic pull {source}` prints it)"
        );
    }
    let store = Store::open(store_dir)?;
    let trust = Trust {
        keys: trusted_keys(&trust_policy.keys)?,
        require_signature,
    };
    let (bytes, _) = hermetic_distribution::stored_component(&reference, &store, &trust)
        .with_context(|| format!("hooks.{name}: {source} (`hermetic pull {source}` fetches it)"))?;
    Ok(bytes)
}

fn reference_was_pinned(source: &str) -> bool {
    Reference::parse(source).is_ok_and(|r| r.digest.is_some())
}

/// Why the grants are withheld from `component`, if they are: the grants are for the
/// component the operator reviewed (`reviewed`, else the one the source pins by
/// digest); another version gets them only when it asks for nothing more.
fn review(
    name: &str,
    declaration: &hermetic::policy::Declaration,
    component: &hermetic_distribution::Digest,
    reviewed: Option<&str>,
    source_pinned: bool,
    store: &Store,
) -> Option<String> {
    let fix = format!(
        "review it (`hermetic inspect {name}` shows what it asks for) and set [tools.{name}] reviewed = \"{component}\""
    );
    let reviewed = match reviewed {
        Some(r) => r,
        None if source_pinned => return None,
        None => {
            return Some(format!(
                "tools.{name}: the source is a tag, and no version was reviewed for its grants: {fix}"
            ));
        }
    };
    if reviewed == component.to_string() {
        return None;
    }
    let old = hermetic_distribution::Digest::parse(reviewed)
        .ok()
        .and_then(|d| {
            store
                .read(&d, hermetic_distribution::artifact::MAX_COMPONENT_BYTES)
                .ok()
        })
        .and_then(|bytes| hermetic::component::read_declaration(&bytes).ok());
    let Some(old) = old else {
        return Some(format!(
            "tools.{name}: version {component} is not the reviewed {reviewed}, which is not in the tool store to compare with: {fix}"
        ));
    };
    let more = declaration.asks_beyond(&old);
    if more.is_empty() {
        return None;
    }
    Some(format!(
        "tools.{name}: version {component} asks for {} (not granted for this digest): {fix}",
        more.join(", ")
    ))
}

/// Pulls `reference` into the store for `hermetic inspect` (the signature checked as
/// the policy says); its bytes and pinned reference.
pub fn fetch_for_inspection(
    reference: &Reference,
    trust: Option<&TrustPolicy>,
    store_flag: Option<&Path>,
    tenant: &str,
    registry: &RegistryArgs,
) -> Result<(Vec<u8>, Reference)> {
    let store = Store::open(&store_dir(store_flag, trust)?)?;
    let trust = TrustArgs::default().trust(trust, tenant)?;
    let pulled = hermetic_distribution::pull(reference, &store, &trust, &registry.options())?;
    let (bytes, _) = hermetic_distribution::stored_component(&pulled.pinned, &store, &trust)?;
    Ok((bytes, pulled.pinned))
}

/// The check every component file passes under `require_signature`: a signature by a
/// trusted key in `FILE.sig` (what `hermetic sign FILE` writes).
pub fn file_check(trust_policy: &TrustPolicy) -> Result<hermetic::FileCheck> {
    let trust = Trust {
        keys: trusted_keys(&trust_policy.keys)?,
        require_signature: true,
    };
    Ok(std::sync::Arc::new(move |path: &Path, bytes: &[u8]| {
        let digest = hermetic_distribution::Digest::of(bytes);
        trust
            .check(&digest, &hermetic_distribution::file_signatures(path))
            .map(|_| ())
            .map_err(|e| {
                format!(
                    "{e} (for a file: `hermetic sign {} --key KEY` writes its .sig)",
                    path.display()
                )
            })
    }))
}
