//! The floor of a fresh-instance call: wasmtime alone, on the engine hermetic builds
//! (pooling allocator, epoch interruption, the same compiled echo). A Store with an
//! empty WASI context, instantiate from an `InstancePre`, `handle`, the result read;
//! none of hermetic's dispatch, policy-built context, limits or captured output. What
//! a bench measures above this is hermetic's share; what it measures below the goal
//! here is wasmtime's.
//!
//! Shared by the `call` bench (one call's latency) and the `throughput` bench (calls/s
//! on every core) as a module of each, so the benches' library needs no wasmtime.
//!
//! It repeats two private items of the runtime, the interface name
//! (`component::TOOL_INTERFACE`) and the `call-context` record: the bench reaches into
//! the component the way any wasmtime embedder would, not through hermetic's surface.

use wasmtime::component::{
    Component, ComponentExportIndex, ComponentType, InstancePre, Linker, Lower, ResourceTable,
};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// The store data: a WASI context that grants nothing, and its resource table.
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

/// `hermetic:tool/types.call-context`.
#[derive(ComponentType, Lower)]
#[component(record)]
struct CallContext {
    #[component(name = "call-id")]
    call_id: String,
    tenant: String,
    session: String,
}

/// The echo tool ready to instantiate on hermetic's engine (share it between threads:
/// each call makes its own Store).
pub struct Floor {
    /// Keeps the engine's epoch ticker running.
    runtime: hermetic::Runtime,
    pre: InstancePre<Bare>,
    handle: ComponentExportIndex,
    context: CallContext,
}

impl Floor {
    /// Compiles (or loads from the test cache) the echo tool on a runtime with the
    /// test engine settings, and links it with wasmtime-wasi's own linker.
    pub fn echo() -> Self {
        let runtime =
            hermetic::Runtime::new(hermetic_test_support::registry::engine_config()).unwrap();
        let engine = runtime.engine();
        let component =
            Component::from_file(engine, hermetic_test_support::guests::guest("echo")).unwrap();
        let mut linker = Linker::<Bare>::new(engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker).unwrap();
        let pre = linker.instantiate_pre(&component).unwrap();
        let handle = component
            .get_export_index(None, "hermetic:tool/tool@0.3.0")
            .and_then(|tool| component.get_export_index(Some(&tool), "handle"))
            .unwrap();
        let context = CallContext {
            call_id: "bench".into(),
            tenant: "default".into(),
            session: String::new(),
        };
        Self {
            runtime,
            pre,
            handle,
            context,
        }
    }

    /// One call in a fresh instance: the tool's `handle` result.
    pub fn call(&self, args: &str) -> Result<String, String> {
        let bare = Bare {
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
        };
        let mut store = wasmtime::Store::new(self.runtime.engine(), bare);
        store.set_epoch_deadline(1 << 20);
        let instance = self.pre.instantiate(&mut store).unwrap();
        let func = instance
            .get_typed_func::<(&str, &CallContext), (Result<String, String>,)>(
                &mut store,
                self.handle,
            )
            .unwrap();
        func.call(&mut store, (args, &self.context)).unwrap().0
    }
}
