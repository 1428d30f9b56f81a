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
use std::io::{BufRead, BufReader, Read, Write};
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
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/client.py")
}

/// A tools directory and a workspace for one server.
struct Dirs {
    tools: TempDir,
    workspace: TempDir,
    /// The host's own files (policy, audit log): outside the workspace, as the host
    /// requires.
    state: TempDir,
}

impl Dirs {
    fn new(tools: &[&str]) -> Self {
        let dirs = Self {
            tools: TempDir::new().unwrap(),
            workspace: TempDir::new().unwrap(),
            state: TempDir::new().unwrap(),
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
    /// The token the server made at start (no tenant tokens in its policy): clients
    /// and raw requests here send it unless they say otherwise.
    token: Option<String>,
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
        // The next line says how to authenticate: the token it made, if it made one.
        let header = log
            .wait_for(|l| l.contains("Authorization: Bearer ") || l.contains("--no-auth"))
            .unwrap_or_else(|| {
                panic!(
                    "the server did not say how to authenticate:\n{}",
                    log.text()
                )
            });
        let token = header
            .split("Authorization: Bearer ")
            .nth(1)
            .map(str::trim)
            .filter(|t| t.starts_with(hermetic_server::auth::TOKEN_PREFIX))
            .map(str::to_owned);
        Self {
            child,
            url,
            log,
            token,
        }
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

/// The Python of the venv with the MCP SDK (`mcp==2.3.0`; .ci/run makes it): `MCP_VENV`,
/// or `target/venv-mcp` in the workspace. A venv, not the system Python: Debian's is
/// "externally managed" (PEP 668) and refuses `pip install`.
fn mcp_python() -> PathBuf {
    let venv = std::env::var_os("MCP_VENV").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/venv-mcp"),
        PathBuf::from,
    );
    let python = venv.join("bin/python");
    let probe = Command::new(&python).args(["-c", "import mcp"]).output();
    assert!(
        probe.as_ref().is_ok_and(|p| p.status.success()),
        "the MCP SDK venv is missing or broken at {}: python3 -m venv {0} && \
         {0}/bin/pip install 'mcp==2.3.0' (.ci/run does)\n{}",
        venv.display(),
        probe.map_or_else(
            |e| e.to_string(),
            |p| String::from_utf8_lossy(&p.stderr).into_owned()
        )
    );
    python
}

/// The Python client for one scenario, with stdout and stderr piped.
fn client(scenario: &str, mode: &str, target: &Target<'_>) -> Command {
    client_with(scenario, mode, target, &[])
}

/// [`client`] with extra client arguments (`--token`, `--call`, …).
fn client_with(scenario: &str, mode: &str, target: &Target<'_>, extra: &[&str]) -> Command {
    let mut cmd = Command::new(mcp_python());
    cmd.arg(client_script()).args([scenario, mode]).args(extra);
    match target {
        Target::Http(server) => {
            cmd.args(["--url", &server.url]);
            if let Some(token) = &server.token
                && !extra.contains(&"--token")
            {
                cmd.args(["--token", token]);
            }
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

const TEST_TOOLS: &[&str] = &["echo", "fail", "progress", "spin_long", "shaped"];

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
        .unwrap_or_default()
        + &server
            .token
            .as_ref()
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
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
    serde_json::from_str(response[json_start..].trim())
        .unwrap_or_else(|e| panic!("not a JSON response ({e}): {response}"))
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

// ── Multi-tenant HTTP: tokens, isolation, rate limits, allow-lists, shutdown, audit ──

/// Tokens of the two tenants in [`tenants_policy`] (their SHA-256 digests are what
/// the policy holds).
const ACME_TOKEN: &str = "hmt_acme_test_token";
const GLOBEX_TOKEN: &str = "hmt_globex_test_token";

fn sha256_hex(token: &str) -> String {
    hermetic_server::auth::hex(&hermetic_server::auth::digest(token))
}

/// A policy file with two tenants: `acme` sees the bundled file tools and may make 2
/// tools/call per minute; `globex` sees the test tools. `extra` is appended.
fn tenants_policy(dirs: &Dirs, extra: &str) -> PathBuf {
    let path = dirs.state.path().join("policy.toml");
    let text = format!(
        r#"[mounts.workspace]
path = "{workspace}"
access = "rw"

[tenants.acme]
toolsets = ["file"]
token_sha256 = ["{acme}"]
[tenants.acme.limits]
calls_per_minute = 2

[tenants.globex]
toolsets = ["test"]
token_sha256 = ["{globex}"]
{extra}"#,
        workspace = dirs.workspace.path().display(),
        acme = sha256_hex(ACME_TOKEN),
        globex = sha256_hex(GLOBEX_TOKEN),
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// Global arguments for a server with the bundled tools, `dirs`' tools and `policy`.
fn policy_args(dirs: &Dirs, policy: &Path) -> Vec<String> {
    let mut args: Vec<String> = dirs
        .global_args()
        .into_iter()
        .filter(|a| a != "--no-bundled")
        .collect();
    args.extend(["--policy".to_owned(), policy.display().to_string()]);
    args
}

impl HttpServer {
    /// `host:port` of the listener.
    fn addr(&self) -> String {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned()
    }

    /// Sends SIGTERM and waits for the process to exit.
    fn terminate(&mut self) -> std::process::ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                start.elapsed() < HANG_GUARD,
                "the server did not exit:\n{}",
                self.log.text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A raw HTTP/1.1 response.
struct Raw {
    status: u16,
    head: String,
    body: String,
}

impl Raw {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }
}

/// One request on a fresh connection. `headers` may override `Host`.
fn raw(server: &HttpServer, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Raw {
    let addr = server.addr();
    let mut request = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: {addr}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(token) = &server.token
        && !headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("authorization"))
    {
        request.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    request.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    std::io::Write::write_all(&mut stream, request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    Raw {
        status: head[9..12].parse().unwrap(),
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

/// A sessionless (2026-07-28) JSON-RPC request to /mcp with a bearer token.
fn mcp_raw(
    server: &HttpServer,
    token: Option<&str>,
    method: &str,
    params: Value,
    extra: &[(&str, &str)],
) -> Raw {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"}
    });
    let name = params["name"].as_str().map(str::to_owned);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let authorization = token.map(|t| format!("Bearer {t}"));
    let mut headers: Vec<(&str, &str)> = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    if let Some(name) = &name {
        headers.push(("Mcp-Name", name));
    }
    if let Some(authorization) = &authorization {
        headers.push(("Authorization", authorization));
    }
    headers.extend_from_slice(extra);
    raw(server, "POST", "/mcp", &headers, &body)
}

#[test]
fn http_tenants_see_and_call_only_their_own_tools() {
    let dirs = Dirs::new(TEST_TOOLS);
    let policy = tenants_policy(&dirs, "");
    let server = HttpServer::start_with(policy_args(&dirs, &policy), &[]);
    let calls = [
        "--call",
        r#"echo={"message": "hi"}"#,
        "--call",
        r#"read_file={"path": "nothing.txt"}"#,
    ];
    // acme over the legacy handshake, globex over 2026-07-28 discovery.
    let mut extra = vec!["--token", ACME_TOKEN];
    extra.extend(calls);
    let (acme, _) = {
        let mut running = Running::spawn(client_with(
            "tenant",
            "legacy",
            &Target::Http(&server),
            &extra,
        ));
        (running.report(), running)
    };
    assert_eq!(
        acme["tools"],
        json!(["patch", "read_file", "search_files", "write_file"]),
        "{acme:#}"
    );
    assert_eq!(
        acme["calls"]["echo"],
        json!({"protocol_error": {"code": -32602, "message": "Unknown tool: echo"}})
    );
    assert_ne!(
        acme["calls"]["read_file"]["text"]["error"],
        json!("Unknown tool: read_file"),
        "{acme:#}"
    );
    let mut extra = vec!["--token", GLOBEX_TOKEN];
    extra.extend(calls);
    let mut running = Running::spawn(client_with(
        "tenant",
        "auto",
        &Target::Http(&server),
        &extra,
    ));
    let globex = running.report();
    assert_eq!(
        globex["tools"],
        json!(["echo", "fail", "progress", "shaped", "spin_long"]),
        "{globex:#}"
    );
    assert_eq!(
        globex["calls"]["echo"],
        json!({"is_error": false, "text": {"echo": "hi", "tenant": "globex"}})
    );
    assert_eq!(
        globex["calls"]["read_file"],
        json!({"protocol_error": {"code": -32602, "message": "Unknown tool: read_file"}})
    );
}

#[test]
fn http_requests_without_a_known_token_are_401_with_a_bearer_challenge() {
    let dirs = Dirs::new(&["echo"]);
    let policy = tenants_policy(&dirs, "");
    let server = HttpServer::start_with(policy_args(&dirs, &policy), &[]);
    let missing = mcp_raw(&server, None, "tools/list", json!({}), &[]);
    assert_eq!(missing.status, 401, "{}", missing.body);
    assert_eq!(
        missing.header("www-authenticate").as_deref(),
        Some("Bearer realm=\"hermetic\"")
    );
    let wrong = mcp_raw(
        &server,
        Some("hmt_not_a_token"),
        "tools/list",
        json!({}),
        &[],
    );
    assert_eq!(wrong.status, 401, "{}", wrong.body);
    assert!(
        wrong
            .header("www-authenticate")
            .unwrap()
            .starts_with("Bearer ")
    );
    // A client cannot pick its tenant with a header: only the token counts.
    let spoofed = mcp_raw(
        &server,
        None,
        "tools/list",
        json!({}),
        &[("X-Tenant", "globex"), ("Tenant", "globex")],
    );
    assert_eq!(spoofed.status, 401);
    // The official SDK sees the 401 too.
    let mut running = Running::spawn(client_with(
        "unauthorized",
        "auto",
        &Target::Http(&server),
        &["--token", "hmt_not_a_token"],
    ));
    assert_eq!(
        running.report(),
        json!({"refused": true, "statuses": [401]})
    );
}

#[test]
fn http_a_session_belongs_to_the_tenant_that_created_it() {
    let dirs = Dirs::new(&["echo"]);
    let policy = tenants_policy(&dirs, "");
    let server = HttpServer::start_with(policy_args(&dirs, &policy), &[]);
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}
    }})
    .to_string();
    let bearer = |t: &str| format!("Bearer {t}");
    let (globex, acme) = (bearer(GLOBEX_TOKEN), bearer(ACME_TOKEN));
    let common = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    let mut headers = common.to_vec();
    headers.push(("Authorization", &globex));
    let created = raw(&server, "POST", "/mcp", &headers, &initialize);
    assert_eq!(created.status, 200, "{}", created.body);
    let session = created.header("mcp-session-id").expect("a session id");
    // Another tenant with the id: as if it did not exist.
    let delete_as = |authorization: &str| {
        raw(
            &server,
            "DELETE",
            "/mcp",
            &[
                ("Authorization", authorization),
                ("Mcp-Session-Id", &session),
                ("MCP-Protocol-Version", "2025-06-18"),
            ],
            "",
        )
    };
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}).to_string();
    let mut headers = common.to_vec();
    headers.extend([
        ("Authorization", acme.as_str()),
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ]);
    assert_eq!(raw(&server, "POST", "/mcp", &headers, &list).status, 404);
    assert_eq!(delete_as(&acme).status, 404);
    // A made-up id is refused the same way.
    let mut headers = common.to_vec();
    headers.extend([
        ("Authorization", globex.as_str()),
        ("Mcp-Session-Id", "made-up"),
        ("MCP-Protocol-Version", "2025-06-18"),
    ]);
    assert_eq!(raw(&server, "POST", "/mcp", &headers, &list).status, 404);
    // Its owner can end it.
    assert_eq!(delete_as(&globex).status, 204);
}

#[test]
fn http_tools_call_over_the_rate_limit_is_429_with_retry_after() {
    let dirs = Dirs::new(&["echo"]);
    let policy = tenants_policy(&dirs, "");
    let server = HttpServer::start_with(policy_args(&dirs, &policy), &[]);
    let call = || {
        mcp_raw(
            &server,
            Some(ACME_TOKEN),
            "tools/call",
            json!({"name": "read_file", "arguments": {"path": "x"}}),
            &[],
        )
    };
    assert_eq!(call().status, 200);
    assert_eq!(call().status, 200);
    let limited = call();
    assert_eq!(limited.status, 429, "{}", limited.body);
    // 2 per minute: the next call is allowed 30 s after the burst.
    let retry: u64 = limited.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=30).contains(&retry), "{retry}");
    // Only tools/call counts, and only for this tenant.
    assert_eq!(
        mcp_raw(&server, Some(ACME_TOKEN), "tools/list", json!({}), &[]).status,
        200
    );
    let other = mcp_raw(
        &server,
        Some(GLOBEX_TOKEN),
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "x"}}),
        &[],
    );
    assert_eq!(other.status, 200);
}

