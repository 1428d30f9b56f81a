//! The `hermetic approval` command line: `scan` and `check`.

use std::io::Write;
use std::process::{Command, Stdio};

fn hermetic() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hermetic"))
}

#[test]
fn approval_scan_writes_one_json_line_per_command() {
    let mut child = hermetic()
        .args(["approval", "scan"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            b"{\"command\": \"ls -la\"}\n{\"command\": \"rm -rf build\"}\n{\"command\": \"reboot\"}\nnot json\n",
        )
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines[..3],
        [
            serde_json::json!({"command": "ls -la", "verdict": "safe", "rules": []}),
            serde_json::json!({"command": "rm -rf build", "verdict": "dangerous", "rules": ["fs.rm_recursive"]}),
            serde_json::json!({"command": "reboot", "verdict": "hardline", "rules": ["system.shutdown"]}),
        ]
    );
    assert!(lines[3]["error"].is_string());
}

#[test]
fn approval_check_prints_the_verdict_with_rules_and_commands() {
    let out = hermetic()
        .args(["approval", "check", "X=rm; sudo $X -rf build"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "dangerous and nobody to ask: denied"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["approved"], false);
    assert_eq!(v["tier"], "dangerous");
    assert_eq!(v["outcome"], "no_approver");
    assert_eq!(v["rules"], serde_json::json!(["fs.rm_recursive"]));
    assert_eq!(
        v["commands"],
        serde_json::json!(["X=rm", "sudo rm -rf build"])
    );
    assert_eq!(v["hits"][0]["command"], "sudo rm -rf build");
    assert!(v["message"].as_str().unwrap().contains("Do not retry"));

    let out = hermetic()
        .args(["approval", "check", "ls"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn approval_check_reads_settings_and_reports_bad_ones() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("approval.toml");
    std::fs::write(&good, "mode = \"off\"\n").unwrap();
    let out = hermetic()
        .args(["approval", "check", "rm -rf build", "--config"])
        .arg(&good)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["outcome"], "allowed_mode_off");

    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "mood = \"off\"\n").unwrap();
    let out = hermetic()
        .args(["approval", "check", "ls", "--config"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("mood"));
}
