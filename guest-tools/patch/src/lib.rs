//! Tool `patch`: exact find-and-replace in one workspace file, answered with a unified
//! diff.
//!
//! Re-creates the replace mode of Hermes's `patch` (tools/file_tools.py `patch_tool`,
//! tools/file_operations.py `ShellFileOperations.patch_replace` / `_no_match_result`,
//! tools/fuzzy_match.py `fuzzy_find_and_replace` / `is_already_applied`): the same
//! checks and messages, the success-shaped no-op when the edit is already in the file,
//! CRLF and BOM preservation, a read-back check, and the `{"success", "diff",
//! "files_modified"}` result. Matching is exact (Hermes's first strategy only) plus one
//! tolerance: LF line breaks in `old_string` match a CRLF file. Hermes's V4A multi-file
//! `mode="patch"` is not offered.
mod diff;

use hermetic_sdk::fs::{WORKSPACE, display_path, io_error, resolve_in};
use hermetic_sdk::{Context, Tool, ToolError, Value, json};

/// Largest file patched (the whole file is held in memory, twice).
const MAX_PATCH_BYTES: u64 = 8 * 1024 * 1024;
/// Match locations listed when `old_string` is ambiguous.
const MAX_LISTED_MATCHES: usize = 5;
const UTF8_BOM: char = '\u{feff}';
const NOT_FOUND_HINT: &str = "old_string not found. Use read_file to verify the current content, or search_files to locate the text.";

#[derive(serde::Deserialize)]
struct Args {
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    old_string: Option<String>,
    #[serde(default)]
    new_string: Option<String>,
    #[serde(default)]
    replace_all: bool,
}

struct Patch;

impl Tool for Patch {
    type Args = Args;

    fn schema() -> Value {
        json!({
            "name": "patch",
            "description": "Targeted find-and-replace edits in files. Use this instead of sed/awk. Finds a unique string and replaces it; matching is exact (whitespace and indentation included), so copy old_string from read_file output without the 'LINE_NUM|' prefix. Returns a unified diff.",
            "parameters": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "path": {"type": "string", "description": "File path to edit."},
                    "old_string": {"type": "string", "description": "Exact text to find and replace. Must be unique in the file unless replace_all=true. Include surrounding context lines to ensure uniqueness."},
                    "new_string": {"type": "string", "description": "Replacement text. Pass empty string '' to delete the matched text."},
                    "replace_all": {"type": "boolean", "description": "Replace all occurrences instead of requiring a unique match (default: false)", "default": false}
                },
                "required": ["path", "old_string", "new_string"]
            },
            "output_schema": {
                "type": "object",
                "properties": {
                    "success": {"type": "boolean"},
                    "diff": {"type": "string"},
                    "no_change": {"type": "boolean"},
                    "note": {"type": "string"},
                    "resolved_path": {"type": "string"},
                    "files_modified": {"type": "array", "items": {"type": "string"}}
                }
            }
        })
    }

    fn handle(args: Args, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        match args.mode.as_deref() {
            None | Some("replace") => {}
            Some("patch") => {
                return Err(ToolError::new(
                    "mode='patch' (V4A multi-file patches) is not supported by this patch tool; edit one file at a time with path, old_string and new_string",
                ));
            }
            Some(other) => return Err(ToolError::new(format!("Unknown mode: {other}"))),
        }
        let Some(path) = args.path.filter(|p| !p.is_empty()) else {
            return Err(ToolError::new("path required"));
        };
        let (Some(old), Some(new)) = (args.old_string, args.new_string) else {
            return Err(ToolError::new("old_string and new_string required"));
        };
        patch(WORKSPACE, &path, &old, &new, args.replace_all)
    }
}

hermetic_sdk::export_tool!(
    Patch,
    r#"
name = "patch"
toolset = "file"
description = "Exact find-and-replace in a workspace file, returning a unified diff"
emoji = "🔧"
max_result_chars = 100000
timeout_ms = 30000
memory_mb = 128

[capabilities]
fs = [{ mount = "workspace", access = "rw" }]
"#
);

fn failure(error: String) -> Value {
    json!({"success": false, "error": error})
}