#[test]
fn http_a_host_or_origin_off_the_allow_list_is_403() {
    let dirs = Dirs::new(&["echo"]);
    let server = HttpServer::start_with(
        dirs.global_args(),
        &[
            "--allow-host",
            "mcp.example.test",
            "--allow-origin",
            "https://console.example.test",
        ],
    );
    let list =
        |extra: &[(&str, &str)]| mcp_raw(&server, None, "tools/list", json!({}), extra).status;
    assert_eq!(list(&[]), 200);
    assert_eq!(list(&[("Host", "evil.example")]), 403);
    assert_eq!(list(&[("Host", "localhost:1")]), 403);
    let port = server.addr().rsplit(':').next().unwrap().to_owned();
    assert_eq!(list(&[("Host", &format!("localhost:{port}"))]), 200);
    assert_eq!(list(&[("Host", "mcp.example.test")]), 200);
    assert_eq!(list(&[("Origin", "http://evil.example")]), 403);
    assert_eq!(
        list(&[("Origin", &format!("http://localhost:{port}"))]),
        200
    );
    assert_eq!(list(&[("Origin", "https://console.example.test")]), 200);
    // Every path is behind the check, not only /mcp.
    assert_eq!(
        raw(
            &server,
            "GET",
            "/approvals",
            &[("Host", "evil.example")],
            ""
        )
        .status,
        403
    );
}

