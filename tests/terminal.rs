//! The terminal and process tools over every backend — local, bubblewrap, a
//! docker-compatible CLI (podman + runc, a busybox image built here), and ssh (an sshd
//! this suite starts on loopback) — through the real bundled components, the approval
//! gate and the dispatch pipeline.
//!
//! A missing backend program is a failure with what to install, never a skip: CI
//! (`.ci/run`) installs them all.
use hermetic::approval::{Answer, Approver, ScriptedApprover};
use hermetic::{CallOptions, OperatorPolicy, Registry, RegistryOptions};
use hermetic_terminal::TerminalConfig;
use hermetic_test_support::backends::{
    alive, eventually, gvisor_config, podman_conf, podman_terminal, require, running, start_sshd,
};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// A registry with the bundled tools whose terminal uses `config` (cwd = workspace).
fn registry(workspace: &Path, mut config: TerminalConfig) -> Registry {
    let mut policy = OperatorPolicy::with_workspace(workspace.to_path_buf());
    if config.cwd.is_none() && matches!(config.backend.as_str(), "local" | "bwrap") {
        config.cwd = Some(workspace.to_path_buf());
    }
    policy.terminal.default = config;
    let mut options = hermetic_terminal::attach(RegistryOptions::new(policy)).unwrap();
    options.engine = hermetic_test_support::registry::engine_config();
    let registry = Registry::new(options).unwrap();
    assert_eq!(registry.add_bundled(), vec![]);
    registry
}

fn opts(approver: Option<Arc<dyn Approver>>) -> CallOptions {
    let mut options = CallOptions::default().with_session("s1");
    options.approver = approver;
    options
}

