//! The container backend, for any docker-compatible CLI (`docker`, `podman`): one
//! long-lived container per session — all capabilities dropped, no-new-privileges,
//! pids/memory/cpu limits, no network unless the operator allows it, an optional
//! workspace bind — and each command a `exec` into it. The container is removed when
//! the session ends or the host shuts down.

use super::backend::{BackendError, Job, TerminalBackend, remote_kill_script};
use super::config::DockerConfig;
use super::exec::run_helper;
use hermetic_approval::SessionKey;
use std::collections::HashMap;
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Where the workspace appears inside the container.
pub const CONTAINER_WORKSPACE: &str = "/workspace";
/// Seconds a remote kill may take.
const KILL_TIMEOUT: Duration = Duration::from_secs(15);

static CONTAINER_SEQ: AtomicU64 = AtomicU64::new(0);

/// Runs commands in per-session containers.
#[derive(Debug)]
pub struct DockerBackend {
    config: DockerConfig,
    cwd: String,
    /// Session → its running container's name.
    containers: Mutex<HashMap<SessionKey, String>>,
}

impl DockerBackend {
    /// A container backend; `cwd` inside the container (default `/workspace` when a
    /// workspace is bound, else `/`).
    pub fn new(config: &DockerConfig, cwd: Option<String>) -> Self {
        let cwd = cwd.unwrap_or_else(|| {
            if config.workspace.is_some() {
                CONTAINER_WORKSPACE.to_owned()
            } else {
                "/".to_owned()
            }
        });
        Self {
            config: config.clone(),
            cwd,
            containers: Mutex::new(HashMap::new()),
        }
    }

    fn cli(&self) -> Command {
        let mut cmd = Command::new(&self.config.program);
        cmd.args(&self.config.global_args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .envs(&self.config.cli_env);
        if let Some(home) = std::env::var_os("HOME") {
            cmd.env("HOME", home);
        }
        cmd
    }

    /// The session's container, started on first use.
    fn container(&self, session: &SessionKey) -> Result<String, BackendError> {
        let mut containers = self.containers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(name) = containers.get(session) {
            return Ok(name.clone());
        }
        let name = format!(
            "hermetic-{}-{}",
            std::process::id(),
            CONTAINER_SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let c = &self.config;
        let mut cmd = self.cli();
        cmd.args(["run", "-d", "--rm", "--name", &name])
            .args(["--cap-drop", "ALL", "--security-opt", "no-new-privileges"])
            .args(["--pids-limit", &c.pids_limit.to_string()])
            .args(["--memory", &c.memory, "--cpus", &c.cpus])
            .args(["--label", "hermetic.session=1"]);
        if !c.network {
            cmd.args(["--network", "none"]);
        }
        if let Some(ws) = &c.workspace {
            cmd.arg("-v")
                .arg(format!("{}:{CONTAINER_WORKSPACE}:rw", ws.display()));
        }
        // A process that does nothing keeps the container alive between commands.
        cmd.args([&c.image, "sleep", "2147483647"]);
        run_helper(
            cmd,
            "docker",
            Duration::from_secs(c.setup_timeout_secs.max(1)),
        )
        .map_err(|e| BackendError::Setup {
            backend: "docker",
            reason: format!("starting the session container from {}: {e}", c.image),
        })?;
        containers.insert(session.clone(), name.clone());
        Ok(name)
    }

    fn remove(&self, name: &str) {
        let mut cmd = self.cli();
        cmd.args(["rm", "-f", "-t", "0", name]);
        if let Err(e) = run_helper(
            cmd,
            "docker",
            Duration::from_secs(self.config.setup_timeout_secs.max(1)),
        ) {
            tracing::warn!(error = %e, container = name, "could not remove a session container");
        }
    }
}

impl TerminalBackend for DockerBackend {
    /// Commands run under the image's or host's `sh` (busybox images have no bash).
    fn runs_bash(&self) -> bool {
        false
    }

    fn name(&self) -> &'static str {
        "docker"
    }

    fn default_cwd(&self) -> String {
        self.cwd.clone()
    }

    fn is_remote(&self) -> bool {
        true
    }

    fn command(&self, session: &SessionKey, job: &Job) -> Result<Command, BackendError> {
        let name = self.container(session)?;
        let mut cmd = self.cli();
        cmd.args(["exec", "-i"]);
        for (k, v) in &job.env {
            // The image has its own PATH and HOME. `-e NAME` takes the value from the
            // CLI's own environment, so values never appear in the host's process list.
            if k != "PATH" && k != "HOME" {
                cmd.arg("-e").arg(k).env(k, v);
            }
        }
        cmd.args([name.as_str(), "sh", "-c", &job.script]);
        Ok(cmd)
    }

    fn kill_remote(&self, session: &SessionKey, pid: u32) -> Result<(), BackendError> {
        let Some(name) = self
            .containers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(session)
            .cloned()
        else {
            return Ok(());
        };
        let mut cmd = self.cli();
        cmd.args(["exec", &name, "sh", "-c", &remote_kill_script(pid)]);
        run_helper(cmd, "docker", KILL_TIMEOUT).map(drop)
    }

    fn end_session(&self, session: &SessionKey) {
        let name = self
            .containers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(session);
        if let Some(name) = name {
            self.remove(&name);
        }
    }

    fn shutdown(&self) {
        let names: Vec<String> = self
            .containers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
            .map(|(_, n)| n)
            .collect();
        for name in names {
            self.remove(&name);
        }
    }
}
