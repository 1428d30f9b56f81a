//! MCP streamable HTTP: rmcp's service at `/mcp` on a plain HTTP/1.1 listener, behind
//! a front that decides who may talk to it, and the operator's approvals endpoint.
//!
//! Both protocol eras are served: clients that begin with `initialize` get a session
//! (`Mcp-Session-Id`, list changes on the standalone GET stream); 2026-07-28 clients
//! are served per request and subscribe to changes with `subscriptions/listen`.
//!
//! Every request, in this order:
//! 1. **`Host` and `Origin`** must be on the [`AllowList`] (loopback names for the
//!    bound port, plus the operator's `allowed_hosts` / `allowed_origins`): otherwise
//!    403. This stops DNS-rebinding pages from reaching a local server.
//! 2. **`/mcp`: the bearer token** names the tenant (`Authorization: Bearer …`,
//!    compared as SHA-256 digests in constant time). Missing or unknown → 401 with
//!    `WWW-Authenticate: Bearer`. The tenant comes only from the token. When the
//!    policy defines no tokens every request is [`super::ServeOptions::tenant`], and
//!    [`serve`] refuses to listen on anything but loopback.
//! 3. **Sessions are the tenant's own**: an `Mcp-Session-Id` another tenant created
//!    (or that does not exist) → 404, as for an unknown session.
//! 4. **Rate limit**: a tools/call over the tenant's `calls_per_minute` → 429 with
//!    `Retry-After` (seconds).
//! 5. **Sessions are bounded**: an `initialize` over the tenant's `sessions_per_minute`
//!    → 429 with `Retry-After`; one while the tenant holds `max_sessions_per_tenant`
//!    live sessions → 429. Sessions idle for `session_idle_timeout_secs` end.
//! 6. **A body that is not a JSON-RPC message** → 400 with the JSON-RPC error it is
//!    owed (parse error, or invalid params / invalid request with its id).
//!
//! Connections, before any of that: at most `max_connections` in total and
//! `max_connections_per_ip` from one address (beyond: closed at once); a request's
//! headers must arrive within `header_timeout_secs`, which also bounds how long a
//! connection may sit idle between requests, and its body within [`BODY_TIMEOUT`].
//!
//! A call ends at once when its client goes away: when the HTTP response that would
//! carry its result is dropped unfinished (the connection closed), and when its
//! session is deleted.
//!
//! `/approvals` (`GET`: list pending, `POST /approvals/{id}` with
//! `{"answer": "once|session|always|deny"}`) takes an admin token instead; it is off
//! (404) when the policy has none. So is the operator [`console`] (`/console`, and its
//! admin JSON endpoints `/admin/audit` and `/admin/tools`), which answers approvals
//! through `/approvals`.

use super::auth::{AllowList, AuthFailure, TenantAccess};
use super::{McpServer, ServeError, Tenant};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, RequestId};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

/// The path of the operator's approvals endpoint.
pub const APPROVALS_PATH: &str = "/approvals";

/// The default address of `hermetic serve`: loopback only.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8788";

/// How long to wait for cancelled calls to end at shutdown: they stop at the next
/// epoch tick, so this only bounds a wedged host call.
const CALLS_GRACE: Duration = Duration::from_secs(5);

/// How long, after the calls in flight ended at shutdown, their responses may take to
/// reach the clients before the sessions (and their streams) end.
const RESPONSES_GRACE: Duration = Duration::from_secs(5);

/// Pause after a failed `accept` before the next one.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Largest request body read to find a rate-limited tools/call (rmcp's own limit).
const MAX_BODY: usize = 4 * 1024 * 1024;

/// Largest approvals-endpoint body (`{"answer": "session"}`).
const MAX_ANSWER_BODY: usize = 4096;

/// The `Mcp-Session-Id` header.
const SESSION_HEADER: &str = "mcp-session-id";

/// Default of `[server] max_sessions_per_tenant`. A live session costs a worker task,
/// its channels and its handler (~30 KB, the start bench); 256 is far more than one
/// agent fleet's tenant keeps open, and bounds a tenant to about 8 MB of sessions.
pub const DEFAULT_MAX_SESSIONS_PER_TENANT: u32 = 256;

pub use crate::auth::DEFAULT_SESSIONS_PER_MINUTE;

/// Default of `[server] session_idle_timeout_secs`: rmcp's own (5 minutes). A session
/// with no traffic that long is almost surely abandoned, and ending it frees its
/// memory and its terminal's background processes; a client that comes back later
/// gets 404 and starts a new one, as the MCP spec prescribes.
pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// Default of `[server] header_timeout_secs`. Real clients send a request's headers in
/// one packet; 10 s is generous for a slow link and short enough that slow-header
/// (slowloris) clients cannot pin connections. hyper runs this clock whenever it waits
/// for a request's head, so it is also the idle keep-alive timeout.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Default of `[server] max_connections`: each connection is a task and buffers, and
/// the process has a file-descriptor limit; 1024 serves many agents at once.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 1024;

