//! Tool `write_file`: write a whole workspace file, creating parent directories.
//!
//! Re-creates Hermes's `write_file` (tools/file_tools.py `write_file_tool` /
//! `_handle_write_file` and tools/file_operations.py `ShellFileOperations.write_file`):
//! the same argument checks and messages, the refusal to write read_file's `N|` display
//! text back as file content, the fail-closed syntax gate (JSON here), CRLF and UTF-8 BOM
//! preservation on overwrite, and a read-back verification of the bytes written.
use hermetic_sdk::fs::{WORKSPACE, display_path, io_error, resolve_in};
use hermetic_sdk::{Context, Tool, ToolError, Value, json};
use std::io::Read;
use std::path::Path;

/// Bytes of an existing file sampled for its line ending and BOM.
const PROBE_BYTES: u64 = 4096;
const UTF8_BOM: char = '\u{feff}';

struct WriteFile;

impl Tool for WriteFile {
    /// The raw argument object, so a missing `content` and a `null` one stay distinct
    /// (Hermes gives each its own message).
    type Args = serde_json::Map<String, Value>;

    fn schema() -> Value {
        json!({
            "name": "write_file",
            "description": "Write content to a file, completely replacing existing content. Use this instead of echo/cat heredoc. Creates parent directories automatically. OVERWRITES the entire file — use 'patch' for targeted edits.",
            "parameters": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "path": {"type": "string", "description": "Path to the file to write (will be created if it doesn't exist, overwritten if it does)"},
                    "content": {"type": "string", "description": "Complete content to write to the file"}
                },
                "required": ["path", "content"]
            },
            "output_schema": {
                "type": "object",
                "properties": {
                    "bytes_written": {"type": "integer"},
                    "dirs_created": {"type": "boolean"},
                    "verified": {"type": "boolean"},
                    "resolved_path": {"type": "string"},
                    "files_modified": {"type": "array", "items": {"type": "string"}}
                }
            }
        })
    }

    fn handle(args: Self::Args, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        let (path, content) = parse_args(&args)?;
        write_file(WORKSPACE, path, content)
    }
}

hermetic_sdk::export_tool!(
    WriteFile,
    r#"
name = "write_file"
toolset = "file"
description = "Write a workspace file, creating parent directories"
emoji = "✍️"
max_result_chars = 100000
timeout_ms = 30000
memory_mb = 128

[capabilities]
fs = [{ mount = "workspace", access = "rw" }]
"#
);

/// `(path, content)` with Hermes's `_handle_write_file` messages for bad arguments.
fn parse_args(args: &serde_json::Map<String, Value>) -> hermetic_sdk::Result<(&str, &str)> {
    let path = match args.get("path") {
        Some(Value::String(p)) if !p.is_empty() => p,
        _ => {
            return Err(ToolError::new(
                "write_file: missing required field 'path'. Re-emit the tool call with both 'path' and 'content' set.",
            ));
        }
    };
    let content = match args.get("content") {
        None => {
            return Err(ToolError::new(
                "write_file: missing required field 'content'. The tool call included a path but no content argument — this is almost always a dropped-arg bug under context pressure. Re-emit the tool call with the full content payload.",
            ));
        }
        Some(Value::String(c)) => c,
        Some(other) => {
            let kind = match other {
                Value::Null => "NoneType",
                Value::Bool(_) => "bool",
                Value::Number(n) if n.is_f64() => "float",
                Value::Number(_) => "int",
                Value::Array(_) => "list",
                _ => "dict",
            };
            return Err(ToolError::new(format!(
                "write_file: 'content' must be a string, got {kind}."
            )));
        }
    };
    Ok((path, content))
}

