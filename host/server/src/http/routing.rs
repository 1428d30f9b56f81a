//! Routing: every request passes the `Host`/`Origin` allow-list, then goes to the MCP
//! endpoint, the approvals endpoint or the console. The MCP endpoint authenticates,
//! admits (`admission`), and hands a request to rmcp, or a plain session call to
//! [`super::direct`]: both end in the one tools/call core
//! ([`crate::handler::call_tool`]: selection, draining, audit, cancellation, session
//! liveness), so what is admitted, audited and cancelled is the same on either path.

use super::admission::Admitted;
use super::connections::{Busy, ConnectionSlot};
use super::jsonrpc::{Asked, parse_body, read_body};
use super::reply::{text, unauthorized};
use super::{
    APPROVALS_PATH, Body, Front, HEALTH_PATH, LIVE_PATH, MCP_PATH, METRICS_PATH, McpServer,
    SESSION_HEADER,
};
use super::{console, direct, json_reply};
use crate::Tenant;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use rmcp::model::{ClientJsonRpcMessage, RequestId};
use std::convert::Infallible;
use std::sync::Arc;

impl Front {
    /// Answers one request of connection `conn`.
    pub(super) async fn route(
        &self,
        request: Request<Incoming>,
        conn: &Arc<ConnectionSlot>,
    ) -> Response<Body> {
        // Probes, before the Host check: an orchestrator's probe names the pod's own
        // address, and these answers hold nothing to protect (no data, no change).
        match request.uri().path() {
            HEALTH_PATH => return self.health().await,
            LIVE_PATH => return text(StatusCode::OK, "ok\n"),
            _ => {}
        }
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
            self.mcp(request, conn).await
        } else if path == APPROVALS_PATH || path.starts_with("/approvals/") {
            self.approvals(request).await
        } else if path == METRICS_PATH {
            self.metrics(&request)
        } else if console::is_console_path(path) {
            console::route(&self.server, request).await
        } else {
            text(
                StatusCode::NOT_FOUND,
                "Not Found: the MCP endpoint is /mcp\n",
            )
        }
    }

    /// `GET /metrics` (Prometheus text) with the admin token; 404 when the policy did
    /// not turn it on.
    fn metrics(&self, request: &Request<Incoming>) -> Response<Body> {
        let Some(metrics) = &self.server.shared.metrics else {
            return text(
                StatusCode::NOT_FOUND,
                "Not Found: /metrics is off (set [server] metrics = true, or serve --metrics)\n",
            );
        };
        let authorization = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        if let Err(failure) = self.server.shared.auth.admin(authorization) {
            return super::reply::unauthorized_admin(failure);
        }
        let mut response = text(
            StatusCode::OK,
            &metrics.encode(self.server.calls_in_flight(), self.sessions.live()),
        );
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
        );
        response
    }

    /// `GET /healthz`: 200 when this node can serve everything — its shared store (the
    /// cluster's Redis) answers —, else 503 saying what is missing. For a readiness
    /// probe; `/livez` (always 200 while the process serves) is the liveness probe.
    async fn health(&self) -> Response<Body> {
        match self.shared.check().await {
            Ok(()) => text(
                StatusCode::OK,
                &format!("ok: store {}\n", self.shared.name()),
            ),
            Err(e) => text(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!("unavailable: {e}\n"),
            ),
        }
    }

    async fn mcp(
        &self,
        mut request: Request<Incoming>,
        conn: &Arc<ConnectionSlot>,
    ) -> Response<Body> {
        let authorization = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let tenant = match self.server.shared.auth.tenant(authorization) {
            Ok(tenant) => tenant,
            Err(failure) => return unauthorized(failure),
        };
        // From here the connection is a tenant's: it leaves its address's cap of
        // unauthenticated connections, and its work is admitted per tenant.
        conn.authenticated();
        let client = self.connections.client(conn.peer, request.headers());
        let session = request
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if let Some(id) = &session
            && self.sessions.owner_of_request(id).as_deref() != Some(&*tenant.id)
        {
            // Someone else's session, or none at all: the same answer, so session ids
            // cannot be probed across tenants.
            return text(
                StatusCode::NOT_FOUND,
                "Not Found: Session not found on this node (open a new session; behind a \
                 load balancer, route a session's requests to one node by Mcp-Session-Id)\n",
            );
        }
        request.extensions_mut().insert(Tenant(tenant.id.clone()));
        let delete = request.method() == Method::DELETE;
        let post = request.method() == Method::POST;
        // Held until the session (if any) is bound, so it counts against the cap.
        let mut opening = None;
        // The session request whose call is cancelled if its response is abandoned.
        let mut watched = None;
        let mut handling: Option<tokio_util::task::task_tracker::TaskTrackerToken> = None;
        // The request's place among its tenant's requests in flight.
        let mut admitted = None;
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
            let asked = Asked::of(&message);
            if let Some(tool) = asked.tool
                && let Some(response) = self
                    .rate_limit(&tenant, tool, session.as_deref(), client)
                    .await
            {
                return response;
            }
            if asked.request.is_some() {
                match self
                    .admit_request(&tenant, asked.tool, session.as_deref(), client)
                    .await
                {
                    Ok(place) => admitted = Some(place),
                    Err(refused) => return refused,
                }
            }
            let mut message = message;
            if let Some(id) = &session {
                self.cancel_direct(id, &message);
                if json_reply::accepts_json(&parts.headers) && self.sessions.is_live(id).await {
                    match crate::plain::take(message, &self.server.shared, &tenant.id) {
                        Ok((request, params)) => {
                            let sending = self.responses.token();
                            let (tenant, session) = (tenant.id.clone(), id.clone());
                            let response = direct::answer(
                                &self.server,
                                tenant,
                                session,
                                request,
                                params,
                                sending,
                            )
                            .await;
                            return response.map(|body| {
                                Holding {
                                    inner: body,
                                    _held: admitted,
                                }
                                .boxed()
                            });
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
            self.sessions.bind(id, tenant.id.clone(), opening.as_mut());
        }
        drop(opening);
        if delete {
            if let Some(id) = &session
                && response.status().is_success()
            {
                // Now, not when the store reports the close: rmcp cancels a session's
                // handlers only after a drain period of its own. Answered once its
                // stores are gone, so a client that saw the DELETE done sees them gone.
                if let Some(ended) = self.session_ended(id) {
                    let _ = ended.await;
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
            let sending = handling.take().unwrap_or_else(|| self.responses.token());
            let tracked = response.map(|body| Tracked {
                inner: body,
                _sending: sending,
                _admitted: admitted,
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

    /// Session `id` ended (a DELETE, or the store reported its close: it idled out,
    /// its worker ended, the server shuts down). It is forgotten, its calls end now,
    /// its background processes are killed and reaped and its container removed, and
    /// its tools' session stores are deleted (off the async workers: removing a
    /// container can take seconds, the store is a file or Redis). A second report of
    /// the same end finds nothing left to do. The returned task ends when the session
    /// stores are gone (a DELETE answers after it).
    pub(super) fn session_ended(&self, id: &str) -> Option<tokio::task::JoinHandle<()>> {
        let tenant = self.sessions.unbind(id)?;
        let cancelled = self.server.shared.live.cancel_session(id);
        tracing::debug!(session = id, %tenant, cancelled, "the session ended");
        if let Some(terminal) = self.server.registry().terminal().cloned() {
            let (tenant, session) = (tenant.clone(), id.to_owned());
            tokio::task::spawn_blocking(move || {
                terminal.end_session(&tenant, &session);
            });
        }
        let keyvalue = std::sync::Arc::clone(self.server.registry().dispatcher().keyvalue());
        let session = id.to_owned();
        Some(tokio::task::spawn_blocking(move || {
            // A write racing the end may leave a store behind: the idle expiry takes it.
            if let Err(e) = keyvalue.end_session(&tenant, &session) {
                tracing::warn!(session, %tenant, "the session's stores were not deleted: {e}");
            }
        }))
    }

    /// A `notifications/cancelled` reaches the calls [`direct`] runs (rmcp, which gets
    /// it too, knows only its own).
    fn cancel_direct(&self, session: &str, message: &ClientJsonRpcMessage) {
        if let Some(request) = crate::plain::cancelled_request(message) {
            self.server.shared.live.cancel_request(session, request);
        }
    }
}

/// A response body that keeps what it holds (a connection's [`Busy`] mark, a
/// request's [`Admitted`] place) until it is dropped: sent in full, or abandoned.
/// Forwards the size hint, so a JSON response keeps its `Content-Length`.
pub(super) struct Holding<H> {
    pub(super) inner: Body,
    pub(super) _held: H,
}

impl<H: Unpin> hyper::body::Body for Holding<H> {
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

/// What a connection's response holds while it is sent: the connection is busy.
pub(super) type ConnectionBusy = Holding<Busy>;

/// A response body that holds a [`TaskTracker`](tokio_util::task::TaskTracker) token
/// until it is dropped (sent in full, or abandoned), and cancels the call it would
/// carry the result of when it is abandoned unfinished: hyper drops it when the
/// client's connection goes away, and nobody would read that result. Forwards the
/// size hint, so a JSON response keeps its `Content-Length`.
struct Tracked {
    inner: Body,
    _sending: tokio_util::task::task_tracker::TaskTrackerToken,
    /// The request's place among its tenant's requests in flight.
    _admitted: Option<Admitted>,
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
