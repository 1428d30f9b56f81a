//! The hostile-guest suite: purpose-built components, one forbidden act each, every one
//! contained, and the host healthy afterwards (the next normal call succeeds).
use hermetic::policy::TenantPolicy;
use hermetic::{CallOptions, Registry, Secrets, ToolSource};
use hermetic_test_support::guests::{guest, tools_dir};
use hermetic_test_support::registry::{call, error_of, fixture, options};
use serde_json::{Value, json};
use std::os::unix::fs::symlink;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Why the test tool `name` does not load.
fn load_error(registry: &Registry, name: &str) -> String {
    let bytes = std::fs::read(guest(name)).unwrap();
    registry
        .load(&bytes, ToolSource::File(guest(name)))
        .unwrap_err()
        .to_string()
}

/// The next normal call works: the host is healthy.
fn assert_healthy(registry: &Registry) {
    assert_eq!(
        call(registry, "echo", json!({"message": "still here"}))["echo"],
        "still here"
    );
}

fn hostile(names: &[&str]) -> hermetic_test_support::registry::Fixture {
    let mut all = vec!["echo"];
    all.extend_from_slice(names);
    fixture(false, &all)
}

#[test]
fn an_infinite_loop_is_stopped_by_the_deadline() {
    let f = hostile(&["spin"]);
    let out = call(&f.registry, "spin", json!({}));
    assert_eq!(out["limit"], "time", "{out}");
    assert_healthy(&f.registry);
}

#[test]
fn deep_recursion_traps_without_hurting_the_host() {
    let f = hostile(&["recurse"]);
    for _ in 0..3 {
        let err = error_of(&call(&f.registry, "recurse", json!({})));
        assert!(err.starts_with("[TOOL_ERROR] the tool crashed"), "{err}");
        // Either the host's wasm stack guard or the guest's own shadow stack running off
        // its linear memory stops it; both end the instance, and both are reported as
        // what they are (not as "out of bounds memory access").
        assert!(err.contains("stack overflow"), "{err}");
        assert_healthy(&f.registry);
    }
}

#[test]
fn a_memory_bomb_hits_the_memory_limit() {
    let f = hostile(&["membomb"]);
    let out = call(&f.registry, "membomb", json!({}));
    assert_eq!(out["limit"], "memory", "{out}");
    assert_healthy(&f.registry);
}

/// The memory limit is per call, not per linear memory: `two_memories`
/// (tests/components/two_memories.wat) has two, each of which stays under its 4 MiB
/// limit while both together do not.
#[test]
fn a_component_with_two_memories_gets_one_memory_limit_for_both() {
    let f = hostile(&[]);
    let dir = tempfile::TempDir::new().unwrap();
    let wat = concat!(env!("CARGO_MANIFEST_DIR"), "/components/two_memories.wat");
    std::fs::write(
        dir.path().join("two_memories.wasm"),
        wat::parse_file(wat).unwrap(),
    )
    .unwrap();
    assert_eq!(f.registry.add_dir(dir.path()).unwrap(), vec![]);
    // 3 MiB in each memory: 6.1 MiB together, over the 4 MiB limit.
    let out = call(&f.registry, "two_memories", json!({}));
    assert_eq!(out["limit"], "memory", "{out}");
    assert_eq!(
        error_of(&out),
        format!(
            "[TOOL_ERROR] memory limit exceeded: the tool tried to grow its memory to {} bytes, over its {}-byte limit",
            (49 + 49) << 16,
            4 << 20
        )
    );
    // The twin: 1 MiB in each, 2.1 MiB together.
    let out = call(&f.registry, "two_memories", json!({"few": true}));
    assert_eq!(out, json!({"grew": true}));
    assert_healthy(&f.registry);
}

#[test]
fn a_huge_result_hits_the_result_cap() {
    let f = hostile(&["fail"]);
    let out = call(
        &f.registry,
        "fail",
        json!({"mode": "huge", "size": 50_000_000}),
    );
    assert!(
        out["limit"] == "result_size" || out["limit"] == "memory",
        "{out}"
    );
    assert_healthy(&f.registry);
}

