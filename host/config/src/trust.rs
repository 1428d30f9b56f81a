//! `[trust]`: the keys community tools' signatures are checked against, whether a
//! signature is required, and where the tool store is. (Each tool's `source` and
//! `reviewed` digest are read with its `[tools.NAME]` table.)

use crate::error::PolicyFileError;
use hermetic_policy::trust::TrustPolicy;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// `[trust]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct TrustToml {
    #[serde(default)]
    keys: Vec<String>,
    #[serde(default)]
    require_signature: bool,
    #[serde(default)]
    strict: bool,
    store: Option<PathBuf>,
}

/// Largest public-key file read.
const MAX_KEY_FILE: u64 = 4096;

/// `[trust]`: each key inline (`ed25519:…`) or a file holding one (relative to the
/// policy file's directory, as `hermetic keygen` writes `KEY.pub`), and the store.
pub(crate) fn trust_policy(
    raw: TrustToml,
    file_dir: &Path,
    invalid: &impl Fn(String) -> PolicyFileError,
) -> Result<TrustPolicy, PolicyFileError> {
    use std::io::Read as _;
    let mut keys = Vec::new();
    for key in raw.keys {
        if key.starts_with("ed25519:") {
            keys.push(key);
            continue;
        }
        let path = file_dir.join(&key);
        let mut text = String::new();
        std::fs::File::open(&path)
            .and_then(|f| f.take(MAX_KEY_FILE).read_to_string(&mut text))
            .map_err(|e| {
                invalid(format!(
                    "trust.keys: {key:?} is neither a key (ed25519:…) nor a readable key file ({}: {e})",
                    path.display()
                ))
            })?;
        keys.push(text.trim().to_owned());
    }
    Ok(TrustPolicy {
        keys,
        require_signature: raw.require_signature,
        strict: raw.strict,
        store: raw.store.map(|s| file_dir.join(s)),
        ..Default::default()
    })
}

/// The trusted keys' files `text` names (relative to `file_dir`): what the host trusts
/// at its next start, so no terminal command may name them. A file that did not load
/// names none (the load failed first).
pub(crate) fn key_files(text: &str, file_dir: &Path) -> impl Iterator<Item = PathBuf> {
    toml::from_str::<toml::Table>(text)
        .ok()
        .and_then(|t| t.get("trust")?.get("keys")?.as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|k| k.as_str().map(str::to_owned))
        .filter(|k| !k.starts_with("ed25519:"))
        .map(move |k| file_dir.join(k))
}
