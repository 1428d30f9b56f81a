//! MCP over stdio, end to end: `hermetic serve --stdio` as a child process against a
//! minimal floor server (this bench re-executed: a JSON-RPC loop that answers
//! `tools/call` with the echo and does nothing else), both driven by the same raw
//! client (sequential `tools/call` of a trivial echo tool, one line each way).
//!
//! Prints calls/s, p50/p99 round trip and the server's CPU time per call (from its
//! CPU-time clock, user + system), and the ratios to the floor. A bench, not a
//! test: the figures are printed, never asserted (criterion cannot hold a child
//! process's CPU time, hence `harness = false`).
//!
//! `cargo bench -p hermetic-cli --bench mcp_stdio` (HERMETIC_BENCH_CALLS sets the
//! number of calls, default 3000; HERMETIC_BENCH_BIN another hermetic binary to run).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "benchmark set-up: a failure is a failed run"
)]

mod common;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// Set in the re-executed bench to make it the floor server.
const FLOOR_ENV: &str = "HERMETIC_BENCH_FLOOR_SERVER";

/// The floor: the least an MCP stdio server can do per call (parse the line, answer
/// with the echo) with the same JSON library, no sandbox and no SDK.
fn floor_server() {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = message.get("id").cloned() else {
            continue; // a notification
        };
        let result = match message["method"].as_str() {
            Some("initialize") => json!({
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "floor", "version": "0"},
            }),
            Some("tools/call") => {
                let text = json!({"echo": message["params"]["arguments"]["message"]});
                json!({"content": [{"type": "text", "text": text.to_string()}], "isError": false})
            }
            _ => json!({}),
        };
        let reply = json!({"jsonrpc": "2.0", "id": id, "result": result});
        writeln!(stdout, "{reply}").unwrap();
        stdout.flush().unwrap();
    }
}

struct Client {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Client {
    fn spawn(mut command: Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut client = Self {
            child,
            stdin,
            stdout,
            next_id: 0,
        };
        client.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "0"}}),
        );
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and reads lines until its response.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "server exited"
            );
            let reply: Value = serde_json::from_str(&line).unwrap();
            if reply["id"] == id {
                return reply;
            }
        }
    }

    /// User + system CPU time the server has used so far.
    fn cpu(&self) -> Duration {
        common::cpu(self.child.id())
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Figures {
    calls_per_sec: f64,
    p50: Duration,
    p99: Duration,
    cpu_per_call: Duration,
}

fn measure(name: &str, command: Command, calls: usize) -> Figures {
    let mut client = Client::spawn(command);
    let call = |client: &mut Client, i: usize| {
        let reply = client.request(
            "tools/call",
            json!({"name": "echo", "arguments": {"message": format!("m{i}")}}),
        );
        let text = reply["result"]["content"][0]["text"].as_str().unwrap_or("");
        assert!(text.contains(&format!("m{i}")), "{name}: {reply}");
    };
    for i in 0..200 {
        call(&mut client, i); // warm-up: caches, allocator, branch predictors
    }
    let cpu_before = client.cpu();
    let started = Instant::now();
    let mut latencies = Vec::with_capacity(calls);
    for i in 0..calls {
        let t = Instant::now();
        call(&mut client, i);
        latencies.push(t.elapsed());
    }
    let wall = started.elapsed();
    let cpu = client.cpu().saturating_sub(cpu_before);
    latencies.sort();
    let count = u32::try_from(calls).unwrap();
    Figures {
        calls_per_sec: calls as f64 / wall.as_secs_f64(),
        p50: latencies[calls / 2],
        p99: latencies[calls * 99 / 100],
        cpu_per_call: cpu / count,
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
    let server = common::hermetic_serve(&["--stdio"], tools.path());
    println!(
        "MCP stdio, {calls} sequential tools/call of echo, one raw client; {}",
        common::machine()
    );
    let floor = measure("floor", floor, calls);
    let hermetic = measure("hermetic", server, calls);
    for (name, f) in [("floor", &floor), ("hermetic", &hermetic)] {
        println!(
            "  {name:<9} {:>8.0} calls/s   p50 {:>7.1} µs   p99 {:>7.1} µs   server CPU {:>6.1} µs/call",
            f.calls_per_sec,
            f.p50.as_secs_f64() * 1e6,
            f.p99.as_secs_f64() * 1e6,
            f.cpu_per_call.as_secs_f64() * 1e6,
        );
    }
    println!(
        "  hermetic / floor: round trip p50 {:.2}×, server CPU +{:.1} µs/call",
        hermetic.p50.as_secs_f64() / floor.p50.as_secs_f64(),
        (hermetic.cpu_per_call.as_secs_f64() - floor.cpu_per_call.as_secs_f64()) * 1e6,
    );
}
