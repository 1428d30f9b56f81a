//! How tenants share the host under load (issue 10 item 3, issue 39 item 3). Tenant
//! `calm` makes trivial `echo` calls while tenant `flood` loads the host; each row is
//! `calm`'s latency percentiles. Four loads:
//!
//! 1. **queued** — in process: `flood` queues 5,000 calls of a spinning tool, one at a
//!    time (`max_concurrent = 1`).
//! 2. **no limits, in process** — `flood` keeps 32 spinning calls running and the
//!    policy sets no tenant limits; once with the CPU turns off (`compute_turns` far
//!    above the cores: every computing call is a runnable thread, as before they
//!    existed) and once with the default (one turn per core, shared fairly).
//! 3. **no limits, over HTTP, one address** — the same, through `hermetic serve`'s
//!    HTTP front: both tenants' clients come from 127.0.0.1, as tenants behind a reverse
//!    proxy do; `flood` keeps 32 connections each calling the spinning tool again and
//!    again, `calm` makes each call on a fresh connection.
//! 4. **flood over HTTP, one address** — `flood` keeps 400 connections calling (past
//!    the 64 unauthenticated connections an address may hold, and past its 256
//!    requests in flight: the rest get 503 and call again at once); `calm` as above.
//!    Counts what `calm` got back: every call must be answered (before, 3 of 88 of its
//!    calls were reset by the per-address connection cap).
//!
//! Not criterion: the figures of interest are tail latencies and refusals under a
//! concurrent load that criterion's iteration model cannot hold steady, so this bench
//! (harness = false) measures them itself and prints them. `cargo bench` passes
//! `--bench`; `cargo test --benches` nothing: it runs either way.
use hermetic::{CallOptions, Registry};
use hermetic_config::ServerPolicy;
use hermetic_server::{McpServer, ServeOptions, auth, http};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const SAMPLES: usize = 2_000;
const QUEUED: usize = 5_000;
/// Spinning calls `flood` keeps running in the no-limits cases.
const SPINNING: usize = 32;
/// `calm`'s calls over HTTP (each on a fresh connection).
const HTTP_SAMPLES: usize = 200;
/// `flood`'s connections in the HTTP flood.
const FLOOD_CONNECTIONS: usize = 400;

const FLOOD_TOKEN: &str = "hmt_bench_flood";
const CALM_TOKEN: &str = "hmt_bench_calm";

/// Tenants `flood` and `calm` with no limits, the `echo` and `spin` test tools, and
/// `compute_turns` CPU turns.
fn no_limits_registry(root: &std::path::Path, compute_turns: u32) -> Registry {
    const POLICY: &str = r#"
[mounts.workspace]
path = "ws"
access = "rw"

[tenants.flood]
[tenants.calm]
"#;
    std::fs::create_dir_all(root.join("ws")).unwrap();
    let registry =
        hermetic_test_support::registry::policy_registry_with(root, POLICY, false, |options| {
            options.engine.compute_turns = compute_turns;
        });
    let dir = hermetic_test_support::guests::tools_dir(&["echo", "spin"]);
    assert_eq!(registry.add_dir(dir.path()).unwrap(), vec![]);
    registry
}

fn tenant(name: &str) -> CallOptions {
    CallOptions::default().with_tenant(name)
}

