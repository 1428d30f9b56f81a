//! Admission after authentication: the front's limits from the policy's `[server]`
//! keys, and what one tenant may ask of the server at once — its tools/call rate
//! (429), its new sessions (429), and its requests in flight (503). Every refusal
//! says when to retry (`Retry-After`) and is an HTTP answer: the request was read, so
//! it is never answered with a reset.
//!
//! Work is admitted per tenant, not per address: behind a reverse proxy every tenant
//! shares one address, and a cap per address would let one tenant's flood refuse the
//! others. Calls admitted here still take their tenant's and their tool's
//! `max_concurrent` slots in the runtime, and share the host's sandboxes and CPU by
//! fair share between tenants (`hermetic::slots`).

use super::reply::{service_unavailable, too_many_requests};
use super::sessions::{Opening, Refused};
use super::{
    Body, DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS_PER_IP,
    DEFAULT_MAX_REQUESTS_PER_TENANT, DEFAULT_MAX_SESSIONS_PER_TENANT, DEFAULT_SESSION_IDLE_TIMEOUT,
    Front,
};
use crate::auth::TenantAccess;
use hyper::Response;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long a request over its tenant's `max_requests_per_tenant` waits for a place
/// before 503: long enough to ride out a burst, short enough that a client backs off
/// (and frees its connection) rather than the server holding requests it cannot serve.
pub(super) const REQUEST_QUEUE_WAIT: Duration = Duration::from_secs(1);

/// The HTTP front's limits, from the policy's `[server]` keys or their defaults.
pub(super) struct Limits {
    pub(super) max_sessions_per_tenant: usize,
    pub(super) session_idle_timeout: Duration,
    pub(super) header_timeout: Duration,
    pub(super) max_connections: usize,
    pub(super) max_connections_per_ip: usize,
    pub(super) max_requests_per_tenant: usize,
}

impl Limits {
    pub(super) fn new(policy: &hermetic_config::ServerPolicy) -> Self {
        let count = |value: Option<u32>, default: u32| {
            usize::try_from(value.unwrap_or(default)).unwrap_or(usize::MAX)
        };
        Self {
            max_sessions_per_tenant: count(
                policy.max_sessions_per_tenant,
                DEFAULT_MAX_SESSIONS_PER_TENANT,
            ),
            session_idle_timeout: policy
                .session_idle_timeout_secs
                .map_or(DEFAULT_SESSION_IDLE_TIMEOUT, Duration::from_secs),
            header_timeout: policy
                .header_timeout_secs
                .map_or(DEFAULT_HEADER_TIMEOUT, Duration::from_secs),
            max_connections: count(policy.max_connections, DEFAULT_MAX_CONNECTIONS),
            max_connections_per_ip: count(
                policy.max_connections_per_ip,
                DEFAULT_MAX_CONNECTIONS_PER_IP,
            ),
            max_requests_per_tenant: count(
                policy.max_requests_per_tenant,
                DEFAULT_MAX_REQUESTS_PER_TENANT,
            ),
        }
    }
}

/// Each tenant's requests in flight (`max_requests_per_tenant`), and those waiting
/// for a place.
pub(super) struct TenantRequests {
    max: usize,
    gates: Mutex<HashMap<Arc<str>, Arc<Gate>>>,
}

struct Gate {
    places: Arc<Semaphore>,
    /// Requests waiting for a place: at most as many as there are places.
    waiting: AtomicUsize,
}

/// A request's place among its tenant's requests in flight; held until its response
/// is sent (or abandoned).
pub(super) type Admitted = OwnedSemaphorePermit;

impl TenantRequests {
    pub(super) fn new(max: usize) -> Self {
        Self {
            max: max.clamp(1, Semaphore::MAX_PERMITS),
            gates: Mutex::new(HashMap::new()),
        }
    }

    fn gate(&self, tenant: &Arc<str>) -> Arc<Gate> {
        let mut gates = self.gates.lock();
        // One entry per tenant that authenticated: the policy's tenants, a bounded set.
        Arc::clone(gates.entry(Arc::clone(tenant)).or_insert_with(|| {
            Arc::new(Gate {
                places: Arc::new(Semaphore::new(self.max)),
                waiting: AtomicUsize::new(0),
            })
        }))
    }

    /// A place for a request of `tenant`: at once if one is free, else after waiting
    /// up to [`REQUEST_QUEUE_WAIT`] behind at most `max` others. `None`: busy.
    pub(super) async fn admit(&self, tenant: &Arc<str>) -> Option<Admitted> {
        let gate = self.gate(tenant);
        if let Ok(place) = Arc::clone(&gate.places).try_acquire_owned() {
            return Some(place);
        }
        if gate.waiting.fetch_add(1, Ordering::Relaxed) >= self.max {
            gate.waiting.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        let place =
            tokio::time::timeout(REQUEST_QUEUE_WAIT, Arc::clone(&gate.places).acquire_owned())
                .await;
        gate.waiting.fetch_sub(1, Ordering::Relaxed);
        place.ok().and_then(Result::ok)
    }
}

impl Front {
    /// A slot for a new session of `tenant`, or the 429 that refuses it (its
    /// `sessions_per_minute` or `max_sessions_per_tenant` is used up).
    pub(super) async fn open_session(
        &self,
        tenant: &TenantAccess,
    ) -> Result<Opening<'_>, Response<Body>> {
        let key = crate::store::rate_key("sessions", &tenant.id);
        match self.shared.take(&key, &tenant.sessions).await {
            Ok(Ok(())) => {}
            Ok(Err(wait)) => {
                return Err(too_many_requests(
                    "Too Many Requests: this tenant's sessions_per_minute is used up\n",
                    Some(wait),
                ));
            }
            Err(e) => return Err(store_unreachable(&e)),
        }
        self.sessions
            .admit(&tenant.id)
            .await
            .map_err(|refused| match refused {
                Refused::Full => too_many_requests(
                    "Too Many Requests: this tenant holds max_sessions_per_tenant live sessions; \
                 end one (DELETE) or let one idle out\n",
                    None,
                ),
                Refused::Store(e) => store_unreachable(&e),
            })
    }