/// Replaces `old` by `new` in `path` (resolved inside the mount at `root`).
fn patch(
    root: &str,
    path: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> hermetic_sdk::Result<Value> {
    let full = resolve_in(root, path)?;
    let shown = display_path(root, &full);

    let meta = match std::fs::metadata(&full) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut v = failure(format!("Failed to read file: {shown} (file not found)"));
            v["_hint"] = Value::String(
                "Check the path with search_files (target='files'), or create the file with write_file."
                    .into(),
            );
            return Ok(v);
        }
        Err(e) => return Err(io_error(&shown, &e)),
    };
    if !meta.is_file() {
        return Ok(failure(format!(
            "Failed to read file: {shown} (not a regular file)"
        )));
    }
    if meta.len() > MAX_PATCH_BYTES {
        return Ok(failure(format!(
            "File is too large to patch ({} bytes, limit is {} MiB). Use write_file to replace it whole.",
            meta.len(),
            MAX_PATCH_BYTES / (1024 * 1024)
        )));
    }
    let raw = std::fs::read(&full).map_err(|e| io_error(&shown, &e))?;
    let Ok(raw) = String::from_utf8(raw) else {
        return Ok(failure(format!(
            "Cannot patch '{shown}': it is not UTF-8 text (binary or another encoding)"
        )));
    };
    let (content, had_bom) = match raw.strip_prefix(UTF8_BOM) {
        Some(rest) => (rest, true),
        None => (raw.as_str(), false),
    };
    let crlf = content[..floor_char_boundary(content, 4096)].contains("\r\n");

    let edit = match find_and_replace(content, old, new, replace_all, crlf) {
        Ok(edit) => edit,
        Err(error) => {
            if is_already_applied(content, old, new, crlf) {
                return Ok(json!({
                    "success": true,
                    "no_change": true,
                    "note": format!(
                        "File already contains the target text — the edit appears to be already applied to {shown}. No write performed; do not re-send this patch."
                    ),
                }));
            }
            let mut v = failure(error.message(&shown));
            if matches!(error, MatchError::NotFound { .. }) {
                v["_hint"] = Value::String(NOT_FOUND_HINT.into());
            }
            return Ok(v);
        }
    };

    let mut data = String::with_capacity(edit.content.len() + 3);
    if had_bom {
        data.push(UTF8_BOM);
    }
    data.push_str(&edit.content);
    std::fs::write(&full, data.as_bytes()).map_err(|e| io_error(&shown, &e))?;
    match std::fs::read(&full) {
        Ok(on_disk) if on_disk == data.as_bytes() => {}
        Ok(_) => {
            return Ok(failure(format!(
                "Post-write verification failed for {shown}: on-disk content differs from intended write. The patch did not persist. Re-read the file and try again."
            )));
        }
        Err(e) => {
            return Ok(failure(format!(
                "Post-write verification failed: could not re-read {shown} ({e})"
            )));
        }
    }

    let diff = diff::replacement_diff(
        content,
        &edit.starts,
        edit.old_len,
        &edit.replacement,
        &shown,
    );
    Ok(json!({
        "success": true,
        "diff": diff,
        "files_modified": [shown],
        "resolved_path": shown,
    }))
}

/// A successful match-and-replace.
#[derive(Debug)]
struct Edit {
    /// The new file content (without BOM).
    content: String,
    /// Byte offsets of the replaced occurrences in the old content.
    starts: Vec<usize>,
    /// Length of the text matched at each offset.
    old_len: usize,
    /// The text put in (line endings matched to the file).
    replacement: String,
}

#[derive(Debug, PartialEq)]
enum MatchError {
    Empty,
    Whitespace,
    Identical,
    NotFound { near: Option<usize> },
    Ambiguous { count: usize, locations: String },
}

impl MatchError {
    fn message(&self, shown: &str) -> String {
        match self {
            MatchError::Empty => "old_string cannot be empty".into(),
            MatchError::Whitespace => {
                "old_string is only whitespace — provide non-blank text to match".into()
            }
            MatchError::Identical => "old_string and new_string are identical".into(),
            MatchError::NotFound { near } => {
                let mut msg = format!(
                    "old_string not found in {shown}: no exact match (whitespace and indentation must match exactly)"
                );
                if let Some(line) = near {
                    msg.push_str(&format!(
                        ". Did you mean the text at L{line}? It matches when leading/trailing whitespace on each line is ignored — copy it exactly from read_file"
                    ));
                }
                msg
            }
            MatchError::Ambiguous { count, locations } => format!(
                "Found {count} matches for old_string. Provide more context to make it unique, or use replace_all=True. Matches:\n{locations}"
            ),
        }
    }
}

