//! One MCP exchange over stdio with a `hermetic … serve --stdio` command.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

/// Starts `serve` (the command's arguments must end with `serve --stdio`), initializes
/// a legacy session, calls `tool` with `args`, closes stdin and waits: the call's
/// `result`.
pub fn call(serve: &mut Command, tool: &str, args: Value) -> Value {
    let mut child = serve
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |v: Value| {
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "cli-test", "version": "1"}}}),
    );
    let reply = |lines: &mut std::io::Lines<BufReader<std::process::ChildStdout>>, id: i64| loop {
        let line = lines.next().expect("the server answers").unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["id"] == id {
            return v;
        }
    };
    let init = reply(&mut lines, 1);
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": args}}),
    );
    let result = reply(&mut lines, 2);
    drop(stdin);
    let _ = child.wait();
    result["result"].clone()
}
