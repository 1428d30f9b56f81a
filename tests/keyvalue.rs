//! The key-value capability (issue 35.2), with real tools from guest-tools/ calling
//! `wasi:keyvalue`: data kept across hosts in the embedded file, apart per tenant and
//! (for session scope) per session, under the operator's quotas; the store refused to
//! a tool not granted it or not declaring it; hostile use — a million keys, a 100 MB
//! value, keys with `/`, `..`, NUL or 10 KB, bad bucket names, two sessions writing
//! one key at once — a clear error each, the host serving, nothing of another's
//! reachable.
use hermetic::{CallOptions, Registry};
use hermetic_test_support::guests::tools_dir;
use hermetic_test_support::registry::policy_registry_with;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;

const POLICY: &str = "[mounts.workspace]\npath = \"ws\"\naccess = \"rw\"\n\n\
    [tenants.acme]\n[tenants.globex]\n[tenants.initech]\nkeyvalue = false\n\n\
    [tools.kvprobe]\nkeyvalue = { max_keys = 50, max_value_bytes = 4096, max_total_bytes = 65536 }\n\n\
    [tools.kvprobe_session]\nkeyvalue = true\n";

/// A registry over `root` whose key-value data is the file `root/kv.redb`.
fn host(root: &Path, policy: &str) -> Registry {
    host_at(root, policy, &root.join("kv.redb"))
}

