//! The key-value capability (issue 35.2), with real tools from guest-tools/ calling
//! `wasi:keyvalue`: data kept across hosts in the embedded file, apart per tenant and
//! (for session scope) per session, under the operator's quotas; the store refused to
//! a tool not granted it or not declaring it; hostile use — a million keys, a 100 MB
//! value, keys with `/`, `..`, NUL or 10 KB, bad bucket names, two sessions writing
//! one key at once — a clear error each, the host serving, nothing of another's
//! reachable.
use hermetic::{CallOptions, Registry};
use hermetic_tests::{policy_registry_with, tools_dir};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;

const POLICY: &str = "[mounts.workspace]\npath = \"ws\"\naccess = \"rw\"\n\n\
    [tenants.acme]\n[tenants.globex]\n[tenants.initech]\nkeyvalue = false\n\n\
    [tools.kvprobe]\nkeyvalue = { max_keys = 50, max_value_bytes = 4096, max_total_bytes = 65536 }\n\n\
    [tools.kvprobe_session]\nkeyvalue = true\n";

/// A registry over `root` whose key-value data is the file `root/kv.redb`.
fn host(root: &Path, policy: &str) -> Registry {
    std::fs::create_dir_all(root.join("ws")).unwrap();
    let file = root.join("kv.redb");
    let registry = policy_registry_with(root, policy, false, |options| {
        options.keyvalue = Some(Arc::new(hermetic::EmbeddedKeyValueFile::new(file)));
    });
    let dir = tools_dir(&["kvprobe", "kvprobe_session", "kv_undeclared"]);
    let problems = registry.add_dir(dir.path()).unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].source.ends_with("kv_undeclared.wasm")
            && problems[0].reason.contains("wasi:keyvalue"),
        "an undeclared use of the store does not load: {problems:?}"
    );
    registry
}

