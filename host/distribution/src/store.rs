//! The content-addressed store of pulled tools: `blobs/sha256/<hex>` holds components
//! and manifests by their digest, `signatures/<component hex>/<key id>.json` the
//! signatures found for a component. Everything is written to `tmp/` first, checked
//! against its digest, synced and renamed into place: a crash, a tampered download or a
//! registry that sends the wrong bytes leaves nothing half-written under a digest.
//! Reads check the digest again, so a file changed on disk is refused, not run.
//!
//! A pull killed midway (kill -9, a power cut) leaves its temporary file in `tmp/`.
//! Such files are removed when the store is next opened (the next pull, a start), but
//! never one a live pull is still writing: every write holds a shared lock on
//! `tmp/.lock` while its temporary file exists, and the cleaning takes that lock
//! exclusively, without waiting — when any pull is writing, the cleaning is left to a
//! later open. (`flock`: the kernel drops a dead process's locks, so nothing stale
//! can keep a lock.)

use crate::digest::Digest;
use sha2::{Digest as _, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// A store error: what failed, on which path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The file system said no.
    #[error("the tool store at {path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A stored file does not have the digest it is stored under: changed or
    /// corrupted on disk since it was pulled.
    #[error(
        "{what} has digest {actual}, not {expected}: refused (the stored file was changed or corrupted since it was pulled; pulling it again replaces it)"
    )]
    Mismatch {
        /// What was checked.
        what: String,
        /// The digest asked for.
        expected: Digest,
        /// The digest of the bytes.
        actual: Digest,
    },
    /// Content received to be stored (a download) does not have the digest it is
    /// pinned to: pulling again would fetch the same bytes.
    #[error(
        "{what} has digest {actual}, not {expected}: refused, nothing stored (the registry serves content that does not match the digest it is pinned to: tampered or corrupted at the source, so pulling again fetches the same bytes; tell the publisher, or pin another digest)"
    )]
    Received {
        /// What was checked.
        what: String,
        /// The digest asked for.
        expected: Digest,
        /// The digest of the bytes.
        actual: Digest,
    },
    /// More bytes than allowed.
    #[error("{what} is larger than {limit} bytes: refused")]
    TooLarge {
        /// What was read.
        what: String,
        /// The cap.
        limit: u64,
    },
    /// Not in the store.
    #[error("{digest} is not in the tool store {root}")]
    Missing {
        /// The digest.
        digest: Digest,
        /// The store's root.
        root: PathBuf,
    },
}

