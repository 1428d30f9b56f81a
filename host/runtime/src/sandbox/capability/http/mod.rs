//! The network capability: wasi:http for tools that declare destinations (grant:
//! `EffectiveGrants::network`), every request sent through [`egress`] — the granted
//! destinations only, public addresses only, bounded in size and time. Never raw
//! sockets: wasi:sockets refuses every use (`capability::sockets`).

pub mod egress;

pub use egress::HttpState;

use crate::call::CancelToken;
use crate::policy::EffectiveGrants;
use crate::sandbox::{CallState, SandboxError};
use crate::secrets::Secrets;
use std::sync::Arc;
use std::time::Instant;
use wasmtime::component::Linker;

/// The egress state of one call: `None` when the call was granted no destination
/// (nothing to build on the common path; a tool linked with wasi:http then gets a
/// state that refuses every request on first use).
pub(crate) fn state(
    tool: &Arc<str>,
    grants: &EffectiveGrants,
    secrets: &Secrets,
    deadline: Instant,
    cancel: Option<CancelToken>,
) -> Option<Box<HttpState>> {
    (!grants.network.is_empty()).then(|| {
        let inject = grants
            .inject
            .iter()
            .filter_map(|b| secrets.get(&b.secret).map(|v| (b.clone(), b.render(v))))
            .collect();
        Box::new(
            HttpState::new(
                tool.clone(),
                grants.network.clone(),
                grants.limits.http,
                deadline,
                cancel,
            )
            .with_injections(inject, secrets.scrubber(&grants.inject)),
        )
    })
}

/// Links wasi:http's outgoing handler and types (and nothing of wasi:sockets).
///
/// # Errors
/// [`SandboxError::Link`] on a wasmtime linking failure.
pub(crate) fn link(linker: &mut Linker<CallState>) -> Result<(), SandboxError> {
    wasmtime_wasi_http::p2::add_only_http_to_linker_sync(linker).map_err(super::link_error)
}

impl wasmtime_wasi_http::WasiHttpView for CallState {
    fn http(&mut self) -> wasmtime_wasi_http::WasiHttpCtxView<'_> {
        // Only tools linked with wasi:http get here; one whose call was granted no
        // destination gets a state that refuses every request.
        let tool = &self.tool;
        let state = self
            .http
            .get_or_insert_with(|| Box::new(HttpState::deny_all(tool.clone())));
        wasmtime_wasi_http::WasiHttpCtxView {
            ctx: &mut state.ctx,
            table: &mut self.table,
            hooks: &mut state.hooks,
        }
    }
}
