//! The container backend, for any docker-compatible CLI (`docker`, `podman`): one
//! long-lived container per session — all capabilities dropped, no-new-privileges,
//! pids/memory/cpu limits, no network unless the operator allows it, the host user's
//! uid:gid, a seccomp profile that refuses setuid/setgid bits, and the tenant's own
//! workspace directory bound `nosuid,nodev` — and each command an `exec` into it, in
//! its own pid namespace. The container is removed when the session ends or the host
//! shuts down.

use crate::backend::{
    BackendError, Job, TerminalBackend, pid_namespace_launcher, remote_kill_script, script_marker,
};
use crate::backends::{BackendPlan, BackendSpec, BuildContext, Home, Options};
use crate::exec::run_helper;
use hermetic_approval::SessionKey;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Where podman (containers-common) keeps its default seccomp profile.
pub const DEFAULT_SECCOMP_PROFILE: &str = "/usr/share/containers/seccomp.json";

/// `backend = "docker"`.
pub(crate) const SPEC: BackendSpec = BackendSpec {
    name: "docker",
    read: |options| read(options).map(|c| Box::new(c) as Box<dyn BackendPlan>),
};

/// Options of a docker-compatible CLI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DockerConfig {
    /// The CLI: `docker` or `podman` (or a path).
    pub program: String,
    /// Arguments before the subcommand (e.g. `["--runtime", "runc"]` for podman).
    pub global_args: Vec<String>,
    /// Environment for the CLI itself (e.g. `CONTAINERS_CONF`).
    pub cli_env: BTreeMap<String, String>,
    /// Image of the session containers.
    pub image: String,
    /// `--memory`.
    pub memory: String,
    /// `--cpus`.
    pub cpus: String,
    /// `--pids-limit`.
    pub pids_limit: u32,
    /// Attach the default network (default: `--network none`).
    pub network: bool,
    /// Host directory bind-mounted read-write (`nosuid,nodev`) at `/workspace`
    /// (default: none).
    pub workspace: Option<PathBuf>,
    /// Bind each tenant's own subdirectory of `workspace` (its `workspace` mount
    /// subdirectory, else its tenant id; made 0700 when missing), not the whole of it.
    /// The operator tenant always gets the whole directory. Default true.
    pub per_tenant: bool,
    /// `--user` of the session containers, `UID[:GID]` or a name the image knows.
    /// Default: the uid:gid hermetic runs as, so files in the workspace belong to the
    /// host user rather than to whoever the image says.
    pub user: Option<String>,
    /// The seccomp profile the containers' own is derived from (docker-format JSON):
    /// hermetic adds rules that refuse to set the setuid and setgid bits (chmod,
    /// open/creat/mknod modes), so no command can leave a setuid file in the
    /// workspace. Default: podman's `/usr/share/containers/seccomp.json`; for docker,
    /// point it at moby's `profiles/seccomp/default.json`.
    pub seccomp_profile: PathBuf,
    /// Run each command in its own pid namespace inside the container (`unshare`, in
    /// a user namespace), so a timeout, a kill or the command's end takes everything
    /// it started with it, daemons included. When the image's `unshare` cannot, the
    /// command is refused. Default true; false runs commands without one, and what
    /// they leave running (a double fork, `setsid`) lives until the session ends.
    pub pid_namespace: bool,
    /// Seconds a CLI call that starts or removes a container may take.
    pub setup_timeout_secs: u64,
}

impl Default for DockerConfig {
    fn default() -> Self {
        Self {
            program: "docker".to_owned(),
            global_args: Vec::new(),
            cli_env: BTreeMap::new(),
            image: "debian:stable-slim".to_owned(),
            memory: "1g".to_owned(),
            cpus: "1".to_owned(),
            pids_limit: 256,
            network: false,
            workspace: None,
            per_tenant: true,
            user: None,
            seccomp_profile: PathBuf::from(DEFAULT_SECCOMP_PROFILE),
            pid_namespace: true,
            setup_timeout_secs: 120,
        }
    }
}

fn read(options: &Options<'_>) -> Result<DockerConfig, String> {
    let mut config: DockerConfig = options.parse()?;
    options.resolve(&mut config.workspace);
    Ok(config)
}

