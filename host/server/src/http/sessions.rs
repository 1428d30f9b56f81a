//! Legacy MCP sessions behind the front: which tenant created each (no other tenant
//! may use it), how many each tenant holds (none may hold more than its cap), when
//! each was last used, and how each ends.
//!
//! The front, not rmcp, decides when a session has idled out: rmcp's worker counts
//! only the messages it sees, so it ended sessions whose calls the front answers
//! itself ([`super::direct`]) and sessions whose one call ran longer than the idle
//! limit (the call's stream ended unanswered). Here a session is idle when no request
//! named it for `session_idle_timeout_secs` *and* no call of it is running; the
//! reaper ([`SessionOwners::idle`]) closes it then.
//!
//! With a cluster, `max_sessions_per_tenant` counts every node's sessions: each
//! session holds a lease in the shared store ([`LEASE_TTL`], renewed by its node every
//! [`RENEW_EVERY`] while it lives, given back when it ends), so a node that dies
//! without ending its sessions frees their places within a lease.
//!
//! Every end — DELETE, idle, a shutdown, a worker that failed — goes through
//! [`SessionStore::close_session`], which reports it: the front then cancels the
//! session's calls and ends its terminal (background processes killed and reaped, its
//! container removed).

use crate::store::{SharedState, StoreError};
use parking_lot::{Mutex, MutexGuard};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{
    RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc::UnboundedSender;

/// rmcp's in-memory sessions, reporting each session that closes on a channel.
pub(super) struct SessionStore {
    inner: LocalSessionManager,
    /// Ids of closed sessions (a session may be reported twice: a DELETE's close and
    /// its worker's own; the second finds nothing left to end).
    closed: UnboundedSender<SessionId>,
}

impl SessionStore {
    /// Sessions that never idle out by themselves ([`SessionOwners::idle`] closes
    /// them), reporting closes to `closed`.
    pub(super) fn new(closed: UnboundedSender<SessionId>) -> Self {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = None;
        Self { inner, closed }
    }

    /// Whether session `id` is open.
    pub(super) async fn is_live(&self, id: &str) -> bool {
        self.inner.sessions.read().await.contains_key(id)
    }
}

impl SessionManager for SessionStore {
    type Error = <LocalSessionManager as SessionManager>::Error;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    fn create_session(
        &self,
    ) -> impl Future<Output = Result<(SessionId, Self::Transport), Self::Error>> + Send {
        self.inner.create_session()
    }

    fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<ServerJsonRpcMessage, Self::Error>> + Send {
        self.inner.initialize_session(id, message)
    }

    fn has_session(
        &self,
        id: &SessionId,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send {
        self.inner.has_session(id)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let closed = self.inner.close_session(id).await;
        // Reported whatever the close said: the session is gone from the map either
        // way, and what it held must end.
        let _ = self.closed.send(id.clone());
        closed
    }

    fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<
        Output = Result<
            impl futures_core::Stream<Item = ServerSseMessage> + Send + Sync + 'static,
            Self::Error,
        >,
    > + Send {
        self.inner.create_stream(id, message)
    }

    fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.accept_message(id, message)
    }

    fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> impl Future<
        Output = Result<
            impl futures_core::Stream<Item = ServerSseMessage> + Send + Sync + 'static,
            Self::Error,
        >,
    > + Send {
        self.inner.create_standalone_stream(id)
    }

    fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> impl Future<
        Output = Result<
            impl futures_core::Stream<Item = ServerSseMessage> + Send + Sync + 'static,
            Self::Error,
        >,
    > + Send {
        self.inner.resume(id, last_event_id)
    }

    fn restore_session(
        &self,
        id: SessionId,
    ) -> impl Future<Output = Result<RestoreOutcome<Self::Transport>, Self::Error>> + Send {
        self.inner.restore_session(id)
    }
}

/// How long a session's lease in the shared store lasts without renewal.
pub(super) const LEASE_TTL: Duration = Duration::from_secs(60);
/// How often a node renews its sessions' leases: three times per lease, so one or two
/// failed renewals lose nothing.
pub(super) const RENEW_EVERY: Duration = Duration::from_secs(20);

/// Which tenant created each legacy MCP session, so no other tenant can use it, how
/// many each tenant holds, so none can hold more than its cap, and when each was last
/// used.
pub(super) struct SessionOwners {
    state: Mutex<Owners>,
    store: Arc<SessionStore>,
    /// Where sessions hold leases (the embedded store: nowhere, this node counts).
    shared: Arc<dyn SharedState>,
    /// `max_sessions_per_tenant`.
    max_per_tenant: usize,
    /// `session_idle_timeout_secs`.
    idle_after: Duration,
}

#[derive(Default)]
struct Owners {
    owner: HashMap<Box<str>, Arc<str>>,
    /// When a request last named each session (or the reaper last saw a call of it
    /// running).
    touched: HashMap<Box<str>, Instant>,
    by_tenant: HashMap<Arc<str>, TenantSessions>,
    /// Each bound session's lease in the shared store (none with the embedded one).
    leases: HashMap<Box<str>, Lease>,
}

/// A place held in the shared store: the tenant's key and this session's member.
#[derive(Clone)]
struct Lease {
    key: String,
    member: String,
}

/// Why a session could not open.
pub(super) enum Refused {
    /// The tenant holds `max_sessions_per_tenant` live sessions (on any node).
    Full,
    /// The shared store that counts them cannot be reached.
    Store(StoreError),
}

#[derive(Default)]
struct TenantSessions {
    ids: HashSet<Box<str>>,
    /// `initialize` requests admitted and not yet answered: they count against the
    /// cap, so concurrent handshakes cannot overshoot it.
    opening: usize,
}

/// A session slot held for one `initialize` until its response is in (and the
/// session, if any, bound).
pub(super) struct Opening<'a> {
    owners: &'a SessionOwners,
    tenant: Arc<str>,
    /// The place taken in the shared store, until the session is bound to it.
    lease: Option<Lease>,
}

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        if let Some(lease) = self.lease.take() {
            self.owners.release(lease);
        }
        let mut state = self.owners.lock();
        if let Some(t) = state.by_tenant.get_mut(&self.tenant) {
            t.opening = t.opening.saturating_sub(1);
            if t.opening == 0 && t.ids.is_empty() {
                state.by_tenant.remove(&self.tenant);
            }
        }
    }
}

