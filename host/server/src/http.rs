//! MCP streamable HTTP: rmcp's service at `/mcp` on a plain HTTP/1.1 listener, behind
//! a front that decides who may talk to it, and the operator's approvals endpoint.
//!
//! Both protocol eras are served: clients that begin with `initialize` get a session
//! (`Mcp-Session-Id`, list changes on the standalone GET stream); 2026-07-28 clients
//! are served per request and subscribe to changes with `subscriptions/listen`.
//!
//! The front, by concern: `connections` admits connections (before a byte is read),
//! `routing` takes each request through the checks below to the endpoint it names,
//! `admission` admits a tenant's work, `sessions` owns, times out and ends legacy
//! sessions, `jsonrpc` reads what a POST asks for, `direct` answers plain session
//! calls, `approvals` and [`console`] serve the operator, `reply` writes the
//! front's own answers.
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
//! 4. **A body that is not a JSON-RPC message** → 400 with the JSON-RPC error it is
//!    owed (parse error, or invalid params / invalid request with its id).
//! 5. **Rate limit**: a tools/call over the tenant's `calls_per_minute` → 429 with
//!    `Retry-After` (seconds).
//! 6. **Requests in flight**: a request beyond the tenant's `max_requests_per_tenant`
//!    waits up to a second for a place, then → 503 with `Retry-After`.
//! 7. **Sessions are bounded**: an `initialize` over the tenant's `sessions_per_minute`
//!    → 429 with `Retry-After`; one while the tenant holds `max_sessions_per_tenant`
//!    live sessions → 429. Sessions idle for `session_idle_timeout_secs` with no call
//!    running end, and their terminals with them.
//!
//! Connections, before any of that: `max_connections_per_ip` from one address until a
//! request on them authenticates (beyond: a connection must authenticate within a
//! second, else it is closed), and `max_connections` in total (beyond: the oldest idle connection makes room, else the
//! request gets 503); a request's headers must arrive within `header_timeout_secs`,
//! which also bounds how long a connection may sit idle between requests, and its body
//! within [`BODY_TIMEOUT`]. Behind `trusted_proxies` a request's client address comes
//! from `X-Forwarded-For` / `Forwarded`.
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

use super::auth::AllowList;
use super::{McpServer, ServeError};
use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::combinators::BoxBody;
use hyper::Request;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

/// The path of the operator's approvals endpoint.
pub const APPROVALS_PATH: &str = "/approvals";
/// The readiness probe: 200 when the node and its shared store answer.
pub const HEALTH_PATH: &str = "/healthz";
/// The liveness probe: 200 while the process serves.
pub const LIVE_PATH: &str = "/livez";
/// Prometheus metrics (with the admin token, when turned on).
pub const METRICS_PATH: &str = "/metrics";

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

/// Default of `[server] max_connections_per_ip`, which counts only connections that
/// have not authenticated: a client (or a NAT's worth of them) opens a handful at
/// once; 64 keeps one address from taking a large part of [`DEFAULT_MAX_CONNECTIONS`]
/// with connections that never say who they are.
pub const DEFAULT_MAX_CONNECTIONS_PER_IP: u32 = 64;

/// Default of `[server] max_requests_per_tenant`: a quarter of
/// [`DEFAULT_MAX_CONNECTIONS`], since each request in flight holds a connection — one
/// tenant's flood leaves three quarters of them to the others — and far more than an
/// agent fleet's calls at once (each call also takes a sandbox of the host's 1,000).
pub const DEFAULT_MAX_REQUESTS_PER_TENANT: u32 = 256;

/// How long a request's body may take to arrive once its headers did (4 MiB at a
/// slow 150 KB/s); past it the request gets 408 and the connection ends.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

type Body = BoxBody<Bytes, Infallible>;

mod admission;
mod approvals;
mod connections;
pub mod console;
mod direct;
mod json_reply;
mod jsonrpc;
mod reply;
mod routing;
mod sessions;

use admission::{Limits, TenantRequests};
use connections::{Admission, ConnectionSlot, Connections};
use reply::{json, json_bytes, service_unavailable, text};
use routing::ConnectionBusy;
use sessions::{SessionOwners, SessionStore};

/// The rmcp tower service for `server`: one [`super::McpHandler`] per session (or per
/// request for sessionless clients), without the front described in the module docs
/// (no tokens, session ownership or rate limit: set a [`Tenant`](super::Tenant)
/// extension yourself).
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
    sessions: Arc<SessionStore>,
) -> StreamableHttpService<super::McpHandler, SessionStore> {
    let factory = server.clone();
    StreamableHttpService::new(
        move || Ok(factory.handler(None)),
        sessions,
        config(shutdown).disable_allowed_hosts(),
    )
}

