//! A call ends when its client cancels it or goes away, its guest interrupted; a
//! server told to stop (SIGTERM) lets the call in flight finish and exits 0.
use super::harness::{
    Dirs, GLOBEX_TOKEN, HttpServer, Running, TEST_TOOLS, Target, client_with, policy_args, run,
    tenants_policy,
};
use hermetic_test_support::lines::Lines;
use serde_json::{Value, json};

/// The message the handler logs when a call ends because the client cancelled it.
const CANCELLED_LOG: &str = "call cancelled by the client";
/// The error a cancelled call ends with.
const CANCELLED_ERROR: &str =
    "[TOOL_ERROR] cancelled: the caller cancelled the call before it finished";

/// The `cancel` scenario's report: the call was cancelled and the server still answers.
fn check_cancel_report(report: &Value) {
    assert_eq!(
        report,
        &json!({
            "cancelled": true,
            "after": {"is_error": false, "text": {"echo": "still here", "tenant": "default"}}
        })
    );
}

/// The server logged that spin_long (60 s deadline, never returns) ended with the
/// cancelled error — so the guest was interrupted, not left running.
fn check_cancelled_in(log: &Lines) {
    let line = log
        .wait_for(|l| l.contains(CANCELLED_LOG))
        .unwrap_or_else(|| panic!("no cancellation logged:\n{}", log.text()));
    assert!(line.contains(CANCELLED_ERROR), "{line}");
    assert!(line.contains("spin_long"), "{line}");
}

#[test]
fn stdio_cancellation_interrupts_the_running_guest() {
    let dirs = Dirs::new(TEST_TOOLS);
    let (report, client) = run("cancel", "auto", &Target::Stdio(&dirs));
    check_cancel_report(&report);
    check_cancelled_in(&client.stderr);
}

// Failed in 2 of the last 3 full suite runs (never alone): the Python SDK's legacy SSE
// client may exit before its notifications/cancelled is posted, and a legacy session
// whose client went away does not cancel its calls — spin_long then runs to its deadline
// and nothing is logged. Both are open defects (see the closing note of 2026-12-08);
// run it with `--ignored` until the server cancels a gone legacy client's calls.
#[test]
#[ignore = "legacy SSE: a cancel the client never posts is lost, and a gone client's calls run on"]
fn http_legacy_cancellation_interrupts_the_running_guest() {
    let dirs = Dirs::new(TEST_TOOLS);
    let server = HttpServer::start(&dirs);
    let (report, _) = run("cancel", "legacy", &Target::Http(&server));
    check_cancel_report(&report);
    check_cancelled_in(&server.log);
}

#[test]
fn http_modern_cancellation_interrupts_the_running_guest() {
    let dirs = Dirs::new(TEST_TOOLS);
    let server = HttpServer::start(&dirs);
    let (report, _) = run("cancel", "auto", &Target::Http(&server));
    check_cancel_report(&report);
    check_cancelled_in(&server.log);
}

#[test]
fn stdio_client_going_away_interrupts_the_running_guest_and_the_server_exits() {
    let dirs = Dirs::new(TEST_TOOLS);
    let (report, client) = run("abandon", "auto", &Target::Stdio(&dirs));
    assert_eq!(report, json!({"started": true}));
    check_cancelled_in(&client.stderr);
    // The server shares the client's stderr: the stream ends only when the server,
    // too, has exited.
    client.stderr.wait_closed();
}

#[test]
fn http_modern_client_going_away_interrupts_the_running_guest() {
    let dirs = Dirs::new(TEST_TOOLS);
    let server = HttpServer::start(&dirs);
    let (report, _) = run("abandon", "auto", &Target::Http(&server));
    assert_eq!(report, json!({"started": true}));
    check_cancelled_in(&server.log);
}

/// SIGTERM while spin_long runs: the call finishes with its own result, the server
/// exits 0.
fn shutdown_lets_the_call_finish(mode: &str) {
    let dirs = Dirs::new(TEST_TOOLS);
    // spin_long runs until its deadline: 3 s here, well inside the shutdown grace.
    let policy = tenants_policy(&dirs, "[tools.spin_long.limits]\nmax_timeout_ms = 3000\n");
    let mut server =
        HttpServer::start_with(policy_args(&dirs, &policy), &["--shutdown-grace", "60"]);
    let mut running = Running::spawn(client_with(
        "long_call",
        mode,
        &Target::Http(&server),
        &["--token", GLOBEX_TOKEN, "--call", "spin_long"],
    ));
    running.wait_line("STARTED");
    let status = server.terminate();
    let report = running.report();
    // The call ran to its own end (its time limit), not to a cancellation.
    assert_eq!(report["result"]["is_error"], true, "{report:#}");
    assert_eq!(report["result"]["text"]["limit"], "time", "{report:#}");
    assert!(status.success(), "{status}\n{}", server.log.text());
    assert!(
        !server.log.text().contains(CANCELLED_LOG),
        "{}",
        server.log.text()
    );
}

#[test]
fn http_modern_shutdown_lets_the_call_in_flight_finish_and_exits_0() {
    shutdown_lets_the_call_finish("auto");
}

#[test]
fn http_legacy_shutdown_lets_the_call_in_flight_finish_and_exits_0() {
    shutdown_lets_the_call_finish("legacy");
}