fn call(registry: &Registry, tool: &str, args: Value, options: &CallOptions) -> Value {
    let out = registry.call(tool, &args.to_string(), options);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

fn run(registry: &Registry, args: Value) -> Value {
    call(registry, "terminal", args, &opts(None))
}

/// Every behaviour the issue lists, on one backend. `ws_in_backend` is the workspace
/// as the backend's commands see it; markers go there and are checked on the host side.
fn exercise(backend: &str, registry: &Registry, workspace: &Path, ws_in_backend: &str) {
    // Distinct per backend: the suites run in parallel and `alive` looks machine-wide.
    let n = ["local", "bwrap", "docker", "ssh"]
        .iter()
        .position(|b| *b == backend)
        .unwrap();
    let tag = format!("{n}{}", std::process::id() % 1000);
    // Echo.
    let r = run(
        registry,
        json!({"command": "echo hello from $0 >&2; echo hello"}),
    );
    assert_eq!(r["exit_code"], 0, "{backend}: {r}");
    assert!(
        r["output"].as_str().unwrap().contains("hello"),
        "{backend}: {r}"
    );
    assert_eq!(r["error"], Value::Null);

    // A failing command's exit code, and the note for one that is not an error.
    let r = run(registry, json!({"command": "echo out; exit 3"}));
    assert_eq!(r["exit_code"], 3, "{backend}: {r}");
    assert_eq!(r["output"], "out", "{backend}: {r}");
    let r = run(registry, json!({"command": "echo abc | grep xyz"}));
    assert_eq!(r["exit_code"], 1, "{backend}: {r}");
    assert_eq!(r["exit_code_meaning"], "No matches found (not an error)");

    // A timeout: 124, the notice, and the whole tree gone (a background child too).
    let token = format!("{tag}7.5");
    let started = Instant::now();
    let r = run(
        registry,
        json!({"command": format!("sleep {token} & sleep {token}"), "timeout": 1}),
    );
    assert_eq!(r["exit_code"], 124, "{backend}: {r}");
    assert!(
        r["output"]
            .as_str()
            .unwrap()
            .contains("[Command timed out after 1s]"),
        "{backend}: {r}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{backend}: timeout took {:?}",
        started.elapsed()
    );
    eventually(
        &format!("{backend}: timed-out processes gone"),
        Duration::from_secs(10),
        || !alive(&format!("sleep {token}")),
    );

    // Over the maximum: refused with a hint.
    let r = run(registry, json!({"command": "true", "timeout": 601}));
    assert!(
        r["error"].as_str().unwrap().contains("background"),
        "{backend}: {r}"
    );

    // A `cd` holds for the next call; an explicit workdir wins.
    let r = run(registry, json!({"command": "mkdir -p sub && cd sub"}));
    assert_eq!(r["exit_code"], 0, "{backend}: {r}");
    let r = run(registry, json!({"command": "pwd"}));
    assert_eq!(
        r["output"],
        format!("{ws_in_backend}/sub"),
        "{backend}: {r}"
    );
    let r = run(
        registry,
        json!({"command": "pwd", "workdir": ws_in_backend}),
    );
    assert_eq!(r["output"], ws_in_backend, "{backend}: {r}");
    let r = run(registry, json!({"command": "pwd", "workdir": "/tmp; id"}));
    assert!(
        r["error"].as_str().unwrap().contains("not a plain path"),
        "{backend}: {r}"
    );
    run(
        registry,
        json!({"command": "cd ..", "workdir": format!("{ws_in_backend}/sub")}),
    );

    // A background process polled to completion.
    let o = opts(None);
    let r = call(
        registry,
        "terminal",
        json!({"command": "echo started; sleep 1; echo finished", "background": true}),
        &o,
    );
    assert_eq!(r["output"], "Background process started", "{backend}: {r}");
    let id = r["session_id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("proc_"));
    assert!(r["pid"].as_u64().unwrap() > 0);
    let mut last = Value::Null;
    eventually(
        &format!("{backend}: background process finished"),
        Duration::from_secs(30),
        || {
            last = call(
                registry,
                "process",
                json!({"action": "poll", "session_id": id}),
                &o,
            );
            last["status"] == "exited"
        },
    );
    assert_eq!(last["exit_code"], 0, "{backend}: {last}");
    assert!(
        last["output_preview"]
            .as_str()
            .unwrap()
            .contains("finished"),
        "{backend}: {last}"
    );
    let log = call(
        registry,
        "process",
        json!({"action": "log", "session_id": id, "limit": 1}),
        &o,
    );
    assert_eq!(log["output"], "finished", "{backend}: {log}");
    assert_eq!(log["total_lines"], 2, "{backend}: {log}");
    let list = call(registry, "process", json!({"action": "list"}), &o);
    assert!(
        list["processes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["session_id"] == id)
    );

    // One killed (and really gone), one waited for, one fed through stdin.
    let token = format!("{tag}8.5");
    let r = call(
        registry,
        "terminal",
        json!({"command": format!("sleep {token}"), "background": true}),
        &o,
    );
    let id = r["session_id"].as_str().unwrap().to_owned();
    // The sleep itself, not its launcher: a kill that comes before the command has
    // started on the far side finds nothing to kill there yet (see `docs/src/terminal.md`).
    eventually(
        &format!("{backend}: background sleep running"),
        Duration::from_secs(10),
        || running(&format!("sleep {token}")),
    );
    let k = call(
        registry,
        "process",
        json!({"action": "kill", "session_id": id}),
        &o,
    );
    assert_eq!(k["status"], "killed", "{backend}: {k}");
    eventually(
        &format!("{backend}: killed process gone"),
        Duration::from_secs(10),
        || !alive(&format!("sleep {token}")),
    );
    let w = call(
        registry,
        "process",
        json!({"action": "wait", "session_id": id, "timeout": 10}),
        &o,
    );
    assert_eq!(w["status"], "exited", "{backend}: {w}");
    let r = call(
        registry,
        "terminal",
        json!({"command": "read line; echo got:$line", "background": true}),
        &o,
    );
    let id = r["session_id"].as_str().unwrap().to_owned();
    let s = call(
        registry,
        "process",
        json!({"action": "submit", "session_id": id, "data": "ping"}),
        &o,
    );
    assert_eq!(s["status"], "ok", "{backend}: {s}");
    let w = call(
        registry,
        "process",
        json!({"action": "wait", "session_id": id, "timeout": 20}),
        &o,
    );
    assert_eq!(w["status"], "exited", "{backend}: {w}");
    assert!(
        w["output"].as_str().unwrap().contains("got:ping"),
        "{backend}: {w}"
    );
    let nf = call(
        registry,
        "process",
        json!({"action": "poll", "session_id": "proc_nope"}),
        &o,
    );
    assert_eq!(nf["status"], "not_found", "{backend}: {nf}");

    // A hardline command never reaches the backend, in the foreground or background,
    // whatever the approver would say.
    let hard = workspace.join("hardline-marker");
    let cmd = format!("touch {ws_in_backend}/hardline-marker; rm -rf /");
    let yes: Arc<dyn Approver> = Arc::new(ScriptedApprover::new([Answer::Once, Answer::Once]));
    for background in [false, true] {
        let r = call(
            registry,
            "terminal",
            json!({"command": cmd, "background": background}),
            &opts(Some(yes.clone())),
        );
        assert_eq!(
            r,
            json!({"output": "", "exit_code": -1, "error": r["error"], "status": "blocked"}),
            "{backend}: {r}"
        );
        assert!(
            r["error"].as_str().unwrap().contains("hardline"),
            "{backend}: {r}"
        );
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(!hard.exists(), "{backend}: a hardline command ran");

    // A dangerous command: refused after deny, timeout, or with nobody to ask; runs
    // only after an approval.
    let marker = workspace.join("danger-marker");
    // Relative: the session's directory is the workspace again after the `cd ..` above.
    let cmd = "rm -rf junk && touch danger-marker".to_owned();
    for (answers, status) in [
        (vec![Answer::Deny], "blocked"),
        (vec![Answer::Timeout], "pending_approval"),
        (vec![], "pending_approval"),
    ] {
        let approver = Arc::new(ScriptedApprover::new(answers));
        let r = call(
            registry,
            "terminal",
            json!({"command": cmd}),
            &opts(Some(approver.clone())),
        );
        assert_eq!(r["status"], status, "{backend}: {r}");
        assert_eq!(r["exit_code"], -1, "{backend}: {r}");
        assert_eq!(
            approver.requests().len(),
            1,
            "{backend}: the human was asked"
        );
        assert!(
            !marker.exists(),
            "{backend}: a refused dangerous command ran"
        );
    }
    let r = run(registry, json!({"command": cmd}));
    assert_eq!(
        r["status"], "pending_approval",
        "{backend}: no approver: {r}"
    );
    assert!(!marker.exists());
    let approver = Arc::new(ScriptedApprover::new([Answer::Once]));
    let r = call(
        registry,
        "terminal",
        json!({"command": cmd}),
        &opts(Some(approver.clone())),
    );
    assert_eq!(r["exit_code"], 0, "{backend}: {r}");
    assert!(
        marker.exists(),
        "{backend}: the approved command did not run"
    );
    std::fs::remove_file(&marker).unwrap();

    // A background command passes the same gate.
    let denied = Arc::new(ScriptedApprover::new([Answer::Deny]));
    let r = call(
        registry,
        "terminal",
        json!({"command": cmd, "background": true}),
        &opts(Some(denied.clone())),
    );
    assert_eq!(r["status"], "blocked", "{backend}: {r}");
    assert_eq!(denied.requests().len(), 1);
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        !marker.exists(),
        "{backend}: a denied background command ran"
    );
    let approved = Arc::new(ScriptedApprover::new([Answer::Once]));
    let r = call(
        registry,
        "terminal",
        json!({"command": cmd, "background": true}),
        &opts(Some(approved)),
    );
    assert!(r["session_id"].as_str().is_some(), "{backend}: {r}");
    eventually(
        &format!("{backend}: approved background command ran"),
        Duration::from_secs(20),
        || marker.exists(),
    );

    // Session end kills what is still running.
    let token = format!("{tag}9.5");
    call(
        registry,
        "terminal",
        json!({"command": format!("sleep {token}"), "background": true}),
        &o,
    );
    eventually(
        &format!("{backend}: sleep running"),
        Duration::from_secs(10),
        || alive(&format!("sleep {token}")),
    );
    registry.terminal().unwrap().end_session("", "s1");
    eventually(
        &format!("{backend}: session processes gone"),
        Duration::from_secs(15),
        || !alive(&format!("sleep {token}")),
    );
}

#[test]
fn local_backend() {
    require("bash", "bash");
    let ws = TempDir::new().unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    let registry = registry(&ws_path, TerminalConfig::default());
    exercise("local", &registry, &ws_path, ws_path.to_str().unwrap());

    // PTY mode: the command sees a terminal; without it, it does not.
    let r = run(
        &registry,
        json!({"command": "[ -t 1 ] && tty", "pty": true}),
    );
    assert_eq!(r["exit_code"], 0, "{r}");
    assert!(
        r["output"].as_str().unwrap().starts_with("/dev/pts/"),
        "{r}"
    );
    let r = run(&registry, json!({"command": "[ -t 1 ] || echo no-tty"}));
    assert_eq!(r["output"], "no-tty", "{r}");
    // A PTY command that outlives its timeout is killed like any other.
    let r = run(
        &registry,
        json!({"command": "sleep 4343.5", "pty": true, "timeout": 1}),
    );
    assert_eq!(r["exit_code"], 124, "{r}");
    eventually("pty command gone", Duration::from_secs(5), || {
        !alive("sleep 4343.5")
    });

    // The environment is scrubbed: the host's variables do not leak.
    let r = run(&registry, json!({"command": "env"}));
    let env = r["output"].as_str().unwrap();
    assert!(env.contains("PATH="), "{env}");
    assert!(!env.contains("CARGO"), "host env leaked: {env}");
    // Output is streamed as progress.
    let seen = Arc::new(std::sync::Mutex::new(String::new()));
    let sink = seen.clone();
    let options = opts(None).with_progress(Arc::new(move |p: hermetic::Progress| {
        sink.lock().unwrap().push_str(&p.message);
    }));
    let r = call(
        &registry,
        "terminal",
        json!({"command": "echo one; echo two"}),
        &options,
    );
    assert_eq!(r["output"], "one\ntwo");
    assert_eq!(seen.lock().unwrap().as_str(), "one\ntwo\n");
    // ANSI escapes are stripped, credentials redacted, long output capped.
    let r = run(
        &registry,
        json!({"command": "printf '\\033[31mred\\033[0m AKIAABCDEFGHIJKLMNOP\\n'"}),
    );
    assert_eq!(r["output"], "red [REDACTED]");
    let r = run(
        &registry,
        json!({"command": "head -c 120000 /dev/zero | tr '\\0' x"}),
    );
    let out = r["output"].as_str().unwrap();
    assert!(
        out.contains("[OUTPUT TRUNCATED - 70000 characters omitted out of 120000 total]"),
        "{}",
        &out[19_990..20_100]
    );
}

#[test]
fn local_cancellation_kills_the_command_with_130() {
    let ws = TempDir::new().unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    let registry = registry(&ws_path, TerminalConfig::default());
    let token = hermetic::CancelToken::new();
    let options = opts(None).with_cancel(token.clone());
    let canceller = token.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(1));
        canceller.cancel();
    });
    let started = Instant::now();
    let out = registry.call(
        "terminal",
        &json!({"command": "sleep 4242.5"}).to_string(),
        &options,
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    // The guest is interrupted as soon as the host call returns; the command is gone.
    assert!(out.contains("cancelled") || out.contains("130"), "{out}");
    eventually("cancelled command gone", Duration::from_secs(5), || {
        !alive("sleep 4242.5")
    });
}

#[test]
fn bwrap_backend() {
    require("bwrap", "bubblewrap");
    let ws = TempDir::new().unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    let config = TerminalConfig {
        backend: "bwrap".into(),
        ..TerminalConfig::default()
    };
    let registry = registry(&ws_path, config);
    exercise("bwrap", &registry, &ws_path, ws_path.to_str().unwrap());
    // Read-only root, private /tmp, no network.
    let r = run(&registry, json!({"command": "touch /usr/hermetic-probe"}));
    assert_ne!(r["exit_code"], 0, "{r}");
    let r = run(
        &registry,
        json!({"command": "ls -A /tmp | grep -v \"$(basename $PWD)\" | wc -l"}),
    );
    assert_eq!(r["output"], "0", "{r}");
    let r = run(&registry, json!({"command": "cat /proc/net/dev | wc -l"}));
    assert_eq!(r["output"], "3", "only lo: {r}");
}

#[test]
fn docker_compatible_backend_with_podman() {
    require("podman", "podman");
    require("runc", "runc");
    require("/bin/busybox", "busybox-static");
    let conf_dir = TempDir::new().unwrap();
    let conf = podman_conf(conf_dir.path());
    let ws = TempDir::new().unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    let config = podman_terminal(&conf, &ws_path);
    let registry = registry(&ws_path, config);
    // No capabilities, no new privileges, no network.
    let r = run(
        &registry,
        json!({"command": "grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; cat /proc/net/dev | wc -l"}),
    );
    let out = r["output"].as_str().unwrap();
    assert!(out.contains("CapEff:\t0000000000000000"), "{out}");
    assert!(out.contains("NoNewPrivs:\t1"), "{out}");
    assert!(out.ends_with('3'), "only lo: {out}");
    exercise("docker", &registry, &ws_path, "/workspace");
    drop(registry);
}

#[test]
fn ssh_backend_against_a_loopback_sshd() {
    require("ssh", "openssh-client");
    let sshd = start_sshd();
    let ws = TempDir::new().unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    let config = sshd.terminal_config(&ws_path);
    let registry = registry(&ws_path, config);
    let r = run(&registry, json!({"command": "echo $SSH_CONNECTION"}));
    assert!(
        r["output"].as_str().unwrap().starts_with("127.0.0.1 "),
        "{r}"
    );
    let r = run(
        &registry,
        json!({"command": "[ -t 1 ] && tty", "pty": true}),
    );
    assert!(
        r["output"].as_str().unwrap().starts_with("/dev/pts/"),
        "{r}"
    );
    exercise("ssh", &registry, &ws_path, ws_path.to_str().unwrap());
    drop(registry);
}

#[test]
fn a_tool_from_a_tools_dir_never_gets_the_terminal_without_a_grant() {
    let ws = TempDir::new().unwrap();
    let policy = OperatorPolicy::with_workspace(ws.path().to_path_buf());
    let mut options = hermetic_terminal::attach(RegistryOptions::new(policy)).unwrap();
    options.engine = hermetic_test_support::registry::engine_config();
    let registry = Registry::new(options).unwrap();
    // The very same component as the bundled `terminal`, but from a directory.
    let dir = hermetic_test_support::guests::tools_dir(&["terminal"]);
    assert_eq!(registry.add_dir(dir.path()).unwrap(), vec![]);
    let status = registry.availability("terminal").unwrap();
    assert!(!status.available);
    assert!(status.reason.unwrap().contains("needs the terminal"), "");
    let out = registry.call(
        "terminal",
        r#"{"command": "touch /tmp/never"}"#,
        &CallOptions::default(),
    );
    assert!(out.contains("is unavailable"), "{out}");
}

#[test]
fn bundled_terminal_tools_get_the_local_backend_only_without_a_policy_file() {
    let ws = TempDir::new().unwrap();
    let with_defaults = registry(ws.path(), TerminalConfig::default());
    for tool in ["terminal", "process"] {
        assert!(
            with_defaults.availability(tool).unwrap().available,
            "{tool}"
        );
    }
    // A policy file grants nothing by default, bundled or not.
    let loaded = hermetic_config::parse(
        "[mounts.workspace]\npath = \".\"\naccess = \"rw\"\n",
        Path::new("policy.toml"),
        ws.path(),
        ws.path(),
    )
    .unwrap();
    let mut options = hermetic_terminal::attach(RegistryOptions::new(loaded.policy)).unwrap();
    options.engine = hermetic_test_support::registry::engine_config();
    let registry = Registry::new(options).unwrap();
    assert_eq!(registry.add_bundled(), vec![]);
    for tool in ["terminal", "process"] {
        let a = registry.availability(tool).unwrap();
        assert!(!a.available, "{tool}");
        assert!(a.reason.unwrap().contains("needs the terminal"));
    }
}

/// What a backend reaches on this host is its own to say, and the registry keeps the
/// host's files out of it: an approval allowlist inside a bwrap or docker workspace, or
/// a local terminal's working directory, is refused once a tool may get the terminal
/// (what `hermetic` checks at start), and the same files beside it are not.
#[test]
fn host_files_inside_what_a_backend_reaches_are_refused() {
    let root = TempDir::new().unwrap();
    let root = root.path();
    std::fs::create_dir_all(root.join("ws")).unwrap();
    let check = |terminal: &str, file: &str| {
        let text = format!(
            "[mounts.workspace]\npath = \"ws\"\naccess = \"rw\"\n[tools.terminal]\nterminal = true\n{terminal}"
        );
        let loaded = hermetic_config::parse(&text, Path::new("p.toml"), root, root)
            .expect("the policy file loads: the terminal's reach is checked later");
        let mut options = hermetic_terminal::attach(RegistryOptions::new(loaded.policy)).unwrap();
        options.engine = hermetic_test_support::registry::engine_config();
        let registry = Registry::new(options).unwrap();
        registry
            .check_state_path("the approval allowlist", &root.join(file))
            .map_err(|e| e.to_string())
    };
    let bwrap = "[terminal]\nbackend = \"bwrap\"\n[terminal.bwrap]\nworkspace = \"box\"\n";
    let e = check(bwrap, "box/approvals.json").unwrap_err();
    assert!(e.contains("inside the terminal's bwrap workspace"), "{e}");
    assert_eq!(check(bwrap, "approvals.json"), Ok(()));
    let docker = "[terminal]\nbackend = \"docker\"\n[terminal.docker]\nworkspace = \"box\"\n";
    let e = check(docker, "box/x.json").unwrap_err();
    assert!(e.contains("inside the terminal's docker workspace"), "{e}");
    // A working directory is on this host for local and bwrap, the far side's for ssh.
    let local = "[terminal]\ncwd = \"here\"\n";
    let e = check(local, "here/x.json").unwrap_err();
    assert!(e.contains("inside the terminal's working directory"), "{e}");
    let ssh = "[terminal]\nbackend = \"ssh\"\ncwd = \"here\"\n[terminal.ssh]\nhost = \"h\"\n";
    assert_eq!(check(ssh, "here/x.json"), Ok(()));
    // A table of a backend not in use reaches nothing.
    let unused = "[terminal]\nbackend = \"local\"\n[terminal.bwrap]\nworkspace = \"box\"\n";
    assert_eq!(check(unused, "box/approvals.json"), Ok(()));
    // Without a backend named, bwrap is the default where it works: its table is in use.
    let auto = "[terminal.bwrap]\nworkspace = \"box\"\n";
    let e = check(auto, "box/approvals.json").unwrap_err();
    assert!(e.contains("inside the terminal's bwrap workspace"), "{e}");
}

#[test]
fn a_component_importing_the_terminal_without_declaring_it_fails_to_load() {
    let (_ws, options) = hermetic_test_support::registry::options();
    let registry = Registry::new(options).unwrap();
    let dir = hermetic_test_support::guests::tools_dir(&["undeclared_terminal"]);
    let problems = registry.add_dir(dir.path()).unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0]
            .reason
            .contains("does not declare it: add `terminal = true`"),
        "{}",
        problems[0].reason
    );
}

