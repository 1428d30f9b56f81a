//! MCP over stdio: one session on this process's stdin and stdout, for clients that
//! spawn the host. Nothing else may write to stdout; diagnostics go to stderr.

use super::{McpServer, ServeError};
use rmcp::ServiceExt;
use std::time::Duration;

/// How long to wait for cancelled calls to end after the session: they stop at the
/// next epoch tick, so this is only a bound for a wedged host call.
const CALLS_GRACE: Duration = Duration::from_secs(5);

/// Serves one MCP session on stdin/stdout until the client closes stdin or `shutdown`
/// is cancelled. Calls still running when the client goes away are cancelled (after
/// rmcp's grace period for responses in flight, about five seconds). On `shutdown`
/// the session stays up while calls in flight finish, for up to
/// [`super::ServeOptions::shutdown_grace`] (new calls are refused); then it ends and
/// the [`McpServer::on_shutdown`] hooks run.
///
/// # Errors
/// [`ServeError::Start`] if the session cannot start (e.g. stdin closed at once), and
/// [`ServeError::Session`] if it ends abnormally.
pub async fn serve(
    server: &McpServer,
    shutdown: tokio_util::sync::CancellationToken,
) -> Result<(), ServeError> {
    // The process serves exactly one session: its id only needs to tell this
    // process's session from other processes' in logs and session state.
    let session = format!("stdio-{}", std::process::id());
    let session_end = tokio_util::sync::CancellationToken::new();
    let running = server
        .handler(Some(session))
        .serve_with_ct(rmcp::transport::stdio_pipes(), session_end.clone())
        .await
        .map_err(|e| ServeError::Start(e.to_string()))?;
    let waiting = running.waiting();
    tokio::pin!(waiting);
    let ended = tokio::select! {
        ended = &mut waiting => ended,
        () = shutdown.cancelled() => {
            server.drain(server.shared.options.shutdown_grace).await;
            session_end.cancel();
            waiting.await
        }
    };
    // The session's calls were cancelled when it ended; let them finish so their
    // sandboxes are torn down (and logged) before the runtime goes away.
    server.wait_for_calls(CALLS_GRACE).await;
    server.run_shutdown_hooks();
    ended.map_err(|e| ServeError::Session(e.to_string()))?;
    Ok(())
}