/// A registry over `root` whose key-value data is the file `file`, under the policy's
/// `[keyvalue]` settings.
fn host_at(root: &Path, policy: &str, file: &Path) -> Registry {
    std::fs::create_dir_all(root.join("ws")).unwrap();
    let file = file.to_path_buf();
    let registry = policy_registry_with(root, policy, false, |options| {
        let loaded = hermetic_config::load(&root.join("policy.toml"), root).unwrap();
        options.keyvalue = Some(Arc::new(hermetic::EmbeddedKeyValueFile::with_settings(
            file,
            loaded.keyvalue_settings,
        )));
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
        // The file holds tenants' data: the host's alone.
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(dir.path().join("kv.redb"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
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
            .contains("holds its 50 keys (in all its buckets): delete some first"),
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

/// The cursor of `list-keys` is the guest's: whatever it says, a page holds the
/// bucket's own keys and ends (a huge cursor read every tenant's data after the
/// bucket's, inside one host call; the embedded unit test counts what is read).
#[test]
fn a_guest_chosen_cursor_lists_only_its_own_bucket() {
    let dir = tempfile::TempDir::new().unwrap();
    let registry = host(dir.path(), POLICY);
    for (tenant, n) in [("acme", 3), ("globex", 40)] {
        let flood = probe(&registry, tenant, json!({"op": "flood", "n": n}));
        assert_eq!(flood["written"], n, "{flood}");
    }
    probe(
        &registry,
        "acme",
        json!({"op": "set", "bucket": "later", "key": "elsewhere", "value": "v"}),
    );
    let page = |cursor: Value| probe(&registry, "acme", json!({"op": "page", "cursor": cursor}));
    assert_eq!(
        page(Value::Null),
        json!({"keys": ["k0", "k1", "k2"], "cursor": null})
    );
    assert_eq!(page(json!(2)), json!({"keys": ["k2"], "cursor": null}));
    for past in [json!(3), json!(4), json!(1_000_000), json!(u64::MAX)] {
        assert_eq!(
            page(past.clone()),
            json!({"keys": [], "cursor": null}),
            "cursor {past}"
        );
    }
    assert_eq!(
        probe(&registry, "globex", json!({"op": "page", "cursor": 39})),
        json!({"keys": ["k9"], "cursor": null}),
        "globex's own 40th key in key order"
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

/// A quota holds for a tool's store as a whole: four buckets do not hold four times
/// `max_keys` (they did: the use was counted per bucket).
#[test]
fn a_quota_holds_for_the_store_whatever_buckets_it_spreads_over() {
    let dir = tempfile::TempDir::new().unwrap();
    let registry = host(dir.path(), POLICY);
    let mut written = 0;
    for bucket in ["a", "b", "c", "d"] {
        let flood = probe(
            &registry,
            "acme",
            json!({"op": "flood", "n": 20, "bucket": bucket}),
        );
        written += flood["written"].as_u64().unwrap();
    }
    assert_eq!(
        written, 50,
        "max_keys = 50 for the store, in all its buckets"
    );
    let refused = probe(
        &registry,
        "acme",
        json!({"op": "set", "bucket": "e", "key": "k", "value": "v"}),
    );
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("holds its 50 keys (in all its buckets)"),
        "{refused}"
    );
    // A key deleted in one bucket makes room in another.
    probe(
        &registry,
        "acme",
        json!({"op": "delete", "bucket": "a", "key": "k0"}),
    );
    assert_eq!(
        probe(
            &registry,
            "acme",
            json!({"op": "set", "bucket": "e", "key": "k", "value": "v"})
        ),
        json!({"ok": true})
    );
}

/// A tenant's session stores share 8 keys; they expire only after an hour idle, so
/// nothing below depends on how fast the calls run.
const SESSIONS_POLICY: &str = "[mounts.workspace]\npath = \"ws\"\naccess = \"rw\"\n\n\
    [tenants.acme]\n[tenants.globex]\n\n\
    [tools.kvprobe]\nkeyvalue = { max_keys = 50 }\n\n\
    [tools.kvprobe_session]\nkeyvalue = { max_keys = 5 }\n\n\
    [keyvalue]\nsessions_max_keys = 8\nsession_expiry_secs = 3600\n";

fn session_probe(registry: &Registry, tenant: &str, session: &str, args: Value) -> Value {
    call_as(registry, "kvprobe_session", tenant, session, args)
}

/// Sessions cannot multiply a quota: a tenant's session stores together are held to
/// `[keyvalue] sessions_max_keys`; a session's stores go when it ends, which frees
/// their share; tenant stores are not held to it.
#[test]
fn sessions_share_one_ceiling_and_end_with_their_session() {
    let dir = tempfile::TempDir::new().unwrap();
    let registry = host(dir.path(), SESSIONS_POLICY);
    let flood =
        |session: &str| session_probe(&registry, "acme", session, json!({"op": "flood", "n": 5}));
    let written: Vec<u64> = ["s1", "s2", "s3", "s4"]
        .iter()
        .map(|s| flood(s)["written"].as_u64().unwrap())
        .collect();
    assert_eq!(written, [5, 3, 0, 0], "eight keys across acme's sessions");
    let refused = flood("s5");
    assert!(
        refused["refused"]
            .as_str()
            .unwrap()
            .contains("session stores hold their 8 keys together"),
        "{refused}"
    );
    // Another tenant's sessions, and the tenant's own tenant-scope store, have their
    // own room.
    assert_eq!(
        session_probe(&registry, "globex", "s1", json!({"op": "flood", "n": 5}))["written"],
        5
    );
    assert_eq!(
        probe(&registry, "acme", json!({"op": "flood", "n": 10}))["written"],
        10
    );

    // s1 ends: its store goes, its five keys are free for another session.
    let kv = registry.dispatcher().keyvalue();
    assert_eq!(kv.end_session("acme", "s1").unwrap(), 1);
    assert_eq!(
        session_probe(&registry, "acme", "s1", json!({"op": "list"}))["keys"],
        json!([])
    );
    assert_eq!(flood("s3")["written"], 5);
    assert_eq!(flood("s6")["written"], 0, "s2's 3 and s3's 5: the ceiling");
}

/// Idle session stores expire on their own (`session_expiry_secs`) and free their
/// share of the ceiling; tenant stores never expire. Waits for the sweep with a
/// generous bound: what is asserted holds however slowly the calls run.
#[test]
fn idle_session_stores_expire_and_free_their_share() {
    let dir = tempfile::TempDir::new().unwrap();
    let registry = host(
        dir.path(),
        &SESSIONS_POLICY.replace("session_expiry_secs = 3600", "session_expiry_secs = 1"),
    );
    // One call each: s1's five keys, and the tenant's own store.
    assert_eq!(
        session_probe(&registry, "acme", "s1", json!({"op": "flood", "n": 5}))["written"],
        5
    );
    assert_eq!(
        probe(&registry, "acme", json!({"op": "flood", "n": 10}))["written"],
        10
    );
    let kv = registry.dispatcher().keyvalue();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let left = kv
            .stores(&hermetic::KeyValueStoreFilter::default())
            .unwrap();
        if left.iter().all(|s| s.id.session.is_none()) {
            assert_eq!(left.len(), 1, "{left:?}");
            assert_eq!(left[0].id.tool, "ext:kvprobe");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "idle session stores never expired: {left:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // Had s1's share stayed, 5 + 5 would be over the 8 keys: only 3 would fit.
    assert_eq!(
        session_probe(&registry, "acme", "s2", json!({"op": "flood", "n": 5}))["written"],
        5,
        "the expired store's share is free"
    );
    assert_eq!(
        probe(&registry, "acme", json!({"op": "list"}))["keys"]
            .as_array()
            .unwrap()
            .len(),
        10
    );
}

/// A tmpfs of `size` mounted at `dir` for the test's life (tests run as root).
struct SmallDisk(std::path::PathBuf);

impl SmallDisk {
    fn mount(dir: &Path, size: &str) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        let status = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(dir)
            .status()
            .unwrap();
        assert!(
            status.success(),
            "mounting a tmpfs needs root (CI runs the tests as root)"
        );
        Self(dir.to_path_buf())
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// Fills the filesystem of `dir` with the file `dir/filler` until it says it is full.
fn fill(dir: &Path) {
    use std::io::Write as _;
    let mut filler = std::fs::File::create(dir.join("filler")).unwrap();
    let chunk = vec![0u8; 4096];
    loop {
        match filler.write_all(&chunk) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(28) => break,
            Err(e) => panic!("filling the disk: {e}"),
        }
    }
    let _ = filler.sync_all();
}

/// A full disk: the write is refused with a clear error and everything acknowledged
/// before stays; once space is freed, writes work again without a restart (redb
/// refuses every call after an I/O error until reopened: the store stayed broken).
#[test]
fn a_full_disk_is_a_clear_error_and_writes_resume_once_space_is_freed() {
    let dir = tempfile::TempDir::new().unwrap();
    let disk = dir.path().join("disk");
    let _mounted = SmallDisk::mount(&disk, "4m");
    let policy = "[mounts.workspace]\npath = \"ws\"\naccess = \"rw\"\n\n\
        [tools.kvprobe]\nkeyvalue = { max_value_bytes = 1048576 }\n";
    let registry = host_at(dir.path(), policy, &disk.join("kv.redb"));
    let set = |key: &str, size: u64| {
        probe(
            &registry,
            "",
            json!({"op": "big", "key": key, "size": size}),
        )
    };
    assert_eq!(set("before", 1000), json!({"ok": true}));
    fill(&disk);
    let full = set("big", 1_000_000);
    let error = full["error"].as_str().unwrap_or_else(|| panic!("{full}"));
    assert!(
        error.contains("the disk holding the key-value store is full"),
        "{full}"
    );
    assert!(error.contains("once space is freed"), "{full}");
    std::fs::remove_file(disk.join("filler")).unwrap();
    // Opened again by the next call (at most once a second): no restart.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let out = set("big", 1_000_000);
        if out == json!({"ok": true}) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the store never came back: {out}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let listed = probe(&registry, "", json!({"op": "list"}));
    assert_eq!(listed["keys"], json!(["before", "big"]), "{listed}");
}

/// `[keyvalue]`'s settings are read; a zero, or an expiry over a year, refused with
/// what to write instead.
#[test]
fn keyvalue_settings_are_read_and_zero_or_too_long_is_refused() {
    let dir = tempfile::TempDir::new().unwrap();
    let load = |text: &str| {
        std::fs::write(dir.path().join("p.toml"), text).unwrap();
        hermetic_config::load(&dir.path().join("p.toml"), dir.path())
    };
    let loaded = load("[keyvalue]\nsessions_max_keys = 7\nsession_expiry_secs = 60\n").unwrap();
    assert_eq!(
        loaded.keyvalue_settings,
        hermetic::KeyValueSettings {
            sessions_max_keys: 7,
            session_expiry: std::time::Duration::from_secs(60),
            ..hermetic::KeyValueSettings::default()
        }
    );
    assert_eq!(
        load("").unwrap().keyvalue_settings,
        hermetic::KeyValueSettings::default()
    );
    let e = load("[keyvalue]\nsession_expiry_secs = 0\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(
            "keyvalue.session_expiry_secs must be positive (leave it out for the default, 86400)"
        ),
        "{e}"
    );
    // Over a year: refused (Redis's expiries were written by Lua in exponent form,
    // refused after the data was written).
    assert!(load("[keyvalue]\nsession_expiry_secs = 31536000\n").is_ok());
    let e = load("[keyvalue]\nsession_expiry_secs = 31536001\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("keyvalue.session_expiry_secs must be at most 31536000 (365 days)"),
        "{e}"
    );
    let e = load("[keyvalue]\nsessions_max = 5\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("sessions_max"), "unknown keys are refused: {e}");
}
