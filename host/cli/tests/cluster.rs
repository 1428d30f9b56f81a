//! Many nodes, one budget: three real `hermetic serve --http` processes sharing a real
//! `redis-server` (started here on a free loopback port). A client alternating between
//! the nodes gets exactly its tenant's `calls_per_minute` in total; with Redis killed,
//! the rate-limited tenant is refused with the documented error (fail closed) while a
//! tenant without a limit is served; with Redis back, calls are counted again without
//! restarting a node.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

use hermetic_test_support::guests::{guest, test_cache};
use hermetic_test_support::http::{Reply, request};
use hermetic_test_support::mcp_http::{message, sessionless_headers, with_meta};
use hermetic_test_support::redis::Redis;
use hermetic_test_support::serve_process::ServeProcess;
use hermetic_test_support::tokens::sha256_hex;
use serde_json::json;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;

const ACME: &str = "hmt_cluster_acme_token";
const ADMIN: &str = "hmt_cluster_admin_token";
const GLOBEX: &str = "hmt_cluster_globex_token";
/// Live legacy sessions a tenant may hold, across the cluster.
const SESSIONS: usize = 2;
/// A tenant whose approvals its MCP client answers (2026-07-28: by retrying the call).
const INITECH: &str = "hmt_cluster_initech_token";
/// acme's tools/call budget (a burst of this many, then one per 60/N s).
const LIMIT: usize = 6;
/// Longest a node may take to say where it serves (a hang guard, not a timing
/// assertion).
const START_GUARD: Duration = Duration::from_secs(120);

/// A `hermetic serve --http 127.0.0.1:0` node, killed on drop.
struct Node {
    process: ServeProcess,
}

impl std::ops::Deref for Node {
    type Target = ServeProcess;
    fn deref(&self) -> &ServeProcess {
        &self.process
    }
}

impl Node {
    fn start(dir: &Path, redis_url: &str) -> Self {
        Self::start_args(dir, &["--redis-url", redis_url])
    }

    /// A node with these `serve` arguments.
    fn start_args(dir: &Path, serve: &[&str]) -> Self {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hermetic"));
        cmd.current_dir(dir)
            .env("HERMETIC_CACHE_DIR", test_cache())
            .env("NO_COLOR", "1")
            .args(["--policy", "policy.toml", "--tools-dir"])
            .arg(dir.join("tools"))
            .args(["serve", "--http", "127.0.0.1:0", "--no-watch"])
            .args(serve);
        Self {
            process: ServeProcess::spawn(cmd, START_GUARD),
        }
    }

    /// One sessionless (2026-07-28) tools/call of `echo` as `token`: the status and body.
    fn call(&self, token: &str) -> (u16, String) {
        self.call_tool(token, "echo", &json!({"message": "hi"}))
    }

    /// One sessionless tools/call of `tool` with `arguments` as `token`.
    fn call_tool(&self, token: &str, tool: &str, arguments: &serde_json::Value) -> (u16, String) {
        self.call_params(
            token,
            &json!({"name": tool, "arguments": arguments}),
            &json!({}),
        )
    }

    /// One sessionless tools/call with these `params` from a client declaring
    /// `capabilities`.
    fn call_params(
        &self,
        token: &str,
        params: &serde_json::Value,
        capabilities: &serde_json::Value,
    ) -> (u16, String) {
        let params = with_meta(params.clone(), "cluster", capabilities.clone());
        let bearer = format!("Bearer {token}");
        let mut headers = vec![("Authorization", bearer)];
        headers.extend(sessionless_headers("tools/call", &params));
        let reply = request(
            &self.addr,
            "POST",
            "/mcp",
            &headers,
            message("tools/call", params).as_bytes(),
            Duration::from_secs(60),
        );
        (reply.status, whole(&reply))
    }

    /// One request (`METHOD PATH`) as `token`, with `headers` (each ending in CRLF) and
    /// `body`, on a fresh connection: the status and the whole answer.
    fn request(&self, line: &str, token: &str, headers: &str, body: &str) -> (u16, String) {
        let (method, path) = line.split_once(' ').unwrap();
        let bearer = format!("Bearer {token}");
        let mut all = vec![("Authorization", bearer.as_str())];
        all.extend(headers.lines().filter_map(|h| h.split_once(": ")));
        all.push(("Content-Type", "application/json"));
        let reply = request(
            &self.addr,
            method,
            path,
            &all,
            body.as_bytes(),
            Duration::from_secs(60),
        );
        (reply.status, whole(&reply))
    }

    /// A legacy (2025-06-18) `initialize` as `token`: the status, and the session id
    /// when one was opened.
    fn initialize(&self, token: &str) -> (u16, Option<String>, String) {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "cluster", "version": "0"}}})
        .to_string();
        let (status, answer) = self.request(
            "POST /mcp",
            token,
            "Accept: application/json, text/event-stream\r\n",
            &body,
        );
        let id = answer.lines().find_map(|l| {
            l.to_ascii_lowercase()
                .starts_with("mcp-session-id:")
                .then(|| l.split_once(':').unwrap().1.trim().to_owned())
        });
        (status, id, answer)
    }

    /// Ends legacy session `id` (DELETE).
    fn end_session(&self, token: &str, id: &str) -> u16 {
        self.request(
            "DELETE /mcp",
            token,
            &format!("Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-06-18\r\n"),
            "",
        )
        .0
    }

    /// The operator's approvals endpoint: `GET /approvals` or `POST /approvals/{id}`.
    fn admin(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        self.request(&format!("{method} {path}"), ADMIN, "", body)
    }
}

