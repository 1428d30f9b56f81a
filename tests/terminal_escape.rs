//! Ways out of the terminal's walls, tried with the real backends (podman + runc with
//! a busybox image built here, an sshd on loopback, gVisor's runsc): a command must
//! not leave anything running past its timeout, its end, a kill or its session
//! however it forks, must not leave a setuid file on the host, and must not see
//! another tenant's files.
//!
//! A missing backend program is a failure with what to install, never a skip: CI
//! (`.ci/run`) installs them all.
use hermetic::policy::TenantPolicy;
use hermetic::{CallOptions, OperatorPolicy, Registry, RegistryOptions};
use hermetic_terminal::TerminalConfig;
use hermetic_test_support::backends::{
    alive, eventually, gvisor_config, gvisor_host_pids, gvisor_leftovers, gvisor_seen, podman_conf,
    podman_terminal, processes_with, require, running, start_sshd, start_sshd_with,
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
    options.engine = hermetic_test_support::registry::engine_config();
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

/// A token for `sleep` arguments no other test uses: `sleep 99999.<pid><b><n>` is
/// findable while it lives (and is a valid duration for busybox and GNU). `b` is the
/// backend's own digit: the suites of the backends run in parallel, and a look for one
/// backend's token must not find another's.
fn token(backend: &str, n: u32) -> String {
    let b = match backend {
        "docker" => 1,
        "ssh" => 2,
        "gvisor" => 3,
        _ => 9,
    };
    format!("99999.{}{b}{n}", std::process::id())
}

/// How a suite sees a backend's processes: `seen(token)` whether a process whose
/// command line holds `token` lives (not a zombie), `running(command)` whether the
/// command itself runs (not a launcher naming it), `pids(token)` every pid a command
/// could name for such a process.
struct Looks<'a> {
    seen: &'a dyn Fn(&str) -> bool,
    running: &'a dyn Fn(&str) -> bool,
    pids: &'a dyn Fn(&str) -> Vec<String>,
}

/// Containers and ssh sessions share this machine's kernel: /proc sees their processes.
const ON_THIS_KERNEL: Looks<'static> = Looks {
    seen: &alive,
    running: &running,
    pids: &bystander_pids,
};