/// A terminal tool built against `hermetic:tool@0.1.0` (JSON-string results) is refused
/// at load with a sentence naming the old interface and the package the host speaks.
#[test]
fn a_component_built_against_the_0_1_0_terminal_fails_to_load() {
    let (_ws, options) = hermetic_test_support::registry::options();
    let registry = Registry::new(options).unwrap();
    let dir = hermetic_test_support::guests::tools_dir(&["old_terminal"]);
    let problems = registry.add_dir(dir.path()).unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    let reason = &problems[0].reason;
    assert!(reason.contains("hermetic:tool/terminal@0.1.0"), "{reason}");
    assert!(
        reason.contains(
            "built against hermetic:tool@0.1.0; this host implements hermetic:tool@0.3.0"
        ),
        "{reason}"
    );
}

#[test]
fn policy_file_terminal_keys_select_the_backend_per_tenant() {
    let ws = TempDir::new().unwrap();
    let text = r#"
[mounts.workspace]
path = "."
access = "rw"

[tools.terminal]
terminal = true
[tools.terminal.limits]
max_timeout_ms = 660000

[terminal]
backend = "local"
timeout_secs = 60
[terminal.approval]
mode = "manual"

[tenants.acme]
[terminal.tenants.acme]
backend = "bwrap"
[terminal.tenants.acme.bwrap]
network = false
"#;
    let loaded = hermetic_config::parse(text, Path::new("p.toml"), ws.path(), ws.path()).unwrap();
    let t = &loaded.policy.terminal;
    assert_eq!(t.default.backend, "local");
    assert_eq!(t.default.timeout_secs, 60);
    assert_eq!(t.for_tenant("acme").backend, "bwrap");
    assert_eq!(
        t.for_tenant("acme").timeout_secs,
        60,
        "tenant tables merge onto the default"
    );
    assert!(!t.grant_bundled);
    // A mistake is said at load (the keys every backend shares) or when the terminal
    // host is built, before anything serves (each backend reads its own table).
    let err = |text: &str| match hermetic_config::parse(
        text,
        Path::new("p.toml"),
        ws.path(),
        ws.path(),
    ) {
        Err(e) => e.to_string(),
        Ok(loaded) => hermetic_terminal::TerminalHost::new(loaded.policy.terminal)
            .map(|_| ())
            .unwrap_err()
            .to_string(),
    };
    let says = |text: &str, what: &str| {
        let e = err(text);
        assert!(e.contains(what), "{text:?}: {e}");
    };
    says(
        "[terminal]\nbackend = \"modal\"",
        "terminal.backend: no backend is called \"modal\" (there are: local, bwrap, docker, ssh, gvisor)",
    );
    says("[terminal]\nshell = \"zsh\"", "terminal.shell: unknown key");
    says("[terminal]\ntimeout_secs = 601", "timeout_secs");
    says(
        "[terminal]\nbackend = \"ssh\"",
        "terminal.ssh: the ssh backend needs host",
    );
    says(
        "[terminal.tenants.nobody]\nbackend = \"local\"",
        "no such tenant",
    );
    // A backend's own table, in use or not, is read by its backend.
    says(
        "[terminal.dokcer]\nimage = \"x\"",
        "terminal.dokcer: no backend is called \"dokcer\"",
    );
    says(
        "[terminal.docker]\nimgae = \"x\"",
        "terminal.docker: unknown field `imgae`",
    );
    says("[terminal]\ndocker = 3", "terminal.docker: must be a table");
    says(
        "[terminal]\nbackend = \"bwrap\"\n[terminal.bwrap]\nhide = [\"etc/x\"]",
        "terminal.bwrap: hide: etc/x is not an absolute path below /",
    );
    says(
        "[terminal.local]\nshell = \"zsh\"",
        "terminal.local: unknown field `shell`",
    );
    says(
        "[tenants.acme]\n[terminal.tenants.acme]\nbackend = \"docker\"\n[terminal.tenants.acme.docker]\npids_limit = \"many\"",
        "terminal.tenants.acme.docker: invalid type",
    );
}