    /// Takes the tenant's rate limit for a tools/call of `tool`; a 429 when over, a
    /// 503 when the shared store that counts it cannot be reached (fail closed).
    pub(super) async fn rate_limit(
        &self,
        tenant: &TenantAccess,
        tool: &str,
        session: Option<&str>,
        client: IpAddr,
    ) -> Option<Response<Body>> {
        let limiter = tenant.limiter.as_ref()?;
        let key = crate::store::rate_key("calls", &tenant.id);
        let wait = match self.shared.take(&key, limiter).await {
            Ok(Ok(())) => return None,
            Ok(Err(wait)) => wait,
            Err(e) => {
                self.refused(
                    tenant,
                    tool,
                    session,
                    client,
                    "store_unavailable",
                    &e.to_string(),
                );
                return Some(store_unreachable(&e));
            }
        };
        let retry = wait.as_secs_f64().ceil().max(1.0);
        self.refused(
            tenant,
            tool,
            session,
            client,
            "rate_limited",
            &format!("over calls_per_minute; retry after {retry} s"),
        );
        Some(too_many_requests(
            "Too Many Requests: this tenant's calls_per_minute is used up\n",
            Some(wait),
        ))
    }

    /// A place among the tenant's requests in flight, or the 503 that refuses it.
    pub(super) async fn admit_request(
        &self,
        tenant: &TenantAccess,
        tool: Option<&str>,
        session: Option<&str>,
        client: IpAddr,
    ) -> Result<Admitted, Response<Body>> {
        if let Some(place) = self.requests.admit(&tenant.id).await {
            return Ok(place);
        }
        self.refused(
            tenant,
            tool.unwrap_or_default(),
            session,
            client,
            "busy",
            "over max_requests_per_tenant; retry after 1 s",
        );
        Err(service_unavailable(
            "Service Unavailable: this tenant has max_requests_per_tenant requests in \
             flight; retry later\n",
            REQUEST_QUEUE_WAIT,
        ))
    }

    /// Logs and audits a request refused at the front.
    fn refused(
        &self,
        tenant: &TenantAccess,
        tool: &str,
        session: Option<&str>,
        client: IpAddr,
        outcome: &str,
        reason: &str,
    ) {
        tracing::info!(tenant = %tenant.id, %client, tool, outcome, "refused a request: {reason}");
        if let Some(metrics) = &self.server.shared.metrics {
            metrics.refused(outcome);
        }
        if let Some(audit) = self.server.audit() {
            let detail = serde_json::json!({ "client": client.to_string() });
            audit.record_or_log(&crate::audit::Event {
                kind: "decision",
                tenant: &tenant.id,
                session: session.unwrap_or_default(),
                tool,
                outcome,
                reason: Some(reason),
                detail: Some(&detail),
                ..Default::default()
            });
        }
    }
}

/// The 503 of a limit whose shared store cannot be reached: refused, not let through
/// uncounted.
fn store_unreachable(e: &crate::store::StoreError) -> Response<Body> {
    service_unavailable(
        &format!(
            "Service Unavailable: {e}; this tenant's rate-limited requests are refused until it is back\n"
        ),
        Duration::from_secs(1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_tenant_s_requests_beyond_its_cap_wait_briefly_then_are_refused_and_others_are_not() {
        let requests = TenantRequests::new(2);
        let (acme, globex): (Arc<str>, Arc<str>) = (Arc::from("acme"), Arc::from("globex"));
        let a1 = requests.admit(&acme).await.unwrap();
        let _a2 = requests.admit(&acme).await.unwrap();
        // A place freed while it waits: admitted.
        let freeing = async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            drop(a1);
        };
        let (third, ()) = tokio::join!(requests.admit(&acme), freeing);
        assert!(third.is_some());
        // None freed: refused after the wait.
        assert!(requests.admit(&acme).await.is_none());
        // Another tenant is not affected.
        assert!(requests.admit(&globex).await.is_some());
    }

    #[tokio::test]
    async fn as_many_waiting_as_there_are_places_and_the_next_is_refused_at_once() {
        let requests = Arc::new(TenantRequests::new(1));
        let acme: Arc<str> = Arc::from("acme");
        let _held = requests.admit(&acme).await.unwrap();
        let (r, t) = (Arc::clone(&requests), Arc::clone(&acme));
        let waiting = tokio::spawn(async move { r.admit(&t).await.is_some() });
        tokio::task::yield_now().await;
        let started = std::time::Instant::now();
        assert!(requests.admit(&acme).await.is_none());
        assert!(started.elapsed() < REQUEST_QUEUE_WAIT, "it waited");
        assert!(!waiting.await.unwrap());
    }
}
