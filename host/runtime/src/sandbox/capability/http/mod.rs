//! The network capability: wasi:http for tools that declare destinations (grant:
//! `EffectiveGrants::network`), every request sent through [`egress`] — the granted
//! destinations only, public addresses only, bounded in size and time. Never raw
//! sockets: wasi:sockets refuses every use (`capability::sockets`).

pub mod egress;

pub use egress::HttpState;

use super::{CallInputs, Capability};
use crate::declaration::Declaration;
use crate::policy::EffectiveGrants;
use crate::sandbox::CallState;
use wasmtime::component::Linker;

/// The network unit (a linked one: wasi:http only for tools that declare
/// destinations).
pub(crate) struct Unit;

impl Capability for Unit {
    /// Boxed: a call granted no destination carries one empty pointer, not the state.
    type Ctx = Box<HttpState>;

    /// A request waits for the destination's answer on the call's thread.
    const ON_FIBER: bool = false;

    fn declared(declaration: &Declaration) -> bool {
        !declaration.capabilities.network.is_empty()
    }

    fn granted(grants: &EffectiveGrants) -> bool {
        !grants.network.is_empty()
    }

    /// Links wasi:http's outgoing handler and types (and nothing of wasi:sockets).
    fn link(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
        wasmtime_wasi_http::p2::add_only_http_to_linker_sync(linker)
    }

    /// The egress state of one call: `None` when the call was granted no destination
    /// (nothing to build on the common path; a tool linked with wasi:http then gets a
    /// state that refuses every request on first use).
    fn for_call(call: &CallInputs<'_>) -> Option<Box<HttpState>> {
        let (grants, secrets) = (call.grants, call.secrets);
        Self::granted(grants).then(|| {
            let inject = grants
                .inject
                .iter()
                .filter_map(|b| secrets.get(&b.secret).map(|v| (b.clone(), b.render(v))))
                .collect();
            Box::new(
                HttpState::new(
                    call.tool.clone(),
                    grants.network.clone(),
                    grants.limits.http,
                    call.deadline,
                    call.cancel.cloned(),
                )
                .with_injections(inject, secrets.scrubber(&grants.inject)),
            )
        })
    }
}

impl wasmtime_wasi_http::WasiHttpView for CallState {
    fn http(&mut self) -> wasmtime_wasi_http::WasiHttpCtxView<'_> {
        // Only tools linked with wasi:http get here; one whose call was granted no
        // destination gets a state that refuses every request.
        let tool = &self.tool;
        let state = self
            .granted
            .http
            .get_or_insert_with(|| Box::new(HttpState::deny_all(tool.clone())));
        wasmtime_wasi_http::WasiHttpCtxView {
            ctx: &mut state.ctx,
            table: &mut self.table,
            hooks: &mut state.hooks,
        }
    }
}
