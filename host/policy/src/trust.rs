//! Community tools: where each tool named by reference comes from, and what the
//! operator trusts (`[tools.NAME] source`, `[trust]`). Plain data; the
//! `hermetic-distribution` crate verifies and loads.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// The operator's `[trust]` table and the tools' sources.
///
/// | key | default |
/// |---|---|
/// | `keys` | `[]`: no publisher is trusted |
/// | `require_signature` | `false` (a policy that names any `source` should set it) |
/// | `strict` | `false`: a tool from a `source` that cannot be loaded is listed unavailable, the rest are served |
/// | `store` | `$HERMETIC_STORE_DIR`, else `$XDG_DATA_HOME/hermetic/store`, else `~/.local/share/hermetic/store` |
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustPolicy {
    /// Trusted public keys (`ed25519:…`), read from the policy or the files it names.
    pub keys: Vec<String>,
    /// Refuse a pulled tool without a signature by a trusted key.
    pub require_signature: bool,
    /// Stop the start when a tool from a `source` cannot be loaded (not pulled,
    /// unsigned, tampered with, named otherwise), instead of listing it unavailable
    /// with the reason and serving the rest.
    pub strict: bool,
    /// Tenants that require signatures though the operator does not (a tenant may
    /// only narrow): their tools from a `source` must be signed.
    pub tenants_requiring: BTreeSet<String>,
    /// The tool store, when the policy names one.
    pub store: Option<PathBuf>,
    /// Tool name → its source (`oci://HOST/REPO:TAG` or `…@sha256:…`), as written.
    pub sources: BTreeMap<String, String>,
    /// Tool name → the component digest (`sha256:…`) its grants were reviewed for.
    /// Another version is withheld when it means something else (see
    /// [`crate::review`]: name, toolset, limits, schema, …), asks for more, or is
    /// older by its signed statement; without it, the grants are for the component
    /// the source pins by digest, and a tag's are for nothing.
    pub reviewed: BTreeMap<String, String>,
}

impl TrustPolicy {
    /// Whether `tenant` ("" = the operator) needs every tool from a source signed.
    pub fn requires_signature(&self, tenant: &str) -> bool {
        self.require_signature || self.tenants_requiring.contains(tenant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_defaults_hold() {
        let t = TrustPolicy::default();
        assert!(t.keys.is_empty());
        assert!(!t.require_signature);
        assert!(!t.strict, "a broken community tool is listed, not fatal");
        assert_eq!(t.store, None);
        assert!(!t.requires_signature(""));
    }
}
