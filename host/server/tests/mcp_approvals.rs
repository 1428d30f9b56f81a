//! The operator console's approvals endpoint over real HTTP, with the server in this
//! process: approval requests are raised from a thread exactly as the approval gate
//! raises them (a blocking [`Approver::request`] with a deadline), and answered with
//! `GET /approvals` and `POST /approvals/{id}`. Also: shutdown hooks run when the
//! server stops.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

use hermetic::approval::{
    AllowlistFile, ApprovalConfig, ApprovalContext, ApprovalGate, ApprovalRequest, Approver,
    Outcome, RuleId, SessionKey, Tier, Verdict,
};
use hermetic::{OperatorPolicy, Registry, RegistryOptions};
use hermetic_server::McpApprover;
use hermetic_server::{McpServer, ServeOptions, auth};
use hermetic_test_support::in_process::{Serving, request_to, serve_http};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Longest any wait may take (a hang guard, not a timing assertion).
const HANG_GUARD: Duration = Duration::from_secs(60);

const ADMIN: &str = "hmt_admin_test_token";

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
    fn start() -> Self {
        let workspace = tempfile::TempDir::new().unwrap();
        let registry = Registry::new(RegistryOptions::new(OperatorPolicy::with_workspace(
            workspace.path().to_path_buf(),
        )))
        .unwrap();
        let mut options = ServeOptions::default();
        options.access.admin_tokens.push(auth::digest(ADMIN));
        let server = McpServer::new(Arc::new(registry), options);
        Self {
            http: serve_http(server, HANG_GUARD),
            _workspace: workspace,
        }
    }

    /// (status, body) of one request.
    fn request(&self, method: &str, path: &str, token: Option<&str>, body: &str) -> (u16, String) {
        let reply = self.http.request(method, path, token, body.as_bytes());
        (reply.status, reply.body)
    }

    /// Waits until the console lists a pending request and returns it.
    fn pending(&self) -> Value {
        let start = Instant::now();
        loop {
            let (status, body) = self.request("GET", "/approvals", Some(ADMIN), "");
            assert_eq!(status, 200, "{body}");
            let list: Value = serde_json::from_str(&body).unwrap();
            if let Some(first) = list.as_array().unwrap().first() {
                return first.clone();
            }
            assert!(start.elapsed() < HANG_GUARD, "no approval request arrived");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn answer(&self, id: &Value, answer: &str) -> (u16, String) {
        self.request(
            "POST",
            &format!("/approvals/{id}"),
            Some(ADMIN),
            &json!({ "answer": answer }).to_string(),
        )
    }

    fn stop(self) {
        self.http.stop();
    }
}

fn request(command: &str) -> ApprovalRequest {
    ApprovalRequest::new(
        SessionKey::new("acme", "session-1"),
        command,
        Tier::Dangerous,
        vec![RuleId::RmRecursive],
        vec![command.to_owned()],
    )
}

/// Puts `command` of acme's session-1 through a real approval gate with these
/// settings, from a thread, asking `approver`: the console's answer comes back as the
/// gate's verdict (and the console hears it was acted on only then).
fn ask_with(
    config: &ApprovalConfig,
    approver: Arc<dyn Approver>,
    command: &str,
) -> std::thread::JoinHandle<Verdict> {
    let gate = ApprovalGate::new(config).unwrap().with_approver(approver);
    let command = command.to_owned();
    std::thread::spawn(move || gate.check(&ApprovalContext::new("acme", "session-1"), &command))
}

fn ask(approver: Arc<dyn Approver>, command: &str) -> std::thread::JoinHandle<Verdict> {
    ask_with(&ApprovalConfig::default(), approver, command)
}

#[test]
fn the_console_lists_pending_approvals_and_its_answers_reach_the_gate() {
    let running = Running::start();
    let broker = running
        .server
        .approvals()
        .expect("admin token → broker")
        .clone();

    let (status, body) = running.request("GET", "/approvals", Some(ADMIN), "");
    assert_eq!((status, body.as_str()), (200, "[]"));

    // Approve for the session.
    let waiter = ask(broker.clone(), "rm -rf build");
    let pending = running.pending();
    assert_eq!(pending["tenant"], "acme");
    assert_eq!(pending["session"], "session-1");
    assert_eq!(pending["command"], "rm -rf build");
    assert_eq!(pending["rules"], json!(["fs.rm_recursive"]));
    assert!(pending["expires_in_ms"].as_u64().unwrap() > 0);
    let (status, body) = running.answer(&pending["id"], "session");
    assert_eq!(status, 200, "{body}");
    let answered: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answered["outcome"], "approved_session", "{body}");
    assert_eq!(waiter.join().unwrap().outcome, Outcome::ApprovedSession);
    // Answered requests leave the list, and cannot be answered twice.
    let (_, body) = running.request("GET", "/approvals", Some(ADMIN), "");
    assert_eq!(body, "[]");
    assert_eq!(running.answer(&pending["id"], "once").0, 404);

    // Deny, through the MCP approver a call gets when its client cannot elicit.
    let approver: Arc<dyn Approver> = Arc::new(McpApprover::new(None, Some(broker.clone())));
    let waiter = ask(approver, "rm -rf /srv/data");
    let pending = running.pending();
    assert_eq!(pending["command"], "rm -rf /srv/data");
    // Only the four choices are answers.
    assert_eq!(running.answer(&pending["id"], "yes please").0, 400);
    assert_eq!(running.answer(&pending["id"], "timeout").0, 400);
    assert_eq!(running.answer(&pending["id"], "deny").0, 200);
    assert_eq!(waiter.join().unwrap().outcome, Outcome::Denied);

    assert_eq!(running.answer(&json!(999_999), "once").0, 404);
    running.stop();
}