/// Default of `[server] max_connections_per_ip`: a client (or a NAT's worth of them)
/// needs a handful; 64 keeps one address from taking all of [`DEFAULT_MAX_CONNECTIONS`].
pub const DEFAULT_MAX_CONNECTIONS_PER_IP: u32 = 64;

/// How long a request's body may take to arrive once its headers did (4 MiB at a
/// slow 150 KB/s); past it the request gets 408 and the connection ends.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

type Body = BoxBody<Bytes, Infallible>;

pub mod console;
mod direct;
mod json_reply;

/// The rmcp tower service for `server`: one [`super::McpHandler`] per session (or per
/// request for sessionless clients), without the front described in the module docs
/// (no tokens, session ownership or rate limit: set a [`Tenant`] extension yourself).
/// It keeps rmcp's own DNS-rebinding check: only loopback `Host` names. Mount it at
/// [`MCP_PATH`] in your own HTTP stack, or use [`serve`].
pub fn service(
    server: &McpServer,
    shutdown: CancellationToken,
) -> StreamableHttpService<super::McpHandler, LocalSessionManager> {
    let config = config(shutdown);
    let factory = server.clone();
    StreamableHttpService::new(
        move || Ok(factory.handler(None)),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

fn config(shutdown: CancellationToken) -> StreamableHttpServerConfig {
    StreamableHttpServerConfig::default()
        // Sessionless requests whose handler emits nothing before the result get a
        // plain JSON response instead of an SSE stream: cheaper for both sides.
        .with_json_response(true)
        .with_cancellation_token(shutdown)
}

/// [`service`] behind [`serve`]'s front, which checks `Host` against the operator's
/// allow-list (which may name more than loopback): rmcp's fixed loopback check would
/// undo that, so it is off here.
fn fronted_service(
    server: &McpServer,
    shutdown: CancellationToken,
    sessions: Arc<LocalSessionManager>,
) -> StreamableHttpService<super::McpHandler, LocalSessionManager> {
    let factory = server.clone();
    StreamableHttpService::new(
        move || Ok(factory.handler(None)),
        sessions,
        config(shutdown).disable_allowed_hosts(),
    )
}

/// Which tenant created each legacy MCP session, so no other tenant can use it, and
/// how many each tenant holds, so none can hold more than its cap.
struct SessionOwners {
    state: Mutex<Owners>,
    manager: Arc<LocalSessionManager>,
    /// `max_sessions_per_tenant`.
    max_per_tenant: usize,
}

/// Sessions pruned on the way (ended without a DELETE: idle timeout, transport
/// closed), with their tenants: their terminals must end too.
type Pruned = Vec<(Arc<str>, Box<str>)>;

#[derive(Default)]
struct Owners {
    owner: HashMap<Box<str>, Arc<str>>,
    /// When each session's rmcp worker last saw a message from the front: calls
    /// answered by [`direct`] do not reach it, and an idle worker ends its session.
    touched: HashMap<Box<str>, Instant>,
    by_tenant: HashMap<Arc<str>, TenantSessions>,
    /// Size after the last full pruning: prune again when it doubles (amortised O(1)).
    pruned_at: usize,
}

#[derive(Default)]
struct TenantSessions {
    ids: std::collections::HashSet<Box<str>>,
    /// `initialize` requests admitted and not yet answered: they count against the
    /// cap, so concurrent handshakes cannot overshoot it.
    opening: usize,
}

/// A session slot held for one `initialize` until its response is in (and the
/// session, if any, bound).
struct Opening<'a> {
    owners: &'a SessionOwners,
    tenant: Arc<str>,
}

impl Drop for Opening<'_> {
    fn drop(&mut self) {
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
    fn new(manager: Arc<LocalSessionManager>, max_per_tenant: usize) -> Self {
        Self {
            state: Mutex::new(Owners::default()),
            manager,
            max_per_tenant,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Owners> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn owner(&self, id: &str) -> Option<Arc<str>> {
        self.lock().owner.get(id).cloned()
    }

    /// A slot for a new session of `tenant`, or `None` when it holds its cap of live
    /// sessions. At the cap, the tenant's sessions that ended without a DELETE are
    /// pruned first (and returned), so only live ones count.
    async fn admit(&self, tenant: &Arc<str>) -> (Option<Opening<'_>>, Pruned) {
        let opening = || Opening {
            owners: self,
            tenant: tenant.clone(),
        };
        {
            let mut state = self.lock();
            let t = state.by_tenant.entry(tenant.clone()).or_default();
            if t.ids.len() + t.opening < self.max_per_tenant {
                t.opening += 1;
                return (Some(opening()), Vec::new());
            }
        }
        let live = self.manager.sessions.read().await;
        let mut state = self.lock();
        let Owners {
            owner,
            touched,
            by_tenant,
            ..
        } = &mut *state;
        let t = by_tenant.entry(tenant.clone()).or_default();
        let dead: Vec<Box<str>> = t
            .ids
            .iter()
            .filter(|id| !live.contains_key(&***id))
            .cloned()
            .collect();
        drop(live);
        let mut pruned = Vec::with_capacity(dead.len());
        for id in dead {
            t.ids.remove(&id);
            owner.remove(&id);
            touched.remove(&id);
            pruned.push((tenant.clone(), id));
        }
        if t.ids.len() + t.opening < self.max_per_tenant {
            t.opening += 1;
            return (Some(opening()), pruned);
        }
        (None, pruned)
    }

    /// Records `tenant` as the owner of session `id` (admitted by [`Self::admit`]).
    /// Returns the sessions pruned on the way.
    async fn bind(&self, id: &str, tenant: Arc<str>) -> Pruned {
        let due = {
            let mut state = self.lock();
            state.owner.insert(Box::from(id), tenant.clone());
            state.touched.insert(Box::from(id), Instant::now());
            state
                .by_tenant
                .entry(tenant)
                .or_default()
                .ids
                .insert(Box::from(id));
            state.owner.len() >= (state.pruned_at * 2).max(64)
        };
        if !due {
            return Vec::new();
        }
        let live = self.manager.sessions.read().await;
        let mut state = self.lock();
        let Owners {
            owner,
            touched,
            by_tenant,
            pruned_at,
        } = &mut *state;
        let mut pruned = Vec::new();
        owner.retain(|id, tenant| {
            let keep = live.contains_key(&**id);
            if !keep {
                pruned.push((Arc::clone(tenant), id.clone()));
            }
            keep
        });
        drop(live);
        touched.retain(|id, _| owner.contains_key(id));
        for (tenant, id) in &pruned {
            if let Some(t) = by_tenant.get_mut(tenant) {
                t.ids.remove(id);
            }
        }
        by_tenant.retain(|_, t| !t.ids.is_empty() || t.opening > 0);
        *pruned_at = owner.len();
        pruned
    }

    fn unbind(&self, id: &str) {
        let mut state = self.lock();
        state.touched.remove(id);
        if let Some(tenant) = state.owner.remove(id)
            && let Some(t) = state.by_tenant.get_mut(&tenant)
        {
            t.ids.remove(id);
            if t.ids.is_empty() && t.opening == 0 {
                state.by_tenant.remove(&tenant);
            }
        }
    }

    /// Whether rmcp still holds session `id` (it may have idled out or closed).
    async fn is_live(&self, id: &str) -> bool {
        self.manager.sessions.read().await.contains_key(id)
    }

    /// Tells session `id`'s rmcp worker that the session is in use, at most four
    /// times per idle limit: calls answered by [`direct`] never reach it, and a worker
    /// that hears nothing for `session_idle_timeout_secs` ends the session under a
    /// client still calling. The message is `notifications/roots/list_changed`, which the
    /// handler ignores (this server asks for no roots).
    async fn keep_alive(&self, id: &str) {
        // A quarter of the idle limit: the worker hears from the session well before
        // it would end it.
        let every = self
            .manager
            .session_config
            .keep_alive
            .map_or(Duration::MAX, |limit| limit / 4);
        let due = {
            let mut state = self.lock();
            let now = Instant::now();
            match state.touched.get_mut(id) {
                Some(at) if now.duration_since(*at) < every => false,
                Some(at) => {
                    *at = now;
                    true
                }
                None => {
                    state.touched.insert(Box::from(id), now);
                    false
                }
            }
        };
        if due {
            use rmcp::model::{ClientNotification, RootsListChangedNotification};
            use rmcp::transport::streamable_http_server::session::SessionManager;
            let touch = ClientJsonRpcMessage::notification(
                ClientNotification::RootsListChangedNotification(
                    RootsListChangedNotification::default(),
                ),
            );
            if let Err(e) = self.manager.accept_message(&Arc::from(id), touch).await {
                tracing::debug!(session = id, "could not keep the session alive: {e}");
            }
        }
    }
}

/// Open connections, in total and per peer address.
struct Connections {
    open: Mutex<(usize, HashMap<IpAddr, usize>)>,
    max_total: usize,
    max_per_ip: usize,
}

/// One admitted connection; frees its place when dropped.
struct ConnectionSlot {
    connections: Arc<Connections>,
    ip: IpAddr,
}

impl Connections {
    /// A place for a connection from `ip`, or `None` when either cap is reached.
    fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<ConnectionSlot> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let (total, per_ip) = &mut *open;
        let from_ip = per_ip.entry(ip).or_insert(0);
        if *total >= self.max_total || *from_ip >= self.max_per_ip {
            if *from_ip == 0 {
                per_ip.remove(&ip);
            }
            return None;
        }
        *total += 1;
        *from_ip += 1;
        Some(ConnectionSlot {
            connections: self.clone(),
            ip,
        })
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let mut open = self
            .connections
            .open
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let (total, per_ip) = &mut *open;
        *total = total.saturating_sub(1);
        if let Some(n) = per_ip.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                per_ip.remove(&self.ip);
            }
        }
    }
}

