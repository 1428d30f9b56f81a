//! Ways out of the terminal's walls, tried with the real backends (podman + runc with
//! a busybox image built here, an sshd on loopback): a command must not leave
//! anything running past its timeout, its end or its session however it forks, must
//! not leave a setuid file on the host, and must not see another tenant's files.
//!
//! A missing backend program is a failure with what to install, never a skip: CI
//! (`.ci/run`) installs them all.
use hermetic::policy::TenantPolicy;
use hermetic::{CallOptions, OperatorPolicy, Registry, RegistryOptions};
use hermetic_terminal::{DockerConfig, TerminalConfig};
use hermetic_tests::backends::{
    alive, busybox_image, eventually, podman_conf, require, running, start_sshd,
};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;
use tempfile::TempDir;

/// A registry with the bundled tools over `workspace`, whose terminal uses `config`
/// for every tenant, with the tenants `acme` and `globex`.
fn registry(workspace: &Path, config: TerminalConfig) -> Registry {
    let mut policy = OperatorPolicy::with_workspace(workspace.to_path_buf());
    policy.terminal.default = config;
    for tenant in ["acme", "globex"] {
        policy
            .tenants
            .insert(tenant.into(), TenantPolicy::default());
    }
    let mut options = hermetic_terminal::attach(RegistryOptions::new(policy)).unwrap();
    options.engine = hermetic_tests::engine_config();
    let registry = Registry::new(options).unwrap();
    assert_eq!(registry.add_bundled(), vec![]);
    registry
}

fn as_tenant(tenant: &str, session: &str) -> CallOptions {
    CallOptions::default()
        .with_tenant(tenant)
        .with_session(session)
}

fn call(registry: &Registry, tool: &str, args: Value, options: &CallOptions) -> Value {
    let out = registry.call(tool, &args.to_string(), options);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

/// A token for `sleep` arguments no other test uses: `sleep 99999.<pid><n>` is
/// findable in /proc while it lives (and is a valid duration for busybox and GNU).
fn token(n: u32) -> String {
    format!("99999.{}{n}", std::process::id())
}

/// Every way out of a command's process tree the issue names, on one backend: after
/// a timeout, after a normal end, and after the session ends (background process),
/// nothing of the command may still run. `session` names the terminal session used
/// (the session-end check ends it).
fn nothing_survives(backend: &str, registry: &Registry, tenant: &str, session: &str) {
    let opts = as_tenant(tenant, session);
    // The escapes: the exit trap switched off and a double fork (the child reparents
    // away from the script), a new session (`setsid`: a new process group too), and a
    // plain background child.
    let escapes = |t: &str| {
        format!(
            "trap '' EXIT; (sleep {t}1 &); setsid sleep {t}2 & sleep {t}3 & (trap '' HUP TERM; exec sleep {t}4) &"
        )
    };
    let gone = |what: &str, t: &str| {
        eventually(
            &format!("{backend}: {what}"),
            Duration::from_secs(20),
            || (1..=4).all(|i| !alive(&format!("sleep {t}{i}"))),
        );
    };

    // A foreground command that times out.
    let t = token(1);
    let r = call(
        registry,
        "terminal",
        json!({"command": format!("{} sleep 1000", escapes(&t)), "timeout": 3}),
        &opts,
    );
    assert_eq!(r["exit_code"], 124, "{backend}: {r}");
    gone("what a timed-out command started ends with it", &t);

    // A foreground command that ends by itself.
    let t = token(2);
    let r = call(
        registry,
        "terminal",
        json!({"command": format!("{} echo done", escapes(&t))}),
        &opts,
    );
    assert_eq!(r["exit_code"], 0, "{backend}: {r}");
    assert_eq!(r["output"], "done", "{backend}: {r}");
    gone("what a finished command started ends with it", &t);

    // A background process that is killed.
    let t = token(3);
    let started = call(
        registry,
        "terminal",
        json!({"command": format!("{} sleep 1000", escapes(&t)), "background": true}),
        &opts,
    );
    let id = started["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{backend}: {started}"))
        .to_owned();
    eventually(
        &format!("{backend}: the background process starts its children"),
        Duration::from_secs(20),
        // The sleeps themselves, not the launcher naming them (see terminal.rs).
        || (1..=4).all(|i| running(&format!("sleep {t}{i}"))),
    );
    let killed = call(
        registry,
        "process",
        json!({"action": "kill", "session_id": id}),
        &opts,
    );
    assert_eq!(killed["status"], "killed", "{backend}: {killed}");
    gone("what a killed background process started ends with it", &t);

    // A background process still running when its session ends.
    let t = token(4);
    let started = call(
        registry,
        "terminal",
        json!({"command": format!("{} sleep 1000", escapes(&t)), "background": true}),
        &opts,
    );
    assert!(started["session_id"].is_string(), "{backend}: {started}");
    eventually(
        &format!("{backend}: the second background process starts its children"),
        Duration::from_secs(20),
        || (1..=4).all(|i| alive(&format!("sleep {t}{i}"))),
    );
    registry.terminal().unwrap().end_session(tenant, session);
    gone(
        "what a session's background process started ends with the session",
        &t,
    );
}

