//! The backend contract: how a command becomes a host process. Every backend is one
//! file implementing [`TerminalBackend`] (and registered in `backends.rs`, which says
//! what else a backend file holds); the process handling (process groups, timeouts,
//! output, background processes) is shared and lives in `exec.rs` and `process.rs`. A
//! backend that cannot run here yet (singularity/apptainer, modal, daytona) would be
//! one more file building its CLI's command line.

use hermetic_approval::SessionKey;
use std::process::Command;

/// A backend failed to prepare or run a command.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    /// The backend's program could not be started.
    #[error("{backend}: cannot start {program}: {reason}")]
    Spawn {
        /// Backend name.
        backend: &'static str,
        /// Program.
        program: String,
        /// OS error.
        reason: String,
    },
    /// Setting up the session (starting a container, …) failed.
    #[error("{backend}: {reason}")]
    Setup {
        /// Backend name.
        backend: &'static str,
        /// What failed.
        reason: String,
    },
    /// The backend's configuration cannot work.
    #[error("terminal backend {backend} is misconfigured: {reason}")]
    Config {
        /// Backend name.
        backend: &'static str,
        /// What to fix.
        reason: String,
    },
}

/// What a backend needs to build one command's process.
#[derive(Debug, Clone)]
pub struct Job {
    /// The complete shell script to run (already wrapped by `wrap_script`).
    pub script: String,
    /// Environment for the command (already scrubbed: exactly these variables).
    pub env: Vec<(String, String)>,
    /// Working directory, in the backend's file system.
    pub cwd: String,
    /// Allocate a pseudo-terminal on the far side (ssh `-tt`).
    pub pty: bool,
    /// The tenant's directory on this host, opened for this command without following
    /// symlinks (`local`, `bwrap`): the process starts in it, and the script's `cd`
    /// is relative to it when the working directory lies inside it.
    pub dir: Option<OpenedDir>,
}

/// A directory the host opened (without following symlinks below the operator's
/// directory), held open until the command's process has started in it.
#[derive(Debug, Clone)]
pub struct OpenedDir(std::sync::Arc<std::os::fd::OwnedFd>);

impl OpenedDir {
    /// Keeps `fd` (a directory) for a command.
    pub fn new(fd: std::os::fd::OwnedFd) -> Self {
        Self(std::sync::Arc::new(fd))
    }

    /// A path naming the opened directory itself in this process and, until exec, in
    /// a child forked from it (`Command::current_dir` changes into it before exec).
    pub fn proc_path(&self) -> std::path::PathBuf {
        use std::os::fd::AsRawFd;
        std::path::PathBuf::from(format!("/proc/self/fd/{}", self.0.as_raw_fd()))
    }

    /// The directory's descriptor (to open files beneath it).
    pub fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.0.as_fd()
    }
}

/// A file as a command would find it, read for the approval gate (a script the
/// command runs: [`TerminalBackend::read_file`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileRead {
    /// There is no such file.
    Missing,
    /// It is not a regular file the command could read (a directory, a FIFO, a
    /// device, no permission), or reading it failed: why.
    Unreadable(String),
    /// Its first bytes, at most one more than asked for (more means it is longer),
    /// and whether its mode lets it be executed.
    Read {
        /// The bytes.
        bytes: Vec<u8>,
        /// An execute bit is set.
        executable: bool,
    },
}

/// How a backend honours `pty: true`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PtyMode {
    /// It cannot: the command runs without a pseudo-terminal (and the result says so).
    None,
    /// The host runs the backend's process on a pseudo-terminal (local).
    Host,
    /// The backend allocates one on the far side itself (ssh `-tt`).
    Backend,
}

/// Runs commands somewhere. Implementations are cheap to call and thread-safe.
///
/// # Contract
/// The host has already put the command through the approval gate: a backend never
/// decides whether a command may run, and never sees one the gate refused.
pub trait TerminalBackend: Send + Sync {
    /// `local`, `bwrap`, `docker`, `ssh`.
    fn name(&self) -> &'static str;

