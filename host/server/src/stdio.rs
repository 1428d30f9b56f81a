//! MCP over stdio: one session on this process's stdin and stdout, for clients that
//! spawn the host. Nothing else may write to stdout; diagnostics go to stderr.
//!
//! Lines are read and written here rather than by rmcp's stdio transport, which drops
//! a line that is not JSON or is over its size limit without a word: a client waiting
//! on that request's id would wait forever. Such a line gets the JSON-RPC error it is
//! owed (parse error with id `null`, or invalid params / invalid request with its id
//! when one can be read — for an oversized line, from its first [`ID_SCAN`] bytes).
//!
//! Once a handshake-era session is initialized, plain tools/calls (no `_meta`, no
//! progress token, not a terminal tool) are run by the transport itself and their
//! answers written here; everything else goes to rmcp's session worker.

use super::{McpServer, ServeError};
use crate::handler::{CallSite, call_tool};
use rmcp::RoleServer;
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientJsonRpcMessage, ClientNotification, ClientRequest, RequestId,
    ServerJsonRpcMessage,
};
use rmcp::transport::Transport;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How long to wait for cancelled calls to end after the session: they stop at the
/// next epoch tick, so this is only a bound for a wedged host call.
const CALLS_GRACE: Duration = Duration::from_secs(5);

/// How long calls still running when the client closed stdin may go on before they
/// are cancelled: rmcp's own drain for the calls it runs, so plain calls get the same.
const EOF_GRACE: Duration = Duration::from_secs(5);

/// Longest line (one JSON-RPC message) read: rmcp's own limit (16 MiB), which matches
/// what its HTTP transports accept. Longer lines are discarded as they stream in, so
/// a client that never sends a newline cannot grow the buffer without bound.
pub const MAX_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// How much of an oversized line is kept to find its id in (clients write `jsonrpc`
/// and `id` before `params`).
pub const ID_SCAN: usize = 4096;

/// Requests read but not yet answered, at most: past it the transport stops reading
/// stdin until an answer is written. Without it a client that writes calls and never
/// reads stdout would have the server hold every unwritten answer (and a task per call)
/// without bound; with it the pipe's own back-pressure reaches the client. (A client
/// that has this many requests waiting on its own answers — approvals asked by
/// elicitation — is read from again as they time out.)
pub const MAX_UNANSWERED: usize = 256;

/// Serves one MCP session on stdin/stdout until the client closes stdin or `shutdown`
/// is cancelled (see [`serve_streams`]).
///
/// # Errors
/// [`ServeError::Start`] if the session cannot start (stdin closed before `initialize`
/// is not an error: the client went away), and
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
/// [`ServeError::Start`] if the session cannot start (`read` closed before `initialize`
/// is not an error: the client went away), and
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
    // process's session from other processes' in logs and session state — including
    // an earlier process's with the same pid (a killed one's stores wait for expiry).
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let session = format!("stdio-{}-{started:x}", std::process::id());
    let session_end = tokio_util::sync::CancellationToken::new();
    let transport = LineTransport {
        read: BufReader::new(read),
        line: Vec::new(),
        discarding: None,
        out: Lines(Arc::new(tokio::sync::Mutex::new(Some(write)))),
        unanswered: Arc::new(tokio::sync::Semaphore::new(MAX_UNANSWERED)),
        plain: PlainCalls {
            server: server.clone(),
            tenant: Arc::from(server.shared.options.tenant.as_str()),
            session: session.clone(),
            legacy: false,
            ready: false,
            end: CancellationToken::new(),
            running: TaskTracker::new(),
            eof: None,
            with_rmcp: HashMap::new(),
        },
    };
    let ended_session = session.clone();
    let running = match server
        .handler(Some(session))
        .serve_with_ct(transport, session_end.clone())
        .await
    {
        Ok(running) => running,
        // A client that went away before saying anything (`</dev/null`, a probe, a
        // launcher that changed its mind) ended the session; nothing failed.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(e) => return Err(ServeError::Start(e.to_string())),
    };
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
    // Its tools' session stores end with it (no other process can resume it).
    let keyvalue = Arc::clone(server.registry().dispatcher().keyvalue());
    let tenant = server.shared.options.tenant.clone();
    let deleted =
        tokio::task::spawn_blocking(move || keyvalue.end_session(&tenant, &ended_session)).await;
    if let Ok(Err(e)) = deleted {
        tracing::warn!("the session's stores were not deleted: {e}");
    }
    server.run_shutdown_hooks();
    ended.map_err(|e| ServeError::Session(e.to_string()))?;
    Ok(())
}

