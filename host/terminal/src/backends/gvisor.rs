//! The gVisor backend: bash inside `runsc`, gVisor's runtime, one sandbox per command.
//! Between the command and the host's kernel stands gVisor's own kernel (the Sentry,
//! itself confined by seccomp); the host's kernel sees only the Sentry's few system
//! calls. The command sees the same minimal host as `bwrap`'s: `/usr`, the `/bin`
//! `/sbin` `/lib*` links or directories, `/etc` (minus password hashes, sudo rules,
//! SSH and TLS private keys, what the operator hides and the host's own state files)
//! and what the operator adds, read-only; empty private `/home`, `/root`, `/run`,
//! `/var`, `/tmp`; gVisor's own `/proc` and `/dev`; no network unless the operator
//! grants the host's (`--network=none`, and gVisor's sockets live in the Sentry:
//! neither the host's abstract sockets nor its socket files are reachable); no
//! capabilities, no new privileges, and a seccomp filter inside gVisor that refuses
//! to set the setuid and setgid bits (the files a command makes in the workspace are
//! the host user's). Writable: the tenant's own directory only.
//!
//! Why `runsc run` on a bundle hermetic writes, not `runsc do` (which shows the whole
//! host through an overlay) nor `podman --runtime runsc` (an image, a container
//! engine and its state between hermetic and runsc, and a bind by path): the bundle
//! states every mount, and the writable one is bound from the directory the host
//! opened. The wrapper shell starts in that directory (as `bwrap` does), runsc and its
//! gofer inherit it, and the bind's source is the gofer's `/proc/self/cwd` (runsc
//! 2022-12's gofer sets its mounts up with its own procfs at `/proc/proc`, see
//! [`WORKSPACE_SOURCE`]): a tenant directory swapped for a symlink after it was
//! opened cannot redirect the bind. A runsc that lays its gofer out otherwise fails
//! that mount and runs nothing.
//!
//! Each command is a sandbox of its own (`runsc run` attached to the wrapper): the
//! command's script is its first process, and when it ends gVisor ends everything else
//! in it. A timeout or kill sends SIGKILL to every process of the sandbox (`runsc kill
//! --all`), then the host kills the local process group (the wrapper, `runsc run` and
//! its gofer; the Sentry is started to die with `runsc run`). runsc keeps its state
//! under a private directory per backend (`state_dir`, 0700, locked while the backend
//! lives): a command's directory is removed when it ends, every one of a session's
//! when the session ends, the backend's at shutdown, and one whose host died (its lock
//! free) at the next start.

use crate::backend::{BackendError, Job, TerminalBackend, new_marker, script_marker};
use crate::backends::bwrap::DEFAULT_HIDDEN;
use crate::backends::docker::setuid_refusals;
use crate::backends::{BackendPlan, BackendSpec, BuildContext, Home, Options};
use crate::exec::run_helper;
use hermetic_approval::SessionKey;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// `backend = "gvisor"`.
pub(crate) const SPEC: BackendSpec = BackendSpec {
    name: "gvisor",
    read: |options| read(options).map(|c| Box::new(c) as Box<dyn BackendPlan>),
};

