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

/// Where podman (containers-common) keeps its default seccomp profile.
pub const DEFAULT_SECCOMP_PROFILE: &str = "/usr/share/containers/seccomp.json";

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
    /// Host directory bind-mounted read-write (`nosuid,nodev`) at `/workspace`
    /// (default: none).
    pub workspace: Option<PathBuf>,
    /// Bind each tenant's own subdirectory of `workspace` (its `workspace` mount
    /// subdirectory, else its tenant id; made 0700 when missing), not the whole of it.
    /// The operator tenant always gets the whole directory. Default true.
    pub per_tenant: bool,
    /// `--user` of the session containers, `UID[:GID]` or a name the image knows.
    /// Default: the uid:gid hermetic runs as, so files in the workspace belong to the
    /// host user rather than to whoever the image says.
    pub user: Option<String>,
    /// The seccomp profile the containers' own is derived from (docker-format JSON):
    /// hermetic adds rules that refuse to set the setuid and setgid bits (chmod,
    /// open/creat/mknod modes), so no command can leave a setuid file in the
    /// workspace. Default: podman's `/usr/share/containers/seccomp.json`; for docker,
    /// point it at moby's `profiles/seccomp/default.json`.
    pub seccomp_profile: PathBuf,
    /// Run each command in its own pid namespace inside the container (`unshare`, in
    /// a user namespace), so a timeout, a kill or the command's end takes everything
    /// it started with it, daemons included. When the image's `unshare` cannot, the
    /// command is refused. Default true; false runs commands without one, and what
    /// they leave running (a double fork, `setsid`) lives until the session ends.
    pub pid_namespace: bool,
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
            per_tenant: true,
            user: None,
            seccomp_profile: PathBuf::from(DEFAULT_SECCOMP_PROFILE),
            pid_namespace: true,
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
    /// Run each command in its own pid namespace on the remote host (`unshare`: as
    /// root, or in a user namespace where the host allows unprivileged ones), so a
    /// timeout, a kill, the command's end or the session's takes everything it
    /// started with it. When the host cannot, the command is refused. Default true;
    /// false runs commands without one, and a double fork or `setsid` outlives them.
    pub pid_namespace: bool,
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
            pid_namespace: true,
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