impl BackendPlan for DockerConfig {
    fn home(&self) -> Home {
        Home::Elsewhere
    }

    fn reach(&self) -> Vec<(&'static str, PathBuf)> {
        self.workspace
            .iter()
            .map(|dir| ("docker workspace", dir.clone()))
            .collect()
    }

    fn build(
        &self,
        cx: &BuildContext<'_>,
    ) -> Result<Arc<dyn TerminalBackend>, crate::TerminalError> {
        Ok(Arc::new(DockerBackend::new(
            self,
            cx.cwd.clone(),
            (cx.tenant_subdir)("docker")?,
        )))
    }
}

/// Where the workspace appears inside the container.
pub const CONTAINER_WORKSPACE: &str = "/workspace";
/// Seconds a remote kill may take.
const KILL_TIMEOUT: Duration = Duration::from_secs(15);

static CONTAINER_SEQ: AtomicU64 = AtomicU64::new(0);

const SETUP: fn(String) -> BackendError = |reason| BackendError::Setup {
    backend: "docker",
    reason,
};

/// Runs commands in per-session containers.
#[derive(Debug)]
pub struct DockerBackend {
    config: DockerConfig,
    cwd: String,
    /// The tenant's directory below `config.workspace` (`None`: all of it).
    tenant_dir: Option<PathBuf>,
    /// The derived seccomp profile, written on first use.
    seccomp: Mutex<Option<PathBuf>>,
    /// Session → its running container's name.
    containers: Mutex<HashMap<SessionKey, String>>,
}

