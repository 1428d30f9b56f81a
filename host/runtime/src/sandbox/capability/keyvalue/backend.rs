//! Where key-value data lives: the [`KeyValueBackend`] seam, and the embedded backend
//! ([`Embedded`], a `redb` file: every acknowledged write is committed and synced
//! before the guest hears "ok", so a `kill -9` loses none). Quotas are checked in the
//! same transaction as the write they limit, so two concurrent writers cannot both
//! squeeze under one.

use crate::policy::keyvalue::KeyValueQuota;
use redb::{ReadableDatabase as _, ReadableTable as _, TableDefinition};
use std::path::Path;

/// Whose data: one tool's store for one tenant (and session, when the tool's scope is
/// the session) and one bucket. Encoded injectively (each part length-prefixed), so no
/// choice of session id or bucket name can name another's store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespace(String);

impl Namespace {
    /// The store of `tool` for `tenant`, `session` (`""` for tenant scope) and
    /// `bucket`.
    pub fn new(tool: &str, tenant: &str, session: &str, bucket: &str) -> Self {
        let mut s = String::new();
        for part in [tool, tenant, session, bucket] {
            s.push_str(&part.len().to_string());
            s.push(':');
            s.push_str(part);
            s.push('|');
        }
        Self(s)
    }

    /// The encoded form (a backend's key prefix).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Why a key-value operation failed (the guest gets it as `error.other`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyValueError {
    /// A quota would be exceeded: which, and by how much.
    #[error("quota: {0}")]
    Quota(String),
    /// The stored value is not what the operation needs (increment of a non-number).
    #[error("{0}")]
    Value(String),
    /// The backend failed (disk, network): nothing was changed.
    #[error("the key-value store failed: {0}")]
    Backend(String),
}

impl KeyValueError {
    /// A value over the quota's limit of one value.
    pub fn value_too_large(len: u64, quota: &KeyValueQuota) -> Self {
        Self::Quota(format!(
            "a value of {len} bytes is over the {}-byte limit of one value",
            quota.max_value_bytes
        ))
    }

    /// One key more than the quota allows.
    pub fn too_many_keys(quota: &KeyValueQuota) -> Self {
        Self::Quota(format!(
            "the store holds its {} keys: delete some first",
            quota.max_keys
        ))
    }

    /// A store that would grow to `bytes`, over the quota's total.
    pub fn over_total(bytes: u64, quota: &KeyValueQuota) -> Self {
        Self::Quota(format!(
            "this write would make the store {bytes} bytes, over its {}-byte limit",
            quota.max_total_bytes
        ))
    }
}

/// What `increment` makes of `old` (the value at `key`, absent: 0): the decimal
/// number plus `delta` — the rule every backend follows (`wasmtime-wasi-keyvalue`
/// stores counters as decimal text too).
///
/// # Errors
/// [`KeyValueError::Value`] for a value that is not a decimal `u64`, or an overflow.
pub fn incremented(key: &str, old: Option<&[u8]>, delta: u64) -> Result<u64, KeyValueError> {
    let current = match old {
        None => 0,
        Some(bytes) => std::str::from_utf8(bytes)
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or_else(|| {
                KeyValueError::Value(format!(
                    "the value at {key:?} is not a decimal number to increment"
                ))
            })?,
    };
    current
        .checked_add(delta)
        .ok_or_else(|| KeyValueError::Value(format!("incrementing {key:?} would overflow")))
}

/// Keys listed per `list-keys` page.
pub const PAGE: usize = 1000;

/// A key-value backend. Every method is one atomic step; `set` and `increment` check
/// `quota` against the namespace's use in the same step.
pub trait KeyValueBackend: Send + Sync {
    /// The value of `key`.
    ///
    /// # Errors
    /// [`KeyValueError::Backend`].
    fn get(&self, ns: &Namespace, key: &str) -> Result<Option<Vec<u8>>, KeyValueError>;

