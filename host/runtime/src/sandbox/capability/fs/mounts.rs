//! Opening a granted mount without following symlinks below the operator's directory.
//!
//! A tenant's mount is a subdirectory (`tenants/acme`) of the operator's directory, and
//! anyone who can write in that directory — another tenant's terminal command, a guest
//! in a read-write mount — can replace `tenants/acme` with a symlink to `/etc`. Opening
//! the joined path would follow it. So the sandbox opens the operator's directory, then
//! each component of the subdirectory with `O_NOFOLLOW | O_DIRECTORY`, and preopens the
//! directory it ended on through `/proc/self/fd/N` (the open file itself, not a path
//! that could be re-resolved later).

use hermetic_policy::EffectiveMount;
use rustix::fs::{Mode, OFlags, openat};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Component, PathBuf};

/// What to hand `preopened_dir` for `mount`, and the descriptor that keeps it alive
/// until then (`None` when the mount is the operator's directory itself).
pub(crate) fn resolve(mount: &EffectiveMount) -> std::io::Result<(PathBuf, Option<OwnedFd>)> {
    let Ok(sub) = mount.host_path.strip_prefix(&mount.root) else {
        return Err(std::io::Error::other(
            "the mount's directory is not inside the operator's directory",
        ));
    };
    if sub.as_os_str().is_empty() {
        return Ok((mount.host_path.clone(), None));
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut dir: OwnedFd = openat(rustix::fs::CWD, &mount.root, flags, Mode::empty())?;
    for component in sub.components() {
        let Component::Normal(name) = component else {
            return Err(std::io::Error::other(
                "the subdirectory has a component other than a plain name",
            ));
        };
        dir = openat(&dir, name, flags | OFlags::NOFOLLOW, Mode::empty()).map_err(|e| {
            if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::NOTDIR {
                std::io::Error::other(format!(
                    "{} is a symlink or not a directory; refusing to follow it",
                    name.to_string_lossy()
                ))
            } else {
                e.into()
            }
        })?;
    }
    let path = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
    Ok((path, Some(dir)))
}