impl DockerBackend {
    /// A container backend; `cwd` inside the container (default `/workspace` when a
    /// workspace is bound, else `/`). `tenant_dir` is the tenant's directory relative
    /// to the workspace (`None` for the operator, who gets all of it); with
    /// `per_tenant` only that directory is bound.
    pub fn new(config: &DockerConfig, cwd: Option<String>, tenant_dir: Option<PathBuf>) -> Self {
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
            tenant_dir: tenant_dir.filter(|_| config.per_tenant),
            seccomp: Mutex::new(None),
            containers: Mutex::new(HashMap::new()),
        }
    }

    /// `--user`: the configured one, else the uid:gid hermetic runs as.
    fn user(&self) -> String {
        self.config.user.clone().unwrap_or_else(|| {
            format!(
                "{}:{}",
                rustix::process::geteuid().as_raw(),
                rustix::process::getegid().as_raw()
            )
        })
    }

    /// The derived seccomp profile's file, written once per backend (0600, a fresh
    /// name: `create_new` refuses a file or symlink planted under it).
    fn seccomp_file(&self) -> Result<PathBuf, BackendError> {
        let mut file = self.seccomp.lock();
        if let Some(path) = file.as_ref() {
            return Ok(path.clone());
        }
        let base = &self.config.seccomp_profile;
        let text = std::fs::read_to_string(base).map_err(|e| BackendError::Config {
            backend: "docker",
            reason: format!(
                "seccomp_profile {}: {e} (podman's is in containers-common; for docker use moby's profiles/seccomp/default.json)",
                base.display()
            ),
        })?;
        let profile = no_setuid_profile(&text).map_err(|reason| BackendError::Config {
            backend: "docker",
            reason: format!("seccomp_profile {}: {reason}", base.display()),
        })?;
        let path = std::env::temp_dir().join(format!(
            "hermetic-seccomp-{}-{}.json",
            std::process::id(),
            CONTAINER_SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .and_then(|mut f| f.write_all(profile.as_bytes()))
            .map_err(|e| SETUP(format!("writing {}: {e}", path.display())))?;
        *file = Some(path.clone());
        Ok(path)
    }

    /// The directory to bind and its open descriptor: the tenant's own directory
    /// (made 0700 when missing, walked without following symlinks), else the whole
    /// workspace.
    fn workspace_dir(&self, ws: &Path) -> Result<(PathBuf, OwnedFd), BackendError> {
        let sub = self.tenant_dir.as_deref().unwrap_or(Path::new(""));
        let fd = hermetic::create_beneath(ws, sub).map_err(|e| {
            SETUP(format!(
                "the workspace directory {}: {e}",
                ws.join(sub).display()
            ))
        })?;
        if !sub.as_os_str().is_empty() {
            self.give_to_user(&fd);
        }
        // runc cannot bind a `/proc/<pid>/fd/<n>` source (EINVAL), so the container
        // runtime gets the directory's real path as the walk opened it, and
        // `verify_workspace` checks after the start that the container got this very
        // directory (a symlink swapped in between is caught there).
        let path = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
            .map_err(|e| SETUP(format!("the workspace directory: {e}")))?;
        let text = path.to_string_lossy();
        if text.contains([':', ',']) || text.ends_with(" (deleted)") {
            return Err(BackendError::Config {
                backend: "docker",
                reason: format!(
                    "the workspace directory {} cannot be passed to -v (':' or ',' in it)",
                    path.display()
                ),
            });
        }
        Ok((path, fd))
    }

    /// A tenant directory hermetic owns goes to a configured numeric `user`, so its
    /// commands can write there.
    fn give_to_user(&self, fd: &OwnedFd) {
        let Some(user) = &self.config.user else {
            return;
        };
        let mut ids = user.splitn(2, ':').map(str::parse::<u32>);
        let (Some(Ok(uid)), gid) = (ids.next(), ids.next()) else {
            return;
        };
        let gid = match gid {
            Some(Ok(g)) => Some(g),
            Some(Err(_)) => return,
            None => None,
        };
        let Ok(dup) = fd.try_clone() else {
            return;
        };
        let dir = std::fs::File::from(dup);
        use std::os::unix::fs::MetadataExt;
        let euid = rustix::process::geteuid().as_raw();
        if dir.metadata().is_ok_and(|m| m.uid() == euid && uid != euid)
            && let Err(e) = std::os::unix::fs::fchown(&dir, Some(uid), gid)
        {
            tracing::warn!(error = %e, "could not give the tenant's workspace directory to the container user");
        }
    }

    /// The container's `/workspace` is the directory that was opened (device and
    /// inode), not something swapped in under its path while the container started.
    fn verify_workspace(&self, name: &str, dir: &OwnedFd) -> Result<(), BackendError> {
        use std::os::unix::fs::MetadataExt;
        let want = dir
            .try_clone()
            .map(std::fs::File::from)
            .and_then(|f| f.metadata())
            .map_err(|e| SETUP(format!("the workspace directory: {e}")))?;
        let mut cmd = self.cli();
        cmd.args(["exec", name, "stat", "-c", "%d %i", CONTAINER_WORKSPACE]);
        let out = run_helper(cmd, "docker", KILL_TIMEOUT)
            .map_err(|e| SETUP(format!("checking the container's workspace: {e}")))?;
        let expected = format!("{} {}", want.dev(), want.ino());
        if out.trim() == expected {
            Ok(())
        } else {
            Err(SETUP(format!(
                "the container's {CONTAINER_WORKSPACE} is not the tenant's directory (device and inode {:?}, expected {expected}): was it replaced while the container started?",
                out.trim()
            )))
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
        let mut containers = self.containers.lock();
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
        let seccomp = self.seccomp_file()?;
        cmd.args(["run", "-d", "--rm", "--name", &name])
            .args(["--cap-drop", "ALL", "--security-opt", "no-new-privileges"])
            .arg("--security-opt")
            .arg(format!("seccomp={}", seccomp.display()))
            .args(["--user", &self.user()])
            .args(["--pids-limit", &c.pids_limit.to_string()])
            .args(["--memory", &c.memory, "--cpus", &c.cpus])
            .args(["--label", "hermetic.session=1"]);
        if !c.network {
            cmd.args(["--network", "none"]);
        }
        // Held open until the container is checked: the directory the walk found.
        let mut bound = None;
        if let Some(ws) = &c.workspace {
            let (path, fd) = self.workspace_dir(ws)?;
            // nosuid,nodev: a setuid file or a device node in the workspace is inert
            // inside. Docker's CLI has no such -v options (its own seccomp-guarded
            // profile still keeps setuid bits from being set).
            let options = if Path::new(&c.program).file_name() == Some("docker".as_ref()) {
                "rw"
            } else {
                "rw,nosuid,nodev"
            };
            cmd.arg("-v").arg(format!(
                "{}:{CONTAINER_WORKSPACE}:{options}",
                path.display()
            ));
            bound = Some(fd);
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
        if let Some(fd) = &bound
            && let Err(e) = self.verify_workspace(&name, fd)
        {
            self.remove(&name);
            return Err(e);
        }
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

    /// `podman exec` returns to nobody: a kill before the launcher printed its
    /// `started` line would find nothing in the container, and the exec would start
    /// the command after it.
    fn announces_start(&self) -> bool {
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
        // The script is the launcher's `$1`, so it is in the command line of the
        // processes that run it: how `kill_remote` finds them. `$2` is the marker the
        // launcher's `started` line names.
        cmd.args([
            name.as_str(),
            "sh",
            "-c",
            pid_namespace_launcher(self.config.pid_namespace),
            "hermetic",
            &job.script,
            script_marker(&job.script).unwrap_or_default(),
        ]);
        Ok(cmd)
    }

    fn kill_remote(&self, session: &SessionKey, marker: &str) -> Result<(), BackendError> {
        let Some(name) = self.containers.lock().get(session).cloned() else {
            return Ok(());
        };
        let mut cmd = self.cli();
        // As the container's user, inside the container: it can reach nothing the
        // session's commands could not.
        cmd.args(["exec", &name, "sh", "-c", &remote_kill_script(marker)]);
        run_helper(cmd, "docker", KILL_TIMEOUT).map(drop)
    }

    fn end_session(&self, session: &SessionKey) {
        let name = self.containers.lock().remove(session);
        if let Some(name) = name {
            self.remove(&name);
        }
    }

    fn shutdown(&self) {
        let names: Vec<String> = self.containers.lock().drain().map(|(_, n)| n).collect();
        for name in names {
            self.remove(&name);
        }
        if let Some(path) = self.seccomp.lock().take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Drop for DockerBackend {
    fn drop(&mut self) {
        if let Some(path) = self.seccomp.get_mut().take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Syscalls that set a file's mode, with the index of their mode argument. Root
/// without capabilities still owns the files it makes and may chmod them, and a
/// setuid-root file left in a host directory is a way to root for any local user who
/// can reach it: `nosuid` on the bind protects only the container's view, not the
/// host's. So the setuid and setgid bits are refused where they are set.
const MODE_SYSCALLS: &[(&str, u32)] = &[
    ("chmod", 1),
    ("fchmod", 1),
    ("fchmodat", 2),
    ("creat", 1),
    ("mknod", 1),
    ("mknodat", 2),
];
/// Opening syscalls: (name, flags index, mode index). The mode matters only with
/// `O_CREAT` or `O_TMPFILE`; an open without them (whatever garbage its mode holds)
/// is allowed.
const OPEN_SYSCALLS: &[(&str, u32, u32)] = &[("open", 1, 2), ("openat", 2, 3)];
/// Taken out of the base profile's allowed list and left to its default (refused):
/// `openat2` hides its mode in a struct seccomp cannot read (libc falls back to
/// `openat`), `fchmodat2` (Linux 6.6) would need its own rules for little use.
const REFUSED: &[&str] = &["openat2", "fchmodat2"];
const S_ISUID: u64 = 0o4000;
const S_ISGID: u64 = 0o2000;
const O_CREAT: u64 = 0o100;
const O_TMPFILE: u64 = 0o20_000_000;
const EPERM: u64 = 1;

/// `base` (a docker-format seccomp profile) with the mode-setting syscalls allowed
/// only without the setuid and setgid bits. The base must refuse by default, or
/// taking syscalls out of its list would allow them.
fn no_setuid_profile(base: &str) -> Result<String, String> {
    use serde_json::{Value, json};
    let mut profile: Value =
        serde_json::from_str(base).map_err(|e| format!("not a seccomp profile: {e}"))?;
    let default = profile
        .get("defaultAction")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !default.starts_with("SCMP_ACT_ERRNO") && !default.starts_with("SCMP_ACT_KILL") {
        return Err(format!(
            "its defaultAction is {default:?}; it must refuse (SCMP_ACT_ERRNO or SCMP_ACT_KILL)"
        ));
    }
    let Some(rules) = profile.get_mut("syscalls").and_then(Value::as_array_mut) else {
        return Err("no syscalls list".into());
    };
    let guarded = |n: &str| {
        MODE_SYSCALLS.iter().any(|(m, _)| *m == n)
            || OPEN_SYSCALLS.iter().any(|(o, _, _)| *o == n)
            || REFUSED.contains(&n)
    };
    for rule in rules.iter_mut() {
        if let Some(names) = rule.get_mut("names").and_then(Value::as_array_mut) {
            names.retain(|n| !n.as_str().is_some_and(guarded));
        }
    }
    rules.retain(|r| {
        r.get("names")
            .and_then(Value::as_array)
            .is_none_or(|n| !n.is_empty())
    });
    let allow = |name: &str, args: Vec<Value>| json!({"names": [name], "action": "SCMP_ACT_ALLOW", "args": args});
    // Each syscall's rules are disjoint (no call matches an allow and a refusal), so
    // how libseccomp orders them does not matter.
    for &(name, mode) in MODE_SYSCALLS {
        rules.push(allow(name, vec![masked(mode, S_ISUID | S_ISGID, 0)]));
    }
    for &(name, flags, mode) in OPEN_SYSCALLS {
        rules.push(allow(name, vec![masked(flags, O_CREAT | O_TMPFILE, 0)]));
        rules.push(allow(name, vec![masked(mode, S_ISUID | S_ISGID, 0)]));
    }
    rules.extend(setuid_refusals());
    serde_json::to_string(&profile).map_err(|e| e.to_string())
}

/// An OCI seccomp argument condition: `(arg[index] & mask) == value`.
fn masked(index: u32, mask: u64, value: u64) -> serde_json::Value {
    serde_json::json!({"index": index, "value": mask, "valueTwo": value, "op": "SCMP_CMP_MASKED_EQ"})
}

/// The OCI seccomp rules that refuse (EPERM) every mode-setting call with the setuid
/// or setgid bit, each rule with one condition per argument (gVisor reads several
/// conditions on one argument as alternatives, as old runc did). Alone under a
/// default that allows, they are gVisor's filter; the docker profile adds them to its
/// own allow rules.
pub(crate) fn setuid_refusals() -> Vec<serde_json::Value> {
    let refuse = |name: &str, args: Vec<serde_json::Value>| serde_json::json!({"names": [name], "action": "SCMP_ACT_ERRNO", "errnoRet": EPERM, "args": args});
    let mut rules = Vec::new();
    for &(name, mode) in MODE_SYSCALLS {
        for bit in [S_ISUID, S_ISGID] {
            rules.push(refuse(name, vec![masked(mode, bit, bit)]));
        }
    }
    for &(name, flags, mode) in OPEN_SYSCALLS {
        for flag in [O_CREAT, O_TMPFILE] {
            for bit in [S_ISUID, S_ISGID] {
                rules.push(refuse(
                    name,
                    vec![masked(flags, flag, flag), masked(mode, bit, bit)],
                ));
            }
        }
    }
    rules
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_derived_profile_allows_no_setuid_mode_and_keeps_the_rest() {
        let base = r#"{"defaultAction":"SCMP_ACT_ERRNO","defaultErrnoRet":38,"syscalls":[
            {"names":["read","chmod","openat2","open"],"action":"SCMP_ACT_ALLOW"},
            {"names":["fchmod"],"action":"SCMP_ACT_ALLOW"}]}"#;
        let out: serde_json::Value =
            serde_json::from_str(&no_setuid_profile(base).unwrap()).unwrap();
        let rules = out["syscalls"].as_array().unwrap();
        assert_eq!(rules[0]["names"], serde_json::json!(["read"]));
        // No unconditional allow of a guarded syscall is left, openat2 is gone.
        for r in rules {
            let names = r["names"].as_array().unwrap();
            if names.iter().any(|n| n != "read") {
                assert!(r["args"].as_array().is_some_and(|a| !a.is_empty()), "{r}");
            }
            assert!(!names.iter().any(|n| n == "openat2"), "{r}");
        }
        let chmod_refusals = rules
            .iter()
            .filter(|r| r["names"][0] == "chmod" && r["action"] == "SCMP_ACT_ERRNO")
            .count();
        assert_eq!(chmod_refusals, 2);
    }

    #[test]
    fn a_base_that_allows_by_default_is_refused() {
        let base = r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[]}"#;
        assert!(no_setuid_profile(base).is_err());
    }
}