    /// The default working directory when neither the agent nor the session set one.
    fn default_cwd(&self) -> String;

    /// Whether commands run in another process tree (container, remote host), so a
    /// timeout must also kill there (by the command's marker).
    fn is_remote(&self) -> bool;

    /// Whether commands run under bash, the shell the approval gate parses them as.
    /// Backends that can only count on a POSIX `sh` (containers, remote hosts) say no,
    /// and commands with bash-only quoting are refused there (see
    /// `bash_only_quoting`).
    fn runs_bash(&self) -> bool {
        true
    }

    /// Whether the far side prints `MARKER started` once a kill by the command's
    /// marker can find it (the launcher does, see `pid_namespace_launcher`). A kill
    /// of a command that has not said so yet waits for the line (or the local
    /// process's end): before it, the far side may not be running anything a kill
    /// could find, and the command would start after the kill and run on.
    fn announces_start(&self) -> bool {
        false
    }

    /// Who provides the pseudo-terminal when the agent asks for one.
    fn pty_mode(&self) -> PtyMode {
        PtyMode::None
    }

    /// Whether commands see this host's file system as it is, every path included
    /// (`local`): a file the gate must read is then read here, directly.
    fn host_view(&self) -> bool {
        false
    }

    /// Reads `path` (absolute) as a command of `session` would find it, at most
    /// `cap + 1` bytes, for the approval gate (a script file the command runs). `job`
    /// holds what a command of the session gets (environment, directory); its script
    /// is not used. The default runs a small reader (`head -c`) through
    /// [`command`](Self::command), so the file is read in the backend's own view of
    /// the file system: what a bwrap sandbox hides reads as empty, a container's or
    /// remote host's files are theirs.
    ///
    /// # Errors
    /// [`BackendError`] when the reader cannot be run.
    fn read_file(
        &self,
        session: &SessionKey,
        job: &Job,
        path: &str,
        cap: usize,
    ) -> Result<FileRead, BackendError> {
        read_through(self, session, job, path, cap)
    }

    /// The host process that runs `job` for `session` (preparing the session first,
    /// e.g. starting its container). The caller sets stdio and the process group.
    ///
    /// # Errors
    /// [`BackendError`] when the session cannot be prepared.
    fn command(&self, session: &SessionKey, job: &Job) -> Result<Command, BackendError>;

    /// Kills, on the far side, everything of the command whose script carries `marker`
    /// (remote backends only; see `remote_kill_script` in backend.rs).
    ///
    /// # Errors
    /// [`BackendError`] when the kill command could not be run.
    fn kill_remote(&self, session: &SessionKey, marker: &str) -> Result<(), BackendError> {
        let _ = (session, marker);
        Ok(())
    }

    /// The session ended: release what it held (its container, …).
    fn end_session(&self, session: &SessionKey) {
        let _ = session;
    }

    /// The host is shutting down: release everything.
    fn shutdown(&self) {}
}

