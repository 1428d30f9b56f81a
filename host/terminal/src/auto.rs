//! The backend a terminal gets when its policy names none (`backend = "auto"`):
//! `bwrap` when bubblewrap runs a trivial command here the way the backend runs every
//! command (the `[terminal.bwrap]` program and view, through the seccomp launcher),
//! else `local`, with a warning naming what its commands reach. Checked once per
//! process for each bwrap configuration.

use crate::backends::bwrap::{BwrapConfig, probe_command};
use crate::config::{AUTO_BACKEND, TerminalConfig};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, LazyLock, OnceLock};
use std::time::{Duration, Instant};

/// Longest the probe may take: a `bwrap … true` that has not exited by then (a hung
/// namespace set-up) counts as not working.
const PROBE_LIMIT: Duration = Duration::from_secs(10);

/// What `local` commands reach, said when `auto` falls back to it.
pub const LOCAL_REACH: &str = "terminal commands run WITHOUT a sandbox (backend local): as this user, they can read and change the whole home directory (~/.ssh, cloud credentials, other projects), every file this user can, the network and local sockets; only the approval gate stands in the way. Install bubblewrap (apt-get install bubblewrap) or set [terminal] backend";

/// The `[terminal.bwrap]` options of `config` (the defaults when it has none, or
/// when they do not read: the backend's own reading then says what is wrong).
fn bwrap_options(config: &TerminalConfig) -> BwrapConfig {
    config
        .options
        .get("bwrap")
        .and_then(|table| table.clone().try_into().ok())
        .unwrap_or_default()
}

/// Whether bubblewrap with `options` works here, and if not why, decided once per
/// process for each set of options (a tenant's table may name another program).
fn bwrap_works(options: &BwrapConfig) -> Result<(), String> {
    type Probes = Mutex<HashMap<String, Arc<OnceLock<Result<(), String>>>>>;
    static PROBES: LazyLock<Probes> = LazyLock::new(Probes::default);
    let key = format!("{options:?}");
    let once = Arc::clone(PROBES.lock().entry(key).or_default());
    once.get_or_init(|| probe(options)).clone()
}

/// Runs `true` in bubblewrap as the backend runs a command (see [`probe_command`]),
/// from an empty directory of its own.
fn probe(options: &BwrapConfig) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| format!("no directory to probe bwrap in ({e})"))?;
    let mut child = probe_command(options, dir.path())
        .map_err(|e| e.to_string())?
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("bwrap cannot be started ({e})"))?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => {
                // What bwrap said (its last line, bounded), for the warning.
                let mut said = Vec::new();
                if let Some(stderr) = child.stderr.take() {
                    let _ = std::io::Read::read_to_end(
                        &mut std::io::Read::take(stderr, 4096),
                        &mut said,
                    );
                }
                let said = String::from_utf8_lossy(&said);
                let said = said
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("");
                return Err(format!(
                    "`bwrap … true` failed ({status}{}{said})",
                    if said.is_empty() { "" } else { ": " }
                ));
            }
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
    match bwrap_works(&bwrap_options(config)) {
        Ok(()) => "bwrap".clone_into(&mut config.backend),
        Err(why) => {
            static WARNED: OnceLock<()> = OnceLock::new();
            WARNED.get_or_init(|| tracing::warn!("{why}: {LOCAL_REACH}"));
            "local".clone_into(&mut config.backend);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn auto_with(program: &std::path::Path) -> TerminalConfig {
        let mut table = toml::Table::new();
        table.insert(
            "program".into(),
            toml::Value::String(program.display().to_string()),
        );
        let mut config = TerminalConfig {
            backend: AUTO_BACKEND.to_owned(),
            ..TerminalConfig::default()
        };
        config
            .options
            .insert("bwrap".into(), toml::Value::Table(table));
        config
    }

    /// Review r3, finding 12: the probe ran `bwrap` from PATH without the seccomp
    /// program, while the backend runs `[terminal.bwrap] program` through the
    /// launcher: a program that cannot run commands (missing, or refusing the seccomp
    /// filter) was chosen, and every command then failed. Now such a program gets
    /// `local`; the real bubblewrap (installed by .ci/run) still gets `bwrap`.
    #[test]
    fn auto_probes_the_program_and_the_filter_the_backend_runs() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no-such-bwrap");
        let mut config = auto_with(&missing);
        resolve(&mut config);
        assert_eq!(config.backend, "local");

        // A bubblewrap that runs commands, but not with a seccomp program.
        let no_seccomp = dir.path().join("bwrap-without-seccomp");
        std::fs::write(
            &no_seccomp,
            "#!/bin/sh\ncase \" $* \" in *' --seccomp '*) exit 1;; esac\nexec bwrap \"$@\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&no_seccomp, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut config = auto_with(&no_seccomp);
        resolve(&mut config);
        assert_eq!(config.backend, "local");

        let real = std::path::PathBuf::from("/usr/bin/bwrap");
        assert!(
            real.exists(),
            "bubblewrap is not installed (.ci/run installs it)"
        );
        let mut config = auto_with(&real);
        resolve(&mut config);
        assert_eq!(config.backend, "bwrap");
    }
}
