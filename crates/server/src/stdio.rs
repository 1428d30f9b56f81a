//! MCP over stdio: one session on this process's stdin and stdout, for clients that
//! spawn the host. Nothing else may write to stdout; diagnostics go to stderr.
//!
//! Lines are read here rather than by rmcp's stdio transport, which drops a line that
//! is not JSON or is over its size limit without a word: a client waiting on that
//! request's id would wait forever. Such a line gets the JSON-RPC error it is owed
//! (parse error with id `null`, or invalid params / invalid request with its id when
//! one can be read — for an oversized line, from its first [`ID_SCAN`] bytes). Writing
//! stays rmcp's.

use super::{McpServer, ServeError};
use rmcp::RoleServer;
use rmcp::ServiceExt;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use serde_json::Value;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader};

/// How long to wait for cancelled calls to end after the session: they stop at the
/// next epoch tick, so this is only a bound for a wedged host call.
const CALLS_GRACE: Duration = Duration::from_secs(5);

/// Longest line (one JSON-RPC message) read: rmcp's own limit (16 MiB), which matches
/// what its HTTP transports accept. Longer lines are discarded as they stream in, so
/// a client that never sends a newline cannot grow the buffer without bound.
pub const MAX_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// How much of an oversized line is kept to find its id in (clients write `jsonrpc`
/// and `id` before `params`).
pub const ID_SCAN: usize = 4096;

/// Serves one MCP session on stdin/stdout until the client closes stdin or `shutdown`
/// is cancelled (see [`serve_streams`]).
///
/// # Errors
/// [`ServeError::Start`] if the session cannot start (e.g. stdin closed at once), and
/// [`ServeError::Session`] if it ends abnormally.
pub async fn serve(
    server: &McpServer,
    shutdown: tokio_util::sync::CancellationToken,
) -> Result<(), ServeError> {
    let (read, write) = rmcp::transport::stdio_pipes();
    serve_streams(server, read, write, shutdown).await
}

/// Serves one MCP session of newline-delimited JSON-RPC on `read`/`write` until the
/// client closes `read` or `shutdown` is cancelled. Calls still running when the
/// client goes away are cancelled (after rmcp's grace period for responses in flight,
/// about five seconds). On `shutdown` the session stays up while calls in flight
/// finish, for up to [`super::ServeOptions::shutdown_grace`] (new calls are refused);
/// what is left is cancelled and answered, then the session ends and the
/// [`McpServer::on_shutdown`] hooks run.
///
/// # Errors
/// [`ServeError::Start`] if the session cannot start (e.g. `read` closed at once), and
/// [`ServeError::Session`] if it ends abnormally.
pub async fn serve_streams<R, W>(
    server: &McpServer,
    read: R,
    write: W,
    shutdown: tokio_util::sync::CancellationToken,
) -> Result<(), ServeError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    // The process serves exactly one session: its id only needs to tell this
    // process's session from other processes' in logs and session state.
    let session = format!("stdio-{}", std::process::id());
    let session_end = tokio_util::sync::CancellationToken::new();
    let transport = LineTransport {
        read: BufReader::new(read),
        line: Vec::new(),
        discarding: None,
        out: AsyncRwTransport::new(tokio::io::empty(), write),
    };
    let running = server
        .handler(Some(session))
        .serve_with_ct(transport, session_end.clone())
        .await
        .map_err(|e| ServeError::Start(e.to_string()))?;
    let waiting = running.waiting();
    tokio::pin!(waiting);
    let ended = tokio::select! {
        ended = &mut waiting => ended,
        () = shutdown.cancelled() => {
            if !server.drain(server.shared.options.shutdown_grace).await {
                // Cancelled while the session stands, so their "cancelled" results
                // still reach the client: rmcp would cancel them only after closing
                // the transport.
                server.cancel_calls();
                server.wait_for_calls(CALLS_GRACE).await;
            }
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

/// Newline-delimited JSON-RPC: lines read here, messages written by rmcp's transport.
struct LineTransport<R, W: AsyncWrite> {
    read: BufReader<R>,
    /// The line read so far (kept across cancelled reads: rmcp polls `receive` in a
    /// `select!`).
    line: Vec<u8>,
    /// An oversized line being skipped to its end: its first [`ID_SCAN`] bytes.
    discarding: Option<Vec<u8>>,
    /// Only ever written to (its reader is empty).
    out: AsyncRwTransport<RoleServer, tokio::io::Empty, W>,
}

/// One line read.
enum Line {
    Complete,
    /// Over [`MAX_LINE`]; its head, to find the id in.
    Oversized(Vec<u8>),
    Eof,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// Reads the next line into `self.line`, never holding more than [`MAX_LINE`]
    /// bytes. Cancellation-safe: what was consumed is kept in `self`.
    async fn read_line(&mut self) -> std::io::Result<Line> {
        loop {
            let buf = self.read.fill_buf().await?;
            if buf.is_empty() {
                return Ok(Line::Eof);
            }
            let newline = buf.iter().position(|b| *b == b'\n');
            let take = newline.map_or(buf.len(), |n| n + 1);
            if let Some(head) = &mut self.discarding {
                let room = ID_SCAN.saturating_sub(head.len()).min(take);
                head.extend_from_slice(&buf[..room]);
            } else if self.line.len() + take > MAX_LINE {
                let mut head = std::mem::take(&mut self.line);
                head.truncate(ID_SCAN);
                let room = ID_SCAN.saturating_sub(head.len()).min(take);
                head.extend_from_slice(&buf[..room]);
                self.line = Vec::new();
                self.discarding = Some(head);
            } else {
                self.line.extend_from_slice(&buf[..take]);
            }
            self.read.consume(take);
            if newline.is_some() {
                return Ok(match self.discarding.take() {
                    Some(head) => Line::Oversized(head),
                    None => Line::Complete,
                });
            }
        }
    }

    /// Sends the JSON-RPC error `reply` (built by [`super::jsonrpc`]).
    async fn reply(&mut self, reply: Value) -> bool {
        match serde_json::from_value::<ServerJsonRpcMessage>(reply) {
            Ok(message) => self.out.send(message).await.is_ok(),
            Err(e) => {
                tracing::warn!("could not build a JSON-RPC error response: {e}");
                true
            }
        }
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.out.send(item)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            let line = match self.read_line().await {
                Ok(line) => line,
                Err(e) => {
                    tracing::error!("reading stdin failed: {e}");
                    return None;
                }
            };
            let reply = match line {
                Line::Eof => return None,
                Line::Oversized(head) => {
                    tracing::warn!("a message over {MAX_LINE} bytes was discarded");
                    let id = super::jsonrpc::top_level_id(&head).unwrap_or(Value::Null);
                    Some(super::jsonrpc::error(
                        id,
                        super::jsonrpc::INVALID_REQUEST,
                        &format!("Invalid Request: the message is over {MAX_LINE} bytes"),
                    ))
                }
                Line::Complete => {
                    let line = std::mem::take(&mut self.line);
                    let text = line.strip_suffix(b"\n").unwrap_or(&line);
                    let text = text.strip_suffix(b"\r").unwrap_or(text);
                    let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
                    if text.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    match super::jsonrpc::parse_message(text) {
                        Ok(message) => {
                            // Keep the buffer's capacity for the next line.
                            self.line = line;
                            self.line.clear();
                            return Some(message);
                        }
                        Err(e) => super::jsonrpc::failure_response(text, &e.to_string()),
                    }
                }
            };
            if let Some(reply) = reply
                && !self.reply(reply).await
            {
                return None;
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.out.close().await
    }
}
