//! The HTTP front and the stdio transport under hostile or careless clients, with the
//! server in this process on 127.0.0.1: calls end when their client goes away, sessions
//! and connections are bounded, slow clients are cut off, and every request with an id
//! gets a JSON-RPC response.
//!
//! Timing bounds only separate "at once" (a few seconds) from what the failure would
//! take (a call's 60 s deadline, rmcp's ~6 s session drain); every loop is bounded.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

use hermetic::{OperatorPolicy, Registry, RegistryOptions};
use hermetic_config::ServerPolicy;
use hermetic_server::{McpServer, ServeOptions, stdio};
use hermetic_test_support::in_process::{Serving, serve_http};
use hermetic_test_support::registry::bare_registry;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longest any wait may take (a hang guard, not a timing assertion).
const HANG_GUARD: Duration = Duration::from_secs(45);

/// What "at once" may take on a loaded machine; far below `spin_long`'s 60 s deadline.
const AT_ONCE: Duration = Duration::from_secs(10);

/// The legacy protocol (sessions, `initialize`).
const LEGACY: &str = "2025-06-18";

fn registry(workspace: &Path) -> Registry {
    bare_registry(
        OperatorPolicy::with_workspace(workspace.to_path_buf()),
        &["echo", "spin_long", "sleeper"],
    )
}

struct Running {
    http: Serving,
    _workspace: tempfile::TempDir,
}

impl std::ops::Deref for Running {
    type Target = Serving;
    fn deref(&self) -> &Serving {
        &self.http
    }
}

impl std::ops::DerefMut for Running {
    fn deref_mut(&mut self) -> &mut Serving {
        &mut self.http
    }
}

impl Running {
    fn start(access: ServerPolicy) -> Self {
        Self::start_with(access, Duration::from_secs(30))
    }

    fn start_with(access: ServerPolicy, shutdown_grace: Duration) -> Self {
        let workspace = tempfile::TempDir::new().unwrap();
        let options = ServeOptions {
            access,
            shutdown_grace,
            ..ServeOptions::default()
        };
        let registry = registry(workspace.path());
        Self::serve(registry, options, workspace)
    }

    /// Serves `registry` (over `workspace`) with `options`.
    fn serve(registry: Registry, options: ServeOptions, workspace: tempfile::TempDir) -> Self {
        let server = McpServer::new(Arc::new(registry), options);
        Self {
            http: serve_http(server, HANG_GUARD),
            _workspace: workspace,
        }
    }

    fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(&self.addr).unwrap();
        stream.set_read_timeout(Some(HANG_GUARD)).unwrap();
        stream
    }

    /// Sends a POST to /mcp on `stream` (legacy headers when `session` or `legacy`).
    fn post(&self, stream: &mut TcpStream, session: Option<&str>, legacy: bool, body: &str) {
        let mut extra = String::new();
        if let Some(session) = session {
            extra.push_str(&format!("Mcp-Session-Id: {session}\r\n"));
        }
        let version = if legacy || session.is_some() {
            LEGACY
        } else {
            // 2026-07-28 requests name their method (and tool) in headers too.
            if let Ok(message) = serde_json::from_str::<Value>(body) {
                if let Some(method) = message["method"].as_str() {
                    extra.push_str(&format!("Mcp-Method: {method}\r\n"));
                }
                if let Some(name) = message["params"]["name"].as_str() {
                    extra.push_str(&format!("Mcp-Name: {name}\r\n"));
                }
            }
            "2026-07-28"
        };
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {version}\r\n\
             {extra}Content-Length: {}\r\n\r\n{body}",
            self.addr,
            body.len()
        )
        .unwrap();
    }

    /// A whole request on a fresh connection: (status, lower-cased head, body).
    fn exchange(&self, session: Option<&str>, legacy: bool, body: &str) -> (u16, String, String) {
        let mut stream = self.connect();
        self.post(&mut stream, session, legacy, body);
        response(&mut stream)
    }

    /// Opens a legacy session: `initialize`, then `notifications/initialized`.
    /// `Err((status, head))` when the server refuses it.
    fn open_session(&self) -> Result<String, (u16, String)> {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": {"name": "hardening", "version": "0"}}});
        let (status, head, body) = self.exchange(None, true, &init.to_string());
        if status != 200 {
            return Err((status, head));
        }
        assert!(body.contains("\"result\""), "{body}");
        let id = head
            .lines()
            .find_map(|l| l.strip_prefix("mcp-session-id:"))
            .unwrap()
            .trim()
            .to_owned();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let (status, _, _) = self.exchange(Some(&id), true, &initialized.to_string());
        assert_eq!(status, 202);
        Ok(id)
    }

    fn delete(&self, session: &str) -> u16 {
        let mut stream = self.connect();
        write!(
            stream,
            "DELETE /mcp HTTP/1.1\r\nHost: {}\r\nMcp-Session-Id: {session}\r\n\
             MCP-Protocol-Version: {LEGACY}\r\nContent-Length: 0\r\n\r\n",
            self.addr
        )
        .unwrap();
        response(&mut stream).0
    }

    /// Waits until `n` calls are in flight.
    fn wait_for_calls(&self, n: usize) {
        let start = Instant::now();
        while self.server.calls_in_flight() != n {
            assert!(start.elapsed() < HANG_GUARD, "never {n} calls in flight");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Opens a session and starts a long call in it (`spin_long`, request 1); returns
    /// the session and the connection its answer comes on, once the call runs.
    fn long_call_in_a_session(&self) -> (String, TcpStream) {
        let session = self.open_session().unwrap();
        let mut stream = self.connect();
        self.post(
            &mut stream,
            Some(&session),
            true,
            &call(1, "spin_long", false),
        );
        self.wait_for_calls(1);
        (session, stream)
    }

    /// How long until no call is in flight (at most the hang guard).
    fn time_until_idle(&self) -> Duration {
        let start = Instant::now();
        while self.server.calls_in_flight() != 0 {
            assert!(start.elapsed() < HANG_GUARD, "the call never ended");
            std::thread::sleep(Duration::from_millis(10));
        }
        start.elapsed()
    }

    fn stop(self) {
        self.http.stop();
    }
}

fn call(id: u64, tool: &str, stateless: bool) -> String {
    let mut params = json!({"name": tool, "arguments": {}});
    if stateless {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "hardening", "version": "0"}});
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string()
}

