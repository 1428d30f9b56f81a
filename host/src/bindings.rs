//! Host-side bindings for the `hermetic:tool` world (wit/tool.wit).

wasmtime::component::bindgen!({
    world: "tool-component",
    path: "../wit",
});

pub use exports::hermetic::tool::tool::CallContext;
pub use hermetic::tool::types::Level;
