//! Two filesystem calls that wasmtime-wasi allows and a shared host must not:
//!
//! - `symlink-at` with a target that may lead out of the mount. The sandbox itself never
//!   follows such a link out (cap-std resolves every path inside the preopen), but the
//!   link stays on disk, where a terminal command, another tenant's backend or the
//!   operator's own tools follow it without that protection. A guest may only create
//!   links that point down from the link's own directory: no absolute target and no `..`
//!   component. (A `..` that would stay inside cannot be told apart from one that
//!   leaves: the guest's descriptor may be any directory below the mount root, and the
//!   link's path may pass through links planted by others.)
//! - `open-at` of a FIFO, socket or device. Opening a FIFO for reading blocks in the
//!   kernel until a writer appears — a terminal command can plant one — and no deadline
//!   reaches a thread inside `open(2)`. Such files are refused before they are opened;
//!   the open itself also races the call's deadline and cancel (as in [`deadline_io`]),
//!   so a file swapped for a FIFO between the check and the open still ends the call on
//!   time (the blocked thread is then the kernel's to release).
//!
//! Both are shadowing definitions over wasmtime-wasi's own `wasi:filesystem/types`;
//! everything else is wasmtime-wasi's implementation, called through.
//!
//! [`deadline_io`]: crate::sandbox::deadline_io

use crate::sandbox::CallState;
use crate::sandbox::deadline_io::bounded;
use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::p2::FsResult;
use wasmtime_wasi::p2::bindings::filesystem::types as async_fs;
use wasmtime_wasi::p2::bindings::sync::filesystem::types::{
    Descriptor, DescriptorFlags, DescriptorType, ErrorCode, Host, HostDescriptor, OpenFlags,
    PathFlags,
};

/// The interface wasmtime-wasi 48 defines (guests importing any 0.2.x resolve to it).
const INTERFACE: &str = "wasi:filesystem/types@0.2.12";

/// Replaces `symlink-at` and `open-at` in a linker that already has wasmtime-wasi's
/// filesystem.
pub(super) fn link(l: &mut Linker<CallState>) -> wasmtime::Result<()> {
    l.allow_shadowing(true);
    let mut types = l.instance(INTERFACE)?;
    types.func_wrap(
        "[method]descriptor.symlink-at",
        |mut store: StoreContextMut<'_, CallState>,
         (fd, target, link): (Resource<Descriptor>, String, String)| {
            if !stays_below(&target) {
                return Ok((Err(ErrorCode::NotPermitted),));
            }
            let (mut fs, _, _) = store.data_mut().filesystem_and_stop();
            let done = HostDescriptor::symlink_at(&mut fs, fd, target, link);
            Ok((error_code(&mut fs, done)?,))
        },
    )?;
    types.func_wrap(
        "[method]descriptor.open-at",
        |mut store: StoreContextMut<'_, CallState>,
         (fd, path_flags, path, oflags, flags): (
            Resource<Descriptor>,
            PathFlags,
            String,
            OpenFlags,
            DescriptorFlags,
        )| {
            let (mut fs, stop, cancelled) = store.data_mut().filesystem_and_stop();
            let probe = Resource::new_borrow(fd.rep());
            // A missing file is for the open to report (or create).
            if let Ok(stat) = HostDescriptor::stat_at(&mut fs, probe, path_flags, path.clone())
                && !matches!(
                    stat.type_,
                    DescriptorType::RegularFile
                        | DescriptorType::Directory
                        | DescriptorType::SymbolicLink
                )
            {
                return Ok((Err(ErrorCode::NotPermitted),));
            }
            let opened = bounded(stop, cancelled, async {
                async_fs::HostDescriptor::open_at(
                    &mut fs,
                    fd,
                    path_flags.into(),
                    path,
                    oflags.into(),
                    flags.into(),
                )
                .await
            })?;
            Ok((error_code(&mut fs, opened)?,))
        },
    )?;
    l.allow_shadowing(false);
    Ok(())
}

/// A filesystem result as the guest sees it; host traps stay traps.
fn error_code<T>(
    fs: &mut wasmtime_wasi::filesystem::WasiFilesystemCtxView<'_>,
    result: FsResult<T>,
) -> wasmtime::Result<Result<T, ErrorCode>> {
    match result {
        Ok(value) => Ok(Ok(value)),
        Err(e) => Ok(Err(Host::convert_error_code(fs, e)?)),
    }
}

/// Whether a symlink target can only lead below the link's own directory.
fn stays_below(target: &str) -> bool {
    !target.is_empty() && !target.starts_with('/') && !target.split('/').any(|c| c == "..")
}

#[cfg(test)]
mod tests {
    use super::stays_below;

    #[test]
    fn only_downward_relative_targets_stay_below() {
        for ok in ["a", "a/b", "./a", "a/./b", "a..b", "..a/b", "a/b.."] {
            assert!(stays_below(ok), "{ok}");
        }
        for bad in [
            "",
            "/",
            "/etc/passwd",
            "..",
            "../x",
            "a/../..",
            "a/..",
            "./../a",
            "a//../b",
        ] {
            assert!(!stays_below(bad), "{bad}");
        }
    }
}