/// gVisor options. A command sees what a `bwrap` command sees (see
/// [`BwrapConfig`](crate::BwrapConfig)), through gVisor's kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GvisorConfig {
    /// The `runsc` binary (default `runsc` on PATH; Debian's package `runsc`).
    pub program: Option<PathBuf>,
    /// gVisor's platform: `ptrace` (default: works on any x86-64 Linux, VMs without
    /// nested virtualisation included), `kvm` where `/dev/kvm` is usable.
    pub platform: String,
    /// Writable directory, bound at the same path; each tenant gets its own
    /// subdirectory of it (its `workspace` mount subdirectory's name, else its id).
    /// Default: the `workspace` mount (the tenant's own subdirectory of it) or `cwd`.
    pub workspace: Option<PathBuf>,
    /// Share the host's network (`--network=host`; default `--network=none`: a
    /// loopback of the sandbox's own).
    pub network: bool,
    /// More host directories commands may read (e.g. `/opt/toolchain`), bound
    /// read-only at the same path.
    pub read_only: Vec<PathBuf>,
    /// Paths inside the read-only part (`/etc`, `/usr`, `read_only`) commands must not
    /// see, besides [`DEFAULT_HIDDEN`]: a directory becomes empty, a file empty.
    pub hide: Vec<PathBuf>,
    /// Where runsc's state and each command's bundle live, in a 0700 subdirectory per
    /// backend (default: `hermetic-gvisor-UID` in the temporary directory). Made 0700;
    /// an existing one must be this user's, writable by nobody else. Never inside the
    /// workspace: a bundle holds the command's environment.
    pub state_dir: Option<PathBuf>,
}

impl Default for GvisorConfig {
    fn default() -> Self {
        Self {
            program: None,
            platform: "ptrace".to_owned(),
            workspace: None,
            network: false,
            read_only: Vec::new(),
            hide: Vec::new(),
            state_dir: None,
        }
    }
}

fn read(options: &Options<'_>) -> Result<GvisorConfig, String> {
    let mut config: GvisorConfig = options.parse()?;
    options.resolve(&mut config.workspace);
    options.resolve(&mut config.state_dir);
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
    if config.platform.is_empty() {
        return Err("platform: name one (ptrace, or kvm where /dev/kvm works)".to_owned());
    }
    if let (Some(state), Some(ws)) = (&config.state_dir, &config.workspace)
        && state.starts_with(ws)
    {
        return Err(format!(
            "state_dir {} is inside the workspace: commands could read other commands' environment there",
            state.display()
        ));
    }
    Ok(config)
}

impl BackendPlan for GvisorConfig {
    fn home(&self) -> Home {
        match &self.workspace {
            Some(root) => Home::HostBelow(root.clone()),
            None => Home::Host,
        }
    }

    fn reach(&self) -> Vec<(&'static str, PathBuf)> {
        self.workspace
            .iter()
            .map(|dir| ("gvisor workspace", dir.clone()))
            .collect()
    }

    fn build(
        &self,
        cx: &BuildContext<'_>,
    ) -> Result<Arc<dyn TerminalBackend>, crate::TerminalError> {
        let Some(dir) = &cx.dir else {
            return Err(BackendError::Config {
                backend: "gvisor",
                reason: "no writable directory: set [terminal.gvisor] workspace or cwd".into(),
            }
            .into());
        };
        Ok(Arc::new(GvisorBackend::new(
            self,
            dir.clone(),
            cx.start.clone(),
            cx.protected,
        )?))
    }
}