#[test]
fn serve_refuses_no_auth_on_a_non_loopback_address() {
    let dirs = Dirs::new(&["echo"]);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hermetic"));
    let out = hermetic_env(&mut cmd)
        .args(dirs.global_args())
        .args(["serve", "--http", "0.0.0.0:0", "--no-auth"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--no-auth on 0.0.0.0:0")
            && stderr.contains("listen on loopback (127.0.0.1) or drop --no-auth"),
        "{stderr}"
    );
}

/// Review r3, finding 15: a non-loopback address without tenant tokens in the policy
/// is refused before anything binds (it served plain HTTP with a token made at start,
/// one that then also opened the console), saying what to write in the policy.
#[test]
fn serve_refuses_a_non_loopback_address_without_tenant_tokens() {
    let dirs = Dirs::new(&["echo"]);
    for addr in ["0.0.0.0:0", "[::]:0"] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hermetic"));
        let mut child = hermetic_env(&mut cmd)
            .env(
                "HERMETIC_TOKEN",
                "hmt_fixed_token_for_this_test_0123456789abcdef",
            )
            .args(dirs.global_args())
            .args(["serve", "--http", addr])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Read until it exits, or stop it once it says it serves (the failure).
        let mut stderr = String::new();
        for line in BufReader::new(child.stderr.take().unwrap()).lines() {
            let line = line.unwrap();
            stderr.push_str(&line);
            stderr.push('\n');
            if line.contains("serving MCP") {
                let _ = child.kill();
                break;
            }
        }
        let status = child.wait().unwrap();
        assert!(!status.success(), "{stderr}");
        assert!(
            stderr.contains(&format!("refusing to serve {addr} without tenant tokens"))
                && stderr.contains("hermetic token new --tenant ID")
                && stderr.contains("admin_token_sha256")
                && stderr.contains("listen on loopback"),
            "{stderr}"
        );
        assert!(!stderr.contains("serving MCP"), "{stderr}");
    }
}

/// Issue 52: `hermetic serve` with no flags served any local process. Now it makes a
/// token, prints the header and the console's URL, and refuses a call without the
/// token with a 401 that says how to authenticate (before: the call ran).
#[test]
fn serve_without_flags_requires_the_token_it_printed() {
    let dirs = Dirs::new(TEST_TOOLS);
    let mut server = HttpServer::start(&dirs);
    let token = server.token.take().expect("no token printed");
    assert_eq!(token.len(), 4 + 64, "{token}");
    let console = server
        .log
        .wait_for(|l| l.contains("console at "))
        .unwrap_or_else(|| panic!("no console URL:\n{}", server.log.text()));
    // The console has a token of its own (review r3, finding 2: the one an agent
    // holds must not answer its approvals); it is printed only in the URL.
    let console_token = console.split("/console#token=").nth(1).unwrap_or_default();
    assert!(
        console_token.starts_with("hmt_") && console_token != token,
        "{console}"
    );
    assert_eq!(server.log.text().matches(console_token).count(), 1);
    let call = json!({"name": "echo", "arguments": {"message": "hi"}});
    let refused = mcp_raw(&server, None, "tools/call", call.clone(), &[]);
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert!(
        refused.body.contains("Authorization: Bearer <token>")
            && refused.body.contains("printed on stderr"),
        "{}",
        refused.body
    );
    let wrong = mcp_raw(&server, Some("hmt_guess"), "tools/call", call.clone(), &[]);
    assert_eq!(wrong.status, 401, "{}", wrong.body);
    let answered = mcp_raw(&server, Some(&token), "tools/call", call, &[]);
    assert_eq!(answered.status, 200, "{}", answered.body);
    assert!(answered.body.contains("hi"), "{}", answered.body);
    // The Python SDK with the token works; with another, it sees the 401.
    server.token = Some(token);
    let (report, _) = run("basic", "auto", &Target::Http(&server));
    check_basic(&report);
    let mut running = Running::spawn(client_with(
        "unauthorized",
        "auto",
        &Target::Http(&server),
        &["--token", "hmt_not_the_token"],
    ));
    assert_eq!(
        running.report(),
        json!({"refused": true, "statuses": [401]})
    );
}

