//! The compiled-code cache: native code the host maps and runs, so no entry is used
//! before it is authenticated.
//!
//! An entry `NAME` (the component's SHA-256 and the engine's digest) holds the code
//! and `NAME.tag` its HMAC-SHA256, under the cache's key, of the name and the code.
//! The key (`hmac.key`: 32 random bytes, mode 0600) is made by the first host that
//! uses the directory. Loading copies the entry into a sealed memory file while it
//! computes the tag, and hands wasmtime that copy only when the tag verifies: the bytes
//! that run are the bytes that were checked, whatever happens to the file meanwhile.
//! A missing or bad tag is not an error to stop for: the component is compiled again
//! and the entry rewritten.
//!
//! What this stops: anyone who can put files in the directory but cannot read the key
//! — a tool with a mount over it (the registry also refuses such a directory), a
//! container or sandbox with it bound in, a restored backup, another user's files (a
//! directory not the user's own, or writable by others, is refused outright). What it
//! cannot stop: a process of the host's own user that reads the key (a `local`
//! terminal command: that backend is no sandbox).

use hmac::{Hmac, Mac};
use rustix::fs::{Mode, OFlags};
use sha2::Sha256;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use wasmtime::Engine;
use wasmtime::component::Component;

/// The key's file, in the cache directory.
const KEY_FILE: &str = "hmac.key";
/// Bytes of the key (HMAC-SHA256's output size; longer would add nothing).
const KEY_BYTES: usize = 32;
/// Bytes of a tag.
const TAG_BYTES: usize = 32;
/// The largest entry read. Compiled code is a few times its component's size, and
/// components are capped at 64 MiB: anything larger was not written by a host.
const MAX_ENTRY_BYTES: u64 = 1 << 30;
/// Read and copied at a time while an entry is checked.
const CHUNK: usize = 256 * 1024;
/// What the tag covers besides the entry's name and code: the purpose and its version.
const DOMAIN: &[u8] = b"hermetic compiled-code cache v1\0";

type HmacSha256 = Hmac<Sha256>;

/// An open cache directory and its key.
pub(super) struct CodeCache {
    dir: PathBuf,
    key: [u8; KEY_BYTES],
}