#[test]
fn a_stdout_flood_hits_the_output_cap() {
    let f = hostile(&["flood"]);
    let out = call(&f.registry, "flood", json!({"mb": 100}));
    assert_eq!(out["limit"], "output", "{out}");
    assert_eq!(
        error_of(&out),
        "[TOOL_ERROR] output limit exceeded: the tool wrote more than 65536 bytes to stdout or stderr"
    );
    // Output under the cap is fine.
    assert!(call(&f.registry, "flood", json!({"mb": 0}))["wrote_mb"] == 0);
    assert_healthy(&f.registry);
}

fn escape(registry: &Registry, op: &str, path: &str) -> Value {
    call(
        registry,
        "escape",
        json!({"op": op, "path": path, "content": "pwned"}),
    )
}

/// The guest ran and its own file operation failed: the error is the guest's I/O error
/// as a tool error, not a host refusal, a load failure or an unknown tool (which would
/// also be "an error", and would let these tests pass without the sandbox being tried).
#[track_caller]
fn assert_refused_by_sandbox(what: &str, out: &Value) {
    let err = out["error"]
        .as_str()
        .unwrap_or_else(|| panic!("{what}: not refused: {out}"));
    assert!(
        err.starts_with("[TOOL_ERROR] ") && err.contains("os error"),
        "{what}: refused for another reason: {err}"
    );
}

#[test]
fn raw_file_access_outside_the_mount_is_refused_by_the_sandbox_itself() {
    let f = hostile(&["escape"]);
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    for path in [
        "/etc/passwd",
        "/etc/hostname",
        &format!("{home}/.bashrc"),
        "/workspace/../etc/passwd",
        "/workspace/../../../../etc/passwd",
        "../etc/passwd",
        "/proc/self/environ",
    ] {
        let out = escape(&f.registry, "read", path);
        assert_refused_by_sandbox(path, &out);
        assert!(!out.to_string().contains("root:"), "{path} leaked: {out}");
    }
    for dir in ["/", "/etc", &home, "/workspace/.."] {
        let out = escape(&f.registry, "list", dir);
        let listed = out["entries"].as_array().cloned().unwrap_or_default();
        let names: Vec<&str> = listed.iter().filter_map(Value::as_str).collect();
        assert!(
            !names.contains(&"etc") && !names.contains(&"passwd") && !names.contains(&"usr"),
            "{dir}: {out}"
        );
    }
    assert_healthy(&f.registry);
}

#[test]
fn a_symlink_planted_in_the_workspace_pointing_out_is_refused_by_the_sandbox() {
    let f = hostile(&["escape"]);
    let outside = tempfile::TempDir::new().unwrap();
    std::fs::write(outside.path().join("secret"), "TOP-SECRET").unwrap();
    symlink(
        outside.path().join("secret"),
        f.workspace.path().join("file-link"),
    )
    .unwrap();
    symlink(outside.path(), f.workspace.path().join("dir-link")).unwrap();
    symlink("/etc/passwd", f.workspace.path().join("passwd-link")).unwrap();
    for path in [
        "/workspace/file-link",
        "/workspace/dir-link/secret",
        "/workspace/passwd-link",
    ] {
        let out = escape(&f.registry, "read", path);
        assert_refused_by_sandbox(path, &out);
        assert!(
            !out.to_string().contains("TOP-SECRET") && !out.to_string().contains("root:"),
            "{out}"
        );
    }
    let out = escape(&f.registry, "list", "/workspace/dir-link");
    assert_refused_by_sandbox("list /workspace/dir-link", &out);
    // A symlink that stays inside the workspace is fine (the twin of the hostile act).
    std::fs::write(f.workspace.path().join("real.txt"), "inside").unwrap();
    symlink("real.txt", f.workspace.path().join("inner-link")).unwrap();
    assert_eq!(
        escape(&f.registry, "read", "/workspace/inner-link")["content"],
        "inside"
    );
}

#[test]
fn writing_to_a_read_only_mount_is_refused() {
    let f = hostile(&["escape"]);
    for path in [
        "/workspace/new.txt",
        "/workspace/sub/new.txt",
        "/tmp/x",
        "/etc/evil",
    ] {
        let out = escape(&f.registry, "write", path);
        assert_refused_by_sandbox(path, &out);
    }
    std::fs::write(f.workspace.path().join("existing.txt"), "original").unwrap();
    let out = escape(&f.registry, "write", "/workspace/existing.txt");
    assert_refused_by_sandbox("write /workspace/existing.txt", &out);
    assert_eq!(
        std::fs::read_to_string(f.workspace.path().join("existing.txt")).unwrap(),
        "original"
    );
    assert!(!f.workspace.path().join("new.txt").exists());
    // Reading the same mount works: it is the write that is refused.
    assert_eq!(
        escape(&f.registry, "read", "/workspace/existing.txt")["content"],
        "original"
    );
}