/// Writes `content` to `path` (resolved inside the mount at `root`).
fn write_file(root: &str, path: &str, content: &str) -> hermetic_sdk::Result<Value> {
    let full = resolve_in(root, path)?;
    let shown = display_path(root, &full);

    if looks_like_read_file_output(content) {
        return Err(ToolError::new(
            "Refusing to write internal read_file display text as file content. Strip read_file line-number prefixes or reconstruct the intended file contents before writing.",
        ));
    }
    if let Some(err) = syntax_error(&full, content) {
        return Ok(json!({
            "bytes_written": 0,
            "dirs_created": false,
            "error": format!(
                "Refusing to write '{shown}': candidate content fails {err}. The file was NOT created or modified. Fix the content and retry."
            ),
            "resolved_path": shown,
        }));
    }

    // What the file looks like now, so an overwrite keeps its CRLF endings and BOM.
    let (crlf, bom) = match std::fs::metadata(&full) {
        Ok(meta) if meta.is_dir() => {
            return Err(ToolError::new(format!("{shown} is a directory")));
        }
        Ok(meta) if !meta.is_file() => {
            return Err(ToolError::new(format!(
                "Cannot write '{shown}': not a regular file (FIFO, socket, or device)"
            )));
        }
        Ok(_) => probe_existing(&full).map_err(|e| io_error(&shown, &e))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (false, false),
        Err(e) => return Err(io_error(&shown, &e)),
    };
    let data = prepare_content(content, crlf, bom);

    let mut dirs_created = false;
    if let Some(parent) = full.parent() {
        match std::fs::metadata(parent) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(parent)
                    .map_err(|e| io_error(&display_path(root, parent), &e))?;
                dirs_created = true;
            }
            Err(e) => return Err(io_error(&display_path(root, parent), &e)),
        }
    }
    // Written in place (truncate + write), not temp-file + rename: WASI cannot carry the
    // file's mode over to a new inode, and a rename would drop e.g. an executable bit.
    std::fs::write(&full, data.as_bytes()).map_err(|e| io_error(&shown, &e))?;

    let mut result = json!({
        "bytes_written": data.len(),
        "dirs_created": dirs_created,
    });
    match std::fs::read(&full) {
        Ok(on_disk) if on_disk == data.as_bytes() => result["verified"] = Value::Bool(true),
        Ok(_) => {
            return Err(ToolError::new(format!(
                "Post-write verification failed for {shown}: on-disk content differs from the intended write. The write did not persist correctly — re-read the file and retry."
            )));
        }
        Err(_) => {} // could not verify: leave `verified` out, as Hermes does
    }
    result["resolved_path"] = Value::String(shown.clone());
    result["files_modified"] = json!([shown]);
    Ok(result)
}

/// `(uses CRLF, starts with a UTF-8 BOM)` from the first 4 KB of an existing file.
fn probe_existing(path: &Path) -> std::io::Result<(bool, bool)> {
    let mut head = Vec::new();
    std::fs::File::open(path)?
        .take(PROBE_BYTES)
        .read_to_end(&mut head)?;
    let crlf = head.windows(2).any(|w| w == b"\r\n");
    Ok((crlf, head.starts_with(b"\xef\xbb\xbf")))
}

/// The bytes to write: line endings turned to CRLF when the file used them (models send
/// bare LF), and the file's BOM restored when the content lacks it.
fn prepare_content(content: &str, crlf: bool, bom: bool) -> String {
    let mut out = if crlf {
        content
            .replace("\r\n", "\n")
            .replace('\r', "\n")
            .replace('\n', "\r\n")
    } else {
        content.to_owned()
    };
    if bom && !out.starts_with(UTF8_BOM) {
        out.insert(0, UTF8_BOM);
    }
    out
}

/// True when most non-blank lines are consecutive `N|...` rows: read_file's display
/// format echoed back (Hermes `_looks_like_read_file_line_numbered_content`).
fn looks_like_read_file_output(content: &str) -> bool {
    let lines: Vec<&str> = content.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.len() < 2 {
        return false;
    }
    let numbered: Vec<u64> = lines
        .iter()
        .filter_map(|line| {
            let (prefix, _) = line.trim_start().split_once('|')?;
            if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            prefix.parse().ok()
        })
        .collect();
    if numbered.len() < 2 || (numbered.len() as f64) / (lines.len() as f64) < 0.6 {
        return false;
    }
    let consecutive = numbered.windows(2).filter(|w| w[1] == w[0] + 1).count();
    consecutive >= numbered.len() - 1
}

