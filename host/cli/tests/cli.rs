//! The `hermetic` binary end to end: listings, calls, exit codes, inspect, help.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

use hermetic_test_support::guests::{guest, test_cache};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn hermetic(workspace: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hermetic"));
    cmd.current_dir(workspace)
        .env_remove("WEATHER_API_KEY")
        .env("HERMETIC_CACHE_DIR", test_cache());
    cmd
}

fn run(cmd: &mut Command) -> (Output, String) {
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    (out, stdout)
}

fn json(stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

#[test]
fn tools_json_lists_every_bundled_tool_with_availability_and_reason() {
    let ws = tempfile::TempDir::new().unwrap();
    let (out, stdout) = run(hermetic(ws.path()).args(["tools", "--json"]));
    assert!(out.status.success());
    let tools = json(&stdout);
    let weather = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "weather")
        .unwrap();
    assert_eq!(weather["toolset"], "weather");
    assert_eq!(weather["available"], false);
    assert!(
        weather["reason"]
            .as_str()
            .unwrap()
            .contains("WEATHER_API_KEY")
    );
    let read = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "read_file")
        .unwrap();
    assert_eq!(read["available"], true);
    assert_eq!(read["reason"], Value::Null);
}

#[test]
fn weather_becomes_available_once_its_key_is_granted_and_set() {
    let ws = tempfile::TempDir::new().unwrap();
    let weather = |cmd: &mut Command| {
        let (_, stdout) = run(cmd.args(["tools", "--json"]));
        json(&stdout)
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "weather")
            .unwrap()
            .clone()
    };
    let granted_unset = weather(hermetic(ws.path()).args([
        "--allow-env",
        "WEATHER_API_KEY",
        "--allow-net",
        "https://api.weatherapi.com",
    ]));
    assert_eq!(granted_unset["available"], false);
    assert_eq!(
        granted_unset["reason"],
        "check() returned false: WEATHER_API_KEY granted but not set in the host environment"
    );
    let set_not_granted = weather(hermetic(ws.path()).env("WEATHER_API_KEY", "k"));
    assert_eq!(set_not_granted["available"], false);
    let no_network = weather(
        hermetic(ws.path())
            .env("WEATHER_API_KEY", "k")
            .args(["--allow-env", "WEATHER_API_KEY"]),
    );
    assert_eq!(
        no_network["reason"],
        "needs network access, which the operator does not grant"
    );
    let granted = weather(hermetic(ws.path()).env("WEATHER_API_KEY", "k").args([
        "--allow-env",
        "WEATHER_API_KEY",
        "--allow-net",
        "https://api.weatherapi.com",
    ]));
    assert_eq!(granted["available"], true, "{granted}");
    let (out, _) = run(hermetic(ws.path()).args(["--allow-net", "ftp://x", "tools"]));
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the scheme must be http or https"),
        "{stderr}"
    );
}

#[test]
fn the_human_listing_says_why_a_tool_is_unavailable() {
    let ws = tempfile::TempDir::new().unwrap();
    let (out, stdout) = run(hermetic(ws.path()).arg("tools"));
    assert!(out.status.success());
    let line = stdout.lines().find(|l| l.starts_with("weather")).unwrap();
    assert!(
        line.contains("unavailable: requires env WEATHER_API_KEY"),
        "{line}"
    );
}

