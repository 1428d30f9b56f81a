//! MCP over stdio with a `hermetic … serve --stdio` command: a legacy session opened
//! by the initialize handshake, messages written as lines, replies read to the one
//! with the request's id.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Lines, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// A server with an initialized legacy session.
pub struct Session {
    /// The server process.
    pub child: Child,
    /// Its stdin, where messages go.
    pub stdin: ChildStdin,
    /// Its stdout, one message a line.
    pub lines: Lines<BufReader<ChildStdout>>,
}

/// Starts `serve` (the command's arguments must end with `serve --stdio`) and
/// initializes a legacy session.
pub fn open(serve: &mut Command) -> Session {
    let mut child = serve
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "cli-test", "version": "1"}}}),
    );
    let init = reply(&mut lines, 0);
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    Session {
        child,
        stdin,
        lines,
    }
}

/// Writes one message.
pub fn send(stdin: &mut impl Write, message: &Value) {
    writeln!(stdin, "{message}").unwrap();
    stdin.flush().unwrap();
}

/// Reads until the answer to request `id`.
pub fn reply(lines: &mut Lines<BufReader<ChildStdout>>, id: i64) -> Value {
    loop {
        let line = lines.next().expect("the server answers").unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["id"] == id {
            return v;
        }
    }
}

/// Starts `serve`, initializes, calls `tool` with `args`, closes stdin and waits: the
/// call's `result`.
pub fn call(serve: &mut Command, tool: &str, args: Value) -> Value {
    let Session {
        mut child,
        mut stdin,
        mut lines,
    } = open(serve);
    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": args}}),
    );
    let result = reply(&mut lines, 2);
    drop(stdin);
    let _ = child.wait();
    result["result"].clone()
}
