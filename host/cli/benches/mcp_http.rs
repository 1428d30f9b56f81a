//! MCP over streamable HTTP, end to end: `hermetic serve --http` as a child process
//! against a minimal floor server (this bench re-executed: a thread per connection that
//! answers each POST's `tools/call` with the echo as plain JSON and does nothing else),
//! both driven by the same raw HTTP/1.1 keep-alive client in one MCP session.
//!
//! Two runs per server: one connection making sequential calls (p50/p99 round trip and
//! the server's CPU time per call, from its CPU-time clock), and [`CONNECTIONS`]
//! connections calling at once (calls/s). A bench, not a test: the figures are printed,
//! never asserted. The client runs on the same 2 cores as the server, so the
//! many-connection figure is a floor on what the server can do.
//!
//! `cargo bench -p hermetic-cli --bench mcp_http` (HERMETIC_BENCH_CALLS sets the
//! number of sequential calls, default 3000; the parallel run makes 20 times as many;
//! HERMETIC_BENCH_BIN another hermetic binary to run).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "benchmark set-up: a failure is a failed run"
)]

mod common;
#[path = "common/http.rs"]
mod http;

use http::{Connection, Server, read_message};
use serde_json::{Value, json};
use std::io::{BufReader, Write};
use std::net::TcpListener;
use std::process::Command;
use std::time::{Duration, Instant};

/// Set in the re-executed bench to make it the floor server.
const FLOOR_ENV: &str = "HERMETIC_BENCH_FLOOR_HTTP";

/// Keep-alive connections of the parallel run (issue 11's goal: ≥ 20,000 calls/s).
const CONNECTIONS: usize = 64;

/// The floor: the least an HTTP MCP server can do per call (read the request, parse the
/// body, answer with the echo) with the same JSON library, no sandbox and no SDK.
fn floor_server() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    eprintln!(
        "serving MCP at http://{}/mcp",
        listener.local_addr().unwrap()
    );
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        std::thread::spawn(move || {
            let _ = stream.set_nodelay(true);
            let mut writer = stream.try_clone().unwrap();
            let mut reader = BufReader::new(stream);
            while let Some((_, body)) = read_message(&mut reader) {
                let Ok(message) = serde_json::from_slice::<Value>(&body) else {
                    return;
                };
                let Some(id) = message.get("id").cloned() else {
                    let _ = writer.write_all(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n");
                    continue;
                };
                let result = match message["method"].as_str() {
                    Some("tools/call") => {
                        let text = json!({"echo": message["params"]["arguments"]["message"]});
                        json!({"content": [{"type": "text", "text": text.to_string()}], "isError": false})
                    }
                    _ => json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                                "serverInfo": {"name": "floor", "version": "0"}}),
                };
                let reply = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nmcp-session-id: floor\r\ncontent-length: {}\r\n\r\n",
                    reply.len()
                );
                if writer.write_all(head.as_bytes()).is_err()
                    || writer.write_all(reply.as_bytes()).is_err()
                {
                    return;
                }
            }
        });
    }
}

struct Figures {
    sequential_per_sec: f64,
    p50: Duration,
    p99: Duration,
    cpu_per_call: Duration,
    parallel_per_sec: f64,
}

fn measure(command: Command, calls: usize) -> Figures {
    let server = Server::spawn(command);
    let session = Connection::initialize(&server.addr);
    let mut connection = Connection::open(&server.addr, Some(session.clone()));
    for i in 0..200 {
        connection.call(i); // warm-up: caches, allocator, branch predictors
    }
    let cpu_before = server.cpu();
    let started = Instant::now();
    let mut latencies = Vec::with_capacity(calls);
    for i in 0..calls {
        let t = Instant::now();
        connection.call(i);
        latencies.push(t.elapsed());
    }
    let wall = started.elapsed();
    let cpu = server.cpu().saturating_sub(cpu_before);
    latencies.sort();
    // The server takes at most 64 connections from one address: close this one (and
    // give the server a moment to see it closed) before opening 64 more.
    drop(connection);
    std::thread::sleep(Duration::from_millis(100));

    let per_connection = calls * 20 / CONNECTIONS;
    let mut connections: Vec<Connection> = (0..CONNECTIONS)
        .map(|k| {
            let mut connection = Connection::open(&server.addr, Some(session.clone()));
            // Request ids are the session's: each connection takes its own range.
            connection.next_id = (k as u64 + 1) * 1_000_000;
            connection
        })
        .collect();
    let started = Instant::now();
    std::thread::scope(|scope| {
        for connection in &mut connections {
            scope.spawn(move || {
                for i in 0..per_connection {
                    connection.call(i);
                }
            });
        }
    });
    let parallel = started.elapsed();
    Figures {
        sequential_per_sec: calls as f64 / wall.as_secs_f64(),
        p50: latencies[calls / 2],
        p99: latencies[calls * 99 / 100],
        cpu_per_call: cpu / u32::try_from(calls).unwrap(),
        parallel_per_sec: (per_connection * CONNECTIONS) as f64 / parallel.as_secs_f64(),
    }
}

fn main() {
    if std::env::var_os(FLOOR_ENV).is_some() {
        floor_server();
        return;
    }
    // `cargo bench` passes `--bench`; nothing else to parse.
    let calls = common::calls(3000);
    let tools = common::echo_tools();
    let floor = common::floor_command(FLOOR_ENV);
    let server = common::hermetic_serve(&["--http", "127.0.0.1:0"], tools.path());
    println!(
        "MCP streamable HTTP, one session: {calls} sequential tools/call of echo on one keep-alive \
         connection, then {} on {CONNECTIONS} connections at once; raw client; {}",
        calls * 20 / CONNECTIONS * CONNECTIONS,
        common::machine()
    );
    let floor = measure(floor, calls);
    let hermetic = measure(server, calls);
    for (name, f) in [("floor", &floor), ("hermetic", &hermetic)] {
        println!(
            "  {name:<9} sequential {:>7.0} calls/s   p50 {:>7.1} µs   p99 {:>7.1} µs   server CPU {:>6.1} µs/call   {CONNECTIONS} connections {:>7.0} calls/s",
            f.sequential_per_sec,
            f.p50.as_secs_f64() * 1e6,
            f.p99.as_secs_f64() * 1e6,
            f.cpu_per_call.as_secs_f64() * 1e6,
            f.parallel_per_sec,
        );
    }
    println!(
        "  hermetic / floor: round trip p50 {:.2}×, server CPU +{:.1} µs/call, {CONNECTIONS}-connection throughput {:.2}×",
        hermetic.p50.as_secs_f64() / floor.p50.as_secs_f64(),
        (hermetic.cpu_per_call.as_secs_f64() - floor.cpu_per_call.as_secs_f64()) * 1e6,
        hermetic.parallel_per_sec / floor.parallel_per_sec,
    );
}