/// Exact matching (Hermes's checks, in Hermes's order). In a CRLF file, LF breaks in
/// `old`/`new` are read as CRLF.
fn find_and_replace(
    content: &str,
    old: &str,
    new: &str,
    replace_all: bool,
    crlf: bool,
) -> Result<Edit, MatchError> {
    if old.is_empty() {
        return Err(MatchError::Empty);
    }
    if old.trim().is_empty() {
        return Err(MatchError::Whitespace);
    }
    if old == new {
        return Err(MatchError::Identical);
    }
    let mut needle = old.to_owned();
    let mut starts: Vec<usize> = content.match_indices(old).map(|(i, _)| i).collect();
    if starts.is_empty() && crlf && old.contains('\n') {
        needle = to_crlf(old);
        starts = content
            .match_indices(needle.as_str())
            .map(|(i, _)| i)
            .collect();
    }
    if starts.is_empty() {
        return Err(MatchError::NotFound {
            near: line_trimmed_match(content, old),
        });
    }
    if starts.len() > 1 && !replace_all {
        return Err(MatchError::Ambiguous {
            count: starts.len(),
            locations: match_locations(content, &starts),
        });
    }
    let replacement = if crlf { to_crlf(new) } else { new.to_owned() };
    let mut out = String::with_capacity(content.len() + starts.len() * replacement.len());
    let mut pos = 0;
    for &s in &starts {
        out.push_str(&content[pos..s]);
        out.push_str(&replacement);
        pos = s + needle.len();
    }
    out.push_str(&content[pos..]);
    Ok(Edit {
        content: out,
        starts,
        old_len: needle.len(),
        replacement,
    })
}

/// Every line break as CRLF.
fn to_crlf(text: &str) -> String {
    text.replace("\r\n", "\n")
        .replace('\r', "\n")
        .replace('\n', "\r\n")
}

/// `  L<line>: <snippet>` rows for the first matches (Hermes `_format_match_locations`).
fn match_locations(content: &str, starts: &[usize]) -> String {
    let mut rows: Vec<String> = starts
        .iter()
        .take(MAX_LISTED_MATCHES)
        .map(|&start| {
            let line_no = content[..start].matches('\n').count() + 1;
            let line_start = content[..start].rfind('\n').map_or(0, |i| i + 1);
            let line_end = content[line_start..]
                .find('\n')
                .map_or(content.len(), |i| line_start + i);
            let snippet = content[line_start..line_end].trim();
            let snippet = if snippet.chars().count() > 80 {
                format!("{}...", snippet.chars().take(77).collect::<String>())
            } else {
                snippet.to_owned()
            };
            format!("  L{line_no}: {snippet}")
        })
        .collect();
    if starts.len() > MAX_LISTED_MATCHES {
        rows.push(format!(
            "  ... and {} more",
            starts.len() - MAX_LISTED_MATCHES
        ));
    }
    rows.join("\n")
}

/// The 1-based line where `old` would match if each line's surrounding whitespace were
/// ignored (Hermes's second strategy, offered here only as a hint).
fn line_trimmed_match(content: &str, old: &str) -> Option<usize> {
    let want: Vec<&str> = old.lines().map(str::trim).collect();
    if want.is_empty() || want.iter().all(|l| l.is_empty()) {
        return None;
    }
    let have: Vec<&str> = content.lines().map(str::trim).collect();
    (0..have.len().checked_sub(want.len())? + 1)
        .find(|&i| have[i..i + want.len()] == want[..])
        .map(|i| i + 1)
}

/// Hermes's `is_already_applied`: a re-sent edit whose (non-trivial) new text is already
/// in the file and whose old text is gone.
fn is_already_applied(content: &str, old: &str, new: &str, crlf: bool) -> bool {
    if new.trim().chars().count() < 8 {
        return false;
    }
    let contains = |s: &str| content.contains(s) || (crlf && content.contains(&to_crlf(s)));
    if !contains(new) {
        return false;
    }
    old == new || !contains(old)
}