    /// Sets `key` to `value`.
    ///
    /// # Errors
    /// [`KeyValueError::Quota`] when it would exceed `quota` (nothing changed).
    fn set(
        &self,
        ns: &Namespace,
        key: &str,
        value: &[u8],
        quota: &KeyValueQuota,
    ) -> Result<(), KeyValueError>;

    /// Removes `key` (nothing when absent).
    ///
    /// # Errors
    /// [`KeyValueError::Backend`].
    fn delete(&self, ns: &Namespace, key: &str) -> Result<(), KeyValueError>;

    /// Up to [`PAGE`] keys from position `from` (in key order), and the next position
    /// when there are more.
    ///
    /// # Errors
    /// [`KeyValueError::Backend`].
    fn list(&self, ns: &Namespace, from: u64) -> Result<(Vec<String>, Option<u64>), KeyValueError>;

    /// Adds `delta` to the decimal number at `key` (absent: 0) and returns the sum.
    ///
    /// # Errors
    /// [`KeyValueError::Value`] for a value that is not a decimal `u64` or a sum that
    /// overflows; [`KeyValueError::Quota`] as for `set`.
    fn increment(
        &self,
        ns: &Namespace,
        key: &str,
        delta: u64,
        quota: &KeyValueQuota,
    ) -> Result<u64, KeyValueError>;

    /// Sets `key` to `value` if its value is still `expected` (`None`: absent), with
    /// `set`'s quota check, in one step; `true` too when it already holds `value`
    /// (so a repeated swap whose first answer was lost still says done); `false`
    /// (nothing written) when it holds neither.
    ///
    /// # Errors
    /// [`KeyValueError::Quota`] as for `set` (nothing changed).
    fn swap(
        &self,
        ns: &Namespace,
        key: &str,
        expected: Option<&[u8]>,
        value: &[u8],
        quota: &KeyValueQuota,
    ) -> Result<bool, KeyValueError>;
}

/// (namespace, key) → value.
const DATA: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("data");
/// namespace → (keys, bytes of keys and values).
const USAGE: TableDefinition<&str, (u64, u64)> = TableDefinition::new("usage");

/// The embedded backend: one `redb` file.
pub struct Embedded {
    db: redb::Database,
}

impl std::fmt::Debug for Embedded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedded").finish_non_exhaustive()
    }
}

fn backend(e: impl std::fmt::Display) -> KeyValueError {
    KeyValueError::Backend(e.to_string())
}