#[derive(Default)]
struct Recorder(std::sync::Mutex<Vec<String>>);

impl hermetic::approval::ApprovalObserver for Recorder {
    fn before_request(&self, request: &hermetic::approval::ApprovalRequest, approver: &str) {
        self.0
            .lock()
            .unwrap()
            .push(format!("ask {approver}: {}", request.command));
    }
    fn after_answer(
        &self,
        _request: &hermetic::approval::ApprovalRequest,
        verdict: &hermetic::approval::Verdict,
    ) {
        self.0
            .lock()
            .unwrap()
            .push(format!("answer {:?}", verdict.outcome));
    }
}

#[test]
fn approval_observers_see_the_terminal_gate_requests_and_answers() {
    let ws = TempDir::new().unwrap();
    let registry = registry(ws.path(), TerminalConfig::default());
    let recorder = Arc::new(Recorder::default());
    registry.terminal().unwrap().add_observer(recorder.clone());
    let approver = Arc::new(ScriptedApprover::new([Answer::Deny]));
    let r = call(
        &registry,
        "terminal",
        json!({"command": "rm -rf junk"}),
        &opts(Some(approver)),
    );
    assert_eq!(r["status"], "blocked");
    assert_eq!(
        *recorder.0.lock().unwrap(),
        ["ask scripted: rm -rf junk", "answer Denied"]
    );
}