/// Every way out of a command's process tree the issue names, on one backend: after
/// a timeout, after a normal end, and after the session ends (background process),
/// nothing of the command may still run. `session` names the terminal session used
/// (the session-end check ends it).
fn nothing_survives(
    backend: &str,
    registry: &Registry,
    tenant: &str,
    session: &str,
    looks: &Looks<'_>,
) {
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
            || (1..=4).all(|i| !(looks.seen)(&format!("sleep {t}{i}"))),
        );
    };

    // A foreground command that times out.
    let t = token(backend, 1);
    let r = call(
        registry,
        "terminal",
        json!({"command": format!("{} sleep 1000", escapes(&t)), "timeout": 3}),
        &opts,
    );
    assert_eq!(r["exit_code"], 124, "{backend}: {r}");
    gone("what a timed-out command started ends with it", &t);

    // A foreground command that ends by itself.
    let t = token(backend, 2);
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
    let t = token(backend, 3);
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
        || (1..=4).all(|i| (looks.running)(&format!("sleep {t}{i}"))),
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
    let t = token(backend, 4);
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
        || (1..=4).all(|i| (looks.seen)(&format!("sleep {t}{i}"))),
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
fn a_forged_pid_line_steers_nothing(
    backend: &str,
    registry: &Registry,
    tenant: &str,
    looks: &Looks<'_>,
) {
    let opts = as_tenant(tenant, "forge");
    let t = token(backend, 5);
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
        || (looks.seen)(&format!("sleep {t}0")),
    );
    // The bystander's pids as every pid namespace it is in sees it (NSpid): the host's
    // and, in a container, the container's. The forging command prints a marker line
    // for each, with every marker it can read from /proc (its own among them).
    let pids = (looks.pids)(&format!("sleep {t}0"));
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
        (looks.seen)(&format!("sleep {t}0")),
        "{backend}: the forged pid line made the host kill another process"
    );
    registry.terminal().unwrap().end_session(tenant, "forge");
    eventually(
        &format!("{backend}: the bystander ends with its session"),
        Duration::from_secs(20),
        || !(looks.seen)(&format!("sleep {t}0")),
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

#[test]
fn docker_nothing_of_a_command_survives_its_timeout_end_or_session() {
    let conf_dir = TempDir::new().unwrap();
    let conf = podman_conf(conf_dir.path());
    let ws = TempDir::new().unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    let registry = registry(&ws_path, podman_terminal(&conf, &ws_path));
    nothing_survives("docker", &registry, "acme", "escape", &ON_THIS_KERNEL);
    a_forged_pid_line_steers_nothing("docker", &registry, "acme", &ON_THIS_KERNEL);
}

#[test]
fn docker_a_setuid_file_made_in_the_container_is_not_setuid_on_the_host() {
    let conf_dir = TempDir::new().unwrap();
    let conf = podman_conf(conf_dir.path());
    let ws = TempDir::new().unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    // The gate would ask about `chmod u+s`: the test is of the container, which must
    // hold for a command a human approved (or one that sets the bit another way).
    let mut config = podman_terminal(&conf, &ws_path);
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
    let registry = registry(&ws_path, podman_terminal(&conf, &ws_path));
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
    nothing_survives("ssh", &registry, "acme", "escape", &ON_THIS_KERNEL);
    a_forged_pid_line_steers_nothing("ssh", &registry, "acme", &ON_THIS_KERNEL);
    drop(registry);
}

/// A `process kill` issued right after `background: true` — before the far side has
/// started the command — must still stop it: 20 starts, each killed at once. Each
/// command would wait a moment, then touch a file; none may, and nothing of any may
/// still run.
fn a_kill_right_after_a_start_stops_the_command(
    backend: &str,
    registry: &Registry,
    tenant: &str,
    files: &Path,
    looks: &Looks<'_>,
) {
    let opts = as_tenant(tenant, "kill-at-once");
    let t = token(backend, 6);
    for i in 0..20 {
        let started = call(
            registry,
            "terminal",
            json!({"command": format!("sleep {t}{i:02} & sleep 2; touch ran-{i}"), "background": true}),
            &opts,
        );
        let id = started["session_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{backend}: {started}"))
            .to_owned();
        let killed = call(
            registry,
            "process",
            json!({"action": "kill", "session_id": id}),
            &opts,
        );
        assert_eq!(killed["status"], "killed", "{backend} #{i}: {killed}");
    }
    // Longer than any of the commands would have taken to touch its file.
    std::thread::sleep(Duration::from_secs(4));
    let ran: Vec<_> = std::fs::read_dir(files)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("ran-"))
        .collect();
    assert!(ran.is_empty(), "{backend}: killed commands ran on: {ran:?}");
    for i in 0..20 {
        assert!(
            !(looks.seen)(&format!("sleep {t}{i:02}")),
            "{backend}: killed command #{i} is still running: {:?}",
            processes_with(&format!("sleep {t}{i:02}"))
        );
    }
    registry
        .terminal()
        .unwrap()
        .end_session(tenant, "kill-at-once");
}

#[test]
fn docker_a_kill_right_after_a_background_start_stops_the_command() {
    let conf_dir = TempDir::new().unwrap();
    let conf = podman_conf(conf_dir.path());
    let ws = TempDir::new().unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    let registry = registry(&ws_path, podman_terminal(&conf, &ws_path));
    a_kill_right_after_a_start_stops_the_command(
        "docker",
        &registry,
        "acme",
        &ws_path.join("acme"),
        &ON_THIS_KERNEL,
    );
}

#[test]
fn ssh_a_kill_right_after_a_background_start_stops_the_command() {
    require("ssh", "openssh-client");
    require("unshare", "util-linux");
    // A far side that takes a moment to start each command (a loaded host, a slow
    // login): until it does, no process there carries the command's marker.
    let sshd = start_sshd_with(&[
        "-o",
        "ForceCommand=sleep 0.5; eval \"$SSH_ORIGINAL_COMMAND\"",
    ]);
    let ws = TempDir::new().unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    let registry = registry(&ws_path, sshd.terminal_config(&ws_path));
    a_kill_right_after_a_start_stops_the_command(
        "ssh",
        &registry,
        "acme",
        &ws_path,
        &ON_THIS_KERNEL,
    );
    drop(registry);
}

// gvisor

/// A gVisor registry over a fresh workspace, runsc's state in its own directory.
struct Gvisor {
    state: TempDir,
    /// Held for the registry's workspace.
    _ws: TempDir,
    registry: Registry,
}

fn gvisor() -> Gvisor {
    let state = TempDir::new().unwrap();
    let ws = TempDir::new().unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    let registry = registry(&ws_path, gvisor_config(state.path()));
    Gvisor {
        state,
        _ws: ws,
        registry,
    }
}

