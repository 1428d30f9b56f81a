//! Community tools from OCI registries, installed safely by default.
//!
//! A tool travels as a wasm component artifact (the CNCF wasm OCI layout: one
//! `application/wasm` layer). `push` packages and uploads one; `pull` fetches one by
//! tag or digest into a content-addressed [`Store`] — but only after its signature
//! verifies against a key the operator trusts, when the operator requires one — and
//! start-up loads tools from the store by digest with no network ([`stored_component`]),
//! checking the digests and the signature again.
//!
//! Trust flows from key to call: the operator lists public keys in `[trust]`; a
//! signature by one of them over a statement (the component's digest, the repository
//! it was published under, its version and creation time) is what lets a pulled
//! component be stored and loaded; the policy's grants then apply to the component
//! the operator reviewed, named by digest; and every call runs it in the sandbox
//! those grants allow.

pub mod artifact;
pub mod auth;
mod client;
pub mod digest;
pub mod lock;
pub mod reference;
pub mod signature;
pub mod store;

pub use auth::Credentials;
pub use client::{ClientOptions, RegistryClient, RegistryError};
pub use digest::Digest;
pub use reference::{BadReference, Reference};
pub use signature::{
    PublicKey, Signature, SignatureError, SigningKey, Statement, TrustedKeys, Verified,
};
pub use store::{Store, StoreError};

use artifact::{Annotations, BadManifest, MAX_COMPONENT_BYTES, MAX_MANIFEST_BYTES, WasmManifest};
use std::path::{Path, PathBuf};

/// What the operator trusts.
#[derive(Debug, Clone, Default)]
pub struct Trust {
    /// Keys whose signatures are accepted.
    pub keys: TrustedKeys,
    /// Refuse a component without a signature by one of them.
    pub require_signature: bool,
}

impl Trust {
    /// Checks that a trusted key signed `digest` as published under `repository`
    /// (`None` for a file) when a signature is required; `Ok(None)` when none is
    /// required (and none was checked), `Ok(Some(verified))` for the trusted key that
    /// signed it and what it signed.
    ///
    /// # Errors
    /// [`SignatureError`] saying what is missing or wrong.
    pub fn check(
        &self,
        digest: &Digest,
        repository: Option<&str>,
        signatures: &[Signature],
    ) -> Result<Option<Verified>, SignatureError> {
        if !self.require_signature {
            return Ok(None);
        }
        self.keys.verify(digest, repository, signatures).map(Some)
    }
}

/// Anything that stops a push, a pull or a load.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DistributionError {
    /// The registry.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The store.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The manifest.
    #[error("{reference}: {source}")]
    Manifest {
        /// The reference.
        reference: String,
        /// What is wrong.
        #[source]
        source: BadManifest,
    },
    /// The signature check.
    #[error("{reference}: {source}")]
    Signature {
        /// The reference or file.
        reference: String,
        /// What is wrong.
        #[source]
        source: SignatureError,
    },
    /// A pinned reference whose content is not in the store.
    #[error(
        "{reference} is not in the tool store {store}: run `hermetic pull {reference}` (with the same --store) on a machine that reaches the registry"
    )]
    NotPulled {
        /// The reference.
        reference: String,
        /// The store.
        store: PathBuf,
    },
    /// A file that is not a component, or a reference that cannot be used here.
    #[error("{0}")]
    Invalid(String),
    /// A local file.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// What a push made.
#[derive(Debug, Clone)]
pub struct Pushed {
    /// The reference pinned to the manifest's digest.
    pub pinned: Reference,
    /// The component's digest.
    pub component: Digest,
}

/// What a pull stored.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The reference pinned to the manifest's digest (what a policy source names).
    pub pinned: Reference,
    /// The component's digest.
    pub component: Digest,
    /// Where the component is.
    pub path: PathBuf,
    /// The trusted key that signed it and what it signed, when a signature was
    /// required.
    pub verified: Option<Verified>,
    /// Signatures found (in the registry and the store).
    pub signatures: usize,
}

