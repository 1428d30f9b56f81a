//! Reading a policy file: the TOML parsed once into each section's table, each section
//! turned into its values (in the order a later one needs an earlier one's), then the
//! host files checked against what tools reach, and the secrets read.

use crate::cluster::{self, ClusterToml};
use crate::error::PolicyFileError;
use crate::grants::{self, GrantsToml};
use crate::hooks::{self, HookToml};
use crate::inject;
use crate::keyvalue::KeyValueFileToml;
use crate::mounts::{self, MountToml};
use crate::secrets::{self, SecretsToml};
use crate::server::{self, ServerPolicy, ServerToml};
use crate::state_files::{self, HostFiles};
use crate::tenants::{self, TenantToml};
use crate::terminal;
use crate::trust::{self, TrustToml};
use hermetic::{KeyValueSettings, Secrets, StateFile};
use hermetic_policy::OperatorPolicy;
use hermetic_policy::trust::TrustPolicy;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A loaded policy file.
#[derive(Debug, Clone)]
pub struct LoadedPolicy {
    /// The operator policy.
    pub policy: OperatorPolicy,
    /// Secret values for env grants.
    pub secrets: Secrets,
    /// Settings of `hermetic serve`: tokens, rate limits, allow-lists, audit.
    pub server: ServerPolicy,
    /// The files the host keeps that this policy names — the policy file itself (from
    /// [`load`]), the secrets file, the audit log, each approval allowlist, the
    /// key-value store and the tool store — already checked against this policy's
    /// [`ToolReach`](hermetic::ToolReach). A host that changes the mounts afterwards
    /// (`--workspace`) checks them again ([`hermetic::Registry::check_state_path`]).
    pub state_files: Vec<StateFile>,
    /// The tools named by reference, the trusted keys and the store.
    pub trust: TrustPolicy,
    /// `[keyvalue] file`: where tools' key-value data is kept (relative to the policy
    /// file; `None`: the host's default). Ignored with a cluster: data is in Redis.
    pub keyvalue_file: Option<PathBuf>,
    /// `[keyvalue]`'s ceiling of a tenant's session stores and their expiry (the
    /// defaults without them).
    pub keyvalue_settings: KeyValueSettings,
}

/// The whole file: each section's table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileToml {
    #[serde(default)]
    mounts: BTreeMap<String, MountToml>,
    #[serde(default)]
    secrets: Option<SecretsToml>,
    #[serde(default)]
    defaults: GrantsToml,
    #[serde(default)]
    tools: BTreeMap<String, GrantsToml>,
    #[serde(default)]
    tenants: BTreeMap<String, TenantToml>,
    /// Checked by hand (see [`terminal::terminal_settings`]): per-tenant tables merge
    /// onto it.
    #[serde(default)]
    terminal: Option<toml::Table>,
    #[serde(default)]
    server: ServerToml,
    #[serde(default)]
    trust: TrustToml,
    #[serde(default)]
    cluster: ClusterToml,
    #[serde(default)]
    hooks: BTreeMap<String, HookToml>,
    #[serde(default)]
    keyvalue: KeyValueFileToml,
}

/// Reads and validates a policy file. Relative mount and terminal paths resolve
/// against `base_dir` (the directory hermetic was started in); relative paths of the
/// secrets file, the audit log and approval allowlists against the policy file's own
/// directory.
///
/// # Errors
/// [`PolicyFileError`] naming the file, the key and what to write instead;
/// [`PolicyFileError::StatePath`] when the policy file, or a file it names for the
/// host, lies inside a mount. (What terminal commands reach is the backends' to say:
/// `hermetic_terminal::attach` fills it in, and the registry built from the policy
/// checks these files against it too — `Registry::check_state_path`.)
pub fn load(path: &Path, base_dir: &Path) -> Result<LoadedPolicy, PolicyFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| PolicyFileError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let file_dir = path.parent().unwrap_or(Path::new("."));
    let mut loaded = parse(&text, path, base_dir, file_dir)?;
    let policy_file = state_files::policy_file(&loaded.policy, path)?;
    loaded.state_files.insert(0, policy_file);
    // What no terminal command may name: the host's files, and what it trusts at its
    // next start (the trusted keys' files, hook components from files).
    loaded.policy.terminal.protected = state_files::protected_paths(
        &loaded.state_files,
        trust::key_files(&text, file_dir).chain(hooks::hook_files(&loaded.policy.hooks)),
    );
    Ok(loaded)
}