/// `n` sequential echo calls of `calm`, sorted latencies.
async fn calm_latencies(registry: &Arc<Registry>, n: usize) -> Vec<Duration> {
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let outcome = registry
            .invoke_async("echo".into(), r#"{"message": "hi"}"#.into(), tenant("calm"))
            .await;
        times.push(started.elapsed());
        assert!(outcome.is_success(), "{outcome:?}");
    }
    times.sort();
    times
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn row(name: &str, t: &[Duration]) {
    println!(
        "fairness/{name:<52} p50 {:>9.1?}  p99 {:>9.1?}  max {:>9.1?}",
        percentile(t, 0.5),
        percentile(t, 0.99),
        t[t.len() - 1]
    );
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// 1. `flood` queues `QUEUED` spins, one at a time.
fn queued() {
    let root = tempfile::TempDir::new().unwrap();
    let registry = Arc::new(hermetic_test_support::registry::fairness_registry(
        root.path(),
    ));
    let runtime = runtime();
    runtime.block_on(async {
        calm_latencies(&registry, SAMPLES).await; // warm-up
        let unloaded = calm_latencies(&registry, SAMPLES).await;
        let flood: Vec<_> = (0..QUEUED)
            .map(|_| {
                let registry = Arc::clone(&registry);
                tokio::spawn(async move {
                    registry
                        .invoke_async("spin".into(), "{}".into(), tenant("flood"))
                        .await
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let loaded = calm_latencies(&registry, SAMPLES).await;
        for task in &flood {
            task.abort();
        }
        row("queued: calm echo, unloaded", &unloaded);
        row(
            &format!("queued: calm echo, flood queued {QUEUED} spins"),
            &loaded,
        );
        let ratio =
            percentile(&loaded, 0.99).as_secs_f64() / percentile(&unloaded, 0.99).as_secs_f64();
        println!(
            "fairness/queued: p99 loaded / unloaded: {ratio:.2}× (goal ≤ 2×: {})",
            if ratio <= 2.0 { "met" } else { "NOT met" }
        );
    });
    // The flood call running spins to its 200 ms deadline; do not wait for it.
    runtime.shutdown_background();
}

/// 2. `flood` keeps `SPINNING` spins running, no limits, with `compute_turns` turns.
fn no_limits_in_process(compute_turns: u32, label: &str) {
    let root = tempfile::TempDir::new().unwrap();
    let registry = Arc::new(no_limits_registry(root.path(), compute_turns));
    let runtime = runtime();
    runtime.block_on(async {
        calm_latencies(&registry, 200).await; // warm-up
        let unloaded = calm_latencies(&registry, SAMPLES).await;
        let stop = Arc::new(AtomicBool::new(false));
        let flood: Vec<_> = (0..SPINNING)
            .map(|_| {
                let (registry, stop) = (Arc::clone(&registry), Arc::clone(&stop));
                tokio::spawn(async move {
                    while !stop.load(Ordering::Relaxed) {
                        registry
                            .invoke_async("spin".into(), "{}".into(), tenant("flood"))
                            .await;
                    }
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let loaded = calm_latencies(&registry, SAMPLES).await;
        stop.store(true, Ordering::Relaxed);
        for task in flood {
            let _ = task.await;
        }
        row(
            &format!("no limits, in process, {label}: unloaded"),
            &unloaded,
        );
        row(
            &format!("no limits, in process, {label}: flood {SPINNING} spinning"),
            &loaded,
        );
    });
}

/// A tools/call request as tenant `token`, sessionless (2026-07-28).
fn request(addr: &str, token: &str, tool: &str, id: usize) -> Vec<u8> {
    let arguments = if tool == "echo" {
        r#"{"message":"hi"}"#
    } else {
        "{}"
    };
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"fairness","version":"0"}}}}}}}}"#
    );
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {tool}\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Sends `request` on `stream` and reads the response's status and body (it has a
/// Content-Length: the front answers JSON); `None` when the connection failed or
/// closed before a whole response (a reset, for the client).
async fn exchange(stream: &mut TcpStream, request: &[u8]) -> Option<(u16, String)> {
    stream.write_all(request).await.ok()?;
    let mut buf = Vec::new();
    let header_end = loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        let mut chunk = [0_u8; 8192];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).to_ascii_lowercase();
    let status: u16 = head.get(9..12)?.parse().ok()?;
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())?;
    while buf.len() < header_end + length {
        let mut chunk = [0_u8; 8192];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buf[header_end..header_end + length]).into_owned();
    Some((status, body))
}

/// What `calm` got from its calls over HTTP.
#[derive(Default)]
struct CalmOutcome {
    latencies: Vec<Duration>,
    /// Not 200 (or a 200 whose result is an error).
    refused: usize,
    /// No response at all: the connection was refused, reset or closed.
    unanswered: usize,
}

/// `n` sequential echo calls of `calm`, each on a fresh connection.
async fn calm_over_http(addr: &str, n: usize) -> CalmOutcome {
    let mut outcome = CalmOutcome::default();
    for id in 0..n {
        let started = Instant::now();
        let answered = match TcpStream::connect(addr).await {
            Ok(mut stream) => {
                let _ = stream.set_nodelay(true);
                exchange(&mut stream, &request(addr, CALM_TOKEN, "echo", id)).await
            }
            Err(_) => None,
        };
        match answered {
            Some((200, body)) if body.contains(r#""isError":false"#) => {
                outcome.latencies.push(started.elapsed());
            }
            Some(_) => outcome.refused += 1,
            None => outcome.unanswered += 1,
        }
    }
    outcome.latencies.sort();
    outcome
}

/// What `flood`'s connections got.
#[derive(Default)]
struct FloodCounts {
    answered: AtomicUsize,
    busy: AtomicUsize,
    unanswered: AtomicUsize,
}