/// A component read from the store by [`stored_component`].
#[derive(Debug, Clone)]
pub struct Stored {
    /// Its bytes (checked against its digest).
    pub bytes: Vec<u8>,
    /// Its digest.
    pub component: Digest,
    /// The trusted key that signed it and what it signed, when a signature was
    /// required.
    pub verified: Option<Verified>,
}

/// The 8-byte preamble of a WebAssembly component (not a core module).
const COMPONENT_PREAMBLE: [u8; 8] = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];

fn client_for(
    reference: &Reference,
    options: &ClientOptions,
) -> Result<RegistryClient, RegistryError> {
    let mut options = options.clone();
    if options.credentials.is_none() {
        options.credentials = auth::for_registry(&reference.registry)?;
    }
    RegistryClient::new(&reference.registry, options)
}

/// The manifest of `reference`, checked.
fn parse_manifest(reference: &Reference, bytes: &[u8]) -> Result<WasmManifest, DistributionError> {
    WasmManifest::parse(bytes).map_err(|source| DistributionError::Manifest {
        reference: reference.to_string(),
        source,
    })
}

/// Packages `component` with `annotations` (its version and creation time, which a
/// signature then covers) and pushes it to `reference` (which needs a tag).
///
/// # Errors
/// [`DistributionError::Invalid`] for a core module, no tag or a version no statement
/// can carry; registry errors.
pub fn push(
    component: &[u8],
    reference: &Reference,
    annotations: &Annotations,
    options: &ClientOptions,
) -> Result<Pushed, DistributionError> {
    if !component.starts_with(&COMPONENT_PREAMBLE) {
        return Err(DistributionError::Invalid(
            "not a WebAssembly component (a core module? build for wasm32-wasip2)".into(),
        ));
    }
    if component.len() as u64 > MAX_COMPONENT_BYTES {
        return Err(DistributionError::Invalid(format!(
            "the component is {} bytes, more than {MAX_COMPONENT_BYTES}",
            component.len()
        )));
    }
    let Some(tag) = &reference.tag else {
        return Err(DistributionError::Invalid(format!(
            "{reference}: push needs a tag (REPOSITORY:TAG)"
        )));
    };
    // What `sign` will put in the statement must be signable: refused now, not then.
    Statement::new(
        Digest::of(component),
        Some(&reference.repository),
        annotations.version.as_deref(),
        annotations.created.as_deref(),
    )
    .map_err(|e| DistributionError::Invalid(e.to_string()))?;
    let packaged = artifact::package(component, annotations);
    let client = client_for(reference, options)?;
    client.push_blob(&reference.repository, &packaged.config)?;
    client.push_blob(&reference.repository, component)?;
    client.push_manifest(&reference.repository, tag, &packaged.manifest)?;
    Ok(Pushed {
        pinned: reference.pinned(packaged.manifest_digest),
        component: packaged.component_digest,
    })
}

/// The signatures published for the manifest `manifest` (none when the registry has
/// no signature tag for it).
fn registry_signatures(
    client: &RegistryClient,
    repository: &str,
    manifest: &Digest,
) -> Result<(Vec<Vec<u8>>, Vec<Signature>), DistributionError> {
    let tag = artifact::signature_tag(manifest);
    let bytes = match client.manifest(repository, &tag) {
        Ok((bytes, _)) => bytes,
        Err(RegistryError::NotFound(_)) => return Ok((Vec::new(), Vec::new())),
        Err(e) => return Err(e.into()),
    };
    let layers = artifact::signature_layers(&bytes, signature::MAX_SIGNATURE_BYTES as u64)
        .map_err(|source| DistributionError::Manifest {
            reference: tag.clone(),
            source,
        })?;
    let (mut raw, mut parsed) = (Vec::new(), Vec::new());
    for layer in layers {
        let blob = client.small_blob(repository, &layer.digest, layer.size)?;
        // A layer that is not a signature document is skipped, not fatal: a
        // signature by a trusted key is what counts.
        if let Ok(sig) = Signature::parse(&blob) {
            parsed.push(sig);
            raw.push(blob);
        }
    }
    Ok((raw, parsed))
}

/// The signatures the store holds for the component `digest`.
pub fn stored_signatures(store: &Store, digest: &Digest) -> Vec<Signature> {
    let Ok(entries) = std::fs::read_dir(store.signatures_dir(digest)) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .take(MAX_STORED_SIGNATURES)
        .filter_map(|e| std::fs::read(e.path()).ok())
        .filter_map(|b| Signature::parse(&b).ok())
        .collect()
}

