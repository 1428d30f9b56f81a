//! The Python SDK lists and calls tools over stdio and HTTP in both protocol eras and
//! gets errors and progress; an HTTP client keeps its connection; a toolset selection
//! limits what is listed and callable; other paths are not found.
use super::harness::{Dirs, HttpServer, Running, TEST_TOOLS, Target, client_with, mcp_raw, run};
use serde_json::{Value, json};
use std::io::Read;

fn expected_basic() -> Value {
    json!({
        "server": "hermetic",
        "tools": ["echo", "fail", "progress", "shaped", "spin_long"],
        "echo_schema": {
            "type": "object",
            "properties": {
                "message": {"type": "string", "description": "Text to echo"},
                "times": {"type": "integer", "minimum": 1, "maximum": 10}
            },
            "required": ["message"]
        },
        "echo_description": "Echo a message back",
        "echo": {"is_error": false, "text": {"echo": "hihi", "tenant": "default"}},
        "fail": {"is_error": true, "text": {"error": "[TOOL_ERROR] the disk is on fire"}},
        // A tool the server does not offer is a protocol error, as the MCP spec asks.
        "unknown": {"protocol_error": {"code": -32602, "message": "Unknown tool: no_such_tool"}},
        // A tool that declares its results' shape: listed as outputSchema, its results
        // sent as structuredContent beside the text; a tool without one has neither.
        "shaped_schema": {
            "type": "object",
            "properties": {"count": {"type": "integer"}},
            "required": ["count"]
        },
        "echo_output_schema": null,
        "shaped": {"structured": {"count": 3}, "is_error": false, "text": {"count": 3}},
    })
}

/// Checks a `basic` report; returns the protocol version negotiated.
pub fn check_basic(report: &Value) -> String {
    let expected = expected_basic();
    for key in [
        "server",
        "tools",
        "echo_schema",
        "echo_description",
        "echo",
        "fail",
        "unknown",
        "shaped_schema",
        "echo_output_schema",
        "shaped",
    ] {
        assert_eq!(report[key], expected[key], "{key}: {report:#}");
    }
    // A result its own output schema does not allow is the tool's error.
    assert_eq!(report["broken"]["is_error"], true, "{report:#}");
    assert_eq!(report["broken"]["structured"], Value::Null, "{report:#}");
    let broken = report["broken"]["text"]["error"].as_str().unwrap();
    assert!(
        broken.contains("output_schema") && broken.contains("/count"),
        "{broken}"
    );
    // A schema violation is a tool result with isError too, carrying the registry's
    // JSON error.
    assert_eq!(report["invalid"]["is_error"], true, "{report:#}");
    let invalid = report["invalid"]["text"]["error"].as_str().unwrap();
    assert!(
        invalid.starts_with("Invalid arguments for echo: (arguments): "),
        "{invalid}"
    );
    // Every progress call reached the client, in order, before the result.
    assert_eq!(
        report["progress"]["events"],
        json!([
            [1.0, 3.0, "step 1 of 3"],
            [2.0, 3.0, "step 2 of 3"],
            [3.0, 3.0, "step 3 of 3"]
        ])
    );
    assert_eq!(report["progress"]["result"]["is_error"], false);
    assert_eq!(report["progress"]["result"]["text"]["steps"], 3);
    report["protocol"].as_str().unwrap().to_owned()
}

#[test]
fn stdio_legacy_client_lists_calls_and_gets_errors_and_progress() {
    let dirs = Dirs::new(TEST_TOOLS);
    let (report, _) = run("basic", "legacy", &Target::Stdio(&dirs));
    assert!(check_basic(&report).as_str() < "2026-07-28");
}

#[test]
fn stdio_modern_client_lists_calls_and_gets_errors_and_progress() {
    let dirs = Dirs::new(TEST_TOOLS);
    let (report, _) = run("basic", "auto", &Target::Stdio(&dirs));
    assert_eq!(check_basic(&report), "2026-07-28");
}

#[test]
fn http_legacy_client_lists_calls_and_gets_errors_and_progress() {
    let dirs = Dirs::new(TEST_TOOLS);
    let server = HttpServer::start(&dirs);
    let (report, client) = run("basic", "legacy", &Target::Http(&server));
    assert!(check_basic(&report).as_str() < "2026-07-28");
    // The client ended its session with a DELETE the SDK accepts without a warning.
    client.stderr.wait_closed();
    assert!(
        !client.stderr.text().contains("Session termination failed"),
        "{}",
        client.stderr.text()
    );
}