impl Embedded {
    /// The store in the file at `path` (created if missing).
    ///
    /// # Errors
    /// [`KeyValueError::Backend`] when it cannot be opened or created (another process
    /// holds it, it is not a redb file, the directory is not writable).
    pub fn open(path: &Path) -> Result<Self, KeyValueError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| backend(format!("creating {}: {e}", dir.display())))?;
        }
        let db = redb::Database::create(path)
            .map_err(|e| backend(format!("opening {}: {e}", path.display())))?;
        // The tables exist from the start, so readers never meet a missing one.
        Self::with_tables(db)
    }

    /// A store in this process's memory (nothing survives it: for embedders and tests).
    ///
    /// # Errors
    /// [`KeyValueError::Backend`] if redb cannot set up its tables.
    pub fn in_memory() -> Result<Self, KeyValueError> {
        let db = redb::Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .map_err(backend)?;
        Self::with_tables(db)
    }

    fn with_tables(db: redb::Database) -> Result<Self, KeyValueError> {
        let txn = db.begin_write().map_err(backend)?;
        txn.open_table(DATA).map_err(backend)?;
        txn.open_table(USAGE).map_err(backend)?;
        txn.commit().map_err(backend)?;
        Ok(Self { db })
    }

    /// Writes `new` at `key` in one transaction with its quota check; `new` sees the
    /// old value and returns the new one (`None`: write nothing) and what to hand back.
    fn update<T>(
        &self,
        ns: &Namespace,
        key: &str,
        quota: &KeyValueQuota,
        new: impl FnOnce(Option<&[u8]>) -> Result<(Option<Vec<u8>>, T), KeyValueError>,
    ) -> Result<T, KeyValueError> {
        let txn = self.db.begin_write().map_err(backend)?;
        let out = {
            let mut data = txn.open_table(DATA).map_err(backend)?;
            let mut usage = txn.open_table(USAGE).map_err(backend)?;
            let old = data
                .get((ns.as_str(), key))
                .map_err(backend)?
                .map(|v| v.value().to_vec());
            let (value, out) = new(old.as_deref())?;
            let Some(value) = value else {
                // Nothing to write: the transaction is dropped, aborted.
                return Ok(out);
            };
            let (keys, bytes) = usage
                .get(ns.as_str())
                .map_err(backend)?
                .map_or((0, 0), |u| u.value());
            let entry = |v: usize| u64::try_from(key.len() + v).unwrap_or(u64::MAX);
            let keys_after = keys + u64::from(old.is_none());
            let bytes_after = bytes
                .saturating_sub(old.as_ref().map_or(0, |o| entry(o.len())))
                .saturating_add(entry(value.len()));
            let value_len = u64::try_from(value.len()).unwrap_or(u64::MAX);
            if value_len > quota.max_value_bytes {
                return Err(KeyValueError::value_too_large(value_len, quota));
            }
            if keys_after > quota.max_keys {
                return Err(KeyValueError::too_many_keys(quota));
            }
            if bytes_after > quota.max_total_bytes {
                return Err(KeyValueError::over_total(bytes_after, quota));
            }
            data.insert((ns.as_str(), key), value.as_slice())
                .map_err(backend)?;
            usage
                .insert(ns.as_str(), (keys_after, bytes_after))
                .map_err(backend)?;
            out
        };
        txn.commit().map_err(backend)?;
        Ok(out)
    }
}

impl KeyValueBackend for Embedded {
    fn get(&self, ns: &Namespace, key: &str) -> Result<Option<Vec<u8>>, KeyValueError> {
        let txn = self.db.begin_read().map_err(backend)?;
        let data = txn.open_table(DATA).map_err(backend)?;
        Ok(data
            .get((ns.as_str(), key))
            .map_err(backend)?
            .map(|v| v.value().to_vec()))
    }

    fn set(
        &self,
        ns: &Namespace,
        key: &str,
        value: &[u8],
        quota: &KeyValueQuota,
    ) -> Result<(), KeyValueError> {
        self.update(ns, key, quota, |_| Ok((Some(value.to_vec()), ())))
    }

    fn delete(&self, ns: &Namespace, key: &str) -> Result<(), KeyValueError> {
        let txn = self.db.begin_write().map_err(backend)?;
        {
            let mut data = txn.open_table(DATA).map_err(backend)?;
            let removed = data
                .remove((ns.as_str(), key))
                .map_err(backend)?
                .map(|v| v.value().len());
            if let Some(len) = removed {
                let mut usage = txn.open_table(USAGE).map_err(backend)?;
                let (keys, bytes) = usage
                    .get(ns.as_str())
                    .map_err(backend)?
                    .map_or((0, 0), |u| u.value());
                let entry = u64::try_from(key.len() + len).unwrap_or(u64::MAX);
                usage
                    .insert(
                        ns.as_str(),
                        (keys.saturating_sub(1), bytes.saturating_sub(entry)),
                    )
                    .map_err(backend)?;
            }
        }
        txn.commit().map_err(backend)
    }

