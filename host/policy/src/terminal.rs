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

/// Which backend runs commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
// Not `#[non_exhaustive]`: the terminal host must match every backend, so a new one
// is a compile error there rather than an unhandled case.
pub enum BackendKind {
    /// `bash -c` on the host, in its own process group.
    #[default]
    Local,
    /// The local backend inside bubblewrap.
    Bwrap,
    /// A docker-compatible CLI (`docker`, `podman`): one container per session.
    Docker,
    /// The OpenSSH client against one remote host.
    Ssh,
}

impl BackendKind {
    /// The name used in policy files and results.
    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Local => "local",
            BackendKind::Bwrap => "bwrap",
            BackendKind::Docker => "docker",
            BackendKind::Ssh => "ssh",
        }
    }
}

/// One tenant's terminal (or the operator's default).
///
/// | field | default |
/// |---|---|
/// | `backend` | `local` |
/// | `cwd` | the `workspace` mount (a tenant's own subdirectory of it), else hermetic's directory (local, bwrap); `/` (docker, ssh) |
/// | `timeout_secs` | 180 (at most 600) |
/// | `env` | `[]`: commands see only PATH, HOME, LANG, TERM and the tool's granted env |
/// | `approval` | [`ApprovalConfig::default`]: manual, headless deny |
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TerminalConfig {
    /// The backend.
    pub backend: BackendKind,
    /// Default working directory (in the backend's file system).
    pub cwd: Option<PathBuf>,
    /// Foreground timeout when the agent gives none.
    pub timeout_secs: u64,
    /// Host env vars passed to commands (local and bwrap), besides the tool's grants.
    pub env: Vec<String>,
    /// Bubblewrap options.
    pub bwrap: BwrapConfig,
    /// Container options.
    pub docker: DockerConfig,
    /// SSH options.
    pub ssh: SshConfig,
    /// Approval settings for this tenant's commands.
    pub approval: ApprovalConfig,
}

impl Default for TerminalConfig {
    fn default() -> Self {
        Self {
            backend: BackendKind::Local,
            cwd: None,
            timeout_secs: DEFAULT_TIMEOUT_SECS,
            env: Vec::new(),
            bwrap: BwrapConfig::default(),
            docker: DockerConfig::default(),
            ssh: SshConfig::default(),
            approval: ApprovalConfig::default(),
        }
    }
}

/// Bubblewrap options. A command sees a minimal host: `/usr`, `/bin`, `/sbin`, `/lib*`
/// and `/etc` read-only (minus [`BwrapConfig::hide`] and the host's own state files),
/// empty private `/home`, `/root`, `/run`, `/var` and `/tmp`, its own `/dev` and
/// `/proc`, and one writable directory: the tenant's own.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BwrapConfig {
    /// The `bwrap` binary (default `bwrap` on PATH).
    pub program: Option<PathBuf>,
    /// Writable directory, bound at the same path; each tenant gets its own
    /// subdirectory of it (its `workspace` mount subdirectory's name, else its id).
    /// Default: the `workspace` mount (the tenant's own subdirectory of it) or `cwd`.
    pub workspace: Option<PathBuf>,
    /// Share the host's network (default: none, `--unshare-net`).
    pub network: bool,
    /// More host directories commands may read (e.g. `/opt/toolchain`), bound
    /// read-only at the same path.
    pub read_only: Vec<PathBuf>,
    /// Paths inside the read-only part (`/etc`, `/usr`, `read_only`) commands must not
    /// see, besides [`DEFAULT_HIDDEN`]: a directory becomes empty, a file empty.
    pub hide: Vec<PathBuf>,
}

/// What a `bwrap` command never sees of `/etc`, whatever the operator lists: password
/// hashes, sudo rules, the host's SSH keys and TLS private keys (hermetic may run as
/// root, and root without capabilities still owns these files).
pub const DEFAULT_HIDDEN: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh",
    "/etc/ssl/private",
    "/etc/security/opasswd",
];

/// Options of a docker-compatible CLI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DockerConfig {
    /// The CLI: `docker` or `podman` (or a path).
    pub program: String,
    /// Arguments before the subcommand (e.g. `["--runtime", "runc"]` for podman).
    pub global_args: Vec<String>,
    /// Environment for the CLI itself (e.g. `CONTAINERS_CONF`).
    pub cli_env: BTreeMap<String, String>,
    /// Image of the session containers.
    pub image: String,
    /// `--memory`.
    pub memory: String,
    /// `--cpus`.
    pub cpus: String,
    /// `--pids-limit`.
    pub pids_limit: u32,
    /// Attach the default network (default: `--network none`).
    pub network: bool,
    /// Host directory bind-mounted read-write at `/workspace` (default: none).
    pub workspace: Option<PathBuf>,
    /// Seconds a CLI call that starts or removes a container may take.
    pub setup_timeout_secs: u64,
}

impl Default for DockerConfig {
    fn default() -> Self {
        Self {
            program: "docker".to_owned(),
            global_args: Vec::new(),
            cli_env: BTreeMap::new(),
            image: "debian:stable-slim".to_owned(),
            memory: "1g".to_owned(),
            cpus: "1".to_owned(),
            pids_limit: 256,
            network: false,
            workspace: None,
            setup_timeout_secs: 120,
        }
    }
}

/// OpenSSH client options (key authentication only: BatchMode is always on).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SshConfig {
    /// Remote host.
    pub host: String,
    /// Remote user (default: the client's default).
    pub user: Option<String>,
    /// Port.
    pub port: u16,
    /// Private key file.
    pub identity_file: Option<PathBuf>,
    /// Known-hosts file (default: the client's).
    pub known_hosts_file: Option<PathBuf>,
    /// `StrictHostKeyChecking`: `yes` (default), `accept-new` or `no`.
    pub strict_host_key_checking: String,
    /// Seconds the shared master connection outlives its last use (ControlPersist).
    pub control_persist_secs: u64,
    /// Seconds to wait for the connection (ConnectTimeout).
    pub connect_timeout_secs: u64,
    /// Extra `-o` options, e.g. `["Ciphers=aes128-ctr"]`.
    pub options: Vec<String>,
}

impl Default for SshConfig {
    fn default() -> Self {
        Self {
            host: String::new(),
            user: None,
            port: 22,
            identity_file: None,
            known_hosts_file: None,
            strict_host_key_checking: "yes".to_owned(),
            control_persist_secs: 300,
            connect_timeout_secs: 10,
            options: Vec::new(),
        }
    }
}

/// The operator's terminal settings: a default and per-tenant replacements.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
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
        assert_eq!(c.backend, BackendKind::Local);
        assert_eq!(c.cwd, None);
        assert_eq!(c.timeout_secs, 180);
        assert!(c.env.is_empty());
        assert_eq!(c.approval.mode, Mode::Manual);
        assert_eq!(c.approval.headless, Headless::Deny);
        assert!(!c.bwrap.network);
        assert!(!c.docker.network);
        assert_eq!(c.docker.pids_limit, 256);
        assert_eq!(c.ssh.strict_host_key_checking, "yes");
        assert!(!TerminalSettings::default().grant_bundled);
    }
}
