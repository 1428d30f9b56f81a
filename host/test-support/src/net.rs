//! Loopback ports for the servers the suites start.
use std::net::TcpListener;

/// A free loopback port: bound, read and released, for a server to bind next (another
/// process may take it in between; a starter that can tell retries).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
