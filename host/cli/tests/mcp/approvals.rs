//! The terminal tool over MCP: approvals asked of the Python SDK by elicitation (legacy)
//! or `input_required` (2026-07-28) — once runs, decline refuses, cancel is no refusal,
//! a hardline command is never offered — and an approval nobody answers in time.
use super::harness::{DENIED_BY_THE_USER, HttpServer, bundled_args, terminal_elicit};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use tempfile::TempDir;

/// The Python SDK's approvals in one protocol era (`legacy`: elicitation requests;
/// `auto`: 2026-07-28, `input_required` results answered by a retry): once runs the
/// command, an accept without an answer (Hermes's shape) is once too, decline refuses,
/// cancel is no refusal, and a hardline command is never offered.
fn python_sdk_approvals(mode: &str, protocol_is_modern: bool) {
    let workspace = TempDir::new().unwrap();
    let state = TempDir::new().unwrap();
    let audit = state.path().join("audit.jsonl");
    let audit_arg = audit.display().to_string();
    let server = HttpServer::start_with(bundled_args(workspace.path()), &["--audit", &audit_arg]);
    let ran = |name: &str| workspace.path().join(name).exists();

    let report = terminal_elicit(
        &server,
        mode,
        "rm -rf scratch && touch approved && echo approved-run",
        "once",
        &[],
    );
    assert_eq!(
        report["protocol"].as_str() == Some("2026-07-28"),
        protocol_is_modern,
        "{report:#}"
    );
    let seen = report["elicitations"].as_array().unwrap();
    assert_eq!(seen.len(), 1, "{report:#}");
    let message = seen[0]["message"].as_str().unwrap();
    assert!(message.contains("rm -rf scratch"), "{message}");
    let result = &report["calls"]["terminal"];
    assert_eq!(result["is_error"], false, "{report:#}");
    assert_eq!(result["text"]["exit_code"], 0, "{report:#}");
    assert_eq!(result["text"]["output"], "approved-run", "{report:#}");
    assert!(ran("approved"));

    let report = terminal_elicit(&server, mode, "rm -rf scratch && touch empty", "empty", &[]);
    assert_eq!(report["elicitations"].as_array().unwrap().len(), 1);
    assert_eq!(
        report["calls"]["terminal"]["text"]["exit_code"], 0,
        "{report:#}"
    );
    assert!(
        ran("empty"),
        "an accept without an answer is the form's default, once"
    );

    let report = terminal_elicit(
        &server,
        mode,
        "rm -rf scratch && touch declined",
        "decline",
        &[],
    );
    assert_eq!(report["elicitations"].as_array().unwrap().len(), 1);
    let result = &report["calls"]["terminal"]["text"];
    assert_eq!(result["status"], "blocked", "{report:#}");
    assert_eq!(result["exit_code"], -1, "{report:#}");
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .contains(DENIED_BY_THE_USER),
        "{report:#}"
    );
    assert!(!ran("declined"));

    let report = terminal_elicit(
        &server,
        mode,
        "rm -rf scratch && touch cancelled",
        "cancel",
        &[],
    );
    let result = &report["calls"]["terminal"]["text"];
    assert_eq!(result["status"], "pending_approval", "{report:#}");
    assert!(
        !result["error"].as_str().unwrap().contains("DENIED"),
        "a dismissed question is no refusal: {report:#}"
    );
    assert!(!ran("cancelled"));

    // A hardline command is never even offered for approval.
    let report = terminal_elicit(&server, mode, "rm -rf / && touch hardline", "once", &[]);
    assert_eq!(report["elicitations"], json!([]), "{report:#}");
    assert_eq!(report["calls"]["terminal"]["text"]["status"], "blocked");
    assert!(!ran("hardline"));

    // The audit log holds each question and answer next to the calls, and verifies.
    let records: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let count = |kind: &str| records.iter().filter(|r| r["kind"] == kind).count();
    // One record per question and one per answer, naming who may answer and who did
    // — also in 2026-07-28, which asks in a first leg and reads the answer in the
    // retry (two call records).
    let legs = if protocol_is_modern { 2 } else { 1 };
    assert_eq!(count("approval_request"), 4, "{records:#?}");
    assert_eq!(count("approval_answer"), 4, "{records:#?}");
    assert_eq!(count("call"), 4 * legs + 1, "{records:#?}");
    for record in records.iter().filter(|r| r["kind"] == "approval_request") {
        assert_eq!(
            record["detail"]["approver"], "client_or_console",
            "{record}"
        );
    }
    for record in records.iter().filter(|r| r["kind"] == "approval_answer") {
        assert_eq!(record["detail"]["answered_by"], "client", "{record}");
        assert_ne!(record["outcome"], "input_required", "{record}");
    }
    let hardline = records.iter().find(|r| r["kind"] == "decision").unwrap();
    assert_eq!(hardline["outcome"], "blocked_hardline", "{hardline}");
    assert_eq!(hardline["detail"]["command"], "rm -rf / && touch hardline");
    let verify = Command::new(env!("CARGO_BIN_EXE_hermetic"))
        .args(["audit", "verify", &audit_arg])
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stderr)
    );
}

#[test]
fn python_sdk_legacy_approves_by_elicitation_declines_and_never_offers_a_hardline_command() {
    python_sdk_approvals("legacy", false);
}

#[test]
fn python_sdk_2026_07_28_approves_by_input_required_declines_and_never_offers_a_hardline_command() {
    python_sdk_approvals("auto", true);
}

/// A server whose approvals time out after one second (its policy file in `state`).
fn quick_timeout_server(workspace: &Path, state: &Path) -> HttpServer {
    let policy = state.join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            "[mounts.workspace]\npath = \"{ws}\"\naccess = \"rw\"\n\n[tools.terminal]\nterminal = true\n\n\
             [terminal]\ncwd = \"{ws}\"\n\n[terminal.approval]\nasync_timeout_secs = 1\n",
            ws = workspace.display()
        ),
    )
    .unwrap();
    let mut args = bundled_args(workspace);
    args.extend(["--policy".to_owned(), policy.display().to_string()]);
    HttpServer::start_with(args, &[])
}

/// Nobody answers in time: the call still gets its result, `pending_approval`, and
/// the command does not run — a late "once" included.
fn unanswered(mode: &str) {
    let workspace = TempDir::new().unwrap();
    let state = TempDir::new().unwrap();
    let server = quick_timeout_server(workspace.path(), state.path());
    let report = terminal_elicit(
        &server,
        mode,
        "rm -rf scratch && touch late",
        "once",
        &["--elicit-delay", "3"],
    );
    assert_eq!(
        report["elicitations"].as_array().unwrap().len(),
        1,
        "{report:#}"
    );
    let result = &report["calls"]["terminal"]["text"];
    assert_eq!(result["status"], "pending_approval", "{report:#}");
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .contains("Nobody answered"),
        "{report:#}"
    );
    assert!(!workspace.path().join("late").exists());
}

#[test]
fn python_sdk_legacy_an_unanswered_approval_ends_the_call_with_pending_approval() {
    unanswered("legacy");
}

#[test]
fn python_sdk_2026_07_28_an_approval_answered_too_late_ends_the_call_with_pending_approval() {
    unanswered("auto");
}
