//! The bundled file tools through the real host: behaviour, and containment in the
//! `workspace` mount (`..`, absolute paths, symlinks pointing out, read-only mounts).
use hermetic_test_support::registry::{Fixture, call, error_of, fixture};
use serde_json::{Value, json};
use std::os::unix::fs::symlink;

fn files() -> Fixture {
    fixture(true, &[])
}

/// The error text of a refused file operation, whether the tool reported it as a tool
/// error or inside its result.
fn refusal(out: &Value) -> String {
    out["error"]
        .as_str()
        .unwrap_or_else(|| panic!("expected a refusal, got {out}"))
        .to_owned()
}

#[test]
fn read_file_numbers_lines_and_pages_with_offset_and_limit() {
    let f = files();
    let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    std::fs::write(f.workspace.path().join("ten.txt"), text).unwrap();
    let out = call(&f.registry, "read_file", json!({"path": "ten.txt"}));
    assert_eq!(out["total_lines"], 10);
    assert!(
        out["content"]
            .as_str()
            .unwrap()
            .starts_with("1|line 1\n2|line 2\n"),
        "{out}"
    );
    let page = call(
        &f.registry,
        "read_file",
        json!({"path": "ten.txt", "offset": 4, "limit": 2}),
    );
    assert_eq!(page["content"], "4|line 4\n5|line 5");
    assert_eq!(page["truncated"], true);
    // Coercion: Hermes agents often send numbers as strings.
    let page = call(
        &f.registry,
        "read_file",
        json!({"path": "ten.txt", "offset": "9", "limit": "5"}),
    );
    assert_eq!(page["content"], "9|line 9\n10|line 10");
}

#[test]
fn read_file_caps_long_lines() {
    let f = files();
    std::fs::write(f.workspace.path().join("long.txt"), "y".repeat(5000)).unwrap();
    let out = call(&f.registry, "read_file", json!({"path": "long.txt"}));
    let content = out["content"].as_str().unwrap();
    assert!(content.len() < 2100, "{}", content.len());
    assert!(content.ends_with("[truncated]"), "{content}");
}

#[test]
fn read_file_reports_a_missing_file() {
    let f = files();
    let out = call(&f.registry, "read_file", json!({"path": "missing.txt"}));
    assert!(refusal(&out).contains("not found"), "{out}");
}

#[test]
fn write_file_creates_parent_directories() {
    let f = files();
    let out = call(
        &f.registry,
        "write_file",
        json!({"path": "a/b/c.txt", "content": "hello\n"}),
    );
    assert_eq!(out["bytes_written"], 6, "{out}");
    assert_eq!(
        std::fs::read_to_string(f.workspace.path().join("a/b/c.txt")).unwrap(),
        "hello\n"
    );
}

