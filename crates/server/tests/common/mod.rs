//! Shared by the server's suites: an [`McpServer`] serving streamable HTTP on
//! 127.0.0.1 from a thread of this process, stopped on demand.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers"
)]

use hermetic_server::{McpServer, http};
use std::time::Duration;

/// A server serving HTTP until [`Serving::stop`].
pub struct Serving {
    pub server: McpServer,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    pub shutdown: tokio_util::sync::CancellationToken,
    pub done: Option<std::thread::JoinHandle<()>>,
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
    }
}

impl Serving {
    /// Shuts the server down and waits for it.
    pub fn stop(mut self) {
        self.shutdown.cancel();
        self.done.take().unwrap().join().unwrap();
    }
}
