//! The terminal over MCP: its output reaches the client as progress while the command
//! runs, and a background shell cannot be fed a refused command in pieces.
use super::harness::{
    HttpServer, Running, Target, bundled_args, client_script, client_with, hermetic_env, mcp_python,
};
use serde_json::json;
use std::process::{Command, Stdio};
use tempfile::TempDir;

#[test]
fn terminal_output_reaches_the_client_as_progress_while_the_command_runs() {
    let workspace = TempDir::new().unwrap();
    let server = HttpServer::start_with(bundled_args(workspace.path()), &[]);
    // The command waits for a file the test writes after the client has seen progress,
    // so the first progress notification must have come from output, mid-command.
    let call = format!(
        "terminal={}",
        json!({"command": "echo first; while [ ! -e go ]; do sleep 0.05; done; echo second"})
    );
    let mut running = Running::spawn(client_with(
        "long_call",
        "legacy",
        &Target::Http(&server),
        &["--call", &call],
    ));
    running.wait_line("STARTED");
    std::fs::write(workspace.path().join("go"), "").unwrap();
    let report = running.report();
    let output = report["result"]["text"]["output"].as_str().unwrap();
    assert_eq!(output, "first\nsecond", "{report:#}");
}

/// Issue 32, as it was reproduced over MCP stdio with the embedded defaults: `rm -rf
/// victim` is refused, but it was sent to a background bash in pieces — `write "r"`,
/// `write "m -rf victim"`, `submit " "` — each judged alone, the whitespace not at all.
/// Now the pieces are held until the line is complete, and the line is refused.
#[test]
fn stdio_a_background_shell_cannot_be_fed_a_refused_command_in_pieces() {
    let workspace = TempDir::new().unwrap();
    let victim = workspace.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(victim.join("precious"), "keep me").unwrap();
    let process = |action: &str, data: &str| {
        format!(
            "process={}",
            json!({"action": action, "session_id": "$ID", "data": data})
        )
    };
    let calls = [
        format!("terminal={}", json!({"command": "rm -rf victim"})),
        format!(
            "terminal={}",
            json!({"command": "bash", "background": true})
        ),
        process("write", "r"),
        process("write", "m -rf victim"),
        process("submit", " "),
        // The refused line is discarded: this one runs alone, and once the shell has
        // exited after it, anything delivered before it has run too.
        process("submit", "touch after; exit"),
        format!(
            "process={}",
            json!({"action": "wait", "session_id": "$ID", "timeout": 20})
        ),
    ];
    let mut cmd = Command::new(mcp_python());
    cmd.arg(client_script()).args(["sequence", "legacy"]);
    for c in &calls {
        cmd.args(["--call", c]);
    }
    cmd.arg("--stdio")
        .arg(env!("CARGO_BIN_EXE_hermetic"))
        .args(bundled_args(workspace.path()))
        .args(["serve", "--stdio"]);
    hermetic_env(&mut cmd)
        .current_dir(workspace.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let report = Running::spawn(cmd).report();
    let results = report["calls"].as_array().unwrap();
    let text = |i: usize| &results[i]["text"];
    assert_eq!(text(0)["status"], "pending_approval", "{report:#}");
    assert!(
        text(0)["error"]
            .as_str()
            .unwrap()
            .contains("Nobody could be asked"),
        "{report:#}"
    );
    assert_eq!(
        text(1)["output"],
        "Background process started",
        "{report:#}"
    );
    assert_eq!(text(2)["status"], "held", "{report:#}");
    assert_eq!(text(3)["status"], "held", "{report:#}");
    assert_eq!(text(4)["status"], "pending_approval", "{report:#}");
    assert_eq!(text(4)["command"], "rm -rf victim \n", "{report:#}");
    assert_eq!(text(5)["status"], "ok", "{report:#}");
    assert_eq!(text(6)["status"], "exited", "{report:#}");
    assert!(
        workspace.path().join("after").exists(),
        "the shell ran the line after: {report:#}"
    );
    assert!(victim.join("precious").exists(), "the victim survives");
}
