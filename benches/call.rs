//! The hot paths: one fresh-instance call of a trivial tool (the whole dispatch
//! pipeline: parse, coerce, validate, new Store, instantiate, `handle`, result checks),
//! its floor (wasmtime alone on the same engine: new Store, instantiate, `handle`), and
//! `definitions()`.
#![allow(
    missing_docs,
    reason = "criterion_group! generates an undocumented public fn"
)]
mod floor;

use criterion::{Criterion, criterion_group, criterion_main};
use hermetic::{CallOptions, Selection};
use hermetic_test_support::registry::fixture;
use std::hint::black_box;

fn benches(c: &mut Criterion) {
    let f = fixture(true, &["echo"]);
    let registry = &f.registry;
    let options = CallOptions::default();
    let args = r#"{"message": "hello"}"#;
    let first = registry.call("echo", args, &options);
    assert!(first.contains("hello"), "{first}");

    c.bench_function("call/echo (fresh instance, full dispatch)", |b| {
        b.iter(|| black_box(registry.call("echo", black_box(args), &options)))
    });
    floor(c, args);

    // The async path as the MCP server takes it: a task on a two-worker runtime
    // calls `invoke_async` (echo runs on a fiber on that task; the figure includes
    // handing the task to a worker and its result back to this thread).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let hermetic_test_support::registry::Fixture {
        workspace: _workspace,
        registry: owned,
    } = fixture(true, &["echo"]);
    let shared = std::sync::Arc::new(owned);
    c.bench_function("invoke_async/echo from a runtime task", |b| {
        b.iter(|| {
            let registry = std::sync::Arc::clone(&shared);
            let task = runtime.spawn(async move {
                registry
                    .invoke_async("echo".into(), args.into(), CallOptions::default())
                    .await
            });
            black_box(runtime.block_on(task).unwrap())
        })
    });

    // The fiber path alone: `invoke_async` polled on this thread, no task hand-off.
    c.bench_function("invoke_async/echo polled in place (fiber path)", |b| {
        b.iter(|| {
            black_box(runtime.block_on(shared.invoke_async(
                "echo".into(),
                args.into(),
                CallOptions::default(),
            )))
        })
    });

    scrubbed(c);

    let selection = Selection::default();
    // Warm the check() cache, as a serving host would have it.
    black_box(registry.definitions(&selection));
    c.bench_function("definitions (6 tools, checks cached)", |b| {
        b.iter(|| black_box(registry.definitions(black_box(&selection))))
    });
}

/// What scrubbing costs a call on a host whose policy binds secrets (every result is
/// scrubbed of every bound secret, whatever the tool: README "Secrets a tool uses but
/// never holds"): `echo` returning 4 KiB, on a host with no binding and on one that
/// binds two secrets to another tool's destination.
fn scrubbed(c: &mut Criterion) {
    let message = "The quick brown fox jumps over the lazy dog; key=value&x=1 %2F. ".repeat(64);
    let args = serde_json::json!({ "message": message }).to_string();
    let options = CallOptions::default();
    for (label, policy) in [
        ("no secret binding", ""),
        (
            "two secrets bound (result scrubbed)",
            "[secrets]\nfile = \"secrets.toml\"\n\n[tools.other.inject.API_KEY]\ndestination = \"https://api.example.com/v1\"\nheader = \"Authorization\"\nformat = \"Bearer {}\"\n\n[tools.other.inject.Q_KEY]\ndestination = \"https://api.example.com/q\"\nquery = \"key\"\n",
        ),
    ] {
        let root = tempfile::TempDir::new().unwrap();
        std::fs::write(
            root.path().join("secrets.toml"),
            "API_KEY = \"sk-live-0123456789abcdef\"\nQ_KEY = \"q5ecr3t+Tok/en== z&x=1\"\n",
        )
        .unwrap();
        let registry = hermetic_test_support::registry::policy_registry(root.path(), policy, false);
        let dir = hermetic_test_support::guests::tools_dir(&["echo"]);
        assert_eq!(registry.add_dir(dir.path()).unwrap(), vec![]);
        let first = registry.call("echo", &args, &options);
        assert!(first.contains("lazy dog"), "{first}");
        c.bench_function(&format!("call/echo 4 KiB result, {label}"), |b| {
            b.iter(|| black_box(registry.call("echo", black_box(&args), &options)))
        });
    }
}

/// What a fresh-instance call costs in wasmtime alone ([`floor::Floor`]): the gap to
/// the full call is hermetic's share.
fn floor(c: &mut Criterion, args: &str) {
    let floor = floor::Floor::echo();
    assert!(floor.call(args).is_ok_and(|out| out.contains("hello")));
    c.bench_function(
        "call/echo floor (wasmtime alone: new Store, instantiate, handle)",
        |b| b.iter(|| black_box(floor.call(black_box(args)))),
    );
}

criterion_group! {
    name = hot_paths;
    config = Criterion::default().sample_size(50);
    targets = benches
}
criterion_main!(hot_paths);
