//! The capabilities a tool can be granted, one module each: [`fs`] (mounts), [`env`]
//! (environment variables), [`clock`], [`http`] (network destinations) and
//! [`terminal`]. Every capability is one unit in three steps:
//!
//! 1. **grant** — decided by the pure policy (`hermetic_policy::EffectiveGrants`), with
//!    no I/O and no wasmtime;
//! 2. **per-call context** — the module's `configure`/`state`/`for_call` turns one
//!    call's grants into what that call gets (preopens, env vars, a clock, an egress
//!    state, a terminal access), and nothing more;
//! 3. **link** — the module's `link` adds the host interfaces it serves to a linker.
//!    WASI's own interfaces (fs, env, clock, [`sockets`]: refused) are in every tool's linker, their content
//!    decided per call; interfaces beyond WASI (http, terminal) are linked only into
//!    tools that declare them ([`LinkedCapabilities`]), one linker per distinct set,
//!    built on first use.
//!
//! A new capability is a new module here with those steps, one field in the policy's
//! grants, and (if it adds imports) one field in [`LinkedCapabilities`].

pub(crate) mod clock;
pub(crate) mod env;
pub(crate) mod fs;
pub use fs::mounts::{create_beneath, open_beneath};
pub mod http;
pub mod keyvalue;
pub(crate) mod secrets;
pub(crate) mod sockets;
pub mod terminal;

use super::{CallState, SandboxError};
use crate::declaration::Declaration;
use wasmtime::component::Linker;

/// Which host interfaces beyond WASI a tool's linker carries: one per capability
/// that adds imports. Each distinct set gets one linker, built the first time a tool
/// with that set loads (not 2ⁿ linkers up front).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LinkedCapabilities {
    /// wasi:http (the tool declares network destinations).
    pub http: bool,
    /// The host `terminal` interface (the tool declares the terminal).
    pub terminal: bool,
    /// The host `secrets` interface (a hook declares `secret_scan`).
    pub secrets: bool,
    /// `wasi:keyvalue` (the tool declares a key-value store).
    pub keyvalue: bool,
}

impl LinkedCapabilities {
    /// What a declaration asks to be linked.
    pub fn of(declaration: &Declaration) -> Self {
        Self {
            http: !declaration.capabilities.network.is_empty(),
            terminal: declaration.capabilities.terminal,
            secrets: declaration.capabilities.secret_scan,
            keyvalue: declaration.capabilities.keyvalue.is_some(),
        }
    }

    /// Adds this set's interfaces to a linker that has WASI.
    ///
    /// # Errors
    /// [`SandboxError::Link`] on a wasmtime linking failure.
    pub(crate) fn link(self, linker: &mut Linker<CallState>) -> Result<(), SandboxError> {
        if self.http {
            http::link(linker)?;
        }
        if self.terminal {
            terminal::link(linker)?;
        }
        if self.secrets {
            secrets::link(linker)?;
        }
        if self.keyvalue {
            keyvalue::link(linker)?;
        }
        Ok(())
    }
}

/// A linking failure as a [`SandboxError`] (a host bug, never a guest problem).
pub(crate) fn link_error(e: wasmtime::Error) -> SandboxError {
    SandboxError::Link(e.into())
}