/// Parses policy text (see [`load`]); `path` is used in messages only (so the policy
/// file's own location is not checked: [`load`] does that).
///
/// # Errors
/// [`PolicyFileError`] as for [`load`].
pub fn parse(
    text: &str,
    path: &Path,
    base_dir: &Path,
    file_dir: &Path,
) -> Result<LoadedPolicy, PolicyFileError> {
    let invalid = |reason: String| PolicyFileError::Invalid {
        path: path.to_path_buf(),
        reason,
    };
    let raw: FileToml = toml::from_str(text).map_err(|e| PolicyFileError::Parse {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    // Each section in the order a later one needs an earlier one's values.
    let mounts = mounts::operator_mounts(raw.mounts, base_dir, &invalid)?;
    let defaults = grants::default_grants(raw.defaults, &mounts, &invalid)?;
    let tools = grants::tool_grants(raw.tools, &mounts, &invalid)?;
    let mut server = server::server_policy(raw.server, &raw.tenants, file_dir, &invalid)?;
    cluster::cluster_settings(raw.cluster, &mut server, &invalid)?;
    let mut trust = trust::trust_policy(raw.trust, file_dir, &invalid)?;
    trust.sources = tools.sources;
    trust.reviewed = tools.reviewed;
    let tenants = tenants::tenant_policies(raw.tenants, &mounts, &mut trust, &invalid)?;
    let secrets_file = raw.secrets.map(|s| file_dir.join(s.file));
    let terminal =
        terminal::terminal_settings(raw.terminal, &tenants, base_dir, file_dir, &invalid)?;
    let hooks = hooks::hook_policies(raw.hooks, &mounts, &tenants, file_dir, &invalid)?;
    let policy = OperatorPolicy {
        mounts,
        defaults,
        tools: tools.grants,
        tenants,
        terminal,
        hooks,
    };
    terminal::console_approver_needs_admin(&policy.terminal, &server, &invalid)?;
    let keyvalue_settings = raw.keyvalue.settings().map_err(&invalid)?;
    let keyvalue_file = raw.keyvalue.file.map(|f| file_dir.join(f));

    // Checked before the secrets are read: a secrets file a tool can reach is refused,
    // not used.
    let host_files = HostFiles {
        secrets: secrets_file.as_deref(),
        keyvalue: keyvalue_file.as_deref(),
        store: trust.store.as_deref(),
    };
    let state_files = state_files::checked_state_files(&policy, &server, &host_files, path)?;
    let secrets = secrets::read_secrets(secrets_file.as_deref())?;
    inject::check_bindings(&policy, &secrets, &invalid)?;
    if let Some(name) = &server.state_key {
        cluster::check_state_key(name, &secrets, &policy, &invalid)?;
    }
    Ok(LoadedPolicy {
        policy,
        secrets,
        server,
        state_files,
        trust,
        keyvalue_file,
        keyvalue_settings,
    })
}

/// [`parse`] with `dir` as both the start and the policy file's directory.
#[cfg(test)]
pub(crate) fn parse_in(dir: &Path, text: &str) -> Result<LoadedPolicy, PolicyFileError> {
    parse(text, Path::new("policy.toml"), dir, dir)
}

#[cfg(test)]
mod tests {
    use crate::load::parse_in;

    #[test]
    fn the_shipped_example_parses() {
        let dir = tempfile::TempDir::new().unwrap();
        std::fs::create_dir_all(dir.path().join("examples/data")).unwrap();
        std::fs::create_dir_all(dir.path().join("examples/workspace")).unwrap();
        std::fs::write(
            dir.path().join("examples/secrets.toml"),
            "WEATHER_API_KEY = \"k\"\n",
        )
        .unwrap();
        let example = include_str!("../../../policy.example.toml");
        let loaded = parse_in(dir.path(), example).unwrap();
        assert!(loaded.policy.mounts.contains_key("workspace"));
        assert!(!loaded.policy.tenants.is_empty());
        assert_eq!(loaded.secrets.get("WEATHER_API_KEY"), Some("k"));
        assert_eq!(format!("{:?}", loaded.secrets), "{\"WEATHER_API_KEY\"}");
    }

    #[test]
    fn a_policy_toml_error_names_the_file_line_and_column() {
        let dir = tempfile::TempDir::new().unwrap();
        let err = parse_in(dir.path(), "[defaults]\nterminal = yes\n")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("policy.toml: "), "{err}");
        assert!(err.contains("line 2, column 12"), "{err}");
    }

    #[test]
    fn unknown_keys_and_bad_values_are_load_errors_that_say_what_to_write() {
        let dir = tempfile::TempDir::new().unwrap();
        let err = |text: &str| parse_in(dir.path(), text).unwrap_err().to_string();
        assert!(err("[defaults]\ngrant_everything = true").contains("grant_everything"));
        assert!(err("[defaults]\nnetwork = [\"ftp://x.com\"]").contains("http or https"));
        assert!(err("[defaults]\nclock = \"fast\"").contains("coarse_ms"));
        assert!(err("[mounts.w]\npath = \"missing\"\naccess = \"rw\"").contains("cannot be used"));
        assert!(err("[defaults]\nmounts = [\"nope\"]").contains("no mount named `nope`"));
        assert!(err("[tenants.a.mounts.nope]\naccess = \"ro\"").contains("no such mount"));
        assert!(err("[mounts.w]\npath = \".\"\naccess = \"rwx\"").contains("access"));
    }
}
