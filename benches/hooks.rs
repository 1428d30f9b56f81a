//! What a hook costs a call: `echo` through the registry with no hook, and with one
//! hook that does nothing (the test hook with no settings: `pre-call` allows,
//! `post-call` keeps) — two more fresh sandboxes per call, each instantiated and
//! called once. The gap is the overhead of an empty hook per call (README "Hooks").
//! And with the bundled `secret_scan` (redact mode), the hook most hosts would run.
#![allow(
    missing_docs,
    reason = "criterion_group! generates an undocumented public fn"
)]

use criterion::{Criterion, criterion_group, criterion_main};
use hermetic::CallOptions;
use hermetic_test_support::guests::{guest, tools_dir};
use hermetic_test_support::registry::policy_registry;
use std::hint::black_box;

fn registry(root: &std::path::Path, hooks: &str) -> hermetic::Registry {
    std::fs::create_dir_all(root.join("ws")).unwrap();
    let policy = format!("[mounts.workspace]\npath = \"ws\"\naccess = \"rw\"\n\n{hooks}");
    let registry = policy_registry(root, &policy, false);
    registry.add_policy_hooks().unwrap();
    let dir = tools_dir(&["echo"]);
    assert_eq!(registry.add_dir(dir.path()).unwrap(), vec![]);
    registry
}

fn benches(c: &mut Criterion) {
    let args = r#"{"message": "hello"}"#;
    let options = CallOptions::default();
    let bare_dir = tempfile::TempDir::new().unwrap();
    let bare = registry(bare_dir.path(), "");
    let hooked_dir = tempfile::TempDir::new().unwrap();
    let hooked = registry(
        hooked_dir.path(),
        &format!(
            "[hooks.empty]\npath = \"{}\"\norder = 1\n",
            guest("test_hook").display()
        ),
    );
    assert!(hooked.call("echo", args, &options).contains("hello"));
    let scanned_dir = tempfile::TempDir::new().unwrap();
    let scanned = registry(
        scanned_dir.path(),
        "[hooks.secret_scan]\norder = 1\nsecret_scan = true\nconfig = { mode = \"redact\" }\n",
    );
    assert!(scanned.call("echo", args, &options).contains("hello"));
    c.bench_function("hooks/echo, no hook", |b| {
        b.iter(|| black_box(bare.call("echo", black_box(args), &options)))
    });
    c.bench_function("hooks/echo, one empty hook (pre + post)", |b| {
        b.iter(|| black_box(hooked.call("echo", black_box(args), &options)))
    });
    c.bench_function("hooks/echo, bundled secret_scan (pre + post)", |b| {
        b.iter(|| black_box(scanned.call("echo", black_box(args), &options)))
    });
}

criterion_group!(group, benches);
criterion_main!(group);
