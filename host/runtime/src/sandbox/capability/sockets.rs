//! wasi:sockets, linked so that components importing it load, with every use refused.
//!
//! Interpreters import it whether or not a tool uses it (libpython's `socket` module
//! does), so refusing such components at load would refuse every Python tool. The
//! interfaces are wasmtime-wasi's own, given a context that allows nothing: creating a
//! TCP or UDP socket answers `access-denied` and looking up a name
//! `permanent-resolver-failure`, before any socket or query exists on the host; without
//! a socket no other function has anything to act on.
//! Outbound HTTP stays wasi:http's, through the host's egress checks, for tools that
//! declare and are granted destinations; no grant ever turns into a raw socket.

use super::{CallInputs, Capability};
use crate::declaration::Declaration;
use crate::policy::EffectiveGrants;
use crate::sandbox::{CallState, SandboxError};
use wasmtime::component::Linker;
use wasmtime_wasi::WasiCtxBuilder;
use wasmtime_wasi::sockets::{WasiSockets, WasiSocketsView as _};

/// The sockets unit (a WASI one: linked into every tool, refusing every use).
pub(crate) struct Unit;

impl Capability for Unit {
    type Ctx = ();

    /// Every use is refused at once: nothing waits.
    const ON_FIBER: bool = true;

    /// No declaration can ask for sockets.
    fn declared(_declaration: &Declaration) -> bool {
        false
    }

    /// No grant gives sockets.
    fn granted(_grants: &EffectiveGrants) -> bool {
        false
    }

    /// Links wasi:sockets for calls on a thread of their own (the blocking bindings).
    fn link(l: &mut Linker<CallState>) -> wasmtime::Result<()> {
        use wasmtime_wasi::p2::bindings::sync::sockets as blocking;
        blocking::tcp::add_to_linker::<CallState, WasiSockets>(l, CallState::sockets)?;
        blocking::udp::add_to_linker::<CallState, WasiSockets>(l, CallState::sockets)?;
        blocking::udp_create_socket::add_to_linker::<CallState, WasiSockets>(
            l,
            CallState::sockets,
        )?;
        link_common(l)
    }

    /// Links wasi:sockets for calls on a fiber (the async bindings).
    fn link_fiber(l: &mut Linker<CallState>) -> wasmtime::Result<()> {
        use wasmtime_wasi::p2::bindings::sockets;
        sockets::tcp::add_to_linker::<CallState, WasiSockets>(l, CallState::sockets)?;
        sockets::udp::add_to_linker::<CallState, WasiSockets>(l, CallState::sockets)?;
        sockets::udp_create_socket::add_to_linker::<CallState, WasiSockets>(
            l,
            CallState::sockets,
        )?;
        link_common(l)
    }

    /// Refuses every socket use in the call's context: no TCP, no UDP, no name lookup
    /// (the builder's address check already refuses every address; setting it again
    /// would allocate on every call).
    fn configure(wasi: &mut WasiCtxBuilder, _call: &CallInputs<'_>) -> Result<(), SandboxError> {
        wasi.allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        Ok(())
    }
}

/// The interfaces whose bindings are the same for both kinds of call.
fn link_common(l: &mut Linker<CallState>) -> wasmtime::Result<()> {
    use wasmtime_wasi::p2::bindings::sockets;
    sockets::tcp_create_socket::add_to_linker::<CallState, WasiSockets>(l, CallState::sockets)?;
    sockets::instance_network::add_to_linker::<CallState, WasiSockets>(l, CallState::sockets)?;
    sockets::network::add_to_linker::<CallState, WasiSockets>(
        l,
        &Default::default(),
        CallState::sockets,
    )?;
    sockets::ip_name_lookup::add_to_linker::<CallState, WasiSockets>(l, CallState::sockets)
}
