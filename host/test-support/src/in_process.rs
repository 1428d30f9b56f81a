//! An [`McpServer`] serving streamable HTTP on 127.0.0.1 from a thread of this
//! process, stopped on demand: the server's own suites drive it over real sockets.
use crate::http::{Reply, request};
use crate::mcp_http::{message, sessionless_headers, with_meta};
use hermetic_server::{McpServer, http};
use serde_json::{Value, json};
use std::time::Duration;

/// A server serving HTTP until [`Serving::stop`].
pub struct Serving {
    /// The server (its registry, options and state).
    pub server: McpServer,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// Cancelled to shut it down.
    pub shutdown: tokio_util::sync::CancellationToken,
    /// Its thread, until it has stopped.
    pub done: Option<std::thread::JoinHandle<()>>,
    /// Longest a read may wait.
    pub hang_guard: Duration,
}

/// Serves `server` on a free loopback port (its own two-worker runtime); waits at most
/// `hang_guard` for the port.
pub fn serve_http(server: McpServer, hang_guard: Duration) -> Serving {
    let shutdown = tokio_util::sync::CancellationToken::new();
    let (tx, rx) = std::sync::mpsc::channel();
    let (serving, token) = (server.clone(), shutdown.clone());
    let done = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap().to_string()).unwrap();
            http::serve(&serving, listener, token).await.unwrap();
        });
    });
    let addr = rx.recv_timeout(hang_guard).unwrap();
    Serving {
        server,
        addr,
        shutdown,
        done: Some(done),
        hang_guard,
    }
}

/// One request to `addr` on a fresh connection (JSON content, a bearer `token` if
/// given), waiting at most `hang_guard` for the answer (from any thread: a test may
/// send one while it does something else). The body is sent after the head; a server
/// that answers (and closes) without reading it is fine.
pub fn request_to(
    addr: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &[u8],
    hang_guard: Duration,
) -> Reply {
    let mut headers = Vec::new();
    if let Some(token) = token {
        headers.push(("Authorization", format!("Bearer {token}")));
    }
    headers.push(("Content-Type", "application/json".to_owned()));
    request(addr, method, path, &headers, body, hang_guard)
}

impl Serving {
    /// One request on a fresh connection, with a bearer `token` if given (see
    /// [`request_to`]).
    pub fn request(&self, method: &str, path: &str, token: Option<&str>, body: &[u8]) -> Reply {
        request_to(&self.addr, method, path, token, body, self.hang_guard)
    }

    /// tools/list from a sessionless (2026-07-28) request: the `tools` array.
    pub fn tools_list(&self) -> Vec<Value> {
        let params = with_meta(json!({}), "t", json!({}));
        let headers = sessionless_headers("tools/list", &params);
        let body = message("tools/list", params);
        let reply = request(
            &self.addr,
            "POST",
            "/mcp",
            &headers,
            body.as_bytes(),
            self.hang_guard,
        )
        .json();
        reply["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("no tools: {reply}"))
            .clone()
    }

    /// Shuts the server down and waits for it.
    pub fn stop(mut self) {
        self.shutdown.cancel();
        self.done.take().unwrap().join().unwrap();
    }
}