/// The HTTP front's limits, from the policy's `[server]` keys or their defaults.
struct Limits {
    max_sessions_per_tenant: usize,
    session_idle_timeout: Duration,
    header_timeout: Duration,
    max_connections: usize,
    max_connections_per_ip: usize,
}

impl Limits {
    fn new(policy: &hermetic::policy_file::ServerPolicy) -> Self {
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
        }
    }
}

/// What the front needs per request.
struct Front {
    server: McpServer,
    mcp: StreamableHttpService<super::McpHandler, LocalSessionManager>,
    allow: AllowList,
    sessions: SessionOwners,
    /// POST responses not yet fully sent (a call's result may still be on its way
    /// after the call ended): shutdown waits for them before ending the sessions.
    responses: tokio_util::task::TaskTracker,
}

/// Serves MCP at `http://<listener address>/mcp` (and the approvals endpoint) until
/// `shutdown` is cancelled, then shuts down gracefully: stops accepting, lets calls in
/// flight finish for up to [`super::ServeOptions::shutdown_grace`], cancels the rest,
/// ends the sessions and runs the [`McpServer::on_shutdown`] hooks. Other paths
/// answer 404. Failed accepts are logged and retried.
///
/// # Errors
/// [`ServeError::Unprotected`] when the listener is not on loopback and the policy
/// defines no tokens; [`ServeError::Listen`] when its address cannot be read.
pub async fn serve(
    server: &McpServer,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let bound = listener.local_addr()?;
    if !bound.ip().is_loopback() && !server.shared.auth.requires_tokens() {
        return Err(ServeError::Unprotected(bound));
    }
    let access = &server.shared.options.access;
    let limits = Limits::new(access);
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(limits.session_idle_timeout);
    let manager = Arc::new(manager);
    // Ends the MCP sessions; cancelled only after calls in flight had their grace.
    let sessions_end = CancellationToken::new();
    let front = Arc::new(Front {
        server: server.clone(),
        mcp: fronted_service(server, sessions_end.clone(), manager.clone()),
        allow: AllowList::new(bound, &access.allowed_hosts, &access.allowed_origins),
        sessions: SessionOwners::new(manager, limits.max_sessions_per_tenant),
        responses: tokio_util::task::TaskTracker::new(),
    });
    let connections = Arc::new(Connections {
        open: Mutex::new((0, HashMap::new())),
        max_total: limits.max_connections,
        max_per_ip: limits.max_connections_per_ip,
    });
    let mut http1 = hyper::server::conn::http1::Builder::new();
    // Without a timer hyper enforces no header timeout at all: a client could hold a
    // connection forever by sending nothing, or a byte a minute.
    http1
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    loop {
        let (stream, peer) = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // Accept errors are transient (a peer that reset before accept, or out
                // of file descriptors until some connections close): never stop the
                // server for one, but do not spin on it either.
                Err(e) => {
                    tracing::warn!("accepting a connection failed: {e}");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
        };
        // Over a cap: closed before reading a byte. Cheaper than an HTTP 503 (which
        // would need a write the peer might never read) and what a client sees as a
        // refused connection.
        let Some(slot) = connections.admit(peer.ip()) else {
            tracing::debug!(%peer, "refused a connection over max_connections(_per_ip)");
            drop(stream);
            continue;
        };
        // Small JSON-RPC messages: send them now rather than waiting to coalesce.
        let _ = stream.set_nodelay(true);
        let front = front.clone();
        let connection_shutdown = shutdown.clone();
        let http1 = http1.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let route = hyper::service::service_fn(move |request: Request<Incoming>| {
                let front = front.clone();
                async move { Ok::<_, Infallible>(front.route(request).await) }
            });
            let connection = http1.serve_connection(TokioIo::new(stream), route);
            tokio::pin!(connection);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(e) = result {
                        tracing::debug!("HTTP connection ended with an error: {e}");
                    }
                }
                () = connection_shutdown.cancelled() => {
                    // Answers the request in flight (a running call's result), then
                    // closes; no new request is read from this connection.
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.as_mut().await;
                }
            }
        });
    }
    // Stop accepting: new connections are refused from here on.
    drop(listener);
    let grace = server.shared.options.shutdown_grace;
    tracing::info!(
        "shutting down: waiting up to {} s for calls in flight",
        grace.as_secs_f64()
    );
    if !server.drain(grace).await {
        // Cancel what is left ourselves, while the sessions still stand: rmcp would
        // cancel a session's handlers only after closing its transport, and their
        // "cancelled" results would have no way to the client.
        server.cancel_calls();
        server.wait_for_calls(CALLS_GRACE).await;
    }
    // The calls returned; let their results reach the clients.
    front.responses.close();
    let _ = tokio::time::timeout(RESPONSES_GRACE, front.responses.wait()).await;
    // Ends the sessions (and whatever call a wedged host call kept running); let those
    // calls finish so their sandboxes are torn down before we return.
    sessions_end.cancel();
    server.wait_for_calls(CALLS_GRACE).await;
    server.run_shutdown_hooks();
    if let Some(audit) = server.audit() {
        let (lines, head) = audit.head();
        tracing::info!(
            "audit log {}: {lines} lines, head {head}",
            audit.path().display()
        );
    }
    Ok(())
}

