//! The real backends' fixtures the terminal suites share: a busybox image for podman,
//! an sshd on loopback, and ways to look at processes (containers and ssh sessions
//! share this machine's kernel, so /proc sees their processes).
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// Fails, naming the Debian package to install, when `program` is not installed.
pub fn require(program: &str, package: &str) {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        .unwrap_or(false)
        || Path::new(program).is_file();
    assert!(
        found,
        "{program} is not installed: this suite needs the Debian package {package} (.ci/run installs it: apt-get install -y {package})"
    );
}

/// Whether a process whose command line contains `token` is alive (not a zombie),
/// anywhere on this machine (containers and ssh sessions share its kernel).
///
/// Looked for in three scans 20 ms apart, alive if any finds it: a process in the
/// middle of `execve` (bash exec-ing its last command, `sleep …`) has an empty
/// command line for a moment, and one scan landing there would call a running
/// process dead (a false "kill reached it", or a false "it is gone").
pub fn alive(token: &str) -> bool {
    (0..3).any(|i| {
        if i > 0 {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        seen_once(token)
    })
}

fn seen_once(token: &str) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.flatten().any(|e| {
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        cmdline.contains(token)
            && !cmdline.contains("cmdline")
            && std::fs::read_to_string(e.path().join("stat"))
                .map(|s| {
                    !s.rsplit(')')
                        .next()
                        .unwrap_or("")
                        .trim_start()
                        .starts_with('Z')
                })
                .unwrap_or(false)
    })
}

/// Whether a process whose command line *starts* with `command` is alive: the command
/// itself running, not a wrapper (a `podman exec` client, a launcher) that names it in
/// its arguments before the command has started on the far side.
pub fn running(command: &str) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.flatten().any(|e| {
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        String::from_utf8_lossy(&cmdline)
            .replace('\0', " ")
            .starts_with(command)
    })
}

/// Polls `f` until it holds, failing after `limit`.
pub fn eventually(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{what}: not within {limit:?}");
}