/// The largest char boundary of `s` at or below `index`.
fn floor_char_boundary(s: &str, index: usize) -> usize {
    let mut i = index.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn setup(name: &str, data: &[u8]) -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(name), data).unwrap();
        let root = dir.path().to_str().unwrap().to_owned();
        (dir, root)
    }

    #[test]
    fn replaces_a_unique_match_and_returns_a_diff() {
        let (d, root) = setup("a.py", b"def foo():\n    return 1\n");
        let v = patch(&root, "a.py", "return 1", "return 2", false).unwrap();
        assert_eq!(v["success"], true);
        assert_eq!(v["files_modified"], json!(["a.py"]));
        assert_eq!(
            v["diff"],
            "--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n def foo():\n-    return 1\n+    return 2\n"
        );
        let on_disk = std::fs::read_to_string(d.path().join("a.py")).unwrap();
        assert_eq!(on_disk, "def foo():\n    return 2\n");
    }

    #[test]
    fn ambiguous_matches_need_replace_all() {
        let (d, root) = setup("a.txt", b"x = 1\ny = 1\n");
        let v = patch(&root, "a.txt", "1", "2", false).unwrap();
        assert_eq!(v["success"], false);
        assert_eq!(
            v["error"],
            "Found 2 matches for old_string. Provide more context to make it unique, or use replace_all=True. Matches:\n  L1: x = 1\n  L2: y = 1"
        );
        let v = patch(&root, "a.txt", "1", "2", true).unwrap();
        assert_eq!(v["success"], true);
        assert_eq!(
            std::fs::read_to_string(d.path().join("a.txt")).unwrap(),
            "x = 2\ny = 2\n"
        );
    }

    #[test]
    fn clear_errors() {
        let (_d, root) = setup("a.txt", b"hello world\n    indented line\n");
        let err =
            |old: &str, new: &str| patch(&root, "a.txt", old, new, false).unwrap()["error"].clone();
        assert_eq!(err("", "x"), "old_string cannot be empty");
        assert_eq!(
            err("  \n", "x"),
            "old_string is only whitespace — provide non-blank text to match"
        );
        assert_eq!(
            err("hello", "hello"),
            "old_string and new_string are identical"
        );
        let v = patch(&root, "a.txt", "goodbye", "x", false).unwrap();
        assert!(
            v["error"]
                .as_str()
                .unwrap()
                .starts_with("old_string not found in a.txt")
        );
        assert_eq!(v["_hint"], NOT_FOUND_HINT);
        let e = err("hello world\n  indented line", "x");
        assert!(
            e.as_str().unwrap().contains("Did you mean the text at L1?"),
            "{e}"
        );
        let v = patch(&root, "missing.txt", "a", "b", false).unwrap();
        assert_eq!(
            v["error"],
            "Failed to read file: missing.txt (file not found)"
        );
        assert!(patch(&root, "../x", "a", "b", false).is_err());
    }

    #[test]
    fn already_applied_edits_are_a_no_op() {
        let (_d, root) = setup("a.txt", b"value = compute_total()\n");
        let v = patch(
            &root,
            "a.txt",
            "value = compute_sum()",
            "value = compute_total()",
            false,
        )
        .unwrap();
        assert_eq!(v["success"], true);
        assert_eq!(v["no_change"], true);
        let v = patch(&root, "a.txt", "compute_total()", "compute_total()", false).unwrap();
        assert_eq!(v["no_change"], true);
    }

    #[test]
    fn crlf_and_bom_are_kept() {
        let (d, root) = setup("w.txt", b"\xef\xbb\xbfa\r\nb\r\nc\r\n");
        let v = patch(&root, "w.txt", "a\nb\n", "a\nB\nextra\n", false).unwrap();
        assert_eq!(v["success"], true, "{v}");
        assert_eq!(
            std::fs::read(d.path().join("w.txt")).unwrap(),
            b"\xef\xbb\xbfa\r\nB\r\nextra\r\nc\r\n"
        );
    }

    #[test]
    fn listing_is_capped() {
        let content = "k\n".repeat(7);
        let starts: Vec<usize> = content.match_indices('k').map(|(i, _)| i).collect();
        let rows = match_locations(&content, &starts);
        assert!(rows.ends_with("  ... and 2 more"));
        assert_eq!(floor_char_boundary("é", 1), 0);
    }
}