#[test]
fn one_tenant_cannot_reach_another_tenants_background_processes() {
    let ws = TempDir::new().unwrap();
    let mut policy = OperatorPolicy::with_workspace(ws.path().to_path_buf());
    policy.terminal.default.cwd = Some(ws.path().to_path_buf());
    for tenant in ["acme", "globex"] {
        policy
            .tenants
            .insert(tenant.into(), hermetic::policy::TenantPolicy::default());
    }
    let mut options = hermetic_terminal::attach(RegistryOptions::new(policy)).unwrap();
    options.engine = hermetic_test_support::registry::engine_config();
    let registry = Registry::new(options).unwrap();
    assert_eq!(registry.add_bundled(), vec![]);
    // The same session id in both tenants: only the tenant tells them apart.
    let as_tenant = |tenant: &str| {
        CallOptions::default()
            .with_tenant(tenant)
            .with_session("s1")
    };
    // In the command's arguments, not a comment: bash may exec `sleep` in its place,
    // and a comment is not in sleep's command line.
    let token = format!("sleep 30.{}9", std::process::id());
    let started = call(
        &registry,
        "terminal",
        json!({"command": token.clone(), "background": true}),
        &as_tenant("acme"),
    );
    let id = started["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"))
        .to_owned();
    for args in [
        json!({"action": "poll", "session_id": id}),
        json!({"action": "log", "session_id": id}),
        json!({"action": "kill", "session_id": id}),
        json!({"action": "write", "session_id": id, "data": "x"}),
    ] {
        let out = call(&registry, "process", args.clone(), &as_tenant("globex"));
        assert_eq!(out["status"], "not_found", "globex {args}: {out}");
    }
    let listed = call(
        &registry,
        "process",
        json!({"action": "list"}),
        &as_tenant("globex"),
    );
    assert!(!listed.to_string().contains(&id), "{listed}");
    assert!(
        alive(&token),
        "globex's kill must not have reached acme's process"
    );
    let own = call(
        &registry,
        "process",
        json!({"action": "poll", "session_id": id}),
        &as_tenant("acme"),
    );
    assert_eq!(own["status"], "running", "{own}");
    call(
        &registry,
        "process",
        json!({"action": "kill", "session_id": id}),
        &as_tenant("acme"),
    );
    eventually(
        "acme's kill ends its process",
        Duration::from_secs(10),
        || !alive(&token),
    );
}

