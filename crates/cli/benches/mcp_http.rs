//! MCP over streamable HTTP, end to end: `hermetic serve --http` as a child process
//! against a minimal floor server (this bench re-executed: a thread per connection that
//! answers each POST's `tools/call` with the echo as plain JSON and does nothing else),
//! both driven by the same raw HTTP/1.1 keep-alive client in one MCP session.
//!
//! Two runs per server: one connection making sequential calls (p50/p99 round trip and
//! the server's CPU time per call, from `/proc/PID/stat`), and [`CONNECTIONS`]
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

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
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

/// Reads one HTTP/1.1 message (request or response) from `reader`: its head's lines and
/// its body (by `content-length`, or chunked). `None` at end of stream.
fn read_message(reader: &mut BufReader<TcpStream>) -> Option<(Vec<String>, Vec<u8>)> {
    let mut head = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end().to_owned();
        if line.is_empty() {
            break;
        }
        head.push(line);
    }
    let header = |name: &str| {
        head.iter().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    };
    let mut body = Vec::new();
    if let Some(length) = header("content-length") {
        body.resize(length.parse().ok()?, 0);
        reader.read_exact(&mut body).ok()?;
    } else if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let size = usize::from_str_radix(size.trim(), 16).ok()?;
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).ok()?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    }
    Some((head, body))
}

/// One keep-alive connection of an MCP client in session `session`.
struct Connection {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
    addr: String,
    session: Option<String>,
    next_id: u64,
}

impl Connection {
    fn open(addr: &str, session: Option<String>) -> Self {
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_nodelay(true).unwrap();
        Self {
            writer: stream.try_clone().unwrap(),
            reader: BufReader::new(stream),
            addr: addr.to_owned(),
            session,
            next_id: 0,
        }
    }

    /// POSTs `message`; the response's head and its JSON-RPC message (from a JSON body
    /// or the first event of an event stream).
    fn post(&mut self, message: &Value) -> (Vec<String>, Value) {
        let body = message.to_string();
        let session = self
            .session
            .as_ref()
            .map(|s| format!("mcp-session-id: {s}\r\n"))
            .unwrap_or_default();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\n\
             {session}content-length: {}\r\n\r\n{body}",
            self.addr,
            body.len()
        );
        self.writer.write_all(request.as_bytes()).unwrap();
        let (head, body) = read_message(&mut self.reader).expect("the server closed");
        let text = String::from_utf8(body).unwrap();
        let json = text
            .lines()
            .find_map(|l| {
                l.strip_prefix("data:")
                    .map(str::trim)
                    .filter(|d| !d.is_empty())
            })
            .unwrap_or(&text);
        let value = if json.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {text}"))
        };
        (head, value)
    }

    fn request(&mut self, method: &str, params: Value) -> (Vec<String>, Value) {
        self.next_id += 1;
        let message =
            json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        self.post(&message)
    }

    /// Opens a session: initialize and its initialized notification.
    fn initialize(addr: &str) -> String {
        let mut connection = Self::open(addr, None);
        let (head, reply) = connection.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "0"}}),
        );
        assert!(reply.get("result").is_some(), "{head:?} {reply}");
        let session = head
            .iter()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("mcp-session-id")
                    .then(|| v.trim().to_owned())
            })
            .expect("no session id");
        connection.session = Some(session.clone());
        connection.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        session
    }

    fn call(&mut self, i: usize) {
        let (head, reply) = self.request(
            "tools/call",
            json!({"name": "echo", "arguments": {"message": format!("m{i}")}}),
        );
        let text = reply["result"]["content"][0]["text"].as_str().unwrap_or("");
        assert!(text.contains(&format!("m{i}")), "{head:?} {reply}");
    }
}

/// A server child process and its MCP address.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn spawn(mut command: Command) -> Self {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let addr = loop {
            line.clear();
            assert!(stderr.read_line(&mut line).unwrap() > 0, "server exited");
            if let Some(url) = line.split("serving MCP at http://").nth(1) {
                break url.trim().trim_end_matches("/mcp").to_owned();
            }
        };
        // Keep draining its log so it never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        Self { child, addr }
    }

    /// User + system CPU time the server has used so far.
    fn cpu(&self) -> Duration {
        common::cpu(self.child.id())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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