/// Most signature files read for one component from the store. Only signatures that
/// verified are kept there (see [`keep_signatures`]), one per key and statement — a
/// component published as many versions or under many repositories has many.
const MAX_STORED_SIGNATURES: usize = 256;

/// Keeps in the store the signatures for `digest` that a trusted key made (format v2,
/// whatever repository they name), one file per key and statement (a component
/// published under two repositories keeps both). Nothing else is kept: a registry
/// cannot fill the store with signatures no trusted key made, nor crowd out the ones
/// it did.
fn keep_signatures(
    store: &Store,
    trust: &Trust,
    digest: &Digest,
    signatures: &[Signature],
) -> Result<(), StoreError> {
    for sig in signatures.iter().filter(|s| {
        s.digest() == digest
            && trust
                .keys
                .verify(digest, None, std::slice::from_ref(s))
                .is_ok()
    }) {
        let path = store
            .signatures_dir(digest)
            .join(format!("{}.json", sig.file_stem()));
        store.write_file(&path, &sig.to_bytes())?;
    }
    Ok(())
}

/// Pulls `reference` into `store`: the manifest (checked), the signatures (checked
/// against `trust` before anything is stored), then the component, streamed and
/// checked against its digest.
///
/// # Errors
/// [`DistributionError`] naming what failed; nothing is stored under a digest unless
/// it is exactly that content and (when required) signed by a trusted key.
pub fn pull(
    reference: &Reference,
    store: &Store,
    trust: &Trust,
    options: &ClientOptions,
) -> Result<Pulled, DistributionError> {
    let client = client_for(reference, options)?;
    let (manifest_bytes, manifest_digest) =
        client.manifest(&reference.repository, &reference.manifest_ref())?;
    let manifest = parse_manifest(reference, &manifest_bytes)?;
    let component = manifest.component.digest.clone();
    let (_, mut signatures) =
        registry_signatures(&client, &reference.repository, &manifest_digest)?;
    signatures.extend(stored_signatures(store, &component));
    let verified = trust
        .check(&component, Some(&reference.repository), &signatures)
        .map_err(|source| DistributionError::Signature {
            reference: reference.to_string(),
            source,
        })?;
    let path = if store.has(&component) && store.read(&component, MAX_COMPONENT_BYTES).is_ok() {
        store.blob_path(&component)
    } else {
        client.blob_into(
            store,
            &reference.repository,
            &component,
            manifest.component.size,
        )?
    };
    store.put("the manifest", &manifest_bytes)?;
    keep_signatures(store, trust, &component, &signatures)?;
    Ok(Pulled {
        pinned: reference.pinned(manifest_digest),
        component,
        path,
        verified,
        signatures: signatures.len(),
    })
}

/// The component a pinned reference names, from the store alone (no network): the
/// manifest and the component checked against their digests, and the signature
/// against `trust`.
///
/// # Errors
/// [`DistributionError::NotPulled`] when the store lacks it; digest, manifest and
/// signature errors.
pub fn stored_component(
    pinned: &Reference,
    store: &Store,
    trust: &Trust,
) -> Result<Stored, DistributionError> {
    let Some(manifest_digest) = &pinned.digest else {
        return Err(DistributionError::Invalid(format!(
            "{pinned} has no digest: pin it (`hermetic pull` writes the digest to hermetic.lock)"
        )));
    };
    let not_pulled = || DistributionError::NotPulled {
        reference: pinned.to_string(),
        store: store.root().to_path_buf(),
    };
    let manifest_bytes = match store.read(manifest_digest, MAX_MANIFEST_BYTES as u64) {
        Err(StoreError::Missing { .. }) => return Err(not_pulled()),
        other => other?,
    };
    let manifest = parse_manifest(pinned, &manifest_bytes)?;
    let component = manifest.component.digest;
    let verified = trust
        .check(
            &component,
            Some(&pinned.repository),
            &stored_signatures(store, &component),
        )
        .map_err(|source| DistributionError::Signature {
            reference: pinned.to_string(),
            source,
        })?;
    let bytes = match store.read(&component, MAX_COMPONENT_BYTES) {
        Err(StoreError::Missing { .. }) => return Err(not_pulled()),
        other => other?,
    };
    Ok(Stored {
        bytes,
        component,
        verified,
    })
}