/// How long reading a file through a backend may take (a container or ssh round
/// trip): past it the file counts as unreadable.
const READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// [`TerminalBackend::read_file`]'s default: a POSIX `sh` reader run as a command of
/// the session. Exit 3: missing; 4: not a regular readable file; else a first byte
/// saying whether it is executable (`x` or `-`), then its bytes.
pub(crate) fn read_through<B: TerminalBackend + ?Sized>(
    backend: &B,
    session: &SessionKey,
    job: &Job,
    path: &str,
    cap: usize,
) -> Result<FileRead, BackendError> {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    let reader = format!(
        "p={}; [ -e \"$p\" ] || exit 3; [ -f \"$p\" ] && [ -r \"$p\" ] || exit 4; \
         if [ -x \"$p\" ]; then printf x; else printf -; fi; exec head -c {} -- \"$p\"\n",
        shell_quote(path),
        cap + 1
    );
    let job = Job {
        script: reader,
        pty: false,
        ..job.clone()
    };
    let mut cmd = backend.command(session, &job)?;
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .process_group(0);
    let program = cmd.get_program().to_string_lossy().into_owned();
    let spawn_error = |e: std::io::Error| BackendError::Spawn {
        backend: backend.name(),
        program: program.clone(),
        reason: e.to_string(),
    };
    let mut child = cmd.spawn().map_err(spawn_error)?;
    let Some(stdout) = child.stdout.take() else {
        return Ok(FileRead::Unreadable("the reader has no output".into()));
    };
    let limit = u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(2);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let read = stdout.take(limit).read_to_end(&mut bytes);
        let _ = tx.send(read.map(|_| bytes));
    });
    let bytes = match rx.recv_timeout(READ_TIMEOUT) {
        Ok(Ok(bytes)) => bytes,
        outcome => {
            let pgid = i32::try_from(child.id())
                .ok()
                .and_then(rustix::process::Pid::from_raw);
            if let Some(pgid) = pgid {
                let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
            }
            let _ = child.wait();
            return Ok(FileRead::Unreadable(match outcome {
                Ok(Err(e)) => format!("reading it failed: {e}"),
                _ => format!("reading it took more than {}s", READ_TIMEOUT.as_secs()),
            }));
        }
    };
    let status = child.wait().map_err(spawn_error)?;
    Ok(match status.code() {
        Some(0) => match bytes.split_first() {
            Some((b'x', rest)) => FileRead::Read {
                bytes: rest.to_vec(),
                executable: true,
            },
            Some((b'-', rest)) => FileRead::Read {
                bytes: rest.to_vec(),
                executable: false,
            },
            _ => FileRead::Unreadable("the reader's output is not a file's".into()),
        },
        Some(3) => FileRead::Missing,
        Some(4) => FileRead::Unreadable("it is not a regular file the command can read".into()),
        other => FileRead::Unreadable(format!(
            "the backend's reader failed ({})",
            other.map_or_else(|| "killed".to_owned(), |c| format!("exit {c}"))
        )),
    })
}

/// Quotes `s` for a POSIX shell.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// A per-command random marker: lines starting with it carry the final working
/// directory back through the merged output and are removed before the agent sees
/// it; on remote backends it also names the command's processes for a kill.
pub fn new_marker() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!("__HERMETIC_{:016x}__", h.finish())
}

/// The script a backend runs: changes to `cwd`, runs `command`, and on exit — however
/// the command exits — reports the working directory so a `cd` holds for the next
/// call.
///
/// For `remote` backends (containers, ssh) the script's first line names the marker:
/// the script travels in the command line of the processes that run it (see
/// [`pid_namespace_launcher`]), and that is how the host's kill finds them
/// ([`remote_kill_script`]) — never from a pid the command's output reports, which
/// the command could forge.
pub fn wrap_script(
    command: &str,
    cwd: &str,
    marker: &str,
    remote: bool,
    track_cwd: bool,
) -> String {
    let mut s = String::new();
    if remote {
        s.push_str(&format!(": {marker}\n"));
    }
    if track_cwd {
        // Without a pid namespace of its own (`pid_namespace = false`) a foreground
        // script on the far side ends what it left running (`sleep 1000 &`) itself, on
        // its way out: the best it can do, and what a double fork or `trap '' EXIT`
        // defeats. In its own pid namespace the script is pid 1, and the kernel kills
        // everything else in the namespace when it exits.
        let reap = if remote {
            s.push_str(
                "__hermetic_k() { kill -STOP \"$1\" 2>/dev/null; for c in $(cat /proc/\"$1\"/task/*/children 2>/dev/null); do __hermetic_k \"$c\"; done; kill -KILL \"$1\" 2>/dev/null; }\n",
            );
            " [ \"$$\" = 1 ] || for c in $(cat /proc/$$/task/*/children 2>/dev/null); do __hermetic_k \"$c\"; done;"
        } else {
            ""
        };
        s.push_str(&format!(
            "trap '__hermetic_ec=$?; printf \"%s cwd %s\\n\" {marker} \"$PWD\";{reap} exit $__hermetic_ec' EXIT\n"
        ));
    }
    s.push_str(&format!("cd -- {} || exit 126\n", shell_quote(cwd)));
    s.push_str(command);
    s.push('\n');
    s
}