#[test]
fn stdin_and_process_input_pass_the_gate_like_commands() {
    let ws = TempDir::new().unwrap();
    let registry = registry(ws.path(), TerminalConfig::default());
    // (A foreground command's `stdin` passes the gate too; the bundled guest never sends
    // one, so that is tested in terminal::tests with a direct host call.)
    // A background shell is sent its commands with write/submit: same gate.
    let started = run(&registry, json!({"command": "bash", "background": true}));
    let id = started["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"))
        .to_owned();
    let process = |args: Value| call(&registry, "process", args, &opts(None));
    for action in ["submit", "write"] {
        let out = process(json!({
            "action": action, "session_id": id, "data": "rm -rf scratch; touch from_process\n"
        }));
        assert_eq!(out["status"], "pending_approval", "{action}: {out}");
    }
    let out = process(json!({"action": "submit", "session_id": id, "data": "touch harmless"}));
    assert!(out.get("error").is_none_or(Value::is_null), "{out}");
    eventually("the safe input runs", Duration::from_secs(10), || {
        ws.path().join("harmless").exists()
    });
    process(json!({"action": "kill", "session_id": id}));
    assert!(!ws.path().join("from_process").exists());
}

#[test]
fn a_foreground_command_leaves_nothing_running_in_its_group() {
    let ws = TempDir::new().unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    let registry = registry(&ws_path, TerminalConfig::default());
    let token = format!("1000.{}1", std::process::id());
    let r = run(
        &registry,
        json!({"command": format!("sleep {token} & nohup sleep {token} >/dev/null 2>&1 & echo started")}),
    );
    assert_eq!(r["exit_code"], 0, "{r}");
    assert_eq!(r["output"], "started", "{r}");
    eventually(
        "the command's background children end with the call",
        Duration::from_secs(5),
        || !alive(&format!("sleep {token}")),
    );
}