impl SessionOwners {
    pub(super) fn new(
        store: Arc<SessionStore>,
        shared: Arc<dyn SharedState>,
        max_per_tenant: usize,
        idle_after: Duration,
    ) -> Self {
        Self {
            state: Mutex::new(Owners::default()),
            store,
            shared,
            max_per_tenant,
            idle_after,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Owners> {
        self.state.lock()
    }

    /// The tenant that owns session `id`; a request naming it is traffic, so its idle
    /// clock starts again.
    pub(super) fn owner_of_request(&self, id: &str) -> Option<Arc<str>> {
        let mut state = self.lock();
        let owner = state.owner.get(id).cloned()?;
        if let Some(at) = state.touched.get_mut(id) {
            *at = Instant::now();
        }
        Some(owner)
    }

    /// Whether session `id` is open.
    pub(super) async fn is_live(&self, id: &str) -> bool {
        self.store.is_live(id).await
    }

    /// A slot for a new session of `tenant`: this node's, then (with a cluster) a
    /// lease in the shared store, so the cap counts every node's sessions.
    pub(super) async fn admit(&self, tenant: &Arc<str>) -> Result<Opening<'_>, Refused> {
        let mut opening = self.admit_here(tenant).await.ok_or(Refused::Full)?;
        if self.shared.is_embedded() {
            return Ok(opening);
        }
        let lease = Lease {
            key: crate::store::sessions_key(tenant),
            member: lease_member(),
        };
        match self
            .shared
            .lease(&lease.key, &lease.member, self.max_per_tenant, LEASE_TTL)
            .await
        {
            Ok(true) => {
                opening.lease = Some(lease);
                Ok(opening)
            }
            Ok(false) => Err(Refused::Full),
            Err(e) => Err(Refused::Store(e)),
        }
    }

    /// A slot among this node's sessions of `tenant`, or `None` when it holds its cap
    /// of live sessions. At the cap, sessions that closed but were not yet forgotten
    /// (their close is still on its way to the front) are forgotten first, so only
    /// live ones count.
    async fn admit_here(&self, tenant: &Arc<str>) -> Option<Opening<'_>> {
        let opening = || Opening {
            owners: self,
            tenant: tenant.clone(),
            lease: None,
        };
        {
            let mut state = self.lock();
            let t = state.by_tenant.entry(tenant.clone()).or_default();
            if t.ids.len() + t.opening < self.max_per_tenant {
                t.opening += 1;
                return Some(opening());
            }
        }
        let live = self.store.inner.sessions.read().await;
        let mut state = self.lock();
        let Owners {
            owner,
            touched,
            by_tenant,
            leases,
        } = &mut *state;
        let t = by_tenant.entry(tenant.clone()).or_default();
        let mut lapsed = Vec::new();
        t.ids.retain(|id| {
            let keep = live.contains_key(&**id);
            if !keep {
                owner.remove(id);
                touched.remove(id);
                lapsed.extend(leases.remove(id));
            }
            keep
        });
        drop(live);
        for lease in lapsed {
            self.release(lease);
        }
        if t.ids.len() + t.opening < self.max_per_tenant {
            t.opening += 1;
            return Some(opening());
        }
        None
    }