fn call_as(registry: &Registry, tool: &str, tenant: &str, session: &str, args: Value) -> Value {
    let options = CallOptions::default()
        .with_tenant(tenant)
        .with_session(session);
    let out = registry.call(tool, &args.to_string(), &options);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

fn probe(registry: &Registry, tenant: &str, args: Value) -> Value {
    call_as(registry, "kvprobe", tenant, "s1", args)
}

#[test]
fn data_persists_per_tenant_and_per_session_and_is_refused_where_not_granted() {
    let dir = tempfile::TempDir::new().unwrap();
    {
        let registry = host(dir.path(), POLICY);
        assert_eq!(
            probe(
                &registry,
                "acme",
                json!({"op": "set", "key": "notes/../x", "value": "a"})
            ),
            json!({"ok": true})
        );
        assert_eq!(
            probe(
                &registry,
                "acme",
                json!({"op": "incr", "key": "n", "by": 5})
            )["value"],
            5
        );
        // Another tenant's store is another store, whatever the key says.
        assert_eq!(
            probe(
                &registry,
                "globex",
                json!({"op": "get", "key": "notes/../x"})
            )["value"],
            Value::Null
        );
        assert_eq!(
            probe(&registry, "globex", json!({"op": "list"}))["keys"],
            json!([])
        );
        // Session scope: one session's data is not another's; tenant scope crosses
        // sessions.
        let session = |s: &str, args: Value| call_as(&registry, "kvprobe_session", "acme", s, args);
        session("s1", json!({"op": "set", "key": "todo", "value": "one"}));
        assert_eq!(
            session("s2", json!({"op": "get", "key": "todo"}))["value"],
            Value::Null
        );
        assert_eq!(
            session("s1", json!({"op": "get", "key": "todo"}))["value"],
            "one"
        );
        assert_eq!(
            call_as(
                &registry,
                "kvprobe",
                "acme",
                "s9",
                json!({"op": "get", "key": "notes/../x"})
            )["value"],
            "a"
        );
        // A tenant that does not allow the store: the tool is unavailable to it.
        let refused = probe(&registry, "initech", json!({"op": "list"}));
        let error = refused["error"].as_str().unwrap();
        assert!(error.contains("key-value store"), "{refused}");
    }
    // A new host over the same file: everything acknowledged is there.
    let registry = host(dir.path(), POLICY);
    assert_eq!(
        probe(&registry, "acme", json!({"op": "get", "key": "notes/../x"}))["value"],
        "a"
    );
    assert_eq!(
        probe(
            &registry,
            "acme",
            json!({"op": "incr", "key": "n", "by": 2})
        )["value"],
        7
    );
    assert_eq!(
        probe(&registry, "acme", json!({"op": "list"}))["keys"],
        json!(["n", "notes/../x"])
    );
}

#[test]
fn hostile_keys_values_and_floods_get_clear_errors() {
    let dir = tempfile::TempDir::new().unwrap();
    let registry = host(dir.path(), POLICY);
    let error = |args: Value| -> String {
        let out = probe(&registry, "acme", args);
        out["error"]
            .as_str()
            .unwrap_or_else(|| panic!("expected an error: {out}"))
            .to_owned()
    };
    // A million keys: refused at the quota, with what to do.
    let flood = probe(&registry, "acme", json!({"op": "flood"}));
    assert_eq!(flood["written"], 50, "{flood}");
    assert!(
        flood["refused"]
            .as_str()
            .unwrap()
            .contains("holds its 50 keys: delete some first"),
        "{flood}"
    );
    // globex is not affected by acme's full store.
    assert_eq!(
        probe(
            &registry,
            "globex",
            json!({"op": "set", "key": "k", "value": "v"})
        ),
        json!({"ok": true})
    );
    probe(&registry, "acme", json!({"op": "delete", "key": "k0"}));
    // A value over the limit of one value; a 100 MB one never gets past the tool's
    // memory limit.
    assert!(
        error(json!({"op": "big", "key": "k0", "size": 5000}))
            .contains("over the 4096-byte limit of one value")
    );
    let huge = error(json!({"op": "big", "key": "k0", "size": 100_000_000}));
    assert!(huge.contains("memory limit"), "{huge}");
    // Keys: NUL, control characters, 10 KB, empty — each refused, saying why.
    assert!(
        error(json!({"op": "set", "key": "a\u{0}b", "value": "v"})).contains("control characters")
    );
    assert!(
        error(json!({"op": "set", "key": "k".repeat(10_240), "value": "v"}))
            .contains("over the 512-byte limit")
    );
    assert!(error(json!({"op": "get", "key": ""})).contains("cannot be empty"));
    // Buckets are names, not paths.
    assert!(error(json!({"op": "list", "bucket": "../other"})).contains("a bucket is"));
    assert!(error(json!({"op": "list", "bucket": "x".repeat(65)})).contains("a bucket is"));
    assert_eq!(
        probe(
            &registry,
            "acme",
            json!({"op": "list", "bucket": "archive.2026"})
        )["keys"],
        json!([])
    );
    // The host still serves.
    assert_eq!(
        probe(
            &registry,
            "acme",
            json!({"op": "set", "key": "k0", "value": "back"})
        ),
        json!({"ok": true})
    );
}

#[test]
fn two_sessions_writing_one_key_at_once_lose_no_write() {
    let dir = tempfile::TempDir::new().unwrap();
    let registry = Arc::new(host(dir.path(), POLICY));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let registry = Arc::clone(&registry);
            std::thread::spawn(move || {
                for _ in 0..25 {
                    let out = call_as(
                        &registry,
                        "kvprobe",
                        "acme",
                        &format!("s{t}"),
                        json!({"op": "incr", "key": "shared"}),
                    );
                    assert!(out["value"].is_u64(), "{out}");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(
        probe(&registry, "acme", json!({"op": "get", "key": "shared"}))["value"],
        "100"
    );
}

#[test]
fn a_tool_not_granted_the_store_is_unavailable() {
    let dir = tempfile::TempDir::new().unwrap();
    let registry = host(
        dir.path(),
        "[mounts.workspace]\npath = \"ws\"\naccess = \"rw\"\n\n[tools.kvprobe_session]\nkeyvalue = true\n",
    );
    let out = probe(&registry, "", json!({"op": "list"}));
    let error = out["error"].as_str().unwrap();
    assert!(
        error.contains("needs the key-value store, which the operator does not grant"),
        "{out}"
    );
}

/// `keyvalue-swap`: written only over the value expected (absent, or exactly these
/// bytes); and read-change-swap loops from four sessions at once keep every change.
#[test]
fn swap_writes_only_over_the_expected_value_and_loses_no_concurrent_change() {
    let dir = tempfile::TempDir::new().unwrap();
    let registry = Arc::new(host(dir.path(), POLICY));
    let swap = |expected: Value, value: &str| {
        probe(
            &registry,
            "acme",
            json!({"op": "swap", "key": "k", "expected": expected, "value": value}),
        )["swapped"]
            .clone()
    };
    assert_eq!(swap(json!("anything"), "a"), false, "absent is not a value");
    assert_eq!(swap(Value::Null, "a"), true);
    assert_eq!(swap(Value::Null, "b"), false, "present now");
    assert_eq!(swap(json!("b"), "c"), false);
    assert_eq!(swap(json!("a"), ""), true);
    assert_eq!(swap(json!(""), "d"), true, "empty is a value");
    assert_eq!(swap(json!("zzz"), "d"), true, "already holds it");
    // An expected value longer than the quota lets a value be (4,096 bytes): not there.
    assert_eq!(swap(json!("e".repeat(5000)), "f"), false);
    assert_eq!(
        probe(&registry, "acme", json!({"op": "get", "key": "k"}))["value"],
        "d"
    );
    // Another tenant's `k` is another key.
    assert_eq!(
        probe(
            &registry,
            "globex",
            json!({"op": "swap", "key": "k", "expected": "d", "value": "x"})
        )["swapped"],
        false
    );
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let registry = Arc::clone(&registry);
            std::thread::spawn(move || {
                for i in 0..10 {
                    let out = call_as(
                        &registry,
                        "kvprobe",
                        "acme",
                        &format!("s{t}"),
                        json!({"op": "append", "key": "log", "value": format!("{t}.{i}")}),
                    );
                    assert!(out["tries"].is_u64(), "{out}");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let log = probe(&registry, "acme", json!({"op": "get", "key": "log"}));
    let mut seen: Vec<&str> = log["value"]
        .as_str()
        .unwrap()
        .split(',')
        .filter(|s| !s.is_empty())
        .collect();
    seen.sort_unstable();
    let mut want: Vec<String> = (0..4)
        .flat_map(|t| (0..10).map(move |i| format!("{t}.{i}")))
        .collect();
    want.sort_unstable();
    assert_eq!(seen, want);
}