impl Front {
    async fn route(&self, request: Request<Incoming>) -> Response<Body> {
        let headers = request.headers();
        let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
        if !self.allow.host_allowed(host) {
            tracing::debug!(?host, "refused a request with a Host not on the allow-list");
            return text(
                StatusCode::FORBIDDEN,
                "Forbidden: Host header is not allowed\n",
            );
        }
        let origin = match headers.get(header::ORIGIN).map(HeaderValue::to_str) {
            None => None,
            Some(Ok(origin)) => Some(origin),
            Some(Err(_)) => return text(StatusCode::FORBIDDEN, "Forbidden: invalid Origin\n"),
        };
        if !self.allow.origin_allowed(origin) {
            tracing::debug!(
                ?origin,
                "refused a request with an Origin not on the allow-list"
            );
            return text(
                StatusCode::FORBIDDEN,
                "Forbidden: Origin header is not allowed\n",
            );
        }
        let path = request.uri().path();
        if path == MCP_PATH {
            self.mcp(request).await
        } else if path == APPROVALS_PATH || path.starts_with("/approvals/") {
            self.approvals(request).await
        } else if console::is_console_path(path) {
            console::route(&self.server, request).await
        } else {
            text(
                StatusCode::NOT_FOUND,
                "Not Found: the MCP endpoint is /mcp\n",
            )
        }
    }