#[test]
fn the_console_needs_the_admin_token() {
    let running = Running::start();
    let broker = running.server.approvals().unwrap().clone();
    let waiter = ask(broker, "rm -rf build");
    let pending = running.pending();
    for token in [None, Some("hmt_wrong")] {
        assert_eq!(running.request("GET", "/approvals", token, "").0, 401);
        let path = format!("/approvals/{}", pending["id"]);
        let (status, _) = running.request("POST", &path, token, r#"{"answer":"once"}"#);
        assert_eq!(status, 401);
    }
    // Still pending: nothing was answered without the token.
    assert_eq!(running.pending()["id"], pending["id"]);
    assert_eq!(running.answer(&pending["id"], "once").0, 200);
    assert_eq!(waiter.join().unwrap().outcome, Outcome::ApprovedOnce);
    running.stop();
}

/// An operator's "always" is answered 200 only once the allowlist file holding it is
/// on disk: while the gate cannot write it (another writer holds the file's lock),
/// the console's request waits; once the write is synced, the 200 comes, and the rule
/// is in the file. (Before, the 200 came when the answer was handed to the gate, and
/// a crash before the write lost an acknowledged rule.)
#[test]
fn the_console_s_always_is_acknowledged_only_once_it_is_on_disk() {
    let running = Running::start();
    let broker = running.server.approvals().unwrap().clone();
    let dir = tempfile::TempDir::new().unwrap();
    let file = dir.path().join("allow.json");
    let config = ApprovalConfig {
        allowlist_file: Some(file.clone()),
        ..ApprovalConfig::default()
    };
    let waiter = ask_with(&config, broker, "git reset --hard");
    let pending = running.pending();
    // Another writer holds the list's lock, as `AllowlistFile::add` takes it.
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(file.with_extension("lock"))
        .unwrap();
    lock.lock().unwrap();
    let answering = {
        let addr = running.addr.clone();
        let id = pending["id"].clone();
        std::thread::spawn(move || {
            let reply = request_to(
                &addr,
                "POST",
                &format!("/approvals/{id}"),
                Some(ADMIN),
                br#"{"answer": "always"}"#,
                HANG_GUARD,
            );
            let on_disk = AllowlistFile::new(dir.path().join("allow.json"))
                .load()
                .unwrap();
            (reply.status, reply.body, on_disk, dir)
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !answering.is_finished(),
        "the console was answered before the rule was written"
    );
    lock.unlock().unwrap();
    let (status, body, on_disk, _dir) = answering.join().unwrap();
    assert_eq!(status, 200, "{body}");
    let answered: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answered["outcome"], "approved_always", "{body}");
    assert_eq!(on_disk, vec![RuleId::GitDestructive]);
    assert_eq!(waiter.join().unwrap().outcome, Outcome::ApprovedAlways);
    running.stop();
}

/// An answer whose call has ended (cancelled, or out of time) is not acknowledged as
/// taken: the console gets 409 and nothing ran.
#[test]
fn an_answer_that_reaches_no_call_is_not_acknowledged() {
    let running = Running::start();
    let broker = running.server.approvals().unwrap().clone();
    let cancel = hermetic::CancelToken::new();
    let approver: Arc<dyn Approver> =
        Arc::new(McpApprover::new(None, Some(broker)).with_cancel(cancel.clone()));
    let waiter = ask(approver, "rm -rf build");
    let pending = running.pending();
    cancel.cancel();
    assert_eq!(waiter.join().unwrap().outcome, Outcome::Timeout);
    // Gone from the list, so not found; had the answer raced the cancel, 409.
    let (status, _) = running.answer(&pending["id"], "once");
    assert!(status == 404 || status == 409, "{status}");
    running.stop();
}

#[test]
fn shutdown_hooks_run_when_the_server_stops() {
    let running = Running::start();
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    running
        .server
        .on_shutdown(Box::new(move || flag.store(true, Ordering::SeqCst)));
    assert!(!ran.load(Ordering::SeqCst));
    running.stop();
    assert!(ran.load(Ordering::SeqCst));
}

// ── Elicitation with the official Python SDK ─────────────────────────────────────────
//
// `McpApprover` on its own, with every answer the client can give: a small MCP server
// whose one tool asks the question through it, as a call does when the gate asks its
// `CallOptions::approver`. The client is tests/mcp/client.py's `elicit` scenario; the
// same scenario drives the real terminal tool through `hermetic serve` in
// host/cli/tests/mcp.rs (`a_dangerous_terminal_command_runs_only_after_…`).

mod elicitation {
    use super::*;
    use hyper_util::rt::TokioIo;
    use rmcp::model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    };
    use rmcp::service::RequestContext;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
    use rmcp::{ErrorData, RoleServer, ServerHandler};
    use std::path::Path;
    use std::process::Command;

    #[derive(Clone)]
    struct Asker;

    impl ServerHandler for Asker {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        }

        async fn list_tools(
            &self,
            _request: Option<PaginatedRequestParams>,
            _context: RequestContext<RoleServer>,
        ) -> Result<ListToolsResult, ErrorData> {
            let schema = json!({"type": "object", "properties": {}});
            let schema = schema.as_object().unwrap().clone();
            Ok(ListToolsResult::with_all_items(vec![Tool::new_with_raw(
                "approve_me",
                None,
                Arc::new(schema),
            )]))
        }

        async fn call_tool(
            &self,
            _request: CallToolRequestParams,
            context: RequestContext<RoleServer>,
        ) -> Result<CallToolResponse, ErrorData> {
            // No console: a client that cannot be asked gets Unavailable.
            let approver = McpApprover::new(Some(&context.peer), None);
            let answer = tokio::task::spawn_blocking(move || {
                approver.request(&request("rm -rf build"), Instant::now() + HANG_GUARD)
            })
            .await
            .unwrap()
            .unwrap();
            let text = json!({ "answer": answer }).to_string();
            Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
        }
    }

    /// Serves [`Asker`] on loopback; returns the URL. The runtime lives as long as the
    /// test process.
    fn start() -> String {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                let service = StreamableHttpService::new(
                    || Ok(Asker),
                    Arc::new(LocalSessionManager::default()),
                    StreamableHttpServerConfig::default(),
                );
                loop {
                    let (stream, _) = listener.accept().await.unwrap();
                    let service = service.clone();
                    tokio::spawn(async move {
                        let route = hyper::service::service_fn(move |request| {
                            let service = service.clone();
                            async move {
                                Ok::<_, std::convert::Infallible>(service.handle(request).await)
                            }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), route)
                            .await;
                    });
                }
            });
        });
        let addr = rx.recv_timeout(HANG_GUARD).unwrap();
        format!("http://{addr}/mcp")
    }

    /// Runs the `elicit` scenario; returns its report.
    fn elicit(mode: &str, answer: &str) -> Value {
        let url = start();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/client.py");
        // The venv .ci/run makes (`MCP_VENV`, or target/venv-mcp): Debian's own
        // python3 refuses `pip install` (PEP 668).
        let venv = std::env::var_os("MCP_VENV").map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/venv-mcp"),
            std::path::PathBuf::from,
        );
        let out = Command::new(venv.join("bin/python"))
            .arg(script)
            .args([
                "elicit",
                mode,
                "--url",
                &url,
                "--call",
                "approve_me",
                "--elicit",
                answer,
            ])
            .output()
            .expect("the MCP SDK venv (.ci/run makes it at target/venv-mcp)");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str(stdout.lines().last().unwrap()).unwrap()
    }

    #[test]
    fn a_client_that_elicits_approves_once() {
        let report = elicit("legacy", "once");
        assert_eq!(
            report["calls"]["approve_me"]["text"],
            json!({"answer": "once"}),
            "{report:#}"
        );
        let seen = &report["elicitations"][0];
        assert!(
            seen["message"].as_str().unwrap().contains("rm -rf build"),
            "{report:#}"
        );
        assert!(
            seen["message"]
                .as_str()
                .unwrap()
                .contains("fs.rm_recursive"),
            "{report:#}"
        );
    }

    #[test]
    fn a_client_that_declines_denies() {
        let report = elicit("legacy", "decline");
        assert_eq!(
            report["calls"]["approve_me"]["text"],
            json!({"answer": "deny"}),
            "{report:#}"
        );
        assert_eq!(report["elicitations"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn a_2026_client_cannot_be_asked_mid_call_so_nobody_answers() {
        // 2026-07-28 forbids server-to-client requests: no elicitation is sent, and
        // with no console the answer is Unavailable (the gate then denies).
        let report = elicit("auto", "once");
        assert_eq!(
            report["calls"]["approve_me"]["text"],
            json!({"answer": "unavailable"}),
            "{report:#}"
        );
        assert_eq!(report["elicitations"], json!([]));
    }
}
