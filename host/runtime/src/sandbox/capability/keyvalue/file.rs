//! The embedded store in a file, as a host uses it: opened on first use (a host that
//! never calls a tool with a store never opens it, so two `hermetic` processes on one
//! machine collide only when both use it — and then the second is told why), opened
//! again after an I/O error (a full disk: redb refuses everything after one until
//! reopened, so without this the store would stay broken until a restart), and swept
//! of idle session stores by a thread of its own while it is open. Opening happens
//! outside the state's lock (redb first checks a file a crash left, reading all of
//! it): calls meanwhile wait for it a bounded time, then are told so.

use super::backend::{
    EntryInfo, KeyValueBackend, KeyValueError, Namespace, StoreFilter, StoreId, StoreInfo,
};
use super::embedded::Embedded;
use super::settings::KeyValueSettings;
use crate::policy::keyvalue::KeyValueQuota;
use std::path::PathBuf;
use std::sync::{Arc, Weak, mpsc};
use std::time::{Duration, Instant};

/// How often a broken or unopenable store is tried again, at most: every call in
/// between is answered at once with the last error, so a full disk costs calls no
/// reopening storm.
pub const REOPEN_EVERY: Duration = Duration::from_secs(1);

/// How long a call waits for another's opening of the file, at most, before it is
/// told the store is being opened: an opening takes milliseconds, but redb first
/// checks a file a crash left, reading all of it, and the wait is where no call's
/// deadline reaches.
pub const OPENING_WAIT: Duration = Duration::from_secs(2);

/// The embedded store at a path: see the module documentation.
pub struct EmbeddedFile {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    settings: KeyValueSettings,
    state: parking_lot::Mutex<State>,
    /// Signalled when an opening ends ([`State::opening`] cleared).
    opened: parking_lot::Condvar,
}

#[derive(Default)]
struct State {
    open: Option<Arc<Embedded>>,
    /// When opening was last tried, and what it said if it failed.
    tried: Option<(Instant, Option<KeyValueError>)>,
    /// Dropped with the store: the sweeper sees its channel close and ends.
    sweeper: Option<mpsc::Sender<()>>,
    /// A call is opening the file, outside this lock (redb checks a file a crash left
    /// before it opens, which reads all of it): other calls wait for it at most
    /// [`OPENING_WAIT`], not for the lock through the whole opening.
    opening: bool,
    /// The broken store let go when it was last opened again: while calls of this
    /// process still hold it, the file is in use by this process, not another.
    released: Weak<Embedded>,
}

/// Clears [`State::opening`] if opening ends without doing so (a panic).
struct Opening<'a> {
    inner: &'a Inner,
    armed: bool,
}

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.inner.state.lock().opening = false;
            self.inner.opened.notify_all();
        }
    }
}

impl std::fmt::Debug for EmbeddedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedFile")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

impl EmbeddedFile {
    /// The store at `path`, not opened yet, with the default [`KeyValueSettings`].
    pub fn new(path: PathBuf) -> Self {
        Self::with_settings(path, KeyValueSettings::default())
    }

    /// The store at `path`, not opened yet, with `settings`.
    pub fn with_settings(path: PathBuf, settings: KeyValueSettings) -> Self {
        Self {
            inner: Arc::new(Inner {
                path,
                settings,
                state: parking_lot::Mutex::new(State::default()),
                opened: parking_lot::Condvar::new(),
            }),
        }
    }

