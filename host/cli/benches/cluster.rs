//! Many nodes against one: sessionless (MCP 2026-07-28) `tools/call`s of a rate-limited
//! tenant — every call takes a step of the tenant's limit — to one node counting alone
//! (the embedded store) and to three nodes sharing a real `redis-server`, spread over
//! the nodes. Calls/s over [`CONNECTIONS`] keep-alive connections, and the p50/p99
//! round trip. A bench, not a test: figures are printed, never asserted; client, nodes
//! and Redis share the machine's cores, so these are floors.
//!
//! `cargo bench -p hermetic-cli --bench cluster` (HERMETIC_BENCH_CALLS sets the calls
//! per connection, default 500; HERMETIC_BENCH_NODES=1 runs the one-node part only,
//! e.g. to compare a build from before the shared store, named by HERMETIC_BENCH_BIN,
//! with this one).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "benchmark set-up: a failure is a failed run"
)]

mod common;
#[path = "common/http.rs"]
mod http;

use hermetic_test_support::guests::test_cache;
use hermetic_test_support::redis::Redis;
use hermetic_test_support::tokens::sha256_hex;
use http::{Server, read_message};
use serde_json::json;
use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

/// Keep-alive connections calling at once.
const CONNECTIONS: usize = 8;
const TOKEN: &str = "hmt_bench_cluster_token";

/// A `hermetic serve --http` node of the bench's policy and tools, with the shared
/// store at `redis` if given; killed on drop.
fn node(dir: &Path, tools: &Path, redis: Option<&str>) -> Server {
    let mut cmd = common::hermetic();
    cmd.current_dir(dir)
        .env("HERMETIC_CACHE_DIR", test_cache())
        .args(["--policy", "policy.toml", "--no-bundled", "--tools-dir"])
        .arg(tools)
        .args(["serve", "--http", "127.0.0.1:0", "--no-watch"]);
    if let Some(url) = redis {
        cmd.args(["--redis-url", url]);
    }
    Server::spawn(cmd)
}

/// `calls` sessionless calls on one keep-alive connection to `addr`: each round trip.
fn run_connection(addr: &str, calls: usize) -> Vec<Duration> {
    let writer = TcpStream::connect(addr).unwrap();
    writer.set_nodelay(true).unwrap();
    let mut reader = BufReader::new(writer.try_clone().unwrap());
    let mut writer = writer;
    let mut times = Vec::with_capacity(calls);
    for i in 0..calls {
        let body = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
            "name": "echo", "arguments": {"message": "hi"},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"}}}})
        .to_string();
        let started = Instant::now();
        write!(
            writer,
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let (head, body) = read_message(&mut reader).expect("an answer");
        assert!(head[0].contains(" 200"), "{head:?}");
        // A call that failed (a tool the build cannot load) would measure the error.
        if i == 0 {
            let body = String::from_utf8_lossy(&body);
            assert!(
                body.contains(r#"\"echo\":\"hi\""#),
                "not echo's result: {body}"
            );
        }
        times.push(started.elapsed());
    }
    times
}

/// Calls/s, p50 and p99 of [`CONNECTIONS`] connections spread over `nodes`.
fn measure(nodes: &[Server], calls: usize) -> (f64, Duration, Duration) {
    // Warm every node (compiled code, first connection to Redis).
    for node in nodes {
        run_connection(&node.addr, 20);
    }
    let started = Instant::now();
    let mut times: Vec<Duration> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..CONNECTIONS)
            .map(|c| {
                let addr = nodes[c % nodes.len()].addr.clone();
                scope.spawn(move || run_connection(&addr, calls))
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let elapsed = started.elapsed();
    times.sort();
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    (
        times.len() as f64 / elapsed.as_secs_f64(),
        at(0.5),
        at(0.99),
    )
}

fn main() {
    let calls = common::calls(500);
    let tools = common::echo_tools();
    let dir = tempfile::TempDir::new().unwrap();
    let digest = sha256_hex(TOKEN);
    std::fs::write(
        dir.path().join("policy.toml"),
        format!(
            "[tenants.bench]\ntoken_sha256 = [\"{digest}\"]\n[tenants.bench.limits]\ncalls_per_minute = 100000000\n"
        ),
    )
    .unwrap();
    println!(
        "cluster: {} calls on {CONNECTIONS} connections, a rate-limited tenant; {}",
        calls * CONNECTIONS,
        common::machine()
    );
    let one = [node(dir.path(), tools.path(), None)];
    let (rate, p50, p99) = measure(&one, calls);
    println!(
        "  1 node, embedded store:      {rate:>8.0} calls/s   p50 {:>6.0} µs   p99 {:>6.0} µs",
        p50.as_secs_f64() * 1e6,
        p99.as_secs_f64() * 1e6
    );
    drop(one);
    if std::env::var("HERMETIC_BENCH_NODES").is_ok_and(|n| n == "1") {
        return;
    }
    let redis = Redis::start();
    let url = redis.url();
    let three: Vec<Server> = (0..3)
        .map(|_| node(dir.path(), tools.path(), Some(&url)))
        .collect();
    let (rate, p50, p99) = measure(&three, calls);
    println!(
        "  3 nodes, one redis-server:   {rate:>8.0} calls/s   p50 {:>6.0} µs   p99 {:>6.0} µs",
        p50.as_secs_f64() * 1e6,
        p99.as_secs_f64() * 1e6
    );
}