/// Where the gofer finds the directory to bind writable: its own working directory,
/// inherited from the wrapper (which starts in the opened tenant directory) through
/// `runsc run`. runsc 2022-12's gofer sets its mounts up in a new pid namespace with
/// an empty tmpfs on `/proc` and its own procfs at `/proc/proc` (runsc/cmd/gofer.go,
/// `setupRootFS`), so its `/proc/self` is there; the bind follows the link to the
/// directory itself, whatever its path names by then.
const WORKSPACE_SOURCE: &str = "/proc/proc/self/cwd";
/// Directories shown read-only when the host has them (as the host's symlinks where
/// the host's are symlinks: merged-/usr systems).
const SYSTEM_DIRS: &[&str] = &["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];
/// Host directories replaced by an empty private tmpfs.
const PRIVATE_DIRS: &[&str] = &["/home", "/root", "/run", "/var", "/tmp"];
/// Seconds a `runsc kill` may take.
const KILL_TIMEOUT: Duration = Duration::from_secs(15);
/// Runs `runsc` (the rest of the arguments) and removes the command's bundle
/// directory (`$1`) when it ends; it starts in the opened tenant directory.
const WRAPPER: &str = "d=$1; shift; \"$@\"; c=$?; rm -rf -- \"$d\"; exit $c";

static HOST_SEQ: AtomicU64 = AtomicU64::new(0);

const SETUP: fn(String) -> BackendError = |reason| BackendError::Setup {
    backend: "gvisor",
    reason,
};

/// Runs each command with bash in a gVisor sandbox of its own.
#[derive(Debug)]
pub struct GvisorBackend {
    program: PathBuf,
    /// runsc's global flags but `--root` (which is per command).
    flags: Vec<String>,
    /// The tenant's writable directory, as a path (where it is bound inside).
    workspace: PathBuf,
    cwd: String,
    /// This backend's private directory: the rootfs, the empty file, the bundles.
    host: HostDir,
    /// Every mount but a private `HOME`, computed once.
    mounts: Vec<Value>,
    /// The filter inside gVisor (`--oci-seccomp`).
    seccomp: Value,
    /// Session → the markers (container ids) of its commands whose bundle may still
    /// be there.
    sessions: Mutex<HashMap<SessionKey, Vec<String>>>,
}

/// The rules of the filter inside gVisor: the setuid/setgid mode refusals docker's
/// profile and bwrap's filter share, and `openat2` and `fchmodat2` refused whole
/// (EPERM), as those refuse them: `openat2` hides its mode in a struct a filter cannot
/// read, `fchmodat2` would need rules of its own. gVisor's kernel may not have them
/// yet (runsc 2022-12 answers ENOSYS): the filter decides, not the kernel's version.
fn filter_rules() -> Vec<Value> {
    let mut rules = setuid_refusals();
    rules.push(json!({
        "names": ["openat2", "fchmodat2"],
        "action": "SCMP_ACT_ERRNO",
        "errnoRet": 1,
    }));
    rules
}

impl GvisorBackend {
    /// A gVisor backend whose writable directory is `workspace` (the tenant's own;
    /// each command's [`Job::dir`] is its opened copy) and whose commands start in
    /// `cwd` unless told otherwise. `protected`: the host's own files, hidden where
    /// the view would show them.
    ///
    /// # Errors
    /// [`BackendError::Setup`] when its state directory cannot be made private, or
    /// [`BackendError::Config`] when it lies inside the workspace.
    pub fn new(
        config: &GvisorConfig,
        workspace: PathBuf,
        cwd: String,
        protected: &[PathBuf],
    ) -> Result<Self, BackendError> {
        let program = config
            .program
            .clone()
            .unwrap_or_else(|| PathBuf::from("runsc"));
        let base = config.state_dir.clone().unwrap_or_else(|| {
            std::env::temp_dir().join(format!(
                "hermetic-gvisor-{}",
                rustix::process::geteuid().as_raw()
            ))
        });
        if base.starts_with(&workspace) {
            return Err(BackendError::Config {
                backend: "gvisor",
                reason: format!(
                    "state_dir {} is inside the workspace {}",
                    base.display(),
                    workspace.display()
                ),
            });
        }
        private_dir(&base).map_err(|e| SETUP(format!("state_dir {}: {e}", base.display())))?;
        sweep_dead_hosts(&base, &program);
        let host = HostDir::new(&base)?;
        let mut flags = vec![
            format!("--platform={}", config.platform),
            format!("--network={}", if config.network { "host" } else { "none" }),
            // The seccomp filter of the spec, inside gVisor.
            "--oci-seccomp".to_owned(),
            // No cgroups here (and none needed: the Sentry is one process tree).
            "--ignore-cgroups".to_owned(),
        ];
        flags.shrink_to_fit();
        let mut hidden: Vec<PathBuf> = protected.to_vec();
        // Bundles hold commands' environments: never in a view.
        hidden.push(base.clone());
        Ok(Self {
            mounts: mounts(config, &workspace, &hidden, &host.empty),
            seccomp: json!({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": filter_rules()}),
            program,
            flags,
            workspace,
            cwd,
            host,
            sessions: Mutex::new(HashMap::new()),
        })
    }

    /// The OCI runtime spec of one command.
    fn spec(&self, job: &Job) -> Value {
        let mut mounts = self.mounts.clone();
        // HOME inside an empty private directory (/root, /home/USER): make it exist.
        if let Some((_, home)) = job.env.iter().find(|(k, _)| k == "HOME")
            && PRIVATE_DIRS
                .iter()
                .any(|d| Path::new(home).starts_with(d) && Path::new(home) != Path::new(d))
        {
            // Before the workspace, which may lie below it.
            let at = mounts.len() - 1;
            mounts.insert(at, tmpfs(home, &["nosuid", "nodev"]));
        }
        let env: Vec<String> = job.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        json!({
            "ociVersion": "1.0.2",
            "process": {
                "terminal": false,
                "user": {
                    "uid": rustix::process::geteuid().as_raw(),
                    "gid": rustix::process::getegid().as_raw(),
                },
                "args": ["bash", "-c", job.script],
                "env": env,
                "cwd": self.workspace,
                "capabilities": {},
                "noNewPrivileges": true,
            },
            "root": {"path": self.host.path.join("rootfs"), "readonly": true},
            "hostname": "hermetic",
            "mounts": mounts,
            "linux": {
                "namespaces": [
                    {"type": "pid"}, {"type": "network"}, {"type": "ipc"},
                    {"type": "uts"}, {"type": "mount"},
                ],
                "seccomp": self.seccomp,
            },
        })
    }

    /// Remembers that `marker`'s bundle belongs to `session`, forgetting the
    /// session's commands whose bundles are gone (they ended).
    fn track(&self, session: &SessionKey, marker: &str) {
        let mut sessions = self.sessions.lock();
        let markers = sessions.entry(session.clone()).or_default();
        markers.retain(|m| self.host.path.join(m).exists());
        markers.push(marker.to_owned());
    }

    /// Kills every process of `marker`'s sandbox (when it has one yet) and removes
    /// its bundle and state. The host kills the local process group after this.
    fn kill_container(&self, marker: &str) -> Result<(), BackendError> {
        if !is_marker(marker) {
            return Ok(());
        }
        let bundle = self.host.path.join(marker);
        let result = kill_sandbox(&self.program, &bundle, marker);
        match std::fs::remove_dir_all(&bundle) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                tracing::warn!(error = %e, bundle = %bundle.display(), "could not remove a gVisor bundle");
            }
            _ => {}
        }
        result
    }
}

/// `runsc kill --all MARKER KILL` when `bundle` has runsc state (the sandbox was
/// created); nothing when it has none (not created yet, or ended: runsc removes its
/// state then).
fn kill_sandbox(program: &Path, bundle: &Path, marker: &str) -> Result<(), BackendError> {
    let state = bundle.join("state");
    let created = std::fs::read_dir(&state).is_ok_and(|mut d| d.next().is_some());
    if !created {
        return Ok(());
    }
    let mut cmd = Command::new(program);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .arg(format!("--root={}", state.display()))
        .args(["kill", "--all", marker, "KILL"]);
    run_helper(cmd, "gvisor", KILL_TIMEOUT).map(drop)
}

/// A marker as `new_marker` makes them (safe as a file name and a container id).
fn is_marker(s: &str) -> bool {
    s.starts_with("__HERMETIC_")
        && s.len() <= 64
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn bind(source: &Path, destination: &Path, options: &[&str]) -> Value {
    json!({"destination": destination, "type": "bind", "source": source, "options": options})
}

fn tmpfs(destination: impl AsRef<Path>, options: &[&str]) -> Value {
    json!({"destination": destination.as_ref(), "type": "tmpfs", "source": "tmpfs", "options": options})
}

/// The mounts of the minimal host view, the workspace last (in order: a later mount
/// covers an earlier one).
fn mounts(
    config: &GvisorConfig,
    workspace: &Path,
    protected: &[PathBuf],
    empty: &Path,
) -> Vec<Value> {
    const RO: &[&str] = &["rbind", "ro", "nosuid", "nodev"];
    let mut m = vec![bind(Path::new("/usr"), Path::new("/usr"), RO)];
    for dir in SYSTEM_DIRS {
        // Symlinks are in the rootfs (see `HostDir::new`).
        if std::fs::read_link(dir).is_err() && Path::new(dir).is_dir() {
            m.push(bind(Path::new(dir), Path::new(dir), RO));
        }
    }
    m.push(bind(Path::new("/etc"), Path::new("/etc"), RO));
    for dir in PRIVATE_DIRS {
        m.push(tmpfs(dir, &["nosuid", "nodev"]));
    }
    // After the tmpfs mounts, which would cover a directory under /tmp or /home.
    let mut readable: Vec<PathBuf> = vec!["/usr".into(), "/etc".into()];
    for dir in &config.read_only {
        if dir.is_dir() {
            m.push(bind(dir, dir, RO));
            readable.push(dir.clone());
        }
    }
    // Hidden after the binds they lie in. Only what exists: the gofer would make a
    // missing mount point on the host.
    let hidden = DEFAULT_HIDDEN
        .iter()
        .map(PathBuf::from)
        .chain(config.hide.iter().cloned())
        .chain(protected.iter().cloned());
    for path in hidden {
        if !readable.iter().any(|r| path.starts_with(r)) {
            continue; // not in the view anyway
        }
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => m.push(tmpfs(&path, &["ro", "nosuid", "nodev"])),
            Ok(meta) if meta.is_file() => {
                m.push(bind(empty, &path, &["bind", "ro", "nosuid", "nodev"]));
            }
            // A symlink is shown as the link (its target is hidden or not, on its
            // own); anything else (a socket, a device) is not bound over.
            _ => {}
        }
    }
    m.push(json!({"destination": "/proc", "type": "proc", "source": "proc"}));
    m.push(bind(
        Path::new(WORKSPACE_SOURCE),
        workspace,
        &["rbind", "rw", "nosuid", "nodev"],
    ));
    m
}

/// Makes `dir` (its parent must exist) a directory only this user can enter, or
/// checks that an existing one is this user's and that nobody else can write in it
/// (plant a directory or a symlink a sweep would act on). What it holds is private
/// anyway: each backend's directory is 0700.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let meta = std::fs::symlink_metadata(dir)?;
            let euid = rustix::process::geteuid().as_raw();
            if meta.is_dir() && meta.uid() == euid && meta.permissions().mode() & 0o022 == 0 {
                Ok(())
            } else {
                Err(std::io::Error::other(
                    "exists but is not a directory of this user that only it can write in (not a symlink)",
                ))
            }
        }
        Err(e) => Err(e),
    }
}

