//! Start and memory of `hermetic serve` as a child process (issue 11's goals: first
//! result ≤ 10 ms with the bundled tools, ≤ 100 ms for one tool not yet compiled; idle
//! peak RSS ≤ 20 MiB; 1,000 live sessions ≤ 64 MiB).
//!
//! - First result: spawn `hermetic serve --stdio`, send `initialize`, `initialized` and
//!   one `tools/call` at once, and time until the call's result arrives; each run is a
//!   new process. With the bundled tools and an empty compiled-code cache (a fresh
//!   install: the build compiled them), the same with their code in the cache (every
//!   later start), with one test tool (`echo`) and an empty cache
//!   (compiled at start), and with that tool in the cache.
//! - Memory: `hermetic serve --http` with the bundled tools (a later start: their code
//!   in the cache), its resident and peak resident set (`/proc/PID/status` VmRSS /
//!   VmHWM) idle after start, then with 1,000
//!   MCP sessions open (legacy `Mcp-Session-Id` handshakes, a policy raising the
//!   per-tenant session limits for the run).
//!
//! A bench, not a test: the figures are printed, never asserted.
//! `cargo bench -p hermetic-cli --bench start` (HERMETIC_BENCH_CALLS sets the runs per
//! start case, default 20; HERMETIC_BENCH_BIN another hermetic binary to run).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "benchmark set-up: a failure is a failed run"
)]

mod common;
#[path = "common/http.rs"]
mod http;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// MCP sessions of the memory run.
const SESSIONS: usize = 1000;

/// Spawns `server` (an MCP stdio server), sends the handshake and `call` in one write,
/// and returns the time until the call's result came back.
fn first_result(mut server: Command, call: &Value) -> Duration {
    let start = Instant::now();
    let mut child = server
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "0"}}});
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call});
    let mut stdin = child.stdin.take().unwrap();
    write!(stdin, "{init}\n{initialized}\n{call}\n").unwrap();
    stdin.flush().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let elapsed = loop {
        let mut line = String::new();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "the server exited"
        );
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == 2 {
            assert_eq!(
                message["result"]["isError"], false,
                "the call failed: {message}"
            );
            break start.elapsed();
        }
    };
    drop(stdin);
    child.wait().unwrap();
    elapsed
}

/// Runs `case` `runs` times and prints the median, p90 and slowest first result.
fn report(what: &str, runs: usize, mut case: impl FnMut() -> Duration) {
    let mut times: Vec<Duration> = (0..runs).map(|_| case()).collect();
    times.sort_unstable();
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    println!(
        "  {what:<58} median {:>6.1} ms, p90 {:>6.1} ms, max {:>6.1} ms",
        ms(at(0.5)),
        ms(at(0.9)),
        ms(times[times.len() - 1])
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `VmRSS` and `VmHWM` of process `pid`, in MiB.
fn memory(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        let line = status.lines().find(|l| l.starts_with(name)).unwrap();
        let kib: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        kib / 1024.0
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn start_figures(runs: usize) {
    let workspace = tempfile::TempDir::new().unwrap();
    std::fs::write(workspace.path().join("notes.txt"), "one line\n").unwrap();
    let read = json!({"name": "read_file", "arguments": {"path": "notes.txt"}});
    let echo = json!({"name": "echo", "arguments": {"message": "hi"}});
    let tools = common::echo_tools();
    let serve = |cache: &Path, bundled: bool| {
        let mut server = common::hermetic();
        server
            .args(["serve", "--stdio"])
            .current_dir(workspace.path())
            .env("HERMETIC_CACHE_DIR", cache);
        if !bundled {
            server
                .args(["--no-bundled", "--tools-dir"])
                .arg(tools.path());
        }
        server
    };
    println!("first result of a new `hermetic serve --stdio` ({runs} runs each):");
    report(
        "bundled tools, empty compiled-code cache (fresh install)",
        runs,
        || {
            let cache = tempfile::TempDir::new().unwrap();
            first_result(serve(cache.path(), true), &read)
        },
    );
    let later = tempfile::TempDir::new().unwrap();
    first_result(serve(later.path(), true), &read);
    report(
        "bundled tools, a later start (their code from the binary, not the cache)",
        runs,
        || first_result(serve(later.path(), true), &read),
    );
    report(
        "one tool not yet compiled (echo, empty cache)",
        runs,
        || {
            let cache = tempfile::TempDir::new().unwrap();
            first_result(serve(cache.path(), false), &echo)
        },
    );
    let warm = tempfile::TempDir::new().unwrap();
    first_result(serve(warm.path(), false), &echo);
    report("the same tool, compiled code in the cache", runs, || {
        first_result(serve(warm.path(), false), &echo)
    });
}

fn memory_figures() {
    let dir = tempfile::TempDir::new().unwrap();
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            "[server]\nmax_sessions_per_tenant = {}\nsessions_per_minute = {}\n",
            SESSIONS * 2,
            SESSIONS * 10
        ),
    )
    .unwrap();
    let serve = || {
        let mut command = common::hermetic();
        command
            .args(["serve", "--http", "127.0.0.1:0", "--policy"])
            .arg(&policy)
            .current_dir(dir.path())
            .env("HERMETIC_CACHE_DIR", dir.path().join("cache"));
        command
    };
    // The first start puts the bundled tools' code in the cache; measure a later one.
    drop(http::Server::spawn(serve()));
    let server = http::Server::spawn(serve());
    std::thread::sleep(Duration::from_secs(1));
    let pid = server.child.id();
    let (rss, peak) = memory(pid);
    println!("memory of `hermetic serve --http` with the bundled tools:");
    println!("  idle after start: RSS {rss:.1} MiB, peak RSS {peak:.1} MiB");
    let start = Instant::now();
    let sessions: Vec<String> = (0..SESSIONS)
        .map(|_| http::Connection::initialize(&server.addr))
        .collect();
    let opened = start.elapsed();
    let (rss, peak) = memory(pid);
    println!(
        "  with {} live sessions (opened in {:.2} s): RSS {rss:.1} MiB, peak RSS {peak:.1} MiB",
        sessions.len(),
        opened.as_secs_f64()
    );
}

fn main() {
    // `cargo bench` passes `--bench`; this bench has no filters.
    println!("start and memory, {}", common::machine());
    start_figures(common::calls(20));
    memory_figures();
}
