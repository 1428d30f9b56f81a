//! The walls of the terminal's host backends, tried from inside: what a tenant's
//! `bwrap` or `gvisor` command can read, write and connect to (each probe succeeds on
//! the host itself, so a failure inside is the wall's), and a tenant directory swapped
//! for a symlink, which must redirect neither backend's writable bind nor `local`'s
//! start. The same suite runs on both sandboxes (`bwrap_…` and `gvisor_…` tests).
//!
//! A missing `bwrap` or `runsc` is a failure with what to install, never a skip.
use hermetic::{CallOptions, Registry};
use hermetic_test_support::backends::require;
use serde_json::{Value, json};
use std::path::Path;
use tempfile::TempDir;

/// A directory outside `/tmp` (the sandbox's `/tmp` is private anyway, so files under
/// the host's would be out of sight for the wrong reason).
fn outside_tmp() -> TempDir {
    TempDir::new_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// Fails, naming the package, when `backend`'s program is not installed.
fn require_backend(backend: &str) {
    match backend {
        "bwrap" => require("bwrap", "bubblewrap"),
        "gvisor" => require("runsc", "runsc"),
        other => panic!("no walls suite for {other}"),
    }
}

/// The backend's own settings of these tests (gVisor's state beside the policy).
fn backend_settings(backend: &str, root: &Path) -> String {
    match backend {
        "gvisor" => {
            let state = root.join("gvisor-state");
            std::fs::create_dir(&state).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
            format!("state_dir = \"{}\"\n", state.display())
        }
        _ => String::new(),
    }
}

/// Two tenants, `acme` and `globex`, on `backend` (a sandbox of this host) with
/// `[terminal.BACKEND] workspace = "tenants"`, a secrets file and the policy beside it
/// (in `root`, not in the workspace).
fn two_tenants(backend: &str, root: &Path, extra: &str) -> Registry {
    require_backend(backend);
    std::fs::write(
        root.join("secrets.toml"),
        "API_TOKEN = \"hunter2-secret\"\n",
    )
    .unwrap();
    let policy = format!(
        r#"
[mounts.workspace]
path = "tenants"
access = "rw"

[tools.terminal]
terminal = true
[tools.process]
terminal = true

[secrets]
file = "secrets.toml"

[tenants.acme]
[tenants.globex]

[terminal]
backend = "{backend}"
[terminal.approval]
mode = "off"
[terminal.{backend}]
workspace = "tenants"
{settings}{extra}
"#,
        settings = backend_settings(backend, root),
    );
    std::fs::create_dir_all(root.join("tenants")).unwrap();
    hermetic_test_support::registry::policy_registry(root, &policy, true)
}

fn sh(registry: &Registry, tenant: &str, command: &str) -> Value {
    let out = registry.call(
        "terminal",
        &json!({ "command": command }).to_string(),
        &CallOptions::default()
            .with_tenant(tenant)
            .with_session("s1"),
    );
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

fn ok(r: &Value) -> String {
    assert_eq!(r["exit_code"], 0, "{r}");
    r["output"].as_str().unwrap_or_default().to_owned()
}

/// `command` under bash on the host itself, as the host user, with the environment a
/// sandboxed command gets: the twin that shows a probe can succeed.
fn on_host(command: &str, cwd: &Path) -> std::process::Output {
    std::process::Command::new("bash")
        .args(["-c", command])
        .current_dir(cwd)
        .output()
        .unwrap()
}

/// Generates one `#[test]` per sandbox backend for each suite function.
macro_rules! on_each_sandbox {
    ($($suite:ident),* $(,)?) => {
        mod bwrap {
            $(#[test] fn $suite() { super::$suite("bwrap"); })*
        }
        mod gvisor {
            $(#[test] fn $suite() { super::$suite("gvisor"); })*
        }
    };
}

on_each_sandbox!(
    a_tenant_sees_neither_the_host_s_files_nor_another_tenant_s,
    a_tenant_cannot_connect_to_the_host_s_sockets,
    a_tenant_cannot_reach_the_host_s_loopback_services,
    a_normal_build_still_works,
    a_swapped_tenant_directory_does_not_redirect_the_sandbox,
    the_operator_can_hide_more_and_show_more,
    no_command_leaves_a_setuid_file_or_a_device,
);

fn a_tenant_sees_neither_the_host_s_files_nor_another_tenant_s(backend: &str) {
    let root = outside_tmp();
    let root_path = root.path().canonicalize().unwrap();
    let registry = two_tenants(backend, &root_path, "");
    let tenants = root_path.join("tenants");

    // Each tenant writes in its own directory, which is where its commands start.
    let here = ok(&sh(&registry, "acme", "echo acme-data > mine.txt && pwd"));
    assert_eq!(here, tenants.join("acme").display().to_string());
    assert_eq!(
        std::fs::read_to_string(tenants.join("acme/mine.txt")).unwrap(),
        "acme-data\n"
    );
    ok(&sh(&registry, "globex", "echo globex-data > theirs.txt"));

    let policy = root_path.join("policy.toml");
    let secrets = root_path.join("secrets.toml");
    let globex = tenants.join("globex/theirs.txt");
    // Probes that list with `find` and `test`, not `ls DIR`: Debian's runsc (2022-12)
    // answers `ls DIR` with EINVAL whatever DIR holds, which would pass for the wrong
    // reason.
    for (what, command) in [
        ("the policy", format!("cat {}", policy.display())),
        ("the secrets file", format!("cat {}", secrets.display())),
        ("another tenant's file", format!("cat {}", globex.display())),
        (
            "another tenant's directory",
            format!(
                "find {} -mindepth 1 | grep -q .",
                tenants.join("globex").display()
            ),
        ),
        (
            "the host user's home (~/.ssh, cloud credentials)",
            "find /root \"$HOME\" -mindepth 1 | grep -q .".to_owned(),
        ),
        (
            "password hashes",
            "cat /etc/shadow | grep -q root".to_owned(),
        ),
        (
            "the host's ssh keys",
            "find /etc/ssh -mindepth 1 | grep -q .".to_owned(),
        ),
        ("the host's /var", "test -e /var/lib/dpkg/status".to_owned()),
        (
            "the host's /run",
            "find /run -mindepth 1 | grep -q .".to_owned(),
        ),
        (
            "other directories of the host",
            "find /srv /opt /mnt -maxdepth 0 2>/dev/null | grep -q .".to_owned(),
        ),
        (
            "files beside the workspace's path (this repository)",
            format!("cat {}/Cargo.toml", env!("CARGO_MANIFEST_DIR")),
        ),
    ] {
        let twin = on_host(&command, &tenants.join("acme"));
        assert!(
            twin.status.success(),
            "{what}: the probe fails on the host too: {twin:?}"
        );
        let r = sh(&registry, "acme", &command);
        assert_ne!(r["exit_code"], 0, "{backend}: {what} was readable: {r}");
        let out = r["output"].as_str().unwrap_or_default();
        assert!(
            !out.contains("hunter2") && !out.contains("globex-data") && !out.contains("[tools"),
            "{backend}: {what}: {r}"
        );
    }
    // The other tenant's file is untouched by anything acme could do.
    let r = sh(&registry, "acme", &format!("echo x > {}", globex.display()));
    assert_ne!(r["exit_code"], 0, "{backend}: {r}");
    assert_eq!(std::fs::read_to_string(&globex).unwrap(), "globex-data\n");
}

fn a_tenant_cannot_connect_to_the_host_s_sockets(backend: &str) {
    let root = outside_tmp();
    let root_path = root.path().canonicalize().unwrap();
    let registry = two_tenants(backend, &root_path, "");
    // A Unix socket of the host (as /run/user/UID/bus or docker.sock are), on a path
    // and in the abstract namespace, both listening in this process.
    let sock_path = root_path.join("host.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock_path).unwrap();
    let abstract_name = format!("hermetic-test-{backend}-{}", std::process::id());
    let addr =
        <std::os::unix::net::SocketAddr as std::os::linux::net::SocketAddrExt>::from_abstract_name(
            abstract_name.as_bytes(),
        )
        .unwrap();
    let _abstract = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
    let connect = |target: &str| {
        format!(
            "python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1].replace(\"@\", \"\\0\")); print(\"connected\")' {target}"
        )
    };
    for target in [sock_path.display().to_string(), format!("@{abstract_name}")] {
        // The same program connects from the host, so a refusal inside is the sandbox's.
        let twin = on_host(&connect(&target), &root_path);
        assert_eq!(
            String::from_utf8_lossy(&twin.stdout).trim(),
            "connected",
            "{twin:?}"
        );
        let r = sh(&registry, "acme", &connect(&target));
        assert_ne!(r["exit_code"], 0, "{backend}: connected to {target}: {r}");
        assert!(
            !r["output"].as_str().unwrap_or("").contains("connected"),
            "{backend}: {r}"
        );
    }
}

fn a_tenant_cannot_reach_the_host_s_loopback_services(backend: &str) {
    let root = outside_tmp();
    let root_path = root.path().canonicalize().unwrap();
    let registry = two_tenants(backend, &root_path, "");
    // A service of the host on loopback (a database, an admin port, hermetic's own).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!(
        "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), timeout=5); print(\"connected\")'"
    );
    let twin = on_host(&connect, &root_path);
    assert_eq!(
        String::from_utf8_lossy(&twin.stdout).trim(),
        "connected",
        "{twin:?}"
    );
    let r = sh(&registry, "acme", &connect);
    assert_ne!(
        r["exit_code"], 0,
        "{backend}: reached the host's port {port}: {r}"
    );
    assert!(
        !r["output"].as_str().unwrap_or("").contains("connected"),
        "{r}"
    );
}

fn a_normal_build_still_works(backend: &str) {
    let root = outside_tmp();
    let root_path = root.path().canonicalize().unwrap();
    let registry = two_tenants(backend, &root_path, "");
    let out = ok(&sh(
        &registry,
        "acme",
        "printf 'int main(void){return 0;}' > m.c && cc -o m m.c && ./m && \
         python3 -c 'print(6*7)' && git init -q repo && git -C repo status --short && \
         echo built",
    ));
    assert!(
        out.contains("42") && out.ends_with("built"),
        "{backend}: {out}"
    );
}

fn a_swapped_tenant_directory_does_not_redirect_the_sandbox(backend: &str) {
    let root = outside_tmp();
    let root_path = root.path().canonicalize().unwrap();
    let registry = two_tenants(backend, &root_path, "");
    let tenants = root_path.join("tenants");
    ok(&sh(&registry, "acme", "touch first"));
    // Someone who can write in tenants/ (another tenant's tool, a mount) swaps acme's
    // directory for a symlink to a directory of theirs.
    let elsewhere = root_path.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("bait"), "bait").unwrap();
    std::fs::rename(tenants.join("acme"), root_path.join("acme.moved")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, tenants.join("acme")).unwrap();
    let r = sh(&registry, "acme", "ls; echo planted > planted");
    assert!(
        !elsewhere.join("planted").exists(),
        "{backend}: the command wrote through the symlink: {r}"
    );
    assert!(!r["output"].as_str().unwrap_or("").contains("bait"), "{r}");
    assert!(
        r.to_string().contains("symlink"),
        "the refusal says why: {r}"
    );
}

fn the_operator_can_hide_more_and_show_more(backend: &str) {
    let root = outside_tmp();
    let root_path = root.path().canonicalize().unwrap();
    let shown = root_path.join("toolchain");
    std::fs::create_dir(&shown).unwrap();
    std::fs::write(shown.join("tool"), "tool-bytes").unwrap();
    let registry = two_tenants(
        backend,
        &root_path,
        &format!(
            "read_only = [\"{}\"]\nhide = [\"/etc/hostname\", \"/etc/apt\"]",
            shown.display()
        ),
    );
    let out = ok(&sh(
        &registry,
        "acme",
        &format!("cat {}/tool", shown.display()),
    ));
    assert_eq!(out, "tool-bytes");
    let r = sh(&registry, "acme", &format!("touch {}/x", shown.display()));
    assert_ne!(r["exit_code"], 0, "{backend}: read-only: {r}");
    assert_eq!(ok(&sh(&registry, "acme", "wc -c < /etc/hostname")), "0");
    // The twin: the host's /etc/apt is not empty.
    assert!(std::fs::read_dir("/etc/apt").unwrap().next().is_some());
    assert_eq!(
        ok(&sh(&registry, "acme", "find /etc/apt -mindepth 1 | wc -l")),
        "0",
        "{backend}"
    );
    // What is not hidden of /etc is there.
    assert!(ok(&sh(&registry, "acme", "cat /etc/passwd")).contains("root:"));
}

/// The ways to a setuid or setgid file the test knows through system calls, in
/// Python, and a file capability (`cap_setuid+ep`: root for whoever runs the file,
/// refused since every capability is dropped): each prints `NAME=ERRNO` (0: it
/// worked). Raw calls by x86-64's numbers
/// where libc has no wrapper or uses another call (`creat` is `openat` in glibc);
/// 452 (`fchmodat2`), 437 (`openat2`) and 425 (`io_uring_setup`) are the same
/// everywhere.
const SETUID_CALLS: &str = r#"python3 - <<'EOF'
import ctypes, os, platform, struct
libc = ctypes.CDLL(None, use_errno=True)
SUID, SGID = 0o4755, 0o2755
def errno_of(f):
    try:
        f()
        return 0
    except OSError as e:
        return e.errno
def raw(nr, *args):
    return 0 if libc.syscall(ctypes.c_long(nr), *args) >= 0 else ctypes.get_errno()
def made(name):
    open(name, "w").close()
    return name.encode()
def link_tmpfile():
    fd = os.open(".", os.O_TMPFILE | os.O_WRONLY, SUID)
    os.link(f"/proc/self/fd/{fd}", "c_tmpfile")
forms = {
    "open O_CREAT 04755": lambda: errno_of(lambda: os.open("c_open", os.O_CREAT | os.O_WRONLY, SUID)),
    "open O_CREAT 02755": lambda: errno_of(lambda: os.open("c_open_g", os.O_CREAT | os.O_WRONLY, SGID)),
    "O_TMPFILE 04755 then link": lambda: errno_of(link_tmpfile),
    "mknod S_IFREG|04755": lambda: errno_of(lambda: os.mknod("c_mknod", 0o100000 | SUID)),
    "fchmod 04755": lambda: errno_of(lambda: os.fchmod(os.open("c_fchmod", os.O_CREAT | os.O_WRONLY, 0o755), SUID)),
    "fchmodat2 02755": lambda: raw(452, -100, made("c_fchmodat2"), SGID, 0),
    "openat2 O_CREAT 04755": lambda: raw(437, -100, b"c_openat2", (ctypes.c_uint64 * 3)(os.O_CREAT | os.O_WRONLY, SUID, 0), 24),
    "io_uring_setup": lambda: raw(425, 4, (ctypes.c_uint8 * 120)()),
    "file capability cap_setuid+ep": lambda: errno_of(lambda: os.setxattr(made("c_cap"), "security.capability", struct.pack("<5I", 0x02000001, 1 << 7, 0, 0, 0))),
}
if platform.machine() == "x86_64":
    forms["chmod 04755"] = lambda: raw(90, made("c_chmod"), SUID)
    forms["creat 04755"] = lambda: raw(85, b"c_creat", SUID)
    forms["x32 chmod 04755"] = lambda: raw(0x40000000 | 90, made("c_x32"), SUID)
for name, form in forms.items():
    print(f"{name}={form()}")
EOF"#;

/// `NAME=ERRNO` lines as pairs.
fn errnos(output: &str) -> Vec<(String, i64)> {
    output
        .lines()
        .filter_map(|l| l.rsplit_once('='))
        .map(|(name, errno)| (name.to_owned(), errno.trim().parse().unwrap()))
        .collect()
}

/// Files below `dir` (not following symlinks) with the setuid or setgid bit, and
/// device nodes.
fn setuid_files_and_devices(dir: &Path) -> Vec<String> {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let kind = meta.file_type();
        if meta.permissions().mode() & 0o6000 != 0
            || kind.is_char_device()
            || kind.is_block_device()
        {
            found.push(format!(
                "{} {:o}",
                path.display(),
                meta.permissions().mode()
            ));
        }
        if kind.is_dir() {
            found.extend(setuid_files_and_devices(&path));
        }
    }
    found
}

/// hermetic runs as root here (as in CI and many containers): a file a command makes
/// in the workspace is root's on the host, and a setuid bit on it is a root shell for
/// anyone there (`nosuid` inside the sandbox does not reach the host's own mount).
/// Every way to set the bit is refused with a permission error; ordinary modes work.
fn no_command_leaves_a_setuid_file_or_a_device(backend: &str) {
    let root = outside_tmp();
    let root_path = root.path().canonicalize().unwrap();
    let registry = two_tenants(backend, &root_path, "");
    let acme = root_path.join("tenants/acme");
    // The twin for `cp -p`: the host has a setuid program to copy.
    let setuid_program = "find /usr/bin -perm -4000 -type f | head -n 1";
    let twin = on_host(setuid_program, &root_path);
    assert!(!twin.stdout.is_empty(), "no setuid program on the host");
    for (what, command) in [
        ("chmod u+s", "cp /usr/bin/true t1 && chmod u+s t1"),
        ("chmod 4755", "cp /usr/bin/true t2 && chmod 4755 t2"),
        ("chmod g+s", "cp /usr/bin/true t3 && chmod g+s t3"),
        ("a setgid directory", "mkdir d4 && chmod 2775 d4"),
        ("install -m 4755", "install -m 4755 /usr/bin/true t5"),
        (
            "cp -p of a setuid program",
            format!("cp -p \"$({setuid_program})\" t6").as_str(),
        ),
        (
            "tar -xp of a setuid member",
            "cp /usr/bin/true t7 && tar --mode=4755 -cf t7.tar t7 && mkdir x7 && \
             tar -xpf t7.tar -C x7",
        ),
        ("a character device", "mknod c8 c 1 3"),
        ("a block device", "mknod b9 b 7 0"),
    ] {
        let r = sh(&registry, "acme", command);
        assert_ne!(r["exit_code"], 0, "{backend}: {what}: {r}");
        assert!(
            r["output"]
                .as_str()
                .unwrap_or_default()
                .contains("Operation not permitted"),
            "{backend}: {what}: not a permission error: {r}"
        );
    }
    // The same calls by hand; each works on the host itself (the twin, in a scratch
    // directory), and is refused inside. On bwrap the host's kernel answers (EPERM:
    // refused by the filter); gVisor's own kernel may not have a call (ENOSYS).
    // (io_uring, whose OPENAT takes a mode, is refused whole.)
    let scratch = root_path.join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let twin = on_host(SETUID_CALLS, &scratch);
    let on_host_errnos = errnos(&String::from_utf8_lossy(&twin.stdout));
    assert!(on_host_errnos.len() >= 8, "{twin:?}");
    let inside = ok(&sh(&registry, "acme", SETUID_CALLS));
    let inside_errnos = errnos(&inside);
    assert_eq!(inside_errnos.len(), on_host_errnos.len(), "{inside}");
    for ((name, host), (_, errno)) in on_host_errnos.iter().zip(&inside_errnos) {
        match (backend, host) {
            // The host's kernel has it: refused by the filter.
            ("bwrap", 0) => assert_eq!(*errno, 1, "{backend}: {name}: {inside}"),
            // x32 on a kernel built without it: ENOSYS there and here.
            ("bwrap", _) => assert_ne!(*errno, 0, "{backend}: {name}: {inside}"),
            // gVisor's own io_uring runs NOP and READV only: no mode to set there.
            ("gvisor", _) if name == "io_uring_setup" => {}
            // EPERM, ENOSYS, or EOPNOTSUPP (gVisor keeps no security.* attribute).
            _ => assert!(
                [1, 38, 95].contains(errno),
                "{backend}: {name}: {errno}: {inside}"
            ),
        }
    }
    // Nothing of the kind is left, whichever way was tried.
    assert_eq!(
        setuid_files_and_devices(&acme),
        Vec::<String>::new(),
        "{backend}"
    );
    // Ordinary modes still work: executable, private, a sticky shared directory, an
    // installed and a copied program. (Read on the host: Debian's runsc answers
    // `stat` with EINVAL.)
    ok(&sh(
        &registry,
        "acme",
        "touch x && chmod +x x && touch f && chmod 600 f && mkdir shared && \
         chmod 1777 shared && install -m 750 /usr/bin/true inst && cp -p inst inst2",
    ));
    use std::os::unix::fs::PermissionsExt;
    let modes: Vec<(&str, u32)> = ["x", "f", "shared", "inst", "inst2"]
        .into_iter()
        .map(|name| {
            let meta = std::fs::metadata(acme.join(name)).unwrap();
            (name, meta.permissions().mode() & 0o7777)
        })
        .collect();
    assert_eq!(
        modes,
        [
            ("x", 0o755),
            ("f", 0o600),
            ("shared", 0o1777),
            ("inst", 0o750),
            ("inst2", 0o750)
        ],
        "{backend}"
    );
}

/// gVisor's filter names `openat2` and `fchmodat2` (whose modes a filter cannot read,
/// or that would need rules of their own) as refused, as bwrap's and docker's do, and
/// runsc still starts with them named. Debian's runsc (2022-12) knows neither name
/// nor has either call (ENOSYS, the rule unused); a newer one refuses them (EPERM).
#[test]
fn gvisor_refuses_openat2_and_fchmodat2() {
    let root = outside_tmp();
    let root_path = root.path().canonicalize().unwrap();
    let registry = two_tenants("gvisor", &root_path, "");
    let out = ok(&sh(
        &registry,
        "acme",
        r#"python3 - <<'EOF'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def raw(nr, *args):
    return 0 if libc.syscall(ctypes.c_long(nr), *args) >= 0 else ctypes.get_errno()
open("plain", "w").close()
print(f"fchmodat2={raw(452, -100, b'plain', 0o644, 0)}")
how = (ctypes.c_uint64 * 3)(os.O_RDONLY, 0, 0)
print(f"openat2={raw(437, -100, b'plain', how, 24)}")
print(f"openat={raw(257, -100, b'plain', os.O_RDONLY, 0)}")
EOF"#,
    ));
    let found = errnos(&out);
    let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["fchmodat2", "openat2", "openat"], "{out}");
    for (name, errno) in &found[..2] {
        assert!([1, 38].contains(errno), "{name}: {errno}: {out}");
    }
    assert_eq!(found[2].1, 0, "an ordinary open works: {out}");
}

#[test]
fn gvisor_commands_run_on_gvisor_s_kernel() {
    let root = outside_tmp();
    let root_path = root.path().canonicalize().unwrap();
    let registry = two_tenants("gvisor", &root_path, "");
    // gVisor's kernel answers, not the host's (its walls, setuid files included,
    // are the suite's above).
    let out = ok(&sh(&registry, "acme", "dmesg | head -n 1"));
    assert!(out.contains("gVisor"), "{out}");
}

#[test]
fn a_swapped_tenant_directory_does_not_redirect_local_commands() {
    let root = outside_tmp();
    let root_path = root.path().canonicalize().unwrap();
    std::fs::create_dir_all(root_path.join("tenants/acme")).unwrap();
    let policy = r#"
[mounts.workspace]
path = "tenants"
access = "rw"
[tools.terminal]
terminal = true
[tenants.acme.mounts.workspace]
subdir = "acme"
access = "rw"
[terminal]
backend = "local"
[terminal.approval]
mode = "off"
"#;
    let registry = hermetic_test_support::registry::policy_registry(&root_path, policy, true);
    let tenants = root_path.join("tenants");
    assert_eq!(
        ok(&sh(&registry, "acme", "pwd")),
        tenants.join("acme").display().to_string()
    );
    let elsewhere = root_path.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::rename(tenants.join("acme"), root_path.join("acme.moved")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, tenants.join("acme")).unwrap();
    // A new session starts where the tenant's directory is, not where the link points.
    let out = registry.call(
        "terminal",
        &json!({ "command": "echo planted > planted" }).to_string(),
        &CallOptions::default()
            .with_tenant("acme")
            .with_session("s2"),
    );
    assert!(!elsewhere.join("planted").exists(), "{out}");
    assert!(out.contains("symlink"), "the refusal says why: {out}");
}
