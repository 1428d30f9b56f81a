//! Multi-tenant HTTP: a tenant sees and calls only its own tools, a request without a
//! known token is 401, a session belongs to its tenant, rate and concurrency limits
//! hold per tenant, a host or origin off the allow-list is 403.
use super::harness::{
    ACME_TOKEN, Dirs, GLOBEX_TOKEN, HttpServer, Running, TEST_TOOLS, Target, client_with, mcp_raw,
    policy_args, raw, tenants_policy,
};
use serde_json::{Value, json};

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
        missing.header("www-authenticate"),
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
    let session = created
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
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
    let port = server.addr.rsplit(':').next().unwrap().to_owned();
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