impl CodeCache {
    /// The cache in `dir`, created (mode 0700) if missing, with its key (made if
    /// missing).
    ///
    /// # Errors
    /// Why it cannot be used: not a directory, not the user's own, writable by group or
    /// others, or a key that is unreadable, of the wrong size or readable by others.
    pub(super) fn open(dir: &Path) -> Result<Self, String> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("cannot create it: {e}"))?;
        check_dir(dir)?;
        let key = key(dir)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            key,
        })
    }

    /// The entry `entry`'s code, if there is an entry and its tag verifies.
    ///
    /// # Errors
    /// Why an entry that is there is not used (no tag, a tag that does not verify, not
    /// a regular file, code wasmtime refuses): the caller compiles instead.
    pub(super) fn load(&self, engine: &Engine, entry: &str) -> Result<Option<Component>, String> {
        let mut file = match open_regular(&self.dir.join(entry)) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot open it: {e}")),
        };
        let tag = read_tag(&self.dir.join(format!("{entry}.tag")))?;
        // Said before a byte is copied; the read below still counts, as the file may
        // grow meanwhile.
        let size = file
            .metadata()
            .map_err(|e| format!("cannot read it: {e}"))?
            .len();
        if size > MAX_ENTRY_BYTES {
            return Err(format!("it is over {MAX_ENTRY_BYTES} bytes"));
        }
        let mut mac = self.mac(entry)?;
        let copy = rustix::fs::memfd_create(
            "hermetic-code",
            rustix::fs::MemfdFlags::CLOEXEC | rustix::fs::MemfdFlags::ALLOW_SEALING,
        )
        .map_err(|e| format!("cannot make a memory file for it: {e}"))?;
        let mut copy = File::from(copy);
        let mut buffer = vec![0u8; CHUNK];
        let mut total = 0u64;
        loop {
            let n = match file.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("cannot read it: {e}")),
            };
            total += n as u64;
            if total > MAX_ENTRY_BYTES {
                return Err(format!("it is over {MAX_ENTRY_BYTES} bytes"));
            }
            let chunk = &buffer[..n];
            mac.update(chunk);
            copy.write_all(chunk)
                .map_err(|e| format!("cannot copy it: {e}"))?;
        }
        mac.verify_slice(&tag).map_err(|_| {
            "its tag does not verify: this cache's key did not write it (planted, changed, \
             or from another cache)"
                .to_owned()
        })?;
        // Nothing may change the checked copy now, not even this process.
        rustix::fs::fcntl_add_seals(
            &copy,
            rustix::fs::SealFlags::WRITE
                | rustix::fs::SealFlags::SHRINK
                | rustix::fs::SealFlags::GROW
                | rustix::fs::SealFlags::SEAL,
        )
        .map_err(|e| format!("cannot seal its copy: {e}"))?;
        load_verified(engine, &copy)
            .map_err(|e| format!("wasmtime refuses it: {e:#}"))
            .map(Some)
    }

    /// Writes `component`'s code as `entry`, then its tag (each atomically: a reader
    /// sees an old or a new file, never half of one; one that sees a new entry with an
    /// old tag compiles again).
    ///
    /// # Errors
    /// Serialization or I/O failures.
    pub(super) fn store(&self, component: &Component, entry: &str) -> std::io::Result<()> {
        let code = component
            .serialize()
            .map_err(|e| std::io::Error::other(format!("{e:#}")))?;
        let mut mac = self.mac(entry).map_err(std::io::Error::other)?;
        mac.update(&code);
        let tag = mac.finalize().into_bytes();
        write_atomically(&self.dir, entry, &code)?;
        write_atomically(&self.dir, &format!("{entry}.tag"), &tag)
    }

    /// The MAC over `entry`'s name, before its code.
    fn mac(&self, entry: &str) -> Result<HmacSha256, String> {
        let mut mac = <HmacSha256 as Mac>::new_from_slice(&self.key)
            .map_err(|e| format!("the key does not fit HMAC: {e}"))?;
        mac.update(DOMAIN);
        mac.update(entry.as_bytes());
        mac.update(b"\0");
        Ok(mac)
    }
}

/// Hands wasmtime the verified, sealed copy: opened again through `/proc/self/fd`,
/// which names that very file (not a path anyone could swap), and mapped by wasmtime
/// only as far as the code is used.
#[allow(
    unsafe_code,
    reason = "wasmtime's precompiled-code loading is unsafe by contract; see below"
)]
fn load_verified(engine: &Engine, copy: &File) -> wasmtime::Result<Component> {
    let path = format!("/proc/self/fd/{}", copy.as_raw_fd());
    // SAFETY: the bytes are sealed against any change and carry a tag made with this
    // cache's key, which only a host writing its own `Component::serialize` output
    // computes (`CodeCache::store`); the entry's name holds the engine's compatibility
    // digest, and wasmtime still checks the header against this engine.
    unsafe { Component::deserialize_file(engine, path) }
}

/// Refuses a cache directory that is not the host user's own: owned by another uid,
/// or writable by group or others (a symlink is judged by what it points to, which
/// must pass the same test).
fn check_dir(dir: &Path) -> Result<(), String> {
    let meta = std::fs::metadata(dir).map_err(|e| format!("cannot read it: {e}"))?;
    if !meta.is_dir() {
        return Err("it is not a directory".into());
    }
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(format!(
            "it is owned by uid {}, not by this process's uid {me}",
            meta.uid()
        ));
    }
    if meta.permissions().mode() & 0o022 != 0 {
        return Err(format!(
            "it is writable by group or others (mode {:o}); chmod go-w it",
            meta.permissions().mode() & 0o777
        ));
    }
    Ok(())
}

/// The cache's key: read from `dir/hmac.key`, or made and written there (mode 0600)
/// when there is none. Hosts starting together agree on one: a new key is published
/// with a hard link, which fails if another host's came first, and that one is read.
fn key(dir: &Path) -> Result<[u8; KEY_BYTES], String> {
    let path = dir.join(KEY_FILE);
    match read_key(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        read => return read.map_err(|e| format!("its key {}: {e}", path.display())),
    }
    let mut key = [0u8; KEY_BYTES];
    getrandom::fill(&mut key).map_err(|e| format!("cannot make a key: {e}"))?;
    let tmp = dir.join(temporary_name("key"));
    let published = write_new(&tmp, &key).and_then(|()| std::fs::hard_link(&tmp, &path));
    let _ = std::fs::remove_file(&tmp);
    match published {
        Ok(()) => Ok(key),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            read_key(&path).map_err(|e| format!("its key {}: {e}", path.display()))
        }
        Err(e) => Err(format!("cannot write its key {}: {e}", path.display())),
    }
}