    fn list(&self, ns: &Namespace, from: u64) -> Result<(Vec<String>, Option<u64>), KeyValueError> {
        let txn = self.db.begin_read().map_err(backend)?;
        let data = txn.open_table(DATA).map_err(backend)?;
        let skip = usize::try_from(from).unwrap_or(usize::MAX);
        let mut keys = Vec::new();
        let mut more = false;
        for entry in data.range((ns.as_str(), "")..).map_err(backend)?.skip(skip) {
            let (k, _) = entry.map_err(backend)?;
            let (entry_ns, key) = k.value();
            if entry_ns != ns.as_str() {
                break;
            }
            if keys.len() == PAGE {
                more = true;
                break;
            }
            keys.push(key.to_owned());
        }
        let next = more.then(|| from + u64::try_from(PAGE).unwrap_or(u64::MAX));
        Ok((keys, next))
    }

    fn increment(
        &self,
        ns: &Namespace,
        key: &str,
        delta: u64,
        quota: &KeyValueQuota,
    ) -> Result<u64, KeyValueError> {
        self.update(ns, key, quota, |old| {
            let sum = incremented(key, old, delta)?;
            Ok((Some(sum.to_string().into_bytes()), sum))
        })
    }

    fn swap(
        &self,
        ns: &Namespace,
        key: &str,
        expected: Option<&[u8]>,
        value: &[u8],
        quota: &KeyValueQuota,
    ) -> Result<bool, KeyValueError> {
        self.update(ns, key, quota, |old| {
            Ok(if old == Some(value) {
                // Already there: nothing to write (as the Redis backend answers).
                (None, true)
            } else if old == expected {
                (Some(value.to_vec()), true)
            } else {
                (None, false)
            })
        })
    }
}

/// The embedded store in a file, opened on first use (a host that never calls a tool
/// with a store never opens it, so two `hermetic` processes on one machine collide only
/// when both use it — and then the second is told why).
pub struct EmbeddedFile {
    path: std::path::PathBuf,
    opened: parking_lot::Mutex<Option<std::sync::Arc<Embedded>>>,
}

impl std::fmt::Debug for EmbeddedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedFile")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl EmbeddedFile {
    /// The store at `path`, not opened yet.
    pub fn new(path: std::path::PathBuf) -> Self {
        Self {
            path,
            opened: parking_lot::Mutex::new(None),
        }
    }

    fn store(&self) -> Result<std::sync::Arc<Embedded>, KeyValueError> {
        let mut opened = self.opened.lock();
        if let Some(store) = &*opened {
            return Ok(std::sync::Arc::clone(store));
        }
        let store = std::sync::Arc::new(Embedded::open(&self.path).map_err(|e| {
            KeyValueError::Backend(format!(
                "{e} (another hermetic process may be using {}: give each host its own with [keyvalue] file)",
                self.path.display()
            ))
        })?);
        *opened = Some(std::sync::Arc::clone(&store));
        Ok(store)
    }
}

impl KeyValueBackend for EmbeddedFile {
    fn get(&self, ns: &Namespace, key: &str) -> Result<Option<Vec<u8>>, KeyValueError> {
        self.store()?.get(ns, key)
    }

    fn set(
        &self,
        ns: &Namespace,
        key: &str,
        value: &[u8],
        quota: &KeyValueQuota,
    ) -> Result<(), KeyValueError> {
        self.store()?.set(ns, key, value, quota)
    }

    fn delete(&self, ns: &Namespace, key: &str) -> Result<(), KeyValueError> {
        self.store()?.delete(ns, key)
    }

    fn list(&self, ns: &Namespace, from: u64) -> Result<(Vec<String>, Option<u64>), KeyValueError> {
        self.store()?.list(ns, from)
    }

    fn increment(
        &self,
        ns: &Namespace,
        key: &str,
        delta: u64,
        quota: &KeyValueQuota,
    ) -> Result<u64, KeyValueError> {
        self.store()?.increment(ns, key, delta, quota)
    }

