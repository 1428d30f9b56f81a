//! Tools added to and removed from the tools directory reach a connected client (a
//! list-changed notification) over stdio and HTTP in both protocol eras.
use super::harness::{Dirs, HttpServer, Running, Target, client};
use serde_json::json;

/// Runs `list_changed`: a tool is added after READY and another removed after CHANGED;
/// the client sees both without reconnecting.
fn list_changed(mode: &str, target: &Target<'_>, dirs: &Dirs) {
    let mut running = Running::spawn(client("list_changed", mode, target));
    running.wait_line("READY");
    dirs.add("progress");
    let changed = running.wait_line("CHANGED ");
    assert_eq!(changed, r#"CHANGED ["echo", "fail", "progress"]"#);
    dirs.remove("fail");
    let report = running.report();
    assert_eq!(
        report["lists"],
        json!([
            ["echo", "fail"],
            ["echo", "fail", "progress"],
            ["echo", "progress"]
        ]),
        "{report:#}"
    );
}

#[test]
fn stdio_legacy_client_is_told_when_tools_are_added_and_removed() {
    let dirs = Dirs::new(&["echo", "fail"]);
    list_changed("legacy", &Target::Stdio(&dirs), &dirs);
}

#[test]
fn stdio_modern_client_is_told_when_tools_are_added_and_removed() {
    let dirs = Dirs::new(&["echo", "fail"]);
    list_changed("auto", &Target::Stdio(&dirs), &dirs);
}

#[test]
fn http_legacy_client_is_told_when_tools_are_added_and_removed() {
    let dirs = Dirs::new(&["echo", "fail"]);
    let server = HttpServer::start(&dirs);
    list_changed("legacy", &Target::Http(&server), &dirs);
}

#[test]
fn http_modern_client_is_told_when_tools_are_added_and_removed() {
    let dirs = Dirs::new(&["echo", "fail"]);
    let server = HttpServer::start(&dirs);
    list_changed("auto", &Target::Http(&server), &dirs);
}