/// Reads a response's head (lower-cased) off `stream`; `buf` keeps what came after it.
fn read_head(stream: &mut TcpStream, buf: &mut Vec<u8>) -> String {
    let header_end = loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        assert!(read_more(stream, buf), "closed before a response");
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).to_ascii_lowercase();
    buf.drain(..header_end);
    head
}

/// Reads one HTTP/1.1 response (Content-Length, chunked, or to the end).
fn response(stream: &mut TcpStream) -> (u16, String, String) {
    let mut buf = Vec::new();
    let head = read_head(stream, &mut buf);
    let status: u16 = head[9..12].parse().unwrap();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse::<usize>().unwrap());
    let body = if let Some(length) = length {
        while buf.len() < length {
            assert!(read_more(stream, &mut buf));
        }
        buf.truncate(length);
        buf
    } else if head.contains("transfer-encoding: chunked") {
        let mut body = Vec::new();
        loop {
            let line_end = loop {
                if let Some(end) = buf.windows(2).position(|w| w == b"\r\n") {
                    break end;
                }
                assert!(read_more(stream, &mut buf));
            };
            let size = usize::from_str_radix(String::from_utf8_lossy(&buf[..line_end]).trim(), 16)
                .unwrap();
            while buf.len() < line_end + 2 + size + 2 {
                assert!(read_more(stream, &mut buf));
            }
            body.extend_from_slice(&buf[line_end + 2..line_end + 2 + size]);
            buf.drain(..line_end + 2 + size + 2);
            if size == 0 {
                break body;
            }
        }
    } else {
        while read_more(stream, &mut buf) {}
        buf
    };
    (status, head, String::from_utf8(body).unwrap())
}

/// Reads more; false at the end of the stream.
fn read_more(stream: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0_u8; 16 * 1024];
    let n = stream.read(&mut chunk).unwrap();
    buf.extend_from_slice(&chunk[..n]);
    n > 0
}

/// Whether the server closed `stream` (EOF or reset) within `limit`, having sent
/// nothing but perhaps an error response.
fn closed_within(stream: &mut TcpStream, limit: Duration) -> bool {
    stream.set_read_timeout(Some(limit)).unwrap();
    let mut chunk = [0_u8; 4096];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return false,
            Err(_) => return true,
        }
    }
}

// ── Plain session calls, answered by the front without rmcp's session worker ──────

#[test]
fn a_plain_session_call_gets_the_answer_the_session_worker_gives() {
    let running = Running::start(ServerPolicy::default());
    let session = running.open_session().unwrap();
    for (id, tool) in [(7, "echo"), (8, "no_such_tool")] {
        let plain = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": {"message": "hi"}}});
        let (status, head, body) = running.exchange(Some(&session), true, &plain.to_string());
        assert_eq!(status, 200, "{body}");
        assert!(head.contains("content-type: application/json"), "{head}");
        let direct: Value = serde_json::from_str(&body).unwrap();
        // A progress token sends the same call through rmcp (echo reports no
        // progress, so its answer is plain JSON too).
        let mut tracked = plain.clone();
        tracked["params"]["_meta"] = json!({"progressToken": "p"});
        let (status, _, body) = running.exchange(Some(&session), true, &tracked.to_string());
        assert_eq!(status, 200, "{body}");
        let through_rmcp: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(direct, through_rmcp);
    }
    let (_, _, body) = running.exchange(
        Some(&session),
        true,
        &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": "hi"}}})
        .to_string(),
    );
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["id"], 9);
    assert!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("hi"),
        "{answer}"
    );
    running.stop();
}

