//! Hermes agent 0.19's own MCP client (tests/mcp/hermes_client.py) approves once,
//! declines, and is never offered a hardline command.
use super::harness::{DENIED_BY_THE_USER, HANG_GUARD, HttpServer, Running, bundled_args};
use hermetic_test_support::lines::Lines;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use tempfile::TempDir;

/// The venv with `hermes-agent[mcp]==0.19.0` (.ci/run makes it): `HERMES_VENV`, or
/// `target/venv-hermes` in the workspace.
fn hermes_python() -> PathBuf {
    let venv = std::env::var_os("HERMES_VENV").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/venv-hermes"),
        PathBuf::from,
    );
    let python = venv.join("bin/python");
    let probe = Command::new(&python)
        .args(["-c", "import tools.mcp_tool, mcp"])
        .output();
    assert!(
        probe.as_ref().is_ok_and(|p| p.status.success()),
        "the Hermes agent venv is missing or broken at {}: python3 -m venv {0} && \
         {0}/bin/pip install 'hermes-agent[mcp]==0.19.0' (.ci/run does)\n{}",
        venv.display(),
        probe.map_or_else(
            |e| e.to_string(),
            |p| String::from_utf8_lossy(&p.stderr).into_owned()
        )
    );
    python
}

#[test]
fn hermes_agent_approves_once_declines_and_never_offers_a_hardline_command() {
    use std::io::Write;
    let python = hermes_python();
    let workspace = TempDir::new().unwrap();
    let server = HttpServer::start_with(bundled_args(workspace.path()), &[]);
    let call = |command: &str| format!("terminal={}", json!({ "command": command }));
    let mut cmd = Command::new(python);
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/hermes_client.py"))
        .args(["--url", &server.url])
        .args([
            "--token",
            server.token.as_deref().expect("serve printed no token"),
        ])
        .args([
            "--call",
            &call("rm -rf scratch && touch approved && echo approved-run"),
        ])
        .args(["--call", &call("rm -rf scratch && touch declined")])
        .args(["--call", &call("rm -rf / && touch hardline")])
        .current_dir(workspace.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    // What the user types at Hermes's two prompts: [o]nce, then [d]eny. The hardline
    // command must not prompt: a third prompt would read end-of-file.
    child.stdin.take().unwrap().write_all(b"o\nd\n").unwrap();
    let stderr = Lines::collect(child.stderr.take().unwrap(), HANG_GUARD);
    let mut running = Running {
        stdout: Lines::collect(child.stdout.take().unwrap(), HANG_GUARD),
        stderr,
        child,
    };
    let report = running.report();
    let calls = report["calls"].as_array().unwrap();
    let out = running.stdout.text();
    // Hermes told its user what it did with each answer.
    assert!(out.contains("Allowed once"), "{out}");
    assert!(out.contains("Denied"), "{out}");

    // "Allowed once" in Hermes: the command ran.
    assert_eq!(calls[0]["prompts"], 1, "{report:#}");
    let result = &calls[0]["result"]["result"];
    assert_eq!(result["exit_code"], 0, "{report:#}");
    assert_eq!(result["output"], "approved-run", "{report:#}");
    assert!(workspace.path().join("approved").exists());

    // "Denied" in Hermes: a refusal by the user, and nothing ran.
    assert_eq!(calls[1]["prompts"], 1, "{report:#}");
    let result = &calls[1]["result"]["error"];
    assert_eq!(result["status"], "blocked", "{report:#}");
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .contains(DENIED_BY_THE_USER),
        "{report:#}"
    );
    assert!(!workspace.path().join("declined").exists());

    // Hardline: blocked without a prompt.
    assert_eq!(calls[2]["prompts"], 0, "{report:#}");
    assert_eq!(
        calls[2]["result"]["error"]["status"], "blocked",
        "{report:#}"
    );
    assert!(!workspace.path().join("hardline").exists());
    assert_eq!(report["prompts"], 2, "{report:#}");
}