/// The `sh -c` program a remote backend runs, with the wrapped script as `$1` and its
/// marker as `$2`: it runs the script as pid 1 of a new pid namespace, so nothing the
/// command starts can leave it — not a double fork (`(sleep 1000 &)`: orphans are
/// reparented to the script), not `setsid`, not `trap '' EXIT` — and when the script
/// exits or is killed, the kernel kills everything left in the namespace.
///
/// Its first act is to print `MARKER started` (a marker line: the host takes it out of
/// the output): from then on a kill by marker finds it, because this shell carries the
/// script in its command line and never `exec`s (a process in the middle of `execve`
/// shows an empty command line for a moment, and a kill scanning then would miss it);
/// what it runs is its child, reached through `/proc/PID/task/*/children`. A kill
/// waits for that line ([`TerminalBackend::announces_start`]), so a `process kill`
/// right after `background: true` cannot arrive before the command is there to find.
///
/// `unshare` is tried in the forms the far side may allow, most faithful first: as
/// root (its own `/proc`), in a user namespace mapping the user to itself (util-linux),
/// mapping it to root (busybox: `-r`), or unmapped (a capability-less root cannot map
/// uid 0, so the command sees itself as 65534 while its files stay the user's).
/// Without `contain` (the operator turned pid namespaces off) the script just runs.
/// When none works the command is refused rather than run uncontained.
pub fn pid_namespace_launcher(contain: bool) -> &'static str {
    if contain {
        "[ -z \"$2\" ] || printf '%s started\\n' \"$2\"; \
         for __hermetic_o in '-pf --mount-proc' '--map-current-user -pf --mount-proc' '-rpf' '-Upf'; do \
           if unshare $__hermetic_o true 2>/dev/null; then unshare $__hermetic_o sh -c \"$1\"; exit $?; fi; \
         done; \
         echo 'hermetic: cannot run the command in its own pid namespace here (no unshare, or user namespaces are off); the operator can set pid_namespace = false' >&2; \
         exit 126"
    } else {
        "[ -z \"$2\" ] || printf '%s started\\n' \"$2\"; sh -c \"$1\"; exit $?"
    }
}

