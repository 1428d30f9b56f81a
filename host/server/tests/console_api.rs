//! The operator console's page and admin JSON endpoints over real HTTP, with the server
//! in this process: off without an admin token, refused without it, strict headers,
//! bounded answers, JSON errors for malformed requests, and the tools view agreeing
//! with tools/list. The console in a browser is `host/cli/tests/console.rs`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

use hermetic::approval::{ApprovalConfig, ApprovalContext, ApprovalGate, Outcome};
use hermetic::{OperatorPolicy, Registry, RegistryOptions, Selection};
use hermetic_server::McpApprover;
use hermetic_server::audit::{AuditLog, Event};
use hermetic_server::{McpServer, ServeOptions, auth};
use hermetic_test_support::http::Reply;
use hermetic_test_support::in_process::{Serving, serve_http};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Longest any wait may take (a hang guard, not a timing assertion).
const HANG_GUARD: Duration = Duration::from_secs(60);

const ADMIN: &str = "hmt_admin_console_token";

struct Served {
    http: Serving,
    _workspace: tempfile::TempDir,
}

impl Served {
    /// A server with the bundled tools; `admin` gives it the admin token.
    fn start(admin: bool, configure: impl FnOnce(&mut OperatorPolicy, &mut ServeOptions)) -> Self {
        let workspace = tempfile::TempDir::new().unwrap();
        let mut policy = OperatorPolicy::with_workspace(workspace.path().to_path_buf());
        let mut options = ServeOptions::default();
        if admin {
            options.access.admin_tokens.push(auth::digest(ADMIN));
        }
        configure(&mut policy, &mut options);
        let registry = Registry::new(RegistryOptions::new(policy)).unwrap();
        registry.add_bundled();
        let server = McpServer::new(Arc::new(registry), options);
        Self {
            http: serve_http(server, HANG_GUARD),
            _workspace: workspace,
        }
    }

    fn request(&self, method: &str, path: &str, token: Option<&str>, body: &[u8]) -> Reply {
        self.http.request(method, path, token, body)
    }

    fn get(&self, path: &str) -> Reply {
        self.request("GET", path, Some(ADMIN), b"")
    }

    fn stop(self) {
        self.http.stop();
    }
}

#[test]
fn the_console_and_its_endpoints_are_off_without_an_admin_token() {
    let served = Served::start(false, |_, _| {});
    for path in ["/console", "/console/console.js"] {
        let reply = served.request("GET", path, None, b"");
        assert_eq!(reply.status, 404, "{path}");
        assert!(reply.body.contains("admin_token_sha256"), "{}", reply.body);
    }
    for path in ["/admin/audit", "/admin/tools"] {
        let reply = served.request("GET", path, Some(ADMIN), b"");
        assert_eq!(reply.status, 404, "{path}");
        let error = reply.json()["error"].as_str().unwrap().to_owned();
        assert!(error.contains("admin_token_sha256"), "{error}");
    }
    // `/` is not redirected to a console that is not there.
    let root = served.request("GET", "/", None, b"");
    assert_eq!(root.status, 404);
    assert!(root.body.contains("/mcp"), "{}", root.body);
    served.stop();
}

#[test]
fn every_admin_endpoint_refuses_a_missing_or_wrong_token_with_a_json_sentence() {
    let served = Served::start(true, |_, _| {});
    for path in ["/admin/audit", "/admin/tools", "/admin/audit?limit=5"] {
        for token in [None, Some("hmt_not_admin"), Some("")] {
            let reply = served.request("GET", path, token, b"");
            assert_eq!(reply.status, 401, "{path} {token:?}");
            assert!(
                reply
                    .header("www-authenticate")
                    .unwrap()
                    .starts_with("Bearer"),
                "{}",
                reply.head
            );
            assert!(
                reply.json()["error"].as_str().unwrap().contains("token"),
                "{}",
                reply.body
            );
            assert_eq!(reply.header("cache-control"), Some("no-store"));
        }
    }
    assert_eq!(served.request("GET", "/approvals", None, b"").status, 401);
    served.stop();
}

