//! The filesystem capability: granted mounts as preopens (grant:
//! `EffectiveGrants::mounts`), opened without following planted symlinks ([`mounts`]),
//! and wasi:filesystem with two calls a shared host must guard ([`guard`]).

mod guard;
pub(crate) mod mounts;

use crate::declaration::Access;
use crate::policy::EffectiveGrants;
use crate::sandbox::{CallState, SandboxError};
use crate::wasm_error::{Cause, WasmtimeError};
use wasmtime::component::Linker;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

/// Preopens the granted mounts (`/NAME` in the guest), read-only or read-write as
/// granted; nothing else of the host's filesystem is reachable.
///
/// # Errors
/// [`SandboxError::Mount`] if a granted mount's directory cannot be opened.
pub(crate) fn configure(
    wasi: &mut WasiCtxBuilder,
    grants: &EffectiveGrants,
) -> Result<(), SandboxError> {
    for mount in &grants.mounts {
        let perms = match mount.access {
            Access::Ro => FsPerms::ReadOnly,
            Access::Rw => FsPerms::ReadWrite,
        };
        let refused = |source: Cause| SandboxError::Mount {
            mount: mount.name.clone(),
            path: mount.host_path.display().to_string(),
            source,
        };
        // `_held` keeps a walked subdirectory open until the preopen has its own handle.
        let (path, _held) = mounts::resolve(mount).map_err(|e| refused(Box::new(e)))?;
        wasi.preopened_dir(&path, format!("/{}", mount.name), perms)
            .map_err(|e| refused(Box::new(WasmtimeError::from(e))))?;
    }
    Ok(())
}

/// Links wasi:filesystem (preopens and types) with the guarded calls.
pub(crate) fn link(l: &mut Linker<CallState>) -> wasmtime::Result<()> {
    use wasmtime_wasi::filesystem::{WasiFilesystem, WasiFilesystemView};
    use wasmtime_wasi::p2::bindings::{filesystem, sync};

    filesystem::preopens::add_to_linker::<CallState, WasiFilesystem>(l, CallState::filesystem)?;
    sync::filesystem::types::add_to_linker::<CallState, WasiFilesystem>(l, CallState::filesystem)?;
    // No escaping symlinks left behind, no open that blocks past the deadline.
    guard::link(l)
}