#[test]
fn a_long_plain_call_streams_keep_alives_and_notifications_cancelled_ends_it() {
    let running = Running::start(ServerPolicy::default());
    let (session, mut stream) = running.long_call_in_a_session();
    // No result within the JSON wait: the answer becomes an event stream.
    let mut buf = Vec::new();
    let head = read_head(&mut stream, &mut buf);
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "test"}});
    let (status, _, body) = running.exchange(Some(&session), true, &cancel.to_string());
    assert_eq!(status, 202, "{body}");
    let took = running.time_until_idle();
    assert!(
        took < AT_ONCE,
        "the call ran on for {took:?} after it was cancelled"
    );
    // The stream ends with the call's answer: the "cancelled" error result.
    let event = loop {
        let text = String::from_utf8_lossy(&buf).into_owned();
        if let Some(start) = text.find("data: ")
            && let Some(len) = text[start..].find("\n\n")
        {
            break text[start + 6..start + len].to_owned();
        }
        assert!(
            read_more(&mut stream, &mut buf),
            "the stream ended unanswered"
        );
    };
    let answer: Value = serde_json::from_str(&event).unwrap();
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("cancel"), "{text}");
    running.stop();
}

// ── 8. A client that goes away cancels its call ──────────────────────────────────

#[test]
fn a_sessionless_call_ends_at_once_when_its_client_disconnects() {
    let running = Running::start(ServerPolicy::default());
    let mut stream = running.connect();
    running.post(&mut stream, None, false, &call(1, "spin_long", true));
    running.wait_for_calls(1);
    drop(stream);
    let took = running.time_until_idle();
    assert!(
        took < AT_ONCE,
        "the call ran on for {took:?} after its client left"
    );
    running.stop();
}

#[test]
fn a_session_call_ends_at_once_when_its_client_disconnects() {
    let running = Running::start(ServerPolicy::default());
    let (session, stream) = running.long_call_in_a_session();
    drop(stream);
    let took = running.time_until_idle();
    assert!(
        took < AT_ONCE,
        "the call ran on for {took:?} after its client left"
    );
    // The session itself lives on: only the abandoned request was cancelled.
    let (status, _, body) = running.exchange(Some(&session), true, &call(2, "echo", false));
    assert_eq!(status, 200, "{body}");
    running.stop();
}

#[test]
fn deleting_a_session_ends_its_calls_at_once() {
    let running = Running::start(ServerPolicy::default());
    let (session, stream) = running.long_call_in_a_session();
    assert_eq!(running.delete(&session), 204);
    let took = running.time_until_idle();
    // rmcp alone cancels only after its five-second drain.
    assert!(
        took < Duration::from_secs(4),
        "the call ran on for {took:?} after DELETE"
    );
    drop(stream);
    running.stop();
}

// ── 9. Sessions are bounded ───────────────────────────────────────────────────────

#[test]
fn a_tenant_holds_at_most_max_sessions_per_tenant_live_sessions() {
    let running = Running::start(ServerPolicy {
        max_sessions_per_tenant: Some(3),
        ..ServerPolicy::default()
    });
    let sessions: Vec<String> = (0..3).map(|_| running.open_session().unwrap()).collect();
    let (status, head) = running.open_session().unwrap_err();
    assert_eq!(status, 429, "{head}");
    // Ending one makes room for one.
    assert_eq!(running.delete(&sessions[0]), 204);
    running.open_session().unwrap();
    assert_eq!(running.open_session().unwrap_err().0, 429);
    running.stop();
}

#[test]
fn opening_sessions_faster_than_sessions_per_minute_gets_429_with_retry_after() {
    let running = Running::start(ServerPolicy {
        sessions_per_minute: Some(2),
        ..ServerPolicy::default()
    });
    running.open_session().unwrap();
    running.open_session().unwrap();
    let (status, head) = running.open_session().unwrap_err();
    assert_eq!(status, 429, "{head}");
    let retry: u64 = head
        .lines()
        .find_map(|l| l.strip_prefix("retry-after:"))
        .expect("Retry-After")
        .trim()
        .parse()
        .unwrap();
    assert!((1..=30).contains(&retry), "{retry}");
    running.stop();
}

#[test]
fn an_idle_session_ends_after_session_idle_timeout_secs() {
    let running = Running::start(ServerPolicy {
        session_idle_timeout_secs: Some(1),
        ..ServerPolicy::default()
    });
    let session = running.open_session().unwrap();
    let start = Instant::now();
    loop {
        let list = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}).to_string();
        let (status, _, body) = running.exchange(Some(&session), true, &list);
        if status == 404 {
            break;
        }
        assert_eq!(status, 200, "{body}");
        assert!(start.elapsed() < HANG_GUARD, "the session never idled out");
        // Each request is traffic and restarts the clock: wait well past it.
        std::thread::sleep(Duration::from_secs(3));
    }
    running.stop();
}

