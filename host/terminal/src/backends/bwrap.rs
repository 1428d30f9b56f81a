//! The bubblewrap backend: bash inside `bwrap`, seeing a minimal host. Read-only:
//! `/usr`, the `/bin` `/sbin` `/lib*` links or directories, `/etc` (minus password
//! hashes, sudo rules, SSH and TLS private keys, what the operator hides and the host's
//! own state files) and what the operator adds. Empty and private: `/home`, `/root`,
//! `/run`, `/var`, `/tmp`. Writable: the tenant's own directory only — bound from the
//! directory the host opened without following symlinks (the bwrap process starts in
//! it and binds `/proc/self/cwd`), so a tenant directory swapped for a symlink cannot
//! redirect the writable bind. Every namespace is unshared (the network too unless
//! the operator shares it), every capability dropped, the sandbox dies with its
//! parent and has no controlling terminal (`--new-session`: no TIOCSTI into the host).
//!
//! So another tenant's directory, the host user's `~/.ssh` and cloud credentials, the
//! policy and secrets files, and host sockets (`/run/...`, `/var/run/docker.sock`,
//! `/tmp/.X11-unix`; abstract sockets live in the unshared network namespace) are not
//! there to read or connect to.
//!
//! The files a command makes in the workspace are the host user's (root's, where
//! hermetic runs as root), and root without capabilities still owns them and may
//! chmod them: a setuid-root copy of a shell left there is a root shell for anyone on
//! the host who can reach it (`nosuid` on the bind would protect only the sandbox's
//! view, not the host's). So a seccomp filter refuses (EPERM) every way to set the
//! setuid or setgid bit: the rules docker's profile and gVisor's filter use
//! ([`setuid_refusals`]: chmod, fchmod, fchmodat, creat, mknod, mknodat, open and
//! openat with O_CREAT or O_TMPFILE), and what reaches the host's kernel besides:
//! `fchmodat2`, device nodes, and `openat2` and io_uring (whose modes no filter can
//! read) refused outright. Its first check is the architecture: a system call of
//! another ABI (a 32-bit i386 program) ends the process.

use crate::backend::{BackendError, Job, TerminalBackend};
use crate::backends::docker::setuid_refusals;
use crate::backends::{BackendPlan, BackendSpec, BuildContext, Home, Options};
use crate::seccomp::{Refusal, SeccompError, compile, printf_format};
use hermetic_approval::SessionKey;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

/// `backend = "bwrap"`.
pub(crate) const SPEC: BackendSpec = BackendSpec {
    name: "bwrap",
    read: |options| read(options).map(|c| Box::new(c) as Box<dyn BackendPlan>),
};

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

fn read(options: &Options<'_>) -> Result<BwrapConfig, String> {
    let mut config: BwrapConfig = options.parse()?;
    options.resolve(&mut config.workspace);
    for (key, paths) in [("read_only", &config.read_only), ("hide", &config.hide)] {
        if let Some(p) = paths
            .iter()
            .find(|p| !p.is_absolute() || p.parent().is_none())
        {
            return Err(format!(
                "{key}: {} is not an absolute path below /",
                p.display()
            ));
        }
    }
    Ok(config)
}

impl BackendPlan for BwrapConfig {
    fn home(&self) -> Home {
        match &self.workspace {
            Some(root) => Home::HostBelow(root.clone()),
            None => Home::Host,
        }
    }

    fn reach(&self) -> Vec<(&'static str, PathBuf)> {
        self.workspace
            .iter()
            .map(|dir| ("bwrap workspace", dir.clone()))
            .collect()
    }

    fn build(
        &self,
        cx: &BuildContext<'_>,
    ) -> Result<Arc<dyn TerminalBackend>, crate::TerminalError> {
        let Some(dir) = &cx.dir else {
            return Err(BackendError::Config {
                backend: "bwrap",
                reason: "no writable directory: set [terminal.bwrap] workspace or cwd".into(),
            }
            .into());
        };
        Ok(Arc::new(BwrapBackend::new(
            self,
            dir.clone(),
            cx.start.clone(),
            cx.protected,
        )?))
    }
}

