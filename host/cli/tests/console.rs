//! The operator console in a real browser: a real `hermetic serve --http` process with
//! an admin token and the bundled terminal tool, an MCP call whose dangerous command
//! waits for approval, and headless Chromium (Debian's `chromium`, installed by
//! .ci/run) that logs in to `/console` and clicks the answer. The agent's call then
//! returns: the command ran (its output, a marker file) or was denied.
//!
//! Chromium is driven over the DevTools protocol (CDP) on its WebSocket: the few
//! messages needed (`Target.createTarget`/`attachToTarget`, `Page.navigate`,
//! `Runtime.evaluate`, `Page.captureScreenshot`) are written by hand over
//! `tungstenite` instead of a browser-automation crate, which would bring a large
//! async stack for five calls.
//!
//! Screenshots for the book's console page: `HERMETIC_CONSOLE_SCREENSHOTS=docs/src/img
//! cargo test -p hermetic-cli --test console` writes `console-*.png` there (relative paths
//! are from the repository root).
//!
//! Every wait polls with a bound ([`HANG_GUARD`]); nothing asserts on how long
//! anything took.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

use hermetic_test_support::guests::test_cache;
use hermetic_test_support::http::request;
use hermetic_test_support::lines::Lines;
use hermetic_test_support::mcp_http::{message, sessionless_headers, with_meta};
use hermetic_test_support::serve_process::ServeProcess;
use hermetic_test_support::tokens::sha256_hex;
use serde_json::{Value, json};
use std::ffi::OsStr;
use std::io::Read;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// Longest any wait may take before the test gives up (a hang guard, not a timing
/// assertion: on a healthy machine each wait ends in a second or two).
const HANG_GUARD: Duration = Duration::from_secs(120);

/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(100);

const ADMIN_TOKEN: &str = "hmt_console_admin_token";
const ACME_TOKEN: &str = "hmt_console_acme_token";
const GLOBEX_TOKEN: &str = "hmt_console_globex_token";

// ── hermetic serve ───────────────────────────────────────────────────────────────

/// A `hermetic serve --http 127.0.0.1:0` process with the bundled tools, a policy
/// with an admin token and two tenants (`acme` may use the terminal), and an audit
/// log; killed on drop.
struct Server {
    process: ServeProcess,
    workspace: TempDir,
    _state: TempDir,
    /// The token [`Server::call_terminal`] calls with.
    token: String,
}

impl Server {
    fn start() -> Self {
        let workspace = TempDir::new().unwrap();
        let state = TempDir::new().unwrap();
        let policy = state.path().join("policy.toml");
        std::fs::write(
            &policy,
            format!(
                r#"[mounts.workspace]
path = "{workspace}"
access = "rw"

[tools.terminal]
terminal = true
[tools.process]
terminal = true

[tenants.acme]
toolsets = ["terminal", "file"]
token_sha256 = ["{acme}"]

[tenants.globex]
toolsets = ["file", "weather"]
token_sha256 = ["{globex}"]

[server]
admin_token_sha256 = ["{admin}"]
"#,
                workspace = workspace.path().display(),
                acme = sha256_hex(ACME_TOKEN),
                globex = sha256_hex(GLOBEX_TOKEN),
                admin = sha256_hex(ADMIN_TOKEN),
            ),
        )
        .unwrap();
        let mut server = Self::spawn(
            workspace,
            state,
            &[OsStr::new("--policy"), policy.as_os_str()],
            &[],
        );
        ACME_TOKEN.clone_into(&mut server.token);
        server
    }

    /// `hermetic serve` with no policy and no flags but an audit log (and `/metrics`):
    /// the operator's own server, its tokens made at start.
    fn start_bare() -> Self {
        let mut server = Self::spawn(
            TempDir::new().unwrap(),
            TempDir::new().unwrap(),
            &[],
            &["--metrics"],
        );
        let header = server.wait_log("Authorization: Bearer ");
        server.token = header
            .split("Authorization: Bearer ")
            .nth(1)
            .unwrap()
            .trim()
            .to_owned();
        server
    }