#[test]
fn a_tool_sees_exactly_the_env_it_declared_and_was_granted() {
    let (ws, mut options) = options();
    options.policy.defaults.env.extend([
        "CARGO_PKG_NAME".to_owned(),
        "HERMETIC_TEST_SECRET".to_owned(),
        "HOME".to_owned(),
    ]);
    options.secrets = Secrets::from_pairs([(
        "HERMETIC_TEST_SECRET".to_owned(),
        "from-secrets-file".to_owned(),
    )]);
    let registry = Registry::new(options).unwrap();
    let dir = tools_dir(&["envdump"]);
    registry.add_dir(dir.path()).unwrap();
    let out = call(&registry, "envdump", json!({}));
    assert_eq!(
        out["env"],
        json!({"CARGO_PKG_NAME": "hermetic-tests", "HERMETIC_TEST_SECRET": "from-secrets-file"}),
        "PATH was declared but not granted; HOME granted but not declared"
    );
    assert_eq!(out["args"], json!([]));
    drop(ws);
}

/// wasi:sockets is linked (interpreters import it whether or not a tool uses it) with
/// every use refused: the tool loads, its connection is denied before any socket
/// exists, and the listener it aimed at never sees it.
#[test]
fn a_component_using_raw_sockets_loads_and_every_socket_is_refused() {
    // Granted its declared HTTP destination: no grant turns into a raw socket.
    let root = tempfile::tempdir().unwrap();
    let registry = hermetic_test_support::registry::policy_registry(
        root.path(),
        "[tools.socket]\nnetwork = [\"http://127.0.0.1:1\"]\n",
        false,
    );
    let tools = tools_dir(&["socket", "echo"]);
    assert_eq!(registry.add_dir(tools.path()).unwrap(), vec![]);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    for target in [addr.as_str(), "localhost:80", "[::1]:22", "10.0.0.1:443"] {
        let err = error_of(&call(&registry, "socket", json!({"addr": target})));
        assert!(err.starts_with("[TOOL_ERROR]"), "{target}: {err}");
        // An address: the socket is refused; a name: its lookup is.
        let refused = if target.starts_with("localhost") {
            err.contains("lookup")
        } else {
            err.contains("denied") || err.contains("not allowed") || err.contains("ermission")
        };
        assert!(refused, "{target}: {err}");
    }
    assert!(
        listener.accept().is_err(),
        "a guest's socket reached the host's listener"
    );
    assert_healthy(&registry);
}

#[test]
fn a_component_importing_an_interface_the_host_lacks_is_refused_at_load() {
    let f = hostile(&[]);
    let err = load_error(&f.registry, "alien");
    assert!(
        err.starts_with("does not fit the hermetic:tool world"),
        "{err}"
    );
    assert!(err.contains("test:alien/probe"), "{err}");
}