#[test]
fn a_process_that_never_reads_its_stdin_cannot_hold_the_call() {
    let ws = TempDir::new().unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    // 1 MiB of input is more than the approval gate analyzes (it would wait for a
    // human); this test is about the write itself, so the gate is off.
    let mut config = TerminalConfig::default();
    config.approval.mode = hermetic::approval::Mode::Off;
    let registry = registry(&ws_path, config);
    let token = format!("1000.{}2", std::process::id());
    let data = "x".repeat(1024 * 1024);
    let started = call(
        &registry,
        "terminal",
        json!({"command": format!("sleep {token}"), "background": true}),
        &opts(None),
    );
    let id = started["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"))
        .to_owned();
    // A large write to a process that does not read: the call returns, not blocked.
    let wrote_at = Instant::now();
    let wrote = call(
        &registry,
        "process",
        json!({"action": "write", "session_id": id, "data": data}),
        &opts(None),
    );
    assert!(wrote_at.elapsed() < Duration::from_secs(20), "{wrote}");
    assert_eq!(wrote["status"], "pending", "{wrote}");
    // And it can still be killed.
    let killed = call(
        &registry,
        "process",
        json!({"action": "kill", "session_id": id}),
        &opts(None),
    );
    assert_eq!(killed["status"], "killed", "{killed}");
    eventually("the non-reader is killed", Duration::from_secs(10), || {
        !alive(&format!("sleep {token}"))
    });
}

