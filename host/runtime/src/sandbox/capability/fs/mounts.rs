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
use std::path::{Component, Path, PathBuf};

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
    let dir = open_beneath(&mount.root, sub)?;
    let path = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
    Ok((path, Some(dir)))
}

/// Opens `root`, then each component of the relative path `sub` below it with
/// `O_NOFOLLOW | O_DIRECTORY`: the directory `root/sub` is now, with no symlink on the
/// way below `root` (a component that is one, or not a directory, is an error). With
/// `create`, missing components are made (0700) on the way. The descriptor is
/// close-on-exec.
///
/// # Errors
/// The OS error, or an `Other` error naming the component that is a symlink or not a
/// plain name.
pub fn open_beneath(root: &Path, sub: &Path) -> std::io::Result<OwnedFd> {
    walk_beneath(root, sub, false)
}

/// [`open_beneath`], making missing directories (mode 0700) on the way.
///
/// # Errors
/// As [`open_beneath`], or the error of a `mkdirat`.
pub fn create_beneath(root: &Path, sub: &Path) -> std::io::Result<OwnedFd> {
    walk_beneath(root, sub, true)
}

fn walk_beneath(root: &Path, sub: &Path, create: bool) -> std::io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut dir: OwnedFd = openat(rustix::fs::CWD, root, flags, Mode::empty())?;
    for component in sub.components() {
        let name = match component {
            Component::Normal(name) => name,
            Component::CurDir => continue,
            _ => {
                return Err(std::io::Error::other(format!(
                    "{} has a component other than a plain name",
                    sub.display()
                )));
            }
        };
        if create {
            match rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o700)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(e.into()),
            }
        }
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
    Ok(dir)
}
