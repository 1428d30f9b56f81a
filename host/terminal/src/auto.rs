//! The backend a terminal gets when its policy names none (`backend = "auto"`):
//! `bwrap` when bubblewrap is installed and runs a trivial command here, else `local`,
//! with a warning naming what its commands reach. Checked once per process.

use crate::config::{AUTO_BACKEND, TerminalConfig};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Longest the probe may take: a `bwrap … true` that has not exited by then (a hung
/// namespace set-up) counts as not working.
const PROBE_LIMIT: Duration = Duration::from_secs(10);

/// What `local` commands reach, said when `auto` falls back to it.
pub const LOCAL_REACH: &str = "terminal commands run WITHOUT a sandbox (backend local): as this user, they can read and change the whole home directory (~/.ssh, cloud credentials, other projects), every file this user can, the network and local sockets; only the approval gate stands in the way. Install bubblewrap (apt-get install bubblewrap) or set [terminal] backend";

/// Whether bubblewrap works here, and if not why, decided once per process.
fn bwrap_works() -> &'static Result<(), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE.get_or_init(probe)
}

/// Runs bubblewrap with the namespaces and mounts the `bwrap` backend uses, on `true`.
fn probe() -> Result<(), String> {
    let mut child = Command::new("bwrap")
        .args([
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--tmpfs",
            "/tmp",
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "true",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("bwrap cannot be started ({e})"))?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("`bwrap … true` failed ({status})")),
            Ok(None) if start.elapsed() < PROBE_LIMIT => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("`bwrap … true` did not finish".into());
            }
            Err(e) => return Err(format!("waiting for bwrap: {e}")),
        }
    }
}

/// Resolves `config.backend = "auto"` to `bwrap` or `local` (warning once about what
/// `local` reaches); any other backend is left as the operator wrote it.
pub(crate) fn resolve(config: &mut TerminalConfig) {
    if config.backend != AUTO_BACKEND {
        return;
    }
    match bwrap_works() {
        Ok(()) => "bwrap".clone_into(&mut config.backend),
        Err(why) => {
            static WARNED: OnceLock<()> = OnceLock::new();
            WARNED.get_or_init(|| tracing::warn!("{why}: {LOCAL_REACH}"));
            "local".clone_into(&mut config.backend);
        }
    }
}
