//! The local backend: `bash -c` on the host, in its own process group, with exactly the
//! environment the host builds (nothing inherited).

use super::backend::{BackendError, Job, TerminalBackend};
use hermetic_approval::SessionKey;
use std::process::Command;

/// Runs commands with the host's bash.
#[derive(Debug, Clone)]
pub struct LocalBackend {
    cwd: String,
}

impl LocalBackend {
    /// A local backend whose commands start in `cwd` unless told otherwise.
    pub fn new(cwd: String) -> Self {
        Self { cwd }
    }
}

impl TerminalBackend for LocalBackend {
    fn name(&self) -> &'static str {
        "local"
    }

    fn default_cwd(&self) -> String {
        self.cwd.clone()
    }

    fn is_remote(&self) -> bool {
        false
    }

    fn pty_mode(&self) -> super::backend::PtyMode {
        super::backend::PtyMode::Host
    }

    fn command(&self, _session: &SessionKey, job: &Job) -> Result<Command, BackendError> {
        let mut cmd = Command::new("bash");
        cmd.arg("-c")
            .arg(&job.script)
            .env_clear()
            .envs(job.env.iter().map(|(k, v)| (k, v)));
        // In the opened tenant directory, not the path that named it (which another
        // tenant or a mount could have swapped for a symlink since).
        match &job.dir {
            Some(dir) => cmd.current_dir(dir.proc_path()),
            None => cmd.current_dir("/"),
        };
        Ok(cmd)
    }
}