#[test]
fn invalid_json_and_a_mismatched_schema_name_are_contained() {
    let f = hostile(&["fail"]);
    let err = error_of(&call(&f.registry, "fail", json!({"mode": "invalid_json"})));
    assert!(err.contains("not valid JSON"), "{err}");
    let err = load_error(&f.registry, "bad_schema");
    assert!(err.contains("differs from the declared name"), "{err}");
    // 2 Mi characters, 4 MiB: measured where the guest left it, refused by its size.
    let err = load_error(&f.registry, "huge_schema");
    assert!(
        err.contains("2097") && err.contains("characters, over the 262144-byte limit"),
        "{err}"
    );
    assert_healthy(&f.registry);
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn a_thousand_calls_from_ten_tenants_complete_while_one_tenants_tool_spins() {
    let (_ws, mut options) = options();
    for i in 0..10 {
        options
            .policy
            .tenants
            .insert(format!("t{i}"), TenantPolicy::default());
    }
    // t0's spinning call lasts 10 s: long enough to overlap all 1,000 other calls.
    options
        .policy
        .tenants
        .get_mut("t0")
        .unwrap()
        .limits
        .timeout_ms = Some(10_000);
    let registry = Arc::new(Registry::new(options).unwrap());
    let dir = tools_dir(&["echo", "spin_long"]);
    assert_eq!(registry.add_dir(dir.path()).unwrap(), vec![]);
    assert_healthy(&registry);
    let before = rss_kib();

    let spinning = Arc::new(AtomicBool::new(true));
    let spinner = {
        let registry = registry.clone();
        let spinning = spinning.clone();
        std::thread::spawn(move || {
            // t0's tool spins until its deadline; it must not starve anyone else.
            let options = CallOptions::default().with_tenant("t0");
            let out = registry.call("spin_long", "{}", &options);
            spinning.store(false, Ordering::SeqCst);
            out
        })
    };
    let done = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..20)
        .map(|w| {
            let registry = registry.clone();
            let done = done.clone();
            std::thread::spawn(move || {
                for i in 0..50 {
                    let tenant = format!("t{}", 1 + (w + i) % 9);
                    let options = CallOptions::default().with_tenant(tenant.clone());
                    let message = format!("w{w}-{i}");
                    let out =
                        registry.call("echo", &json!({"message": message}).to_string(), &options);
                    let v: Value = serde_json::from_str(&out).unwrap();
                    assert_eq!(v["echo"], message, "{out}");
                    assert_eq!(v["tenant"], tenant);
                    done.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    assert_eq!(done.load(Ordering::SeqCst), 1000);
    assert!(
        spinning.load(Ordering::SeqCst),
        "the 1,000 calls finished while the spinner still ran"
    );
    let spun = spinner.join().unwrap();
    assert!(spun.contains("time limit exceeded"), "{spun}");
    let grown_mib = rss_kib().saturating_sub(before) / 1024;
    assert!(grown_mib < 512, "resident memory grew by {grown_mib} MiB");
    assert_healthy(&registry);
}

/// The canonical ABI's post-return frees `handle`'s result; `scribble` overwrites what
/// it frees (as Python's and JavaScript's allocators reuse it at once). The host copies
/// the result and the error out before that: both come back exactly, multi-byte
/// characters and all, long and short.
#[test]
fn results_and_errors_are_copied_out_before_the_guest_frees_them() {
    let f = hostile(&["scribble"]);
    for text in [
        "short".to_owned(),
        "héllo wörld ✓ 🌤️".repeat(3),
        "ü".repeat(60_000),
        "x".repeat(90_000),
    ] {
        let ok = call(&f.registry, "scribble", json!({"mode": "ok", "text": text}));
        assert_eq!(
            ok["echo"].as_str(),
            Some(text.as_str()),
            "{:.80}",
            ok.to_string()
        );
        let err = error_of(&call(
            &f.registry,
            "scribble",
            json!({"mode": "error", "text": text}),
        ));
        let head: String = text.chars().take(20).collect();
        assert!(err.contains(&head), "{err:.200}");
        assert!(!err.contains('\u{FFFD}'), "{err:.200}");
    }
    // Over the cap (100,000 characters by default): refused, measured in characters.
    let over = call(
        &f.registry,
        "scribble",
        json!({"mode": "ok", "text": "é".repeat(100_001)}),
    );
    let err = error_of(&over);
    assert!(err.contains("100012 characters"), "{err}");
    assert_healthy(&f.registry);
}

/// A component that creates more core instances than its sandbox holds is refused
/// before anything is compiled, with the count it would create: here the operator's
/// default for tools that ask for no number is under what any Rust tool needs.
#[test]
fn a_component_over_its_core_instances_is_refused_before_compiling() {
    let (_ws, mut options) = options();
    options.policy.defaults.limits.default_core_instances = 1;
    let registry = Registry::new(options).unwrap();
    let err = load_error(&registry, "echo");
    let found = err
        .strip_prefix("cannot be instantiated: it creates ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse::<u32>().ok())
        .unwrap_or_else(|| panic!("{err}"));
    assert!(found > 1, "{err}");
    assert!(
        err.contains("core wasm instances, over 1, its sandbox's limit"),
        "{err}"
    );
    assert!(err.contains("core_instances = N"), "{err}");
}