/// Builds the busybox test image once (podman import of a local rootfs; no registry).
pub fn busybox_image(conf: &Path) -> &'static str {
    static IMAGE: OnceLock<()> = OnceLock::new();
    const NAME: &str = "localhost/hermetic-test-busybox:latest";
    IMAGE.get_or_init(|| {
        let podman = || {
            let mut c = Command::new("podman");
            c.env("CONTAINERS_CONF", conf);
            c
        };
        if podman()
            .args(["image", "exists", NAME])
            .status()
            .unwrap()
            .success()
        {
            return;
        }
        let dir = TempDir::new().unwrap();
        let root = dir.path().join("rootfs");
        for d in ["bin", "proc", "sys", "dev", "tmp", "workspace"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::copy("/bin/busybox", root.join("bin/busybox")).unwrap();
        let list = Command::new("/bin/busybox").arg("--list").output().unwrap();
        for applet in String::from_utf8_lossy(&list.stdout).lines() {
            if applet != "busybox" {
                std::os::unix::fs::symlink("busybox", root.join("bin").join(applet)).unwrap();
            }
        }
        let tar = dir.path().join("rootfs.tar");
        assert!(
            Command::new("tar")
                .arg("-C")
                .arg(&root)
                .arg("-cf")
                .arg(&tar)
                .arg(".")
                .status()
                .unwrap()
                .success()
        );
        let out = podman()
            .args(["import", "--change", "ENV PATH=/bin"])
            .arg(&tar)
            .arg(NAME)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "podman import: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
    NAME
}

/// A containers.conf for the podman tests (cgroupfs: no systemd here), in `dir`.
pub fn podman_conf(dir: &Path) -> PathBuf {
    let conf = dir.join("containers.conf");
    std::fs::write(
        &conf,
        "[containers]\ndefault_ulimits = []\n[engine]\ncgroup_manager = \"cgroupfs\"\n",
    )
    .unwrap();
    conf
}

/// An sshd on loopback for the ssh backend's tests (root logs in with `key`).
pub struct Sshd {
    child: std::process::Child,
    _dir: TempDir,
    /// The user's private key.
    pub key: PathBuf,
    /// The port it listens on (127.0.0.1).
    pub port: u16,
}

impl Sshd {
    /// Terminal settings that run commands on this sshd as root, in `cwd`.
    pub fn terminal_config(&self, cwd: &Path) -> hermetic_terminal::TerminalConfig {
        hermetic_terminal::TerminalConfig {
            cwd: Some(cwd.to_path_buf()),
            ..hermetic_terminal::TerminalConfig::default()
        }
        .using(
            "ssh",
            &hermetic_terminal::SshConfig {
                host: "127.0.0.1".into(),
                user: Some("root".into()),
                port: self.port,
                identity_file: Some(self.key.clone()),
                known_hosts_file: Some("/dev/null".into()),
                strict_host_key_checking: "no".into(),
                ..hermetic_terminal::SshConfig::default()
            },
        )
        .unwrap()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts an sshd on a free loopback port.
pub fn start_sshd() -> Sshd {
    start_sshd_with(&[])
}

/// Starts an sshd on a free loopback port with more options (`-o NAME=VALUE` pairs).
pub fn start_sshd_with(options: &[&str]) -> Sshd {
    require("/usr/sbin/sshd", "openssh-server");
    require("ssh-keygen", "openssh-client");
    let dir = TempDir::new().unwrap();
    let keygen = |path: &Path| {
        assert!(
            Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(path)
                .status()
                .unwrap()
                .success()
        );
    };
    let host_key = dir.path().join("host_key");
    let user_key = dir.path().join("user_key");
    keygen(&host_key);
    keygen(&user_key);
    let auth = dir.path().join("authorized_keys");
    std::fs::copy(user_key.with_extension("pub"), &auth).unwrap();
    std::fs::create_dir_all("/run/sshd").unwrap();
    let port = crate::net::free_port();
    let child = Command::new("/usr/sbin/sshd")
        .args(["-D", "-e", "-f", "/dev/null", "-h"])
        .arg(&host_key)
        .args(["-p", &port.to_string(), "-o", "ListenAddress=127.0.0.1"])
        .arg(format!("-oAuthorizedKeysFile={}", auth.display()))
        .arg(format!("-oPidFile={}", dir.path().join("pid").display()))
        .args([
            "-o",
            "StrictModes=no",
            "-o",
            "PasswordAuthentication=no",
            "-o",
            "MaxSessions=50",
            "-o",
            "MaxStartups=50",
        ])
        .args(options)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    eventually("sshd listening", Duration::from_secs(10), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    Sshd {
        child,
        _dir: dir,
        key: user_key,
        port,
    }
}

/// Terminal settings that run commands under gVisor (`runsc`, ptrace platform) with
/// runsc's state in `state_dir`, where [`gvisor_seen`] and [`gvisor_leftovers`] look.
pub fn gvisor_config(state_dir: &Path) -> hermetic_terminal::TerminalConfig {
    require("runsc", "runsc");
    hermetic_terminal::TerminalConfig::default()
        .using(
            "gvisor",
            &hermetic_terminal::GvisorConfig {
                state_dir: Some(state_dir.to_path_buf()),
                ..hermetic_terminal::GvisorConfig::default()
            },
        )
        .unwrap()
}

/// The sandboxes of the gVisor backends under `state_dir` that runsc has state for:
/// (runsc's `--root`, container id).
fn gvisor_sandboxes(state_dir: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    for host in std::fs::read_dir(state_dir).into_iter().flatten().flatten() {
        for bundle in std::fs::read_dir(host.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let id = bundle.file_name().to_string_lossy().into_owned();
            let root = bundle.path().join("state");
            if id.starts_with("__HERMETIC_") && root.is_dir() {
                found.push((root, id));
            }
        }
    }
    found
}

/// Whether a process whose command line contains `token` runs inside one of the
/// gVisor sandboxes under `state_dir`. Their processes are not the host's (the host
/// sees only the Sentry), so this asks each sandbox: `runsc exec` of a `cat` of its
/// own `/proc`.
pub fn gvisor_seen(state_dir: &Path, token: &str) -> bool {
    gvisor_sandboxes(state_dir).iter().any(|(root, id)| {
        let out = Command::new("runsc")
            .arg(format!("--root={}", root.display()))
            .args(["exec", id, "sh", "-c"])
            .arg("cat /proc/[0-9]*/cmdline | tr '\\000' ' '")
            .output();
        out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(token))
    })
}

/// What the gVisor backends under `state_dir` left behind: bundle directories, and
/// host processes (runsc, its gofer, a Sentry) naming the state directory. Empty when
/// every command and session was reaped.
pub fn gvisor_leftovers(state_dir: &Path) -> Vec<String> {
    let mut left = Vec::new();
    for host in std::fs::read_dir(state_dir).into_iter().flatten().flatten() {
        for entry in std::fs::read_dir(host.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("__HERMETIC_") {
                left.push(entry.path().display().to_string());
            }
        }
    }
    let needle = state_dir.display().to_string();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(&needle) && !cmdline.contains("cmdline") {
            left.push(format!(
                "process {}: {cmdline}",
                e.file_name().to_string_lossy()
            ));
        }
    }
    left
}

/// The host pids of the gVisor processes under `state_dir` (runsc, gofers, Sentries).
pub fn gvisor_host_pids(state_dir: &Path) -> Vec<String> {
    let needle = state_dir.display().to_string();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline)
                .replace('\0', " ")
                .contains(&needle)
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|p| p.bytes().all(|b| b.is_ascii_digit()))
        .collect()
}

/// The live processes whose command line contains `token`, as `PID: CMDLINE` (for
/// failure messages).
pub fn processes_with(token: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            (cmdline.contains(token) && !cmdline.contains("cmdline"))
                .then(|| format!("{}: {cmdline}", e.file_name().to_string_lossy()))
        })
        .collect()
}

/// The podman settings of the terminal suites: the busybox image, runc, `workspace`
/// mounted as the container's workspace (`conf` from [`podman_conf`]).
pub fn podman_terminal(conf: &Path, workspace: &Path) -> hermetic_terminal::TerminalConfig {
    require("podman", "podman");
    require("runc", "runc");
    require("/bin/busybox", "busybox-static");
    hermetic_terminal::TerminalConfig::default()
        .using(
            "docker",
            &hermetic_terminal::DockerConfig {
                program: "podman".into(),
                global_args: vec!["--runtime".into(), "runc".into()],
                cli_env: [("CONTAINERS_CONF".to_owned(), conf.display().to_string())].into(),
                image: busybox_image(conf).into(),
                memory: "256m".into(),
                pids_limit: 64,
                workspace: Some(workspace.to_path_buf()),
                ..hermetic_terminal::DockerConfig::default()
            },
        )
        .expect("the podman settings are valid")
}