    /// `hermetic serve --http 127.0.0.1:0` in `workspace` with `args` (and
    /// `serve_args` for serve), its audit log in `state`.
    fn spawn(workspace: TempDir, state: TempDir, args: &[&OsStr], serve_args: &[&str]) -> Self {
        let audit = state.path().join("audit.jsonl");
        let mut serve = Command::new(env!("CARGO_BIN_EXE_hermetic"));
        // The suites' shared compiled-code cache; plain log lines to match on.
        serve
            .env("HERMETIC_CACHE_DIR", test_cache())
            .env("NO_COLOR", "1")
            .env_remove("HERMETIC_LOG")
            .arg("--workspace")
            .arg(workspace.path())
            .args(args)
            .args(["--log-level", "warn,hermetic=info"])
            .args(["serve", "--http", "127.0.0.1:0", "--audit"])
            .arg(&audit)
            .args(serve_args);
        Self {
            process: ServeProcess::spawn(serve, HANG_GUARD),
            workspace,
            _state: state,
            token: String::new(),
        }
    }

    /// Waits for a log line containing `needle`.
    fn wait_log(&self, needle: &str) -> String {
        let log = &self.process.log;
        log.wait_for(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("the server never logged {needle:?}:\n{}", log.text()))
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.process.addr)
    }

    /// The console token of a server started by [`Self::start_bare`], from the console
    /// URL it printed: another token than the MCP one ([`Self::token`]).
    fn console_token(&mut self) -> String {
        let line = self.wait_log("console at ");
        let url = line.split("console at ").nth(1).unwrap().trim();
        let token = url
            .strip_prefix(&self.url("/console#token="))
            .unwrap_or_else(|| panic!("no token in the console URL: {line}"))
            .to_owned();
        assert!(token.starts_with("hmt_") && token != self.token, "{line}");
        token
    }

    /// One request to this server (`token` as a bearer token): its status and body.
    fn request(&self, method: &str, path: &str, token: &str, body: &str) -> (u16, String) {
        let bearer = format!("Bearer {token}");
        let reply = request(
            &self.process.addr,
            method,
            path,
            &[
                ("Authorization", bearer.as_str()),
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
            ],
            body.as_bytes(),
            HANG_GUARD,
        );
        (reply.status, reply.body)
    }

    /// A 2026-07-28 (sessionless) `tools/call` of the terminal as tenant `acme`, from
    /// a thread: its client declares no elicitation, so the approval waits for the
    /// console. The handle gives the call's tool result.
    fn call_terminal(&self, command: &str) -> std::thread::JoinHandle<Value> {
        let addr = self.process.addr.clone();
        let params = with_meta(
            json!({"name": "terminal", "arguments": {"command": command}}),
            "console-test",
            json!({}),
        );
        let mut headers = vec![("Authorization", format!("Bearer {}", self.token))];
        headers.extend(sessionless_headers("tools/call", &params));
        let body = message("tools/call", params);
        std::thread::spawn(move || {
            let reply = request(&addr, "POST", "/mcp", &headers, body.as_bytes(), HANG_GUARD);
            assert_eq!(reply.status, 200, "{} {}", reply.head, reply.body);
            let reply = reply.json();
            let text = reply["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_else(|| panic!("no tool result: {reply}"));
            serde_json::from_str(text).unwrap()
        })
    }
}

// ── Chromium over the DevTools protocol ──────────────────────────────────────────

/// Headless Chromium with one page, attached over CDP; killed on drop.
struct Browser {
    child: Child,
    socket: tungstenite::WebSocket<TcpStream>,
    session: String,
    next_id: u64,
    _profile: TempDir,
}

/// The Chromium binary: `$HERMETIC_CHROMIUM`, else `chromium` on `PATH`. Missing is a
/// failure, not a skip: .ci/run installs it.
fn chromium() -> PathBuf {
    if let Some(path) = std::env::var_os("HERMETIC_CHROMIUM") {
        return PathBuf::from(path);
    }
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("chromium"))
            .find(|candidate| candidate.is_file())
    });
    found.unwrap_or_else(|| {
        panic!(
            "headless Chromium is needed for the console tests and was not found: \
             apt-get install -y chromium (.ci/run does), or set HERMETIC_CHROMIUM"
        )
    })
}

