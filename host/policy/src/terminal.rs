//! Terminal settings as an operator writes them (the `[terminal]` table of a policy
//! file): which backend runs commands, its options, and the approval settings. Plain
//! data; `hermetic_terminal::TerminalHost` compiles it.

use crate::approval::ApprovalConfig;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Foreground timeout when the agent gives none, in seconds (Hermes's default).
pub const DEFAULT_TIMEOUT_SECS: u64 = 180;
/// Longest foreground timeout; longer jobs belong in the background.
pub const MAX_TIMEOUT_SECS: u64 = 600;

/// The backend of [`TerminalConfig::default`] (a library caller's choice to make).
pub const DEFAULT_BACKEND: &str = "local";

/// The backend a policy file's terminal gets when it names none: `bwrap` when
/// bubblewrap is installed and works on this machine, else `local` (with a warning);
/// `hermetic_terminal` decides once, at start.
pub const AUTO_BACKEND: &str = "auto";

fn auto_backend() -> String {
    AUTO_BACKEND.to_owned()
}

/// One tenant's terminal (or the operator's default).
///
/// | field | default |
/// |---|---|
/// | `backend` | `auto` in a policy file ([`AUTO_BACKEND`]: `bwrap` when it works, else `local`); `local` for [`TerminalConfig::default`] |
/// | `cwd` | the `workspace` mount (a tenant's own subdirectory of it), else hermetic's directory (local, bwrap); `/` (docker, ssh) |
/// | `timeout_secs` | 180 (at most 600) |
/// | `env` | `[]`: commands see only PATH, HOME, LANG, TERM and the tool's granted env |
/// | `approval` | [`ApprovalConfig::default`]: manual, headless deny |
///
/// Each backend's own options (`[terminal.bwrap]`, `[terminal.docker]`, …) are kept as
/// written, in [`TerminalConfig::options`]: the backend that owns a table reads it
/// (`hermetic-terminal`, one file per backend), so a new backend adds no field here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TerminalConfig {
    /// The backend's name (`local`, `bwrap`, `docker`, `ssh`, or `auto`).
    #[serde(default = "auto_backend")]
    pub backend: String,
    /// Default working directory (in the backend's file system).
    pub cwd: Option<PathBuf>,
    /// Foreground timeout when the agent gives none.
    pub timeout_secs: u64,
    /// Host env vars passed to commands (local and bwrap), besides the tool's grants.
    pub env: Vec<String>,
    /// Approval settings for this tenant's commands.
    pub approval: ApprovalConfig,
    /// Every other key: the backends' option tables by backend name, as written.
    /// `hermetic-terminal` refuses a key no backend owns, and a table its backend
    /// cannot read.
    #[serde(flatten)]
    pub options: BTreeMap<String, toml::Value>,
    /// The directories of this host its commands reach (working directory, writable
    /// workspace), each with what it is (e.g. "bwrap workspace"): filled in by the
    /// terminal host from the backend's options, read by the check that keeps the
    /// host's own files out of them.
    #[serde(skip)]
    pub reach: Vec<(String, PathBuf)>,
}

impl Default for TerminalConfig {
    fn default() -> Self {
        Self {
            backend: DEFAULT_BACKEND.to_owned(),
            cwd: None,
            timeout_secs: DEFAULT_TIMEOUT_SECS,
            env: Vec::new(),
            approval: ApprovalConfig::default(),
            options: BTreeMap::new(),
            reach: Vec::new(),
        }
    }
}

impl TerminalConfig {
    /// This configuration with `backend` chosen and its options table set from
    /// `options` (any serializable value, e.g. the backend's own config struct).
    ///
    /// # Errors
    /// `options` does not serialize to a TOML table.
    pub fn using(
        mut self,
        backend: &str,
        options: &impl Serialize,
    ) -> Result<Self, toml::ser::Error> {
        self.backend = backend.to_owned();
        self.options
            .insert(backend.to_owned(), toml::Value::try_from(options)?);
        Ok(self)
    }
}

/// The operator's terminal settings: a default and per-tenant replacements.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct TerminalSettings {
    /// For the operator and every tenant without its own.
    pub default: TerminalConfig,
    /// Tenant id → its settings (the default with the tenant's keys applied).
    pub tenants: BTreeMap<String, TerminalConfig>,
    /// Grant the terminal to the *bundled* tools that declare it (`terminal`, `process`)
    /// without a policy entry. True only for the embedded defaults (no policy file);
    /// a tool from a tools directory never gets the terminal this way.
    pub grant_bundled: bool,
    /// The host's own files and directories (the policy, secrets, audit log,
    /// allowlists, the compiled-code cache): hidden from sandboxed commands even where
    /// the sandbox shows the host read-only (a `bwrap` command's `/etc`).
    pub protected: Vec<PathBuf>,
    /// The host's own programs (the running `hermetic`): no command may name them.
    pub programs: Vec<PathBuf>,
    /// What relative paths in the backends' options resolve against (the directory
    /// hermetic was started in, for a policy file); `None`: the process's current
    /// directory.
    pub base_dir: Option<PathBuf>,
}

impl TerminalSettings {
    /// The settings for `tenant` ("" = the operator).
    pub fn for_tenant(&self, tenant: &str) -> &TerminalConfig {
        self.tenants.get(tenant).unwrap_or(&self.default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::{Headless, Mode};

    #[test]
    fn documented_defaults_hold() {
        let c = TerminalConfig::default();
        assert_eq!(c.backend, "local");
        assert_eq!(c.cwd, None);
        assert_eq!(c.timeout_secs, 180);
        assert!(c.env.is_empty());
        assert_eq!(c.approval.mode, Mode::Manual);
        assert_eq!(c.approval.headless, Headless::Deny);
        assert!(c.options.is_empty());
        assert!(!TerminalSettings::default().grant_bundled);
        // A policy file's terminal without a backend lets the host pick a sandbox.
        let from_file: TerminalConfig = toml::from_str("timeout_secs = 5").unwrap();
        assert_eq!(from_file.backend, AUTO_BACKEND);
    }
}
