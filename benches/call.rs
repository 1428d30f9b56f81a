//! The hot paths: one fresh-instance call of a trivial tool (the whole dispatch
//! pipeline: parse, coerce, validate, new Store, instantiate, `handle`, result checks),
//! its floor (wasmtime alone on the same engine: new Store, instantiate, `handle`), and
//! `definitions()`.
#![allow(
    missing_docs,
    reason = "criterion_group! generates an undocumented public fn"
)]
use criterion::{Criterion, criterion_group, criterion_main};
use hermetic::{CallOptions, Selection};
use hermetic_tests::fixture;
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
    let hermetic_tests::Fixture {
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

    let selection = Selection::default();
    // Warm the check() cache, as a serving host would have it.
    black_box(registry.definitions(&selection));
    c.bench_function("definitions (6 tools, checks cached)", |b| {
        b.iter(|| black_box(registry.definitions(black_box(&selection))))
    });
}

/// What a fresh-instance call costs in wasmtime alone, on the engine hermetic uses
/// (pooling allocator, epoch interruption): a Store with an empty WASI context,
/// instantiate, `handle`, the result read. None of hermetic's dispatch, policy-built
/// context, limits or captured output: the gap to the full call is hermetic's share.
fn floor(c: &mut Criterion, args: &str) {
    use wasmtime::component::{Component, ComponentType, Linker, Lower, ResourceTable};
    use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

    struct Bare {
        wasi: WasiCtx,
        table: ResourceTable,
    }
    impl WasiView for Bare {
        fn ctx(&mut self) -> WasiCtxView<'_> {
            WasiCtxView {
                ctx: &mut self.wasi,
                table: &mut self.table,
            }
        }
    }
    #[derive(ComponentType, Lower)]
    #[component(record)]
    struct CallContext {
        #[component(name = "call-id")]
        call_id: String,
        tenant: String,
        session: String,
    }

    let runtime = hermetic::Runtime::new(hermetic_tests::engine_config()).unwrap();
    let engine = runtime.engine();
    let component = Component::from_file(engine, hermetic_tests::guest("echo")).unwrap();
    let mut linker = Linker::<Bare>::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).unwrap();
    let pre = linker.instantiate_pre(&component).unwrap();
    let handle = component
        .get_export_index(None, "hermetic:tool/tool@0.2.0")
        .and_then(|tool| component.get_export_index(Some(&tool), "handle"))
        .unwrap();
    let context = CallContext {
        call_id: "bench".into(),
        tenant: "default".into(),
        session: String::new(),
    };
    c.bench_function(
        "call/echo floor (wasmtime alone: new Store, instantiate, handle)",
        |b| {
            b.iter(|| {
                let bare = Bare {
                    wasi: WasiCtx::builder().build(),
                    table: ResourceTable::new(),
                };
                let mut store = wasmtime::Store::new(engine, bare);
                store.set_epoch_deadline(1 << 20);
                let instance = pre.instantiate(&mut store).unwrap();
                let func = instance
                    .get_typed_func::<(&str, &CallContext), (Result<String, String>,)>(
                        &mut store, handle,
                    )
                    .unwrap();
                black_box(func.call(&mut store, (black_box(args), &context)).unwrap())
            })
        },
    );
}

criterion_group! {
    name = hot_paths;
    config = Criterion::default().sample_size(50);
    targets = benches
}
criterion_main!(hot_paths);