/// `connections` clients of `flood`, each calling `spin` again and again on its own
/// connection (a new one when the server closes it) until `stop`.
fn flood_over_http(
    addr: &str,
    connections: usize,
    stop: &Arc<AtomicBool>,
    counts: &Arc<FloodCounts>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..connections)
        .map(|i| {
            let (addr, stop, counts) = (addr.to_owned(), Arc::clone(stop), Arc::clone(counts));
            tokio::spawn(async move {
                let request = request(&addr, FLOOD_TOKEN, "spin", i);
                while !stop.load(Ordering::Relaxed) {
                    let Ok(mut stream) = TcpStream::connect(&addr).await else {
                        counts.unanswered.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    };
                    while !stop.load(Ordering::Relaxed) {
                        match exchange(&mut stream, &request).await {
                            Some((503, _)) => counts.busy.fetch_add(1, Ordering::Relaxed),
                            Some(_) => counts.answered.fetch_add(1, Ordering::Relaxed),
                            None => {
                                counts.unanswered.fetch_add(1, Ordering::Relaxed);
                                break;
                            }
                        };
                    }
                }
            })
        })
        .collect()
}

/// 3 and 4: the HTTP front, both tenants from 127.0.0.1; `flood` keeps `connections`
/// connections calling `spin`, with `compute_turns` CPU turns.
fn over_http(connections: usize, compute_turns: u32, label: &str) {
    let root = tempfile::TempDir::new().unwrap();
    let registry = Arc::new(no_limits_registry(root.path(), compute_turns));
    let mut access = ServerPolicy::default();
    access
        .tenant_tokens
        .insert("flood".into(), vec![auth::digest(FLOOD_TOKEN)]);
    access
        .tenant_tokens
        .insert("calm".into(), vec![auth::digest(CALM_TOKEN)]);
    let server = McpServer::new(
        registry,
        ServeOptions {
            access,
            ..ServeOptions::default()
        },
    );
    // The server on its own two workers, the clients on two more: the four share the
    // machine's two cores, as a server and its clients on one host do.
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let shutdown = tokio_util::sync::CancellationToken::new();
    let serving = {
        let (server, shutdown) = (server.clone(), shutdown.clone());
        std::thread::spawn(move || {
            runtime().block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx
                    .send(listener.local_addr().unwrap().to_string())
                    .unwrap();
                http::serve(&server, listener, shutdown).await.unwrap();
            });
        })
    };
    let addr = addr_rx.recv().unwrap();
    let clients = runtime();
    clients.block_on(async {
        calm_over_http(&addr, 50).await; // warm-up
        let unloaded = calm_over_http(&addr, HTTP_SAMPLES).await;
        let stop = Arc::new(AtomicBool::new(false));
        let counts = Arc::new(FloodCounts::default());
        let flood = flood_over_http(&addr, connections, &stop, &counts);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let loaded = calm_over_http(&addr, HTTP_SAMPLES).await;
        stop.store(true, Ordering::Relaxed);
        for task in flood {
            task.abort();
        }
        row(&format!("{label}: unloaded"), &unloaded.latencies);
        let name = format!("{label}: flood {connections} connections");
        if loaded.latencies.is_empty() {
            println!("fairness/{name:<52} no call of calm's was answered");
        } else {
            row(&name, &loaded.latencies);
        }
        println!(
            "fairness/{label}: calm {} of {HTTP_SAMPLES} answered, {} refused, {} unanswered; \
             flood {} answered, {} 503, {} unanswered",
            loaded.latencies.len(),
            loaded.refused,
            loaded.unanswered,
            counts.answered.load(Ordering::Relaxed),
            counts.busy.load(Ordering::Relaxed),
            counts.unanswered.load(Ordering::Relaxed),
        );
    });
    clients.shutdown_background();
    shutdown.cancel();
    serving.join().unwrap();
}

fn main() {
    let only = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let run = |name: &str| only.as_deref().is_none_or(|o| name.contains(o));
    if run("queued") {
        queued();
    }
    // Far more turns than calls: none ever waits, as before the turns existed.
    let off = 100_000;
    let on = hermetic::default_compute_turns();
    if run("in_process") {
        no_limits_in_process(off, "turns off");
        no_limits_in_process(on, &format!("{on} turns"));
    }
    if run("http") {
        over_http(SPINNING, off, "no limits, HTTP, one address, turns off");
        over_http(
            SPINNING,
            on,
            &format!("no limits, HTTP, one address, {on} turns"),
        );
        over_http(
            FLOOD_CONNECTIONS,
            on,
            &format!("flood, HTTP, one address, {on} turns"),
        );
    }
}