impl Browser {
    fn launch() -> Self {
        let profile = TempDir::new().unwrap();
        let mut child = Command::new(chromium())
            .args([
                "--headless",
                "--remote-debugging-port=0",
                // Root (CI) cannot use Chromium's own sandbox; the page is our console.
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                // Nothing but loopback: no update checks, sync or other phoning home.
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--hide-scrollbars",
                "--window-size=1280,900",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("could not start {}: {e}", chromium().display()));
        // Collected by a thread, so Chromium never blocks on a full pipe.
        let log = Lines::collect(child.stderr.take().unwrap(), HANG_GUARD);
        let line = log
            .wait_for(|l| l.contains("ws://") && l.contains("DevTools listening on"))
            .unwrap_or_else(|| {
                panic!(
                    "Chromium did not print its DevTools address:\n{}",
                    log.text()
                )
            });
        let url = line[line.find("ws://").unwrap()..].trim().to_owned();
        let host = url
            .trim_start_matches("ws://")
            .split('/')
            .next()
            .unwrap()
            .to_owned();
        let stream = TcpStream::connect(&host).unwrap();
        stream.set_read_timeout(Some(HANG_GUARD)).unwrap();
        let (socket, _) = tungstenite::client(url.as_str(), stream).unwrap();
        let mut browser = Self {
            child,
            socket,
            session: String::new(),
            next_id: 0,
            _profile: profile,
        };
        let target = browser.send(None, "Target.createTarget", json!({"url": "about:blank"}));
        let attached = browser.send(
            None,
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        );
        browser.session = attached["sessionId"].as_str().unwrap().to_owned();
        browser.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false}),
        );
        browser
    }

    /// One CDP command (on the page's session when `session` is given); its result.
    /// Events that arrive meanwhile are skipped.
    fn send(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        self.socket
            .send(tungstenite::Message::text(message.to_string()))
            .unwrap();
        loop {
            let frame = self
                .socket
                .read()
                .unwrap_or_else(|e| panic!("CDP {method}: {e}"));
            let tungstenite::Message::Text(text) = frame else {
                continue;
            };
            let reply: Value = serde_json::from_str(text.as_str()).unwrap();
            if reply["id"] != json!(id) {
                continue;
            }
            if let Some(error) = reply.get("error") {
                panic!("CDP {method} failed: {error}");
            }
            return reply["result"].clone();
        }
    }

    /// A CDP command on the page.
    fn call(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.send(Some(&session), method, params)
    }

    /// Evaluates `expression` in the page; its value (an exception fails the test).
    fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        );
        if let Some(exception) = result.get("exceptionDetails") {
            panic!("{expression}\nthrew: {exception}");
        }
        result["result"]["value"].clone()
    }

    /// Polls `expression` until it is truthy (not false, null, "" or 0); its value.
    fn wait_for(&mut self, what: &str, expression: &str) -> Value {
        let start = Instant::now();
        loop {
            let value = self.eval(expression);
            let truthy = !matches!(&value, Value::Null | Value::Bool(false))
                && value != json!("")
                && value != json!(0);
            if truthy {
                return value;
            }
            if start.elapsed() > HANG_GUARD {
                let page = self.eval("document.body ? document.body.innerText : ''");
                panic!("hang guard: gave up waiting for {what}; the page says:\n{page}");
            }
            std::thread::sleep(POLL);
        }
    }

    fn navigate(&mut self, url: &str) {
        self.call("Page.navigate", json!({ "url": url }));
        self.wait_for(
            "the page to load",
            "document.readyState === 'complete' && location.href !== 'about:blank'",
        );
    }

    /// Saves the whole page as `dir/name.png` when screenshots were asked for.
    fn screenshot(&mut self, name: &str) {
        let Some(dir) = screenshot_dir() else {
            return;
        };
        // As tall as what is on the page, not the window.
        let height = self
            .eval("Math.ceil(Math.min(4000, document.querySelector('main').getBoundingClientRect().bottom + 8))")
            .as_u64()
            .unwrap_or(900)
            .max(200);
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1280, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        );
        let shot = self.call("Page.captureScreenshot", json!({"format": "png"}));
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false}),
        );
        let png = data_encoding::BASE64
            .decode(shot["data"].as_str().unwrap().as_bytes())
            .unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `$HERMETIC_CONSOLE_SCREENSHOTS`, relative to the repository root.
fn screenshot_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("HERMETIC_CONSOLE_SCREENSHOTS")?);
    Some(if dir.is_absolute() {
        dir
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(dir)
    })
}