#[test]
fn patch_replaces_a_unique_match_and_explains_zero_or_many() {
    let f = files();
    let path = f.workspace.path().join("code.rs");
    std::fs::write(&path, "let a = 1;\nlet b = 1;\nlet c = 2;\n").unwrap();

    let out = call(
        &f.registry,
        "patch",
        json!({"path": "code.rs", "old_string": "c = 2", "new_string": "c = 3"}),
    );
    assert_eq!(out["success"], true, "{out}");
    assert!(
        out["diff"].as_str().unwrap().contains("+let c = 3;"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "let a = 1;\nlet b = 1;\nlet c = 3;\n"
    );

    let none = call(
        &f.registry,
        "patch",
        json!({"path": "code.rs", "old_string": "zzz", "new_string": "q"}),
    );
    assert_eq!(none["success"], false);
    assert!(refusal(&none).contains("not found"), "{none}");

    let many = call(
        &f.registry,
        "patch",
        json!({"path": "code.rs", "old_string": "= 1;", "new_string": "= 9;"}),
    );
    assert_eq!(many["success"], false);
    let err = refusal(&many);
    assert!(
        err.contains("Found 2 matches") && err.contains("replace_all"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "let a = 1;\nlet b = 1;\nlet c = 3;\n"
    );

    let all = call(
        &f.registry,
        "patch",
        json!({"path": "code.rs", "old_string": "= 1;", "new_string": "= 9;", "replace_all": "true"}),
    );
    assert_eq!(all["success"], true, "{all}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "let a = 9;\nlet b = 9;\nlet c = 3;\n"
    );
}

#[test]
fn search_files_finds_content_by_regex_and_names_by_glob() {
    let f = files();
    let ws = f.workspace.path();
    std::fs::create_dir_all(ws.join("src/deep")).unwrap();
    std::fs::write(ws.join("src/main.rs"), "fn main() {\n    helper();\n}\n").unwrap();
    std::fs::write(ws.join("src/deep/helper.rs"), "pub fn helper() {}\n").unwrap();
    std::fs::write(ws.join("notes.md"), "no code here\n").unwrap();

    let content = call(
        &f.registry,
        "search_files",
        json!({"pattern": r"fn \w+\(", "target": "content"}),
    );
    let text = content.to_string();
    assert!(
        text.contains("src/main.rs") && text.contains("src/deep/helper.rs"),
        "{content}"
    );
    assert!(!text.contains("notes.md"), "{content}");
    assert_eq!(content["total_count"], 2, "{content}");

    let names = call(
        &f.registry,
        "search_files",
        json!({"pattern": "*.rs", "target": "files"}),
    );
    let text = names.to_string();
    assert!(
        text.contains("src/main.rs") && text.contains("src/deep/helper.rs"),
        "{names}"
    );
    assert!(!text.contains("notes.md"), "{names}");

    let bad = call(
        &f.registry,
        "search_files",
        json!({"pattern": "(unclosed", "target": "content"}),
    );
    assert!(refusal(&bad).contains("regex"), "{bad}");
}

#[test]
fn parent_escapes_and_absolute_paths_are_refused() {
    let f = files();
    for path in [
        "../outside.txt",
        "a/../../outside.txt",
        "/etc/passwd",
        "/workspace/../etc/passwd",
    ] {
        let read = call(&f.registry, "read_file", json!({"path": path}));
        let err = refusal(&read);
        assert!(err.contains("access denied"), "{path}: {err}");
        assert!(!read.to_string().contains("root:"), "{path} leaked: {read}");
        let write = call(
            &f.registry,
            "write_file",
            json!({"path": path, "content": "x"}),
        );
        assert!(refusal(&write).contains("access denied"), "{path}: {write}");
    }
}

#[test]
fn a_symlink_planted_in_the_workspace_pointing_out_is_refused() {
    let f = files();
    let outside = tempfile::TempDir::new().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "TOP-SECRET\n").unwrap();
    symlink(
        outside.path().join("secret.txt"),
        f.workspace.path().join("link.txt"),
    )
    .unwrap();
    symlink(outside.path(), f.workspace.path().join("linkdir")).unwrap();

    let read = call(&f.registry, "read_file", json!({"path": "link.txt"}));
    assert!(read.get("error").is_some(), "{read}");
    assert!(!read.to_string().contains("TOP-SECRET"), "{read}");
    let read = call(
        &f.registry,
        "read_file",
        json!({"path": "linkdir/secret.txt"}),
    );
    assert!(read.get("error").is_some(), "{read}");
    assert!(!read.to_string().contains("TOP-SECRET"), "{read}");

    let write = call(
        &f.registry,
        "write_file",
        json!({"path": "linkdir/planted.txt", "content": "x"}),
    );
    assert!(write.get("error").is_some(), "{write}");
    assert!(!outside.path().join("planted.txt").exists());
    let write = call(
        &f.registry,
        "write_file",
        json!({"path": "link.txt", "content": "overwritten"}),
    );
    assert!(write.get("error").is_some(), "{write}");
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "TOP-SECRET\n"
    );

    let patch = call(
        &f.registry,
        "patch",
        json!({"path": "link.txt", "old_string": "TOP", "new_string": "NOT"}),
    );
    assert!(patch.get("error").is_some(), "{patch}");
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "TOP-SECRET\n"
    );

    let search = call(
        &f.registry,
        "search_files",
        json!({"pattern": "TOP-SECRET", "target": "content"}),
    );
    assert!(
        !search.to_string().contains("TOP-SECRET\\n") && search["total_count"] == 0,
        "{search}"
    );
    let search = call(
        &f.registry,
        "search_files",
        json!({"pattern": "SECRET", "path": "linkdir"}),
    );
    assert!(!search.to_string().contains("secret.txt"), "{search}");
}

#[test]
fn read_only_tools_get_a_read_only_mount() {
    let f = files();
    let grants = f.registry.inspect("read_file").unwrap()["grants"]["mounts"].clone();
    assert_eq!(grants[0]["access"], "ro");
    let grants = f.registry.inspect("write_file").unwrap()["grants"]["mounts"].clone();
    assert_eq!(grants[0]["access"], "rw");
}

#[test]
fn the_file_tools_keep_working_after_refusals() {
    let f = files();
    let _ = error_of(&call(&f.registry, "read_file", json!({"path": "../x"})));
    std::fs::write(f.workspace.path().join("ok.txt"), "fine\n").unwrap();
    assert_eq!(
        call(&f.registry, "read_file", json!({"path": "ok.txt"}))["content"],
        "1|fine"
    );
}
