//! The embedded backend: one `redb` file. Every acknowledged write is committed and
//! synced before the guest hears "ok", so a `kill -9` loses none. A store's use (keys,
//! bytes, last write) is one row, and a tenant's session stores' use together another;
//! both are checked and changed in the same transaction as the write they limit, so
//! two concurrent writers cannot both squeeze under a quota.
//!
//! After an I/O error (a full disk) redb refuses every later operation until the
//! database is opened again: [`Embedded::is_broken`] says so, and [`super::file`]
//! opens it again.

use super::backend::{
    EntryInfo, KeyValueBackend, KeyValueError, Namespace, PAGE, StoreFilter, StoreId, StoreInfo,
    incremented, parse_bucket,
};
use super::settings::KeyValueSettings;
use crate::policy::keyvalue::KeyValueQuota;
use redb::{ReadableDatabase as _, ReadableTable as _, TableDefinition};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

/// (namespace, key) → value.
const DATA: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("data");
/// A store's row key: (tenant, session, tool).
type StoreKey = (&'static str, &'static str, &'static str);
/// A store's row: (keys, bytes of keys and values, last write in ms since the epoch,
/// whether it is a session store).
type StoreRow = (u64, u64, u64, bool);
/// Every store's use.
const STORES: TableDefinition<StoreKey, StoreRow> = TableDefinition::new("stores");
/// tenant → (keys, bytes) of its session stores together.
const SESSIONS: TableDefinition<&str, (u64, u64)> = TableDefinition::new("session_use");
/// `layout` → the version of the tables beside `data`.
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
/// Layout 1's use per bucket (namespace → keys, bytes): replaced by [`STORES`].
const OLD_USAGE: TableDefinition<&str, (u64, u64)> = TableDefinition::new("usage");
/// The layout written here: use per store ([`STORES`]) and per tenant ([`SESSIONS`]).
const LAYOUT: u64 = 2;
/// Session stores deleted per transaction of a sweep, at most (a sweep never holds the
/// single writer for long).
const SWEEP_BATCH: usize = 256;
/// Entries deleted per transaction of a sweep, at most (unless one store holds more):
/// 256 stores could hold millions.
const SWEEP_ENTRIES: u64 = 10_000;

/// A store's use, as [`STORES`] keeps it.
#[derive(Debug, Clone, Copy, Default)]
struct Row {
    keys: u64,
    bytes: u64,
    written_ms: u64,
    session: bool,
}

impl Row {
    fn of(v: StoreRow) -> Self {
        Self {
            keys: v.0,
            bytes: v.1,
            written_ms: v.2,
            session: v.3,
        }
    }

    fn value(self) -> StoreRow {
        (self.keys, self.bytes, self.written_ms, self.session)
    }
}

/// Milliseconds since the epoch (0 for a clock before it).
pub(super) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The smallest string above every string that starts with `prefix` (which ends in
/// `|`, as every encoded prefix does): `|` → `}`, the next character.
fn prefix_end(prefix: &str) -> String {
    let mut end = prefix.strip_suffix('|').unwrap_or(prefix).to_owned();
    end.push('}');
    end
}

fn bytes_of(len: usize) -> u64 {
    u64::try_from(len).unwrap_or(u64::MAX)
}

/// The embedded backend: one `redb` database.
pub struct Embedded {
    db: redb::Database,
    settings: KeyValueSettings,
    /// An I/O error was met: redb answers every later call with "Previous I/O error"
    /// until the database is opened again.
    broken: AtomicBool,
}

impl std::fmt::Debug for Embedded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedded")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Embedded {
    /// The store in the file at `path` (created mode 0600 if missing, in a directory
    /// created mode 0700 if missing; an existing file readable by others is made
    /// 0600), with the default [`KeyValueSettings`].
    ///
    /// # Errors
    /// [`KeyValueError::InUse`] when another process has it open;
    /// [`KeyValueError::Backend`] when it cannot be opened or created (not a redb
    /// file, the directory is not writable).
    pub fn open(path: &Path) -> Result<Self, KeyValueError> {
        Self::open_with(path, KeyValueSettings::default())
    }

    /// [`Embedded::open`] with `settings`.
    ///
    /// # Errors
    /// As [`Embedded::open`].
    pub fn open_with(path: &Path, settings: KeyValueSettings) -> Result<Self, KeyValueError> {
        let file = private_file(path)?;
        let db = redb::Database::builder()
            .create_with_backend(redb::backends::FileBackend::new(file))
            .map_err(|e| match e {
                redb::DatabaseError::DatabaseAlreadyOpen => {
                    KeyValueError::InUse(path.display().to_string())
                }
                e => KeyValueError::Backend(format!("opening {}: {e}", path.display())),
            })?;
        Self::with_tables(db, settings)
    }

    /// A store in this process's memory (nothing survives it: for embedders and tests).
    ///
    /// # Errors
    /// [`KeyValueError::Backend`] if redb cannot set up its tables.
    pub fn in_memory() -> Result<Self, KeyValueError> {
        Self::in_memory_with(KeyValueSettings::default())
    }

    /// [`Embedded::in_memory`] with `settings`.
    ///
    /// # Errors
    /// As [`Embedded::in_memory`].
    pub fn in_memory_with(settings: KeyValueSettings) -> Result<Self, KeyValueError> {
        let db = redb::Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .map_err(|e| KeyValueError::Backend(e.to_string()))?;
        Self::with_tables(db, settings)
    }

    /// Whether an I/O error stopped this database: it must be opened again.
    pub(crate) fn is_broken(&self) -> bool {
        self.broken.load(Ordering::SeqCst)
    }

    /// What an I/O error does to it (tests of the reopening, which cannot fill a
    /// disk).
    #[cfg(test)]
    pub(super) fn mark_broken(&self) {
        self.broken.store(true, Ordering::SeqCst);
    }

    /// The tables exist from the start, so readers never meet a missing one; a file of
    /// layout 1 (use per bucket) gets its use per store counted from its data, once.
    fn with_tables(db: redb::Database, settings: KeyValueSettings) -> Result<Self, KeyValueError> {
        let store = Self {
            db,
            settings,
            broken: AtomicBool::new(false),
        };
        let txn = store.db.begin_write().map_err(|e| store.fail(e))?;
        {
            let data = txn.open_table(DATA).map_err(|e| store.fail(e))?;
            let mut stores = txn.open_table(STORES).map_err(|e| store.fail(e))?;
            let mut sessions = txn.open_table(SESSIONS).map_err(|e| store.fail(e))?;
            let mut meta = txn.open_table(META).map_err(|e| store.fail(e))?;
            let layout = meta
                .get("layout")
                .map_err(|e| store.fail(e))?
                .map(|v| v.value());
            if layout != Some(LAYOUT) {
                store.count_use(&data, &mut stores, &mut sessions)?;
                meta.insert("layout", LAYOUT).map_err(|e| store.fail(e))?;
            }
        }
        txn.delete_table(OLD_USAGE).map_err(|e| store.fail(e))?;
        txn.commit().map_err(|e| store.fail(e))?;
        Ok(store)
    }

    /// Counts every store's use from the data (an older layout's file). Its stores with
    /// a session id are taken as session stores, as only those have one; a session
    /// store without an id (a session-scope tool called outside a session) reads as a
    /// tenant store and is counted as one until its next write moves its use to the
    /// tenant's session total ([`Embedded::count_in_sessions`]).
    fn count_use(
        &self,
        data: &redb::Table<(&str, &str), &[u8]>,
        stores: &mut redb::Table<StoreKey, StoreRow>,
        sessions: &mut redb::Table<&str, (u64, u64)>,
    ) -> Result<(), KeyValueError> {
        stores.retain(|_, _| false).map_err(|e| self.fail(e))?;
        sessions.retain(|_, _| false).map_err(|e| self.fail(e))?;
        let mut rows: BTreeMap<(String, String, String), (u64, u64)> = BTreeMap::new();
        for entry in data.iter().map_err(|e| self.fail(e))? {
            let (k, v) = entry.map_err(|e| self.fail(e))?;
            let (ns, key) = k.value();
            let Some((tool, tenant, session, _)) = StoreId::parse_prefix(ns) else {
                continue;
            };
            let row = rows
                .entry((tenant.to_owned(), session.to_owned(), tool.to_owned()))
                .or_default();
            row.0 += 1;
            row.1 += bytes_of(key.len() + v.value().len());
        }
        let now = now_ms();
        let mut totals: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
        for ((tenant, session, tool), (keys, bytes)) in &rows {
            let session_store = !session.is_empty();
            if session_store {
                let t = totals.entry(tenant).or_default();
                t.0 += keys;
                t.1 += bytes;
            }
            stores
                .insert(
                    (tenant.as_str(), session.as_str(), tool.as_str()),
                    (*keys, *bytes, now, session_store),
                )
                .map_err(|e| self.fail(e))?;
        }
        for (tenant, use_) in totals {
            sessions.insert(tenant, use_).map_err(|e| self.fail(e))?;
        }
        Ok(())
    }

    /// A redb error as the guest sees it; an I/O error also marks the database broken.
    fn fail(&self, e: impl Into<redb::Error>) -> KeyValueError {
        let e: redb::Error = e.into();
        match &e {
            redb::Error::Io(io) => {
                self.broken.store(true, Ordering::SeqCst);
                if io.kind() == std::io::ErrorKind::StorageFull {
                    KeyValueError::Backend(format!(
                        "the disk holding the key-value store is full ({io}): nothing was written; \
                         once space is freed there, the store is opened again by itself"
                    ))
                } else {
                    KeyValueError::Backend(format!(
                        "{io}: nothing was written; the store is opened again on a later call"
                    ))
                }
            }
            redb::Error::PreviousIo => {
                self.broken.store(true, Ordering::SeqCst);
                KeyValueError::Backend(
                    "an earlier disk error stopped the store: it is opened again on a later call"
                        .to_owned(),
                )
            }
            _ => KeyValueError::Backend(e.to_string()),
        }
    }

    fn row(
        &self,
        stores: &impl redb::ReadableTable<StoreKey, StoreRow>,
        id: &StoreId,
    ) -> Result<Option<Row>, KeyValueError> {
        Ok(stores
            .get((id.tenant.as_str(), id.session_str(), id.tool.as_str()))
            .map_err(|e| self.fail(e))?
            .map(|v| Row::of(v.value())))
    }

    /// Writes `new` at `key` in one transaction with its quota checks; `new` sees the
    /// old value and returns the new one (`None`: write nothing) and what to hand back.
    fn update<T>(
        &self,
        ns: &Namespace,
        key: &str,
        quota: &KeyValueQuota,
        new: impl FnOnce(Option<&[u8]>) -> Result<(Option<Vec<u8>>, T), KeyValueError>,
    ) -> Result<T, KeyValueError> {
        let id = ns.store().id();
        let txn = self.db.begin_write().map_err(|e| self.fail(e))?;
        let out = {
            let mut data = txn.open_table(DATA).map_err(|e| self.fail(e))?;
            let old = data
                .get((ns.as_str(), key))
                .map_err(|e| self.fail(e))?
                .map(|v| v.value().to_vec());
            let (value, out) = new(old.as_deref())?;
            let Some(value) = value else {
                // Nothing to write: the transaction is dropped, aborted.
                return Ok(out);
            };
            let value_len = bytes_of(value.len());
            if value_len > quota.max_value_bytes {
                return Err(KeyValueError::value_too_large(value_len, quota));
            }
            let mut stores = txn.open_table(STORES).map_err(|e| self.fail(e))?;
            let row = self.row(&stores, id)?.unwrap_or_default();
            let added = u64::from(old.is_none());
            let before = old.as_ref().map_or(0, |o| bytes_of(key.len() + o.len()));
            let after = bytes_of(key.len() + value.len());
            let keys = row.keys + added;
            let bytes = row.bytes.saturating_sub(before).saturating_add(after);
            // Only growth is refused: a store over a quota the operator lowered may
            // still rewrite what it holds, the same size or smaller.
            if added > 0 && keys > quota.max_keys {
                return Err(KeyValueError::too_many_keys(quota));
            }
            if after > before && bytes > quota.max_total_bytes {
                return Err(KeyValueError::over_total(bytes, quota));
            }
            if id.is_session() || row.session {
                self.count_in_sessions(&txn, &id.tenant, row, (keys, bytes), id.is_session())?;
            }
            data.insert((ns.as_str(), key), value.as_slice())
                .map_err(|e| self.fail(e))?;
            let row = Row {
                keys,
                bytes,
                written_ms: now_ms(),
                session: id.is_session(),
            };
            stores
                .insert(
                    (id.tenant.as_str(), id.session_str(), id.tool.as_str()),
                    row.value(),
                )
                .map_err(|e| self.fail(e))?;
            out
        };
        txn.commit().map_err(|e| self.fail(e))?;
        Ok(out)
    }

    /// Moves a store's use in `tenant`'s session total from `row` (as counted so far:
    /// in the total if it was a session store) to `now` (keys, bytes; in the total if
    /// `session`), refusing growth over the ceiling. A row counted under the other
    /// scope — a layout-1 file's session store without an id was counted as a tenant
    /// store, a tool's scope changed — has its whole use moved at its next write.
    fn count_in_sessions(
        &self,
        txn: &redb::WriteTransaction,
        tenant: &str,
        row: Row,
        now: (u64, u64),
        session: bool,
    ) -> Result<(), KeyValueError> {
        let mut sessions = txn.open_table(SESSIONS).map_err(|e| self.fail(e))?;
        let (tk0, tb0) = sessions
            .get(tenant)
            .map_err(|e| self.fail(e))?
            .map_or((0, 0), |v| v.value());
        let (mut tk, mut tb) = if row.session {
            (tk0.saturating_sub(row.keys), tb0.saturating_sub(row.bytes))
        } else {
            (tk0, tb0)
        };
        if session {
            tk = tk.saturating_add(now.0);
            tb = tb.saturating_add(now.1);
        }
        // Only growth is refused: a session may still rewrite what it holds after the
        // operator lowered the ceiling.
        if tk > tk0 && tk > self.settings.sessions_max_keys {
            return Err(KeyValueError::sessions_too_many_keys(
                self.settings.sessions_max_keys,
            ));
        }
        if tb > tb0 && tb > self.settings.sessions_max_total_bytes {
            return Err(KeyValueError::sessions_over_total(
                tb,
                self.settings.sessions_max_total_bytes,
            ));
        }
        if tk == 0 && tb == 0 {
            sessions.remove(tenant).map_err(|e| self.fail(e))?;
        } else {
            sessions
                .insert(tenant, (tk, tb))
                .map_err(|e| self.fail(e))?;
        }
        Ok(())
    }

    /// Deletes store `id` (its data, its row, its share of its tenant's session use)
    /// in `txn`: whether it existed.
    fn drop_store(
        &self,
        txn: &redb::WriteTransaction,
        id: &StoreId,
    ) -> Result<bool, KeyValueError> {
        let mut stores = txn.open_table(STORES).map_err(|e| self.fail(e))?;
        let Some(row) = stores
            .remove((id.tenant.as_str(), id.session_str(), id.tool.as_str()))
            .map_err(|e| self.fail(e))?
            .map(|v| Row::of(v.value()))
        else {
            return Ok(false);
        };
        let prefix = id.prefix();
        let end = prefix_end(&prefix);
        let mut data = txn.open_table(DATA).map_err(|e| self.fail(e))?;
        data.retain_in((prefix.as_str(), "")..(end.as_str(), ""), |_, _| false)
            .map_err(|e| self.fail(e))?;
        if row.session {
            self.take_from_sessions(txn, &id.tenant, row.keys, row.bytes)?;
        }
        Ok(true)
    }

    /// Takes `keys` and `bytes` from `tenant`'s session use (the row goes at zero).
    fn take_from_sessions(
        &self,
        txn: &redb::WriteTransaction,
        tenant: &str,
        keys: u64,
        bytes: u64,
    ) -> Result<(), KeyValueError> {
        let mut sessions = txn.open_table(SESSIONS).map_err(|e| self.fail(e))?;
        let (tk, tb) = sessions
            .get(tenant)
            .map_err(|e| self.fail(e))?
            .map_or((0, 0), |v| v.value());
        let (tk, tb) = (tk.saturating_sub(keys), tb.saturating_sub(bytes));
        if tk == 0 {
            sessions.remove(tenant).map_err(|e| self.fail(e))?;
        } else {
            sessions
                .insert(tenant, (tk, tb))
                .map_err(|e| self.fail(e))?;
        }
        Ok(())
    }

    /// Deletes the session stores not written for the settings' expiry as of `now`
    /// (ms since the epoch): how many. Each is checked again in the transaction that
    /// deletes it, so one written meanwhile stays.
    ///
    /// # Errors
    /// [`KeyValueError::Backend`].
    pub(crate) fn sweep_at(&self, now: u64) -> Result<usize, KeyValueError> {
        self.sweep_in_steps(now).map(|(deleted, _)| deleted)
    }

    /// [`Embedded::sweep_at`], and the entries each of its write transactions deleted.
    /// A transaction holds redb's one writer, and every call's write waits for it
    /// where no deadline reaches: each deletes at most [`SWEEP_BATCH`] stores and
    /// [`SWEEP_ENTRIES`] entries (a store is never split: one holds at most its quota).
    fn sweep_in_steps(&self, now: u64) -> Result<(usize, Vec<u64>), KeyValueError> {
        let expiry = self.settings.expiry_millis();
        let expired = |row: &Row| row.session && row.written_ms.saturating_add(expiry) < now;
        let candidates: Vec<(StoreId, u64)> = {
            let txn = self.db.begin_read().map_err(|e| self.fail(e))?;
            let stores = txn.open_table(STORES).map_err(|e| self.fail(e))?;
            let mut out = Vec::new();
            for entry in stores.iter().map_err(|e| self.fail(e))? {
                let (k, v) = entry.map_err(|e| self.fail(e))?;
                let row = Row::of(v.value());
                if expired(&row) {
                    let (tenant, session, tool) = k.value();
                    out.push((StoreId::session(tool, tenant, session), row.keys));
                }
            }
            out
        };
        let mut deleted = 0;
        let mut steps = Vec::new();
        let mut rest = candidates.as_slice();
        while !rest.is_empty() {
            // The first store always fits; then as many as stay within both limits.
            let mut take = 0;
            let mut entries: u64 = 0;
            for (_, keys) in rest.iter().take(SWEEP_BATCH) {
                if take > 0 && entries.saturating_add(*keys) > SWEEP_ENTRIES {
                    break;
                }
                entries = entries.saturating_add(*keys);
                take += 1;
            }
            let (batch, later) = rest.split_at(take);
            rest = later;
            let txn = self.db.begin_write().map_err(|e| self.fail(e))?;
            let mut step = 0;
            for (id, _) in batch {
                let still = {
                    let stores = txn.open_table(STORES).map_err(|e| self.fail(e))?;
                    self.row(&stores, id)?.filter(|r| expired(r))
                };
                if let Some(row) = still
                    && self.drop_store(&txn, id)?
                {
                    deleted += 1;
                    step += row.keys;
                }
            }
            txn.commit().map_err(|e| self.fail(e))?;
            steps.push(step);
        }
        Ok((deleted, steps))
    }

    /// Deletes the session stores not written for the settings' expiry: how many.
    /// Each is checked again in the transaction that deletes it, so one written
    /// meanwhile stays.
    ///
    /// # Errors
    /// [`KeyValueError::Backend`].
    pub fn sweep(&self) -> Result<usize, KeyValueError> {
        self.sweep_at(now_ms())
    }

    /// [`KeyValueBackend::list`], and how many entries it read to answer. The cursor
    /// is the guest's: the range read is its own bucket's and no more (skipping ran
    /// past the bucket's end into every tenant's data after it, with the whole table
    /// read inside one host call for a cursor of `u64::MAX`), so a listing costs at
    /// most the bucket's keys, which its quota bounds.
    fn list_counted(
        &self,
        ns: &Namespace,
        from: u64,
    ) -> Result<(Vec<String>, Option<u64>, usize), KeyValueError> {
        let txn = self.db.begin_read().map_err(|e| self.fail(e))?;
        let data = txn.open_table(DATA).map_err(|e| self.fail(e))?;
        let skip = usize::try_from(from).unwrap_or(usize::MAX);
        let end = prefix_end(ns.as_str());
        let mut keys = Vec::new();
        let mut more = false;
        let mut read = 0;
        for entry in data
            .range((ns.as_str(), "")..(end.as_str(), ""))
            .map_err(|e| self.fail(e))?
        {
            read += 1;
            let (k, _) = entry.map_err(|e| self.fail(e))?;
            let (entry_ns, key) = k.value();
            if entry_ns != ns.as_str() {
                // No namespace extends another (each is four length-prefixed parts),
                // so none is inside the range: this is only a guard.
                break;
            }
            if read <= skip {
                continue;
            }
            if keys.len() == PAGE {
                more = true;
                break;
            }
            keys.push(key.to_owned());
        }
        let next = more.then(|| from + u64::try_from(PAGE).unwrap_or(u64::MAX));
        Ok((keys, next, read))
    }

    fn info(&self, id: StoreId, row: Row, now: u64) -> StoreInfo {
        let expires_in = row.session.then(|| {
            let at = row.written_ms.saturating_add(self.settings.expiry_millis());
            Duration::from_millis(at.saturating_sub(now))
        });
        StoreInfo {
            id,
            keys: row.keys,
            bytes: row.bytes,
            expires_in,
        }
    }
}

/// The file at `path`, opened for reading and writing, created mode 0600 (its
/// directory 0700) when missing; an existing one open to others is made 0600.
fn private_file(path: &Path) -> Result<std::fs::File, KeyValueError> {
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
    let failed = |what: &str, e: std::io::Error| {
        KeyValueError::Backend(format!("{what} {}: {e}", path.display()))
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| failed("creating the directory of", e))?;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
        .map_err(|e| failed("opening", e))?;
    let mode = file
        .metadata()
        .map_err(|e| failed("reading", e))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        // Tenants' data: the host's alone, as every other host file.
        file.set_permissions(std::fs::Permissions::from_mode(mode & 0o700))
            .map_err(|e| failed("making private", e))?;
    }
    Ok(file)
}

