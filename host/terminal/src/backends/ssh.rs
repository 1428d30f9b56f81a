//! The SSH backend: the OpenSSH client against one host, key authentication only
//! (BatchMode: never a password prompt), one shared master connection
//! (ControlMaster/ControlPersist) so each command costs a channel, not a handshake.
//! Each command runs in its own pid namespace on the remote host (see
//! `pid_namespace_launcher`); a timeout kills it there through a second channel,
//! finding it by its marker (`remote_kill_script`).

use crate::backend::{
    BackendError, Job, TerminalBackend, pid_namespace_launcher, remote_kill_script, script_marker,
    shell_quote,
};
use crate::backends::{BackendPlan, BackendSpec, BuildContext, Home, Options};
use crate::exec::run_helper;
use hermetic_approval::SessionKey;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

static SSH_SEQ: AtomicU64 = AtomicU64::new(0);
/// Seconds a remote kill may take.
const KILL_TIMEOUT: Duration = Duration::from_secs(15);

/// `backend = "ssh"`.
pub(crate) const SPEC: BackendSpec = BackendSpec {
    name: "ssh",
    read: |options| read(options).map(|c| Box::new(c) as Box<dyn BackendPlan>),
};

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

fn read(options: &Options<'_>) -> Result<SshConfig, String> {
    let mut config: SshConfig = options.parse()?;
    options.resolve(&mut config.identity_file);
    options.resolve(&mut config.known_hosts_file);
    if options.selected && config.host.is_empty() {
        return Err("the ssh backend needs host = \"…\"".to_owned());
    }
    Ok(config)
}

impl BackendPlan for SshConfig {
    fn home(&self) -> Home {
        Home::Elsewhere
    }

    fn reach(&self) -> Vec<(&'static str, PathBuf)> {
        Vec::new()
    }

    fn build(
        &self,
        cx: &BuildContext<'_>,
    ) -> Result<Arc<dyn TerminalBackend>, crate::TerminalError> {
        Ok(Arc::new(SshBackend::new(self, cx.cwd.clone())?))
    }
}

/// Runs commands on a remote host over OpenSSH.
#[derive(Debug)]
pub struct SshBackend {
    config: SshConfig,
    cwd: String,
    /// Private directory for the control socket.
    control_dir: PathBuf,
    /// Whether the master connection was started (and by whom it must be stopped).
    master: Mutex<bool>,
}

impl SshBackend {
    /// An SSH backend; `cwd` on the remote host (default: the login directory).
    ///
    /// # Errors
    /// [`BackendError::Config`] without a host.
    pub fn new(config: &SshConfig, cwd: Option<String>) -> Result<Self, BackendError> {
        if config.host.is_empty() {
            return Err(BackendError::Config {
                backend: "ssh",
                reason: "set [terminal.ssh] host".into(),
            });
        }
        let control_dir = std::env::temp_dir().join(format!(
            "hermetic-ssh-{}-{}",
            std::process::id(),
            SSH_SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        Ok(Self {
            config: config.clone(),
            cwd: cwd.unwrap_or_else(|| ".".to_owned()),
            control_dir,
            master: Mutex::new(false),
        })
    }

    /// `ssh` with every option but the remote command.
    fn ssh(&self) -> Command {
        let c = &self.config;
        let mut cmd = Command::new("ssh");
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default());
        if let Some(home) = std::env::var_os("HOME") {
            cmd.env("HOME", home);
        }
        let opt = |cmd: &mut Command, o: String| {
            cmd.arg("-o").arg(o);
        };
        opt(&mut cmd, "BatchMode=yes".into());
        opt(&mut cmd, "ControlMaster=auto".into());
        opt(
            &mut cmd,
            format!("ControlPath={}/%C", self.control_dir.display()),
        );
        opt(
            &mut cmd,
            format!("ControlPersist={}", c.control_persist_secs.max(1)),
        );
        opt(
            &mut cmd,
            format!("ConnectTimeout={}", c.connect_timeout_secs.max(1)),
        );
        opt(
            &mut cmd,
            format!("StrictHostKeyChecking={}", c.strict_host_key_checking),
        );
        opt(&mut cmd, "LogLevel=ERROR".into());
        if let Some(file) = &c.known_hosts_file {
            opt(&mut cmd, format!("UserKnownHostsFile={}", file.display()));
        }
        if let Some(key) = &c.identity_file {
            cmd.arg("-i").arg(key);
            opt(&mut cmd, "IdentitiesOnly=yes".into());
        }
        for o in &c.options {
            opt(&mut cmd, o.clone());
        }
        cmd.arg("-p").arg(c.port.to_string());
        if let Some(user) = &c.user {
            cmd.arg("-l").arg(user);
        }
        cmd
    }

    /// Starts the shared master connection once, detached from every command's pipes
    /// (a master started by a command would hold that command's output open).
    fn ensure_master(&self) -> Result<(), BackendError> {
        let mut started = self.master.lock();
        if *started {
            return Ok(());
        }
        use std::os::unix::fs::DirBuilderExt;
        // Not recursive, so a directory someone else planted under this name (the name
        // is predictable) is an error rather than a place for our control socket.
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&self.control_dir)
            .map_err(|e| BackendError::Setup {
                backend: "ssh",
                reason: format!("control directory {}: {e}", self.control_dir.display()),
            })?;
        let mut cmd = self.ssh();
        cmd.args(["-M", "-N", "-f", "--", &self.config.host]);
        run_helper(
            cmd,
            "ssh",
            Duration::from_secs(self.config.connect_timeout_secs.max(1) + 5),
        )
        .map_err(|e| BackendError::Setup {
            backend: "ssh",
            reason: format!("connecting to {}: {e}", self.config.host),
        })?;
        *started = true;
        Ok(())
    }
}

