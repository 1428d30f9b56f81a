//! The embedded key-value store under `kill -9`: a real `hermetic serve --stdio`
//! answers a stream of writes; the process is killed (SIGKILL) while writes are still
//! arriving; every write it had acknowledged is in the store when it is opened again.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

use hermetic::KeyValueBackend as _;
use hermetic_test_support::guests::{guest, test_cache};
use hermetic_test_support::mcp_stdio;
use serde_json::{Value, json};
use std::io::Write;
use std::process::{Command, Stdio};

#[test]
fn a_kill_during_writes_loses_no_acknowledged_write() {
    let root = tempfile::TempDir::new().unwrap();
    let dir = root.path();
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::copy(guest("kvprobe"), dir.join("tools/kvprobe.wasm")).unwrap();
    std::fs::write(
        dir.join("policy.toml"),
        "[mounts.workspace]\npath = \"ws\"\naccess = \"rw\"\n\n[defaults]\nkeyvalue = true\n\n\
         [keyvalue]\nfile = \"state/kv.redb\"\n",
    )
    .unwrap();
    let mcp_stdio::Session {
        mut child,
        mut stdin,
        mut lines,
    } = mcp_stdio::open(
        Command::new(env!("CARGO_BIN_EXE_hermetic"))
            .current_dir(dir)
            .env("HERMETIC_CACHE_DIR", test_cache())
            .args([
                "--policy",
                "policy.toml",
                "--no-bundled",
                "--tools-dir",
                "tools",
            ])
            .args(["serve", "--stdio", "--no-watch"])
            .stderr(Stdio::null()),
    );
    const WRITES: u64 = 3000;
    // Sent from a thread: the server's answers must be read while the requests go in
    // (a full pipe each way would stop both).
    let writer = std::thread::spawn(move || {
        for i in 1..=WRITES {
            let request = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
                "name": "kvprobe", "arguments": {"op": "set", "key": format!("k{i}"), "value": format!("v{i}")}}});
            if writeln!(stdin, "{request}").is_err() {
                return; // the server is gone (killed)
            }
        }
    });
    // Acknowledged writes, until a good part of them are in; then SIGKILL while the
    // rest are still being written.
    let mut acknowledged = Vec::new();
    while acknowledged.len() < 60 {
        let line = lines.next().expect("an answer").unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        if let Some(id) = v["id"].as_u64() {
            let text = v["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default();
            assert!(text.contains("\"ok\":true"), "{line}");
            acknowledged.push(id);
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    writer.join().unwrap();
    // Opened again (the process is gone, so is its lock): every acknowledged write.
    let store = hermetic::EmbeddedKeyValue::open(&dir.join("state/kv.redb")).unwrap();
    // A tool from a file: its data is `ext:` and its name (no bundled tool's).
    let ns = hermetic::KeyValueNamespace::new(
        std::sync::Arc::new(hermetic::KeyValueStore::new(
            hermetic::KeyValueStoreId::tenant("ext:kvprobe", ""),
        )),
        "",
    );
    for id in &acknowledged {
        let value = store.get(&ns, &format!("k{id}")).unwrap();
        assert_eq!(value.as_deref(), Some(format!("v{id}").as_bytes()), "k{id}");
    }
    let (keys, _) = store.list(&ns, 0).unwrap();
    assert!(keys.len() >= acknowledged.len());
    eprintln!(
        "{} writes acknowledged before the kill, {} in the store, of {WRITES} sent",
        acknowledged.len(),
        keys.len()
    );
}