impl KeyValueBackend for Embedded {
    fn get(&self, ns: &Namespace, key: &str) -> Result<Option<Vec<u8>>, KeyValueError> {
        let txn = self.db.begin_read().map_err(|e| self.fail(e))?;
        let data = txn.open_table(DATA).map_err(|e| self.fail(e))?;
        Ok(data
            .get((ns.as_str(), key))
            .map_err(|e| self.fail(e))?
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
        let id = ns.store().id();
        let txn = self.db.begin_write().map_err(|e| self.fail(e))?;
        {
            let mut data = txn.open_table(DATA).map_err(|e| self.fail(e))?;
            let removed = data
                .remove((ns.as_str(), key))
                .map_err(|e| self.fail(e))?
                .map(|v| v.value().len());
            let Some(len) = removed else {
                return Ok(());
            };
            let entry = bytes_of(key.len() + len);
            let mut stores = txn.open_table(STORES).map_err(|e| self.fail(e))?;
            let row = self.row(&stores, id)?.unwrap_or_default();
            let k = (id.tenant.as_str(), id.session_str(), id.tool.as_str());
            if row.keys <= 1 {
                // Its last key: the store is gone.
                stores.remove(k).map_err(|e| self.fail(e))?;
            } else {
                // A delete does not keep a session store alive: writes do (as Redis's
                // expiry, set by the write script alone).
                let row = Row {
                    keys: row.keys - 1,
                    bytes: row.bytes.saturating_sub(entry),
                    ..row
                };
                stores.insert(k, row.value()).map_err(|e| self.fail(e))?;
            }
            if row.session {
                // As the row was counted (its scope, not this call's: see
                // `count_in_sessions`).
                self.take_from_sessions(&txn, &id.tenant, 1, entry)?;
            }
        }
        txn.commit().map_err(|e| self.fail(e))
    }

    fn list(&self, ns: &Namespace, from: u64) -> Result<(Vec<String>, Option<u64>), KeyValueError> {
        self.list_counted(ns, from)
            .map(|(keys, next, _)| (keys, next))
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

    fn stores(&self, filter: &StoreFilter) -> Result<Vec<StoreInfo>, KeyValueError> {
        let txn = self.db.begin_read().map_err(|e| self.fail(e))?;
        let stores = txn.open_table(STORES).map_err(|e| self.fail(e))?;
        let now = now_ms();
        let from = filter.tenant.as_deref().unwrap_or_default();
        let mut out = Vec::new();
        for entry in stores.range((from, "", "")..).map_err(|e| self.fail(e))? {
            let (k, v) = entry.map_err(|e| self.fail(e))?;
            let (tenant, session, tool) = k.value();
            if filter.tenant.as_deref().is_some_and(|t| t != tenant) {
                break;
            }
            let row = Row::of(v.value());
            let id = StoreId {
                tool: tool.to_owned(),
                tenant: tenant.to_owned(),
                session: row.session.then(|| session.to_owned()),
            };
            if filter.matches(&id) {
                out.push(self.info(id, row, now));
            }
        }
        out.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(out)
    }

    fn entries(&self, store: &StoreId) -> Result<Vec<EntryInfo>, KeyValueError> {
        let txn = self.db.begin_read().map_err(|e| self.fail(e))?;
        let data = txn.open_table(DATA).map_err(|e| self.fail(e))?;
        let prefix = store.prefix();
        let end = prefix_end(&prefix);
        let mut out = Vec::new();
        for entry in data
            .range((prefix.as_str(), "")..(end.as_str(), ""))
            .map_err(|e| self.fail(e))?
        {
            let (k, v) = entry.map_err(|e| self.fail(e))?;
            let (ns, key) = k.value();
            let bucket = ns
                .get(prefix.len()..)
                .and_then(parse_bucket)
                .map_or("", |(b, _)| b);
            out.push(EntryInfo {
                bucket: bucket.to_owned(),
                key: key.to_owned(),
                len: bytes_of(v.value().len()),
            });
        }
        Ok(out)
    }

    fn delete_store(&self, id: &StoreId) -> Result<bool, KeyValueError> {
        let txn = self.db.begin_write().map_err(|e| self.fail(e))?;
        let existed = self.drop_store(&txn, id)?;
        txn.commit().map_err(|e| self.fail(e))?;
        Ok(existed)
    }

    fn delete_stores(&self, filter: &StoreFilter) -> Result<Vec<StoreInfo>, KeyValueError> {
        let meant = self.stores(filter)?;
        let txn = self.db.begin_write().map_err(|e| self.fail(e))?;
        let mut deleted = Vec::with_capacity(meant.len());
        for info in meant {
            if self.drop_store(&txn, &info.id)? {
                deleted.push(info);
            }
        }
        txn.commit().map_err(|e| self.fail(e))?;
        Ok(deleted)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests;
