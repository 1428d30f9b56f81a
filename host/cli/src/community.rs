//! `hermetic push`, `pull`, `keygen`, `sign`, `verify`, and loading the tools a policy
//! names by reference: community tools from OCI registries (see `hermetic-distribution`).
//! Loading is [`load`]; what a review grants, [`review`].

mod load;
pub mod reserve;
mod review;
mod update;

pub use load::{load_sources, skipped_tools};

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use hermetic::Registry;
use hermetic::policy::trust::TrustPolicy;
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

pub(crate) fn trusted_keys(keys: &[String]) -> Result<TrustedKeys> {
    keys.iter()
        .map(|k| PublicKey::parse(k).with_context(|| "[trust] keys"))
        .collect::<Result<Vec<_>>>()
        .map(TrustedKeys::new)
}

/// `hermetic push FILE REF [--version V]`: the manifest records `version` and the time
/// (what `hermetic sign` then signs, with the repository).
pub fn push(
    file: &Path,
    reference: &str,
    version: Option<&str>,
    registry: &RegistryArgs,
) -> Result<ExitCode> {
    let reference = Reference::parse(reference)?;
    let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let annotations = hermetic_distribution::artifact::Annotations::now(version.map(str::to_owned));
    eprintln!(
        "pushing {} ({} bytes, version {}, created {}) to {reference} …",
        file.display(),
        bytes.len(),
        version.unwrap_or("(none: give --version)"),
        annotations.created.as_deref().unwrap_or_default()
    );
    let pushed =
        hermetic_distribution::push(&bytes, &reference, &annotations, &registry.options())?;
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
            sig.digest(),
            sig.key,
            hermetic_distribution::signature_file(path).display()
        );
    } else {
        let reference = Reference::parse(target)?;
        let (pinned, sig) =
            hermetic_distribution::sign_pushed(&reference, &key, &registry.options())?;
        eprintln!(
            "signed oci://{pinned} (component {}, {}) with key {}",
            sig.digest(),
            sig.statement.describe(),
            sig.key
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
            .check(&digest, None, &hermetic_distribution::file_signatures(path))
            .map(|v| (digest, v.map(|v| v.key)))
            .map_err(anyhow::Error::from)
    } else {
        let reference = Reference::parse(target)?;
        let dir = store_dir(store_flag, policy)?;
        let store = Store::open(&dir)?;
        match hermetic_distribution::pull(&reference, &store, &trust, &registry.options()) {
            Ok(p) => Ok((p.component, p.verified.map(|v| v.key))),
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
/// digests its tags resolved to go to `hermetic.lock` beside it; `allow_older`: a tag
/// may go back to the version `reviewed` names).
pub fn pull(
    reference: Option<&str>,
    trust_args: &TrustArgs,
    policy: Option<(&Path, &TrustPolicy)>,
    tenant: &str,
    store_flag: Option<&Path>,
    registry: &RegistryArgs,
    allow_older: bool,
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
                .verified
                .as_ref()
                .map(|v| format!(
                    ", signed by trusted key {} ({})",
                    v.key.id(),
                    v.statement.describe()
                ))
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
    let store_dir = store_dir(store_flag, Some(trust_policy))?;
    update::Update {
        policy_path,
        trust_policy,
        store: &store,
        store_dir: &store_dir,
        trust: &trust,
        options: &registry.options(),
        allow_older,
    }
    .run(one)?;
    Ok(ExitCode::SUCCESS)
}

/// A hook's component from an OCI source: pinned by digest (a hook sits in front of
/// every call it applies to: no tags), read from the store (`hermetic pull REF` puts it
/// there), signature checked as a tool's is.
pub fn hook_bytes(
    name: &str,
    source: &str,
    policy_path: &Path,
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
    let stored = hermetic_distribution::stored_component(&reference, &store, &trust)
        .map_err(|e| match e {
            hermetic_distribution::DistributionError::NotPulled { store, .. } => anyhow!(
                "hooks.{name}: {source} is not in the tool store {}: run {} on a machine that reaches the registry",
                store.display(),
                pull_hint(policy_path, trust_policy, store_dir, Some(source))
            ),
            other => anyhow!("hooks.{name}: {source}: {other}"),
        })?;
    Ok(stored.bytes)
}

/// The pull that fetches what the policy at `policy_path` names into `store_dir`:
/// `hermetic pull --policy FILE [REF]`, with `--store DIR` only when `store_dir` is not
/// the policy's own store (a `--store` given on the command line).
pub(crate) fn pull_hint(
    policy_path: &Path,
    trust_policy: &TrustPolicy,
    store_dir: &Path,
    reference: Option<&str>,
) -> String {
    let mut hint = format!("`hermetic pull --policy {}", policy_path.display());
    if store_dir_of(trust_policy).as_deref() != Some(store_dir) {
        hint.push_str(&format!(" --store {}", store_dir.display()));
    }
    if let Some(reference) = reference {
        hint.push_str(&format!(" {reference}"));
    }
    hint.push('`');
    hint
}

/// The store a policy's host uses without `--store`.
fn store_dir_of(trust_policy: &TrustPolicy) -> Option<PathBuf> {
    store_dir(None, Some(trust_policy)).ok()
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
    let stored = hermetic_distribution::stored_component(&pulled.pinned, &store, &trust)?;
    Ok((stored.bytes, pulled.pinned))
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
            .check(&digest, None, &hermetic_distribution::file_signatures(path))
            .map(|_| ())
            .map_err(|e| {
                format!(
                    "{e} (for a file: `hermetic sign {} --key KEY` writes its .sig)",
                    path.display()
                )
            })
    }))
}

