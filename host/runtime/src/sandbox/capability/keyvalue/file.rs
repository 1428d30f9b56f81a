//! The embedded store in a file, as a host uses it: opened on first use (a host that
//! never calls a tool with a store never opens it, so two `hermetic` processes on one
//! machine collide only when both use it — and then the second is told why), opened
//! again after an I/O error (a full disk: redb refuses everything after one until
//! reopened, so without this the store would stay broken until a restart), and swept
//! of idle session stores by a thread of its own while it is open.

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

/// The embedded store at a path: see the module documentation.
pub struct EmbeddedFile {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    settings: KeyValueSettings,
    state: parking_lot::Mutex<State>,
}

#[derive(Default)]
struct State {
    open: Option<Arc<Embedded>>,
    /// When opening was last tried, and what it said if it failed.
    tried: Option<(Instant, Option<KeyValueError>)>,
    /// Dropped with the store: the sweeper sees its channel close and ends.
    sweeper: Option<mpsc::Sender<()>>,
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
            }),
        }
    }

    /// The open database: opened now if it is not, or if an I/O error broke it (at
    /// most once per [`REOPEN_EVERY`]).
    fn store(&self) -> Result<Arc<Embedded>, KeyValueError> {
        let mut state = self.inner.state.lock();
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
            state.open = None;
            state.sweeper = None;
            tracing::warn!(path = %self.inner.path.display(), "opening the key-value store again after a disk error");
        } else if let Some((at, Some(error))) = &state.tried
            && at.elapsed() < REOPEN_EVERY
        {
            return Err(error.clone());
        }
        let opened = Embedded::open_with(&self.inner.path, self.inner.settings).map_err(|e| match e {
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