    /// The open database: opened now if it is not, or if an I/O error broke it (at
    /// most once per [`REOPEN_EVERY`]). The file is opened outside the state's lock;
    /// calls meanwhile wait for it at most [`OPENING_WAIT`].
    fn store(&self) -> Result<Arc<Embedded>, KeyValueError> {
        {
            let mut state = self.inner.state.lock();
            let give_up = Instant::now() + OPENING_WAIT;
            while state.opening {
                if self
                    .inner
                    .opened
                    .wait_until(&mut state, give_up)
                    .timed_out()
                    && state.opening
                {
                    return Err(KeyValueError::Backend(
                        "the key-value store is being opened (a file a crash left is checked first, which can take a while): try again in a moment"
                            .to_owned(),
                    ));
                }
            }
            if let Some(store) = &state.open {
                if !store.is_broken() {
                    return Ok(Arc::clone(store));
                }
                if state
                    .tried
                    .as_ref()
                    .is_some_and(|(at, _)| at.elapsed() < REOPEN_EVERY)
                {
                    return Err(KeyValueError::Backend(
                        "a disk error stopped the store a moment ago: it is opened again within a second"
                            .to_owned(),
                    ));
                }
                // Calls still holding the broken one fail at once and let it go; until
                // they have, opening finds the file in use and is tried again later.
                state.released = state
                    .open
                    .take()
                    .as_ref()
                    .map_or_else(Weak::new, Arc::downgrade);
                state.sweeper = None;
                tracing::warn!(path = %self.inner.path.display(), "opening the key-value store again after a disk error");
            } else if let Some((at, Some(error))) = &state.tried
                && at.elapsed() < REOPEN_EVERY
            {
                return Err(error.clone());
            }
            state.opening = true;
        }
        let mut guard = Opening {
            inner: &self.inner,
            armed: true,
        };
        let opened = Embedded::open_with(&self.inner.path, self.inner.settings);
        let mut state = self.inner.state.lock();
        state.opening = false;
        guard.armed = false;
        self.inner.opened.notify_all();
        let opened = opened.map_err(|e| match e {
            KeyValueError::InUse(path) if state.released.strong_count() > 0 => KeyValueError::Backend(format!(
                "the key-value store {path} is still held by calls of this host that began before a disk error: it is opened again once they end (tried again within a second)"
            )),
            KeyValueError::InUse(path) => KeyValueError::Backend(format!(
                "the key-value store {path} is open in another process: give each hermetic host its own file with [keyvalue] file (or stop the other one); tried again within a second"
            )),
            e => e,
        });
        match opened {
            Ok(store) => {
                let store = Arc::new(store);
                state.open = Some(Arc::clone(&store));
                state.tried = Some((Instant::now(), None));
                state.sweeper = Some(self.spawn_sweeper());
                Ok(store)
            }
            Err(e) => {
                state.tried = Some((Instant::now(), Some(e.clone())));
                Err(e)
            }
        }
    }