/// What a trusted key signed about the component the stored manifest `pinned` names
/// (published under `pinned`'s repository), and that component's digest; `None`
/// when the store lacks the manifest or no trusted key's statement verifies. For
/// comparing versions: nothing is read but the manifest and signatures.
pub fn stored_statement(
    pinned: &Reference,
    store: &Store,
    keys: &TrustedKeys,
) -> Option<(Digest, Statement)> {
    let manifest = store
        .read(pinned.digest.as_ref()?, MAX_MANIFEST_BYTES as u64)
        .ok()?;
    let component = WasmManifest::parse(&manifest).ok()?.component.digest;
    let statement = component_statement(&component, &pinned.repository, store, keys)?;
    Some((component, statement))
}

/// What a trusted key signed about the stored component `component` as published
/// under `repository`, when the store has such a signature.
pub fn component_statement(
    component: &Digest,
    repository: &str,
    store: &Store,
    keys: &TrustedKeys,
) -> Option<Statement> {
    keys.verify(
        component,
        Some(repository),
        &stored_signatures(store, component),
    )
    .ok()
    .map(|v| v.statement)
}

/// How far in the future a manifest's creation time may be when it is signed: clocks
/// disagree by seconds, not by more. A later time is refused — a signed statement
/// "made in the future" would outrank every release made until then.
pub const MAX_CLOCK_SKEW: chrono::TimeDelta = chrono::TimeDelta::minutes(5);

/// Signs the component the manifest `reference` pins (by digest: a tag names whatever
/// its holder serves at the moment, and the signature would vouch for that, its
/// version and its time included) and publishes the signature beside it (the
/// registry's `sha256-<manifest>.sig` tag, keeping the signatures already there).
///
/// # Errors
/// [`DistributionError::Invalid`] for a reference without a digest, a manifest with no
/// creation time or one more than [`MAX_CLOCK_SKEW`] ahead of this clock; registry and
/// manifest errors.
pub fn sign_pushed(
    reference: &Reference,
    key: &SigningKey,
    options: &ClientOptions,
) -> Result<(Reference, Signature), DistributionError> {
    if reference.digest.is_none() {
        return Err(DistributionError::Invalid(format!(
            "{reference}: sign a pushed tool by its manifest digest (oci://{}/{}@sha256:…, what `hermetic push` printed), not by tag: a tag names whatever its holder serves now, and the signature would vouch for that component and its version and time",
            reference.registry, reference.repository
        )));
    }
    let client = client_for(reference, options)?;
    let (manifest_bytes, manifest_digest) =
        client.manifest(&reference.repository, &reference.manifest_ref())?;
    let manifest = parse_manifest(reference, &manifest_bytes)?;
    let Some(created) = manifest.annotations.created.as_deref() else {
        return Err(DistributionError::Invalid(format!(
            "{reference}: the manifest has no {} annotation, and a signature must say when the version was made (so a host can refuse an older one): push it again with `hermetic push` (which sets it), then sign",
            artifact::CREATED_ANNOTATION
        )));
    };
    check_not_future(
        reference,
        created,
        chrono::DateTime::<chrono::Utc>::from(std::time::SystemTime::now()),
    )?;
    let statement = Statement::new(
        manifest.component.digest.clone(),
        Some(&reference.repository),
        manifest.annotations.version.as_deref(),
        Some(created),
    )
    .map_err(|e| DistributionError::Invalid(format!("{reference}: {e}")))?;
    let signature = key.sign(&statement);
    let (raw, parsed) = registry_signatures(&client, &reference.repository, &manifest_digest)?;
    let mut documents: Vec<Vec<u8>> = raw
        .into_iter()
        .zip(parsed)
        .filter(|(_, s)| s.key != signature.key)
        .map(|(b, _)| b)
        .take(artifact::MAX_SIGNATURES - 1)
        .collect();
    documents.push(signature.to_bytes());
    client.push_blob(&reference.repository, artifact::EMPTY_CONFIG)?;
    for d in &documents {
        client.push_blob(&reference.repository, d)?;
    }
    client.push_manifest(
        &reference.repository,
        &artifact::signature_tag(&manifest_digest),
        &artifact::signature_manifest(&manifest_bytes, &documents),
    )?;
    Ok((reference.pinned(manifest_digest), signature))
}