/// A command that prints a forged marker line (it can read the marker from its own
/// command line) cannot point the host's kill at another process: the kill finds the
/// command by its marker, never by a pid from the output.
fn a_forged_pid_line_steers_nothing(backend: &str, registry: &Registry, tenant: &str) {
    let opts = as_tenant(tenant, "forge");
    let t = token(5);
    // A bystander of the same tenant: a background process the forged line names.
    let bystander = call(
        registry,
        "terminal",
        json!({"command": format!("sleep {t}0"), "background": true}),
        &opts,
    );
    assert!(
        bystander["session_id"].is_string(),
        "{backend}: {bystander}"
    );
    eventually(
        &format!("{backend}: the bystander runs"),
        Duration::from_secs(20),
        || alive(&format!("sleep {t}0")),
    );
    // The bystander's pids as every pid namespace it is in sees it (NSpid): the host's
    // and, in a container, the container's. The forging command prints a marker line
    // for each, with every marker it can read from /proc (its own among them).
    let pids = bystander_pids(&format!("sleep {t}0"));
    assert!(!pids.is_empty(), "{backend}");
    let forge = format!(
        "for m in $(cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\000' '\\n' | grep -o '__HERMETIC_[0-9a-f]*__' | sort -u); do \
           for p in {}; do echo \"$m pid $p\"; done; done; sleep 1000",
        pids.join(" ")
    );
    let r = call(
        registry,
        "terminal",
        json!({"command": forge, "timeout": 3}),
        &opts,
    );
    assert_eq!(r["exit_code"], 124, "{backend}: {r}");
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        alive(&format!("sleep {t}0")),
        "{backend}: the forged pid line made the host kill another process"
    );
    registry.terminal().unwrap().end_session(tenant, "forge");
    eventually(
        &format!("{backend}: the bystander ends with its session"),
        Duration::from_secs(20),
        || !alive(&format!("sleep {t}0")),
    );
}

/// Every NSpid of the processes whose command line holds `token`, outermost first.
fn bystander_pids(token: &str) -> Vec<String> {
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if !cmdline.contains(token) || cmdline.contains("cmdline") {
            continue;
        }
        let status = std::fs::read_to_string(e.path().join("status")).unwrap_or_default();
        if let Some(line) = status.lines().find(|l| l.starts_with("NSpid:")) {
            pids.extend(line.split_whitespace().skip(1).map(str::to_owned));
        }
    }
    pids
}

// docker

/// The podman settings of these tests: the busybox image, runc, a workspace.
fn podman_config(conf: &Path, workspace: &Path) -> TerminalConfig {
    require("podman", "podman");
    require("runc", "runc");
    require("/bin/busybox", "busybox-static");
    TerminalConfig::default()
        .using(
            "docker",
            &DockerConfig {
                program: "podman".into(),
                global_args: vec!["--runtime".into(), "runc".into()],
                cli_env: [("CONTAINERS_CONF".to_owned(), conf.display().to_string())].into(),
                image: busybox_image(conf).into(),
                memory: "256m".into(),
                pids_limit: 64,
                workspace: Some(workspace.to_path_buf()),
                ..DockerConfig::default()
            },
        )
        .unwrap()
}

#[test]
fn docker_nothing_of_a_command_survives_its_timeout_end_or_session() {
    let conf_dir = TempDir::new().unwrap();
    let conf = podman_conf(conf_dir.path());
    let ws = TempDir::new().unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    let registry = registry(&ws_path, podman_config(&conf, &ws_path));
    nothing_survives("docker", &registry, "acme", "escape");
    a_forged_pid_line_steers_nothing("docker", &registry, "acme");
}

