//! A bounded loopback load test of MCP tools/call over streamable HTTP (ignored by
//! default: it measures, it does not check behaviour). Run it in release mode:
//!
//! ```text
//! cargo test --release -p hermetic --test mcp_load -- --ignored --nocapture
//! ```
//!
//! The server runs in this process on 127.0.0.1 with a port the OS picks; `CONNECTIONS`
//! clients, each with one keep-alive connection, send `CALLS` tools/call requests of the
//! trivial `echo` tool in all (2026-07-28 sessionless requests, JSON responses). It
//! prints throughput and latency percentiles. Bounded in count; it stops by itself.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

use hermetic::Registry;
use hermetic_server::{McpServer, ServeOptions, http};
use hermetic_test_support::registry::bare_registry;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const CALLS: usize = 20_000;
const CONNECTIONS: usize = 64;

fn registry(workspace: &Path) -> Registry {
    bare_registry(
        hermetic::OperatorPolicy::with_workspace(workspace.to_path_buf()),
        &["echo"],
    )
}

fn request(addr: &str, id: usize) -> Vec<u8> {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"hi"}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"load","version":"0"}}}}}}}}"#
    );
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: echo\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Reads one HTTP/1.1 response (Content-Length or chunked) and returns its body.
async fn response(stream: &mut TcpStream, buf: &mut Vec<u8>) -> (u16, String) {
    let header_end = loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        read_more(stream, buf).await;
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).to_ascii_lowercase();
    let status: u16 = head[9..12].parse().unwrap();
    buf.drain(..header_end);
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse::<usize>().unwrap());
    let body = match length {
        Some(length) => {
            while buf.len() < length {
                read_more(stream, buf).await;
            }
            buf.drain(..length).collect::<Vec<u8>>()
        }
        None => {
            assert!(head.contains("transfer-encoding: chunked"), "{head}");
            let mut body = Vec::new();
            loop {
                let line_end = loop {
                    if let Some(end) = buf.windows(2).position(|w| w == b"\r\n") {
                        break end;
                    }
                    read_more(stream, buf).await;
                };
                let size =
                    usize::from_str_radix(String::from_utf8_lossy(&buf[..line_end]).trim(), 16)
                        .unwrap();
                while buf.len() < line_end + 2 + size + 2 {
                    read_more(stream, buf).await;
                }
                body.extend_from_slice(&buf[line_end + 2..line_end + 2 + size]);
                buf.drain(..line_end + 2 + size + 2);
                if size == 0 {
                    break body;
                }
            }
        }
    };
    (status, String::from_utf8(body).unwrap())
}

async fn read_more(stream: &mut TcpStream, buf: &mut Vec<u8>) {
    let mut chunk = [0_u8; 16 * 1024];
    let n = stream.read(&mut chunk).await.unwrap();
    assert!(n > 0, "the server closed the connection");
    buf.extend_from_slice(&chunk[..n]);
}

#[test]
#[ignore = "load test: run on demand with --release -- --ignored --nocapture"]
fn echo_over_http_throughput_and_latency() {
    let workspace = tempfile::TempDir::new().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    // Every client is on 127.0.0.1, and the warm-up's connections may not all have
    // ended on the server's side when the measured run opens its own: lift the
    // per-address cap (64 by default) that would refuse some of them.
    let mut options = ServeOptions::default();
    options.access.max_connections_per_ip = Some(4 * CONNECTIONS as u32);
    let server = McpServer::new(Arc::new(registry(workspace.path())), options);
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let shutdown = tokio_util::sync::CancellationToken::new();
        let serving = {
            let server = server.clone();
            let shutdown = shutdown.clone();
            tokio::spawn(async move { http::serve(&server, listener, shutdown).await })
        };

        let next = Arc::new(AtomicUsize::new(0));
        let run = |warmup: usize| {
            let next = next.clone();
            let addr = addr.clone();
            async move {
                next.store(0, Ordering::SeqCst);
                let limit = if warmup > 0 { warmup } else { CALLS };
                let started = Instant::now();
                let clients: Vec<_> = (0..CONNECTIONS)
                    .map(|_| {
                        let next = next.clone();
                        let addr = addr.clone();
                        tokio::spawn(async move {
                            let mut stream = TcpStream::connect(&addr).await.unwrap();
                            stream.set_nodelay(true).unwrap();
                            let mut buf = Vec::new();
                            let mut latencies = Vec::new();
                            loop {
                                let id = next.fetch_add(1, Ordering::Relaxed);
                                if id >= limit {
                                    break latencies;
                                }
                                let sent = Instant::now();
                                stream.write_all(&request(&addr, id)).await.unwrap();
                                let (status, body) = response(&mut stream, &mut buf).await;
                                latencies.push(sent.elapsed());
                                assert_eq!(status, 200, "{body}");
                                assert!(body.contains(r#"\"echo\":\"hi\""#), "{body}");
                                assert!(body.contains(r#""isError":false"#), "{body}");
                            }
                        })
                    })
                    .collect();
                let mut latencies: Vec<Duration> = Vec::with_capacity(limit);
                for client in clients {
                    latencies.extend(client.await.unwrap());
                }
                (started.elapsed(), latencies)
            }
        };

        // Warm-up: connections, pooling slots, code paths.
        let _ = run(2_000).await;
        let (elapsed, mut latencies) = run(0).await;
        latencies.sort();
        let pct =
            |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
        println!(
            "MCP tools/call over HTTP (echo, {CALLS} calls, {CONNECTIONS} connections): \
             {:.0} calls/s, p50 {:?}, p99 {:?}, max {:?}",
            latencies.len() as f64 / elapsed.as_secs_f64(),
            pct(0.50),
            pct(0.99),
            latencies[latencies.len() - 1],
        );
        assert_eq!(latencies.len(), CALLS);
        shutdown.cancel();
        serving.await.unwrap().unwrap();
    });
}