/// Newline-delimited JSON-RPC on a reader and a writer.
struct LineTransport<R, W> {
    read: BufReader<R>,
    /// The line read so far (kept across cancelled reads: rmcp polls `receive` in a
    /// `select!`).
    line: Vec<u8>,
    /// An oversized line being skipped to its end: its first [`ID_SCAN`] bytes.
    discarding: Option<Vec<u8>>,
    out: Lines<W>,
    /// One permit per request read and not yet answered ([`MAX_UNANSWERED`]).
    unanswered: Arc<tokio::sync::Semaphore>,
    plain: PlainCalls,
}

/// The writer, shared by rmcp's sends and the plain calls' answers: each message is
/// one line, written whole under the lock. `None` once closed.
struct Lines<W>(Arc<tokio::sync::Mutex<Option<W>>>);

impl<W> Clone for Lines<W> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<W: AsyncWrite + Unpin> Lines<W> {
    /// Writes `message` (serialised JSON, no newline) as one line and flushes.
    async fn write(&self, mut message: Vec<u8>) -> std::io::Result<()> {
        message.push(b'\n');
        let mut out = self.0.lock().await;
        let out = out.as_mut().ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::NotConnected, "the transport is closed")
        })?;
        out.write_all(&message).await?;
        out.flush().await
    }

    async fn close(&self) -> std::io::Result<()> {
        match self.0.lock().await.take() {
            Some(mut out) => out.shutdown().await,
            None => Ok(()),
        }
    }
}

/// The plain tools/calls of the session ([`crate::plain`]): run here, not by rmcp's
/// worker, once the client initialized with a handshake-era protocol version.
struct PlainCalls {
    server: McpServer,
    tenant: Arc<str>,
    session: String,
    /// The client's `initialize` asked for a handshake-era version.
    legacy: bool,
    /// ...and its `notifications/initialized` arrived: rmcp has set the session up.
    ready: bool,
    /// Cancels the calls still running when the client went away and
    /// [`EOF_GRACE`] ran out.
    end: CancellationToken,
    /// Those calls, answer written included.
    running: TaskTracker,
    /// When the client closed its end.
    eof: Option<Instant>,
    /// The [`MAX_UNANSWERED`] permits of the requests given to rmcp, returned when
    /// their answer is sent (or the client cancels them: a cancelled request gets no
    /// answer).
    with_rmcp: HashMap<RequestId, tokio::sync::OwnedSemaphorePermit>,
}

