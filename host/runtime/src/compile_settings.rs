//! The wasmtime settings that shape compiled code, in one place: the runtime engine
//! applies them, and so does the build script that precompiles the bundled tools
//! (`build.rs` includes this file), so the embedded code fits the engine that loads
//! it. wasmtime checks the fit again when it loads the code (any drift, e.g. another
//! CPU, means the tool is compiled at start instead); the
//! `bundled_tools_load_from_the_code_the_build_compiled` test (tests/registry.rs)
//! fails on drift.
//!
//! Only wasmtime and std here: the build script has nothing else.

/// Applies the code-shaping settings to `config`: epoch interruption (deadlines), fuel
/// metering when asked, and the guest stack limit.
pub(crate) fn apply(config: &mut wasmtime::Config, fuel: bool) {
    config.epoch_interruption(true);
    config.consume_fuel(fuel);
    // Deep recursion in a guest must trap, not overflow the host stack.
    config.max_wasm_stack(1 << 20);
}
