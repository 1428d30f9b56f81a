//! The walls of the terminal's host backends, tried from inside: what a tenant's
//! `bwrap` or `gvisor` command can read, write and connect to (each probe succeeds on
//! the host itself, so a failure inside is the wall's), and a tenant directory swapped
//! for a symlink, which must redirect neither backend's writable bind nor `local`'s
//! start. The same suite runs on both sandboxes (`bwrap_…` and `gvisor_…` tests).
//!
//! A missing `bwrap` or `runsc` is a failure with what to install, never a skip.
use hermetic::{CallOptions, Registry};
use hermetic_tests::backends::require;
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
    hermetic_tests::policy_registry(root, &policy, true)
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

#[test]
fn gvisor_commands_run_on_gvisor_s_kernel_and_leave_no_setuid_file() {
    let root = outside_tmp();
    let root_path = root.path().canonicalize().unwrap();
    let registry = two_tenants("gvisor", &root_path, "");
    // gVisor's kernel answers, not the host's.
    let out = ok(&sh(&registry, "acme", "dmesg | head -n 1"));
    assert!(out.contains("gVisor"), "{out}");
    // hermetic runs as root here: a setuid bit on a file the command made would be a
    // setuid-root file on the host (gVisor's gofer writes the workspace as that user).
    let r = sh(
        &registry,
        "acme",
        "cp /usr/bin/true t; chmod u+s t; chmod 4755 t; chmod g+s t; \
         install -m 4755 /usr/bin/true inst; mknod node c 1 3; true",
    );
    assert_eq!(r["exit_code"], 0, "{r}");
    use std::os::unix::fs::PermissionsExt;
    for name in ["t", "inst"] {
        let path = root_path.join("tenants/acme").join(name);
        let Ok(meta) = std::fs::metadata(&path) else {
            assert_eq!(name, "inst", "{r}");
            continue; // install refused to make it at all
        };
        let mode = meta.permissions().mode();
        assert_eq!(mode & 0o6000, 0, "{name} is {mode:o} on the host: {r}");
    }
    assert!(
        !root_path.join("tenants/acme/node").exists(),
        "a device node: {r}"
    );
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
    let registry = hermetic_tests::policy_registry(&root_path, policy, true);
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
