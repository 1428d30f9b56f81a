//! The `hermetic serve` binary driven by a real MCP client — the official Python SDK
//! (`mcp` on PyPI, installed by .ci/run) through tests/mcp/client.py — over stdio and
//! streamable HTTP, in both protocol eras (`legacy`: the initialize handshake; `auto`:
//! 2026-07-28 discovery).
//!
//! Waits are bounded by [`HANG_GUARD`] so a broken server fails the test instead of
//! hanging it; nothing asserts on how long anything took.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// Longest any wait may take before the test gives up (a hang guard, not a timing
/// assertion: on a healthy machine every wait ends in well under a second).
const HANG_GUARD: Duration = Duration::from_secs(120);

/// The message the handler logs when a call ends because the client cancelled it.
const CANCELLED_LOG: &str = "call cancelled by the client";
/// The error a cancelled call ends with.
const CANCELLED_ERROR: &str =
    "[TOOL_ERROR] cancelled: the caller cancelled the call before it finished";

fn guest(name: &str) -> PathBuf {
    Path::new(hermetic::GUEST_BUILD_DIR).join(format!("{name}.wasm"))
}

fn client_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp/client.py")
}

/// A tools directory and a workspace for one server.
struct Dirs {
    tools: TempDir,
    workspace: TempDir,
}

impl Dirs {
    fn new(tools: &[&str]) -> Self {
        let dirs = Self {
            tools: TempDir::new().unwrap(),
            workspace: TempDir::new().unwrap(),
        };
        for name in tools {
            dirs.add(name);
        }
        dirs
    }

    fn add(&self, name: &str) {
        std::fs::copy(guest(name), self.tools.path().join(format!("{name}.wasm"))).unwrap();
    }

    fn remove(&self, name: &str) {
        std::fs::remove_file(self.tools.path().join(format!("{name}.wasm"))).unwrap();
    }

    /// `hermetic` arguments before the subcommand.
    fn global_args(&self) -> Vec<String> {
        vec![
            "--no-bundled".into(),
            "--tools-dir".into(),
            self.tools.path().display().to_string(),
            "--workspace".into(),
            self.workspace.path().display().to_string(),
            "--log-level".into(),
            "warn,hermetic=info".into(),
        ]
    }
}

fn hermetic_env(cmd: &mut Command) -> &mut Command {
    // The suites' shared compiled-code cache; plain log lines to match on.
    cmd.env(
        "HERMETIC_CACHE_DIR",
        Path::new(hermetic::GUEST_BUILD_DIR).join("../../test-cache"),
    )
    .env("NO_COLOR", "1")
    .env_remove("HERMETIC_LOG")
}

/// What a pipe delivered so far.
#[derive(Default)]
struct Collected {
    lines: Vec<String>,
    closed: bool,
}

/// Lines a child writes to one pipe, collected by a thread.
#[derive(Clone)]
struct Lines {
    inner: Arc<(Mutex<Collected>, Condvar)>,
}

impl Lines {
    fn collect(pipe: impl Read + Send + 'static) -> Self {
        let lines = Self {
            inner: Arc::new((Mutex::new(Collected::default()), Condvar::new())),
        };
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                let (lock, cvar) = &*sink.inner;
                lock.lock().unwrap().lines.push(line);
                cvar.notify_all();
            }
            let (lock, cvar) = &*sink.inner;
            lock.lock().unwrap().closed = true;
            cvar.notify_all();
        });
        lines
    }

    /// The first line matching `pred`, waiting for it (or `None` at end of stream).
    fn wait_for(&self, pred: impl Fn(&str) -> bool) -> Option<String> {
        let (lock, cvar) = &*self.inner;
        let start = Instant::now();
        let mut state = lock.lock().unwrap();
        loop {
            if let Some(line) = state.lines.iter().find(|l| pred(l)) {
                return Some(line.clone());
            }
            if state.closed {
                return None;
            }
            let left = HANG_GUARD.checked_sub(start.elapsed()).unwrap_or_else(|| {
                panic!(
                    "hang guard: gave up waiting; output so far:\n{}",
                    state.lines.join("\n")
                )
            });
            state = cvar.wait_timeout(state, left).unwrap().0;
        }
    }

    /// Waits for the end of the stream.
    fn wait_closed(&self) {
        let _ = self.wait_for(|_| false);
    }

    fn text(&self) -> String {
        self.inner.0.lock().unwrap().lines.join("\n")
    }
}

/// A `hermetic serve --http 127.0.0.1:0` process, killed on drop.
struct HttpServer {
    child: Child,
    url: String,
    log: Lines,
}

impl HttpServer {
    fn start(dirs: &Dirs) -> Self {
        Self::start_with(dirs.global_args(), &[])
    }