impl PlainCalls {
    /// Runs `message` here when it is a plain call (`None`), else gives it back for
    /// rmcp; notes the handshake and forwards cancellations on the way. A request's
    /// `permit` is held until it is answered, by the plain call or in `with_rmcp`.
    fn route<W>(
        &mut self,
        message: ClientJsonRpcMessage,
        out: &Lines<W>,
        permit: tokio::sync::OwnedSemaphorePermit,
    ) -> Option<ClientJsonRpcMessage>
    where
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let id = match &message {
            ClientJsonRpcMessage::Request(request) => {
                if let ClientRequest::InitializeRequest(init) = &request.request {
                    self.legacy = init.params.protocol_version.has_initialize();
                }
                request.id.clone()
            }
            ClientJsonRpcMessage::Notification(notification) => {
                if matches!(
                    notification.notification,
                    ClientNotification::InitializedNotification(_)
                ) {
                    self.ready = self.legacy;
                } else if let Some(request) = crate::plain::cancelled_request(&message) {
                    self.server
                        .shared
                        .live
                        .cancel_request(&self.session, request);
                    self.with_rmcp.remove(request);
                }
                return Some(message);
            }
            _ => return Some(message),
        };
        let message = if self.ready {
            match crate::plain::take(message, &self.server.shared, &self.tenant) {
                Ok((id, params)) => {
                    self.spawn(id, params, out.clone(), permit);
                    return None;
                }
                Err(message) => message,
            }
        } else {
            message
        };
        self.with_rmcp.insert(id, permit);
        Some(message)
    }

    /// Runs one plain call on its own task and writes its answer (then returns the
    /// call's `permit`).
    fn spawn<W>(
        &self,
        id: RequestId,
        params: CallToolRequestParams,
        out: Lines<W>,
        permit: tokio::sync::OwnedSemaphorePermit,
    ) where
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let shared = Arc::clone(&self.server.shared);
        let site = CallSite::plain(
            Arc::clone(&self.tenant),
            self.session.clone(),
            id.clone(),
            Some(self.end.clone()),
        );
        // Tracked twice: by the server, so a shutdown drains and cancels it with the
        // rest, and here, so closing the transport waits for its answer.
        let tracker = shared.calls.clone();
        let call = tracker.track_future(async move {
            let result = call_tool(&shared, params, site).await;
            if let Err(e) = out.write(crate::plain::response_bytes(&id, result)).await {
                tracing::debug!(request = %id, "could not write a tools/call answer: {e}");
            }
            drop(permit);
        });
        self.running.spawn(call);
    }

    /// Waits for the calls still running when the client went away: what is left
    /// after [`EOF_GRACE`] (counted from the end of stdin) is cancelled, and its
    /// "cancelled" answers are written within [`CALLS_GRACE`].
    async fn finish(&self) {
        self.running.close();
        let since_eof = self.eof.map_or(Duration::ZERO, |at| at.elapsed());
        let grace = EOF_GRACE.saturating_sub(since_eof);
        if tokio::time::timeout(grace, self.running.wait())
            .await
            .is_err()
        {
            tracing::info!(
                calls = self.running.len(),
                "the client went away: its calls still running are cancelled"
            );
            self.end.cancel();
            if tokio::time::timeout(CALLS_GRACE, self.running.wait())
                .await
                .is_err()
            {
                tracing::warn!("cancelled calls did not end within {CALLS_GRACE:?}");
            }
        }
    }
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
        match serde_json::to_vec(&reply) {
            Ok(message) => self.out.write(message).await.is_ok(),
            Err(e) => {
                tracing::warn!("could not serialise a JSON-RPC error response: {e}");
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
        let out = self.out.clone();
        let answered = match &item {
            ServerJsonRpcMessage::Response(response) => Some(&response.id),
            ServerJsonRpcMessage::Error(error) => error.id.as_ref(),
            _ => None,
        };
        let permit = answered.and_then(|id| self.plain.with_rmcp.remove(id));
        async move {
            let message = serde_json::to_vec(&item)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
            let written = out.write(message).await;
            drop(permit);
            written
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            // Taken before reading, so a full set stops reading (cancellation-safe: a
            // dropped wait has consumed nothing).
            let Ok(permit) = Arc::clone(&self.unanswered).acquire_owned().await else {
                return None;
            };
            let line = match self.read_line().await {
                Ok(line) => line,
                Err(e) => {
                    tracing::error!("reading stdin failed: {e}");
                    return None;
                }
            };
            let reply = match line {
                Line::Eof => {
                    self.plain.eof.get_or_insert_with(Instant::now);
                    return None;
                }
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
                            match self.plain.route(message, &self.out, permit) {
                                Some(message) => return Some(message),
                                None => continue,
                            }
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
        self.plain.finish().await;
        self.out.close().await
    }
}
