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
//!
//! `/approvals` (`GET`: list pending, `POST /approvals/{id}` with
//! `{"answer": "once|session|always|deny"}`) takes an admin token instead; it is off
//! (404) when the policy has none.

use super::auth::{AllowList, AuthFailure, TenantAccess};
use super::{McpServer, ServeError, Tenant};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::borrow::Cow;
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
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
const CALLS_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// How long, after the calls in flight ended at shutdown, their responses may take to
/// reach the clients before the sessions (and their streams) end.
const RESPONSES_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Pause after a failed `accept` before the next one.
const ACCEPT_BACKOFF: std::time::Duration = std::time::Duration::from_millis(50);

/// Largest request body read to find a rate-limited tools/call (rmcp's own limit).
const MAX_BODY: usize = 4 * 1024 * 1024;

/// Largest approvals-endpoint body (`{"answer": "session"}`).
const MAX_ANSWER_BODY: usize = 4096;

/// The `Mcp-Session-Id` header.
const SESSION_HEADER: &str = "mcp-session-id";

type Body = BoxBody<Bytes, Infallible>;

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

/// Which tenant created each legacy MCP session, so no other tenant can use it.
struct SessionOwners {
    owners: Mutex<HashMap<Box<str>, Arc<str>>>,
    /// Size after the last pruning: prune again when it doubles (amortised O(1)).
    pruned_at: Mutex<usize>,
    manager: Arc<LocalSessionManager>,
}

impl SessionOwners {
    fn owner(&self, id: &str) -> Option<Arc<str>> {
        self.owners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
    }

    /// Records `tenant` as the owner of session `id`. Returns the sessions pruned on
    /// the way (ended without a DELETE), with their tenants: their terminals must end
    /// too.
    async fn bind(&self, id: &str, tenant: Arc<str>) -> Vec<(Arc<str>, Box<str>)> {
        let len = {
            let mut owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
            owners.insert(Box::from(id), tenant);
            owners.len()
        };
        let due = {
            let pruned_at = *self.pruned_at.lock().unwrap_or_else(|p| p.into_inner());
            len >= (pruned_at * 2).max(64)
        };
        if due {
            // Sessions that ended without a DELETE (idle timeout, transport closed).
            let live: std::collections::HashSet<String> = self
                .manager
                .sessions
                .read()
                .await
                .keys()
                .map(|k| k.to_string())
                .collect();
            let mut owners = self.owners.lock().unwrap_or_else(|p| p.into_inner());
            let mut pruned = Vec::new();
            owners.retain(|id, tenant| {
                let keep = live.contains(&**id);
                if !keep {
                    pruned.push((Arc::clone(tenant), id.clone()));
                }
                keep
            });
            *self.pruned_at.lock().unwrap_or_else(|p| p.into_inner()) = owners.len();
            return pruned;
        }
        Vec::new()
    }