impl Gvisor {
    /// Seeing into the sandboxes (their processes are not the host's); a pid a
    /// command could forge is the Sentry's, its gofer's, runsc's, or a pid inside.
    fn looks<'a>(
        &'a self,
        seen: &'a dyn Fn(&str) -> bool,
        pids: &'a dyn Fn(&str) -> Vec<String>,
    ) -> Looks<'a> {
        Looks {
            seen,
            running: seen,
            pids,
        }
    }

    /// Nothing is left: no bundle, no runsc process (after `end_session`).
    fn nothing_left(&self) {
        eventually(
            "gvisor: no sandbox, bundle or runsc process is left",
            Duration::from_secs(20),
            || gvisor_leftovers(self.state.path()).is_empty(),
        );
    }
}

#[test]
fn gvisor_nothing_of_a_command_survives_its_timeout_end_or_session() {
    let g = gvisor();
    let state = g.state.path();
    let seen = |t: &str| gvisor_seen(state, t);
    let pids = |_: &str| {
        let mut p = gvisor_host_pids(state);
        p.push("1".into());
        p
    };
    let looks = g.looks(&seen, &pids);
    nothing_survives("gvisor", &g.registry, "acme", "escape", &looks);
    g.nothing_left();
    a_forged_pid_line_steers_nothing("gvisor", &g.registry, "acme", &looks);
    g.nothing_left();
}

#[test]
fn gvisor_a_kill_right_after_a_background_start_stops_the_command() {
    let g = gvisor();
    let state = g.state.path();
    let seen = |t: &str| gvisor_seen(state, t);
    let pids = |_: &str| Vec::new();
    let here = call(
        &g.registry,
        "terminal",
        json!({"command": "pwd"}),
        &as_tenant("acme", "kill-at-once"),
    );
    let files =
        std::path::PathBuf::from(here["output"].as_str().unwrap_or_else(|| panic!("{here}")));
    a_kill_right_after_a_start_stops_the_command(
        "gvisor",
        &g.registry,
        "acme",
        &files,
        &g.looks(&seen, &pids),
    );
    g.nothing_left();
}

/// The state directory [`gvisor_a_host_that_died_leaves_nothing_for_the_next_start`]
/// hands its crashing host.
const CRASH_STATE: &str = "HERMETIC_TEST_GVISOR_CRASH_STATE";

#[test]
#[ignore = "the crashing host of gvisor_a_host_that_died_leaves_nothing_for_the_next_start, which runs it"]
fn gvisor_crashing_host() {
    let state = std::path::PathBuf::from(std::env::var_os(CRASH_STATE).unwrap());
    let ws = TempDir::new().unwrap();
    let registry = registry(&ws.path().canonicalize().unwrap(), gvisor_config(&state));
    let started = call(
        &registry,
        "terminal",
        json!({"command": "sleep 99999.7", "background": true}),
        &as_tenant("acme", "s"),
    );
    assert!(started["session_id"].is_string(), "{started}");
    println!("started");
    // Killed here by the test that ran it: no shutdown, no Drop, what a crash leaves.
    std::thread::sleep(Duration::from_secs(600));
}

#[test]
fn gvisor_a_host_that_died_leaves_nothing_for_the_next_start() {
    let state = TempDir::new().unwrap();
    let mut host = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "gvisor_crashing_host",
            "--ignored",
            "--nocapture",
        ])
        .env(CRASH_STATE, state.path())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    eventually(
        "gvisor: the crashing host's sandbox runs",
        Duration::from_secs(60),
        || gvisor_seen(state.path(), "sleep 99999.7"),
    );
    host.kill().unwrap();
    host.wait().unwrap();
    // Its sandbox outlives it (nothing told it to end), and its state is there.
    assert!(gvisor_seen(state.path(), "sleep 99999.7"));
    assert!(!gvisor_leftovers(state.path()).is_empty());
    // The next host on the same state directory: its first command reaps them.
    let ws = TempDir::new().unwrap();
    let registry = registry(
        &ws.path().canonicalize().unwrap(),
        gvisor_config(state.path()),
    );
    let r = call(
        &registry,
        "terminal",
        json!({"command": "echo fresh"}),
        &as_tenant("acme", "s"),
    );
    assert_eq!(r["output"], "fresh", "{r}");
    // What it left goes, its directory last: only the live backend's own directory is
    // left in the state directory (checked together: the reaper removes the dead
    // host's sandboxes before its directory).
    let hosts = || std::fs::read_dir(state.path()).unwrap().flatten().count();
    eventually(
        "gvisor: what the dead host left is gone",
        Duration::from_secs(20),
        || {
            gvisor_leftovers(state.path()).is_empty()
                && !gvisor_seen(state.path(), "sleep 99999.7")
                && hosts() == 1
        },
    );
}