/// A backend's own directory below the state directory, locked (`flock`) while the
/// backend lives so the next start can tell it from one whose host died.
#[derive(Debug)]
struct HostDir {
    path: PathBuf,
    /// The empty file bound over hidden files.
    empty: PathBuf,
    /// Holds the lock (an open file description: children do not inherit it).
    _lock: std::fs::File,
}

impl HostDir {
    fn new(base: &Path) -> Result<Self, BackendError> {
        use std::os::unix::fs::DirBuilderExt;
        let name = format!(
            "{}-{}",
            std::process::id(),
            HOST_SEQ.fetch_add(1, Ordering::Relaxed)
        );
        // Made under a dot name and renamed once locked, so a sweep (which skips dot
        // names) never finds it unlocked.
        let building = base.join(format!(".new-{name}"));
        // Not recursive, and a fresh name: whatever is there was not made by us.
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&building)
            .map_err(|e| SETUP(format!("making {}: {e}", building.display())))?;
        let lock = Self::fill(&building)
            .and_then(|lock| {
                std::fs::rename(&building, base.join(&name))
                    .map(|()| lock)
                    .map_err(|e| SETUP(format!("renaming {}: {e}", building.display())))
            })
            .inspect_err(|_| {
                let _ = std::fs::remove_dir_all(&building);
            })?;
        let path = base.join(name);
        Ok(Self {
            empty: path.join("empty"),
            path,
            _lock: lock,
        })
    }

    /// Locks `dir` and puts in it the empty file and the rootfs: the host's /bin,
    /// /lib, … symlinks (the rest is mounted over it, and runsc makes the mount points
    /// it needs in it).
    fn fill(dir: &Path) -> Result<std::fs::File, BackendError> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        let at = |what: &str, e: std::io::Error| SETUP(format!("{what} {}: {e}", dir.display()));
        let lock = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(dir.join("lock"))
            .map_err(|e| at("locking", e))?;
        lock.lock().map_err(|e| at("locking", e))?;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o400)
            .open(dir.join("empty"))
            .map_err(|e| at("making the empty file in", e))?;
        let rootfs = dir.join("rootfs");
        std::fs::DirBuilder::new()
            .mode(0o755)
            .create(&rootfs)
            .map_err(|e| at("making the rootfs in", e))?;
        for system in SYSTEM_DIRS {
            if let Ok(target) = std::fs::read_link(system) {
                let name = system.trim_start_matches('/');
                std::os::unix::fs::symlink(&target, rootfs.join(name))
                    .map_err(|e| at("linking the rootfs in", e))?;
            }
        }
        Ok(lock)
    }
}

