//! MCP streamable HTTP: rmcp's service at `/mcp` on a plain HTTP/1.1 listener.
//!
//! Both protocol eras are served: clients that begin with `initialize` get a session
//! (`Mcp-Session-Id`, list changes on the standalone GET stream); 2026-07-28 clients
//! are served per request and subscribe to changes with `subscriptions/listen`.
//!
//! Only loopback `Host` names are accepted (rmcp's DNS-rebinding default: `localhost`,
//! `127.0.0.1`, `::1`), whatever address the listener is bound to.

use super::{McpServer, ServeError};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::convert::Infallible;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

/// The default address of `hermetic serve`: loopback only.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8788";

/// How long to wait for cancelled calls to end at shutdown: they stop at the next
/// epoch tick, so this only bounds a wedged host call.
const CALLS_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Pause after a failed `accept` before the next one.
const ACCEPT_BACKOFF: std::time::Duration = std::time::Duration::from_millis(50);

/// The rmcp tower service for `server`: one [`super::McpHandler`] per session (or per
/// request for sessionless clients). Mount it at [`MCP_PATH`] in your own HTTP stack,
/// or use [`serve`].
pub fn service(
    server: &McpServer,
    shutdown: CancellationToken,
) -> StreamableHttpService<super::McpHandler, LocalSessionManager> {
    let factory = server.clone();
    let config = StreamableHttpServerConfig::default()
        // Sessionless requests whose handler emits nothing before the result get a
        // plain JSON response instead of an SSE stream: cheaper for both sides.
        .with_json_response(true)
        .with_cancellation_token(shutdown);
    StreamableHttpService::new(
        move || Ok(factory.handler(None)),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

/// Serves MCP at `http://<listener address>/mcp` until `shutdown` is cancelled.
/// Other paths answer 404. Failed accepts are logged and retried.
///
/// # Errors
/// None yet; the `Result` leaves room for listener failures that must stop serving.
pub async fn serve(
    server: &McpServer,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> Result<(), ServeError> {
    let mcp = service(server, shutdown.child_token());
    loop {
        let stream = tokio::select! {
            () = shutdown.cancelled() => {
                // Sessions end with the token, which cancels their calls: let them
                // finish so their sandboxes are torn down before we return.
                server.wait_for_calls(CALLS_GRACE).await;
                return Ok(());
            }
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
        let mcp = mcp.clone();
        let connection_shutdown = shutdown.clone();
        tokio::spawn(async move {
            let route = hyper::service::service_fn(move |request: Request<Incoming>| {
                let mcp = mcp.clone();
                async move {
                    if request.uri().path() == MCP_PATH {
                        let delete = request.method() == hyper::Method::DELETE;
                        let mut response = mcp.handle(request).await;
                        // rmcp answers a session DELETE with 202; clients (the Python
                        // SDK among them) expect 200 or 204 and warn otherwise. The
                        // session is closed either way: say so plainly.
                        if delete && response.status() == StatusCode::ACCEPTED {
                            *response.status_mut() = StatusCode::NO_CONTENT;
                        }
                        Ok::<_, Infallible>(response)
                    } else {
                        Ok(not_found())
                    }
                }
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
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.as_mut().await;
                }
            }
        });
    }
}

fn not_found() -> Response<BoxBody<Bytes, Infallible>> {
    let mut response = Response::new(
        Full::new(Bytes::from_static(b"Not Found: the MCP endpoint is /mcp\n")).boxed(),
    );
    *response.status_mut() = StatusCode::NOT_FOUND;
    response
}