#[test]
fn a_session_used_only_by_plain_calls_stays_alive_and_still_idles_out() {
    let running = Running::start(ServerPolicy {
        session_idle_timeout_secs: Some(1),
        ..ServerPolicy::default()
    });
    let session = running.open_session().unwrap();
    let echo = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": "hi"}}})
        .to_string()
    };
    // Plain calls are answered by the front, not the session's rmcp worker: they
    // must still count as traffic, or the session would end under its client.
    let start = Instant::now();
    let mut id = 0;
    while start.elapsed() < Duration::from_secs(4) {
        id += 1;
        let (status, _, body) = running.exchange(Some(&session), true, &echo(id));
        assert_eq!(status, 200, "call {id} after {:?}: {body}", start.elapsed());
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(3));
    let (status, _, body) = running.exchange(Some(&session), true, &echo(id + 1));
    assert_eq!(status, 404, "the session never idled out: {body}");
    running.stop();
}

/// A call that runs longer than `session_idle_timeout_secs` keeps its session: it gets
/// its answer, on the plain path and through the session worker (a progress token),
/// and the session is there afterwards. Before, the worker idled out under the call
/// (its stream ended unanswered, the call was killed five seconds later) and the
/// session was gone.
#[test]
fn a_call_longer_than_the_idle_timeout_keeps_its_session_and_gets_its_answer() {
    let running = Running::start(ServerPolicy {
        session_idle_timeout_secs: Some(1),
        ..ServerPolicy::default()
    });
    let session = running.open_session().unwrap();
    // sleeper ends at its 2 s deadline: twice the idle limit, without a message.
    let plain = json!({"jsonrpc": "2.0", "id": 11, "method": "tools/call",
        "params": {"name": "sleeper", "arguments": {"secs": 3}}});
    let mut tracked = plain.clone();
    tracked["id"] = json!(12);
    tracked["params"]["_meta"] = json!({"progressToken": "p"});
    for (id, message) in [(11, plain), (12, tracked)] {
        let (status, _, body) = running.exchange(Some(&session), true, &message.to_string());
        assert_eq!(status, 200, "{body}");
        assert!(body.contains(&format!("\"id\":{id}")), "no answer: {body}");
        assert!(body.contains("time limit exceeded"), "{body}");
    }
    let list = json!({"jsonrpc": "2.0", "id": 13, "method": "tools/list"}).to_string();
    let (status, _, body) = running.exchange(Some(&session), true, &list);
    assert_eq!(status, 200, "the session ended under its call: {body}");
    running.stop();
}

/// A session that idles out ends its terminal: a background process still running is
/// killed, and one the agent killed (left unreaped until its session ends) is reaped,
/// so neither is left in the process table. Before, an idled-out session's processes
/// ran on (and killed ones stayed zombies) until the server stopped.
#[test]
fn a_session_that_idles_out_kills_and_reaps_its_background_processes() {
    let workspace = tempfile::TempDir::new().unwrap();
    let policy = OperatorPolicy::with_workspace(workspace.path().to_path_buf());
    let mut options = hermetic_terminal::attach(RegistryOptions::new(policy)).unwrap();
    options.engine.cache_dir = Some(Path::new(hermetic::GUEST_BUILD_DIR).join("../../test-cache"));
    let registry = Registry::new(options).unwrap();
    assert_eq!(registry.add_bundled(), vec![]);
    let running = Running::serve(
        registry,
        ServeOptions {
            access: ServerPolicy {
                session_idle_timeout_secs: Some(1),
                ..ServerPolicy::default()
            },
            ..ServeOptions::default()
        },
        workspace,
    );
    let session = running.open_session().unwrap();
    let tool = |id: u64, name: &str, arguments: Value| -> Value {
        let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}});
        let (status, _, body) = running.exchange(Some(&session), true, &message.to_string());
        assert_eq!(status, 200, "{body}");
        let reply: Value = serde_json::from_str(body.trim().trim_start_matches("data: "))
            .unwrap_or_else(|e| panic!("{e}: {body}"));
        let text = reply["result"]["content"][0]["text"].as_str().unwrap();
        serde_json::from_str(text).unwrap()
    };
    let start = |id: u64| {
        let started = tool(
            id,
            "terminal",
            json!({"command": "sleep 300", "background": true}),
        );
        let pid = started["pid"]
            .as_u64()
            .unwrap_or_else(|| panic!("{started}"));
        (started["session_id"].as_str().unwrap().to_owned(), pid)
    };
    let (_, running_pid) = start(1);
    let (killed, killed_pid) = start(2);
    let kill = tool(
        3,
        "process",
        json!({"action": "kill", "session_id": killed}),
    );
    assert!(kill.to_string().contains("kill"), "{kill}");
    let alive = |pid: u64| Path::new(&format!("/proc/{pid}")).exists();
    assert!(
        alive(running_pid) && alive(killed_pid),
        "a zombie still has an entry"
    );
    // Idle for the limit: the session ends, and its processes with it.
    let start = Instant::now();
    while alive(running_pid) || alive(killed_pid) {
        assert!(
            start.elapsed() < HANG_GUARD,
            "left behind: running {} ({}), killed {} ({})",
            running_pid,
            alive(running_pid),
            killed_pid,
            alive(killed_pid)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let list = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}).to_string();
    assert_eq!(running.exchange(Some(&session), true, &list).0, 404);
    running.stop();
}