/// The store at one directory.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl Store {
    /// The default store: `$HERMETIC_STORE_DIR`, else `$XDG_DATA_HOME/hermetic/store`,
    /// else `~/.local/share/hermetic/store`. Data, not cache: deleting it means pulling
    /// again, which needs the network.
    pub fn default_dir() -> Option<PathBuf> {
        if let Some(dir) = std::env::var_os("HERMETIC_STORE_DIR") {
            return Some(PathBuf::from(dir));
        }
        if let Some(dir) = std::env::var_os("XDG_DATA_HOME") {
            return Some(PathBuf::from(dir).join("hermetic/store"));
        }
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share/hermetic/store"))
    }

    /// Opens (making, 0700) the store at `root`, and removes what pulls that died
    /// left in `tmp/` when no pull is writing (see the module docs).
    ///
    /// # Errors
    /// [`StoreError::Io`] when a directory cannot be made.
    pub fn open(root: &Path) -> Result<Self, StoreError> {
        use std::os::unix::fs::DirBuilderExt;
        for sub in ["blobs/sha256", "signatures", "tmp"] {
            let dir = root.join(sub);
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&dir)
                .map_err(io(&dir))?;
        }
        let store = Self {
            root: root.to_path_buf(),
        };
        store.check_tmp_is_a_directory()?;
        store.clean_tmp();
        Ok(store)
    }

    /// Refuses a `tmp/` that is a symbolic link (or anything but a directory): its
    /// files are removed at every open, and through a link that would be wherever it
    /// points.
    fn check_tmp_is_a_directory(&self) -> Result<(), StoreError> {
        let tmp = self.root.join("tmp");
        let meta = std::fs::symlink_metadata(&tmp).map_err(io(&tmp))?;
        if meta.is_dir() {
            return Ok(());
        }
        Err(StoreError::Io {
            path: tmp,
            source: std::io::Error::other(
                "not a directory (a symbolic link?): refused, as the store empties its tmp/ at every open; remove it, and the next open makes the directory",
            ),
        })
    }

    /// The lock every write holds (shared) while its temporary file exists.
    fn tmp_lock(&self) -> Result<std::fs::File, StoreError> {
        use std::os::unix::fs::OpenOptionsExt;
        let path = self.root.join(TMP_LOCK);
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .map_err(io(&path))
    }

    /// Holds the shared lock on `tmp/` until dropped: no cleaning removes a temporary
    /// file meanwhile. On a file system without locks (`None`) the write goes ahead
    /// unlocked: the cleaning cannot lock there either, so it removes nothing.
    fn writing(&self) -> Result<Option<std::fs::File>, StoreError> {
        let lock = self.tmp_lock()?;
        match lock.lock_shared() {
            Ok(()) => Ok(Some(lock)),
            Err(e) if locks_unsupported(&e) => Ok(None),
            Err(e) => Err(io(&self.root.join(TMP_LOCK))(e)),
        }
    }

    /// Removes every temporary file in `tmp/` when no write holds its lock; when one
    /// does (a pull is running), removes nothing. Returns how many were removed. Best
    /// effort: a file that cannot be removed stays for a later try.
    pub fn clean_tmp(&self) -> usize {
        let Ok(lock) = self.tmp_lock() else {
            return 0;
        };
        if lock.try_lock().is_err() {
            return 0;
        }
        let tmp = self.root.join("tmp");
        // Never through a link (see `check_tmp_is_a_directory`).
        if !std::fs::symlink_metadata(&tmp).is_ok_and(|m| m.is_dir()) {
            return 0;
        }
        let Ok(entries) = std::fs::read_dir(&tmp) else {
            return 0;
        };
        let lock_name = Path::new(TMP_LOCK).file_name();
        let removed = entries
            .filter_map(Result::ok)
            .filter(|e| Some(e.file_name().as_os_str()) != lock_name)
            .filter(|e| std::fs::remove_file(e.path()).is_ok())
            .count();
        // Dropping the file releases the lock.
        drop(lock);
        removed
    }

    /// The store's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the blob with `digest` lives (whether or not it is there).
    pub fn blob_path(&self, digest: &Digest) -> PathBuf {
        self.root.join("blobs/sha256").join(digest.hex())
    }

    /// Whether the blob is stored.
    pub fn has(&self, digest: &Digest) -> bool {
        self.blob_path(digest).is_file()
    }

    /// Stores what `fill` writes, if it has `expected` as digest and at most `limit`
    /// bytes; otherwise nothing is left behind.
    ///
    /// # Errors
    /// What `fill` returns, [`StoreError::TooLarge`], [`StoreError::Mismatch`], or the
    /// file system's error.
    pub fn put_with<E: From<StoreError>>(
        &self,
        what: &str,
        expected: &Digest,
        limit: u64,
        fill: impl FnOnce(&mut dyn Write) -> Result<(), E>,
    ) -> Result<PathBuf, E> {
        let dest = self.blob_path(expected);
        if dest.is_file() && self.read(expected, limit).is_ok() {
            return Ok(dest);
        }
        let _writing = self.writing()?;
        let tmp_dir = self.root.join("tmp");
        let mut tmp = tempfile::NamedTempFile::new_in(&tmp_dir).map_err(io(&tmp_dir))?;
        let mut writer = Checked {
            inner: tmp.as_file_mut(),
            hasher: Sha256::new(),
            written: 0,
            limit,
        };
        fill(&mut writer)?;
        let (hasher, written) = (writer.hasher, writer.written);
        if written > limit {
            return Err(StoreError::TooLarge {
                what: what.to_owned(),
                limit,
            }
            .into());
        }
        let actual = Digest::from_hasher(hasher);
        if &actual != expected {
            return Err(StoreError::Received {
                what: what.to_owned(),
                expected: expected.clone(),
                actual,
            }
            .into());
        }
        tmp.as_file().sync_all().map_err(io(tmp.path()))?;
        tmp.persist(&dest).map_err(|e| StoreError::Io {
            path: dest.clone(),
            source: e.error,
        })?;
        sync_dir(&dest);
        Ok(dest)
    }

    /// Stores `bytes` under their own digest.
    ///
    /// # Errors
    /// The file system's error.
    pub fn put(&self, what: &str, bytes: &[u8]) -> Result<Digest, StoreError> {
        let digest = Digest::of(bytes);
        self.put_with::<StoreError>(what, &digest, u64::MAX, |w| {
            w.write_all(bytes).map_err(io(Path::new("(tmp)")))
        })?;
        Ok(digest)
    }

    /// The blob with `digest`, checked against it.
    ///
    /// # Errors
    /// [`StoreError::Missing`], [`StoreError::TooLarge`], [`StoreError::Mismatch`] or
    /// the file system's error.
    pub fn read(&self, digest: &Digest, limit: u64) -> Result<Vec<u8>, StoreError> {
        let path = self.blob_path(digest);
        let file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::Missing {
                    digest: digest.clone(),
                    root: self.root.clone(),
                });
            }
            Err(e) => return Err(io(&path)(e)),
        };
        let mut bytes = Vec::new();
        file.take(limit.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(io(&path))?;
        if bytes.len() as u64 > limit {
            return Err(StoreError::TooLarge {
                what: path.display().to_string(),
                limit,
            });
        }
        let actual = Digest::of(&bytes);
        if &actual != digest {
            return Err(StoreError::Mismatch {
                what: path.display().to_string(),
                expected: digest.clone(),
                actual,
            });
        }
        Ok(bytes)
    }

    /// The directory holding the signatures of the component `digest`.
    pub fn signatures_dir(&self, digest: &Digest) -> PathBuf {
        self.root.join("signatures").join(digest.hex())
    }

    /// Writes one file atomically below the store (a signature, a manifest index).
    ///
    /// # Errors
    /// The file system's error.
    pub fn write_file(&self, path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
        use std::os::unix::fs::DirBuilderExt;
        if let Some(dir) = path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(io(dir))?;
        }
        let _writing = self.writing()?;
        let tmp_dir = self.root.join("tmp");
        let mut tmp = tempfile::NamedTempFile::new_in(&tmp_dir).map_err(io(&tmp_dir))?;
        tmp.write_all(bytes).map_err(io(tmp.path()))?;
        tmp.as_file().sync_all().map_err(io(tmp.path()))?;
        tmp.persist(path).map_err(|e| StoreError::Io {
            path: path.to_path_buf(),
            source: e.error,
        })?;
        sync_dir(path);
        Ok(())
    }
}