    async fn mcp(&self, mut request: Request<Incoming>) -> Response<Body> {
        let authorization = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let tenant = match self.server.shared.auth.tenant(authorization) {
            Ok(tenant) => tenant,
            Err(failure) => return unauthorized(failure),
        };
        let session = request
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if let Some(id) = &session
            && self.sessions.owner(id).as_deref() != Some(&*tenant.id)
        {
            // Someone else's session, or none at all: the same answer, so session ids
            // cannot be probed across tenants.
            return text(StatusCode::NOT_FOUND, "Not Found: Session not found\n");
        }
        request.extensions_mut().insert(Tenant(tenant.id.clone()));
        let delete = request.method() == Method::DELETE;
        let post = request.method() == Method::POST;
        // Held until the session (if any) is bound, so it counts against the cap.
        let mut opening = None;
        // The session request whose call is cancelled if its response is abandoned.
        let mut watched = None;
        let mut handling: Option<tokio_util::task::task_tracker::TaskTrackerToken> = None;
        // A session request whose client takes JSON: its answer may come as JSON.
        let mut json_answer = false;
        let mut response = if post {
            let (parts, body) = request.into_parts();
            let body = match read_body(body).await {
                Ok(body) => body,
                Err(refused) => return refused,
            };
            let message = match parse_body(&body) {
                Ok(message) => message,
                Err(refused) => return *refused,
            };
            if let Some(tool) = Asked::of(&message).tool
                && let Some(response) = self.rate_limit(&tenant, tool, session.as_deref())
            {
                return response;
            }
            let mut message = message;
            if let Some(id) = &session {
                self.cancel_direct(id, &message);
                if json_reply::accepts_json(&parts.headers) && self.sessions.is_live(id).await {
                    match crate::plain::take(message, &self.server.shared, &tenant.id) {
                        Ok((request, params)) => {
                            self.sessions.keep_alive(id).await;
                            let sending = self.responses.token();
                            let (tenant, session) = (tenant.id.clone(), id.clone());
                            return direct::answer(
                                &self.server,
                                tenant,
                                session,
                                request,
                                params,
                                sending,
                            )
                            .await;
                        }
                        Err(back) => message = back,
                    }
                }
            }
            let asked = Asked::of(&message);
            if asked.initialize && session.is_none() {
                match self.open_session(&tenant).await {
                    Ok(admitted) => opening = Some(admitted),
                    Err(refused) => return refused,
                }
            }
            json_answer = session.is_some()
                && asked.request.is_some()
                && json_reply::accepts_json(&parts.headers);
            if let (Some(session), Some(id)) = (&session, asked.request) {
                watched = Some(Abandon {
                    server: self.server.clone(),
                    session: session.clone(),
                    request: id,
                });
            }
            // Counted from now, not from when rmcp hands back a response: a sessionless
            // call's response exists only once the call returned, and a shutdown that
            // ended the sessions in between would turn its result into a 500.
            handling = Some(self.responses.token());
            self.mcp
                .handle(Request::from_parts(parts, Full::new(body)))
                .await
        } else {
            self.mcp.handle(request).await
        };
        if session.is_none()
            && let Some(id) = response
                .headers()
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
        {
            let pruned = self.sessions.bind(id, tenant.id.clone()).await;
            self.end_terminals(pruned);
        }
        drop(opening);
        if delete {
            if let Some(id) = &session
                && response.status().is_success()
            {
                self.session_deleted(&tenant.id, id);
            }
            // rmcp answers a session DELETE with 202; clients (the Python SDK among
            // them) expect 200 or 204 and warn otherwise. The session is closed
            // either way: say so plainly.
            if response.status() == StatusCode::ACCEPTED {
                *response.status_mut() = StatusCode::NO_CONTENT;
            }
        }
        if post {
            // Counted until hyper drops the body, i.e. until it was sent (or the
            // client went away). GET streams are left out: they last as long as
            // their session.
            let sending = handling.take().unwrap_or_else(|| self.responses.token());
            let tracked = response.map(|body| Tracked {
                inner: body,
                _sending: sending,
                finished: false,
                abandon: watched,
            });
            if json_answer {
                // The call answered: nothing is left to cancel when the rest of
                // its stream is dropped unread.
                return json_reply::prefer_json(tracked, json_reply::JSON_WAIT, |t| {
                    t.finished = true;
                })
                .await;
            }
            response = tracked.map(BodyExt::boxed);
        }
        response
    }