    /// A thread that sweeps idle session stores every [`KeyValueSettings::sweep_every`]
    /// (at once, too: a host started after a long stop finds them) until the returned
    /// sender is dropped.
    fn spawn_sweeper(&self) -> mpsc::Sender<()> {
        let (stop, stopped) = mpsc::channel::<()>();
        let inner: Weak<Inner> = Arc::downgrade(&self.inner);
        let every = self.inner.settings.sweep_every();
        let spawned = std::thread::Builder::new()
            .name("hermetic-kv-sweep".to_owned())
            .spawn(move || {
                loop {
                    let Some(inner) = inner.upgrade() else { return };
                    inner.sweep();
                    drop(inner);
                    match stopped.recv_timeout(every) {
                        Err(mpsc::RecvTimeoutError::Timeout) => {}
                        _ => return,
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("idle session stores are not swept: no thread for it: {e}");
        }
        stop
    }

    /// Deletes the idle session stores now (what the sweeper does): how many. Opens
    /// the store if needed.
    ///
    /// # Errors
    /// [`KeyValueError::Backend`].
    pub fn sweep(&self) -> Result<usize, KeyValueError> {
        self.store()?.sweep()
    }
}

impl Inner {
    /// One sweep of the open store (a store not open is not opened for it).
    fn sweep(&self) {
        let open = self.state.lock().open.clone();
        let Some(store) = open.filter(|s| !s.is_broken()) else {
            return;
        };
        match store.sweep() {
            Ok(0) => {}
            Ok(n) => tracing::debug!(stores = n, "idle session stores deleted"),
            Err(e) => tracing::warn!("sweeping idle session stores: {e}"),
        }
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

    fn stores(&self, filter: &StoreFilter) -> Result<Vec<StoreInfo>, KeyValueError> {
        self.store()?.stores(filter)
    }

    fn entries(&self, store: &StoreId) -> Result<Vec<EntryInfo>, KeyValueError> {
        self.store()?.entries(store)
    }

    fn delete_stores(&self, filter: &StoreFilter) -> Result<Vec<StoreInfo>, KeyValueError> {
        self.store()?.delete_stores(filter)
    }

    fn delete_store(&self, id: &StoreId) -> Result<bool, KeyValueError> {
        self.store()?.delete_store(id)
    }

    fn end_session(&self, tenant: &str, session: &str) -> Result<usize, KeyValueError> {
        if session.is_empty() {
            return Ok(0);
        }
        // A host whose tools never used the store has nothing to end: it is not
        // opened for this (it may be another process's).
        if self.inner.state.lock().open.is_none() {
            return Ok(0);
        }
        self.store()?.end_session(tenant, session)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::super::backend::Store;
    use super::*;

    /// After a disk error, the file is opened again; while calls of this host still
    /// hold the broken store, the error says so (it said another process held the
    /// file, and to give each host its own), and once they let go the store works.
    #[test]
    fn a_broken_store_still_held_here_is_not_called_another_process_s() {
        let dir = tempfile::TempDir::new().unwrap();
        let kv = EmbeddedFile::new(dir.path().join("kv.redb"));
        let quota = KeyValueQuota::default();
        let ns = Namespace::new(Arc::new(Store::new(StoreId::tenant("memory", "acme"))), "");
        kv.set(&ns, "k", b"x", &quota).unwrap();
        let held = kv.store().unwrap();
        held.mark_broken();
        // Opened again at most once a second: until then, "a moment ago".
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let e = kv.get(&ns, "k").unwrap_err().to_string();
            assert!(!e.contains("another process"), "{e}");
            if e.contains("still held by calls of this host") {
                break;
            }
            assert!(Instant::now() < deadline, "never opened again: {e}");
            std::thread::sleep(Duration::from_millis(100));
        }
        drop(held);
        loop {
            match kv.get(&ns, "k") {
                Ok(v) => break assert_eq!(v.unwrap(), b"x"),
                Err(e) => assert!(Instant::now() < deadline, "never opened again: {e}"),
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// While one call opens the file, another waits for it a bounded time, then is
    /// told so (it waited for the state's lock through the whole opening).
    #[test]
    fn calls_while_the_file_is_being_opened_wait_a_bounded_time() {
        let dir = tempfile::TempDir::new().unwrap();
        let kv = EmbeddedFile::new(dir.path().join("kv.redb"));
        let ns = Namespace::new(Arc::new(Store::new(StoreId::tenant("memory", "acme"))), "");
        kv.inner.state.lock().opening = true;
        let e = kv.get(&ns, "k").unwrap_err().to_string();
        assert!(e.contains("is being opened"), "{e}");
        kv.inner.state.lock().opening = false;
        assert_eq!(kv.get(&ns, "k").unwrap(), None);
    }

    #[test]
    fn the_sweeper_deletes_idle_session_stores_while_the_host_runs() {
        let dir = tempfile::TempDir::new().unwrap();
        let settings = KeyValueSettings {
            session_expiry: Duration::from_millis(200),
            ..KeyValueSettings::default()
        };
        let kv = EmbeddedFile::with_settings(dir.path().join("kv.redb"), settings);
        let quota = KeyValueQuota::default();
        let session = StoreId::session("todo", "acme", "s1");
        let ns = Namespace::new(Arc::new(Store::new(session.clone())), "");
        let tenant = Namespace::new(Arc::new(Store::new(StoreId::tenant("memory", "acme"))), "");
        kv.set(&ns, "k", b"x", &quota).unwrap();
        kv.set(&tenant, "k", b"x", &quota).unwrap();
        // No call touches the store from here: the sweeper alone deletes it.
        let deadline = Instant::now() + Duration::from_secs(30);
        while !kv.entries(&session).unwrap().is_empty() {
            assert!(
                Instant::now() < deadline,
                "the idle session store was never swept"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(kv.get(&tenant, "k").unwrap().unwrap(), b"x");
    }
}