/// A plain session call whose client goes away is cancelled, and the audit log says
/// so. Before, the front dropped the call's future: the call was cancelled, but no
/// record of it was ever written.
#[test]
fn a_plain_session_call_dropped_by_its_client_is_audited_as_cancelled() {
    let workspace = tempfile::TempDir::new().unwrap();
    let log = workspace.path().join("audit.jsonl");
    let audit = Arc::new(hermetic_server::audit::AuditLog::open(&log).unwrap());
    let registry = registry(workspace.path());
    let running = Running::serve(
        registry,
        ServeOptions {
            audit: Some(Arc::clone(&audit)),
            ..ServeOptions::default()
        },
        workspace,
    );
    let (_session, stream) = running.long_call_in_a_session();
    drop(stream);
    let took = running.time_until_idle();
    assert!(took < AT_ONCE, "the call ran on for {took:?}");
    let calls: Vec<Value> = audit
        .tail(100)
        .unwrap()
        .into_iter()
        .filter(|event| event["tool"] == "spin_long")
        .collect();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(
        (calls[0]["kind"].as_str(), calls[0]["outcome"].as_str()),
        (Some("call"), Some("cancelled")),
        "{}",
        calls[0]
    );
    running.stop();
}

// ── 10. Slow and idle connections ─────────────────────────────────────────────────

/// An address holding `max_connections_per_ip` connections that sent nothing: its next
/// connection is on probation and, sending nothing either, is closed within a second
/// (not after the two-minute header timeout).
#[test]
fn unauthenticated_connections_beyond_max_connections_per_ip_are_closed() {
    let running = Running::start(ServerPolicy {
        max_connections_per_ip: Some(4),
        // Far longer than AT_ONCE: a close seen in time is the cap, not the timeout.
        header_timeout_secs: Some(120),
        ..ServerPolicy::default()
    });
    let held: Vec<TcpStream> = (0..4).map(|_| running.connect()).collect();
    // Let the server accept them (it counts accepted connections).
    std::thread::sleep(Duration::from_millis(300));
    let mut refused = running.connect();
    assert!(
        closed_within(&mut refused, AT_ONCE),
        "a fifth connection was kept open"
    );
    // Closing one frees its place (once the server saw it close).
    drop(held);
    let start = Instant::now();
    loop {
        let mut stream = running.connect();
        let body = call(1, "echo", true);
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Mcp-Method: tools/call\r\nMcp-Name: echo\r\nConnection: close\r\n\
             Content-Length: {}\r\n\r\n{body}",
            running.addr,
            body.len()
        );
        // A refused connection may reset the write or the read: try again.
        let mut first = [0_u8; 12];
        if stream.write_all(request.as_bytes()).is_ok()
            && let Ok(n) = stream.read(&mut first)
            && n > 0
        {
            assert!(b"HTTP/1.1 200".starts_with(&first[..n]), "{first:?}");
            break;
        }
        assert!(start.elapsed() < HANG_GUARD, "places were never freed");
        std::thread::sleep(Duration::from_millis(50));
    }
    running.stop();
}

#[test]
fn at_max_connections_an_idle_connection_makes_room_and_when_all_are_busy_the_request_gets_503() {
    let running = Running::start(ServerPolicy {
        max_connections: Some(3),
        header_timeout_secs: Some(120),
        ..ServerPolicy::default()
    });
    let mut held: Vec<TcpStream> = (0..3).map(|_| running.connect()).collect();
    std::thread::sleep(Duration::from_millis(300));
    // All three places are taken by connections that sent nothing: the next client's
    // request is still answered, and the oldest idle connection is closed for it.
    let (status, _, body) = running.exchange(None, false, &call(1, "echo", true));
    assert_eq!(status, 200, "{body}");
    assert!(
        closed_within(&mut held[0], AT_ONCE),
        "the oldest idle one stayed"
    );
    drop(held);
    // Three calls in flight hold every place: a fourth connection's request is read
    // and refused with 503 and Retry-After, not reset.
    let start = Instant::now();
    let mut busy = Vec::new();
    while busy.len() < 3 {
        let mut stream = running.connect();
        running.post(&mut stream, None, false, &call(2, "spin_long", true));
        busy.push(stream);
        if running.server.calls_in_flight() < busy.len() {
            // A place not yet freed by a dropped connection: this one was refused.
            std::thread::sleep(Duration::from_millis(100));
            if running.server.calls_in_flight() < busy.len() {
                busy.pop();
            }
        }
        assert!(start.elapsed() < HANG_GUARD, "never three calls in flight");
    }
    let (status, head, body) = running.exchange(None, false, &call(3, "echo", true));
    assert_eq!(status, 503, "{head}{body}");
    assert!(head.contains("retry-after: 1"), "{head}");
    drop(busy);
    running.stop();
}