/// Directories bwrap shows read-only when the host has them (as the host's symlinks
/// where the host's are symlinks: merged-/usr systems).
const SYSTEM_DIRS: &[&str] = &["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];
/// Host directories replaced by an empty private tmpfs.
const PRIVATE_DIRS: &[&str] = &["/home", "/root", "/run", "/var", "/tmp"];
/// The descriptor bubblewrap reads the seccomp program from (`--seccomp`).
const SECCOMP_FD: &str = "3";
/// Starts bubblewrap (the rest of the arguments) with the seccomp program, given as a
/// `printf` format (`$1`), on [`SECCOMP_FD`] (3). A pipe the launcher fills, not a
/// descriptor of ours nor a file: std's `Command` passes a child no descriptor but
/// stdio without `unsafe` code, portable-pty closes every other one, and a file would
/// be one more thing to keep private and alive. bash `-p`: no `BASH_ENV` file and no
/// function from the environment runs here, outside the sandbox. `exec`: bwrap keeps
/// this process's pid and group, which the host kills.
const LAUNCHER: &str = "exec 3< <(printf \"$1\") || exit 126; shift; exec \"$@\"";

/// Runs commands with bash inside bubblewrap.
#[derive(Debug, Clone)]
pub struct BwrapBackend {
    program: String,
    /// The tenant's writable directory, as a path (where it is bound inside).
    workspace: PathBuf,
    cwd: String,
    /// The fixed part of every command line, computed once.
    view: Vec<String>,
    /// The seccomp program, as [`LAUNCHER`]'s `printf` format.
    seccomp: Arc<str>,
    /// The empty file bound over hidden files (kept while the backend lives). Not
    /// `/dev/null`: a device node outside `/dev` is unusable in the sandbox (nodev),
    /// and reading it would fail instead of reading nothing.
    _empty: Option<std::sync::Arc<tempfile::NamedTempFile>>,
}

impl BwrapBackend {
    /// A bubblewrap backend whose writable directory is `workspace` (the tenant's own;
    /// each command's [`Job::dir`] is its opened copy) and whose commands start in `cwd`
    /// unless told otherwise. `protected`: the host's own files, hidden where the view
    /// would show them.
    ///
    /// # Errors
    /// [`BackendError::Setup`] when the seccomp program cannot be built for this
    /// machine (an architecture seccompiler does not target).
    pub fn new(
        config: &BwrapConfig,
        workspace: PathBuf,
        cwd: String,
        protected: &[PathBuf],
    ) -> Result<Self, BackendError> {
        let seccomp = seccomp_format()?;
        let empty = tempfile::NamedTempFile::new()
            .inspect_err(|e| {
                tracing::warn!(error = %e, "no empty file to hide files with; bwrap hides them by an empty directory's tmpfs only");
            })
            .ok();
        Ok(Self {
            program: config
                .program
                .as_ref()
                .map_or_else(|| "bwrap".to_owned(), |p| p.display().to_string()),
            view: view(
                config,
                &workspace,
                protected,
                empty.as_ref().map(tempfile::NamedTempFile::path),
            ),
            workspace,
            cwd,
            seccomp,
            _empty: empty.map(std::sync::Arc::new),
        })
    }
}

/// The seccomp program every command loads, as a `printf` format: compiled once per
/// process (the rules are the same for every backend).
fn seccomp_format() -> Result<Arc<str>, BackendError> {
    static FORMAT: OnceLock<Result<Arc<str>, String>> = OnceLock::new();
    FORMAT
        .get_or_init(|| {
            refusals()
                .and_then(|r| compile(&r))
                .map(|program| printf_format(&program).into())
                .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(|reason| BackendError::Setup {
            backend: "bwrap",
            reason: format!("no seccomp program to refuse setuid files with: {reason}"),
        })
}

/// What the filter refuses: the setuid and setgid bits as docker's profile and
/// gVisor's filter refuse them, and what only the host's kernel offers besides.
fn refusals() -> Result<Vec<Refusal>, SeccompError> {
    let mut refusals = Refusal::from_oci(&setuid_refusals())?;
    // fchmodat2 (Linux 6.6) has its mode where fchmodat has it.
    let fchmodat2: Vec<Refusal> = refusals
        .iter()
        .filter(|r| r.syscall == "fchmodat")
        .map(|r| Refusal {
            syscall: "fchmodat2".to_owned(),
            ..r.clone()
        })
        .collect();
    refusals.extend(fchmodat2);
    // Device nodes (a disk readable by anyone on the host), whatever the capabilities:
    // --cap-drop ALL refuses them too.
    for (syscall, mode) in [("mknod", 1), ("mknodat", 2)] {
        for kind in [libc::S_IFCHR, libc::S_IFBLK] {
            refusals.push(Refusal::new(syscall, &[(mode, libc::S_IFMT, kind)]));
        }
    }
    // Modes no filter can read: openat2's is in a struct it is given a pointer to
    // (libc's open uses openat), and an io_uring OPENAT's is in a ring that is read
    // with no system call per operation.
    for syscall in [
        "openat2",
        "io_uring_setup",
        "io_uring_enter",
        "io_uring_register",
    ] {
        refusals.push(Refusal::new(syscall, &[]));
    }
    Ok(refusals)
}

/// The mounts and options of the minimal host view (everything but the workspace).
fn view(
    config: &BwrapConfig,
    workspace: &Path,
    protected: &[PathBuf],
    empty: Option<&Path>,
) -> Vec<String> {
    let mut args: Vec<String> = Vec::new();
    let mut push = |a: &[&str]| args.extend(a.iter().map(|s| (*s).to_owned()));
    push(&["--unshare-all"]);
    if config.network {
        push(&["--share-net"]);
    }
    push(&["--die-with-parent", "--new-session", "--cap-drop", "ALL"]);
    push(&["--seccomp", SECCOMP_FD]);
    push(&["--ro-bind", "/usr", "/usr"]);
    for dir in SYSTEM_DIRS {
        match std::fs::read_link(dir) {
            Ok(target) => push(&["--symlink", &target.to_string_lossy(), dir]),
            Err(_) if Path::new(dir).is_dir() => push(&["--ro-bind", dir, dir]),
            Err(_) => {}
        }
    }
    push(&["--ro-bind", "/etc", "/etc"]);
    for dir in PRIVATE_DIRS {
        push(&["--tmpfs", dir]);
    }
    // After the tmpfs mounts, which would cover a directory under /tmp or /home.
    let mut readable: Vec<PathBuf> = vec!["/usr".into(), "/etc".into()];
    for dir in &config.read_only {
        let d = dir.to_string_lossy();
        push(&["--ro-bind-try", &d, &d]);
        readable.push(dir.clone());
    }
    // Hidden after the binds they lie in: a later mount covers an earlier one.
    let hidden = DEFAULT_HIDDEN
        .iter()
        .map(PathBuf::from)
        .chain(config.hide.iter().cloned())
        .chain(protected.iter().cloned());
    for path in hidden {
        if !readable.iter().any(|r| path.starts_with(r)) {
            continue; // not in the view anyway
        }
        let p = path.to_string_lossy().into_owned();
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => push(&["--tmpfs", &p, "--remount-ro", &p]),
            Ok(_) => match empty {
                Some(empty) => push(&["--ro-bind", &empty.to_string_lossy(), &p]),
                // Unreadable rather than shown: reading fails (nodev), never leaks.
                None => push(&["--ro-bind", "/dev/null", &p]),
            },
            Err(_) => {}
        }
    }
    push(&["--dev", "/dev", "--proc", "/proc"]);
    // After the tmpfs mounts, so a workspace under /tmp or /home is visible (and
    // writable). The bwrap process starts in the opened directory: /proc/self/cwd is
    // that directory, not whatever its path names by now.
    let ws = workspace.to_string_lossy().into_owned();
    push(&["--bind", "/proc/self/cwd", &ws, "--chdir", &ws]);
    args
}

/// The command `backend = "auto"` probes bubblewrap with: as [`BwrapBackend`] runs a
/// command — `config`'s program, through [`LAUNCHER`] with the seccomp program on its
/// descriptor, the same view (`dir`, where the child must start, as the writable
/// directory) — on `true`. A machine where bwrap runs but its seccomp filter or a mount
/// of the view does not gets `local`, with the warning, instead of a `bwrap` backend
/// whose every command fails.
///
/// # Errors
/// [`BackendError::Setup`] when the seccomp program cannot be built here.
pub(crate) fn probe_command(config: &BwrapConfig, dir: &Path) -> Result<Command, BackendError> {
    let program = config
        .program
        .as_ref()
        .map_or_else(|| "bwrap".to_owned(), |p| p.display().to_string());
    let mut cmd = Command::new("bash");
    cmd.args(["-p", "-c", LAUNCHER, "hermetic-bwrap"])
        .arg(&*seccomp_format()?)
        .arg(program)
        .args(view(config, dir, &[], None))
        .args(["--", "bash", "-c"])
        .arg(format!("exec {SECCOMP_FD}<&-\ntrue"))
        .env_clear()
        .env("PATH", crate::COMMAND_PATH)
        .current_dir(dir);
    Ok(cmd)
}

impl TerminalBackend for BwrapBackend {
    fn name(&self) -> &'static str {
        "bwrap"
    }

    fn default_cwd(&self) -> String {
        self.cwd.clone()
    }

    fn is_remote(&self) -> bool {
        // Killing bwrap (the launcher's pid) kills the sandbox (--die-with-parent and
        // its pid namespace).
        false
    }

    fn command(&self, _session: &SessionKey, job: &Job) -> Result<Command, BackendError> {
        let Some(dir) = &job.dir else {
            return Err(BackendError::Setup {
                backend: "bwrap",
                reason: format!(
                    "the workspace {} was not opened for this command",
                    self.workspace.display()
                ),
            });
        };
        let mut cmd = Command::new("bash");
        cmd.args(["-p", "-c", LAUNCHER, "hermetic-bwrap"])
            .arg(&*self.seccomp)
            .arg(&self.program)
            .args(&self.view);
        // HOME is inside an empty tmpfs (/root, /home/USER): make it exist.
        if let Some((_, home)) = job.env.iter().find(|(k, _)| k == "HOME")
            && PRIVATE_DIRS.iter().any(|d| Path::new(home).starts_with(d))
        {
            cmd.args(["--dir", home]);
        }
        // bwrap leaves the seccomp descriptor open (an empty pipe): closed first.
        cmd.args(["--", "bash", "-c"])
            .arg(format!("exec {SECCOMP_FD}<&-\n{}", job.script))
            .env_clear()
            .envs(job.env.iter().map(|(k, v)| (k, v)))
            .current_dir(dir.proc_path());
        Ok(cmd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_has_every_rule_of_docker_and_gvisor_and_the_host_kernel_s_own() {
        let refused: Vec<String> = refusals().unwrap().into_iter().map(|r| r.syscall).collect();
        for name in setuid_refusals()
            .iter()
            .flat_map(|r| r["names"].as_array().cloned().unwrap_or_default())
        {
            assert!(refused.iter().any(|r| name == r.as_str()), "{name}");
        }
        for name in ["fchmodat2", "openat2", "io_uring_setup"] {
            assert!(refused.iter().any(|r| r == name), "{name}");
        }
        assert!(compile(&refusals().unwrap()).is_ok());
    }

    #[test]
    fn the_launcher_fills_the_descriptor_bwrap_reads() {
        assert!(LAUNCHER.starts_with(&format!("exec {SECCOMP_FD}< <(printf")));
    }
}
