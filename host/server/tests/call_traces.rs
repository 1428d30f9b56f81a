//! Traces of tool calls, per the OpenTelemetry conventions for MCP: the trace id of a
//! client's `_meta.traceparent` is written in the call's audit record — on the
//! sessionless path the front answers itself and on a legacy session (rmcp's
//! handler) — and a malformed one is ignored. With the `otlp` feature the call's span
//! (`tools/call echo`, kind server, child of the client's span) reaches a real
//! OTLP/HTTP receiver in this process, and a call without a trace context starts a
//! trace whose id is the one its audit record names.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

use hermetic_server::audit::AuditLog;
use hermetic_server::{McpServer, ServeOptions};
use hermetic_test_support::in_process::{Serving, serve_http};
use hermetic_test_support::registry::bare_registry;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const HANG_GUARD: Duration = Duration::from_secs(45);
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";

/// A server with an audit log (and spans sent to `otlp_endpoint`, when given).
fn start(dir: &Path, otlp_endpoint: Option<String>) -> (Serving, Arc<AuditLog>) {
    let audit = Arc::new(AuditLog::open(&dir.join("audit.jsonl")).unwrap());
    let options = ServeOptions {
        audit: Some(Arc::clone(&audit)),
        otlp_endpoint,
        ..ServeOptions::default()
    };
    let server = McpServer::new(
        Arc::new(bare_registry(
            hermetic::OperatorPolicy::with_workspace(dir.to_path_buf()),
            &["echo"],
        )),
        options,
    );
    (serve_http(server, HANG_GUARD), audit)
}

/// A sessionless (2026-07-28) call of `echo` whose `_meta` carries `traceparent`.
fn sessionless_call(http: &Serving, traceparent: Option<&str>) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}
    });
    if let Some(t) = traceparent {
        meta["traceparent"] = json!(t);
    }
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "hi"}, "_meta": meta}})
    .to_string();
    post(
        http,
        &body,
        "2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo",
        None,
    )
}

/// POSTs `body` with `MCP-Protocol-Version: {version}` (which may carry more header
/// lines after it) on session `session`.
fn post(http: &Serving, body: &str, version: &str, session: Option<&str>) -> Value {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(&http.addr).unwrap();
    stream.set_read_timeout(Some(HANG_GUARD)).unwrap();
    let session = session
        .map(|s| format!("Mcp-Session-Id: {s}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {version}\r\n\
         {session}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        http.addr,
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let id = head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case("mcp-session-id")
            .then(|| v.trim().to_owned())
    });
    // An event stream's data line, or plain JSON.
    let json = body
        .lines()
        .find_map(|l| l.strip_prefix("data: ").filter(|d| d.starts_with('{')))
        .unwrap_or(body.trim());
    let mut reply: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {response}"));
    if let Some(id) = id {
        reply["session"] = json!(id);
    }
    reply
}

/// A legacy session's call of `echo` with `traceparent` (rmcp's handler path).
fn session_call(http: &Serving, traceparent: &str) -> Value {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}})
    .to_string();
    let opened = post(http, &init, "2025-06-18", None);
    let session = opened["session"].as_str().unwrap().to_owned();
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(&http.addr).unwrap();
    stream.set_read_timeout(Some(HANG_GUARD)).unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\n\
         Mcp-Session-Id: {session}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{initialized}",
        http.addr,
        initialized.len()
    )
    .unwrap();
    let mut ignored = String::new();
    let _ = stream.read_to_string(&mut ignored);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"message": "hi"},
        "_meta": {"traceparent": traceparent}}})
    .to_string();
    post(http, &call, "2025-06-18", Some(&session))
}

/// The call records, oldest first.
fn calls(audit: &AuditLog) -> Vec<Value> {
    let mut calls: Vec<Value> = audit
        .tail(100)
        .unwrap()
        .into_iter()
        .filter(|e| e["kind"] == "call")
        .collect();
    calls.sort_by_key(|e| e["seq"].as_u64());
    calls
}