#[test]
fn the_page_and_its_files_carry_a_strict_csp_nosniff_and_are_the_same_for_everyone() {
    let served = Served::start(true, |_, _| {});
    let root = served.request("GET", "/", None, b"");
    assert_eq!(root.status, 303);
    assert_eq!(root.header("location"), Some("/console"));
    // The page itself needs no token: it holds no data.
    let page = served.request("GET", "/console", None, b"");
    assert_eq!(page.status, 200);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    let csp = page.header("content-security-policy").unwrap();
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(directive), "{csp}");
    }
    assert!(!csp.contains("unsafe"), "{csp}");
    assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    assert!(page.body.contains("/console/console.js"));
    for (path, kind) in [
        ("/console/console.js", "text/javascript; charset=utf-8"),
        ("/console/console.css", "text/css; charset=utf-8"),
    ] {
        let file = served.request("GET", path, None, b"");
        assert_eq!(
            (file.status, file.header("content-type")),
            (200, Some(kind))
        );
        assert_eq!(file.header("x-content-type-options"), Some("nosniff"));
    }
    assert_eq!(
        served.request("GET", "/console/nope", None, b"").status,
        404
    );
    let post = served.request("POST", "/console", None, b"{}");
    assert_eq!(post.status, 405);
    assert_eq!(post.header("allow"), Some("GET, HEAD"));
    served.stop();
}