#[test]
fn docker_a_setuid_file_made_in_the_container_is_not_setuid_on_the_host() {
    let conf_dir = TempDir::new().unwrap();
    let conf = podman_conf(conf_dir.path());
    let ws = TempDir::new().unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    // The gate would ask about `chmod u+s`: the test is of the container, which must
    // hold for a command a human approved (or one that sets the bit another way).
    let mut config = podman_config(&conf, &ws_path);
    config.approval.mode = hermetic::approval::Mode::Off;
    let registry = registry(&ws_path, config);
    // hermetic runs as root here, so the container user is 0:0: the strongest case.
    let r = call(
        &registry,
        "terminal",
        json!({"command": "id -u; cp /bin/busybox suid; chmod 4755 suid; chmod u+s suid; \
                           cp /bin/busybox sgid; chmod 2755 sgid; chmod g+s sgid; \
                           install -m 4755 /bin/busybox inst; mknod node c 1 3; \
                           grep ' /workspace ' /proc/mounts; ls -l"}),
        &as_tenant("acme", "s"),
    );
    let out = r["output"].as_str().unwrap_or_else(|| panic!("{r}"));
    let mount = out
        .lines()
        .find(|l| l.contains(" /workspace "))
        .unwrap_or_else(|| panic!("{r}"));
    assert!(
        mount.contains("nosuid") && mount.contains("nodev"),
        "{mount}"
    );
    assert!(!ws_path.join("acme/node").exists(), "a device node: {out}");
    for name in ["suid", "sgid", "inst"] {
        let path = ws_path.join("acme").join(name);
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::metadata(&path);
        if name == "inst" && meta.is_err() {
            continue; // install refused to make it at all
        }
        let mode = meta
            .unwrap_or_else(|e| panic!("{name}: {e}: {out}"))
            .permissions()
            .mode();
        assert_eq!(mode & 0o6000, 0, "{name} is {mode:o} on the host: {out}");
    }
}

#[test]
fn docker_a_tenant_sees_only_its_own_workspace_directory() {
    let conf_dir = TempDir::new().unwrap();
    let conf = podman_conf(conf_dir.path());
    let ws = TempDir::new().unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    std::fs::write(ws_path.join("operator-file"), "operator").unwrap();
    let registry = registry(&ws_path, podman_config(&conf, &ws_path));
    let r = call(
        &registry,
        "terminal",
        json!({"command": "echo globex-secret > secret-of-globex; pwd"}),
        &as_tenant("globex", "s"),
    );
    assert_eq!(r["output"], "/workspace", "{r}");
    assert_eq!(
        std::fs::read_to_string(ws_path.join("globex/secret-of-globex")).unwrap(),
        "globex-secret\n"
    );
    let r = call(
        &registry,
        "terminal",
        json!({"command": "ls -a / /workspace; cat /workspace/../globex/secret-of-globex 2>/dev/null; true"}),
        &as_tenant("acme", "s"),
    );
    let out = r["output"].as_str().unwrap_or_else(|| panic!("{r}"));
    assert!(
        !out.contains("globex-secret"),
        "acme read globex's file: {out}"
    );
    assert!(!out.contains("secret-of-globex"), "{out}");
    assert!(!out.contains("operator-file"), "{out}");
    // The operator's container gets the whole workspace.
    let r = call(
        &registry,
        "terminal",
        json!({"command": "ls /workspace"}),
        &CallOptions::default().with_session("s"),
    );
    let out = r["output"].as_str().unwrap_or_else(|| panic!("{r}"));
    assert!(
        out.contains("operator-file") && out.contains("globex"),
        "{out}"
    );
}

// ssh

#[test]
fn ssh_nothing_of_a_command_survives_its_timeout_end_or_session() {
    require("ssh", "openssh-client");
    require("unshare", "util-linux");
    let sshd = start_sshd();
    let ws = TempDir::new().unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    let config = sshd.terminal_config(&ws_path);
    let registry = registry(&ws_path, config);
    nothing_survives("ssh", &registry, "acme", "escape");
    a_forged_pid_line_steers_nothing("ssh", &registry, "acme");
    drop(registry);
}
