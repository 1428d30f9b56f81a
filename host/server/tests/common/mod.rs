//! Shared by the server's suites: an [`McpServer`] serving streamable HTTP on
//! 127.0.0.1 from a thread of this process, stopped on demand.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers"
)]

use hermetic_server::{McpServer, http};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::time::Duration;

/// One HTTP response.
#[allow(dead_code, reason = "each suite reads the parts it needs")]
pub struct Reply {
    pub status: u16,
    pub head: String,
    pub body: String,
}

#[allow(dead_code, reason = "each suite reads the parts it needs")]
impl Reply {
    /// The value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.head, self.body))
    }
}

/// A server serving HTTP until [`Serving::stop`].
pub struct Serving {
    #[allow(dead_code, reason = "each suite uses the parts it needs")]
    pub server: McpServer,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    pub shutdown: tokio_util::sync::CancellationToken,
    pub done: Option<std::thread::JoinHandle<()>>,
    /// Longest a read may wait.
    pub hang_guard: Duration,
}

/// Serves `server` on a free loopback port (its own two-worker runtime); waits at most
/// `hang_guard` for the port.
#[allow(dead_code, reason = "each suite uses the helpers it needs")]
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

/// One request to `addr` on a fresh connection (`Connection: close`), with a bearer
/// `token` if given, waiting at most `hang_guard` for the answer (from any thread: a
/// test may send one while it does something else).
#[allow(dead_code, reason = "each suite uses the helpers it needs")]
pub fn request_to(
    addr: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &[u8],
    hang_guard: Duration,
) -> Reply {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(hang_guard)).unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    let _ = stream.write_all(body);
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let response = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    Reply {
        status: head[9..12].parse().unwrap(),
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

#[allow(dead_code, reason = "each suite uses the helpers it needs")]
impl Serving {
    /// One request on a fresh connection (`Connection: close`), with a bearer `token`
    /// if given. The body is sent after the head; a server that answers (and closes)
    /// without reading it is fine.
    pub fn request(&self, method: &str, path: &str, token: Option<&str>, body: &[u8]) -> Reply {
        request_to(&self.addr, method, path, token, body, self.hang_guard)
    }

    /// tools/list from a sessionless (2026-07-28) request: the `tools` array.
    pub fn tools_list(&self) -> Vec<Value> {
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/list",
            "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}
            }}
        })
        .to_string();
        let mut stream = std::net::TcpStream::connect(&self.addr).unwrap();
        stream.set_read_timeout(Some(self.hang_guard)).unwrap();
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
             Mcp-Method: tools/list\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.addr,
            body.len()
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let (_, body) = response.split_once("\r\n\r\n").unwrap();
        let reply: Value = serde_json::from_str(body.trim()).unwrap();
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

/// A registry over `workspace` (the embedded default policy) with the `echo` test
/// tool, on the suites' compiled-code cache.
#[allow(dead_code, reason = "each suite uses the helpers it needs")]
pub fn echo_registry(workspace: &std::path::Path) -> hermetic::Registry {
    let policy = hermetic::OperatorPolicy::with_workspace(workspace.to_path_buf());
    let mut options = hermetic::RegistryOptions::new(policy);
    options.engine.cache_dir =
        Some(std::path::Path::new(hermetic::GUEST_BUILD_DIR).join("../../test-cache"));
    let registry = hermetic::Registry::new(options).unwrap();
    let dir = tempfile::TempDir::new().unwrap();
    std::fs::copy(
        std::path::Path::new(hermetic::GUEST_BUILD_DIR).join("echo.wasm"),
        dir.path().join("echo.wasm"),
    )
    .unwrap();
    assert_eq!(registry.add_dir(dir.path()).unwrap(), vec![]);
    registry
}