    /// A slot for a new session of `tenant`, or the 429 that refuses it (its
    /// `sessions_per_minute` or `max_sessions_per_tenant` is used up).
    async fn open_session(&self, tenant: &TenantAccess) -> Result<Opening<'_>, Response<Body>> {
        if let Err(wait) = tenant.sessions.check() {
            return Err(too_many_requests(
                "Too Many Requests: this tenant's sessions_per_minute is used up\n",
                Some(wait),
            ));
        }
        let (admitted, pruned) = self.sessions.admit(&tenant.id).await;
        self.end_terminals(pruned);
        admitted.ok_or_else(|| {
            too_many_requests(
                "Too Many Requests: this tenant holds max_sessions_per_tenant live sessions; \
                 end one (DELETE) or let one idle out\n",
                None,
            )
        })
    }

    /// A DELETE ended `session`: it is forgotten, its calls end now (rmcp cancels a
    /// session's handlers only after a drain period of its own), and its background
    /// processes and container end with it (off the async workers: removing a
    /// container can take seconds).
    fn session_deleted(&self, tenant: &Arc<str>, session: &str) {
        self.sessions.unbind(session);
        self.server.shared.live.cancel_session(session);
        if let Some(terminal) = self.server.registry().terminal().cloned() {
            let (tenant_id, session_id) = (tenant.clone(), session.to_owned());
            tokio::task::spawn_blocking(move || {
                terminal.end_session(&tenant_id, &session_id);
            });
        }
    }

    /// A `notifications/cancelled` reaches the calls [`direct`] runs (rmcp, which gets
    /// it too, knows only its own).
    fn cancel_direct(&self, session: &str, message: &ClientJsonRpcMessage) {
        if let Some(request) = crate::plain::cancelled_request(message) {
            self.server.shared.live.cancel_request(session, request);
        }
    }

    /// Ends the terminals (background processes, containers) of sessions that idled
    /// out or whose client vanished, as a DELETE would (off the async workers:
    /// removing a container can take seconds).
    fn end_terminals(&self, pruned: Pruned) {
        if pruned.is_empty() {
            return;
        }
        if let Some(terminal) = self.server.registry().terminal().cloned() {
            tokio::task::spawn_blocking(move || {
                for (tenant_id, session_id) in pruned {
                    terminal.end_session(&tenant_id, &session_id);
                }
            });
        }
    }

    /// Takes the tenant's rate limit for a tools/call of `tool`; a 429 when over.
    fn rate_limit(
        &self,
        tenant: &TenantAccess,
        tool: &str,
        session: Option<&str>,
    ) -> Option<Response<Body>> {
        let limiter = tenant.limiter.as_ref()?;
        let wait = limiter.check().err()?;
        if let Some(audit) = self.server.audit() {
            let retry = wait.as_secs_f64().ceil().max(1.0);
            let reason = format!("over calls_per_minute; retry after {retry} s");
            audit.record_or_log(&super::audit::Event {
                kind: "decision",
                tenant: &tenant.id,
                session: session.unwrap_or_default(),
                tool,
                outcome: "rate_limited",
                reason: Some(&reason),
                ..Default::default()
            });
        }
        Some(too_many_requests(
            "Too Many Requests: this tenant's calls_per_minute is used up\n",
            Some(wait),
        ))
    }

    async fn approvals(&self, request: Request<Incoming>) -> Response<Body> {
        let Some(broker) = &self.server.shared.broker else {
            return text(
                StatusCode::NOT_FOUND,
                "Not Found: the approvals endpoint is off (set [server] admin_token_sha256)\n",
            );
        };
        let authorization = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        if let Err(failure) = self.server.shared.auth.admin(authorization) {
            return unauthorized(failure);
        }
        let path = request.uri().path().to_owned();
        match (request.method().clone(), path.strip_prefix("/approvals/")) {
            (Method::GET, None) => {
                console::api_headers(json(StatusCode::OK, &serde_json::json!(broker.list())))
            }
            (Method::POST, Some(id)) => {
                let Ok(id) = id.parse::<u64>() else {
                    return text(StatusCode::NOT_FOUND, "Not Found: no such approval\n");
                };
                let body = match Limited::new(request.into_body(), MAX_ANSWER_BODY)
                    .collect()
                    .await
                {
                    Ok(body) => body.to_bytes(),
                    Err(_) => return text(StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large\n"),
                };
                #[derive(serde::Deserialize)]
                struct Body {
                    answer: String,
                }
                let answer = serde_json::from_slice::<Body>(&body)
                    .ok()
                    .and_then(|b| super::approvals::parse_choice(&b.answer));
                let Some(answer) = answer else {
                    return text(
                        StatusCode::BAD_REQUEST,
                        "Bad Request: send {\"answer\": \"once\" | \"session\" | \"always\" | \"deny\"}\n",
                    );
                };
                // Answered only once the gate has acted on it: an acknowledged
                // "always" is on disk.
                match broker.answer_settled(id, answer).await {
                    Ok(settled) => console::api_headers(json(
                        StatusCode::OK,
                        &serde_json::json!({
                            "id": id, "answer": answer,
                            "outcome": settled.outcome, "message": settled.message,
                        }),
                    )),
                    Err(e) => text(e.status(), &format!("{e}\n")),
                }
            }
            _ => {
                let mut response = text(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed\n");
                let allow = if path == APPROVALS_PATH {
                    "GET"
                } else {
                    "POST"
                };
                response
                    .headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static(allow));
                response
            }
        }
    }
}