#[test]
fn a_connection_that_sends_no_complete_headers_is_closed_after_header_timeout_secs() {
    let running = Running::start(ServerPolicy {
        header_timeout_secs: Some(1),
        ..ServerPolicy::default()
    });
    // Idle: nothing sent at all.
    let mut idle = running.connect();
    // Slowloris: half a request head.
    let mut slow = running.connect();
    write!(slow, "POST /mcp HTTP/1.1\r\nHost: {}\r\n", running.addr).unwrap();
    assert!(
        closed_within(&mut idle, AT_ONCE),
        "an idle connection was kept"
    );
    assert!(
        closed_within(&mut slow, AT_ONCE),
        "a slow-header connection was kept"
    );
    running.stop();
}

// ── 11. Every request with an id gets a response ──────────────────────────────────

#[test]
fn malformed_http_bodies_get_400_with_the_json_rpc_error_for_their_id() {
    let running = Running::start(ServerPolicy::default());
    let (status, _, body) = running.exchange(None, false, "{not json");
    assert_eq!(status, 400, "{body}");
    let reply: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (reply["id"].clone(), reply["error"]["code"].clone()),
        (Value::Null, json!(-32700))
    );
    // Params that do not fit, missing, or missing the tool's name: invalid params (not
    // "method not found", and no 404 for a sessionless call).
    for bad_params in [
        r#"{"jsonrpc":"2.0","id":31,"method":"tools/call","params":"nope"}"#,
        r#"{"jsonrpc":"2.0","id":31,"method":"tools/call"}"#,
        r#"{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"arguments":{}}}"#,
    ] {
        let (status, _, body) = running.exchange(None, false, bad_params);
        assert_eq!(status, 400, "{bad_params}: {body}");
        let reply: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            (reply["id"].clone(), reply["error"]["code"].clone()),
            (json!(31), json!(-32602)),
            "{bad_params}"
        );
    }
    running.stop();
}

#[test]
fn a_call_cancelled_at_shutdown_still_gets_its_response() {
    let running = Running::start_with(ServerPolicy::default(), Duration::from_millis(500));
    let mut stream = running.connect();
    running.post(&mut stream, None, false, &call(77, "spin_long", true));
    running.wait_for_calls(1);
    let started = Instant::now();
    running.shutdown.cancel();
    let (status, _, body) = response(&mut stream);
    assert_eq!(status, 200, "{body}");
    let reply: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(reply["id"], 77);
    assert_eq!(reply["result"]["isError"], true, "{body}");
    assert!(body.contains("cancel"), "{body}");
    assert!(started.elapsed() < AT_ONCE);
    let mut running = running;
    running.done.take().unwrap().join().unwrap();
}

/// One stdio session over in-memory pipes, and the client's ends of them.
struct StdioSession {
    runtime: tokio::runtime::Runtime,
    server: McpServer,
    to: tokio::io::DuplexStream,
    from: tokio::io::BufReader<tokio::io::DuplexStream>,
    shutdown: tokio_util::sync::CancellationToken,
    serving: Option<tokio::task::JoinHandle<()>>,
    _workspace: tempfile::TempDir,
}

impl StdioSession {
    fn start(shutdown_grace: Duration) -> Self {
        Self::with_pipes(shutdown_grace, 1 << 20, 1 << 20)
    }

    /// A session whose stdin and stdout hold at most `stdin` and `stdout` bytes unread.
    fn with_pipes(shutdown_grace: Duration, stdin: usize, stdout: usize) -> Self {
        let workspace = tempfile::TempDir::new().unwrap();
        let server = McpServer::new(
            Arc::new(registry(workspace.path())),
            ServeOptions {
                shutdown_grace,
                ..ServeOptions::default()
            },
        );
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (to, server_read) = tokio::io::duplex(stdin);
        let (server_write, from) = tokio::io::duplex(stdout);
        let shutdown = tokio_util::sync::CancellationToken::new();
        let serving = {
            let (server, shutdown) = (server.clone(), shutdown.clone());
            runtime.spawn(async move {
                stdio::serve_streams(&server, server_read, server_write, shutdown)
                    .await
                    .unwrap();
            })
        };
        Self {
            runtime,
            server,
            to,
            from: tokio::io::BufReader::new(from),
            shutdown,
            serving: Some(serving),
            _workspace: workspace,
        }
    }
}

async fn send_line(to: &mut tokio::io::DuplexStream, line: &[u8]) {
    use tokio::io::AsyncWriteExt;
    to.write_all(line).await.unwrap();
    to.write_all(b"\n").await.unwrap();
}

async fn read_message(from: &mut tokio::io::BufReader<tokio::io::DuplexStream>) -> Value {
    use tokio::io::AsyncBufReadExt;
    let mut line = String::new();
    tokio::time::timeout(HANG_GUARD, from.read_line(&mut line))
        .await
        .expect("no message in time")
        .unwrap();
    serde_json::from_str(&line).unwrap()
}