    /// Live legacy sessions on this node (for `/metrics`).
    pub(super) fn live(&self) -> usize {
        self.lock().owner.len()
    }

    /// Records `tenant` as the owner of session `id`, admitted by [`Self::admit`]
    /// with `opening`, whose lease it now holds.
    pub(super) fn bind(&self, id: &str, tenant: Arc<str>, opening: Option<&mut Opening<'_>>) {
        let mut state = self.lock();
        if let Some(lease) = opening.and_then(|o| o.lease.take()) {
            state.leases.insert(Box::from(id), lease);
        }
        state.owner.insert(Box::from(id), tenant.clone());
        state.touched.insert(Box::from(id), Instant::now());
        state
            .by_tenant
            .entry(tenant)
            .or_default()
            .ids
            .insert(Box::from(id));
    }

    /// Forgets session `id`; its tenant, if it was still known.
    pub(super) fn unbind(&self, id: &str) -> Option<Arc<str>> {
        let mut state = self.lock();
        state.touched.remove(id);
        if let Some(lease) = state.leases.remove(id) {
            self.release(lease);
        }
        let tenant = state.owner.remove(id)?;
        if let Some(t) = state.by_tenant.get_mut(&tenant) {
            t.ids.remove(id);
            if t.ids.is_empty() && t.opening == 0 {
                state.by_tenant.remove(&tenant);
            }
        }
        Some(tenant)
    }

    /// Gives a lease back, in the background (a failure only leaves the place taken
    /// until the lease lapses).
    fn release(&self, lease: Lease) {
        let shared = Arc::clone(&self.shared);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = shared.release(&lease.key, &lease.member).await {
                    tracing::debug!("a session's lease stays until it lapses: {e}");
                }
            });
        }
    }

    /// Renews the leases of this node's live sessions (every [`RENEW_EVERY`]).
    pub(super) async fn renew(&self) {
        let mut by_key: HashMap<String, Vec<String>> = HashMap::new();
        for lease in self.lock().leases.values() {
            by_key
                .entry(lease.key.clone())
                .or_default()
                .push(lease.member.clone());
        }
        for (key, members) in by_key {
            if let Err(e) = self.shared.renew(&key, &members, LEASE_TTL).await {
                tracing::warn!("could not renew {} session leases: {e}", members.len());
            }
        }
    }

    /// How often [`Self::idle`] should look: a quarter of the idle limit (so a session
    /// ends at most a quarter late), between 100 ms and 5 s.
    pub(super) fn reap_every(&self) -> Duration {
        (self.idle_after / 4).clamp(Duration::from_millis(100), Duration::from_secs(5))
    }

    /// The sessions idle for the limit with no call running (`running` says which
    /// sessions have calls in flight): to be closed. A session with a call running is
    /// in use however long the call takes, and its clock restarts from the last time
    /// it was seen running.
    pub(super) fn idle(&self, running: impl Fn(&str) -> bool) -> Vec<SessionId> {
        let now = Instant::now();
        let mut state = self.lock();
        let mut idle = Vec::new();
        for (id, at) in &mut state.touched {
            if now.duration_since(*at) < self.idle_after {
                continue;
            }
            if running(id) {
                *at = now;
            } else {
                idle.push(SessionId::from(&**id));
            }
        }
        idle
    }

    /// Closes session `id` (its end is reported like any other).
    pub(super) async fn close(&self, id: &SessionId) {
        if let Err(e) = self.store.close_session(id).await {
            tracing::debug!(session = %id, "closing an idle session: {e}");
        }
    }
}