/// Reads a key file, which must be a regular file of the user's own, readable by no
/// one else, of exactly [`KEY_BYTES`] bytes.
fn read_key(path: &Path) -> std::io::Result<[u8; KEY_BYTES]> {
    let mut file = open_regular(path)?;
    let meta = file.metadata()?;
    let me = rustix::process::geteuid().as_raw();
    let refuse = |why: String| {
        Err(std::io::Error::other(format!(
            "{why}; delete it, and a new key is made (cached code is then compiled again)"
        )))
    };
    if meta.uid() != me {
        return refuse(format!("it is owned by uid {}, not {me}", meta.uid()));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        return refuse(format!(
            "group or others may use it (mode {:o})",
            meta.permissions().mode() & 0o777
        ));
    }
    if meta.len() != KEY_BYTES as u64 {
        return refuse(format!("it is {} bytes, not {KEY_BYTES}", meta.len()));
    }
    let mut key = [0u8; KEY_BYTES];
    file.read_exact(&mut key)?;
    Ok(key)
}

/// Reads a tag file: exactly [`TAG_BYTES`] bytes.
fn read_tag(path: &Path) -> Result<[u8; TAG_BYTES], String> {
    let file = match open_regular(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err("it has no tag (a host writes one with every entry)".to_owned());
        }
        Err(e) => return Err(format!("cannot open its tag: {e}")),
    };
    let mut tag = Vec::with_capacity(TAG_BYTES + 1);
    file.take(TAG_BYTES as u64 + 1)
        .read_to_end(&mut tag)
        .map_err(|e| format!("cannot read its tag: {e}"))?;
    <[u8; TAG_BYTES]>::try_from(tag.as_slice())
        .map_err(|_| format!("its tag is {} bytes, not {TAG_BYTES}", tag.len()))
}

/// Opens `path` for reading if it is a regular file: a symlink is not followed, and a
/// FIFO or device is refused before anything waits on it.
fn open_regular(path: &Path) -> std::io::Result<File> {
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let file = File::from(fd);
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(file)
}