/// A response body that holds a [`TaskTracker`](tokio_util::task::TaskTracker) token
/// until it is dropped (sent in full, or abandoned), and cancels the call it would
/// carry the result of when it is abandoned unfinished: hyper drops it when the
/// client's connection goes away, and nobody would read that result. Forwards the
/// size hint, so a JSON response keeps its `Content-Length`.
struct Tracked {
    inner: Body,
    _sending: tokio_util::task::task_tracker::TaskTrackerToken,
    /// The whole body was produced.
    finished: bool,
    abandon: Option<Abandon>,
}

/// The call a session POST's response carries: cancelled if that response is
/// abandoned.
struct Abandon {
    server: McpServer,
    session: String,
    request: RequestId,
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        let frame = std::pin::Pin::new(&mut this.inner).poll_frame(cx);
        if matches!(frame, std::task::Poll::Ready(None)) || this.inner.is_end_stream() {
            this.finished = true;
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        if let Some(abandon) = &self.abandon {
            let cancelled = abandon
                .server
                .shared
                .live
                .cancel_request(&abandon.session, &abandon.request);
            if cancelled > 0 {
                tracing::info!(
                    session = %abandon.session,
                    request = %abandon.request,
                    "the client went away: its call is cancelled"
                );
            }
        }
    }
}

/// What one client message asks for, as far as the front cares.
#[derive(Debug, Default, PartialEq, Eq)]
struct Asked<'a> {
    /// The tool of a tools/call.
    tool: Option<&'a str>,
    /// Whether it is an `initialize` (which opens a session).
    initialize: bool,
    /// The id of a request (its response is owed on this POST's stream).
    request: Option<RequestId>,
}

impl<'a> Asked<'a> {
    fn of(message: &'a ClientJsonRpcMessage) -> Self {
        let ClientJsonRpcMessage::Request(request) = message else {
            return Self::default();
        };
        Self {
            tool: match &request.request {
                ClientRequest::CallToolRequest(call) => Some(call.params.name.as_ref()),
                _ => None,
            },
            initialize: matches!(&request.request, ClientRequest::InitializeRequest(_)),
            request: Some(request.id.clone()),
        }
    }
}

/// 429, with `Retry-After` (whole seconds, at least 1) when the wait is known.
fn too_many_requests(body: &str, wait: Option<Duration>) -> Response<Body> {
    let mut response = text(StatusCode::TOO_MANY_REQUESTS, body);
    if let Some(wait) = wait {
        let retry = wait.as_secs_f64().ceil().max(1.0) as u64;
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(retry));
    }
    response
}

/// A POST's body, or the response that refuses it: over [`MAX_BODY`], unreadable, or
/// not arrived within [`BODY_TIMEOUT`] (the connection then closes).
async fn read_body(body: Incoming) -> Result<Bytes, Response<Body>> {
    let collect = Limited::new(body, MAX_BODY).collect();
    match tokio::time::timeout(BODY_TIMEOUT, collect).await {
        Ok(Ok(body)) => Ok(body.to_bytes()),
        Ok(Err(_)) => Err(text(
            StatusCode::PAYLOAD_TOO_LARGE,
            "Payload Too Large (or the body could not be read)\n",
        )),
        Err(_) => {
            let mut response = text(
                StatusCode::REQUEST_TIMEOUT,
                "Request Timeout: the body did not arrive in time\n",
            );
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            Err(response)
        }
    }
}

