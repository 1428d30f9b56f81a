//! Who answers an approval, and how often an answer counts: a 2026-07-28 answer runs
//! its command once, a sessionless client's "session" answer approves its own call
//! only, the operator picks the client or the console per tenant, and an operator's
//! "always" is on disk before it is acknowledged.
use super::harness::{
    ACME_TOKEN, GLOBEX_TOKEN, HANG_GUARD, HttpServer, Running, Target, bundled_args, client_with,
    mcp_raw_as, raw, terminal_elicit,
};
use hermetic_test_support::tokens::sha256_hex;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::time::{Duration, Instant};
use tempfile::TempDir;

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
    if let Some((responses, state)) = retry {
        params["inputResponses"] = responses.clone();
        params["requestState"] = json!(state);
    }
    let reply = mcp_raw_as(server, token, "tools/call", params, capabilities, &[]);
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
        let addr = server.addr.clone();
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