/// A name for a temporary file of this process and thread.
fn temporary_name(what: &str) -> String {
    format!(
        ".tmp-{what}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    )
}

/// Creates `path` (mode 0600, not through a symlink) holding `bytes`, flushed to disk.
fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Writes `bytes` as `dir/name` through a temporary file and a rename.
fn write_atomically(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = dir.join(temporary_name("entry"));
    // A temporary left by a crash of this very process id and thread.
    let _ = std::fs::remove_file(&tmp);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut file| file.write_all(bytes))
        .and_then(|()| std::fs::rename(&tmp, dir.join(name)));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest component: its header.
    const EMPTY: &[u8] = b"\0asm\x0d\0\x01\0";

    fn engine() -> Engine {
        let mut config = wasmtime::Config::new();
        crate::compile_settings::apply(&mut config, false);
        Engine::new(&config).unwrap()
    }

    fn stored(engine: &Engine) -> (tempfile::TempDir, CodeCache) {
        let dir = tempfile::TempDir::new().unwrap();
        let cache = CodeCache::open(&dir.path().join("cache")).unwrap();
        let component = Component::new(engine, EMPTY).unwrap();
        cache.store(&component, "a.cwasm").unwrap();
        (dir, cache)
    }

    #[test]
    fn an_entry_the_cache_wrote_loads_and_its_key_is_private() {
        let engine = engine();
        let (_dir, cache) = stored(&engine);
        assert!(cache.load(&engine, "a.cwasm").unwrap().is_some());
        assert!(cache.load(&engine, "missing.cwasm").unwrap().is_none());
        let key = std::fs::metadata(cache.dir.join(KEY_FILE)).unwrap();
        assert_eq!(key.permissions().mode() & 0o777, 0o600);
        assert_eq!(key.len(), KEY_BYTES as u64);
        let dir = std::fs::metadata(&cache.dir).unwrap();
        assert_eq!(dir.permissions().mode() & 0o777, 0o700);
        // A second host on the directory shares the key, and so the entries.
        let again = CodeCache::open(&cache.dir).unwrap();
        assert_eq!(again.key, cache.key);
        assert!(again.load(&engine, "a.cwasm").unwrap().is_some());
    }

    #[test]
    fn an_entry_without_a_valid_tag_is_not_loaded() {
        let engine = engine();
        let (_dir, cache) = stored(&engine);
        let entry = cache.dir.join("a.cwasm");
        let tag = cache.dir.join("a.cwasm.tag");
        let code = std::fs::read(&entry).unwrap();
        let refused = |why: &str| {
            let err = cache.load(&engine, "a.cwasm").map(|_| ()).unwrap_err();
            assert!(err.contains(why), "{err}");
        };

        // Planted: real code, no tag.
        std::fs::remove_file(&tag).unwrap();
        refused("it has no tag");
        // A tag from another key (another cache, or a guess).
        std::fs::write(&tag, [7u8; TAG_BYTES]).unwrap();
        refused("its tag does not verify");
        // One byte of the code changed under a good tag.
        cache
            .store(&Component::new(&engine, EMPTY).unwrap(), "a.cwasm")
            .unwrap();
        let mut changed = code.clone();
        let last = changed.len() - 1;
        changed[last] ^= 1;
        std::fs::write(&entry, &changed).unwrap();
        refused("its tag does not verify");
        // A good entry and tag copied under another name: the tag covers the name.
        std::fs::write(&entry, &code).unwrap();
        std::fs::copy(&entry, cache.dir.join("b.cwasm")).unwrap();
        std::fs::copy(&tag, cache.dir.join("b.cwasm.tag")).unwrap();
        assert!(cache.load(&engine, "a.cwasm").unwrap().is_some());
        let err = cache.load(&engine, "b.cwasm").map(|_| ()).unwrap_err();
        assert!(err.contains("its tag does not verify"), "{err}");
        // A symlink to a good entry, and a FIFO, are not followed or waited on.
        std::fs::remove_file(cache.dir.join("b.cwasm")).unwrap();
        std::os::unix::fs::symlink(&entry, cache.dir.join("b.cwasm")).unwrap();
        assert!(cache.load(&engine, "b.cwasm").is_err());
        rustix::fs::mknodat(
            rustix::fs::CWD,
            cache.dir.join("c.cwasm"),
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert!(cache.load(&engine, "c.cwasm").is_err());
    }

    #[test]
    fn an_entry_too_large_to_be_a_host_s_is_refused_before_it_is_copied() {
        let engine = engine();
        let (_dir, cache) = stored(&engine);
        // Sparse: no disk or memory is spent making it.
        let entry = std::fs::OpenOptions::new()
            .write(true)
            .open(cache.dir.join("a.cwasm"))
            .unwrap();
        entry.set_len(MAX_ENTRY_BYTES + 1).unwrap();
        let err = cache.load(&engine, "a.cwasm").map(|_| ()).unwrap_err();
        assert!(err.contains("it is over"), "{err}");
    }

    #[test]
    fn a_key_others_may_read_or_of_the_wrong_size_is_refused() {
        let dir = tempfile::TempDir::new().unwrap();
        let cache = dir.path().join("cache");
        CodeCache::open(&cache).unwrap();
        let key = cache.join(KEY_FILE);
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = CodeCache::open(&cache).map(|_| ()).unwrap_err();
        assert!(
            err.contains("group or others may use it (mode 644)"),
            "{err}"
        );
        assert!(err.contains("delete it, and a new key is made"), "{err}");
        std::fs::remove_file(&key).unwrap();
        write_new(&key, b"short").unwrap();
        let err = CodeCache::open(&cache).map(|_| ()).unwrap_err();
        assert!(err.contains("it is 5 bytes, not 32"), "{err}");
        std::fs::remove_file(&key).unwrap();
        assert!(CodeCache::open(&cache).is_ok());
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = CodeCache::open(&cache).map(|_| ()).unwrap_err();
        assert!(err.contains("writable by group or others"), "{err}");
    }
}