fn read_answer(mut s: TcpStream) -> (u16, String) {
    {
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        let status = answer
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        (status, answer)
    }
}

/// A reply as it came: its head, the blank line, its body.
fn whole(reply: &Reply) -> String {
    format!("{}\r\n\r\n{}", reply.head, reply.body)
}

fn cluster_dir() -> TempDir {
    let dir = TempDir::new().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    std::fs::create_dir_all(dir.path().join("tools")).unwrap();
    for tool in ["echo", "kvprobe"] {
        std::fs::copy(guest(tool), dir.path().join(format!("tools/{tool}.wasm"))).unwrap();
    }
    std::fs::write(
        dir.path().join("policy.toml"),
        format!(
            "[mounts.workspace]\npath = \"ws\"\naccess = \"rw\"\n\n\
             [tenants.acme]\ntoken_sha256 = [\"{}\"]\n[tenants.acme.limits]\ncalls_per_minute = {LIMIT}\n\n\
             [tenants.globex]\ntoken_sha256 = [\"{}\"]\n\n\
             [tenants.initech]\ntoken_sha256 = [\"{}\"]\n[tenants.initech.limits]\nmax_concurrent = 1\n\n\
             [server]\nadmin_token_sha256 = [\"{}\"]\nmax_sessions_per_tenant = {SESSIONS}\n\n\
             [secrets]\nfile = \"secrets.toml\"\n\n\
             [cluster]\nstate_key = \"HERMETIC_STATE_KEY\"\n\n\
             [tools.terminal]\nterminal = true\n\n\
             [tools.kvprobe]\nkeyvalue = {{ max_keys = 5 }}\n\n\
             [terminal.approval]\napprover = \"console\"\nasync_timeout_secs = 60\nheadless = \"allow\"\n\n\
             [terminal.tenants.initech.approval]\napprover = \"client\"\n",
            sha256_hex(ACME),
            sha256_hex(GLOBEX),
            sha256_hex(INITECH),
            sha256_hex(ADMIN)
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("secrets.toml"),
        "HERMETIC_STATE_KEY = \"3f9c0d6a1b7e4f2a8c5d9e0b1a2c3d4e5f60718293a4b5c6\"\n",
    )
    .unwrap();
    dir
}

#[test]
fn three_nodes_share_one_rate_limit_and_fail_closed_without_redis() {
    let mut redis = Redis::start();
    let dir = cluster_dir();
    let nodes: Vec<Node> = (0..3)
        .map(|_| Node::start(dir.path(), &redis.url()))
        .collect();

    // Alternating nodes: exactly the tenant's budget in total, then 429 on every node.
    let statuses: Vec<u16> = (0..LIMIT * 2).map(|i| nodes[i % 3].call(ACME).0).collect();
    let ok = statuses.iter().filter(|s| **s == 200).count();
    assert_eq!(ok, LIMIT, "{statuses:?}");
    assert!(statuses[LIMIT..].iter().all(|s| *s == 429), "{statuses:?}");
    // A legacy session held by another node: a clear 404, not a hang.
    let (status, answer) = {
        let body = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}"#;
        let mut s = TcpStream::connect(&nodes[2].addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        write!(
            s,
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {GLOBEX}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: 2025-06-18\r\nMcp-Session-Id: held-by-another-node\r\n\
             Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
            nodes[2].addr,
            body.len()
        )
        .unwrap();
        read_answer(s)
    };
    assert_eq!(status, 404, "{answer}");
    assert!(
        answer.contains("Session not found on this node"),
        "{answer}"
    );
    // Another tenant has no limit and is not affected.
    for node in &nodes {
        assert_eq!(node.call(GLOBEX).0, 200);
    }

    assert!(
        nodes[0]
            .admin("GET", "/healthz", "")
            .1
            .contains("ok: store redis://")
    );
    // Redis gone: the limited tenant is refused with the documented error, the other
    // is served; the readiness probe says so, the liveness probe does not.
    redis.kill();
    let (status, health) = nodes[0].admin("GET", "/healthz", "");
    assert_eq!(status, 503, "{health}");
    assert!(health.contains("is unreachable"), "{health}");
    assert_eq!(nodes[0].admin("GET", "/livez", "").0, 200);
    let (status, answer) = nodes[1].call(ACME);
    assert_eq!(status, 503, "{answer}");
    assert!(
        answer.contains(&format!(
            "the shared store (redis://127.0.0.1:{}) is unreachable",
            redis.port
        )),
        "{answer}"
    );
    assert!(
        answer.to_ascii_lowercase().contains("retry-after"),
        "{answer}"
    );
    assert_eq!(nodes[2].call(GLOBEX).0, 200);
    // A command that needs the console is refused at once — even with headless =
    // "allow": the question could not be asked, which is not silence.
    std::fs::create_dir_all(dir.path().join("ws/keep")).unwrap();
    let (status, answer) =
        nodes[1].call_tool(GLOBEX, "terminal", &json!({"command": "rm -rf keep"}));
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("could not reach the operator"), "{answer}");
    assert!(dir.path().join("ws/keep").exists());

    // Redis back: counted again, no node restarted (within a few seconds: the
    // connection manager reconnects on its own).
    redis.restart();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, answer) = nodes[0].call(ACME);
        if status != 503 {
            assert!(status == 200 || status == 429, "{answer}");
            break;
        }
        assert!(Instant::now() < deadline, "never recovered: {answer}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn an_approval_asked_on_one_node_is_answered_on_another_once() {
    let redis = Redis::start();
    let dir = cluster_dir();
    let nodes: Vec<Node> = (0..3)
        .map(|_| Node::start(dir.path(), &redis.url()))
        .collect();
    std::fs::create_dir_all(dir.path().join("ws/scratch")).unwrap();
    // A dangerous command on node A waits for the operator...
    let a = &nodes[0];
    let call = std::thread::scope(|scope| {
        let waiting = scope.spawn(|| {
            a.call_tool(
                GLOBEX,
                "terminal",
                &json!({"command": "rm -rf scratch && echo removed"}),
            )
        });
        // ...who sees it in node B's console (the admin API)...
        let b = &nodes[1];
        let deadline = Instant::now() + Duration::from_secs(20);
        let id = loop {
            let (status, answer) = b.admin("GET", "/approvals", "");
            assert_eq!(status, 200, "{answer}");
            let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
            let list: serde_json::Value = serde_json::from_str(body.trim()).unwrap_or_default();
            if let Some(p) = list.as_array().and_then(|l| l.first()) {
                assert_eq!(p["command"], "rm -rf scratch && echo removed", "{p}");
                assert_eq!(p["tenant"], "globex");
                break p["id"].as_u64().unwrap();
            }
            assert!(
                Instant::now() < deadline,
                "node B never listed it: {answer}"
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        // ...and answers it there; node B says what the gate on node A did.
        let (status, answer) = b.admin("POST", &format!("/approvals/{id}"), r#"{"answer":"once"}"#);
        assert_eq!(status, 200, "{answer}");
        assert!(answer.contains("approved_once"), "{answer}");
        // A replay on node C is refused: an answer is taken once.
        let (status, answer) =
            nodes[2].admin("POST", &format!("/approvals/{id}"), r#"{"answer":"once"}"#);
        assert_eq!(status, 404, "{answer}");
        waiting.join().unwrap()
    });
    let (status, answer) = call;
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("removed"), "{answer}");
    assert!(!dir.path().join("ws/scratch").exists());
    // Nothing is left listed anywhere.
    for node in &nodes {
        let (_, answer) = node.admin("GET", "/approvals", "");
        assert!(answer.trim_end().ends_with("[]"), "{answer}");
    }
}

/// `max_sessions_per_tenant` counts every node's live legacy sessions: a tenant holding
/// its cap on nodes A and B is refused on node C, gets the place back on C as soon as
/// one session ends on A, and other tenants are not affected; with Redis gone, a new
/// session is refused with the store's error (fail closed), then admitted again once
/// Redis is back.
#[test]
fn max_sessions_per_tenant_counts_every_node_s_sessions() {
    let mut redis = Redis::start();
    let dir = cluster_dir();
    let nodes: Vec<Node> = (0..3)
        .map(|_| Node::start(dir.path(), &redis.url()))
        .collect();
    let opened: Vec<String> = (0..SESSIONS)
        .map(|i| {
            let (status, id, answer) = nodes[i % 2].initialize(GLOBEX);
            assert_eq!(status, 200, "{answer}");
            id.unwrap_or_else(|| panic!("no session id: {answer}"))
        })
        .collect();
    let (status, _, answer) = nodes[2].initialize(GLOBEX);
    assert_eq!(status, 429, "node C counts A's and B's sessions: {answer}");
    assert!(answer.contains("max_sessions_per_tenant"), "{answer}");
    let (status, _, answer) = nodes[2].initialize(ACME);
    assert_eq!(status, 200, "another tenant is not affected: {answer}");

    // One session ends on node A: its place is free on node C (the lease is given
    // back in the background, so within a moment).
    assert!(matches!(
        nodes[0].end_session(GLOBEX, &opened[0]),
        200 | 204
    ));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, _, answer) = nodes[2].initialize(GLOBEX);
        if status == 200 {
            break;
        }
        assert_eq!(status, 429, "{answer}");
        assert!(
            Instant::now() < deadline,
            "the place never came back: {answer}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    redis.kill();
    let (status, _, answer) = nodes[1].initialize(INITECH);
    assert_eq!(status, 503, "{answer}");
    assert!(answer.contains("is unreachable"), "{answer}");
    redis.restart();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, _, answer) = nodes[1].initialize(INITECH);
        if status == 200 {
            break;
        }
        assert_eq!(status, 503, "{answer}");
        assert!(Instant::now() < deadline, "never recovered: {answer}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The tool result's text of a JSON-RPC answer.
fn result_of(answer: &str) -> serde_json::Value {
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
    serde_json::from_str(body.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {answer}"))
}

/// A 2026-07-28 client answering the approval question of a call asked on node A by
/// retrying the call on node B: the command runs once; the same answer replayed on
/// node C is refused (the nonce is taken once, in Redis); an answer sealed with
/// another key opens nowhere.
#[test]
fn a_2026_07_28_approval_round_may_end_on_any_node_once() {
    let mut redis = Redis::start();
    let dir = cluster_dir();
    let nodes: Vec<Node> = (0..3)
        .map(|_| Node::start(dir.path(), &redis.url()))
        .collect();
    let elicitation = json!({"elicitation": {"form": {}}});
    let call =
        json!({"name": "terminal", "arguments": {"command": "rm -rf round && echo removed"}});
    std::fs::create_dir_all(dir.path().join("ws/round")).unwrap();

    let (status, answer) = nodes[0].call_params(INITECH, &call, &elicitation);
    assert_eq!(status, 200, "{answer}");
    let first = result_of(&answer)["result"].clone();
    assert_eq!(first["resultType"], "input_required", "{first}");
    let state = first["requestState"].as_str().unwrap().to_owned();
    assert!(state.starts_with("v3."), "a cluster seal: {state}");
    let key = first["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    assert!(
        dir.path().join("ws/round").exists(),
        "not run before the answer"
    );

    let mut retry = call.clone();
    retry["inputResponses"] =
        json!({ key.clone(): {"action": "accept", "content": {"answer": "once"}} });
    retry["requestState"] = json!(state);
    let (status, answer) = nodes[1].call_params(INITECH, &retry, &elicitation);
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("removed"), "node B ran it: {answer}");
    assert!(!dir.path().join("ws/round").exists());

    std::fs::create_dir_all(dir.path().join("ws/round")).unwrap();
    let (status, answer) = nodes[2].call_params(INITECH, &retry, &elicitation);
    assert_eq!(status, 200, "{answer}");
    assert!(
        answer.contains("already used"),
        "node C refused the replay: {answer}"
    );
    assert!(dir.path().join("ws/round").exists());

    // Redis crashes and comes back (past its append-only file's one-second fsync).
    // Node B's kept connection died with the old process: a fresh round's answer on
    // B is taken on a new one, not refused; the used answer is still used on C.
    std::thread::sleep(Duration::from_millis(1500));
    redis.kill();
    redis.restart();
    let (_, answer) = nodes[0].call_params(INITECH, &call, &elicitation);
    let mut fresh = retry.clone();
    fresh["requestState"] = result_of(&answer)["result"]["requestState"].clone();
    let (_, answer) = nodes[1].call_params(INITECH, &fresh, &elicitation);
    assert!(
        answer.contains("removed"),
        "a fresh round after the restart: {answer}"
    );
    std::fs::create_dir_all(dir.path().join("ws/round")).unwrap();
    let (status, answer) = nodes[2].call_params(INITECH, &retry, &elicitation);
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("already used"), "{answer}");
    assert!(dir.path().join("ws/round").exists());

    // A state whose tag does not verify (forged, or sealed with another key) is no
    // answer: the question is asked again, nothing runs.
    let mut forged = retry.clone();
    let tampered = format!("{}0", &state[..state.len() - 1]);
    forged["requestState"] = json!(if state.ends_with('0') {
        format!("{}1", &state[..state.len() - 1])
    } else {
        tampered
    });
    let (_, answer) = nodes[1].call_params(INITECH, &forged, &elicitation);
    assert_eq!(
        result_of(&answer)["result"]["resultType"],
        "input_required",
        "{answer}"
    );
    assert!(dir.path().join("ws/round").exists());
}

/// Tools' key-value data is one store across the nodes (the cluster's Redis): a value
/// written through node A is read through node B, increments from every node add up,
/// and the quota counts every node's keys.
#[test]
fn a_tool_s_key_value_store_is_one_store_across_nodes() {
    let redis = Redis::start();
    let dir = cluster_dir();
    let nodes: Vec<Node> = (0..3)
        .map(|_| Node::start(dir.path(), &redis.url()))
        .collect();
    let probe = |node: &Node, args: serde_json::Value| -> serde_json::Value {
        let (status, answer) = node.call_tool(GLOBEX, "kvprobe", &args);
        assert_eq!(status, 200, "{answer}");
        let text = result_of(&answer)["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned();
        serde_json::from_str(&text).unwrap()
    };
    probe(
        &nodes[0],
        json!({"op": "set", "key": "plan", "value": "ship it"}),
    );
    assert_eq!(
        probe(&nodes[1], json!({"op": "get", "key": "plan"}))["value"],
        "ship it"
    );
    for i in 0..9 {
        probe(&nodes[i % 3], json!({"op": "incr", "key": "n"}));
    }
    assert_eq!(
        probe(&nodes[2], json!({"op": "get", "key": "n"}))["value"],
        "9"
    );
    // Quota of 5 keys, counted across the nodes: plan, n, and three more.
    let flood = probe(&nodes[1], json!({"op": "flood", "n": 10}));
    assert_eq!(flood["written"], 3, "{flood}");
    assert!(
        flood["refused"]
            .as_str()
            .unwrap()
            .contains("holds its 5 keys"),
        "{flood}"
    );
    // Compare-and-swap is one step on Redis: read-append-swap loops on all three
    // nodes at once keep every append.
    assert_eq!(
        probe(
            &nodes[0],
            json!({"op": "swap", "key": "plan", "expected": "ship it", "value": "shipped"})
        )["swapped"],
        true
    );
    assert_eq!(
        probe(
            &nodes[1],
            json!({"op": "swap", "key": "plan", "expected": "ship it", "value": "again"})
        )["swapped"],
        false
    );
    // Already holding the value: done (a repeat of a swap whose reply was lost).
    assert_eq!(
        probe(
            &nodes[2],
            json!({"op": "swap", "key": "plan", "expected": "ship it", "value": "shipped"})
        )["swapped"],
        true
    );
    std::thread::scope(|s| {
        for (n, node) in nodes.iter().enumerate() {
            s.spawn(move || {
                for i in 0..6 {
                    let out = probe(
                        node,
                        json!({"op": "append", "key": "plan", "value": format!("{n}.{i}")}),
                    );
                    assert!(out["tries"].is_u64(), "{out}");
                }
            });
        }
    });
    let plan = probe(&nodes[2], json!({"op": "get", "key": "plan"}));
    let plan = plan["value"].as_str().unwrap();
    assert!(plan.starts_with("shipped"), "{plan}");
    for n in 0..3 {
        for i in 0..6 {
            assert!(plan.contains(&format!("{n}.{i},")), "{n}.{i} lost: {plan}");
        }
    }
    // Another tenant's store is another store.
    let (_, answer) = nodes[0].call_tool(ACME, "kvprobe", &json!({"op": "get", "key": "plan"}));
    assert!(answer.contains(r#"\"value\":null"#), "{answer}");
}

/// The Kubernetes manifests probe the paths the server answers and point the nodes at
/// the Redis they deploy.
#[test]
fn the_kubernetes_manifests_match_the_server() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/kubernetes");
    let nodes = std::fs::read_to_string(root.join("hermetic.yaml")).unwrap();
    assert!(nodes.contains(&format!("path: {}", hermetic_server::http::HEALTH_PATH)));
    assert!(nodes.contains(&format!("path: {}", hermetic_server::http::LIVE_PATH)));
    assert!(nodes.contains("--redis-url=redis://hermetic-redis:6379"));
    let policy = std::fs::read_to_string(root.join("policy.toml")).unwrap();
    assert!(policy.contains("redis_url = \"redis://hermetic-redis:6379\""));
    let redis = std::fs::read_to_string(root.join("redis.yaml")).unwrap();
    assert!(redis.contains("name: hermetic-redis") && redis.contains("\"--appendonly\", \"yes\""));
}

#[test]
fn metrics_count_calls_refusals_and_approvals_behind_the_admin_token() {
    let dir = cluster_dir();
    let off = Node::start_args(dir.path(), &[]);
    assert_eq!(off.admin("GET", "/metrics", "").0, 404);
    drop(off);
    let node = Node::start_args(dir.path(), &["--metrics"]);
    for _ in 0..LIMIT + 2 {
        node.call(ACME);
    }
    node.call_tool(GLOBEX, "no_such_tool_1", &json!({}));
    node.call_tool(GLOBEX, "no_such_tool_2", &json!({}));
    // initech may run one call at a time: of two at once, one queues.
    std::thread::scope(|scope| {
        let calls: Vec<_> = (0..2)
            .map(|_| {
                scope
                    .spawn(|| node.call_tool(INITECH, "terminal", &json!({"command": "sleep 0.5"})))
            })
            .collect();
        for call in calls {
            let (status, answer) = call.join().unwrap();
            assert_eq!(status, 200, "{answer}");
            assert!(answer.contains("exit_code\\\":0"), "{answer}");
        }
    });
    let (status, text) = node.admin("GET", "/metrics", "");
    assert_eq!(status, 200, "{text}");
    assert!(
        text.contains(&format!(
            "hermetic_calls_total{{tenant=\"acme\",tool=\"echo\",outcome=\"ok\"}} {LIMIT}"
        )),
        "{text}"
    );
    assert!(
        text.contains("hermetic_refusals_total{kind=\"rate_limited\"} 2"),
        "{text}"
    );
    assert!(
        text.contains(
            "hermetic_calls_total{tenant=\"globex\",tool=\"unknown\",outcome=\"unknown_tool\"} 2"
        ),
        "{text}"
    );
    assert!(
        !text.contains("no_such_tool"),
        "an agent cannot add series: {text}"
    );
    assert!(
        text.contains("hermetic_call_duration_seconds_bucket{le="),
        "{text}"
    );
    // The pool and its queues: the waiting call was counted, with its wait.
    assert!(text.contains("hermetic_sandbox_pool_capacity "), "{text}");
    assert!(text.contains("hermetic_sessions 0"), "{text}");
    assert!(text.contains("hermetic_sandbox_pool_in_use 0"), "{text}");
    assert!(
        text.contains("hermetic_queue_waits_total{queue=\"tenant\",tenant=\"initech\"} 1"),
        "{text}"
    );
    let waited: f64 = text
        .lines()
        .find_map(|l| {
            l.strip_prefix(
                "hermetic_queue_wait_seconds_total{queue=\"tenant\",tenant=\"initech\"} ",
            )
        })
        .unwrap_or_else(|| panic!("{text}"))
        .parse()
        .unwrap();
    assert!(
        waited > 0.2,
        "it waited for the other call's 0.5 s: {waited}"
    );
    assert!(
        text.contains("hermetic_queue_waits_total{queue=\"sandboxes\",tenant=\"\"} 0"),
        "{text}"
    );
    // Without the admin token: refused.
    let mut s = TcpStream::connect(&node.addr).unwrap();
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        node.addr
    )
    .unwrap();
    assert_eq!(read_answer(s).0, 401);
}

#[test]
fn an_always_answer_on_one_node_holds_on_another() {
    let redis = Redis::start();
    // Two nodes, each with its own directory and allowlist file (as two machines).
    let dirs: Vec<TempDir> = (0..2)
        .map(|_| {
            let dir = cluster_dir();
            let policy = dir.path().join("policy.toml");
            let text = std::fs::read_to_string(&policy)
                .unwrap()
                .replace(
                    "headless = \"allow\"",
                    "headless = \"deny\"\nallowlist_file = \"allow.json\"",
                )
                .replace("async_timeout_secs = 60", "async_timeout_secs = 30");
            std::fs::write(&policy, text).unwrap();
            std::fs::create_dir_all(dir.path().join("ws/one")).unwrap();
            std::fs::create_dir_all(dir.path().join("ws/two")).unwrap();
            dir
        })
        .collect();
    let a = Node::start(dirs[0].path(), &redis.url());
    let b = Node::start(dirs[1].path(), &redis.url());
    // "always" on node A, from its console.
    std::thread::scope(|scope| {
        let waiting = scope.spawn(|| {
            a.call_tool(
                GLOBEX,
                "terminal",
                &json!({"command": "rm -rf one && echo gone"}),
            )
        });
        let deadline = Instant::now() + Duration::from_secs(20);
        let id = loop {
            let (_, answer) = a.admin("GET", "/approvals", "");
            let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
            let list: serde_json::Value = serde_json::from_str(body.trim()).unwrap_or_default();
            if let Some(id) = list
                .as_array()
                .and_then(|l| l.first())
                .and_then(|p| p["id"].as_u64())
            {
                break id;
            }
            assert!(Instant::now() < deadline, "never listed: {answer}");
            std::thread::sleep(Duration::from_millis(100));
        };
        let (status, answer) = a.admin(
            "POST",
            &format!("/approvals/{id}"),
            r#"{"answer":"always"}"#,
        );
        assert_eq!(status, 200, "{answer}");
        assert!(answer.contains("approved_always"), "{answer}");
        assert!(waiting.join().unwrap().1.contains("gone"));
    });
    // Node B's file gets the rule, and B runs the same kind of command unasked.
    let deadline = Instant::now() + Duration::from_secs(15);
    while !std::fs::read_to_string(dirs[1].path().join("allow.json"))
        .is_ok_and(|t| t.contains("rules"))
    {
        assert!(Instant::now() < deadline, "node B never got the rule");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (status, answer) = b.call_tool(
        GLOBEX,
        "terminal",
        &json!({"command": "rm -rf two && echo gone too"}),
    );
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("gone too"), "{answer}");
    assert!(!dirs[1].path().join("ws/two").exists());
}

/// The cluster's directory with the session-scope key-value probe too (5 keys a store)
/// and `keyvalue` (a `[keyvalue]` table) added to its policy.
fn kv_sessions_dir(keyvalue: &str) -> TempDir {
    let dir = cluster_dir();
    std::fs::copy(
        guest("kvprobe_session"),
        dir.path().join("tools/kvprobe_session.wasm"),
    )
    .unwrap();
    let policy = dir.path().join("policy.toml");
    let mut text = std::fs::read_to_string(&policy).unwrap();
    text.push_str("\n[tools.kvprobe_session]\nkeyvalue = { max_keys = 5 }\n\n");
    text.push_str(keyvalue);
    std::fs::write(&policy, text).unwrap();
    dir
}

/// The JSON-RPC answer in an HTTP answer (a JSON body, or an event stream's `data:`).
fn rpc_answer(answer: &str) -> serde_json::Value {
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
    body.lines()
        .filter_map(|line| {
            let line = line.trim();
            let text = line.strip_prefix("data:").map_or(line, str::trim);
            serde_json::from_str::<serde_json::Value>(text).ok()
        })
        .find(|v| v.get("id").is_some())
        .unwrap_or_else(|| panic!("no JSON-RPC answer: {answer}"))
}

impl Node {
    /// A legacy session of `token`'s, initialized: its id.
    fn open_session(&self, token: &str) -> String {
        let (status, id, answer) = self.initialize(token);
        assert_eq!(status, 200, "{answer}");
        let id = id.unwrap_or_else(|| panic!("no session id: {answer}"));
        let (status, answer) = self.request(
            "POST /mcp",
            token,
            &format!(
                "Accept: application/json, text/event-stream\r\nMcp-Session-Id: {id}\r\n\
                 MCP-Protocol-Version: 2025-06-18\r\n"
            ),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        );
        assert!(matches!(status, 200 | 202), "{answer}");
        id
    }

    /// `tool`'s JSON result of a call with `arguments` in legacy session `id`.
    fn call_in_session(
        &self,
        token: &str,
        id: &str,
        tool: &str,
        arguments: &serde_json::Value,
    ) -> serde_json::Value {
        let (status, answer) = self.request(
            "POST /mcp",
            token,
            &format!(
                "Accept: application/json, text/event-stream\r\nMcp-Session-Id: {id}\r\n\
                 MCP-Protocol-Version: 2025-06-18\r\n"
            ),
            &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": tool, "arguments": arguments}})
            .to_string(),
        );
        assert_eq!(status, 200, "{answer}");
        let text = rpc_answer(&answer)["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{answer}"))
            .to_owned();
        serde_json::from_str(&text).unwrap()
    }
}

/// `hermetic state ARGS` run in `dir`: exit code, stdout, stderr.
fn state(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hermetic"))
        .current_dir(dir)
        .arg("state")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The stores `hermetic state list --json ARGS` lists in `dir`: (tenant, tool,
/// session, keys).
fn listed(dir: &Path, args: &[&str]) -> Vec<(String, String, serde_json::Value, u64)> {
    let mut all = vec!["list", "--json"];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = state(dir, &all);
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["tenant"].as_str().unwrap().to_owned(),
                s["tool"].as_str().unwrap().to_owned(),
                s["session"].clone(),
                s["keys"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// In Redis too: a store's quota spans its buckets; a tenant's sessions share one
/// ceiling; a DELETE ends the session's stores; `hermetic state` lists and deletes
/// while the node runs. (Session stores expire after an hour idle here: nothing
/// depends on how fast the calls and processes run.)
#[test]
fn in_redis_a_quota_spans_buckets_sessions_share_a_ceiling_and_end() {
    let redis = Redis::start();
    let url = redis.url();
    let dir = kv_sessions_dir("[keyvalue]\nsessions_max_keys = 8\nsession_expiry_secs = 3600\n");
    let node = Node::start(dir.path(), &url);
    let probe = |args: serde_json::Value| -> serde_json::Value {
        let (status, answer) = node.call_tool(GLOBEX, "kvprobe", &args);
        assert_eq!(status, 200, "{answer}");
        let text = result_of(&answer)["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned();
        serde_json::from_str(&text).unwrap()
    };
    assert_eq!(
        probe(json!({"op": "flood", "n": 3, "bucket": "a"}))["written"],
        3
    );
    let second = probe(json!({"op": "flood", "n": 10, "bucket": "b"}));
    assert_eq!(second["written"], 2, "5 keys for the store: {second}");

    let flood = |id: &str| {
        node.call_in_session(
            GLOBEX,
            id,
            "kvprobe_session",
            &json!({"op": "flood", "n": 5}),
        )
    };
    let s1 = node.open_session(GLOBEX);
    let s2 = node.open_session(GLOBEX);
    assert_eq!(flood(&s1)["written"], 5);
    let capped = flood(&s2);
    assert_eq!(
        capped["written"], 3,
        "eight keys across the sessions: {capped}"
    );
    assert!(
        capped["refused"]
            .as_str()
            .unwrap()
            .contains("session stores hold their 8 keys together"),
        "{capped}"
    );
    let at = ["--redis-url", url.as_str()];
    let sessions_of = |listed: &[(String, String, serde_json::Value, u64)]| -> Vec<(String, u64)> {
        listed
            .iter()
            .filter(|s| s.1 == "ext:kvprobe_session")
            .map(|s| (s.2.as_str().unwrap().to_owned(), s.3))
            .collect()
    };
    let mut both = vec![(s1.clone(), 5), (s2.clone(), 3)];
    both.sort();
    assert_eq!(sessions_of(&listed(dir.path(), &at)), both);

    // s1 ends: its store goes (before the DELETE is answered), its share is free.
    assert!(matches!(node.end_session(GLOBEX, &s1), 200 | 204));
    assert_eq!(
        sessions_of(&listed(dir.path(), &at)),
        [(s2.clone(), 3)],
        "s1's store ended with it"
    );
    let s3 = node.open_session(GLOBEX);
    assert_eq!(flood(&s3)["written"], 5);
    // s2's three keys rewritten, its fourth refused: s2's 3 and s3's 5 are the 8.
    assert_eq!(flood(&s2)["written"], 3, "the ceiling");

    // The operator deletes globex's kvprobe data while the node runs.
    let (code, said, stderr) = state(
        dir.path(),
        &[
            "delete",
            "--redis-url",
            &url,
            "--tenant",
            "globex",
            "--tool",
            "ext:kvprobe",
            "--yes",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(said.contains("deleted 1 stores (5 keys"), "{said}");
    assert_eq!(
        probe(json!({"op": "list", "bucket": "a"}))["keys"],
        json!([])
    );
}

/// Idle session stores expire in Redis (PEXPIRE) and the tenant's next write takes
/// their share off the ceiling. Waits for the expiry with a generous bound: what is
/// asserted holds however slowly the calls run.
#[test]
fn in_redis_idle_session_stores_expire_and_free_their_share() {
    let redis = Redis::start();
    let url = redis.url();
    let dir = kv_sessions_dir("[keyvalue]\nsessions_max_keys = 8\nsession_expiry_secs = 1\n");
    let node = Node::start(dir.path(), &url);
    let flood = |id: &str| {
        node.call_in_session(
            GLOBEX,
            id,
            "kvprobe_session",
            &json!({"op": "flood", "n": 5}),
        )
    };
    assert_eq!(flood(&node.open_session(GLOBEX))["written"], 5);
    let at = ["--redis-url", url.as_str(), "--tenant", "globex"];
    let deadline = Instant::now() + Duration::from_secs(60);
    while !listed(dir.path(), &at).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the idle session store never expired"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // Had the expired store's share stayed, 5 + 5 would be over the 8 keys.
    assert_eq!(
        flood(&node.open_session(GLOBEX))["written"],
        5,
        "the expired store's share is free"
    );
}

/// One node with the embedded file: a DELETE ends the session's stores there too
/// (the other session's stay), and while the node holds the file `hermetic state`
/// says so.
#[test]
fn a_delete_ends_the_session_s_stores_in_the_embedded_file() {
    let dir = kv_sessions_dir("[keyvalue]\nfile = \"kv.redb\"\n");
    let node = Node::start_args(dir.path(), &[]);
    let s1 = node.open_session(GLOBEX);
    let s2 = node.open_session(GLOBEX);
    for s in [&s1, &s2] {
        let out = node.call_in_session(
            GLOBEX,
            s,
            "kvprobe_session",
            &json!({"op": "flood", "n": 2}),
        );
        assert_eq!(out["written"], 2, "{out}");
    }
    let at = ["--policy", "policy.toml"];
    let (code, _, stderr) = state(dir.path(), &["list", at[0], at[1]]);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("is open in another process"), "{stderr}");
    assert!(matches!(node.end_session(GLOBEX, &s1), 200 | 204));
    drop(node);
    let left = listed(dir.path(), &at);
    assert_eq!(
        left,
        [(
            "globex".to_owned(),
            "ext:kvprobe_session".to_owned(),
            json!(s2),
            2
        )]
    );
}

/// One Redis command, sent raw (RESP) to the Redis on `port`: its first answer line.
fn redis_cmd(port: u16, args: &[&str]) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut request = format!("*{}\r\n", args.len());
    for a in args {
        request.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    s.write_all(request.as_bytes()).unwrap();
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).unwrap();
    line.trim_end().to_owned()
}

/// Data an older version kept in Redis (a hash per bucket, its use beside it) is moved
/// into its store when a node first uses the store — not by `hermetic state list`: a
/// tenant store keeps its keys in their buckets; a session store of that layout is
/// deleted; the old hashes are gone.
#[test]
fn redis_data_of_the_older_layout_is_moved_into_its_store() {
    let redis = Redis::start();
    let ns = |tenant: &str, session: &str, bucket: &str| {
        let tool = "ext:kvprobe";
        format!(
            "{}:{tool}|{}:{tenant}|{}:{session}|{}:{bucket}|",
            tool.len(),
            tenant.len(),
            session.len(),
            bucket.len()
        )
    };
    let old = [
        (ns("globex", "", ""), "plan", "ship it"),
        (ns("globex", "", "b"), "n", "7"),
        (ns("globex", "s1", ""), "todo", "x"),
    ];
    for (ns, key, value) in &old {
        assert_eq!(
            redis_cmd(
                redis.port,
                &["HSET", &format!("hermetic:kv:{ns}"), key, value]
            ),
            ":1"
        );
        redis_cmd(
            redis.port,
            &["HSET", &format!("hermetic:kvuse:{ns}"), "keys", "1"],
        );
    }
    let dir = cluster_dir();
    // `hermetic state list` changes nothing: older nodes may still be running on the
    // old hashes (it moved them).
    let (code, listed_before, note) =
        state(dir.path(), &["list", "--json", "--redis-url", &redis.url()]);
    assert_eq!(code, 0, "{note}");
    assert_eq!(listed_before.trim(), "[]");
    assert!(
        note.contains("no node of this version has used this Redis yet"),
        "{note}"
    );
    for (ns, _, _) in &old {
        assert_eq!(
            redis_cmd(redis.port, &["EXISTS", &format!("hermetic:kv:{ns}")]),
            ":1",
            "{ns} moved by a listing"
        );
    }
    let node = Node::start(dir.path(), &redis.url());
    let probe = |args: serde_json::Value| -> serde_json::Value {
        let (status, answer) = node.call_tool(GLOBEX, "kvprobe", &args);
        assert_eq!(status, 200, "{answer}");
        serde_json::from_str(
            result_of(&answer)["result"]["content"][0]["text"]
                .as_str()
                .unwrap(),
        )
        .unwrap()
    };
    assert_eq!(
        probe(json!({"op": "get", "key": "plan"}))["value"],
        "ship it"
    );
    assert_eq!(
        probe(json!({"op": "get", "key": "n", "bucket": "b"}))["value"],
        "7"
    );
    // Counted as one store: two keys held, three more fit under max_keys = 5.
    assert_eq!(probe(json!({"op": "flood", "n": 10}))["written"], 3);
    for (ns, _, _) in &old {
        for kind in ["kv", "kvuse"] {
            assert_eq!(
                redis_cmd(redis.port, &["EXISTS", &format!("hermetic:{kind}:{ns}")]),
                ":0",
                "{kind} {ns}"
            );
        }
    }
    assert_eq!(
        listed(dir.path(), &["--redis-url", &redis.url()]),
        [(
            "globex".to_owned(),
            "ext:kvprobe".to_owned(),
            serde_json::Value::Null,
            5
        )]
    );
}
