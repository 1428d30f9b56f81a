//! Hooks through the `hermetic` binary: a policy's `[hooks.NAME]` works for `hermetic
//! call` and over MCP, the audit record names the hook that changed the call, and a
//! hook that cannot be used stops the host at start, naming it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

use hermetic_test_support::guests::{guest, test_cache};
use hermetic_test_support::mcp_stdio;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

fn hermetic(root: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hermetic"));
    cmd.current_dir(root)
        .env("HERMETIC_CACHE_DIR", test_cache())
        .env("NO_COLOR", "1")
        .args([
            "--policy",
            "policy.toml",
            "--no-bundled",
            "--tools-dir",
            "tools",
        ]);
    cmd
}

/// A directory with `echo` in tools/ and a policy with `hooks` (TOML).
fn root(hooks: &str) -> tempfile::TempDir {
    let root = tempfile::TempDir::new().unwrap();
    std::fs::create_dir_all(root.path().join("ws")).unwrap();
    std::fs::create_dir_all(root.path().join("tools")).unwrap();
    std::fs::copy(guest("echo"), root.path().join("tools/echo.wasm")).unwrap();
    let hooks = hooks.replace("TEST_HOOK", &guest("test_hook").display().to_string());
    std::fs::write(
        root.path().join("policy.toml"),
        format!("[mounts.workspace]\npath = \"ws\"\naccess = \"rw\"\n\n{hooks}"),
    )
    .unwrap();
    root
}

#[test]
fn a_hook_refuses_a_hermetic_call() {
    let root = root("[hooks.gate]\npath = \"TEST_HOOK\"\norder = 1\nconfig = { pre = \"deny\" }\n");
    let out = hermetic(root.path())
        .args(["call", "echo", r#"{"message": "hi"}"#])
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let result: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(
        result["error"], "hook gate refused the call: test_hook denies echo",
        "{result}"
    );
    assert!(!out.status.success());
}

#[test]
fn over_mcp_secret_scan_redacts_and_the_audit_names_it() {
    let root = root(
        "[hooks.secret_scan]\norder = 1\nsecret_scan = true\nconfig = { mode = \"redact\" }\n",
    );
    let result = mcp_stdio::call(
        hermetic(root.path()).args(["serve", "--stdio", "--audit", "audit.jsonl"]),
        "echo",
        json!({"message": "key AKIAIOSFODNN7EXAMPLE"}),
    );
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("key [REDACTED:aws_access_key]"), "{result}");
    assert!(!text.contains("AKIA"), "{result}");
    let audit = std::fs::read_to_string(root.path().join("audit.jsonl")).unwrap();
    let call: Value = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["kind"] == "call")
        .unwrap_or_else(|| panic!("{audit}"));
    assert_eq!(
        call["hooks"],
        json!([{"hook": "secret_scan", "stage": "pre", "did": "rewrote"}]),
        "{call}"
    );
}

#[test]
fn a_hook_that_cannot_be_used_stops_the_start() {
    for (hooks, says) in [
        (
            "[hooks.secret_scan]\norder = 1\n",
            "hooks.secret_scan: it declares secret_scan",
        ),
        (
            "[hooks.gone]\npath = \"nowhere.wasm\"\norder = 1\n",
            "hooks.gone",
        ),
        ("[hooks.gate]\npath = \"TEST_HOOK\"\n", "order = N"),
        (
            "[hooks.gate]\npath = \"TEST_HOOK\"\norder = 1\nsource = \"oci://x/y:1\"\n",
            "path or source, not both",
        ),
        ("[hooks.mystery]\norder = 1\n", "bundled hooks: secret_scan"),
        (
            "[hooks.tagged]\nsource = \"oci://127.0.0.1:1/hooks/x:1\"\norder = 1\n",
            "pin a hook by digest",
        ),
    ] {
        let root = root(hooks);
        let out = hermetic(root.path())
            .args(["call", "echo", r#"{"message": "hi"}"#])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{hooks}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.contains(says), "{hooks}: {stderr}");
        assert!(out.stdout.is_empty(), "nothing ran: {hooks}");
    }
}