/// Refuses a creation time more than [`MAX_CLOCK_SKEW`] after `now` (a time that does
/// not parse is left to the statement's own check).
fn check_not_future(
    reference: &Reference,
    created: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), DistributionError> {
    match chrono::DateTime::parse_from_rfc3339(created) {
        Ok(at) if at > now + MAX_CLOCK_SKEW => Err(DistributionError::Invalid(format!(
            "{reference}: the manifest says it was created {created}, later than now ({}): refused (a signed time in the future would outrank every version made until then; check the clock of the machine that pushed it, push again, then sign)",
            now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        ))),
        _ => Ok(()),
    }
}

/// The manifests in `store` that name the component `component`: how a component
/// digest (what `[tools.NAME] reviewed` holds) is found again as something a
/// registry serves (a manifest digest). Reads every stored file no larger than a
/// manifest, so for hints and checks off the hot path only.
pub fn stored_manifests_of(store: &Store, component: &Digest) -> Vec<Digest> {
    let Ok(entries) = std::fs::read_dir(store.root().join("blobs/sha256")) else {
        return Vec::new();
    };
    let mut found: Vec<Digest> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.metadata()
                .is_ok_and(|m| m.is_file() && m.len() <= MAX_MANIFEST_BYTES as u64)
        })
        .filter_map(|e| Digest::parse(&format!("sha256:{}", e.file_name().to_str()?)).ok())
        .filter(|d| {
            store
                .read(d, MAX_MANIFEST_BYTES as u64)
                .ok()
                .and_then(|bytes| WasmManifest::parse(&bytes).ok())
                .is_some_and(|m| m.component.digest == *component)
        })
        .collect();
    found.sort_by_key(Digest::to_string);
    found
}

/// The signature file beside a component file: `FILE.sig`, one signature per line.
pub fn signature_file(component: &Path) -> PathBuf {
    let mut name = component.as_os_str().to_owned();
    name.push(".sig");
    PathBuf::from(name)
}

