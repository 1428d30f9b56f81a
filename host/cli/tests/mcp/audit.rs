//! The audit log records every call and decision; `hermetic audit verify` catches an
//! edited, deleted or reordered line, and a torn tail stops the server until `audit
//! repair` mends it.
use super::harness::{
    ACME_TOKEN, Dirs, GLOBEX_TOKEN, HttpServer, TEST_TOOLS, hermetic_env, mcp_raw, policy_args,
    tenants_policy,
};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `hermetic audit verify` on `file`: (exit code, stdout).
fn audit_verify(file: &Path, extra: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hermetic"))
        .args(["audit", "verify"])
        .arg(file)
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn audit_records_every_call_and_verify_catches_edited_deleted_and_reordered_lines() {
    let dirs = Dirs::new(TEST_TOOLS);
    let audit = dirs.state.path().join("audit.jsonl");
    let policy = tenants_policy(&dirs, "");
    let mut server = HttpServer::start_with(
        policy_args(&dirs, &policy),
        &["--audit", audit.to_str().unwrap()],
    );
    let call = |token: &str, name: &str, args: Value| {
        mcp_raw(
            &server,
            Some(token),
            "tools/call",
            json!({"name": name, "arguments": args}),
            &[],
        )
        .status
    };
    assert_eq!(call(GLOBEX_TOKEN, "echo", json!({"message": "one"})), 200);
    assert_eq!(
        call(
            GLOBEX_TOKEN,
            "fail",
            json!({"mode": "error", "message": "x"})
        ),
        200
    );
    assert_eq!(
        call(ACME_TOKEN, "echo", json!({"message": "not yours"})),
        200
    );
    assert_eq!(call(GLOBEX_TOKEN, "echo", json!({"message": "two"})), 200);
    assert!(server.terminate().success());

    let text = std::fs::read_to_string(&audit).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    let records: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summary: Vec<(String, String, String, String)> = records
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
            (s("kind"), s("tenant"), s("tool"), s("outcome"))
        })
        .collect();
    let row = |k: &str, t: &str, tool: &str, o: &str| {
        (k.to_owned(), t.to_owned(), tool.to_owned(), o.to_owned())
    };
    assert_eq!(
        summary,
        [
            row("call", "globex", "echo", "ok"),
            row("call", "globex", "fail", "error"),
            row("decision", "acme", "echo", "unknown_tool"),
            row("call", "globex", "echo", "ok"),
        ]
    );
    assert_eq!(records[0]["args_sha256"].as_str().unwrap().len(), 64);
    assert_ne!(records[0]["args_sha256"], records[3]["args_sha256"]);
    assert_eq!(records[0]["grants"]["terminal"], false);
    assert!(records[0]["duration_ms"].as_f64().is_some());

    let (code, out) = audit_verify(&audit, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("ok, 4 lines"), "{out}");
    let head = records[3]["hash"].as_str().unwrap();

    let tampered = |name: &str, lines: &[&str]| {
        let path = dirs.workspace.path().join(name);
        std::fs::write(
            &path,
            lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
        )
        .unwrap();
        path
    };
    let edited_line = lines[1].replace("\"error\"", "\"ok\"");
    let edited = tampered("edited", &[lines[0], &edited_line, lines[2], lines[3]]);
    let (code, out) = audit_verify(&edited, &[]);
    assert_eq!((code, out.contains("line 2:")), (1, true), "{out}");
    let deleted = tampered("deleted", &[lines[0], lines[1], lines[3]]);
    let (code, out) = audit_verify(&deleted, &[]);
    assert_eq!((code, out.contains("line 3:")), (1, true), "{out}");
    let reordered = tampered("reordered", &[lines[0], lines[2], lines[1], lines[3]]);
    let (code, out) = audit_verify(&reordered, &[]);
    assert_eq!((code, out.contains("line 2:")), (1, true), "{out}");
    // Cutting the last line leaves a valid shorter chain: the recorded head or line
    // count catches it.
    let cut = tampered("cut", &lines[..3]);
    assert_eq!(audit_verify(&cut, &[]).0, 0);
    assert_eq!(audit_verify(&cut, &["--head", head]).0, 1);
    assert_eq!(audit_verify(&cut, &["--min-lines", "4"]).0, 1);
    assert_eq!(audit_verify(&audit, &["--head", head]).0, 0);
}

/// A crash mid-write leaves half a line: the server and `audit verify` both call it
/// torn (not tampered) and point at `audit repair`, which cuts it (keeping the bytes in
/// FILE.torn) so that the next server continues the chain.
#[test]
fn a_torn_audit_tail_stops_the_server_until_audit_repair_mends_it() {
    let dirs = Dirs::new(TEST_TOOLS);
    let audit = dirs.state.path().join("audit.jsonl");
    let audit_arg = audit.to_str().unwrap();
    let mut server = HttpServer::start_with(dirs.global_args(), &["--audit", audit_arg]);
    let echo = |server: &HttpServer| {
        let reply = mcp_raw(
            server,
            None,
            "tools/call",
            json!({"name": "echo", "arguments": {"message": "one"}}),
            &[],
        );
        assert_eq!(reply.status, 200, "{}", reply.body);
    };
    echo(&server);
    assert!(server.terminate().success());
    drop(server);
    let torn = b"{\"seq\":2,\"time\":\"20";
    std::fs::OpenOptions::new()
        .append(true)
        .open(&audit)
        .unwrap()
        .write_all(torn)
        .unwrap();

    let (code, out) = audit_verify(&audit, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("torn:") && out.contains("cut short"), "{out}");
    assert!(out.contains("hermetic audit repair"), "{out}");

    // The server refuses to fork the chain, in the same words.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hermetic"));
    let mut child = hermetic_env(&mut cmd)
        .args(dirs.global_args())
        .args(["serve", "--http", "127.0.0.1:0", "--audit", audit_arg])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("the server started on a torn audit log");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(!status.success(), "{stderr}");
    assert!(
        stderr.contains("cut short") && stderr.contains("audit repair"),
        "{stderr}"
    );

    let repaired = Command::new(env!("CARGO_BIN_EXE_hermetic"))
        .args(["audit", "repair", audit_arg])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&repaired.stdout);
    assert!(repaired.status.success(), "{out}");
    assert!(
        out.contains(&format!("cut a torn last line ({} bytes", torn.len())),
        "{out}"
    );
    let kept = std::fs::read(dirs.state.path().join("audit.jsonl.torn")).unwrap();
    assert_eq!(&kept[..torn.len()], torn);
    let (code, out) = audit_verify(&audit, &[]);
    assert_eq!((code, out.contains("ok, 1 lines")), (0, true), "{out}");

    let mut server = HttpServer::start_with(dirs.global_args(), &["--audit", audit_arg]);
    echo(&server);
    assert!(server.terminate().success());
    let (code, out) = audit_verify(&audit, &[]);
    assert_eq!((code, out.contains("ok, 2 lines")), (0, true), "{out}");
}
