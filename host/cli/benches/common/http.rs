//! A raw keep-alive HTTP/1.1 MCP client, and a server child process with its CPU time,
//! for the benches that talk streamable HTTP (`#[path]`-included: the stdio bench has
//! no use for it). The child process itself is hermetic-test-support's.
#![allow(dead_code, reason = "each bench uses a part of it")]

use hermetic_test_support::serve_process::ServeProcess;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

/// Reads one HTTP/1.1 message (request or response) from `reader`: its head's lines and
/// its body (by `content-length`, or chunked). `None` at end of stream.
pub fn read_message(reader: &mut BufReader<TcpStream>) -> Option<(Vec<String>, Vec<u8>)> {
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
pub struct Connection {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
    addr: String,
    /// The session its requests name.
    pub session: Option<String>,
    /// The last request id used (ids are per session: give each connection its own range).
    pub next_id: u64,
}

impl Connection {
    pub fn open(addr: &str, session: Option<String>) -> Self {
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
    pub fn post(&mut self, message: &Value) -> (Vec<String>, Value) {
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

    pub fn request(&mut self, method: &str, params: Value) -> (Vec<String>, Value) {
        self.next_id += 1;
        let message =
            json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        self.post(&message)
    }

    /// Opens a session: initialize and its initialized notification.
    pub fn initialize(addr: &str) -> String {
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

    pub fn call(&mut self, i: usize) {
        let (head, reply) = self.request(
            "tools/call",
            json!({"name": "echo", "arguments": {"message": format!("m{i}")}}),
        );
        let text = reply["result"]["content"][0]["text"].as_str().unwrap_or("");
        assert!(text.contains(&format!("m{i}")), "{head:?} {reply}");
    }
}

/// A `hermetic serve --http` child process (killed on drop) and its server's CPU time.
pub struct Server {
    process: ServeProcess,
}

impl std::ops::Deref for Server {
    type Target = ServeProcess;
    fn deref(&self) -> &ServeProcess {
        &self.process
    }
}

impl Server {
    /// Starts `command` (`hermetic … serve --http ADDR`) and waits for its address.
    pub fn spawn(command: Command) -> Self {
        Self {
            process: ServeProcess::spawn(command, Duration::from_secs(120)),
        }
    }

    /// User + system CPU time the server has used so far.
    pub fn cpu(&self) -> Duration {
        crate::common::cpu(self.child.id())
    }
}
