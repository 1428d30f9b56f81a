//! The walls of the terminal's host backends, tried from inside: what a tenant's
//! `bwrap` command can read, write and connect to (each would succeed against a
//! `--ro-bind / /` sandbox, the host shown whole), and a tenant directory swapped for
//! a symlink, which must redirect neither `bwrap`'s writable bind nor `local`'s start.
//!
//! A missing `bwrap` is a failure with what to install, never a skip.
use hermetic::{CallOptions, Registry};
use serde_json::{Value, json};
use std::path::Path;
use tempfile::TempDir;

/// A directory outside `/tmp` (the sandbox's `/tmp` is private anyway, so files under
/// the host's would be out of sight for the wrong reason).
fn outside_tmp() -> TempDir {
    TempDir::new_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn require_bwrap() {
    assert!(
        Path::new("/usr/bin/bwrap").is_file(),
        "bwrap is not installed: this suite needs the Debian package bubblewrap (.ci/run installs it)"
    );
}

/// Two tenants, `acme` and `globex`, on the bwrap backend with `[terminal.bwrap]
/// workspace = "tenants"`, a secrets file and the policy beside it (in `root`, not in
/// the workspace).
fn two_tenants(root: &Path, extra: &str) -> Registry {
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
backend = "bwrap"
[terminal.approval]
mode = "off"
[terminal.bwrap]
workspace = "tenants"
{extra}
"#
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

#[test]
fn a_tenant_sees_neither_the_host_s_files_nor_another_tenant_s() {
    require_bwrap();
    let root = outside_tmp();
    let root_path = root.path().canonicalize().unwrap();
    let registry = two_tenants(&root_path, "");
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
    for (what, command) in [
        ("the policy", format!("cat {}", policy.display())),
        ("the secrets file", format!("cat {}", secrets.display())),
        ("another tenant's file", format!("cat {}", globex.display())),
        ("another tenant's directory", format!("ls {}", tenants.join("globex").display())),
        ("the host user's ~/.ssh", "ls -A /root/.ssh \"$HOME\"/.ssh 2>&1; ls -A \"$HOME\" | grep -q . && echo home-not-empty; exit 1".to_owned()),
        ("password hashes", "cat /etc/shadow | grep -q root".to_owned()),
        ("the host's ssh keys", "ls /etc/ssh | grep -q .".to_owned()),
        ("the host's /var", "ls /var/lib/dpkg/status".to_owned()),
        ("the host's /run", "ls /run | grep -q .".to_owned()),
        ("other directories of the host", "ls /srv /opt /mnt 2>&1 | grep -qv 'No such file'".to_owned()),
        (
            "files beside the workspace's path (this repository)",
            format!("cat {}/Cargo.toml", env!("CARGO_MANIFEST_DIR")),
        ),
    ] {
        let r = sh(&registry, "acme", &command);
        assert_ne!(r["exit_code"], 0, "{what} was readable: {r}");
        let out = r["output"].as_str().unwrap_or_default();
        assert!(
            !out.contains("hunter2") && !out.contains("globex-data") && !out.contains("[tools"),
            "{what}: {r}"
        );
    }
    // The other tenant's file is untouched by anything acme could do.
    let r = sh(&registry, "acme", &format!("echo x > {}", globex.display()));
    assert_ne!(r["exit_code"], 0, "{r}");
    assert_eq!(std::fs::read_to_string(&globex).unwrap(), "globex-data\n");
}

#[test]
fn a_tenant_cannot_connect_to_the_host_s_sockets() {
    require_bwrap();
    let root = outside_tmp();
    let root_path = root.path().canonicalize().unwrap();
    let registry = two_tenants(&root_path, "");
    // A Unix socket of the host (as /run/user/UID/bus or docker.sock are), on a path
    // and in the abstract namespace, both listening in this process.
    let sock_path = root_path.join("host.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock_path).unwrap();
    let abstract_name = format!("hermetic-test-{}", std::process::id());
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
    // The same program connects from the host, so a refusal inside is the sandbox's.
    let on_host = std::process::Command::new("python3")
        .args(["-c", "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1].replace('@', '\\0')); print('connected')"])
        .arg(format!("@{abstract_name}"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&on_host.stdout).trim(), "connected");
    for target in [sock_path.display().to_string(), format!("@{abstract_name}")] {
        let r = sh(&registry, "acme", &connect(&target));
        assert_ne!(r["exit_code"], 0, "connected to {target}: {r}");
        assert!(
            !r["output"].as_str().unwrap_or("").contains("connected"),
            "{r}"
        );
    }
}

#[test]
fn a_normal_build_still_works() {
    require_bwrap();
    let root = outside_tmp();
    let root_path = root.path().canonicalize().unwrap();
    let registry = two_tenants(&root_path, "");
    let out = ok(&sh(
        &registry,
        "acme",
        "printf 'int main(void){return 0;}' > m.c && cc -o m m.c && ./m && \
         python3 -c 'print(6*7)' && git init -q repo && git -C repo status --short && \
         echo built",
    ));
    assert!(out.contains("42") && out.ends_with("built"), "{out}");
}

#[test]
fn a_swapped_tenant_directory_does_not_redirect_the_sandbox() {
    require_bwrap();
    let root = outside_tmp();
    let root_path = root.path().canonicalize().unwrap();
    let registry = two_tenants(&root_path, "");
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
        "the command wrote through the symlink: {r}"
    );
    assert!(!r["output"].as_str().unwrap_or("").contains("bait"), "{r}");
    assert!(
        r.to_string().contains("symlink"),
        "the refusal says why: {r}"
    );
}

#[test]
fn the_operator_can_hide_more_and_show_more() {
    require_bwrap();
    let root = outside_tmp();
    let root_path = root.path().canonicalize().unwrap();
    let shown = root_path.join("toolchain");
    std::fs::create_dir(&shown).unwrap();
    std::fs::write(shown.join("tool"), "tool-bytes").unwrap();
    let registry = two_tenants(
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
    assert_ne!(r["exit_code"], 0, "read-only: {r}");
    assert_eq!(ok(&sh(&registry, "acme", "wc -c < /etc/hostname")), "0");
    assert_eq!(ok(&sh(&registry, "acme", "ls -A /etc/apt | wc -l")), "0");
    // What is not hidden of /etc is there.
    assert!(ok(&sh(&registry, "acme", "cat /etc/passwd")).contains("root:"));
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
