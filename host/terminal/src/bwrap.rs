//! The bubblewrap backend: the local backend inside `bwrap` — read-only root, a
//! writable workspace, private /tmp, /dev and /proc, every namespace unshared (the
//! network too unless the operator shares it), killed with its parent.

use super::backend::{BackendError, Job, TerminalBackend};
use super::config::BwrapConfig;
use hermetic_approval::SessionKey;
use std::process::Command;

/// Runs commands with bash inside bubblewrap.
#[derive(Debug, Clone)]
pub struct BwrapBackend {
    program: String,
    workspace: String,
    cwd: String,
    network: bool,
}

impl BwrapBackend {
    /// A bubblewrap backend; `cwd` is also the writable workspace unless the config
    /// names another.
    pub fn new(config: &BwrapConfig, cwd: String) -> Self {
        Self {
            program: config
                .program
                .as_ref()
                .map_or_else(|| "bwrap".to_owned(), |p| p.display().to_string()),
            workspace: config
                .workspace
                .as_ref()
                .map_or_else(|| cwd.clone(), |p| p.display().to_string()),
            cwd,
            network: config.network,
        }
    }
}

impl TerminalBackend for BwrapBackend {
    fn name(&self) -> &'static str {
        "bwrap"
    }

    fn default_cwd(&self) -> String {
        self.cwd.clone()
    }

    fn is_remote(&self) -> bool {
        // Killing bwrap kills the sandbox (--die-with-parent and its pid namespace).
        false
    }

    fn command(&self, _session: &SessionKey, job: &Job) -> Result<Command, BackendError> {
        let mut cmd = Command::new(&self.program);
        cmd.args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"])
            .args(["--tmpfs", "/tmp"])
            // After /tmp, so a workspace under /tmp is visible (and writable).
            .args(["--bind", &self.workspace, &self.workspace])
            .arg("--unshare-all");
        if self.network {
            cmd.arg("--share-net");
        }
        cmd.args(["--die-with-parent", "--new-session", "--", "bash", "-c"])
            .arg(&job.script)
            .env_clear()
            .envs(job.env.iter().map(|(k, v)| (k, v)))
            .current_dir("/");
        Ok(cmd)
    }
}