impl Drop for HostDir {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.path)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(error = %e, dir = %self.path.display(), "could not remove the gVisor state directory");
        }
    }
}

/// The state directories of backends whose host died (their lock is free): their
/// sandboxes are killed, their directories removed. Once per state directory and
/// process.
fn sweep_dead_hosts(base: &Path, program: &Path) {
    static SWEPT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
    {
        let mut swept = SWEPT.lock();
        if swept.iter().any(|b| b == base) {
            return;
        }
        swept.push(base.to_path_buf());
    }
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with('.')
            || !entry.file_type().is_ok_and(|t| t.is_dir())
        {
            continue; // a backend being set up, or nothing a backend made
        }
        let dir = entry.path();
        let Ok(lock) = std::fs::File::open(dir.join("lock")) else {
            continue;
        };
        if lock.try_lock().is_err() {
            continue; // its backend is alive (in this process or another)
        }
        if let Ok(bundles) = std::fs::read_dir(&dir) {
            for bundle in bundles.flatten() {
                let name = bundle.file_name();
                if let Some(marker) = name.to_str().filter(|n| is_marker(n))
                    && let Err(e) = kill_sandbox(program, &bundle.path(), marker)
                {
                    tracing::warn!(error = %e, "could not kill a sandbox left by a previous host");
                }
            }
        }
        if let Err(e) = std::fs::remove_dir_all(&dir) {
            tracing::warn!(error = %e, dir = %dir.display(), "could not remove a previous host's gVisor state");
        }
    }
}