/// The lock file of `tmp/` (see the module docs).
const TMP_LOCK: &str = "tmp/.lock";

/// Whether a lock failed because the file system has none (NFS without a lock
/// daemon: `ENOLCK`; some FUSE and network file systems: `EOPNOTSUPP`, `ENOSYS`),
/// rather than for a reason a write should stop on.
fn locks_unsupported(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::Unsupported
        || matches!(
            e.raw_os_error(),
            Some(libc::ENOLCK | libc::EOPNOTSUPP | libc::ENOSYS)
        )
}

/// Makes a rename durable (best effort: a directory that cannot be synced still holds
/// the file, only its survival of a power cut is less sure).
fn sync_dir(file: &Path) {
    if let Some(dir) = file.parent()
        && let Ok(d) = std::fs::File::open(dir)
    {
        let _ = d.sync_all();
    }
}

/// Hashes and counts what passes, refusing past the limit (so a registry that sends
/// more than it announced stops at the cap, not at the disk's end).
struct Checked<'a> {
    inner: &'a mut std::fs::File,
    hasher: Sha256,
    written: u64,
    limit: u64,
}

impl Write for Checked<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.written = self.written.saturating_add(buf.len() as u64);
        if self.written > self.limit {
            return Err(std::io::Error::other(format!(
                "more than {} bytes",
                self.limit
            )));
        }
        self.hasher.update(buf);
        self.inner.write_all(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bytes_with_the_right_digest_are_stored_and_read() {
        let dir = tempfile::TempDir::new().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let d = store.put("x", b"hello").unwrap();
        assert_eq!(store.read(&d, 100).unwrap(), b"hello");
        // Wrong bytes for a digest: refused, nothing left.
        let other = Digest::of(b"other");
        let e = store
            .put_with::<StoreError>("blob", &other, 100, |w| {
                w.write_all(b"not other").map_err(io(Path::new("x")))
            })
            .unwrap_err();
        assert!(matches!(e, StoreError::Received { .. }), "{e}");
        assert!(!e.to_string().contains("pulling it again"), "{e}");
        assert!(!store.has(&other));
        // Over the cap: refused, nothing left.
        let big = Digest::of(&[0u8; 200]);
        assert!(
            store
                .put_with::<StoreError>("blob", &big, 100, |w| {
                    w.write_all(&[0u8; 200]).map_err(io(Path::new("x")))
                })
                .is_err()
        );
        assert!(!store.has(&big));
        assert_eq!(temporary_files(dir.path()), 0);
        // A stored file changed on disk is refused at read.
        std::fs::write(store.blob_path(&d), b"jello").unwrap();
        assert!(matches!(
            store.read(&d, 100),
            Err(StoreError::Mismatch { .. })
        ));
        assert!(matches!(
            store.read(&other, 100),
            Err(StoreError::Missing { .. })
        ));
    }

    #[test]
    fn a_file_system_without_locks_is_written_unlocked_not_refused() {
        for (errno, unsupported) in [
            (libc::ENOLCK, true),
            (libc::EOPNOTSUPP, true),
            (libc::ENOSYS, true),
            (libc::EACCES, false),
            (libc::EIO, false),
        ] {
            assert_eq!(
                locks_unsupported(&std::io::Error::from_raw_os_error(errno)),
                unsupported,
                "errno {errno}"
            );
        }
    }

    #[test]
    fn a_tmp_that_is_a_symbolic_link_is_refused_and_what_it_points_to_kept() {
        let dir = tempfile::TempDir::new().unwrap();
        let elsewhere = tempfile::TempDir::new().unwrap();
        std::fs::write(elsewhere.path().join("precious"), b"keep me").unwrap();
        std::fs::create_dir_all(dir.path().join("blobs/sha256")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), dir.path().join("tmp")).unwrap();
        let e = Store::open(dir.path()).unwrap_err();
        assert!(e.to_string().contains("not a directory"), "{e}");
        assert!(elsewhere.path().join("precious").exists());
    }

    fn temporary_files(root: &Path) -> usize {
        std::fs::read_dir(root.join("tmp"))
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name() != ".lock")
            .count()
    }

    #[test]
    fn opening_removes_what_dead_writers_left_but_not_what_a_live_one_writes() {
        let dir = tempfile::TempDir::new().unwrap();
        let store = Store::open(dir.path()).unwrap();
        // What a pull killed midway leaves: a temporary file no one holds.
        std::fs::write(dir.path().join("tmp/.tmpDEAD01"), b"half a blob").unwrap();
        assert_eq!(temporary_files(dir.path()), 1);
        Store::open(dir.path()).unwrap();
        assert_eq!(temporary_files(dir.path()), 0, "cleaned at open");
        // A live writer (this thread, inside put_with) holds the lock: another open
        // removes nothing, neither its file nor a dead one's.
        std::fs::write(dir.path().join("tmp/.tmpDEAD02"), b"stale").unwrap();
        let digest = Digest::of(b"payload");
        let root = dir.path().to_path_buf();
        store
            .put_with::<StoreError>("blob", &digest, 100, |w| {
                assert_eq!(temporary_files(&root), 2, "the stale file and this one");
                assert_eq!(Store::open(&root).unwrap().clean_tmp(), 0);
                assert_eq!(
                    temporary_files(&root),
                    2,
                    "nothing removed under a live write"
                );
                w.write_all(b"payload").map_err(io(Path::new("x")))
            })
            .unwrap();
        assert!(store.has(&digest));
        assert_eq!(store.clean_tmp(), 1, "the stale one, once no one writes");
        assert_eq!(temporary_files(dir.path()), 0);
    }
}