/// A JavaScript string literal of `text`.
fn js(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// Opens the console and logs in with `token`.
fn log_in(browser: &mut Browser, server: &Server, token: &str) {
    browser.navigate(&server.url("/"));
    browser.wait_for(
        "the login form",
        "location.pathname === '/console' && !!document.getElementById('login')",
    );
    browser.eval(&format!(
        "document.getElementById('token').value = {}; \
         document.getElementById('login-button').click(); true",
        js(token)
    ));
}

/// Waits until the console lists the approval of `command`; returns its row's id.
fn pending_row(browser: &mut Browser, command: &str) -> String {
    browser
        .wait_for(
            "the pending approval in the console",
            &format!(
                "(() => {{ for (const row of document.querySelectorAll('#approvals tbody tr')) \
                 if (row.querySelector('.cmd').textContent === {}) return row.dataset.id; \
                 return null; }})()",
                js(command)
            ),
        )
        .as_str()
        .unwrap()
        .to_owned()
}

/// Clicks `action`'s button in the row of approval `id`.
fn click(browser: &mut Browser, id: &str, action: &str) {
    let clicked = browser.eval(&format!(
        "(() => {{ const b = document.querySelector('#approvals tr[data-id=\"{id}\"] \
         button[data-action=\"{action}\"]'); if (!b) return false; b.click(); return true; }})()"
    ));
    assert_eq!(clicked, json!(true), "no {action} button for approval {id}");
}

// ── The tests ────────────────────────────────────────────────────────────────────

/// A dangerous command with markup in it: the console must show it as text.
const APPROVED_COMMAND: &str =
    "rm -rf 'scratch-<b>old</b>' && touch console-marker && echo console-approved";

#[test]
fn approving_in_the_console_runs_the_waiting_agent_s_command() {
    let server = Server::start();
    let mut browser = Browser::launch();

    // A wrong token is refused and the console shows nothing.
    log_in(&mut browser, &server, "hmt_not_the_admin_token");
    let refused = browser.wait_for(
        "the refusal",
        "document.getElementById('login-error').textContent",
    );
    assert!(refused.as_str().unwrap().contains("refused"), "{refused}");
    assert_eq!(
        browser.eval("document.getElementById('app').hidden"),
        json!(true)
    );
    browser.eval(
        "document.getElementById('login-error').textContent = ''; \
         document.getElementById('token').value = ''",
    );
    browser.screenshot("console-login");

    let call = server.call_terminal(APPROVED_COMMAND);
    log_in(&mut browser, &server, ADMIN_TOKEN);
    let id = pending_row(&mut browser, APPROVED_COMMAND);

    let row = browser.eval(&format!(
        "(() => {{ const r = document.querySelector('#approvals tr[data-id=\"{id}\"]'); \
         return {{ cells: [...r.cells].map(c => c.textContent), \
                   markup: r.querySelectorAll('.cmd b').length, \
                   always: r.querySelector('button[data-action=always]').textContent, \
                   alwaysTitle: r.querySelector('button[data-action=always]').title }}; }})()"
    ));
    let cells = row["cells"].as_array().unwrap();
    assert_eq!(cells[1], json!(APPROVED_COMMAND), "{row}");
    assert_eq!(
        row["markup"],
        json!(0),
        "the command was rendered as HTML: {row}"
    );
    assert!(
        cells[2].as_str().unwrap().contains("fs.rm_recursive"),
        "{row}"
    );
    assert_eq!(cells[3], json!("acme"), "{row}");
    assert_eq!(cells[4], json!("terminal"), "{row}");
    assert!(cells[5].as_str().unwrap().ends_with(" s"), "age: {row}");
    // No allowlist_file in this policy: "always" is for the session, and says so.
    assert_eq!(row["always"], json!("Always (session only)"), "{row}");
    assert!(
        row["alwaysTitle"]
            .as_str()
            .unwrap()
            .contains("no allowlist_file"),
        "{row}"
    );
    // The tools view: acme's terminal is listed; globex cannot see it.
    browser.wait_for(
        "the tools view",
        "!!document.querySelector('[data-tenant=acme] tr[data-tool=terminal]')",
    );
    let tools = browser.eval(
        "(() => { const row = (t, n) => { \
             const r = document.querySelector(`[data-tenant=${t}] tr[data-tool=${n}]`); \
             return r ? [...r.cells].map(c => c.textContent) : null; }; \
           return { acme: row('acme', 'terminal'), globexTerminal: row('globex', 'terminal'), \
                    weather: row('globex', 'weather'), \
                    hidden: document.querySelector('[data-tenant=globex] p').textContent }; })()",
    );
    assert_eq!(
        tools["acme"],
        json!(["terminal", "terminal", "listed", ""]),
        "{tools}"
    );
    assert_eq!(tools["globexTerminal"], Value::Null, "{tools}");
    assert!(
        tools["hidden"].as_str().unwrap().contains("terminal"),
        "{tools}"
    );
    // Unavailable, with the reason tools/list leaves it out for.
    assert_eq!(tools["weather"][2], "unavailable", "{tools}");
    assert!(
        tools["weather"][3]
            .as_str()
            .unwrap()
            .contains("WEATHER_API_KEY"),
        "{tools}"
    );
    browser.screenshot("console-approvals");

    assert!(!server.workspace.path().join("console-marker").exists());
    click(&mut browser, &id, "once");
    let result = call.join().unwrap();
    assert_eq!(result["exit_code"], 0, "{result}");
    assert!(
        result["output"]
            .as_str()
            .unwrap()
            .contains("console-approved"),
        "{result}"
    );
    assert!(server.workspace.path().join("console-marker").exists());

    // The row leaves the list, and the audit view shows the answer.
    browser.wait_for(
        "the approval to leave the list",
        "document.querySelectorAll('#approvals tbody tr').length === 0",
    );
    let audit = browser.wait_for(
        "the approval answer and the call in the audit view",
        "(() => { const rows = [...document.querySelectorAll('#audit tbody tr')] \
             .map(r => [...r.cells].map(c => c.textContent)); \
           const answered = rows.some(r => r[1] === 'approval_answer' && r[4] === 'approved_once'); \
           const called = rows.some(r => r[1] === 'call' && r[3] === 'terminal' && r[4] === 'ok'); \
           return answered && called ? JSON.stringify(rows) : null; })()",
    );
    assert!(
        audit.as_str().unwrap().contains("scratch-<b>old</b>"),
        "{audit}"
    );
    browser.screenshot("console-after");
}

#[test]
fn denying_in_the_console_gives_the_agent_a_denial() {
    let server = Server::start();
    let mut browser = Browser::launch();
    log_in(&mut browser, &server, ADMIN_TOKEN);
    browser.wait_for(
        "the console",
        "!document.getElementById('app').hidden && \
         !document.getElementById('approvals-empty').hidden",
    );
    let command = "rm -rf build && touch denied-marker";
    let call = server.call_terminal(command);
    let id = pending_row(&mut browser, command);
    // The deadline is shown in the row, not only in a tooltip.
    browser.wait_for(
        "the pending approval's deadline",
        &format!(
            "/^\\d+ ?(s|m|min|h)/.test(document.querySelector('#approvals tr[data-id=\"{id}\"] td.deadline').textContent)"
        ),
    );
    click(&mut browser, &id, "deny");
    let result = call.join().unwrap();
    assert_eq!(result["status"], "blocked", "{result}");
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .contains("DENIED by the operator"),
        "the console's no is the operator's: {result}"
    );
    assert!(!server.workspace.path().join("denied-marker").exists());
    browser.wait_for(
        "the denial in the audit view, naming who answered",
        "document.querySelector('#audit tbody').textContent.includes('answered by console')",
    );
    browser.wait_for(
        "the call's command in its audit row",
        &format!(
            "[...document.querySelectorAll('#audit tbody tr')].some(r => \
             r.cells[1].textContent === 'call' && r.textContent.includes({}))",
            js(&format!("$ {command}"))
        ),
    );
}