/// `HERMETIC_TOKEN` fixes the token ahead of time (scripts know it), and is named,
/// not printed; one too short to resist guessing stops the start.
#[test]
fn serve_takes_its_token_from_hermetic_token() {
    let dirs = Dirs::new(&["echo"]);
    let token = "hmt_fixed_token_for_this_test_0123456789abcdef";
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hermetic"));
    hermetic_env(&mut cmd)
        .env("HERMETIC_TOKEN", token)
        .args(dirs.global_args())
        .args(["serve", "--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let log = Lines::collect(child.stderr.take().unwrap());
    let header = log
        .wait_for(|l| l.contains("Authorization: Bearer "))
        .unwrap_or_else(|| panic!("the server did not start:\n{}", log.text()));
    assert!(header.ends_with("Bearer $HERMETIC_TOKEN"), "{header}");
    let url = log
        .text()
        .lines()
        .find_map(|l| l.split("serving MCP at ").nth(1).map(str::to_owned))
        .unwrap();
    let server = HttpServer {
        child,
        url,
        log,
        token: None,
    };
    let call = json!({"name": "echo", "arguments": {"message": "hi"}});
    assert_eq!(
        mcp_raw(&server, None, "tools/call", call.clone(), &[]).status,
        401
    );
    assert_eq!(
        mcp_raw(&server, Some(token), "tools/call", call, &[]).status,
        200
    );
    assert!(!server.log.text().contains(token), "the token was printed");
    drop(server);

    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hermetic"));
    let out = hermetic_env(&mut cmd)
        .env("HERMETIC_TOKEN", "short")
        .args(dirs.global_args())
        .args(["serve", "--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("HERMETIC_TOKEN must be at least 32"),
        "{stderr}"
    );
}

/// `--no-auth` is the explicit way back to an open loopback server, said on stderr.
#[test]
fn serve_with_no_auth_is_open_on_loopback_and_says_so() {
    let dirs = Dirs::new(&["echo"]);
    let server = HttpServer::start_with(dirs.global_args(), &["--no-auth"]);
    assert!(server.token.is_none());
    assert!(server.log.text().contains("no authentication (--no-auth)"));
    let call = json!({"name": "echo", "arguments": {"message": "hi"}});
    assert_eq!(mcp_raw(&server, None, "tools/call", call, &[]).status, 200);
}

/// SIGTERM while spin_long runs: the call finishes with its own result, the server
/// exits 0.
fn shutdown_lets_the_call_finish(mode: &str) {
    let dirs = Dirs::new(TEST_TOOLS);
    // spin_long runs until its deadline: 3 s here, well inside the shutdown grace.
    let policy = tenants_policy(&dirs, "[tools.spin_long.limits]\nmax_timeout_ms = 3000\n");
    let mut server =
        HttpServer::start_with(policy_args(&dirs, &policy), &["--shutdown-grace", "60"]);
    let mut running = Running::spawn(client_with(
        "long_call",
        mode,
        &Target::Http(&server),
        &["--token", GLOBEX_TOKEN, "--call", "spin_long"],
    ));
    running.wait_line("STARTED");
    let status = server.terminate();
    let report = running.report();
    // The call ran to its own end (its time limit), not to a cancellation.
    assert_eq!(report["result"]["is_error"], true, "{report:#}");
    assert_eq!(report["result"]["text"]["limit"], "time", "{report:#}");
    assert!(status.success(), "{status}\n{}", server.log.text());
    assert!(
        !server.log.text().contains(CANCELLED_LOG),
        "{}",
        server.log.text()
    );
}

#[test]
fn http_modern_shutdown_lets_the_call_in_flight_finish_and_exits_0() {
    shutdown_lets_the_call_finish("auto");
}

#[test]
fn http_legacy_shutdown_lets_the_call_in_flight_finish_and_exits_0() {
    shutdown_lets_the_call_finish("legacy");
}

/// Runs `hermetic audit verify` on `file`: (exit code, stdout).
fn audit_verify(file: &Path, extra: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hermetic"))
        .args(["audit", "verify"])
        .arg(file)
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn audit_records_every_call_and_verify_catches_edited_deleted_and_reordered_lines() {
    let dirs = Dirs::new(TEST_TOOLS);
    let audit = dirs.state.path().join("audit.jsonl");
    let policy = tenants_policy(&dirs, "");
    let mut server = HttpServer::start_with(
        policy_args(&dirs, &policy),
        &["--audit", audit.to_str().unwrap()],
    );
    let call = |token: &str, name: &str, args: Value| {
        mcp_raw(
            &server,
            Some(token),
            "tools/call",
            json!({"name": name, "arguments": args}),
            &[],
        )
        .status
    };
    assert_eq!(call(GLOBEX_TOKEN, "echo", json!({"message": "one"})), 200);
    assert_eq!(
        call(
            GLOBEX_TOKEN,
            "fail",
            json!({"mode": "error", "message": "x"})
        ),
        200
    );
    assert_eq!(
        call(ACME_TOKEN, "echo", json!({"message": "not yours"})),
        200
    );
    assert_eq!(call(GLOBEX_TOKEN, "echo", json!({"message": "two"})), 200);
    assert!(server.terminate().success());

    let text = std::fs::read_to_string(&audit).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    let records: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summary: Vec<(String, String, String, String)> = records
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
            (s("kind"), s("tenant"), s("tool"), s("outcome"))
        })
        .collect();
    let row = |k: &str, t: &str, tool: &str, o: &str| {
        (k.to_owned(), t.to_owned(), tool.to_owned(), o.to_owned())
    };
    assert_eq!(
        summary,
        [
            row("call", "globex", "echo", "ok"),
            row("call", "globex", "fail", "error"),
            row("decision", "acme", "echo", "unknown_tool"),
            row("call", "globex", "echo", "ok"),
        ]
    );
    assert_eq!(records[0]["args_sha256"].as_str().unwrap().len(), 64);
    assert_ne!(records[0]["args_sha256"], records[3]["args_sha256"]);
    assert_eq!(records[0]["grants"]["terminal"], false);
    assert!(records[0]["duration_ms"].as_f64().is_some());

    let (code, out) = audit_verify(&audit, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("ok, 4 lines"), "{out}");
    let head = records[3]["hash"].as_str().unwrap();

    let tampered = |name: &str, lines: &[&str]| {
        let path = dirs.workspace.path().join(name);
        std::fs::write(
            &path,
            lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
        )
        .unwrap();
        path
    };
    let edited_line = lines[1].replace("\"error\"", "\"ok\"");
    let edited = tampered("edited", &[lines[0], &edited_line, lines[2], lines[3]]);
    let (code, out) = audit_verify(&edited, &[]);
    assert_eq!((code, out.contains("line 2:")), (1, true), "{out}");
    let deleted = tampered("deleted", &[lines[0], lines[1], lines[3]]);
    let (code, out) = audit_verify(&deleted, &[]);
    assert_eq!((code, out.contains("line 3:")), (1, true), "{out}");
    let reordered = tampered("reordered", &[lines[0], lines[2], lines[1], lines[3]]);
    let (code, out) = audit_verify(&reordered, &[]);
    assert_eq!((code, out.contains("line 2:")), (1, true), "{out}");
    // Cutting the last line leaves a valid shorter chain: the recorded head or line
    // count catches it.
    let cut = tampered("cut", &lines[..3]);
    assert_eq!(audit_verify(&cut, &[]).0, 0);
    assert_eq!(audit_verify(&cut, &["--head", head]).0, 1);
    assert_eq!(audit_verify(&cut, &["--min-lines", "4"]).0, 1);
    assert_eq!(audit_verify(&audit, &["--head", head]).0, 0);
}

/// A crash mid-write leaves half a line: the server and `audit verify` both call it
/// torn (not tampered) and point at `audit repair`, which cuts it (keeping the bytes in
/// FILE.torn) so that the next server continues the chain.
#[test]
fn a_torn_audit_tail_stops_the_server_until_audit_repair_mends_it() {
    let dirs = Dirs::new(TEST_TOOLS);
    let audit = dirs.state.path().join("audit.jsonl");
    let audit_arg = audit.to_str().unwrap();
    let mut server = HttpServer::start_with(dirs.global_args(), &["--audit", audit_arg]);
    let echo = |server: &HttpServer| {
        let reply = mcp_raw(
            server,
            None,
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "one"}}),
            &[],
        );
        assert_eq!(reply.status, 200, "{}", reply.body);
    };
    echo(&server);
    assert!(server.terminate().success());
    drop(server);
    let torn = b"{\"seq\":2,\"time\":\"20";
    std::fs::OpenOptions::new()
        .append(true)
        .open(&audit)
        .unwrap()
        .write_all(torn)
        .unwrap();

    let (code, out) = audit_verify(&audit, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("torn:") && out.contains("cut short"), "{out}");
    assert!(out.contains("hermetic audit repair"), "{out}");

    // The server refuses to fork the chain, in the same words.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hermetic"));
    let mut child = hermetic_env(&mut cmd)
        .args(dirs.global_args())
        .args(["serve", "--http", "127.0.0.1:0", "--audit", audit_arg])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("the server started on a torn audit log");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(!status.success(), "{stderr}");
    assert!(
        stderr.contains("cut short") && stderr.contains("audit repair"),
        "{stderr}"
    );

    let repaired = Command::new(env!("CARGO_BIN_EXE_hermetic"))
        .args(["audit", "repair", audit_arg])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&repaired.stdout);
    assert!(repaired.status.success(), "{out}");
    assert!(
        out.contains(&format!("cut a torn last line ({} bytes", torn.len())),
        "{out}"
    );
    let kept = std::fs::read(dirs.state.path().join("audit.jsonl.torn")).unwrap();
    assert_eq!(&kept[..torn.len()], torn);
    let (code, out) = audit_verify(&audit, &[]);
    assert_eq!((code, out.contains("ok, 1 lines")), (0, true), "{out}");

    let mut server = HttpServer::start_with(dirs.global_args(), &["--audit", audit_arg]);
    echo(&server);
    assert!(server.terminate().success());
    let (code, out) = audit_verify(&audit, &[]);
    assert_eq!((code, out.contains("ok, 2 lines")), (0, true), "{out}");
}

#[test]
fn http_a_tenant_over_its_max_concurrent_calls_gets_a_concurrency_error() {
    let dirs = Dirs::new(TEST_TOOLS);
    let policy = tenants_policy(
        &dirs,
        "[tenants.globex.limits]\nmax_concurrent = 1\n[defaults.limits]\nqueue_timeout_ms = 100\n",
    );
    let server = HttpServer::start_with(policy_args(&dirs, &policy), &[]);
    // spin_long holds globex's only slot until it is cancelled.
    let mut running = Running::spawn(client_with(
        "long_call",
        "auto",
        &Target::Http(&server),
        &["--token", GLOBEX_TOKEN, "--call", "spin_long"],
    ));
    running.wait_line("STARTED");
    let call = |token: &str| {
        let reply = mcp_raw(
            &server,
            Some(token),
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "x"}}),
            &[],
        );
        let reply: Value = serde_json::from_str(reply.body.trim()).unwrap();
        let text = reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned();
        serde_json::from_str::<Value>(&text).unwrap()
    };
    let refused = call(GLOBEX_TOKEN);
    assert_eq!(refused["limit"], "concurrency", "{refused}");
    let _ = running.child.kill();
}

// ── The terminal tool over MCP: approvals by elicitation, output as progress ────────

