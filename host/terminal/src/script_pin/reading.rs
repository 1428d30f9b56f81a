//! Reading a script file on this host as the kernel opens it, without opening anything
//! that is not a regular file.

use crate::backend::FileRead;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::{Path, PathBuf};

/// A file read on this host: opened beneath `dir` (the tenant's directory, without
/// following a symlink out of it) or, without `dir`, as this host has it — in both
/// cases resolved by the kernel (`..` after the symlinks before it), with no magic
/// link (`/proc/self/fd/N`, `/proc/self/cwd`: this host's own descriptors). It is
/// opened as a path only (`O_PATH`: no device driver, FIFO or socket is touched),
/// examined, and opened for reading only when it is a regular file. At most `cap` + 1
/// bytes are read. `Err`: the path leads out of `dir`.
pub(super) fn read_host(
    dir: Option<BorrowedFd<'_>>,
    path: &Path,
    cap: usize,
) -> Result<(FileRead, PathBuf), Escapes> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    use rustix::io::Errno;
    use std::io::Read;
    let flags = OFlags::PATH | OFlags::CLOEXEC;
    let opened = match dir {
        Some(dir) => rustix::fs::openat2(
            dir,
            path,
            flags,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        ),
        None => rustix::fs::openat2(
            rustix::fs::CWD,
            path,
            flags,
            Mode::empty(),
            ResolveFlags::NO_MAGICLINKS,
        ),
    };
    let unreadable = |why: String| Ok((FileRead::Unreadable(why), PathBuf::new()));
    let at = match opened {
        Ok(fd) => fd,
        Err(Errno::NOENT | Errno::NOTDIR) => return Ok((FileRead::Missing, PathBuf::new())),
        Err(Errno::XDEV | Errno::LOOP) if dir.is_some() => return Err(Escapes),
        Err(e) => return unreadable(format!("it cannot be opened: {e}")),
    };
    let stat = match rustix::fs::fstat(&at) {
        Ok(stat) => stat,
        Err(e) => return unreadable(format!("it cannot be examined: {e}")),
    };
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return unreadable("it is not a regular file".to_owned());
    }
    // The descriptor names the inode examined: opened again through it, the same
    // file is read whatever happens to its path meanwhile.
    let own = format!("/proc/self/fd/{}", at.as_raw_fd());
    let real = std::fs::read_link(&own).unwrap_or_default();
    let fd = match rustix::fs::openat(
        rustix::fs::CWD,
        own.as_str(),
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(e) => return unreadable(format!("it cannot be opened: {e}")),
    };
    let mut bytes = Vec::new();
    let limit = u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1);
    if let Err(e) = std::fs::File::from(fd).take(limit).read_to_end(&mut bytes) {
        return unreadable(format!("reading it failed: {e}"));
    }
    let executable = stat.st_mode & 0o111 != 0;
    Ok((FileRead::Read { bytes, executable }, real))
}

/// A path that leads out of the directory it was opened beneath.
#[derive(Debug)]
pub(super) struct Escapes;
