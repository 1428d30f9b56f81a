//! Host-side bindings for the `hermetic:tool` world (wit/tool.wit).

wasmtime::component::bindgen!({
    world: "tool-component",
    path: "../../wit",
});

pub use self::exports::hermetic::tool::tool::CallContext;
pub use self::hermetic::tool::types::Level;