/// The signatures in `FILE.sig` (none when there is no such file).
pub fn file_signatures(component: &Path) -> Vec<Signature> {
    std::fs::read(signature_file(component))
        .map(|bytes| {
            bytes
                .split(|b| *b == b'\n')
                .take(artifact::MAX_SIGNATURES)
                .filter_map(|line| Signature::parse(line).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Signs a component file: its signature (a statement naming the digest and no
/// repository) is added to `FILE.sig` (replacing one by the same key).
///
/// # Errors
/// [`DistributionError::Io`], or a file that is not a component.
pub fn sign_file(component: &Path, key: &SigningKey) -> Result<Signature, DistributionError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| DistributionError::Io { path, source }
    };
    let bytes = std::fs::read(component).map_err(io(component))?;
    if !bytes.starts_with(&COMPONENT_PREAMBLE) {
        return Err(DistributionError::Invalid(format!(
            "{} is not a WebAssembly component",
            component.display()
        )));
    }
    // A file has no repository and no manifest: its statement is the digest alone.
    let signature = key.sign(&Statement {
        digest: Digest::of(&bytes),
        repository: None,
        version: None,
        created: None,
    });
    let mut lines: Vec<Vec<u8>> = file_signatures(component)
        .into_iter()
        .filter(|s| s.key != signature.key)
        .map(|s| s.to_bytes())
        .collect();
    lines.push(signature.to_bytes());
    let sig_path = signature_file(component);
    std::fs::write(&sig_path, lines.join(&b'\n')).map_err(io(&sig_path))?;
    Ok(signature)
}

/// What a registry, a store or a file sends is untrusted: every parser of it ends with
/// a value or an error, whatever the bytes.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_keeps_only_signatures_a_trusted_key_made() {
        let dir = tempfile::TempDir::new().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (_, key) = SigningKey::generate().unwrap();
        let (_, stranger) = SigningKey::generate().unwrap();
        let digest = Digest::of(b"component");
        let statement = |repository: &str| {
            Statement::new(
                digest.clone(),
                Some(repository),
                Some("1.0.0"),
                Some("2026-01-01T00:00:00Z"),
            )
            .unwrap()
        };
        let good = key.sign(&statement("tools/echo"));
        let elsewhere = key.sign(&statement("tools/other"));
        let mut forged = stranger.sign(&statement("tools/echo"));
        forged.key = key.public().id();
        let trust = Trust {
            keys: TrustedKeys::new(vec![key.public()]),
            require_signature: true,
        };
        let offered = [
            good.clone(),
            elsewhere.clone(),
            forged,
            stranger.sign(&statement("tools/echo")),
            key.sign(&Statement::new(Digest::of(b"other"), None, None, None).unwrap()),
        ];
        keep_signatures(&store, &trust, &digest, &offered).unwrap();
        let mut kept = stored_signatures(&store, &digest);
        kept.sort_by_key(|s| s.statement.repository.clone());
        assert_eq!(kept, [good, elsewhere]);
    }
}

#[cfg(test)]
mod signing {
    use super::*;

    #[test]
    fn a_creation_time_past_the_clock_skew_is_refused_for_signing() {
        let reference = Reference::parse(&format!(
            "r.example.com/tools/echo@sha256:{}",
            "a".repeat(64)
        ))
        .unwrap();
        let now = chrono::DateTime::parse_from_rfc3339("2026-06-01T12:00:00Z")
            .unwrap()
            .to_utc();
        for (created, ok, why) in [
            ("2026-06-01T12:00:00Z", true, "now"),
            ("2020-01-01T00:00:00Z", true, "the past"),
            ("2026-06-01T12:04:59Z", true, "within the skew"),
            (
                "2026-06-01T14:04:00+02:00",
                true,
                "within the skew, another offset",
            ),
            ("2026-06-01T12:05:01Z", false, "past the skew"),
            ("2099-01-01T00:00:00Z", false, "far in the future"),
        ] {
            let result = check_not_future(&reference, created, now);
            assert_eq!(result.is_ok(), ok, "{why}: {result:?}");
        }
    }

    #[test]
    fn signing_by_tag_is_refused_before_the_registry_is_asked() {
        let (_, key) = SigningKey::generate().unwrap();
        // Nothing listens on this port: a refusal that asked would be a network error.
        let reference = Reference::parse("127.0.0.1:9/tools/echo:stable").unwrap();
        let e = sign_pushed(
            &reference,
            &key,
            &ClientOptions {
                insecure: true,
                ..ClientOptions::default()
            },
        )
        .unwrap_err();
        assert!(
            matches!(&e, DistributionError::Invalid(m) if m.contains("by its manifest digest")),
            "{e}"
        );
    }
}

#[cfg(test)]
mod fuzz {
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn parsers_of_untrusted_input_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let _ = crate::artifact::WasmManifest::parse(&bytes);
            let _ = crate::artifact::signature_layers(&bytes, 1024);
            let _ = crate::Signature::parse(&bytes);
            let text = String::from_utf8_lossy(&bytes);
            let _ = crate::auth::from_text(&text, "registry.example.com");
            let _ = crate::PublicKey::parse(&text);
            let _ = crate::SigningKey::from_pem(&text);
            let _ = crate::Digest::parse(&text);
            let _ = crate::client::parse_challenge(&text);
        }

        #[test]
        fn manifest_shaped_json_never_panics(
            schema in 0u32..4,
            media in "[a-z./+0-9-]{0,40}",
            size in any::<u64>(),
            layers in 0usize..4,
        ) {
            let layer = format!(r#"{{"mediaType":"{media}","digest":"sha256:{}","size":{size}}}"#, "a".repeat(64));
            let m = format!(
                r#"{{"schemaVersion":{schema},"config":{layer},"layers":[{}]}}"#,
                vec![layer.clone(); layers].join(",")
            );
            let _ = crate::artifact::WasmManifest::parse(m.as_bytes());
        }
    }
}