/// Issue 52: `hermetic serve` alone prints the console's URL with its token (the
/// Jupyter convention): opening it logs the operator in, the token leaves the address
/// bar, and the operator's waiting commands are there to answer.
#[test]
fn the_url_serve_prints_opens_the_console_logged_in() {
    let mut server = Server::start_bare();
    let console_token = server.console_token();
    let url = server.url(&format!("/console#token={console_token}"));
    let mut browser = Browser::launch();
    browser.navigate(&url);
    browser.wait_for(
        "the console, logged in",
        "!document.getElementById('app').hidden && location.hash === ''",
    );
    assert_eq!(
        browser.eval("sessionStorage.getItem('hermetic.console.token')"),
        json!(console_token)
    );
    let command = "rm -rf build && touch operator-marker";
    let call = server.call_terminal(command);
    let id = pending_row(&mut browser, command);
    click(&mut browser, &id, "once");
    let result = call.join().unwrap();
    assert_eq!(result["exit_code"], 0, "{result}");
    assert!(server.workspace.path().join("operator-marker").exists());
}

/// Review r3, finding 2: `hermetic serve` without a policy made one token, which both
/// called tools and answered approvals — so an agent that had it (a project's
/// `.mcp.json`, its environment) approved its own `rm -rf`. Now the MCP token gets 401
/// on every endpoint of the console and the approvals; only the console token (in the
/// console URL only) lists and answers them, and it calls no tool.
#[test]
fn the_mcp_token_can_neither_list_nor_answer_approvals() {
    let mut server = Server::start_bare();
    let console_token = server.console_token();
    let mcp_token = server.token.clone();
    assert!(
        !server
            .process
            .log
            .text()
            .lines()
            .any(|l| l.contains(&console_token) && !l.contains("console at ")),
        "the console token is printed outside its URL"
    );
    let command = "rm -rf build && touch self-approved-marker";
    let call = server.call_terminal(command);
    // Wait until the call is pending (seen with the console token).
    let start = Instant::now();
    let id = loop {
        let (status, body) = server.request("GET", "/approvals", &console_token, "");
        assert_eq!(status, 200, "{body}");
        let list: Value = serde_json::from_str(&body).unwrap();
        if let Some(id) = list
            .as_array()
            .and_then(|l| {
                l.iter()
                    .find(|a| a.to_string().contains("self-approved-marker"))
            })
            .map(|a| a["id"].clone())
        {
            break id;
        }
        assert!(start.elapsed() < HANG_GUARD, "never pending: {body}");
        std::thread::sleep(POLL);
    };
    let answer = json!({"answer": "once"}).to_string();
    for (method, path, body) in [
        ("GET", "/approvals".to_owned(), ""),
        ("POST", format!("/approvals/{id}"), answer.as_str()),
        ("GET", "/admin/audit".to_owned(), ""),
        ("GET", "/admin/tools".to_owned(), ""),
        ("GET", "/metrics".to_owned(), ""),
    ] {
        let (status, reply) = server.request(method, &path, &mcp_token, body);
        assert_eq!(status, 401, "{method} {path} with the MCP token: {reply}");
    }
    let (_, refused) = server.request("GET", "/approvals", &mcp_token, "");
    assert!(refused.contains("not an admin token"), "{refused}");
    // The console token calls no tool.
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let (status, _) = server.request("POST", "/mcp", &console_token, &list.to_string());
    assert_eq!(status, 401);
    // The console token answers: no, and the agent's call is denied.
    let deny = json!({"answer": "deny"}).to_string();
    let (status, reply) =
        server.request("POST", &format!("/approvals/{id}"), &console_token, &deny);
    assert_eq!(status, 200, "{reply}");
    let result = call.join().unwrap();
    assert_eq!(result["status"], "blocked", "{result}");
    assert!(
        !server
            .workspace
            .path()
            .join("self-approved-marker")
            .exists()
    );
    for path in ["/admin/audit", "/admin/tools", "/metrics"] {
        let (status, reply) = server.request("GET", path, &console_token, "");
        assert_eq!(status, 200, "{path} with the console token: {reply}");
    }
}