/// Global arguments for a server with only the bundled tools (so `terminal` and
/// `process` get the local backend with manual approval, the embedded default) whose
/// workspace — and the terminal's working directory — is `workspace`.
fn bundled_args(workspace: &Path) -> Vec<String> {
    vec![
        "--workspace".into(),
        workspace.display().to_string(),
        "--log-level".into(),
        "warn,hermetic=info".into(),
    ]
}

/// Runs the `elicit` scenario in `mode` against `server`, making one terminal call of
/// `command` and answering the approval request with `answer` (client.py `--elicit`)
/// after `extra`'s delay, if any.
fn terminal_elicit(
    server: &HttpServer,
    mode: &str,
    command: &str,
    answer: &str,
    extra: &[&str],
) -> Value {
    let call = format!("terminal={}", json!({ "command": command }));
    let mut args = vec!["--call", &call, "--elicit", answer];
    args.extend_from_slice(extra);
    let mut running = Running::spawn(client_with("elicit", mode, &Target::Http(server), &args));
    running.report()
}

/// The message a refusal by the user carries (host/approval flow.rs).
const DENIED_BY_THE_USER: &str = "DENIED by the user";

/// The Python SDK's approvals in one protocol era (`legacy`: elicitation requests;
/// `auto`: 2026-07-28, `input_required` results answered by a retry): once runs the
/// command, an accept without an answer (Hermes's shape) is once too, decline refuses,
/// cancel is no refusal, and a hardline command is never offered.
fn python_sdk_approvals(mode: &str, protocol_is_modern: bool) {
    let workspace = TempDir::new().unwrap();
    let state = TempDir::new().unwrap();
    let audit = state.path().join("audit.jsonl");
    let audit_arg = audit.display().to_string();
    let server = HttpServer::start_with(bundled_args(workspace.path()), &["--audit", &audit_arg]);
    let ran = |name: &str| workspace.path().join(name).exists();

    let report = terminal_elicit(
        &server,
        mode,
        "rm -rf scratch && touch approved && echo approved-run",
        "once",
        &[],
    );
    assert_eq!(
        report["protocol"].as_str() == Some("2026-07-28"),
        protocol_is_modern,
        "{report:#}"
    );
    let seen = report["elicitations"].as_array().unwrap();
    assert_eq!(seen.len(), 1, "{report:#}");
    let message = seen[0]["message"].as_str().unwrap();
    assert!(message.contains("rm -rf scratch"), "{message}");
    let result = &report["calls"]["terminal"];
    assert_eq!(result["is_error"], false, "{report:#}");
    assert_eq!(result["text"]["exit_code"], 0, "{report:#}");
    assert_eq!(result["text"]["output"], "approved-run", "{report:#}");
    assert!(ran("approved"));

    let report = terminal_elicit(&server, mode, "rm -rf scratch && touch empty", "empty", &[]);
    assert_eq!(report["elicitations"].as_array().unwrap().len(), 1);
    assert_eq!(
        report["calls"]["terminal"]["text"]["exit_code"], 0,
        "{report:#}"
    );
    assert!(
        ran("empty"),
        "an accept without an answer is the form's default, once"
    );

    let report = terminal_elicit(
        &server,
        mode,
        "rm -rf scratch && touch declined",
        "decline",
        &[],
    );
    assert_eq!(report["elicitations"].as_array().unwrap().len(), 1);
    let result = &report["calls"]["terminal"]["text"];
    assert_eq!(result["status"], "blocked", "{report:#}");
    assert_eq!(result["exit_code"], -1, "{report:#}");
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .contains(DENIED_BY_THE_USER),
        "{report:#}"
    );
    assert!(!ran("declined"));

    let report = terminal_elicit(
        &server,
        mode,
        "rm -rf scratch && touch cancelled",
        "cancel",
        &[],
    );
    let result = &report["calls"]["terminal"]["text"];
    assert_eq!(result["status"], "pending_approval", "{report:#}");
    assert!(
        !result["error"].as_str().unwrap().contains("DENIED"),
        "a dismissed question is no refusal: {report:#}"
    );
    assert!(!ran("cancelled"));

    // A hardline command is never even offered for approval.
    let report = terminal_elicit(&server, mode, "rm -rf / && touch hardline", "once", &[]);
    assert_eq!(report["elicitations"], json!([]), "{report:#}");
    assert_eq!(report["calls"]["terminal"]["text"]["status"], "blocked");
    assert!(!ran("hardline"));

    // The audit log holds each question and answer next to the calls, and verifies.
    let records: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let count = |kind: &str| records.iter().filter(|r| r["kind"] == kind).count();
    // One record per question and one per answer, naming who may answer and who did
    // — also in 2026-07-28, which asks in a first leg and reads the answer in the
    // retry (two call records).
    let legs = if protocol_is_modern { 2 } else { 1 };
    assert_eq!(count("approval_request"), 4, "{records:#?}");
    assert_eq!(count("approval_answer"), 4, "{records:#?}");
    assert_eq!(count("call"), 4 * legs + 1, "{records:#?}");
    for record in records.iter().filter(|r| r["kind"] == "approval_request") {
        assert_eq!(
            record["detail"]["approver"], "client_or_console",
            "{record}"
        );
    }
    for record in records.iter().filter(|r| r["kind"] == "approval_answer") {
        assert_eq!(record["detail"]["answered_by"], "client", "{record}");
        assert_ne!(record["outcome"], "input_required", "{record}");
    }
    let hardline = records.iter().find(|r| r["kind"] == "decision").unwrap();
    assert_eq!(hardline["outcome"], "blocked_hardline", "{hardline}");
    assert_eq!(hardline["detail"]["command"], "rm -rf / && touch hardline");
    let verify = Command::new(env!("CARGO_BIN_EXE_hermetic"))
        .args(["audit", "verify", &audit_arg])
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stderr)
    );
}

#[test]
fn python_sdk_legacy_approves_by_elicitation_declines_and_never_offers_a_hardline_command() {
    python_sdk_approvals("legacy", false);
}

#[test]
fn python_sdk_2026_07_28_approves_by_input_required_declines_and_never_offers_a_hardline_command() {
    python_sdk_approvals("auto", true);
}

/// A server whose approvals time out after one second (its policy file in `state`).
fn quick_timeout_server(workspace: &Path, state: &Path) -> HttpServer {
    let policy = state.join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            "[mounts.workspace]\npath = \"{ws}\"\naccess = \"rw\"\n\n[tools.terminal]\nterminal = true\n\n\
             [terminal]\ncwd = \"{ws}\"\n\n[terminal.approval]\nasync_timeout_secs = 1\n",
            ws = workspace.display()
        ),
    )
    .unwrap();
    let mut args = bundled_args(workspace);
    args.extend(["--policy".to_owned(), policy.display().to_string()]);
    HttpServer::start_with(args, &[])
}

/// Nobody answers in time: the call still gets its result, `pending_approval`, and
/// the command does not run — a late "once" included.
fn unanswered(mode: &str) {
    let workspace = TempDir::new().unwrap();
    let state = TempDir::new().unwrap();
    let server = quick_timeout_server(workspace.path(), state.path());
    let report = terminal_elicit(
        &server,
        mode,
        "rm -rf scratch && touch late",
        "once",
        &["--elicit-delay", "3"],
    );
    assert_eq!(
        report["elicitations"].as_array().unwrap().len(),
        1,
        "{report:#}"
    );
    let result = &report["calls"]["terminal"]["text"];
    assert_eq!(result["status"], "pending_approval", "{report:#}");
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .contains("Nobody answered"),
        "{report:#}"
    );
    assert!(!workspace.path().join("late").exists());
}