    /// With these global arguments and these `serve` arguments.
    fn start_with(global: Vec<String>, serve: &[&str]) -> Self {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hermetic"));
        hermetic_env(&mut cmd)
            .args(global)
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(serve)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let log = Lines::collect(child.stderr.take().unwrap());
        let line = log
            .wait_for(|l| l.contains("serving MCP at "))
            .unwrap_or_else(|| panic!("the server did not start:\n{}", log.text()));
        let url = line
            .split("serving MCP at ")
            .nth(1)
            .unwrap()
            .trim()
            .to_owned();
        assert!(
            url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
            "{url}"
        );
        Self { child, url, log }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

enum Target<'a> {
    Http(&'a HttpServer),
    Stdio(&'a Dirs),
}

/// The Python client for one scenario, with stdout and stderr piped.
fn client(scenario: &str, mode: &str, target: &Target<'_>) -> Command {
    let probe = Command::new("python3")
        .args(["-c", "import mcp"])
        .output()
        .expect("python3 must be installed");
    assert!(
        probe.status.success(),
        "the Python MCP SDK is missing: python3 -m pip install 'mcp==2.3.0' (.ci/run does)\n{}",
        String::from_utf8_lossy(&probe.stderr)
    );
    let mut cmd = Command::new("python3");
    cmd.arg(client_script()).args([scenario, mode]);
    match target {
        Target::Http(server) => {
            cmd.args(["--url", &server.url]);
        }
        Target::Stdio(dirs) => {
            cmd.arg("--stdio")
                .arg(env!("CARGO_BIN_EXE_hermetic"))
                .args(dirs.global_args())
                .args(["serve", "--stdio"]);
        }
    }
    hermetic_env(&mut cmd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// A running client: its stdout lines (the harness protocol) and stderr (where a stdio
/// server's log goes too).
struct Running {
    child: Child,
    stdout: Lines,
    stderr: Lines,
}

impl Running {
    fn spawn(mut cmd: Command) -> Self {
        let mut child = cmd.spawn().unwrap();
        let stdout: ChildStdout = child.stdout.take().unwrap();
        let stderr = Lines::collect(child.stderr.take().unwrap());
        Self {
            child,
            stdout: Lines::collect(stdout),
            stderr,
        }
    }

    fn wait_line(&self, prefix: &str) -> String {
        self.stdout
            .wait_for(|l| l.starts_with(prefix))
            .unwrap_or_else(|| {
                panic!(
                    "the client ended before printing {prefix:?}\nstdout:\n{}\nstderr:\n{}",
                    self.stdout.text(),
                    self.stderr.text()
                )
            })
    }

    /// Waits for a successful exit and returns the report (the last stdout line).
    fn report(&mut self) -> Value {
        let status = self.child.wait().unwrap();
        self.stdout.wait_closed();
        let out = self.stdout.text();
        assert!(
            status.success(),
            "client failed ({status})\nstdout:\n{out}\nstderr:\n{}",
            self.stderr.text()
        );
        let last = out.lines().last().unwrap_or_default();
        serde_json::from_str(last)
            .unwrap_or_else(|e| panic!("report is not JSON ({e}): {last}\n{}", self.stderr.text()))
    }
}

fn run(scenario: &str, mode: &str, target: &Target<'_>) -> (Value, Running) {
    let mut running = Running::spawn(client(scenario, mode, target));
    let report = running.report();
    (report, running)
}

const TEST_TOOLS: &[&str] = &["echo", "fail", "progress", "spin_long"];

fn expected_basic() -> Value {
    json!({
        "server": "hermetic",
        "tools": ["echo", "fail", "progress", "spin_long"],
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
        "unknown": {"is_error": true, "text": {"error": "Unknown tool: no_such_tool"}},
    })
}

/// Checks a `basic` report; returns the protocol version negotiated.
fn check_basic(report: &Value) -> String {
    let expected = expected_basic();
    for key in [
        "server",
        "tools",
        "echo_schema",
        "echo_description",
        "echo",
        "fail",
        "unknown",
    ] {
        assert_eq!(report[key], expected[key], "{key}: {report:#}");
    }
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

/// The `cancel` scenario's report: the call was cancelled and the server still answers.
fn check_cancel_report(report: &Value) {
    assert_eq!(
        report,
        &json!({
            "cancelled": true,
            "after": {"is_error": false, "text": {"echo": "still here", "tenant": "default"}}
        })
    );
}

/// The server logged that spin_long (60 s deadline, never returns) ended with the
/// cancelled error — so the guest was interrupted, not left running.
fn check_cancelled_in(log: &Lines) {
    let line = log
        .wait_for(|l| l.contains(CANCELLED_LOG))
        .unwrap_or_else(|| panic!("no cancellation logged:\n{}", log.text()));
    assert!(line.contains(CANCELLED_ERROR), "{line}");
    assert!(line.contains("spin_long"), "{line}");
}

#[test]
fn stdio_cancellation_interrupts_the_running_guest() {
    let dirs = Dirs::new(TEST_TOOLS);
    let (report, client) = run("cancel", "auto", &Target::Stdio(&dirs));
    check_cancel_report(&report);
    check_cancelled_in(&client.stderr);
}

#[test]
fn http_legacy_cancellation_interrupts_the_running_guest() {
    let dirs = Dirs::new(TEST_TOOLS);
    let server = HttpServer::start(&dirs);
    let (report, _) = run("cancel", "legacy", &Target::Http(&server));
    check_cancel_report(&report);
    check_cancelled_in(&server.log);
}

#[test]
fn http_modern_cancellation_interrupts_the_running_guest() {
    let dirs = Dirs::new(TEST_TOOLS);
    let server = HttpServer::start(&dirs);
    let (report, _) = run("cancel", "auto", &Target::Http(&server));
    check_cancel_report(&report);
    check_cancelled_in(&server.log);
}

#[test]
fn stdio_client_going_away_interrupts_the_running_guest_and_the_server_exits() {
    let dirs = Dirs::new(TEST_TOOLS);
    let (report, client) = run("abandon", "auto", &Target::Stdio(&dirs));
    assert_eq!(report, json!({"started": true}));
    check_cancelled_in(&client.stderr);
    // The server shares the client's stderr: the stream ends only when the server,
    // too, has exited.
    client.stderr.wait_closed();
}

#[test]
fn http_modern_client_going_away_interrupts_the_running_guest() {
    let dirs = Dirs::new(TEST_TOOLS);
    let server = HttpServer::start(&dirs);
    let (report, _) = run("abandon", "auto", &Target::Http(&server));
    assert_eq!(report, json!({"started": true}));
    check_cancelled_in(&server.log);
}

/// Runs `list_changed`: a tool is added after READY and another removed after CHANGED;
/// the client sees both without reconnecting.
fn list_changed(mode: &str, target: &Target<'_>, dirs: &Dirs) {
    let mut running = Running::spawn(client("list_changed", mode, target));
    running.wait_line("READY");
    dirs.add("progress");
    let changed = running.wait_line("CHANGED ");
    assert_eq!(changed, r#"CHANGED ["echo", "fail", "progress"]"#);
    dirs.remove("fail");
    let report = running.report();
    assert_eq!(
        report["lists"],
        json!([
            ["echo", "fail"],
            ["echo", "fail", "progress"],
            ["echo", "progress"]
        ]),
        "{report:#}"
    );
}

#[test]
fn stdio_legacy_client_is_told_when_tools_are_added_and_removed() {
    let dirs = Dirs::new(&["echo", "fail"]);
    list_changed("legacy", &Target::Stdio(&dirs), &dirs);
}

#[test]
fn stdio_modern_client_is_told_when_tools_are_added_and_removed() {
    let dirs = Dirs::new(&["echo", "fail"]);
    list_changed("auto", &Target::Stdio(&dirs), &dirs);
}

#[test]
fn http_legacy_client_is_told_when_tools_are_added_and_removed() {
    let dirs = Dirs::new(&["echo", "fail"]);
    let server = HttpServer::start(&dirs);
    list_changed("legacy", &Target::Http(&server), &dirs);
}

#[test]
fn http_modern_client_is_told_when_tools_are_added_and_removed() {
    let dirs = Dirs::new(&["echo", "fail"]);
    let server = HttpServer::start(&dirs);
    list_changed("auto", &Target::Http(&server), &dirs);
}

#[test]
fn other_http_paths_are_not_found() {
    let dirs = Dirs::new(&["echo"]);
    let server = HttpServer::start(&dirs);
    let addr = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp");
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    std::io::Write::write_all(
        &mut stream,
        format!("GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 404"), "{response}");
}

/// One sessionless (2026-07-28) JSON-RPC request over a fresh connection, the way a
/// minimal client without an SDK would send it; returns the JSON-RPC `result`.
fn post(server: &HttpServer, method: &str, params: Value) -> Value {
    let addr = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp");
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"}
    });
    let name = params["name"].as_str().map(str::to_owned);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let name_header = name
        .map(|n| format!("Mcp-Name: {n}\r\n"))
        .unwrap_or_default();
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    std::io::Write::write_all(
        &mut stream,
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Mcp-Method: {method}\r\n{name_header}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let json_start = response.find("\r\n\r\n").unwrap() + 4;
    let reply: Value = serde_json::from_str(response[json_start..].trim())
        .unwrap_or_else(|e| panic!("not a JSON response ({e}): {response}"));
    reply["result"].clone()
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
    let called = post(
        &server,
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "hi"}}),
    );
    assert_eq!(called["isError"], true, "{called}");
    assert_eq!(
        called["content"][0]["text"],
        json!({"error": "Unknown tool: echo"}).to_string()
    );
}