/// Adds the policy's review verdict to an `inspect` report (a registered tool, a
/// file or a reference) of a tool the policy names by source: the same decision as at
/// start (meaning, asks, and the age against the reviewed version by the signed
/// statements), as `available: false` with the `reason` when it withholds the grants,
/// and — when the policy reviews a version — `review`: how the inspected version
/// differs from it, field by field.
pub fn add_review(
    report: &mut serde_json::Value,
    registry: &Registry,
    policy: Option<(&Path, &TrustPolicy)>,
    store_flag: Option<&Path>,
) -> Result<()> {
    let Some((policy_path, trust)) = policy.filter(|(_, t)| !t.sources.is_empty()) else {
        return Ok(());
    };
    let dir = store_dir(store_flag, Some(trust))?;
    let store = Store::open(&dir)?;
    let keys = trusted_keys(&trust.keys)?;
    // What a trusted key signed about the inspected version, when it came from a
    // registry (a registered tool's source, or the reference inspected): both were
    // pulled into the store, the statement with them.
    let label = report["source"]
        .as_str()
        .or_else(|| report["file"].as_str())
        .unwrap_or_default();
    let statement = label
        .strip_prefix("oci://")
        .and_then(|r| Reference::parse(r).ok())
        .and_then(|pinned| hermetic_distribution::stored_statement(&pinned, &store, &keys))
        .map(|(_, statement)| statement);
    let reviewer = review::Reviewer {
        registry,
        trust,
        store: &store,
        keys: &keys,
        // As at start: a tool is signed or it is not, for every tenant a server serves.
        signatures_required: trust.require_signature || !trust.tenants_requiring.is_empty(),
        policy_path,
        store_dir: &dir,
    };
    let Some((withheld, review)) = reviewer.report(report, statement.as_ref()) else {
        return Ok(());
    };
    if let Some(why) = withheld {
        report["available"] = false.into();
        report["reason"] = why.into();
    }
    if let Some(review) = review {
        report["review"] = review;
    }
    Ok(())
}

/// [`skipped_tools`] for the operator's view (`tenant` empty) of the host `policy`
/// describes: none for a tenant (a tool that did not load has no toolset to show it
/// in) or without a policy.
pub fn skipped_for(
    registry: &Registry,
    policy: Option<&Path>,
    store_flag: Option<&Path>,
    tenant: &str,
) -> Result<Vec<hermetic::ToolStatus>> {
    let (Some(policy_path), "") = (policy, tenant) else {
        return Ok(Vec::new());
    };
    let cwd = std::env::current_dir().context("cannot determine the current directory")?;
    let trust = hermetic_config::load(policy_path, &cwd)?.trust;
    if trust.sources.is_empty() {
        return Ok(Vec::new());
    }
    let dir = store_dir(store_flag, Some(&trust))?;
    // As at start: a tool is signed or it is not, for every tenant a server serves.
    let require = trust.require_signature || !trust.tenants_requiring.is_empty();
    skipped_tools(registry, policy_path, &trust, &dir, require)
}

/// `hermetic inspect NAME` for a tool the policy names by source that could not be
/// loaded: `loads: false` and why.
pub fn skipped_report(
    registry: &Registry,
    policy: Option<&Path>,
    store_flag: Option<&Path>,
    tenant: &str,
    name: &str,
) -> Result<Option<serde_json::Value>> {
    Ok(skipped_for(registry, policy, store_flag, tenant)?
        .into_iter()
        .find(|t| t.name == name)
        .map(|t| {
            serde_json::json!({
                "name": t.name,
                "source": t.source,
                "loads": false,
                "available": false,
                "reason": t.reason,
            })
        }))
}