    fn unbind(&self, id: &str) {
        self.owners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
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
    let manager = Arc::new(LocalSessionManager::default());
    // Ends the MCP sessions; cancelled only after calls in flight had their grace.
    let sessions_end = CancellationToken::new();
    let front = Arc::new(Front {
        server: server.clone(),
        mcp: fronted_service(server, sessions_end.clone(), manager.clone()),
        allow: AllowList::new(bound, &access.allowed_hosts, &access.allowed_origins),
        sessions: SessionOwners {
            owners: Mutex::new(HashMap::new()),
            pruned_at: Mutex::new(0),
            manager,
        },
        responses: tokio_util::task::TaskTracker::new(),
    });
    loop {
        let stream = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
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
        // Small JSON-RPC messages: send them now rather than waiting to coalesce.
        let _ = stream.set_nodelay(true);
        let front = front.clone();
        let connection_shutdown = shutdown.clone();
        tokio::spawn(async move {
            let route = hyper::service::service_fn(move |request: Request<Incoming>| {
                let front = front.clone();
                async move { Ok::<_, Infallible>(front.route(request).await) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), route);
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
    if server.drain(grace).await {
        // The calls returned; let their results reach the clients.
        front.responses.close();
        let _ = tokio::time::timeout(RESPONSES_GRACE, front.responses.wait()).await;
    }
    // Ends the sessions, which cancels the calls still running; let them finish so
    // their sandboxes are torn down before we return.
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
        let mut response = if tenant.limiter.is_some() && request.method() == Method::POST {
            let (parts, body) = request.into_parts();
            let body = match Limited::new(body, MAX_BODY).collect().await {
                Ok(body) => body.to_bytes(),
                Err(_) => {
                    return text(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "Payload Too Large (or the body could not be read)\n",
                    );
                }
            };
            if let Some(response) = self.rate_limit(&tenant, &body, session.as_deref()) {
                return response;
            }
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
            if !pruned.is_empty() {
                // Sessions that idled out or whose client vanished: their background
                // processes and containers end with them, as on a DELETE (off the async
                // workers: removing a container can take seconds).
                if let Some(terminal) = self.server.registry().terminal().cloned() {
                    tokio::task::spawn_blocking(move || {
                        for (tenant_id, session_id) in pruned {
                            terminal.end_session(&tenant_id, &session_id);
                        }
                    });
                }
            }
        }
        if delete {
            if let Some(id) = &session
                && response.status().is_success()
            {
                self.sessions.unbind(id);
                // The session's background processes and container end with it (off
                // the async workers: removing a container can take seconds).
                if let Some(terminal) = self.server.registry().terminal().cloned() {
                    let (tenant_id, session_id) = (tenant.id.clone(), id.clone());
                    tokio::task::spawn_blocking(move || {
                        terminal.end_session(&tenant_id, &session_id);
                    });
                }
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
            let sending = self.responses.token();
            response = response.map(|body| {
                Tracked {
                    inner: body,
                    _sending: sending,
                }
                .boxed()
            });
        }
        response
    }

    /// Takes the tenant's rate limit for each tools/call in `body`; a 429 when over.
    fn rate_limit(
        &self,
        tenant: &TenantAccess,
        body: &[u8],
        session: Option<&str>,
    ) -> Option<Response<Body>> {
        let limiter = tenant.limiter.as_ref()?;
        let calls = tool_calls(body);
        for tool in &calls {
            if let Err(wait) = limiter.check() {
                let retry = wait.as_secs_f64().ceil().max(1.0);
                if let Some(audit) = self.server.audit() {
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
                let mut response = text(
                    StatusCode::TOO_MANY_REQUESTS,
                    "Too Many Requests: this tenant's calls_per_minute is used up\n",
                );
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(retry as u64));
                return Some(response);
            }
        }
        None
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
            (Method::GET, None) => json(StatusCode::OK, &serde_json::json!(broker.list())),
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
                match broker.answer(id, answer) {
                    Ok(()) => json(
                        StatusCode::OK,
                        &serde_json::json!({"id": id, "answer": answer}),
                    ),
                    Err(e) => text(StatusCode::NOT_FOUND, &format!("Not Found: {e}\n")),
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
/// until it is dropped (sent in full, or abandoned). Forwards the size hint, so a JSON
/// response keeps its `Content-Length`.
struct Tracked {
    inner: Body,
    _sending: tokio_util::task::task_tracker::TaskTrackerToken,
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// The tool names of the tools/call requests in a JSON-RPC body (one message or a
/// batch). A body that does not parse yields none: rmcp rejects it anyway.
fn tool_calls(body: &[u8]) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(borrow)]
        name: Option<Cow<'a, str>>,
    }
    #[derive(serde::Deserialize)]
    struct Message<'a> {
        // `Cow`: an escaped method name (`tools\/call`) must not slip past the limit.
        #[serde(borrow)]
        method: Option<Cow<'a, str>>,
        #[serde(borrow)]
        params: Option<Params<'a>>,
    }
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    let messages: Vec<Message<'_>> = if first == Some(&b'[') {
        serde_json::from_slice(body).unwrap_or_default()
    } else {
        serde_json::from_slice(body)
            .map(|m| vec![m])
            .unwrap_or_default()
    };
    messages
        .into_iter()
        .filter(|m| m.method.as_deref() == Some("tools/call"))
        .map(|m| {
            m.params
                .and_then(|p| p.name)
                .map(Cow::into_owned)
                .unwrap_or_default()
        })
        .collect()
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
    let mut response = Response::new(Full::new(Bytes::from(value.to_string())).boxed());
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
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn tool_calls_are_found_in_single_messages_batches_and_escaped_names() {
        let one = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#;
        assert_eq!(tool_calls(one), ["echo"]);
        let escaped = br#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"e"}}"#;
        assert_eq!(tool_calls(escaped), ["e"]);
        let batch = br#" [{"method":"tools/call","params":{"name":"a"}},{"method":"tools/list"},{"method":"tools/call","params":{"name":"b"}}]"#;
        assert_eq!(tool_calls(batch), ["a", "b"]);
        assert!(tool_calls(br#"{"method":"tools/list"}"#).is_empty());
        assert!(tool_calls(b"not json").is_empty());
    }

    #[test]
    fn pruned_sessions_are_reported_with_their_tenants() {
        #![allow(clippy::unwrap_used, reason = "tests")]
        let owners = SessionOwners {
            owners: Mutex::new(HashMap::new()),
            pruned_at: Mutex::new(0),
            manager: Arc::new(LocalSessionManager::default()),
        };
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
    }
}