/// What the front needs per request.
struct Front {
    server: McpServer,
    mcp: StreamableHttpService<super::McpHandler, SessionStore>,
    allow: AllowList,
    connections: Arc<Connections>,
    sessions: SessionOwners,
    requests: TenantRequests,
    /// Where rate limits count: this process, or the cluster's Redis.
    shared: Arc<dyn crate::store::SharedState>,
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
    let (closed, mut closes) = tokio::sync::mpsc::unbounded_channel();
    let store = Arc::new(SessionStore::new(closed));
    // Ends the MCP sessions; cancelled only after calls in flight had their grace.
    let sessions_end = CancellationToken::new();
    let connections = Arc::new(Connections::new(
        limits.max_connections,
        limits.max_connections_per_ip,
        access.trusted_proxies.clone(),
    ));
    let shared = crate::store::from_url(access.redis_url.as_deref()).map_err(ServeError::Store)?;
    let front = Arc::new(Front {
        server: server.clone(),
        mcp: fronted_service(server, sessions_end.clone(), store.clone()),
        allow: AllowList::new(bound, &access.allowed_hosts, &access.allowed_origins),
        connections: Arc::clone(&connections),
        sessions: SessionOwners::new(
            store,
            Arc::clone(&shared),
            limits.max_sessions_per_tenant,
            limits.session_idle_timeout,
        ),
        requests: TenantRequests::new(limits.max_requests_per_tenant),
        shared,
        responses: tokio_util::task::TaskTracker::new(),
    });
    // "Always" answers reach every node of a cluster (through the allowlist files).
    if let Some(url) = &access.redis_url {
        let terminal = &server.shared.registry.policy().terminal;
        let mut files: Vec<std::path::PathBuf> = std::iter::once(&terminal.default)
            .chain(terminal.tenants.values())
            .filter_map(|c| c.approval.allowlist_file.clone())
            .collect();
        files.sort();
        files.dedup();
        crate::store::allowlists::spawn(url, files, shutdown.clone());
    }
    // Ends sessions as they close (whatever closed them) and closes the idle ones.
    let upkeep = {
        let front = Arc::clone(&front);
        let stop = shutdown.clone();
        tokio::spawn(async move {
            let mut reap = tokio::time::interval(front.sessions.reap_every());
            reap.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut renew = tokio::time::interval(sessions::RENEW_EVERY);
            renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    () = stop.cancelled() => break,
                    closed = closes.recv() => match closed {
                        Some(id) => drop(front.session_ended(&id)),
                        None => break,
                    },
                    _ = renew.tick() => front.sessions.renew().await,
                    _ = reap.tick() => {
                        let live = &front.server.shared.live;
                        for id in front.sessions.idle(|id| live.has_calls(id)) {
                            tracing::debug!(session = %id, "the session idled out");
                            front.sessions.close(&id).await;
                        }
                    }
                }
            }
        })
    };
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
        let slot = match connections.admit(peer.ip()) {
            Admission::Open(slot) => slot,
            Admission::Overflow(overflow) => {
                // Every connection is busy: its request is read and answered 503.
                tokio::spawn(refuse_busy(stream, http1.clone(), overflow));
                continue;
            }
            // Every connection busy and as many answered 503 already: closed before
            // reading a byte, what a client sees as a refused connection.
            Admission::Refused => {
                tracing::debug!(%peer, "refused a connection: every one is busy");
                drop(stream);
                continue;
            }
        };
        // Small JSON-RPC messages: send them now rather than waiting to coalesce.
        let _ = stream.set_nodelay(true);
        tokio::spawn(serve_connection(
            stream,
            http1.clone(),
            Arc::clone(&front),
            slot,
            shutdown.clone(),
        ));
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
    let _ = upkeep.await;
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

/// Serves one admitted connection until it ends, the server shuts down, or it must
/// close to make room for another (then, like at shutdown, the request in flight is
/// answered first; an idle connection closes at once).
async fn serve_connection(
    stream: tokio::net::TcpStream,
    http1: hyper::server::conn::http1::Builder,
    front: Arc<Front>,
    slot: Arc<ConnectionSlot>,
    shutdown: CancellationToken,
) {
    let conn = Arc::clone(&slot);
    let route = hyper::service::service_fn(move |request: Request<Incoming>| {
        let (front, conn) = (Arc::clone(&front), Arc::clone(&conn));
        async move {
            let busy = conn.busy();
            let mut response = front.route(request, &conn).await;
            if conn.probation && conn.is_unauthenticated() {
                // Beyond its address's share and still not authenticated: answered,
                // then closed.
                response.headers_mut().insert(
                    hyper::header::CONNECTION,
                    hyper::header::HeaderValue::from_static("close"),
                );
            }
            Ok::<_, Infallible>(response.map(|inner| ConnectionBusy { inner, _held: busy }.boxed()))
        }
    });
    let mut http1 = http1;
    if slot.probation {
        http1.header_read_timeout(connections::PROBATION);
    }
    let connection = http1.serve_connection(TokioIo::new(stream), route);
    tokio::pin!(connection);
    tokio::select! {
        result = connection.as_mut() => {
            if let Err(e) = result {
                tracing::debug!("HTTP connection ended with an error: {e}");
            }
        }
        () = shutdown.cancelled() => {
            // Answers the request in flight (a running call's result), then
            // closes; no new request is read from this connection.
            connection.as_mut().graceful_shutdown();
            let _ = connection.as_mut().await;
        }
        () = slot.close.cancelled() => {
            tracing::debug!(peer = %slot.peer, "closed an idle connection to make room");
            connection.as_mut().graceful_shutdown();
            let _ = connection.as_mut().await;
        }
    }
}

/// Answers a connection that came while every connection was busy: its first request
/// gets 503 with `Retry-After`, and the connection closes.
async fn refuse_busy(
    stream: tokio::net::TcpStream,
    http1: hyper::server::conn::http1::Builder,
    overflow: connections::OverflowSlot,
) {
    let _overflow = overflow;
    let refuse = hyper::service::service_fn(|_request: Request<Incoming>| async {
        let mut response = service_unavailable(
            "Service Unavailable: the server holds max_connections busy connections; \
             retry later\n",
            Duration::from_secs(1),
        );
        response.headers_mut().insert(
            hyper::header::CONNECTION,
            hyper::header::HeaderValue::from_static("close"),
        );
        Ok::<_, Infallible>(response)
    });
    let mut http1 = http1;
    http1.keep_alive(false);
    if let Err(e) = http1.serve_connection(TokioIo::new(stream), refuse).await {
        tracing::debug!("a refused connection ended with an error: {e}");
    }
}