/// The fail-closed syntax gate for structured formats Hermes refuses to write broken.
/// Only JSON is checked here (YAML/TOML would need parser crates).
fn syntax_error(path: &Path, content: &str) -> Option<String> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    if ext != "json" {
        return None;
    }
    serde_json::from_str::<serde::de::IgnoredAny>(content)
        .err()
        .map(|e| format!(".json syntax validation ({e})"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn root() -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_str().unwrap().to_owned();
        (dir, root)
    }

    #[test]
    fn writes_and_creates_parents() {
        let (d, root) = root();
        let v = write_file(&root, "a/b/c.txt", "hello\n").unwrap();
        assert_eq!(v["bytes_written"], 6);
        assert_eq!(v["dirs_created"], true);
        assert_eq!(v["verified"], true);
        assert_eq!(v["resolved_path"], "a/b/c.txt");
        assert_eq!(v["files_modified"], json!(["a/b/c.txt"]));
        assert_eq!(
            std::fs::read_to_string(d.path().join("a/b/c.txt")).unwrap(),
            "hello\n"
        );
        let v = write_file(&root, "a/b/c.txt", "bye").unwrap();
        assert_eq!(v["dirs_created"], false);
        assert_eq!(
            std::fs::read_to_string(d.path().join("a/b/c.txt")).unwrap(),
            "bye"
        );
    }

    #[test]
    fn keeps_crlf_and_bom() {
        let (d, root) = root();
        std::fs::write(d.path().join("w.txt"), b"\xef\xbb\xbfa\r\nb\r\n").unwrap();
        let v = write_file(&root, "w.txt", "x\ny\n").unwrap();
        assert_eq!(v["bytes_written"], 9);
        assert_eq!(
            std::fs::read(d.path().join("w.txt")).unwrap(),
            b"\xef\xbb\xbfx\r\ny\r\n"
        );
    }

    #[test]
    fn refuses_read_file_display_text() {
        let (_d, root) = root();
        assert!(write_file(&root, "x.py", "1|import os\n2|print(1)\n").is_err());
        assert!(write_file(&root, "x.txt", "1|just one line\n").is_ok());
        assert!(looks_like_read_file_output("  10|a\n  11|b\n  12|c"));
        assert!(!looks_like_read_file_output("1|a\n5|b\n9|c"));
        assert!(!looks_like_read_file_output("a\nb\nc\n1|x\n2|y"));
    }

    #[test]
    fn refuses_broken_json() {
        let (d, root) = root();
        let v = write_file(&root, "c.json", "{\"a\": }").unwrap();
        assert!(
            v["error"]
                .as_str()
                .unwrap()
                .contains(".json syntax validation")
        );
        assert!(!d.path().join("c.json").exists());
        assert!(
            write_file(&root, "c.json", "{\"a\": 1}")
                .unwrap()
                .get("error")
                .is_none()
        );
    }

    #[test]
    fn argument_errors_follow_hermes() {
        let args = |v: Value| v.as_object().unwrap().clone();
        let e = parse_args(&args(json!({"content": "x"}))).unwrap_err();
        assert!(e.0.contains("missing required field 'path'"));
        let e = parse_args(&args(json!({"path": "a"}))).unwrap_err();
        assert!(e.0.contains("missing required field 'content'"));
        let e = parse_args(&args(json!({"path": "a", "content": 5}))).unwrap_err();
        assert_eq!(e.0, "write_file: 'content' must be a string, got int.");
        let e = parse_args(&args(json!({"path": "a", "content": null}))).unwrap_err();
        assert!(e.0.ends_with("got NoneType."));
        assert!(parse_args(&args(json!({"path": "a", "content": ""}))).is_ok());
    }

    #[test]
    fn escapes_and_directories_are_errors() {
        let (d, root) = root();
        assert!(write_file(&root, "../x", "a").is_err());
        assert!(write_file(&root, "/etc/x", "a").is_err());
        std::fs::create_dir(d.path().join("dir")).unwrap();
        assert!(write_file(&root, "dir", "a").is_err());
        std::fs::write(d.path().join("file"), "x").unwrap();
        assert!(write_file(&root, "file/child", "a").is_err());
    }
}
