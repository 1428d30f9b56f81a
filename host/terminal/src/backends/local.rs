//! The local backend: `bash -c` on the host, in its own process group, with exactly the
//! environment the host builds (nothing inherited).

use crate::backend::{BackendError, Job, TerminalBackend};
use crate::backends::{BackendPlan, BackendSpec, BuildContext, Home};
use hermetic_approval::SessionKey;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

/// `backend = "local"`.
pub(crate) const SPEC: BackendSpec = BackendSpec {
    name: "local",
    read: |options| Ok(Box::new(options.parse::<LocalConfig>()?)),
};

/// `[terminal.local]`: the local backend has no options (the table may be absent or
/// empty; any key in it is a mistake).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalConfig {}

impl BackendPlan for LocalConfig {
    fn home(&self) -> Home {
        Home::Host
    }

    fn reach(&self) -> Vec<(&'static str, PathBuf)> {
        Vec::new()
    }

    fn build(
        &self,
        cx: &BuildContext<'_>,
    ) -> Result<Arc<dyn TerminalBackend>, crate::TerminalError> {
        Ok(Arc::new(LocalBackend::new(cx.start.clone())))
    }
}

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

    fn pty_mode(&self) -> crate::backend::PtyMode {
        crate::backend::PtyMode::Host
    }

    /// Commands run on this host as the host's user: they see its files as they are.
    fn host_view(&self) -> bool {
        true
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