impl TerminalBackend for GvisorBackend {
    fn name(&self) -> &'static str {
        "gvisor"
    }

    fn default_cwd(&self) -> String {
        self.cwd.clone()
    }

    /// The Sentry runs in a session of its own, outside the command's process group:
    /// a timeout or kill also ends the sandbox by its container id (the marker).
    fn is_remote(&self) -> bool {
        true
    }

    fn command(&self, session: &SessionKey, job: &Job) -> Result<Command, BackendError> {
        let Some(dir) = &job.dir else {
            return Err(SETUP(format!(
                "the workspace {} was not opened for this command",
                self.workspace.display()
            )));
        };
        // The container's id and bundle name: the command's marker, so a kill by
        // marker finds its sandbox; a script without one (a helper the host runs, such
        // as a file reader) gets a fresh one, and is ended by its local process.
        let fresh;
        let marker = match script_marker(&job.script).filter(|m| is_marker(m)) {
            Some(m) => m,
            None => {
                fresh = new_marker();
                fresh.as_str()
            }
        };
        use std::io::Write;
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        let bundle = self.host.path.join(marker);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&bundle)
            .map_err(|e| SETUP(format!("the bundle {}: {e}", bundle.display())))?;
        let written = serde_json::to_vec(&self.spec(job))
            .map_err(|e| SETUP(format!("the runtime spec: {e}")))
            .and_then(|spec| {
                // 0600 in a 0700 directory: it holds the command's environment.
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(bundle.join("config.json"))
                    .and_then(|mut f| f.write_all(&spec))
                    .map_err(|e| SETUP(format!("writing the bundle {}: {e}", bundle.display())))
            });
        if let Err(e) = written {
            let _ = std::fs::remove_dir_all(&bundle);
            return Err(e);
        }
        self.track(session, marker);
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(WRAPPER)
            .arg("hermetic-gvisor")
            .arg(&bundle)
            .arg(&self.program)
            .args(&self.flags)
            .arg(format!("--root={}", bundle.join("state").display()))
            .args(["run", "--bundle"])
            .arg(&bundle)
            .arg(marker)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            // The opened directory, which the gofer binds (see WORKSPACE_SOURCE).
            .current_dir(dir.proc_path());
        Ok(cmd)
    }

    fn kill_remote(&self, _session: &SessionKey, marker: &str) -> Result<(), BackendError> {
        self.kill_container(marker)
    }

    fn end_session(&self, session: &SessionKey) {
        let markers = self.sessions.lock().remove(session).unwrap_or_default();
        for marker in markers {
            if let Err(e) = self.kill_container(&marker) {
                tracing::warn!(error = %e, "could not kill a session's gVisor sandbox");
            }
        }
    }

    fn shutdown(&self) {
        let markers: Vec<String> = self.sessions.lock().drain().flat_map(|(_, m)| m).collect();
        for marker in markers {
            if let Err(e) = self.kill_container(&marker) {
                tracing::warn!(error = %e, "could not kill a gVisor sandbox at shutdown");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_markers_name_bundles() {
        assert!(is_marker("__HERMETIC_0123456789abcdef__"));
        for bad in ["", "../x", "__HERMETIC_/..__", "x", "__HERMETIC_a b__"] {
            assert!(!is_marker(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_state_directory_someone_else_can_write_in_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o775)).unwrap();
        assert!(private_dir(&open).is_err());
        let link = dir.path().join("link");
        let private = dir.path().join("private");
        private_dir(&private).unwrap();
        std::os::unix::fs::symlink(&private, &link).unwrap();
        assert!(
            private_dir(&link).is_err(),
            "a symlink is not the directory"
        );
        assert!(private_dir(&private).is_ok());
    }

    #[test]
    fn openat2_and_fchmodat2_are_refused_whole() {
        let rules = filter_rules();
        let whole: Vec<&Value> = rules.iter().filter(|r| r.get("args").is_none()).collect();
        assert_eq!(whole.len(), 1, "{whole:?}");
        assert_eq!(whole[0]["names"], json!(["openat2", "fchmodat2"]));
        assert_eq!(whole[0]["action"], "SCMP_ACT_ERRNO");
        assert_eq!(whole[0]["errnoRet"], 1);
        assert_eq!(rules.len(), setuid_refusals().len() + 1);
    }

    #[test]
    fn the_filter_refuses_setuid_modes_only() {
        let rules = setuid_refusals();
        assert!(rules.iter().all(|r| r["action"] == "SCMP_ACT_ERRNO"));
        // Every refusal names a mode bit to match, never a whole syscall.
        assert!(
            rules
                .iter()
                .all(|r| r["args"].as_array().is_some_and(|a| !a.is_empty()))
        );
    }
}
