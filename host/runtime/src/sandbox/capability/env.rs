//! The environment capability: the granted variables (grant: `EffectiveGrants::env`),
//! with values from the operator's secrets, else the host environment. A variable
//! that is granted but has no value is simply absent.

use super::{CallInputs, Capability};
use crate::declaration::Declaration;
use crate::policy::EffectiveGrants;
use crate::sandbox::{CallState, SandboxError};
use wasmtime::component::Linker;
use wasmtime_wasi::WasiCtxBuilder;

/// The environment unit (a WASI one: linked into every tool, holding only the call's
/// granted variables).
pub(crate) struct Unit;

impl Capability for Unit {
    type Ctx = ();

    /// The variables are set once, before the call: reading them never blocks.
    const ON_FIBER: bool = true;

    fn declared(declaration: &Declaration) -> bool {
        !declaration.capabilities.env.is_empty() || !declaration.requires_env.is_empty()
    }

    fn granted(grants: &EffectiveGrants) -> bool {
        !grants.env.is_empty()
    }

    /// Links wasi:cli/environment.
    fn link(l: &mut Linker<CallState>) -> wasmtime::Result<()> {
        use wasmtime_wasi::cli::{WasiCli, WasiCliView};
        use wasmtime_wasi::p2::bindings::cli;
        cli::environment::add_to_linker::<CallState, WasiCli>(l, CallState::cli)
    }

    /// Sets the granted variables that have a value; no other variable is visible.
    fn configure(wasi: &mut WasiCtxBuilder, call: &CallInputs<'_>) -> Result<(), SandboxError> {
        for var in &call.grants.env {
            if let Some(value) = call.secrets.env_value(var) {
                wasi.env(var, value);
            }
        }
        Ok(())
    }
}