#[test]
fn a_client_s_trace_id_is_written_in_the_call_s_audit_record() {
    let dir = tempfile::TempDir::new().unwrap();
    let (http, audit) = start(dir.path(), None);
    let traceparent = format!("00-{TRACE_ID}-{PARENT_ID}-01");
    let reply = sessionless_call(&http, Some(&traceparent));
    assert!(reply.to_string().contains("hi"), "{reply}");
    let other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
    let reply = session_call(&http, other);
    assert!(reply["result"].is_object(), "{reply}");
    // Malformed (upper case): ignored, the call runs, no trace id is made up.
    sessionless_call(&http, Some(&traceparent.to_ascii_uppercase()));
    sessionless_call(&http, None);
    let records = calls(&audit);
    let ids: Vec<&Value> = records.iter().map(|r| &r["trace_id"]).collect();
    assert_eq!(
        ids,
        [
            &json!(TRACE_ID),
            &json!("0af7651916cd43dd8448eb211c80319c"),
            &Value::Null,
            &Value::Null
        ],
        "{records:?}"
    );
    http.stop();
}

/// Requests a receiver got: path and body.
#[cfg(feature = "otlp")]
type Received = Arc<parking_lot::Mutex<Vec<(String, Vec<u8>)>>>;

/// A real OTLP/HTTP receiver: every request's path and body, answered 200.
#[cfg(feature = "otlp")]
struct Receiver {
    addr: String,
    got: Received,
}

#[cfg(feature = "otlp")]
impl Receiver {
    fn start() -> Self {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let got: Received = Arc::default();
        let store = Arc::clone(&got);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let store = Arc::clone(&store);
                std::thread::spawn(move || {
                    let mut writer = stream.try_clone().unwrap();
                    let mut reader = BufReader::new(stream);
                    // Keep-alive: requests one after another on the connection.
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
                        let mut length = 0usize;
                        loop {
                            let mut header = String::new();
                            reader.read_line(&mut header).unwrap();
                            if header.trim().is_empty() {
                                break;
                            }
                            if let Some((n, v)) = header.split_once(':')
                                && n.eq_ignore_ascii_case("content-length")
                            {
                                length = v.trim().parse().unwrap();
                            }
                        }
                        let mut body = vec![0; length];
                        reader.read_exact(&mut body).unwrap();
                        store.lock().push((path, body));
                        writer
                            .write_all(
                                b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n",
                            )
                            .unwrap();
                    }
                });
            }
        });
        Self { addr, got }
    }
}

#[cfg(feature = "otlp")]
fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

#[cfg(feature = "otlp")]
#[test]
fn with_otlp_each_call_s_span_reaches_the_receiver_under_its_trace() {
    let receiver = Receiver::start();
    let dir = tempfile::TempDir::new().unwrap();
    let (http, audit) = start(
        dir.path(),
        Some(format!("http://{}/v1/traces", receiver.addr)),
    );
    sessionless_call(&http, Some(&format!("00-{TRACE_ID}-{PARENT_ID}-01")));
    sessionless_call(&http, None);
    // The batch processor sends at shutdown (the transport's shutdown hooks).
    let server = http.server.clone();
    http.stop();
    server.run_shutdown_hooks();
    let records = calls(&audit);
    assert_eq!(records[0]["trace_id"], TRACE_ID);
    let fresh = records[1]["trace_id"].as_str().unwrap().to_owned();
    assert_eq!(fresh.len(), 32, "a new trace: {fresh}");
    assert_ne!(fresh, TRACE_ID);
    let got = receiver.got.lock();
    assert!(!got.is_empty(), "nothing was exported");
    assert!(got.iter().all(|(path, _)| path == "/v1/traces"));
    let body: Vec<u8> = got.iter().flat_map(|(_, b)| b.clone()).collect();
    let has = |needle: &[u8]| body.windows(needle.len()).any(|w| w == needle);
    // protobuf bytes: ids raw, strings as written.
    assert!(has(&unhex(TRACE_ID)), "the client's trace");
    assert!(has(&unhex(PARENT_ID)), "its span is the parent");
    assert!(has(&unhex(&fresh)), "the new trace of the other call");
    assert!(has(b"tools/call echo"));
    assert!(has(b"gen_ai.tool.name"));
    assert!(has(b"mcp.method.name"));
    assert!(has(b"hermetic"), "the service name");
}
