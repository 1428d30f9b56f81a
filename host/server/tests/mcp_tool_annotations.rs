//! tools/list over real HTTP with the real bundled tools: every tool carries a
//! `title` and the `annotations` its declaration implies (read-only, destructive,
//! open-world), so clients can tell `read_file` from `terminal` before calling.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

use hermetic::policy::network::Destination;
use hermetic::{OperatorPolicy, Registry, RegistryOptions};
use hermetic_server::{McpServer, ServeOptions};
use hermetic_test_support::in_process::{Serving, serve_http};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// Longest any wait may take (a hang guard, not a timing assertion).
const HANG_GUARD: Duration = Duration::from_secs(60);

/// tools/list from a sessionless (2026-07-28) request: name → tool.
fn tools_list(serving: &Serving) -> serde_json::Map<String, Value> {
    serving
        .tools_list()
        .into_iter()
        .map(|t| (t["name"].as_str().unwrap().to_owned(), t))
        .collect()
}

#[test]
fn bundled_tools_are_listed_with_titles_and_the_annotations_their_declarations_imply() {
    let workspace = tempfile::TempDir::new().unwrap();
    let mut policy = OperatorPolicy::with_workspace(workspace.path().to_path_buf());
    // web_extract is listed only with a destination granted.
    policy
        .defaults
        .network
        .push(Destination::parse("https://docs.rs").unwrap());
    let registry = Registry::new(RegistryOptions::new(policy)).unwrap();
    registry.add_bundled();
    let serving = serve_http(
        McpServer::new(Arc::new(registry), ServeOptions::default()),
        HANG_GUARD,
    );
    let tools = tools_list(&serving);
    // (tool, title, readOnly, destructive, openWorld, what its declaration says)
    let rows = [
        (
            "read_file",
            "Read File",
            true,
            false,
            false,
            "reads the workspace",
        ),
        (
            "search_files",
            "Search Files",
            true,
            false,
            false,
            "reads the workspace",
        ),
        (
            "write_file",
            "Write File",
            false,
            true,
            false,
            "writes the workspace",
        ),
        ("patch", "Patch", false, true, false, "writes the workspace"),
        (
            "web_extract",
            "Web Extract",
            false,
            false,
            true,
            "network only",
        ),
        ("terminal", "Terminal", false, true, true, "the terminal"),
        ("process", "Process", false, true, true, "the terminal"),
        ("todo", "Todo", false, true, false, "its key-value store"),
        (
            "memory",
            "Memory",
            false,
            true,
            false,
            "its key-value store",
        ),
    ];
    for (name, title, read_only, destructive, open_world, why) in rows {
        let tool = tools
            .get(name)
            .unwrap_or_else(|| panic!("{name} is not listed: {tools:#?}"));
        assert_eq!(tool["title"], title, "{name}");
        assert_eq!(
            tool["annotations"],
            json!({
                "title": title,
                "readOnlyHint": read_only,
                "destructiveHint": destructive,
                "openWorldHint": open_world,
            }),
            "{name}: {why}"
        );
    }
    // Every listed tool has them, not just these; and these are all the bundled tools
    // that are available here (weather lacks its key).
    for (name, tool) in &tools {
        assert!(tool["annotations"].is_object(), "{name}: {tool}");
    }
    let mut listed: Vec<&str> = tools.keys().map(String::as_str).collect();
    let mut expected: Vec<&str> = rows.iter().map(|row| row.0).collect();
    listed.sort_unstable();
    expected.sort_unstable();
    assert_eq!(listed, expected);
    assert!(
        serving
            .server
            .registry()
            .names()
            .contains(&"weather".to_owned())
    );
    serving.stop();
}