impl TerminalBackend for SshBackend {
    /// Commands run under the image's or host's `sh` (busybox images have no bash).
    fn runs_bash(&self) -> bool {
        false
    }

    fn name(&self) -> &'static str {
        "ssh"
    }

    fn default_cwd(&self) -> String {
        self.cwd.clone()
    }

    fn is_remote(&self) -> bool {
        true
    }

    fn pty_mode(&self) -> crate::backend::PtyMode {
        crate::backend::PtyMode::Backend
    }

    /// A dropped connection does not end a remote command, so a kill before the
    /// launcher printed its `started` line would miss one sshd was about to start.
    fn announces_start(&self) -> bool {
        true
    }

    fn command(&self, _session: &SessionKey, job: &Job) -> Result<Command, BackendError> {
        self.ensure_master()?;
        // Environment variables travel inside the script: sshd accepts only the names
        // its AcceptEnv lists.
        let mut script = String::new();
        for (k, v) in &job.env {
            if k != "PATH" && k != "HOME" {
                script.push_str(&format!("export {k}={}\n", shell_quote(v)));
            }
        }
        script.push_str(&job.script);
        let mut cmd = self.ssh();
        if job.pty {
            cmd.arg("-tt");
        } else {
            cmd.arg("-T");
        }
        // The script is the launcher's `$1` and its marker `$2`: the login shell
        // parses this one line.
        cmd.args(["--", &self.config.host]).arg(format!(
            "sh -c {} hermetic {} {}",
            shell_quote(pid_namespace_launcher(self.config.pid_namespace)),
            shell_quote(&script),
            shell_quote(script_marker(&job.script).unwrap_or_default())
        ));
        Ok(cmd)
    }

    fn kill_remote(&self, _session: &SessionKey, marker: &str) -> Result<(), BackendError> {
        let mut cmd = self.ssh();
        cmd.args(["-T", "--", &self.config.host]).arg(format!(
            "sh -c {}",
            shell_quote(&remote_kill_script(marker))
        ));
        run_helper(cmd, "ssh", KILL_TIMEOUT).map(drop)
    }

    fn shutdown(&self) {
        let mut started = self.master.lock();
        if *started {
            let mut cmd = self.ssh();
            cmd.args(["-O", "exit", "--", &self.config.host]);
            let _ = run_helper(cmd, "ssh", KILL_TIMEOUT);
            *started = false;
        }
        let _ = std::fs::remove_dir_all(&self.control_dir);
    }
}