/// The JSON-RPC message of a body, or the 400 that refuses it. Parsed here as well as
/// in rmcp (which answers an unparseable body with a bare 415 and no JSON-RPC error for
/// its id), to know what it asks for.
fn parse_body(body: &[u8]) -> Result<ClientJsonRpcMessage, Box<Response<Body>>> {
    super::jsonrpc::parse_message(body).map_err(|e| {
        Box::new(
            match super::jsonrpc::failure_response(body, &e.to_string()) {
                Some(reply) => json(StatusCode::BAD_REQUEST, &reply),
                None => text(
                    StatusCode::BAD_REQUEST,
                    "Bad Request: the body is not a JSON-RPC message\n",
                ),
            },
        )
    })
}

fn text(status: StatusCode, body: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_owned())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn json(status: StatusCode, value: &serde_json::Value) -> Response<Body> {
    json_bytes(status, value.to_string().into_bytes())
}

/// A response of JSON already serialised.
fn json_bytes(status: StatusCode, body: Vec<u8>) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// 401 with the `WWW-Authenticate` challenge RFC 6750 asks for.
fn unauthorized(failure: AuthFailure) -> Response<Body> {
    let (challenge, body) = match failure {
        AuthFailure::Missing => (
            "Bearer realm=\"hermetic\"",
            "Unauthorized: send Authorization: Bearer <token>\n",
        ),
        AuthFailure::Unknown => (
            "Bearer realm=\"hermetic\", error=\"invalid_token\"",
            "Unauthorized: unknown token\n",
        ),
    };
    let mut response = text(StatusCode::UNAUTHORIZED, body);
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(challenge),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(body: &str) -> (Option<String>, bool, Option<RequestId>) {
        let message: ClientJsonRpcMessage = serde_json::from_str(body).unwrap();
        let asked = Asked::of(&message);
        (
            asked.tool.map(str::to_owned),
            asked.initialize,
            asked.request,
        )
    }

    #[test]
    fn the_front_reads_tool_calls_even_with_escaped_names_and_initializes_and_request_ids() {
        let one = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#;
        assert_eq!(
            asked(one),
            (Some("echo".into()), false, Some(RequestId::Number(1)))
        );
        // An escaped method name must not slip past the rate limit.
        let escaped = r#"{"jsonrpc":"2.0","id":"x","method":"tools\/call","params":{"name":"e"}}"#;
        assert_eq!(asked(escaped).0.as_deref(), Some("e"));
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
        assert_eq!(asked(init), (None, true, Some(RequestId::Number(0))));
        let notification = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert_eq!(asked(notification), (None, false, None));
    }

    #[test]
    fn pruned_sessions_are_reported_with_their_tenants() {
        let owners = SessionOwners::new(Arc::new(LocalSessionManager::default()), 256);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let acme: Arc<str> = Arc::from("acme");
        // None of them is live in the session manager: the bind that triggers a prune
        // reports every one, so the server can end their terminals.
        let mut pruned = Vec::new();
        for n in 0..64 {
            pruned.extend(rt.block_on(owners.bind(&format!("sess{n}"), acme.clone())));
        }
        assert_eq!(pruned.len(), 64);
        assert!(pruned.iter().all(|(t, _)| &**t == "acme"));
        assert!(pruned.iter().any(|(_, id)| &**id == "sess7"));
        assert!(owners.owner("sess7").is_none());
        assert!(owners.lock().by_tenant.is_empty());
    }

    #[test]
    fn a_tenant_at_its_session_cap_is_refused_until_its_dead_sessions_are_pruned() {
        let owners = SessionOwners::new(Arc::new(LocalSessionManager::default()), 2);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (acme, other): (Arc<str>, Arc<str>) = (Arc::from("acme"), Arc::from("other"));
        rt.block_on(async {
            // Two handshakes in flight hold both places.
            let (first, _) = owners.admit(&acme).await;
            let (second, _) = owners.admit(&acme).await;
            assert!(first.is_some() && second.is_some());
            // (none of these ids is live in the manager, so a prune would free them)
            let (third, pruned) = owners.admit(&acme).await;
            assert!(third.is_none() && pruned.is_empty());
            // Another tenant is not affected.
            assert!(owners.admit(&other).await.0.is_some());
            owners.bind("a1", acme.clone()).await;
            owners.bind("a2", acme.clone()).await;
            drop((first, second));
            // Both sessions ended without a DELETE: pruned at the cap, then admitted.
            let (fourth, pruned) = owners.admit(&acme).await;
            assert!(fourth.is_some());
            assert_eq!(pruned.len(), 2);
        });
    }

    #[test]
    fn connections_are_capped_in_total_and_per_address_and_freed_when_dropped() {
        let connections = Arc::new(Connections {
            open: Mutex::new((0, HashMap::new())),
            max_total: 3,
            max_per_ip: 2,
        });
        let (a, b): (IpAddr, IpAddr) = ("127.0.0.1".parse().unwrap(), "127.0.0.2".parse().unwrap());
        let a1 = connections.admit(a).unwrap();
        let _a2 = connections.admit(a).unwrap();
        assert!(connections.admit(a).is_none(), "per address");
        let _b1 = connections.admit(b).unwrap();
        assert!(connections.admit(b).is_none(), "in total");
        drop(a1);
        assert!(connections.admit(a).is_some());
    }
}