#[test]
fn python_sdk_legacy_an_unanswered_approval_ends_the_call_with_pending_approval() {
    unanswered("legacy");
}

#[test]
fn python_sdk_2026_07_28_an_approval_answered_too_late_ends_the_call_with_pending_approval() {
    unanswered("auto");
}

// ── Who answers an approval, and how often an answer counts ─────────────────────────

/// A sessionless 2026-07-28 tools/call of the terminal over a fresh connection, with
/// `token` if given, from a client that declares `capabilities` (form elicitation or
/// nothing); `retry` adds `inputResponses`/`requestState`. Returns the JSON-RPC result.
fn terminal_raw(
    server: &HttpServer,
    token: Option<&str>,
    command: &str,
    capabilities: Value,
    retry: Option<(&Value, &str)>,
) -> Value {
    let mut params = json!({"name": "terminal", "arguments": {"command": command}});
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"}
    });
    if let Some((responses, state)) = retry {
        params["inputResponses"] = responses.clone();
        params["requestState"] = json!(state);
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let authorization = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "terminal"),
    ];
    if let Some(a) = &authorization {
        headers.push(("Authorization", a));
    }
    let reply = raw(server, "POST", "/mcp", &headers, &body.to_string());
    assert_eq!(reply.status, 200, "{}", reply.body);
    let reply: Value = serde_json::from_str(reply.body.trim())
        .unwrap_or_else(|e| panic!("not a JSON response ({e}): {}", reply.body));
    reply["result"].clone()
}