#[test]
fn http_modern_client_lists_calls_and_gets_errors_and_progress() {
    let dirs = Dirs::new(TEST_TOOLS);
    let server = HttpServer::start(&dirs);
    let (report, _) = run("basic", "auto", &Target::Http(&server));
    assert_eq!(check_basic(&report), "2026-07-28");
}

/// Runs the `reuse` scenario (ten echo calls, then one call with progress) and checks
/// that every call on one session (or sessionless) came back right, over one kept-alive
/// connection, as plain JSON when nothing but the result was on its way, and as an
/// event stream when progress was. Returns the protocol negotiated.
fn check_reuse(mode: &str) -> String {
    let dirs = Dirs::new(TEST_TOOLS);
    let server = HttpServer::start(&dirs);
    let mut client = Running::spawn(client_with(
        "reuse",
        mode,
        &Target::Http(&server),
        &[
            "--call",
            r#"echo={"message": "hi"}"#,
            "--call",
            r#"progress={"steps": 2}"#,
        ],
    ));
    let report = client.report();
    let echo = json!({"is_error": false, "text": {"echo": "hi", "tenant": "default"}});
    assert_eq!(report["results"], json!(vec![echo; 10]), "{report:#}");
    assert_eq!(report["with_progress"]["text"]["steps"], 2, "{report:#}");
    assert_eq!(report["progress_reports"], 2, "{report:#}");
    let posts = report["posts"].as_array().unwrap();
    assert_eq!(posts.len(), 11, "{report:#}");
    let kinds: Vec<&str> = posts
        .iter()
        .map(|p| p["content_type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds[..10], ["application/json"; 10], "{report:#}");
    assert_eq!(kinds[10], "text/event-stream", "{report:#}");
    let ports: std::collections::BTreeSet<u64> =
        posts.iter().map(|p| p["port"].as_u64().unwrap()).collect();
    assert_eq!(ports.len(), 1, "a new connection per call: {report:#}");
    report["protocol"].as_str().unwrap().to_owned()
}

#[test]
fn http_legacy_client_keeps_its_connection_and_gets_plain_json_results() {
    assert!(check_reuse("legacy").as_str() < "2026-07-28");
}

#[test]
fn http_modern_client_keeps_its_connection_and_gets_plain_json_results() {
    assert_eq!(check_reuse("auto"), "2026-07-28");
}

#[test]
fn other_http_paths_are_not_found() {
    let dirs = Dirs::new(&["echo"]);
    let server = HttpServer::start(&dirs);
    let addr = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp");
    let get = |path: &str| {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        std::io::Write::write_all(
            &mut stream,
            format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    };
    let response = get("/elsewhere");
    assert!(response.starts_with("HTTP/1.1 404"), "{response}");
    // The console is on (its token is the one serve made): `/` leads there.
    let response = get("/");
    assert!(
        response.starts_with("HTTP/1.1 303") && response.contains("location: /console"),
        "{response}"
    );
}

/// One sessionless (2026-07-28) JSON-RPC request over a fresh connection, the way a
/// minimal client without an SDK would send it; returns the JSON-RPC `result`.
fn post(server: &HttpServer, method: &str, params: Value) -> Value {
    post_reply(server, method, params)["result"].clone()
}

/// [`post`], returning the whole JSON-RPC reply (`result` or `error`).
fn post_reply(server: &HttpServer, method: &str, params: Value) -> Value {
    let reply = mcp_raw(server, None, method, params, &[]);
    assert_eq!(reply.status, 200, "{} {}", reply.head, reply.body);
    serde_json::from_str(reply.body.trim())
        .unwrap_or_else(|e| panic!("not a JSON response ({e}): {} {}", reply.head, reply.body))
}

#[test]
fn a_toolset_selection_limits_what_is_listed_and_callable() {
    let dirs = Dirs::new(&["echo"]);
    // Bundled tools too, but only the file toolset is served.
    let global: Vec<String> = dirs
        .global_args()
        .into_iter()
        .filter(|a| a != "--no-bundled")
        .collect();
    let server = HttpServer::start_with(global, &["--toolsets", "file"]);
    let listed = post(&server, "tools/list", json!({}));
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["patch", "read_file", "search_files", "write_file"]);
    // echo is loaded but outside the selection: to this client it does not exist.
    let called = post_reply(
        &server,
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "hi"}}),
    );
    assert_eq!(
        called["error"],
        json!({"code": -32602, "message": "Unknown tool: echo"}),
        "{called}"
    );
    assert_eq!(called.get("result"), None, "{called}");
}