async fn stdio_handshake(
    to: &mut tokio::io::DuplexStream,
    from: &mut tokio::io::BufReader<tokio::io::DuplexStream>,
) {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": {"name": "hardening", "version": "0"}}});
    send_line(to, init.to_string().as_bytes()).await;
    assert!(read_message(from).await["result"].is_object());
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    send_line(to, initialized.to_string().as_bytes()).await;
}

#[test]
fn stdio_lines_that_are_not_json_or_too_long_get_the_json_rpc_error_they_are_owed() {
    let mut s = StdioSession::start(Duration::from_secs(1));
    let (serving, shutdown) = (s.serving.take().unwrap(), s.shutdown.clone());
    let (to, from) = (&mut s.to, &mut s.from);
    s.runtime.block_on(async {
        stdio_handshake(to, from).await;
        // Not JSON: a parse error with id null.
        send_line(to, b"this is not json").await;
        let reply = read_message(from).await;
        assert_eq!((reply["id"].clone(), reply["error"]["code"].clone()), (Value::Null, json!(-32700)));
        // JSON whose params do not fit: invalid params, with its id.
        for line in [
            &br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":7}"#[..],
            br#"{"jsonrpc":"2.0","id":9,"method":"tools/call"}"#,
            br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":["echo"]}}"#,
        ] {
            send_line(to, line).await;
            let reply = read_message(from).await;
            assert_eq!((reply["id"].clone(), reply["error"]["code"].clone()), (json!(9), json!(-32602)));
        }
        // Over the line limit: an error with the id its head names.
        let mut huge = br#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"echo","arguments":{"message":""#.to_vec();
        huge.resize(stdio::MAX_LINE + 10, b'x');
        huge.extend_from_slice(br#""}}}"#);
        send_line(to, &huge).await;
        let reply = read_message(from).await;
        assert_eq!(reply["id"], 10, "{reply}");
        assert_eq!(reply["error"]["code"], -32600, "{reply}");
        // The session is still fine.
        send_line(to, call(11, "echo", false).as_bytes()).await;
        let reply = read_message(from).await;
        assert_eq!(reply["id"], 11, "{reply}");
        assert!(reply["result"].is_object(), "{reply}");
        shutdown.cancel();
        serving.await.unwrap();
    });
}

#[test]
fn stdio_calls_cancelled_at_shutdown_still_get_their_responses() {
    let mut s = StdioSession::start(Duration::from_millis(500));
    let (serving, shutdown) = (s.serving.take().unwrap(), s.shutdown.clone());
    let (to, from, server) = (&mut s.to, &mut s.from, &s.server);
    s.runtime.block_on(async {
        stdio_handshake(to, from).await;
        // A plain call (run by the transport) and one with a progress token (run by
        // rmcp's worker).
        send_line(to, call(21, "spin_long", false).as_bytes()).await;
        let mut tracked: Value = serde_json::from_str(&call(22, "spin_long", false)).unwrap();
        tracked["params"]["_meta"] = json!({"progressToken": "p"});
        send_line(to, tracked.to_string().as_bytes()).await;
        let start = Instant::now();
        while server.calls_in_flight() < 2 {
            assert!(start.elapsed() < HANG_GUARD, "the calls never started");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        shutdown.cancel();
        let mut answered = Vec::new();
        while answered.len() < 2 {
            let reply = read_message(from).await;
            if reply.get("method").is_some() {
                continue; // a progress notification
            }
            assert_eq!(reply["result"]["isError"], true, "{reply}");
            answered.push(reply["id"].as_u64().unwrap());
        }
        answered.sort_unstable();
        assert_eq!(answered, [21, 22]);
        serving.await.unwrap();
    });
}

#[test]
fn a_plain_stdio_call_gets_the_answer_the_session_worker_gives() {
    let mut s = StdioSession::start(Duration::from_secs(1));
    let (serving, shutdown) = (s.serving.take().unwrap(), s.shutdown.clone());
    let (to, from) = (&mut s.to, &mut s.from);
    s.runtime.block_on(async {
        stdio_handshake(to, from).await;
        for (id, tool) in [(7, "echo"), (8, "no_such_tool")] {
            let plain = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": tool, "arguments": {"message": "hi"}}});
            send_line(to, plain.to_string().as_bytes()).await;
            let direct = read_message(from).await;
            // A progress token sends the same call through rmcp's worker.
            let mut tracked = plain.clone();
            tracked["params"]["_meta"] = json!({"progressToken": "p"});
            send_line(to, tracked.to_string().as_bytes()).await;
            let through_rmcp = read_message(from).await;
            assert_eq!(direct, through_rmcp);
        }
        let plain = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": "hi"}}});
        send_line(to, plain.to_string().as_bytes()).await;
        let answer = read_message(from).await;
        assert_eq!(answer["id"], 9);
        let text = answer["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("hi"), "{answer}");
        shutdown.cancel();
        serving.await.unwrap();
    });
}

#[test]
fn notifications_cancelled_ends_a_plain_stdio_call_at_once() {
    let mut s = StdioSession::start(Duration::from_secs(1));
    let (serving, shutdown) = (s.serving.take().unwrap(), s.shutdown.clone());
    let (to, from, server) = (&mut s.to, &mut s.from, &s.server);
    s.runtime.block_on(async {
        stdio_handshake(to, from).await;
        send_line(to, call(31, "spin_long", false).as_bytes()).await;
        wait_for_a_call(server).await;
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 31, "reason": "test"}});
        let cancelled = Instant::now();
        send_line(to, cancel.to_string().as_bytes()).await;
        let reply = read_message(from).await;
        assert!(cancelled.elapsed() < AT_ONCE, "{:?}", cancelled.elapsed());
        assert_eq!(reply["id"], 31, "{reply}");
        assert_eq!(reply["result"]["isError"], true, "{reply}");
        let text = reply["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("cancel"), "{text}");
        // The session goes on.
        send_line(to, call(32, "echo", false).as_bytes()).await;
        assert!(read_message(from).await["result"].is_object());
        shutdown.cancel();
        serving.await.unwrap();
    });
}

#[test]
fn closing_stdin_cancels_a_running_plain_call_after_the_grace_and_answers_it() {
    let mut s = StdioSession::start(Duration::from_secs(1));
    let serving = s.serving.take().unwrap();
    let (to, from, server) = (&mut s.to, &mut s.from, &s.server);
    s.runtime.block_on(async {
        use tokio::io::AsyncWriteExt;
        stdio_handshake(to, from).await;
        send_line(to, call(41, "spin_long", false).as_bytes()).await;
        wait_for_a_call(server).await;
        let closed = Instant::now();
        to.shutdown().await.unwrap();
        let reply = read_message(from).await;
        // rmcp's five-second drain for calls in flight, then at once (not the call's
        // 60 s deadline).
        assert!(
            closed.elapsed() < Duration::from_secs(5) + AT_ONCE,
            "{:?}",
            closed.elapsed()
        );
        assert_eq!(reply["id"], 41, "{reply}");
        assert_eq!(reply["result"]["isError"], true, "{reply}");
        let text = reply["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("cancel"), "{text}");
        tokio::time::timeout(HANG_GUARD, serving)
            .await
            .expect("the session did not end")
            .unwrap();
        assert_eq!(server.calls_in_flight(), 0);
    });
}

#[test]
fn a_stdio_client_that_does_not_read_its_answers_is_not_read_from_without_bound() {
    const CALLS: u64 = 4000;
    let mut s = StdioSession::with_pipes(Duration::from_secs(1), 16 << 10, 4 << 10);
    let (serving, shutdown) = (s.serving.take().unwrap(), s.shutdown.clone());
    let (mut to, from) = (
        std::mem::replace(&mut s.to, tokio::io::duplex(1).0),
        &mut s.from,
    );
    s.runtime.block_on(async {
        stdio_handshake(&mut to, from).await;
        // Plain calls, and every tenth through rmcp's worker (a progress token): both
        // kinds hold their place until answered.
        let sent = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let writer = {
            let sent = Arc::clone(&sent);
            tokio::spawn(async move {
                for id in 1..=CALLS {
                    let mut message: Value =
                        serde_json::from_str(&call(id, "echo", false)).unwrap();
                    if id % 10 == 0 {
                        message["params"]["_meta"] = json!({"progressToken": id});
                    }
                    send_line(&mut to, message.to_string().as_bytes()).await;
                    sent.store(id, std::sync::atomic::Ordering::Relaxed);
                }
                to
            })
        };
        // Nothing is read from stdout: once it is full the server must stop reading
        // stdin (no progress for half a second), far short of every call.
        let start = Instant::now();
        let mut last = 0;
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let now = sent.load(std::sync::atomic::Ordering::Relaxed);
            if now == last || now == CALLS || start.elapsed() > HANG_GUARD {
                break;
            }
            last = now;
        }
        let written = sent.load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            written < CALLS / 4,
            "the server read {written} of {CALLS} calls its client never read the answers of"
        );
        // Reading the answers lets the rest in; every call is answered once.
        let mut answered = std::collections::BTreeSet::new();
        while answered.len() < CALLS as usize {
            let reply = read_message(from).await;
            if reply.get("method").is_some() {
                continue; // a progress notification
            }
            assert!(reply["result"].is_object(), "{reply}");
            assert!(answered.insert(reply["id"].as_u64().unwrap()), "{reply}");
        }
        assert_eq!(answered.last(), Some(&CALLS));
        let _to = tokio::time::timeout(HANG_GUARD, writer)
            .await
            .unwrap()
            .unwrap();
        shutdown.cancel();
        serving.await.unwrap();
    });
}

/// Waits until `server` runs a call.
async fn wait_for_a_call(server: &McpServer) {
    let start = Instant::now();
    while server.calls_in_flight() == 0 {
        assert!(start.elapsed() < HANG_GUARD, "the call never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