/// The marker a remote script names on its first line (see [`wrap_script`]), for the
/// launcher's `started` line; `None` for a script without one.
pub fn script_marker(script: &str) -> Option<&str> {
    let line = script.lines().next()?.strip_prefix(": ")?;
    (line.starts_with("__HERMETIC_")
        && line.ends_with("__")
        && line.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
    .then_some(line)
}

/// Whether `command` uses quoting that bash and a POSIX `sh` read differently: ANSI-C
/// `$'…'` and locale `$"…"` strings. Under dash, `echo $'x\'; rm -rf ~; echo \'` runs
/// the `rm` that bash (and so the approval gate) sees as quoted text.
pub fn bash_only_quoting(command: &str) -> bool {
    command.contains("$'") || command.contains("$\"")
}

/// The remote kill for the command whose wrapped script carries `marker`: every
/// process whose command line holds the marker (the `unshare` that runs the script,
/// the script itself as its namespace's pid 1) is stopped so it cannot fork more, then
/// its children (recursively, through /proc), then it; killing the namespace's pid 1
/// kills the rest of the namespace. Works with any POSIX sh and busybox.
///
/// What this can hit is bounded by where it runs — inside the session's container, or
/// as the ssh user — and by the marker, which the host made and the command's output
/// cannot change: a process the command dressed up with the marker is its own. The
/// marker is split by quotes here so the kill's own command line does not hold it.
pub fn remote_kill_script(marker: &str) -> String {
    let split = marker.len() / 2;
    let (a, b) = marker.split_at(split);
    format!(
        "m={a}''{b}; k() {{ kill -STOP \"$1\" 2>/dev/null; for c in $(cat /proc/\"$1\"/task/*/children 2>/dev/null); do k \"$c\"; done; kill -KILL \"$1\" 2>/dev/null; }}; \
         for d in /proc/[0-9]*; do p=${{d#/proc/}}; [ \"$p\" = \"$$\" ] && continue; \
         case \"$(tr '\\000' ' ' < \"$d/cmdline\" 2>/dev/null)\" in *\"$m\"*) k \"$p\";; esac; done; true"
    )
}

/// A working directory from an agent must be a plain path: no shell metacharacters,
/// no control characters.
pub fn valid_workdir(dir: &str) -> bool {
    !dir.is_empty()
        && dir.len() <= 4096
        && !dir.chars().any(|c| {
            c.is_control()
                || matches!(
                    c,
                    '$' | '`'
                        | ';'
                        | '&'
                        | '|'
                        | '<'
                        | '>'
                        | '('
                        | ')'
                        | '{'
                        | '}'
                        | '*'
                        | '?'
                        | '['
                        | ']'
                        | '!'
                        | '"'
                        | '\''
                        | '\\'
                        | '#'
                        | '~'
                )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bash_only_quoting_is_spotted() {
        assert!(bash_only_quoting("echo $'x\\'; rm -rf ~; echo \\'"));
        assert!(bash_only_quoting("echo $\"hi\""));
        assert!(!bash_only_quoting("echo '$HOME' \"$HOME\" $x"));
    }

    #[test]
    fn workdirs_with_shell_metacharacters_are_refused() {
        assert!(valid_workdir("/tmp/build dir/x-1.2"));
        for bad in [
            "",
            "/tmp;rm -rf /",
            "$(id)",
            "/a`b`",
            "/a\nb",
            "~root",
            "/a|b",
        ] {
            assert!(!valid_workdir(bad), "{bad:?}");
        }
    }

    #[test]
    fn the_kill_script_does_not_carry_the_marker_it_looks_for() {
        // Its own command line must not match, or it would kill itself (or, over ssh,
        // the login shell running it) before the command.
        let marker = new_marker();
        let script = remote_kill_script(&marker);
        assert!(!script.contains(&marker), "{script}");
        let script_of_job = wrap_script("true", "/", &marker, true, false);
        assert!(script_of_job.starts_with(&format!(": {marker}\n")));
    }

    #[test]
    fn the_launcher_says_it_started_before_the_script_runs() {
        let marker = new_marker();
        let script = wrap_script("echo ran; exit 3", "/", &marker, true, false);
        assert_eq!(script_marker(&script), Some(marker.as_str()));
        assert_eq!(script_marker("echo no marker"), None);
        assert_eq!(script_marker(": $(reboot)\necho"), None);
        for contain in [false, true] {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(pid_namespace_launcher(contain))
                .args(["hermetic", &script, &marker])
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert_eq!(
                text,
                format!("{marker} started\nran\n"),
                "contain={contain}"
            );
            assert_eq!(out.status.code(), Some(3), "contain={contain}: {out:?}");
        }
    }

    #[test]
    fn quoting_survives_single_quotes() {
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        // What a POSIX sh reads back is the string itself, whatever it holds.
        for s in [
            "it's",
            "'",
            "''",
            "a b\tc",
            "$(echo injected) `echo injected` $HOME ; echo injected",
            "back\\slash \"dq\" \n newline\nreal",
            "",
        ] {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {}", shell_quote(s)))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap(), s, "{s:?}");
        }
    }
}