/// A background command started from a thread that ends while it runs (as a
/// server's call threads do: tokio's blocking threads end once idle) runs to its own
/// end, on every backend of this host. bubblewrap's `--die-with-parent` is a
/// parent-death signal, and Linux sends it when the *thread* that spawned the
/// process exits.
#[test]
fn a_background_command_outlives_the_thread_that_started_it() {
    require("bwrap", "bubblewrap");
    let state = TempDir::new().unwrap();
    for config in [
        TerminalConfig::default(),
        TerminalConfig {
            backend: "bwrap".into(),
            ..TerminalConfig::default()
        },
        gvisor_config(state.path()),
    ] {
        let backend = config.backend.clone();
        let ws = TempDir::new().unwrap();
        let registry = registry(&ws.path().canonicalize().unwrap(), config);
        // The thread ends once the command runs (bwrap has set its parent-death signal
        // by then), as a server's thread ends some time after its call.
        let id = std::thread::scope(|s| {
            s.spawn(|| {
                let started = call(
                    &registry,
                    "terminal",
                    json!({"command": "echo up; sleep 3; echo survived", "background": true}),
                    &opts(None),
                );
                let id = started["session_id"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{backend}: {started}"))
                    .to_owned();
                eventually(
                    &format!("{backend}: the command runs"),
                    Duration::from_secs(30),
                    || {
                        let polled = call(
                            &registry,
                            "process",
                            json!({"action": "poll", "session_id": id}),
                            &opts(None),
                        );
                        polled["output_preview"]
                            .as_str()
                            .is_some_and(|o| o.contains("up"))
                    },
                );
                id
            })
            .join()
            .unwrap()
        });
        // The starting thread is gone; the command must still finish by itself.
        let waited = call(
            &registry,
            "process",
            json!({"action": "wait", "session_id": id, "timeout": 60}),
            &opts(None),
        );
        assert_eq!(
            waited["exit_code"], 0,
            "{backend}: killed with its thread: {waited}"
        );
        assert!(
            waited["output"]
                .as_str()
                .unwrap_or_default()
                .contains("survived"),
            "{backend}: {waited}"
        );
    }
}