#[test]
fn call_prints_the_result_and_uses_the_current_directory_as_workspace() {
    let ws = tempfile::TempDir::new().unwrap();
    std::fs::write(ws.path().join("hello.txt"), "hi there\n").unwrap();
    let (out, stdout) =
        run(hermetic(ws.path()).args(["call", "read_file", r#"{"path": "hello.txt"}"#]));
    assert!(out.status.success(), "{stdout}");
    assert_eq!(json(&stdout)["content"], "1|hi there");

    let other = tempfile::TempDir::new().unwrap();
    std::fs::write(other.path().join("there.txt"), "elsewhere\n").unwrap();
    let (out, stdout) = run(hermetic(ws.path())
        .args([
            "call",
            "read_file",
            r#"{"path": "there.txt"}"#,
            "--workspace",
        ])
        .arg(other.path()));
    assert!(out.status.success(), "{stdout}");
    assert_eq!(json(&stdout)["content"], "1|elsewhere");
}

#[test]
fn call_reads_arguments_from_stdin_with_a_dash() {
    use std::io::Write;
    let ws = tempfile::TempDir::new().unwrap();
    std::fs::write(ws.path().join("a.txt"), "from stdin\n").unwrap();
    let mut child = hermetic(ws.path())
        .args(["call", "read_file", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"path": "a.txt"}"#)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        json(&String::from_utf8(out.stdout).unwrap())["content"],
        "1|from stdin"
    );
}

#[test]
fn errors_exit_with_code_1_and_print_json() {
    let ws = tempfile::TempDir::new().unwrap();
    let (out, stdout) = run(hermetic(ws.path()).args(["call", "no_such_tool", "{}"]));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        json(&stdout),
        serde_json::json!({"error": "Unknown tool: no_such_tool"})
    );
}

#[test]
fn tools_dir_adds_components_and_reports_broken_ones() {
    let ws = tempfile::TempDir::new().unwrap();
    let dir = tempfile::TempDir::new().unwrap();
    std::fs::copy(guest("echo"), dir.path().join("echo.wasm")).unwrap();
    std::fs::write(dir.path().join("broken.wasm"), b"nope").unwrap();
    let (out, stdout) = run(hermetic(ws.path())
        .arg("--tools-dir")
        .arg(dir.path())
        .args(["call", "echo", r#"{"message": "hey", "times": "2"}"#]));
    assert!(out.status.success(), "{stdout}");
    assert_eq!(json(&stdout)["echo"], "heyhey");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("broken.wasm") && stderr.contains("not a WebAssembly component"),
        "{stderr}"
    );
}

#[test]
fn a_missing_tools_dir_is_a_setup_error() {
    let ws = tempfile::TempDir::new().unwrap();
    let (out, _) = run(hermetic(ws.path()).args(["--tools-dir", "/nonexistent/dir", "tools"]));
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("/nonexistent/dir"), "{stderr}");
    // The OS error is the error's source and also in its message: said once.
    assert_eq!(
        stderr.matches("No such file or directory").count(),
        1,
        "{stderr}"
    );
}

/// Issue 39: the host's own files must lie outside every mount. A policy that is fine
/// as written is refused when `--workspace` moves the mount over it, and an audit log
/// inside the workspace is refused too: exit 3, naming the file and the mount.
#[test]
fn host_files_that_a_workspace_covers_stop_the_start() {
    let root = tempfile::TempDir::new().unwrap();
    std::fs::create_dir_all(root.path().join("ws")).unwrap();
    std::fs::write(
        root.path().join("policy.toml"),
        "[mounts.workspace]\npath = \"ws\"\naccess = \"rw\"\n",
    )
    .unwrap();
    let (out, _) = run(hermetic(root.path()).args(["--policy", "policy.toml", "tools"]));
    assert_eq!(out.status.code(), Some(0));
    let refused = |args: &[&str], what: &str| {
        let (out, _) = run(hermetic(root.path())
            .args(args)
            .stdin(std::process::Stdio::null()));
        assert_eq!(out.status.code(), Some(3), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(
            stderr.contains(&format!("{what} "))
                && stderr.contains("is inside mount `workspace`")
                && stderr.contains("move it outside every mount and terminal workspace"),
            "{stderr}"
        );
    };
    refused(
        &["--policy", "policy.toml", "--workspace", ".", "tools"],
        "the policy file",
    );
    refused(
        &[
            "--policy",
            "policy.toml",
            "serve",
            "--stdio",
            "--audit",
            "ws/audit.jsonl",
        ],
        "the audit log",
    );
    // Without a policy the workspace is where hermetic starts.
    refused(
        &["serve", "--stdio", "--audit", "audit.jsonl"],
        "the audit log",
    );
}

#[test]
fn a_missing_policy_file_names_the_file_and_the_os_error_once() {
    let ws = tempfile::TempDir::new().unwrap();
    let (out, _) = run(hermetic(ws.path()).args(["--policy", "/nonexistent/p.toml", "tools"]));
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("cannot read /nonexistent/p.toml: No such file or directory"),
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("No such file or directory").count(),
        1,
        "{stderr}"
    );
}

#[test]
fn definitions_filter_by_toolsets_and_disable() {
    let ws = tempfile::TempDir::new().unwrap();
    let names = |args: &[&str]| -> Vec<String> {
        let (out, stdout) = run(hermetic(ws.path()).arg("definitions").args(args));
        assert!(out.status.success());
        json(&stdout)
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["function"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    // Without a policy file the bundled terminal tools are available too, and todo
    // and memory (the embedded defaults grant the key-value store).
    assert_eq!(
        names(&[]),
        [
            "memory",
            "patch",
            "process",
            "read_file",
            "search_files",
            "terminal",
            "todo",
            "write_file"
        ]
    );
    assert_eq!(
        names(&["--toolsets", "file_tools", "--disable", "file"]),
        Vec::<String>::new()
    );
    assert_eq!(
        names(&[
            "--toolsets",
            "all",
            "--disable",
            "weather",
            "--disable",
            "terminal",
            "--disable",
            "todo",
            "--disable",
            "memory"
        ]),
        ["patch", "read_file", "search_files", "write_file"]
    );
}

#[test]
fn a_typo_in_a_tenants_toolsets_is_an_error_naming_the_known_ones() {
    let root = tempfile::TempDir::new().unwrap();
    std::fs::create_dir_all(root.path().join("ws")).unwrap();
    let policy = |toolsets: &str| {
        std::fs::write(
            root.path().join("policy.toml"),
            format!(
                "[mounts.workspace]\npath = \"ws\"\naccess = \"rw\"\n\n[tenants.acme]\ntoolsets = {toolsets}\n"
            ),
        )
        .unwrap();
        let out = hermetic(root.path())
            .args(["--policy", "policy.toml", "tools", "--json"])
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stderr) = policy(r#"["file", "fiel"]"#);
    assert_ne!(code, Some(0), "a typo must not load: {stderr}");
    assert!(stderr.contains("\"fiel\""), "{stderr}");
    assert!(stderr.contains("acme"), "{stderr}");
    assert!(
        stderr.contains("known: ") && stderr.contains("file"),
        "{stderr}"
    );
    // Known names, a legacy name and `all` load.
    let (code, stderr) = policy(r#"["file", "file_tools", "terminal", "all"]"#);
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn an_unknown_toolset_on_the_command_line_is_warned_about_once() {
    let ws = tempfile::TempDir::new().unwrap();
    let out = hermetic(ws.path())
        .args(["definitions", "--toolsets", "fiel,file"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("Unknown toolset: fiel").count(),
        1,
        "{stderr}"
    );
}

#[test]
fn toolsets_json_resolves_tools() {
    let ws = tempfile::TempDir::new().unwrap();
    let (out, stdout) = run(hermetic(ws.path()).args(["toolsets", "--json"]));
    assert!(out.status.success());
    let sets = json(&stdout);
    let file = sets
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "file")
        .unwrap();
    assert_eq!(
        file["tools"],
        serde_json::json!(["patch", "read_file", "search_files", "write_file"])
    );
}

#[test]
fn inspect_shows_declaration_and_grants_for_a_name_and_for_a_file() {
    let ws = tempfile::TempDir::new().unwrap();
    let (out, stdout) = run(hermetic(ws.path()).args(["inspect", "write_file"]));
    assert!(out.status.success());
    let report = json(&stdout);
    assert_eq!(
        report["declaration"]["capabilities"]["fs"][0]["access"],
        "rw"
    );
    assert_eq!(report["grants"]["mounts"][0]["access"], "rw");

    let file = guest("flaky");
    let (out, stdout) = run(hermetic(ws.path()).arg("inspect").arg(&file));
    assert!(out.status.success());
    let report = json(&stdout);
    assert_eq!(report["loads"], true);
    assert_eq!(report["declaration"]["name"], "flaky");
    assert_eq!(report["grants"]["mounts"][0]["access"], "ro");

    let bad = guest("bad_schema");
    let (_, stdout) = run(hermetic(ws.path()).arg("inspect").arg(&bad));
    let report = json(&stdout);
    assert_eq!(report["loads"], false);
    assert!(
        report["error"]
            .as_str()
            .unwrap()
            .contains("differs from the declared name")
    );

    let (out, _) = run(hermetic(ws.path()).args(["inspect", "nope"]));
    assert_eq!(out.status.code(), Some(3));
}

#[test]
fn version_and_help_explain_every_command() {
    let ws = tempfile::TempDir::new().unwrap();
    let (out, stdout) = run(hermetic(ws.path()).arg("--version"));
    assert!(out.status.success());
    assert!(stdout.starts_with("hermetic "), "{stdout}");
    for cmd in ["tools", "toolsets", "definitions", "call", "inspect"] {
        let (out, stdout) = run(hermetic(ws.path()).args([cmd, "--help"]));
        assert!(out.status.success(), "{cmd}");
        assert!(stdout.contains("Usage: hermetic"), "{cmd}: {stdout}");
    }
    let (out, _) = run(hermetic(ws.path()).arg("frobnicate"));
    assert_eq!(out.status.code(), Some(2));
    // The long help names every tool the binary bundles.
    let (_, help) = run(hermetic(ws.path()).arg("--help"));
    for (name, _) in hermetic::bundled_tools() {
        assert!(help.contains(name), "--help does not name {name}: {help}");
    }
}

#[test]
fn a_policy_file_and_a_tenant_narrow_what_the_cli_sees() {
    let root = tempfile::TempDir::new().unwrap();
    std::fs::create_dir_all(root.path().join("ws/acme")).unwrap();
    std::fs::write(root.path().join("ws/acme/a.txt"), "tenant data\n").unwrap();
    std::fs::write(
        root.path().join("policy.toml"),
        "[mounts.workspace]\npath = \"ws\"\naccess = \"rw\"\n\n[tenants.acme]\ntoolsets = [\"file\"]\n[tenants.acme.mounts.workspace]\naccess = \"ro\"\nsubdir = \"acme\"\n",
    )
    .unwrap();
    let base = || {
        let mut cmd = hermetic(root.path());
        cmd.args(["--policy", "policy.toml", "--tenant", "acme"]);
        cmd
    };
    let (out, stdout) = run(base().args(["tools", "--json"]));
    assert!(out.status.success());
    let tools = json(&stdout);
    let write = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "write_file")
        .unwrap();
    assert_eq!(write["available"], false);
    assert!(
        write["reason"]
            .as_str()
            .unwrap()
            .contains("tenant acme allows only read-only")
    );
    assert!(
        tools
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["name"] != "weather")
    );

    let (out, stdout) = run(base().args(["call", "read_file", r#"{"path": "a.txt"}"#]));
    assert!(out.status.success(), "{stdout}");
    assert_eq!(json(&stdout)["content"], "1|tenant data");

    let (_, stdout) = run(base().args(["inspect", "read_file"]));
    let report = json(&stdout);
    assert_eq!(report["tenant"], "acme");
    assert_eq!(
        report["tenant_policy"]["toolsets"],
        serde_json::json!(["file"])
    );
    assert!(
        report["grants"]["mounts"][0]["host_path"]
            .as_str()
            .unwrap()
            .ends_with("ws/acme")
    );

    let (out, _) =
        run(hermetic(root.path()).args(["--policy", "policy.toml", "--tenant", "nobody", "tools"]));
    assert_eq!(out.status.code(), Some(3));
    let (out, _) = run(hermetic(root.path()).args(["--policy", "missing.toml", "tools"]));
    assert_eq!(out.status.code(), Some(3));
}

#[test]
fn call_terminal_runs_safe_commands_and_without_a_tty_never_runs_dangerous_ones() {
    let ws = tempfile::TempDir::new().unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    let (out, stdout) = run(hermetic(&ws_path)
        .args(["call", "terminal", r#"{"command": "echo hi; pwd"}"#])
        .stdin(std::process::Stdio::null()));
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert_eq!(
        json(&stdout),
        serde_json::json!({"output": format!("hi\n{}", ws_path.display()), "exit_code": 0, "error": null})
    );
    // The output came on stderr as it was made; --quiet keeps stderr for errors only.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("hi\n"), "{stderr}");
    let (out, _) = run(hermetic(&ws_path)
        .args(["call", "--quiet", "terminal", r#"{"command": "echo hi"}"#])
        .stdin(std::process::Stdio::null()));
    assert_eq!(out.status.code(), Some(0));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("hi"));
    std::fs::create_dir(ws_path.join("junk")).unwrap();
    let (out, stdout) = run(hermetic(&ws_path)
        .args(["call", "terminal", r#"{"command": "rm -rf junk"}"#])
        .stdin(std::process::Stdio::null()));
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert_eq!(json(&stdout)["status"], "pending_approval");
    assert!(ws_path.join("junk").exists(), "ran without approval");
}

/// A guest that sleeps in a host call (an hour, asked for) ends at its 2 s deadline
/// with the `time` limit and exit code 1 — the deadline reaches host calls.
#[test]
fn a_sleeping_tool_ends_at_its_deadline_over_the_cli() {
    let ws = tempfile::TempDir::new().unwrap();
    let dir = tempfile::TempDir::new().unwrap();
    std::fs::copy(guest("sleeper"), dir.path().join("sleeper.wasm")).unwrap();
    // Compile it into the cache first: the time measured is the call's.
    let (out, _) = run(hermetic(ws.path())
        .arg("--no-bundled")
        .arg("--tools-dir")
        .arg(dir.path())
        .arg("tools"));
    assert!(out.status.success());
    let started = std::time::Instant::now();
    let (out, stdout) = run(hermetic(ws.path())
        .arg("--no-bundled")
        .arg("--tools-dir")
        .arg(dir.path())
        .args(["call", "sleeper", "{}"]));
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert_eq!(json(&stdout)["limit"], "time", "{stdout}");
    assert!(took < std::time::Duration::from_secs(3), "took {took:?}");
}

// ── Polish: what a user runs into first ─────────────────────────────────────────────

/// `hermetic tools --json | head -1`: a reader that went away ends the listing quietly
/// (no panic, no error), whatever was left to print.
#[test]
fn a_closed_stdout_ends_quietly() {
    let ws = tempfile::TempDir::new().unwrap();
    for args in [
        &["tools", "--json"][..],
        &["definitions"],
        &["token", "new"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = hermetic(ws.path())
            .args(args)
            .stdout(writer)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

/// `token new` prints a policy snippet that parses as TOML, with or without
/// `--tenant`, and whatever the tenant's id looks like.
#[test]
fn token_new_prints_valid_toml_for_any_tenant() {
    let ws = tempfile::TempDir::new().unwrap();
    for extra in [&[][..], &["--tenant", "acme"], &["--tenant", "my team.eu"]] {
        let (out, stdout) = run(hermetic(ws.path()).args(["token", "new"]).args(extra));
        assert!(out.status.success(), "{stdout}");
        let (token_line, snippet) = stdout.split_once('\n').unwrap();
        assert!(token_line.starts_with("token: hmt_"), "{stdout}");
        let parsed: toml::Table = snippet
            .parse()
            .unwrap_or_else(|e| panic!("{extra:?}: not TOML ({e}):\n{snippet}"));
        let tenants = parsed["tenants"].as_table().unwrap();
        let name = extra.get(1).copied().unwrap_or("TENANT");
        let digest = tenants[name]["token_sha256"][0].as_str().unwrap();
        assert_eq!(digest.len(), 64, "{snippet}");
    }
}

#[test]
fn token_new_admin_prints_the_console_line_and_hash_agrees() {
    let ws = tempfile::TempDir::new().unwrap();
    let (out, stdout) = run(hermetic(ws.path()).args(["token", "new", "--admin"]));
    assert!(out.status.success(), "{stdout}");
    let (token_line, snippet) = stdout.split_once('\n').unwrap();
    let token = token_line.strip_prefix("token: ").unwrap();
    let parsed: toml::Table = snippet.parse().unwrap();
    let digest = parsed["server"]["admin_token_sha256"][0].as_str().unwrap();
    let mut hash = hermetic(ws.path());
    hash.args(["token", "hash"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = hash.spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), token.as_bytes()).unwrap();
    let hashed = child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&hashed.stdout).trim(), digest);
    // --admin and --tenant say different things: refused together (usage, exit 2).
    let (out, _) = run(hermetic(ws.path()).args(["token", "new", "--admin", "--tenant", "a"]));
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn serve_stdio_closed_before_initialize_ends_quietly() {
    let ws = tempfile::TempDir::new().unwrap();
    let (out, _) = run(hermetic(ws.path())
        .args(["serve", "--stdio", "--no-watch"])
        .stdin(std::process::Stdio::null()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("error"), "{stderr}");
}

#[test]
fn token_hash_of_nothing_is_a_usage_error() {
    let ws = tempfile::TempDir::new().unwrap();
    let (out, _) = run(hermetic(ws.path())
        .args(["token", "hash"])
        .stdin(std::process::Stdio::null()));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no token on stdin"));
}

#[test]
fn a_missing_workspace_is_said_to_be_missing() {
    let ws = tempfile::TempDir::new().unwrap();
    std::fs::write(ws.path().join("file"), "").unwrap();
    let (out, _) = run(hermetic(ws.path()).args(["--workspace", "nowhere", "tools"]));
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("workspace nowhere does not exist"),
        "{stderr}"
    );
    let (out, _) = run(hermetic(ws.path()).args(["--workspace", "file", "tools"]));
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("workspace file is not a directory"),
        "{stderr}"
    );
}

/// Options mean one thing and appear where they apply: tool-host options are not
/// offered on `token`, are refused before it, and work before or after `serve`-like
/// commands alike.
#[test]
fn tool_host_options_apply_only_where_a_tool_host_is_built() {
    let ws = tempfile::TempDir::new().unwrap();
    let (_, help) = run(hermetic(ws.path()).args(["token", "new", "--help"]));
    assert!(
        !help.contains("--tools-dir") && !help.contains("--workspace"),
        "{help}"
    );
    let (out, _) = run(hermetic(ws.path()).args(["--tenant", "acme", "token", "new"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("apply to tools"));
    // Before or after the command: the same listing.
    let (_, before) = run(hermetic(ws.path()).args(["--no-bundled", "tools", "--json"]));
    let (_, after) = run(hermetic(ws.path()).args(["tools", "--no-bundled", "--json"]));
    assert_eq!(json(&before), serde_json::json!([]));
    assert_eq!(json(&after), serde_json::json!([]));
}

/// An unknown log level is a usage error naming the levels, not a filter that silently
/// logs nothing; logs carry no colour codes when stderr is not a terminal.
#[test]
fn log_levels_are_checked_and_logs_to_a_pipe_are_plain() {
    let ws = tempfile::TempDir::new().unwrap();
    let (out, _) = run(hermetic(ws.path()).args(["--log-level", "bogus", "tools"]));
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error, warn, info, debug, trace"),
        "{stderr}"
    );
    // The environment's level is checked as strictly as the option's.
    let (out, stdout) = run(hermetic(ws.path())
        .env("HERMETIC_LOG", "bogus")
        .args(["tools"]));
    assert_eq!(out.status.code(), Some(2), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("HERMETIC_LOG") && stderr.contains("error, warn, info, debug, trace"),
        "{stderr}"
    );
    let (out, _) = run(hermetic(ws.path())
        .env("HERMETIC_LOG", "hermetic=debug,warn")
        .args(["tools"]));
    assert!(out.status.success());
    let (out, _) =
        run(hermetic(ws.path())
            .env_remove("NO_COLOR")
            .args(["--log-level", "debug", "tools"]));
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("DEBUG"), "nothing was logged: {stderr}");
    assert!(
        !stderr.contains('\u{1b}'),
        "colour codes on a pipe: {stderr:?}"
    );
}

/// A broken component is reported once, on one line, with the reason; `inspect` of it
/// fails; `inspect` of a missing path says the path is missing.
#[test]
fn a_broken_component_is_one_line_once_and_inspect_of_it_fails() {
    let ws = tempfile::TempDir::new().unwrap();
    let dir = tempfile::TempDir::new().unwrap();
    let broken = dir.path().join("broken.wasm");
    std::fs::write(&broken, b"garbage, not wasm").unwrap();
    let (out, _) = run(hermetic(ws.path())
        .arg("--tools-dir")
        .arg(dir.path())
        .args(["tools"]));
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("broken")).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains("not WebAssembly"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");

    let (out, stdout) = run(hermetic(ws.path()).arg("inspect").arg(&broken));
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert_eq!(json(&stdout)["loads"], false);
    let (out, _) = run(hermetic(ws.path()).args(["inspect", "/nonexistent/tool.wasm"]));
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("/nonexistent/tool.wasm: no such file"),
        "{stderr}"
    );
}

/// Under a policy file, terminal commands start in the workspace mount (a tenant's own
/// subdirectory of it), not wherever hermetic happened to be started.
#[test]
fn under_a_policy_the_terminal_starts_in_the_workspace_mount() {
    let root = tempfile::TempDir::new().unwrap();
    let root_path = root.path().canonicalize().unwrap();
    std::fs::create_dir_all(root_path.join("ws/acme")).unwrap();
    std::fs::write(
        root_path.join("policy.toml"),
        "[mounts.workspace]\npath = \"ws\"\naccess = \"rw\"\n\n\
         [tools.terminal]\nterminal = true\n\n\
         [tenants.acme]\n[tenants.acme.mounts.workspace]\naccess = \"rw\"\nsubdir = \"acme\"\n",
    )
    .unwrap();
    for (tenant, expected) in [("", "ws"), ("acme", "ws/acme")] {
        let (out, stdout) = run(hermetic(&root_path)
            .args(["call", "--policy", "policy.toml", "--tenant", tenant])
            .args(["terminal", r#"{"command": "pwd"}"#])
            .stdin(std::process::Stdio::null()));
        assert!(out.status.success(), "{tenant}: {stdout}");
        assert_eq!(
            json(&stdout)["output"],
            root_path.join(expected).display().to_string(),
            "{tenant}"
        );
    }
    // Without a policy, `--workspace` moves the terminal along with the mount.
    let (out, stdout) = run(hermetic(&root_path)
        .args([
            "call",
            "terminal",
            r#"{"command": "pwd"}"#,
            "--workspace",
            "ws/acme",
        ])
        .stdin(std::process::Stdio::null()));
    assert!(out.status.success(), "{stdout}");
    assert_eq!(
        json(&stdout)["output"],
        root_path.join("ws/acme").display().to_string()
    );
}

/// A fetch that fails is a failed call (exit 1) with a message in words, not a debug
/// dump of a wasi-http error code.
#[test]
fn web_extract_failures_exit_1_with_a_readable_reason() {
    let ws = tempfile::TempDir::new().unwrap();
    // Nothing listens on port 1.
    let (out, stdout) = run(hermetic(ws.path()).args([
        "--allow-net",
        "http://127.0.0.1:1",
        "call",
        "web_extract",
        r#"{"urls": ["http://127.0.0.1:1/"]}"#,
    ]));
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let result = json(&stdout);
    let error = result["error"].as_str().unwrap();
    assert!(error.contains("connection was refused"), "{error}");
    assert!(!stdout.contains("ErrorCode"), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("connect error"), "said twice: {stderr}");
}

/// A host whose files live where the book suggests (`docs/src/one-node.md`:
/// `~/.config/hermetic`), with the `local` backend: the gate is the only wall between a
/// command and those files.
struct LocalHost {
    root: tempfile::TempDir,
}

impl LocalHost {
    fn new() -> Self {
        let root = tempfile::TempDir::new().unwrap();
        let conf = root.path().join("home/.config/hermetic");
        std::fs::create_dir_all(&conf).unwrap();
        std::fs::create_dir_all(root.path().join("ws/victim")).unwrap();
        // A trusted key kept beside the host's other files: what it trusts next start.
        std::fs::create_dir_all(root.path().join("keys")).unwrap();
        let made = hermetic(root.path())
            .args(["keygen", "--out"])
            .arg(root.path().join("keys/publisher"))
            .output()
            .unwrap();
        assert!(made.status.success(), "{made:?}");
        std::fs::write(conf.join("secrets.toml"), "API_KEY = \"s3cret\"\n").unwrap();
        std::fs::write(
            conf.join("approvals.json"),
            "{\"version\": 1, \"rules\": []}\n",
        )
        .unwrap();
        std::fs::write(
            conf.join("policy.toml"),
            format!(
                "[mounts.workspace]\npath = \"{ws}\"\naccess = \"rw\"\n\n\
                 [tools.terminal]\nterminal = true\n\n\
                 [secrets]\nfile = \"secrets.toml\"\n\n\
                 [server]\naudit_file = \"audit.jsonl\"\n\n\
                 [keyvalue]\nfile = \"keyvalue.redb\"\n\n\
                 [trust]\nstore = \"{store}\"\nkeys = [\"{key}\"]\n\n\
                 [terminal]\nbackend = \"local\"\n\n\
                 [terminal.approval]\nallowlist_file = \"approvals.json\"\n",
                ws = root.path().join("ws").display(),
                store = root.path().join("store").display(),
                key = root.path().join("keys/publisher.pub").display(),
            ),
        )
        .unwrap();
        Self { root }
    }

    fn home(&self) -> std::path::PathBuf {
        self.root.path().join("home")
    }

    fn conf(&self) -> std::path::PathBuf {
        self.home().join(".config/hermetic")
    }

    /// `hermetic call terminal` with `command`, nobody to ask; the JSON result.
    fn terminal(&self, command: &str) -> Value {
        let args = serde_json::json!({ "command": command }).to_string();
        let policy = self.conf().join("policy.toml");
        let (_, stdout) = run(hermetic(&self.root.path().join("ws"))
            .env("HOME", self.home())
            .stdin(std::process::Stdio::null())
            .args(["call", "terminal", &args, "--quiet", "--policy"])
            .arg(&policy));
        json(&stdout)
    }
}

/// Issue 52: a tenant wrote the allowlist by its path, then deleted without being
/// asked. Fails before host state was hardline (the write ran, and `rm -rf` was then
/// allowed by the rule it planted).
#[test]
fn the_allowlist_cannot_be_written_by_a_command_on_the_local_backend() {
    let host = LocalHost::new();
    let allowlist = host.conf().join("approvals.json");
    let before = std::fs::read(&allowlist).unwrap();
    let planted = host.terminal(
        "printf '{\"version\": 1, \"rules\": [\"fs.rm_recursive\"]}' > ~/.config/hermetic/approvals.json",
    );
    assert_eq!(planted["status"], "blocked", "{planted}");
    let error = planted["error"].as_str().unwrap();
    assert!(error.contains("self.host_state"), "{error}");
    assert!(error.contains("agent host's own"), "{error}");
    assert_eq!(std::fs::read(&allowlist).unwrap(), before);
    let deleted = host.terminal("rm -rf victim");
    assert_eq!(deleted["status"], "pending_approval", "{deleted}");
    assert!(host.root.path().join("ws/victim").is_dir());
}

/// Every file of the host's, named in every form a shell reads, is refused before it
/// runs: the policy, secrets, allowlist, audit log, key-value store, tool store and the
/// program itself.
#[test]
fn host_files_are_hardline_to_name_in_every_form() {
    let host = LocalHost::new();
    let exe = env!("CARGO_BIN_EXE_hermetic");
    let store = host.root.path().join("store");
    let commands = [
        format!("cat {}", host.conf().join("policy.toml").display()),
        "cat ~/.config/hermetic/secrets.toml".to_owned(),
        "cat $HOME/.config/hermetic/approvals.json".to_owned(),
        "tail \"${HOME}/.config/hermetic/audit.jsonl\"".to_owned(),
        "cp ~/.config/hermetic/keyvalue.redb /tmp/kv.redb".to_owned(),
        "cat ~/.config/*/secrets.toml".to_owned(),
        "cat ~/.config/herm*/policy.t?ml".to_owned(),
        "cd ~/.config/hermetic && cat secrets.toml".to_owned(),
        "cd ~ && cd .config && grep -r KEY hermetic".to_owned(),
        "cat ../home/.config/hermetic/secrets.toml".to_owned(),
        format!("ls {}/sha256", store.display()),
        format!("cat {exe}"),
        format!(
            "cp /tmp/mine.pub {}",
            host.root.path().join("keys/publisher.pub").display()
        ),
        format!("cp /dev/null {exe}"),
        "rm -rf ~/.config".to_owned(),
        "python3 -c \"print(open('$HOME/.config/hermetic/secrets.toml').read())\"".to_owned(),
    ];
    for command in &commands {
        let result = host.terminal(command);
        assert_eq!(result["status"], "blocked", "{command}: {result}");
        assert!(
            result["error"]
                .as_str()
                .unwrap()
                .contains("self.host_state"),
            "{command}: {result}"
        );
    }
    // Reading the home directory's listing is fine.
    let listed = host.terminal("ls -a ~/.config");
    assert_eq!(listed["exit_code"], 0, "{listed}");
    assert!(listed["output"].as_str().unwrap().contains("hermetic"));
}

/// A tools directory is the host's too: a component a command wrote there would be
/// loaded with the policy's grants at the next start (or at once by `serve`'s reload).
/// Fails before the tools directories were protected (the copy ran).
#[test]
fn a_tools_directory_cannot_be_written_by_a_command() {
    let host = LocalHost::new();
    let tools = host.root.path().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    std::fs::write(host.root.path().join("ws/evil.wasm"), b"\0asm").unwrap();
    let args = serde_json::json!({
        "command": format!("cp evil.wasm {}/", tools.display())
    })
    .to_string();
    let (_, stdout) = run(hermetic(&host.root.path().join("ws"))
        .env("HOME", host.home())
        .stdin(std::process::Stdio::null())
        .args(["call", "terminal", &args, "--quiet", "--tools-dir"])
        .arg(&tools)
        .arg("--policy")
        .arg(host.conf().join("policy.toml")));
    let result = json(&stdout);
    assert_eq!(result["status"], "blocked", "{result}");
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .contains("self.host_state"),
        "{result}"
    );
    assert!(!tools.join("evil.wasm").exists());
}

/// On `local` a command sees the real home: reading the user's credentials asks.
#[test]
fn reading_the_users_credentials_asks_on_the_local_backend() {
    let host = LocalHost::new();
    std::fs::create_dir_all(host.home().join(".ssh")).unwrap();
    std::fs::write(host.home().join(".ssh/id_rsa"), "PRIVATE\n").unwrap();
    for command in ["cat ~/.ssh/id_rsa", "base64 ~/.ssh/id_rsa", "cat ~/.ssh/*"] {
        let result = host.terminal(command);
        assert_eq!(result["status"], "pending_approval", "{command}: {result}");
        assert_eq!(
            result["pattern_key"], "fs.credential_read",
            "{command}: {result}"
        );
    }
}

/// Without a policy the terminal is sandboxed when bubblewrap works here (.ci/run
/// installs it): a file of the host user's home is not in the command's view. Without
/// bubblewrap it runs on `local`, and the start says what commands can then reach.
#[test]
fn without_a_policy_the_terminal_uses_bwrap_when_it_works_else_local_with_a_warning() {
    let root = tempfile::TempDir::new().unwrap();
    let home = root.path().join("home");
    let ws = root.path().join("ws");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(home.join("marker"), "host-home\n").unwrap();
    let args = serde_json::json!({ "command": "cat \"$HOME/marker\"; echo in-ws > made" });
    let call = |policy: &[&std::ffi::OsStr]| {
        hermetic(&ws)
            .env("HOME", &home)
            .stdin(std::process::Stdio::null())
            .args(policy)
            .args(["call", "terminal", &args.to_string(), "--quiet"])
            .output()
            .unwrap()
    };
    let sandboxed = call(&[]);
    let result = json(&String::from_utf8_lossy(&sandboxed.stdout));
    assert!(
        !result["output"].as_str().unwrap().contains("host-home"),
        "{result}"
    );
    assert_eq!(std::fs::read_to_string(ws.join("made")).unwrap(), "in-ws\n");
    let stderr = String::from_utf8_lossy(&sandboxed.stderr);
    assert!(!stderr.contains("WITHOUT a sandbox"), "{stderr}");

    // A bubblewrap that does not run (the backend's program, as the probe runs it: a
    // missing one here): local, said once at start with bwrap's own words.
    let policy = root.path().join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            "[mounts.workspace]\npath = \"{}\"\naccess = \"rw\"\n\n[tools.terminal]\nterminal = true\n\n\
             [terminal.bwrap]\nprogram = \"/nonexistent/bwrap\"\n",
            ws.display()
        ),
    )
    .unwrap();
    let local = call(&["--policy".as_ref(), policy.as_os_str()]);
    let result = json(&String::from_utf8_lossy(&local.stdout));
    assert_eq!(result["output"], "host-home", "{result}");
    let stderr = String::from_utf8_lossy(&local.stderr);
    assert!(
        stderr.contains("`bwrap … true` failed")
            && stderr.contains("/nonexistent/bwrap: No such file")
            && stderr.contains("WITHOUT a sandbox (backend local)")
            && stderr.contains("the whole home directory"),
        "{stderr}"
    );
}
