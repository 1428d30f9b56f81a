//! The environment capability: the granted variables (grant: `EffectiveGrants::env`),
//! with values from the operator's secrets, else the host environment. A variable
//! that is granted but has no value is simply absent.

use crate::policy::EffectiveGrants;
use crate::sandbox::CallState;
use crate::secrets::Secrets;
use wasmtime::component::Linker;
use wasmtime_wasi::WasiCtxBuilder;

/// Sets the granted variables that have a value; no other variable is visible.
pub(crate) fn configure(wasi: &mut WasiCtxBuilder, grants: &EffectiveGrants, secrets: &Secrets) {
    for var in &grants.env {
        if let Some(value) = secrets.env_value(var) {
            wasi.env(var, value);
        }
    }
}

/// Links wasi:cli/environment.
pub(crate) fn link(l: &mut Linker<CallState>) -> wasmtime::Result<()> {
    use wasmtime_wasi::cli::{WasiCli, WasiCliView};
    use wasmtime_wasi::p2::bindings::cli;
    cli::environment::add_to_linker::<CallState, WasiCli>(l, CallState::cli)
}