    fn swap(
        &self,
        ns: &Namespace,
        key: &str,
        expected: Option<&[u8]>,
        value: &[u8],
        quota: &KeyValueQuota,
    ) -> Result<bool, KeyValueError> {
        self.store()?.swap(ns, key, expected, value, quota)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn namespaces_are_injective() {
        assert_ne!(
            Namespace::new("t", "a|1:b", "", "x"),
            Namespace::new("t", "a", "1:b", "x")
        );
        assert_ne!(
            Namespace::new("t", "a", "", "b"),
            Namespace::new("t", "", "a", "b")
        );
    }

    #[test]
    fn quotas_usage_and_listing_hold_across_reopening() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("kv.redb");
        let quota = KeyValueQuota {
            max_keys: 3,
            max_value_bytes: 10,
            max_total_bytes: 20,
        };
        let ns = Namespace::new("t", "acme", "", "");
        let other = Namespace::new("t", "globex", "", "");
        {
            let kv = Embedded::open(&path).unwrap();
            kv.set(&ns, "a", b"1234", &quota).unwrap();
            kv.set(&ns, "b", b"1", &quota).unwrap();
            assert!(matches!(
                kv.set(&ns, "c", &[0; 11], &quota),
                Err(KeyValueError::Quota(_))
            ));
            // a: 5, b: 2, c with 9 bytes: 10 → 17 total, fits; a fourth key does not.
            kv.set(&ns, "c", &[0; 9], &quota).unwrap();
            assert!(matches!(
                kv.set(&ns, "d", b"", &quota),
                Err(KeyValueError::Quota(_))
            ));
            // Overwriting an existing key is not a new key; growing past the total is
            // refused and changes nothing.
            kv.set(&ns, "b", b"22", &quota).unwrap();
            assert!(matches!(
                kv.set(&ns, "a", &[1; 10], &quota),
                Err(KeyValueError::Quota(_))
            ));
            assert_eq!(kv.get(&ns, "a").unwrap().unwrap(), b"1234");
            assert_eq!(kv.get(&other, "a").unwrap(), None);
            assert_eq!(kv.increment(&other, "n", 5, &quota).unwrap(), 5);
            assert_eq!(kv.increment(&other, "n", 2, &quota).unwrap(), 7);
            assert!(
                kv.increment(&ns, "a", 1, &quota).is_ok(),
                "\"1234\" is a number"
            );
            assert!(matches!(
                kv.increment(&ns, "c", 1, &quota),
                Err(KeyValueError::Value(_))
            ));
        }
        let kv = Embedded::open(&path).unwrap();
        assert_eq!(kv.get(&ns, "a").unwrap().unwrap(), b"1235");
        assert_eq!(
            kv.list(&ns, 0).unwrap(),
            (vec!["a".into(), "b".into(), "c".into()], None)
        );
        assert_eq!(kv.list(&ns, 2).unwrap().0, vec!["c".to_owned()]);
        kv.delete(&ns, "a").unwrap();
        kv.delete(&ns, "a").unwrap();
        // Swap: written only over the value expected (absent, empty or bytes), under
        // the quota; a refused swap changes nothing.
        assert!(!kv.swap(&ns, "a", Some(b"1235"), b"x", &quota).unwrap());
        assert!(kv.swap(&ns, "a", None, b"", &quota).unwrap());
        assert!(!kv.swap(&ns, "a", None, b"y", &quota).unwrap());
        assert!(
            kv.swap(&ns, "a", Some(b"other"), b"", &quota).unwrap(),
            "already holds the value"
        );
        assert!(kv.swap(&ns, "a", Some(b""), b"zz", &quota).unwrap());
        assert_eq!(kv.get(&ns, "a").unwrap().unwrap(), b"zz");
        assert!(matches!(
            kv.swap(&ns, "a", Some(b"zz"), &[0; 11], &quota),
            Err(KeyValueError::Quota(_))
        ));
        assert_eq!(kv.get(&ns, "a").unwrap().unwrap(), b"zz");
        kv.delete(&ns, "a").unwrap();
        kv.set(&ns, "d", b"x", &quota).unwrap();
        assert_eq!(kv.list(&other, 0).unwrap().0, vec!["n".to_owned()]);
    }
}
