//! The filesystem capability: granted mounts as preopens (grant:
//! `EffectiveGrants::mounts`), opened without following planted symlinks ([`mounts`]),
//! and wasi:filesystem with two calls a shared host must guard ([`guard`]).

mod guard;
pub(crate) mod mounts;

use super::{CallInputs, Capability};
use crate::declaration::{Access, Declaration};
use crate::policy::EffectiveGrants;
use crate::sandbox::{CallState, SandboxError};
use crate::wasm_error::{Cause, WasmtimeError};
use wasmtime::component::Linker;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

/// The filesystem unit (a WASI one: linked into every tool, reaching only the call's
/// preopens).
pub(crate) struct Unit;

impl Capability for Unit {
    type Ctx = ();

    /// A fiber's filesystem has no guard (its thread is an async worker, where an open
    /// must not block): a tool with mounts runs on a thread.
    const ON_FIBER: bool = false;

    fn declared(declaration: &Declaration) -> bool {
        !declaration.capabilities.fs.is_empty()
    }

    fn granted(grants: &EffectiveGrants) -> bool {
        !grants.mounts.is_empty()
    }

    /// Links wasi:filesystem (preopens and types) with the guarded calls.
    fn link(l: &mut Linker<CallState>) -> wasmtime::Result<()> {
        use wasmtime_wasi::filesystem::{WasiFilesystem, WasiFilesystemView};
        use wasmtime_wasi::p2::bindings::{filesystem, sync};

        filesystem::preopens::add_to_linker::<CallState, WasiFilesystem>(
            l,
            CallState::filesystem,
        )?;
        sync::filesystem::types::add_to_linker::<CallState, WasiFilesystem>(
            l,
            CallState::filesystem,
        )?;
        // No escaping symlinks left behind, no open that blocks past the deadline.
        guard::link(l)
    }

    /// Links wasi:filesystem's async implementation, for the imports' sake only: a
    /// tool on a fiber has no mounts, so it has no descriptor to use it on.
    fn link_fiber(l: &mut Linker<CallState>) -> wasmtime::Result<()> {
        use wasmtime_wasi::filesystem::{WasiFilesystem, WasiFilesystemView};
        use wasmtime_wasi::p2::bindings::filesystem;

        filesystem::preopens::add_to_linker::<CallState, WasiFilesystem>(
            l,
            CallState::filesystem,
        )?;
        filesystem::types::add_to_linker::<CallState, WasiFilesystem>(l, CallState::filesystem)
    }

    /// Preopens the granted mounts (`/NAME` in the guest), read-only or read-write as
    /// granted; nothing else of the host's filesystem is reachable.
    ///
    /// # Errors
    /// [`SandboxError::Mount`] if a granted mount's directory cannot be opened.
    fn configure(wasi: &mut WasiCtxBuilder, call: &CallInputs<'_>) -> Result<(), SandboxError> {
        for mount in &call.grants.mounts {
            let perms = match mount.access {
                Access::Ro => FsPerms::ReadOnly,
                Access::Rw => FsPerms::ReadWrite,
            };
            let refused = |source: Cause| SandboxError::Mount {
                mount: mount.name.clone(),
                path: mount.host_path.display().to_string(),
                source,
            };
            // `_held` keeps a walked subdirectory open until the preopen has its own
            // handle.
            let (path, _held) = mounts::resolve(mount).map_err(|e| refused(Box::new(e)))?;
            wasi.preopened_dir(&path, format!("/{}", mount.name), perms)
                .map_err(|e| refused(Box::new(WasmtimeError::from(e))))?;
        }
        Ok(())
    }
}