/// `HERMETIC_CONSOLE_TOKEN` fixes the console token (named in the URL line, not
/// printed); one equal to `HERMETIC_TOKEN` stops the start: the agent's token would
/// answer its approvals again.
#[test]
fn the_console_token_comes_from_its_own_variable_and_must_differ() {
    let mcp = "hmt_fixed_mcp_token_for_this_test_0123456789";
    let console = "hmt_fixed_console_token_for_this_test_012345";
    let workspace = TempDir::new().unwrap();
    let run = |console: &str| {
        let mut serve = Command::new(env!("CARGO_BIN_EXE_hermetic"));
        serve
            .env("HERMETIC_TOKEN", mcp)
            .env("HERMETIC_CONSOLE_TOKEN", console)
            .env("NO_COLOR", "1")
            .arg("--workspace")
            .arg(workspace.path())
            .args(["serve", "--http", "127.0.0.1:0"]);
        serve
    };
    let mut same = run(mcp)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = String::new();
    same.stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(!same.wait().unwrap().success());
    assert!(
        stderr.contains("HERMETIC_CONSOLE_TOKEN must differ from HERMETIC_TOKEN"),
        "{stderr}"
    );

    let server = Server {
        process: ServeProcess::spawn(run(console), HANG_GUARD),
        workspace,
        _state: TempDir::new().unwrap(),
        token: mcp.to_owned(),
    };
    let url = server.wait_log("console at ");
    assert!(
        url.ends_with("(log in with $HERMETIC_CONSOLE_TOKEN)"),
        "{url}"
    );
    assert!(
        !server
            .process
            .log
            .text()
            .lines()
            .any(|l| l.contains(console) || l.contains(mcp))
    );
    assert_eq!(server.request("GET", "/approvals", console, "").0, 200);
    assert_eq!(server.request("GET", "/approvals", mcp, "").0, 401);
}