/// A lease member unique across the cluster: 128 random bits.
fn lease_member() -> String {
    let mut bits = [0u8; 16];
    // Without the OS random source, a clock-and-counter member is still unique
    // enough within one node; another node's would collide only by the same instant.
    if getrandom::fill(&mut bits).is_err() {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        return format!("{}-{at}-{n}", std::process::id());
    }
    crate::formats::hex(&bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owners(
        max: usize,
        idle: Duration,
    ) -> (
        SessionOwners,
        tokio::sync::mpsc::UnboundedReceiver<SessionId>,
    ) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        (
            SessionOwners::new(
                Arc::new(SessionStore::new(tx)),
                Arc::new(crate::store::Embedded),
                max,
                idle,
            ),
            rx,
        )
    }

    #[test]
    fn a_tenant_at_its_session_cap_is_refused_until_its_closed_sessions_are_forgotten() {
        let (owners, _closed) = owners(2, Duration::from_secs(300));
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (acme, other): (Arc<str>, Arc<str>) = (Arc::from("acme"), Arc::from("other"));
        rt.block_on(async {
            // Two handshakes in flight hold both places.
            let first = owners.admit(&acme).await;
            let second = owners.admit(&acme).await;
            assert!(first.is_ok() && second.is_ok());
            assert!(owners.admit(&acme).await.is_err());
            // Another tenant is not affected.
            assert!(owners.admit(&other).await.is_ok());
            owners.bind("a1", acme.clone(), None);
            owners.bind("a2", acme.clone(), None);
            drop((first, second));
            // Neither is live in the store (closed, the close not yet seen): forgotten
            // at the cap, then admitted.
            assert!(owners.admit(&acme).await.is_ok());
            assert!(owners.owner_of_request("a1").is_none());
        });
    }

    #[test]
    fn a_session_is_idle_only_without_requests_and_without_a_running_call() {
        let (owners, _closed) = owners(10, Duration::from_millis(50));
        let acme: Arc<str> = Arc::from("acme");
        owners.bind("quiet", acme.clone(), None);
        owners.bind("calling", acme.clone(), None);
        owners.bind("asked", acme.clone(), None);
        std::thread::sleep(Duration::from_millis(80));
        // A request names `asked`: its clock starts again.
        assert_eq!(owners.owner_of_request("asked").as_deref(), Some("acme"));
        let idle = owners.idle(|id| id == "calling");
        assert_eq!(idle, vec![SessionId::from("quiet")]);
        // `calling` was seen running just now: not idle until the limit passes again.
        assert!(owners.idle(|_| false).iter().all(|id| &**id == "quiet"));
        assert_eq!(owners.unbind("quiet").as_deref(), Some("acme"));
        assert_eq!(owners.unbind("quiet"), None);
    }

    #[test]
    fn the_reaper_looks_four_times_per_idle_limit_within_bounds() {
        assert_eq!(
            owners(1, Duration::from_secs(300)).0.reap_every(),
            Duration::from_secs(5)
        );
        assert_eq!(
            owners(1, Duration::from_secs(1)).0.reap_every(),
            Duration::from_millis(250)
        );
        assert_eq!(
            owners(1, Duration::from_millis(10)).0.reap_every(),
            Duration::from_millis(100)
        );
    }
}