/// The terminal's own result in a tools/call `result` (its JSON text).
fn terminal_text(result: &Value) -> Value {
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content: {result:#}"));
    serde_json::from_str(text).unwrap()
}

/// Form elicitation, as a 2026-07-28 client declares it in `_meta`.
fn can_elicit() -> Value {
    json!({"elicitation": {"form": {}}})
}

/// A 2026-07-28 answer is a sealed `requestState` and `inputResponses`: the retry
/// that carries them runs the command, once. The same pair sent again (a replay, by
/// the client or anyone who saw it) is refused and runs nothing; before, it ran the
/// command again on every replay until the state expired.
#[test]
fn a_2026_07_28_answer_runs_its_command_once_and_a_replay_is_refused() {
    let workspace = TempDir::new().unwrap();
    let server = HttpServer::start_with(bundled_args(workspace.path()), &[]);
    let command = "rm -rf scratch && echo ran >> runs";
    let runs = || std::fs::read_to_string(workspace.path().join("runs")).unwrap_or_default();

    let asked = terminal_raw(&server, None, command, can_elicit(), None);
    let state = asked["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("not input_required: {asked:#}"))
        .to_owned();
    let key = asked["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    assert_eq!(runs(), "", "asking runs nothing");
    let responses = json!({ key: {"action": "accept", "content": {"answer": "once"}} });

    let answered = terminal_raw(
        &server,
        None,
        command,
        can_elicit(),
        Some((&responses, &state)),
    );
    assert_eq!(terminal_text(&answered)["exit_code"], 0, "{answered:#}");
    assert_eq!(runs(), "ran\n");

    for _ in 0..2 {
        let replayed = terminal_raw(
            &server,
            None,
            command,
            can_elicit(),
            Some((&responses, &state)),
        );
        let text = terminal_text(&replayed);
        assert_ne!(text["exit_code"], 0, "{replayed:#}");
        assert!(
            text["error"].as_str().unwrap().contains("already used"),
            "{replayed:#}"
        );
        assert_eq!(runs(), "ran\n", "a replay ran the command again");
    }
}

/// Sessionless 2026-07-28 clients share no session: one client's "session" answer, or
/// its "always" (which, with no allowlist file, lasts for the session), approves its
/// own call and nothing after it. Before, both were remembered under the session key
/// every sessionless client of the tenant shares, so the next client's `rm -rf` ran
/// unasked — even one that cannot be asked, or whose user would say no.
#[test]
fn python_sdk_2026_07_28_a_sessionless_client_s_session_answer_approves_its_call_only() {
    let workspace = TempDir::new().unwrap();
    // No console (its token would be serve's): only the client can be asked.
    let server = HttpServer::start_with(bundled_args(workspace.path()), &["--no-auth"]);
    let ran = |name: &str| workspace.path().join(name).exists();
    for answer in ["always", "session"] {
        let report = terminal_elicit(
            &server,
            "auto",
            &format!("rm -rf scratch && touch {answer}"),
            answer,
            &[],
        );
        assert_eq!(report["protocol"], "2026-07-28", "{report:#}");
        assert_eq!(
            report["elicitations"].as_array().unwrap().len(),
            1,
            "{report:#}"
        );
        assert_eq!(
            report["calls"]["terminal"]["text"]["exit_code"], 0,
            "{report:#}"
        );
        assert!(ran(answer));
    }
    // Another client whose user says no is asked, and its no stands.
    let report = terminal_elicit(
        &server,
        "auto",
        "rm -rf scratch && touch denied",
        "deny",
        &[],
    );
    assert_eq!(
        report["elicitations"].as_array().unwrap().len(),
        1,
        "{report:#}"
    );
    assert_eq!(
        report["calls"]["terminal"]["text"]["status"], "blocked",
        "{report:#}"
    );
    assert!(!ran("denied"));
    // A client that cannot be asked: nobody answers, nothing runs.
    let result = terminal_raw(
        &server,
        None,
        "rm -rf scratch && touch unasked",
        json!({}),
        None,
    );
    let text = terminal_text(&result);
    assert!(
        text["error"]
            .as_str()
            .unwrap()
            .contains("Nobody could be asked"),
        "{result:#}"
    );
    assert!(!ran("unasked"));
}

const ADMIN_TOKEN: &str = "hmt_admin_mcp_test_token";

/// GET /approvals with the admin token: the pending list.
fn console_pending(server: &HttpServer) -> Vec<Value> {
    let bearer = format!("Bearer {ADMIN_TOKEN}");
    let reply = raw(
        server,
        "GET",
        "/approvals",
        &[("Authorization", bearer.as_str())],
        "",
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    serde_json::from_str::<Value>(&reply.body)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// The operator picks who answers, per tenant: acme's approvals go to the console only
/// (its client, which could answer, is never asked), globex's to the client only (the
/// console never lists them, even when the client cannot answer).
#[test]
fn the_approver_setting_decides_whether_the_client_or_the_console_answers() {
    let workspace = TempDir::new().unwrap();
    // The host's own files live outside every mount (a policy inside one is refused).
    let host_files = TempDir::new().unwrap();
    let policy = host_files.path().join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            r#"[mounts.workspace]
path = "{ws}"
access = "rw"

[tools.terminal]
terminal = true

[tenants.acme]
toolsets = ["terminal"]
token_sha256 = ["{acme}"]

[tenants.globex]
toolsets = ["terminal"]
token_sha256 = ["{globex}"]

[terminal]
cwd = "{ws}"
[terminal.approval]
async_timeout_secs = 20
[terminal.tenants.acme.approval]
approver = "console"
async_timeout_secs = 20
[terminal.tenants.globex.approval]
approver = "client"
async_timeout_secs = 20

[server]
admin_token_sha256 = ["{admin}"]
"#,
            ws = workspace.path().display(),
            acme = sha256_hex(ACME_TOKEN),
            globex = sha256_hex(GLOBEX_TOKEN),
            admin = sha256_hex(ADMIN_TOKEN),
        ),
    )
    .unwrap();
    let mut args = bundled_args(workspace.path());
    args.extend(["--policy".to_owned(), policy.display().to_string()]);
    let server = HttpServer::start_with(args, &[]);
    let ran = |name: &str| workspace.path().join(name).exists();

    // acme: a client that answers "deny" to anything it is asked — and is not asked;
    // the operator's "once" runs the command.
    let call = format!(
        "terminal={}",
        json!({"command": "rm -rf scratch && touch by-console"})
    );
    let mut acme = Running::spawn(client_with(
        "elicit",
        "auto",
        &Target::Http(&server),
        &["--token", ACME_TOKEN, "--call", &call, "--elicit", "deny"],
    ));
    let start = Instant::now();
    let pending = loop {
        if let Some(first) = console_pending(&server).into_iter().next() {
            break first;
        }
        assert!(start.elapsed() < HANG_GUARD, "the console was never asked");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(pending["tenant"], "acme", "{pending}");
    let bearer = format!("Bearer {ADMIN_TOKEN}");
    let answer = raw(
        &server,
        "POST",
        &format!("/approvals/{}", pending["id"]),
        &[
            ("Authorization", bearer.as_str()),
            ("Content-Type", "application/json"),
        ],
        r#"{"answer": "once"}"#,
    );
    assert_eq!(answer.status, 200, "{}", answer.body);
    let report = acme.report();
    assert_eq!(report["elicitations"], json!([]), "{report:#}");
    assert_eq!(
        report["calls"]["terminal"]["text"]["exit_code"], 0,
        "{report:#}"
    );
    assert!(ran("by-console"));

    // globex, from a client that cannot be asked: nobody, at once — the console,
    // though there, is never asked.
    let result = terminal_raw(
        &server,
        Some(GLOBEX_TOKEN),
        "rm -rf scratch && touch unasked",
        json!({}),
        None,
    );
    let text = terminal_text(&result);
    assert!(
        text["error"]
            .as_str()
            .unwrap()
            .contains("Nobody could be asked"),
        "{result:#}"
    );
    assert!(!ran("unasked"));
    // globex's client that can answer is asked, and its answer counts.
    let call = format!(
        "terminal={}",
        json!({"command": "rm -rf scratch && touch by-client"})
    );
    let report = Running::spawn(client_with(
        "elicit",
        "auto",
        &Target::Http(&server),
        &["--token", GLOBEX_TOKEN, "--call", &call, "--elicit", "once"],
    ))
    .report();
    assert_eq!(
        report["elicitations"].as_array().unwrap().len(),
        1,
        "{report:#}"
    );
    assert!(ran("by-client"));
    assert_eq!(console_pending(&server), Vec::<Value>::new());
}

/// Nobody answers, and the call's deadline is no longer than the approval wait (as in
/// a minimal policy: 300 s each; here 4 s): the wait ends before the call does, so the
/// agent reads "Nobody answered", not the call's time limit.
#[test]
fn python_sdk_legacy_an_unanswered_approval_is_no_time_out_when_the_call_is_as_short() {
    let workspace = TempDir::new().unwrap();
    // The host's own files live outside every mount (a policy inside one is refused).
    let host_files = TempDir::new().unwrap();
    let policy = host_files.path().join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            "[mounts.workspace]\npath = \"{ws}\"\naccess = \"rw\"\n\n[tools.terminal]\nterminal = true\n\
             [tools.terminal.limits]\nmax_timeout_ms = 4000\n\n\
             [terminal]\ncwd = \"{ws}\"\n\n[terminal.approval]\nasync_timeout_secs = 4\n",
            ws = workspace.path().display()
        ),
    )
    .unwrap();
    let mut args = bundled_args(workspace.path());
    args.extend(["--policy".to_owned(), policy.display().to_string()]);
    let server = HttpServer::start_with(args, &[]);
    let report = terminal_elicit(
        &server,
        "legacy",
        "rm -rf scratch && touch late",
        "once",
        &["--elicit-delay", "8"],
    );
    let result = &report["calls"]["terminal"];
    assert_eq!(result["text"]["status"], "pending_approval", "{report:#}");
    assert!(
        result["text"]["error"]
            .as_str()
            .unwrap()
            .contains("Nobody answered"),
        "{report:#}"
    );
    assert!(!workspace.path().join("late").exists());
}

/// An operator's "always" is acknowledged (200) only once the allowlist file holding
/// the rule is on disk: while another writer holds the file's lock the console's
/// request waits; after the 200 the server is killed with SIGKILL at once, and the
/// rule is in the file. (Before, the 200 came as the answer was handed to the call,
/// ahead of the write: 6 of 29 acknowledged rules were lost to kill -9.)
#[test]
fn an_operator_s_always_is_on_disk_before_it_is_acknowledged() {
    let workspace = TempDir::new().unwrap();
    let state = TempDir::new().unwrap();
    let allowlist = state.path().join("approvals.json");
    let policy = state.path().join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            "[mounts.workspace]\npath = \"{ws}\"\naccess = \"rw\"\n\n[tools.terminal]\nterminal = true\n\n\
             [terminal]\ncwd = \"{ws}\"\n\n[terminal.approval]\nallowlist_file = \"{list}\"\n\n\
             [server]\nadmin_token_sha256 = [\"{admin}\"]\n",
            ws = workspace.path().display(),
            list = allowlist.display(),
            admin = sha256_hex(ADMIN_TOKEN),
        ),
    )
    .unwrap();
    let mut args = bundled_args(workspace.path());
    args.extend(["--policy".to_owned(), policy.display().to_string()]);
    let mut server = HttpServer::start_with(args, &[]);
    // A client that cannot be asked: the console answers.
    let url = server.url.clone();
    let token = server
        .token
        .clone()
        .expect("serve made the operator's token");
    // The console is the policy's: its URL carries no token.
    let console = server.log.wait_for(|l| l.contains("console at ")).unwrap();
    assert!(
        console.ends_with("/console (log in with an admin token of the policy)"),
        "{console}"
    );
    let call = std::thread::spawn(move || {
        let addr = url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned();
        // The server may be killed before it answers: any ending will do.
        let _ = std::net::TcpStream::connect(&addr).map(|mut stream| {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": "terminal", "arguments": {"command": "git reset --hard"},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"}
                }}})
            .to_string();
            let _ = write!(
                stream,
                "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
                 Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
                 Mcp-Method: tools/call\r\nMcp-Name: terminal\r\nAuthorization: Bearer {token}\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.read_to_end(&mut Vec::new());
        });
    });
    let start = Instant::now();
    let pending = loop {
        if let Some(first) = console_pending(&server).into_iter().next() {
            break first;
        }
        assert!(start.elapsed() < HANG_GUARD, "the console was never asked");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(pending["always_persists"], true, "{pending}");
    // Another writer holds the list's lock (as the server's own writes take it).
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(allowlist.with_extension("lock"))
        .unwrap();
    lock.lock().unwrap();
    let answering = {
        let addr = server.addr();
        let id = pending["id"].clone();
        std::thread::spawn(move || {
            let bearer = format!("Bearer {ADMIN_TOKEN}");
            let body = r#"{"answer": "always"}"#;
            let mut stream = std::net::TcpStream::connect(&addr).unwrap();
            write!(
                stream,
                "POST /approvals/{id} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {bearer}\r\n\
                 Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
            let mut response = String::new();
            stream.read_to_string(&mut response).unwrap();
            response
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        !answering.is_finished(),
        "the console was answered before the rule was written"
    );
    lock.unlock().unwrap();
    let response = answering.join().unwrap();
    // Acknowledged: kill the server at once, before it could do anything more.
    let _ = server.child.kill();
    let _ = server.child.wait();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("approved_always"), "{response}");
    let kept = hermetic::approval::AllowlistFile::new(&allowlist)
        .load()
        .unwrap();
    assert_eq!(kept, vec![hermetic::approval::RuleId::GitDestructive]);
    call.join().unwrap();
}

// ── Hermes agent 0.19's own MCP client (tests/mcp/hermes_client.py) ─────────────────

/// The venv with `hermes-agent[mcp]==0.19.0` (.ci/run makes it): `HERMES_VENV`, or
/// `target/venv-hermes` in the workspace.
fn hermes_python() -> PathBuf {
    let venv = std::env::var_os("HERMES_VENV").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/venv-hermes"),
        PathBuf::from,
    );
    let python = venv.join("bin/python");
    let probe = Command::new(&python)
        .args(["-c", "import tools.mcp_tool, mcp"])
        .output();
    assert!(
        probe.as_ref().is_ok_and(|p| p.status.success()),
        "the Hermes agent venv is missing or broken at {}: python3 -m venv {0} && \
         {0}/bin/pip install 'hermes-agent[mcp]==0.19.0' (.ci/run does)\n{}",
        venv.display(),
        probe.map_or_else(
            |e| e.to_string(),
            |p| String::from_utf8_lossy(&p.stderr).into_owned()
        )
    );
    python
}

#[test]
fn hermes_agent_approves_once_declines_and_never_offers_a_hardline_command() {
    use std::io::Write;
    let python = hermes_python();
    let workspace = TempDir::new().unwrap();
    let server = HttpServer::start_with(bundled_args(workspace.path()), &[]);
    let call = |command: &str| format!("terminal={}", json!({ "command": command }));
    let mut cmd = Command::new(python);
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/hermes_client.py"))
        .args(["--url", &server.url])
        .args([
            "--token",
            server.token.as_deref().expect("serve printed no token"),
        ])
        .args([
            "--call",
            &call("rm -rf scratch && touch approved && echo approved-run"),
        ])
        .args(["--call", &call("rm -rf scratch && touch declined")])
        .args(["--call", &call("rm -rf / && touch hardline")])
        .current_dir(workspace.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    // What the user types at Hermes's two prompts: [o]nce, then [d]eny. The hardline
    // command must not prompt: a third prompt would read end-of-file.
    child.stdin.take().unwrap().write_all(b"o\nd\n").unwrap();
    let stderr = Lines::collect(child.stderr.take().unwrap());
    let mut running = Running {
        stdout: Lines::collect(child.stdout.take().unwrap()),
        stderr,
        child,
    };
    let report = running.report();
    let calls = report["calls"].as_array().unwrap();
    let out = running.stdout.text();
    // Hermes told its user what it did with each answer.
    assert!(out.contains("Allowed once"), "{out}");
    assert!(out.contains("Denied"), "{out}");

    // "Allowed once" in Hermes: the command ran.
    assert_eq!(calls[0]["prompts"], 1, "{report:#}");
    let result = &calls[0]["result"]["result"];
    assert_eq!(result["exit_code"], 0, "{report:#}");
    assert_eq!(result["output"], "approved-run", "{report:#}");
    assert!(workspace.path().join("approved").exists());

    // "Denied" in Hermes: a refusal by the user, and nothing ran.
    assert_eq!(calls[1]["prompts"], 1, "{report:#}");
    let result = &calls[1]["result"]["error"];
    assert_eq!(result["status"], "blocked", "{report:#}");
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .contains(DENIED_BY_THE_USER),
        "{report:#}"
    );
    assert!(!workspace.path().join("declined").exists());

    // Hardline: blocked without a prompt.
    assert_eq!(calls[2]["prompts"], 0, "{report:#}");
    assert_eq!(
        calls[2]["result"]["error"]["status"], "blocked",
        "{report:#}"
    );
    assert!(!workspace.path().join("hardline").exists());
    assert_eq!(report["prompts"], 2, "{report:#}");
}

#[test]
fn terminal_output_reaches_the_client_as_progress_while_the_command_runs() {
    let workspace = TempDir::new().unwrap();
    let server = HttpServer::start_with(bundled_args(workspace.path()), &[]);
    // The command waits for a file the test writes after the client has seen progress,
    // so the first progress notification must have come from output, mid-command.
    let call = format!(
        "terminal={}",
        json!({"command": "echo first; while [ ! -e go ]; do sleep 0.05; done; echo second"})
    );
    let mut running = Running::spawn(client_with(
        "long_call",
        "legacy",
        &Target::Http(&server),
        &["--call", &call],
    ));
    running.wait_line("STARTED");
    std::fs::write(workspace.path().join("go"), "").unwrap();
    let report = running.report();
    let output = report["result"]["text"]["output"].as_str().unwrap();
    assert_eq!(output, "first\nsecond", "{report:#}");
}

/// Issue 32, as it was reproduced over MCP stdio with the embedded defaults: `rm -rf
/// victim` is refused, but it was sent to a background bash in pieces — `write "r"`,
/// `write "m -rf victim"`, `submit " "` — each judged alone, the whitespace not at all.
/// Now the pieces are held until the line is complete, and the line is refused.
#[test]
fn stdio_a_background_shell_cannot_be_fed_a_refused_command_in_pieces() {
    let workspace = TempDir::new().unwrap();
    let victim = workspace.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(victim.join("precious"), "keep me").unwrap();
    let process = |action: &str, data: &str| {
        format!(
            "process={}",
            json!({"action": action, "session_id": "$ID", "data": data})
        )
    };
    let calls = [
        format!("terminal={}", json!({"command": "rm -rf victim"})),
        format!(
            "terminal={}",
            json!({"command": "bash", "background": true})
        ),
        process("write", "r"),
        process("write", "m -rf victim"),
        process("submit", " "),
        // The refused line is discarded: this one runs alone, and once the shell has
        // exited after it, anything delivered before it has run too.
        process("submit", "touch after; exit"),
        format!(
            "process={}",
            json!({"action": "wait", "session_id": "$ID", "timeout": 20})
        ),
    ];
    let mut cmd = Command::new(mcp_python());
    cmd.arg(client_script()).args(["sequence", "legacy"]);
    for c in &calls {
        cmd.args(["--call", c]);
    }
    cmd.arg("--stdio")
        .arg(env!("CARGO_BIN_EXE_hermetic"))
        .args(bundled_args(workspace.path()))
        .args(["serve", "--stdio"]);
    hermetic_env(&mut cmd)
        .current_dir(workspace.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let report = Running::spawn(cmd).report();
    let results = report["calls"].as_array().unwrap();
    let text = |i: usize| &results[i]["text"];
    assert_eq!(text(0)["status"], "pending_approval", "{report:#}");
    assert!(
        text(0)["error"]
            .as_str()
            .unwrap()
            .contains("Nobody could be asked"),
        "{report:#}"
    );
    assert_eq!(
        text(1)["output"],
        "Background process started",
        "{report:#}"
    );
    assert_eq!(text(2)["status"], "held", "{report:#}");
    assert_eq!(text(3)["status"], "held", "{report:#}");
    assert_eq!(text(4)["status"], "pending_approval", "{report:#}");
    assert_eq!(text(4)["command"], "rm -rf victim \n", "{report:#}");
    assert_eq!(text(5)["status"], "ok", "{report:#}");
    assert_eq!(text(6)["status"], "exited", "{report:#}");
    assert!(
        workspace.path().join("after").exists(),
        "the shell ran the line after: {report:#}"
    );
    assert!(victim.join("precious").exists(), "the victim survives");
}