#[test]
fn malformed_admin_requests_get_json_errors_and_nothing_is_cached() {
    let served = Served::start(true, |_, _| {});
    for query in [
        "limit=abc",
        "limit=0",
        "limit=101",
        "limit=-1",
        "other=1",
        "limit",
    ] {
        let reply = served.get(&format!("/admin/audit?{query}"));
        assert_eq!(reply.status, 400, "{query}");
        assert!(reply.json()["error"].is_string(), "{}", reply.body);
    }
    // A body nobody asked for, however big, is never read.
    let huge = vec![b'x'; 8 * 1024 * 1024];
    let reply = served.request("POST", "/admin/tools", Some(ADMIN), &huge);
    assert_eq!(reply.status, 405);
    assert!(reply.json()["error"].is_string(), "{}", reply.body);
    // The approvals endpoint: bad JSON, a huge body, an unknown or non-numeric id.
    for (path, body, status) in [
        ("/approvals/1", b"{not json".to_vec(), 400),
        ("/approvals/1", br#"{"answer": 1}"#.to_vec(), 400),
        ("/approvals/1", vec![b' '; 1 << 20], 413),
        ("/approvals/987654", br#"{"answer": "once"}"#.to_vec(), 404),
        ("/approvals/x", br#"{"answer": "once"}"#.to_vec(), 404),
        (
            "/approvals/99999999999999999999999",
            br#"{"answer": "once"}"#.to_vec(),
            404,
        ),
    ] {
        let reply = served.request("POST", path, Some(ADMIN), &body);
        assert_eq!(reply.status, status, "{path}: {}", reply.body);
    }
    // Without an audit log the endpoint says so.
    let audit = served.get("/admin/audit");
    assert_eq!(audit.status, 200);
    assert_eq!(audit.header("cache-control"), Some("no-store"));
    let audit = audit.json();
    assert_eq!(audit["configured"], false);
    assert!(
        audit["message"].as_str().unwrap().contains("no audit log"),
        "{audit}"
    );
    let approvals = served.get("/approvals");
    assert_eq!(approvals.header("cache-control"), Some("no-store"));
    assert_eq!(approvals.header("x-content-type-options"), Some("nosniff"));
    served.stop();
}

#[test]
fn the_audit_view_is_the_log_s_newest_records_first_and_bounded() {
    let dir = tempfile::TempDir::new().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = Arc::new(AuditLog::open(&path).unwrap());
    for n in 0..150 {
        let tool = format!("tool{n}");
        log.record(&Event {
            kind: "call",
            tenant: "acme",
            session: "s",
            tool: &tool,
            outcome: "ok",
            ..Event::default()
        })
        .unwrap();
    }
    let served = Served::start(true, |_, options| options.audit = Some(log.clone()));
    let answer = served.get("/admin/audit").json();
    assert_eq!(answer["configured"], true);
    assert_eq!(answer["file"], path.display().to_string());
    let events = answer["events"].as_array().unwrap();
    assert_eq!(events.len(), 100);
    assert_eq!(events[0]["tool"], "tool149");
    assert_eq!(events[0]["seq"], 150);
    assert_eq!(events[99]["tool"], "tool50");
    let few = served.get("/admin/audit?limit=3").json();
    let tools: Vec<&Value> = few["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["tool"])
        .collect();
    assert_eq!(
        tools,
        [&json!("tool149"), &json!("tool148"), &json!("tool147")]
    );
    served.stop();
}

/// tools/list's names for the default tenant, from a sessionless MCP request.
fn tools_list(served: &Served) -> Vec<String> {
    served
        .http
        .tools_list()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_tools_view_lists_what_tools_list_offers_and_says_why_not_for_the_rest() {
    let served = Served::start(true, |_, options| {
        options.selection = Selection {
            enabled: Some(vec!["file".into(), "weather".into()]),
            disabled: Vec::new(),
        };
    });
    let answer = served.get("/admin/tools").json();
    assert_eq!(answer["requires_tokens"], false);
    let tenants = answer["tenants"].as_array().unwrap();
    // No tenant tokens: every request is the default tenant, the operator's view.
    assert_eq!(tenants.len(), 1, "{answer:#}");
    assert_eq!(tenants[0]["tenant"], "");
    let tools = tenants[0]["tools"].as_array().unwrap();
    let listed: Vec<String> = tools
        .iter()
        .filter(|t| t["listed"] == true)
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(listed, tools_list(&served));
    let by_name = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap().clone();
    // Served but unavailable (no key), with the reason.
    let weather = by_name("weather");
    assert_eq!(
        (&weather["served"], &weather["available"]),
        (&json!(true), &json!(false))
    );
    assert!(
        weather["reason"]
            .as_str()
            .unwrap()
            .contains("WEATHER_API_KEY"),
        "{weather}"
    );
    // Available but outside the server's selection.
    let terminal = by_name("terminal");
    assert_eq!(
        (
            &terminal["served"],
            &terminal["available"],
            &terminal["listed"]
        ),
        (&json!(false), &json!(true), &json!(false))
    );
    served.stop();
}

#[test]
fn pending_approvals_name_their_tool_and_age_and_whether_always_persists() {
    let dir = tempfile::TempDir::new().unwrap();
    let allowlist = dir.path().join("approvals.json");
    let served = Served::start(true, |policy, _| {
        // acme's "always" goes to an allowlist file; the operator's default has none.
        let mut acme = policy.terminal.default.clone();
        acme.approval.allowlist_file = Some(allowlist.clone());
        policy.terminal.tenants.insert("acme".into(), acme);
    });
    let broker = served.http.server.approvals().unwrap().clone();
    // Through a real gate, as a call asks: the console's answer is acknowledged once
    // the gate has acted on it.
    let ask = |tenant: &'static str| {
        let approver = McpApprover::new(None, Some(broker.clone())).with_tool("terminal");
        let gate = ApprovalGate::new(&ApprovalConfig::default())
            .unwrap()
            .with_approver(Arc::new(approver));
        std::thread::spawn(move || {
            gate.check(&ApprovalContext::new(tenant, "session-1"), "rm -rf build")
        })
    };
    let waiters = [ask("acme"), ask("globex")];
    let start = Instant::now();
    let list = loop {
        let list = served.get("/approvals").json();
        if list.as_array().unwrap().len() == 2 {
            break list;
        }
        assert!(start.elapsed() < HANG_GUARD, "the approvals never arrived");
        std::thread::sleep(Duration::from_millis(10));
    };
    let of = |tenant: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|p| p["tenant"] == tenant)
            .unwrap()
            .clone()
    };
    let (acme, globex) = (of("acme"), of("globex"));
    assert_eq!(acme["tool"], "terminal");
    assert!(
        acme["age_ms"].is_u64() && acme["expires_in_ms"].is_u64(),
        "{acme}"
    );
    assert_eq!(acme["always_persists"], true, "{acme}");
    assert!(acme.get("always_note").is_none(), "{acme}");
    assert_eq!(globex["always_persists"], false, "{globex}");
    assert_eq!(
        globex["always_note"],
        "no allowlist_file is configured, so \"always\" lasts for the session"
    );
    for pending in [&acme, &globex] {
        let path = format!("/approvals/{}", pending["id"]);
        let reply = served.request("POST", &path, Some(ADMIN), br#"{"answer":"deny"}"#);
        assert_eq!(reply.status, 200, "{}", reply.body);
    }
    for waiter in waiters {
        assert_eq!(waiter.join().unwrap().outcome, Outcome::Denied);
    }
    served.stop();
}
