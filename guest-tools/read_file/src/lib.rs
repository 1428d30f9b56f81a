//! Tool `read_file`: a workspace text file with line numbers and pagination.
//!
//! Re-creates Hermes's `read_file` (tools/file_tools.py `read_file_tool` and
//! tools/file_operations.py `ShellFileOperations._read_file_native` /
//! `_assemble_read_result`): `N|content` lines, `offset`/`limit` paging (limit capped at
//! 2000 lines), lines clamped at 2000 characters, a 100K-character guard on one read,
//! binary refusal by extension and by content (with a UTF-16 rescue), and "did you mean"
//! names when the file is missing.
use hermetic_sdk::fs::{WORKSPACE, display_path, io_error, resolve_in};
use hermetic_sdk::{Context, Tool, Value, json};
use serde::Serialize;
use std::io::{ErrorKind, Read};
use std::path::Path;

/// Default first line (1-indexed).
const DEFAULT_OFFSET: i64 = 1;
/// Default page length (the schema's default).
const DEFAULT_LIMIT: i64 = 500;
/// Most lines one read returns (Hermes `tool_output.max_lines`).
const MAX_LINES: i64 = 2000;
/// Longest line shown before it is clamped (Hermes `tool_output.max_line_length`).
const MAX_LINE_LENGTH: usize = 2000;
/// Bytes of a line kept while scanning: enough for MAX_LINE_LENGTH 4-byte characters plus
/// one, so every over-long line still trips the character clamp.
const LINE_CLAMP_BYTES: usize = 4 * MAX_LINE_LENGTH + 1;
/// Largest formatted read returned (Hermes `_DEFAULT_MAX_READ_CHARS`).
const MAX_READ_CHARS: usize = 100_000;
/// Above this size a wide, truncated read gets a "read less" hint.
const LARGE_FILE_HINT_BYTES: u64 = 512_000;
/// Bytes sampled for binary detection.
const BINARY_SAMPLE_BYTES: u64 = 1000;
/// UTF-16 files larger than this are refused rather than transcoded.
const UTF16_MAX_BYTES: u64 = 10 * 1024 * 1024;
/// Bytes sampled by the UTF-16 zero-parity heuristic.
const UTF16_SAMPLE_BYTES: usize = 512;
/// Directory entries considered for "similar files".
const SIMILAR_SCAN_ENTRIES: usize = 50;

#[derive(serde::Deserialize)]
struct Args {
    #[serde(default)]
    path: String,
    #[serde(default)]
    offset: Option<Value>,
    #[serde(default)]
    limit: Option<Value>,
}

struct ReadFile;

impl Tool for ReadFile {
    type Args = Args;

    fn schema() -> Value {
        json!({
            "name": "read_file",
            "description": "Read a text file with line numbers and pagination. Use this instead of cat/head/tail. Output format: 'LINE_NUM|CONTENT'. Suggests similar filenames if not found. Use offset and limit for large files. Reads exceeding ~100K characters are rejected; use offset and limit to read specific sections of large files. NOTE: Cannot read images or other binary files.",
            "parameters": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "path": {"type": "string", "description": "Path to the file to read (relative to the workspace, or absolute under /workspace)"},
                    "offset": {"type": "integer", "description": "Line number to start reading from (1-indexed, default: 1)", "default": 1, "minimum": 1},
                    "limit": {"type": "integer", "description": "Maximum number of lines to read (default: 500, max: 2000)", "default": 500, "maximum": 2000}
                },
                "required": ["path"]
            },
            "output_schema": {
                "type": "object",
                "properties": {
                    "content": {"type": "string"},
                    "total_lines": {"type": "integer"},
                    "file_size": {"type": "integer"},
                    "truncated": {"type": "boolean"},
                    "hint": {"type": "string"},
                    "is_binary": {"type": "boolean"},
                    "is_image": {"type": "boolean"},
                    "similar_files": {"type": "array", "items": {"type": "string"}}
                }
            }
        })
    }

    fn handle(args: Args, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        let (offset, limit) = normalize_pagination(args.offset.as_ref(), args.limit.as_ref());
        read_file(WORKSPACE, &args.path, offset, limit)
    }
}

hermetic_sdk::export_tool!(
    ReadFile,
    r#"
name = "read_file"
toolset = "file"
description = "Read a workspace text file with line numbers and pagination"
emoji = "📖"
max_result_chars = 100000
timeout_ms = 30000
memory_mb = 128

[capabilities]
fs = [{ mount = "workspace", access = "ro" }]
"#
);

/// Hermes's result record (`ReadResult.to_dict`: `None` fields and empty lists omitted).
#[derive(Serialize, Default, Debug)]
struct ReadResult {
    content: String,
    total_lines: u64,
    file_size: u64,
    truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<String>,
    is_binary: bool,
    is_image: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    similar_files: Vec<String>,
}

impl ReadResult {
    fn into_value(self) -> hermetic_sdk::Result<Value> {
        Ok(serde_json::to_value(self)?)
    }
}

/// Best-effort integer like Python's `int(value)`; `default` when it is not one.
fn coerce_int(value: Option<&Value>, default: i64) -> i64 {
    match value {
        Some(Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.is_finite()).map(|f| f as i64))
            .unwrap_or(default),
        Some(Value::String(s)) => s.trim().parse().unwrap_or(default),
        Some(Value::Bool(b)) => i64::from(*b),
        _ => default,
    }
}

/// `(offset, limit)` clamped like Hermes's `normalize_read_pagination`.
fn normalize_pagination(offset: Option<&Value>, limit: Option<&Value>) -> (u64, u64) {
    let offset = coerce_int(offset, DEFAULT_OFFSET).max(1);
    let limit = coerce_int(limit, DEFAULT_LIMIT).clamp(1, MAX_LINES);
    (offset.unsigned_abs(), limit.unsigned_abs())
}

/// Reads `path` (resolved inside the mount at `root`) from line `offset`, `limit` lines.
fn read_file(root: &str, path: &str, offset: u64, limit: u64) -> hermetic_sdk::Result<Value> {
    let full = resolve_in(root, path)?;
    let shown = display_path(root, &full);

    if let Some(ext) = binary_extension(&full) {
        return Ok(json!({
            "error": format!(
                "Cannot read binary file '{shown}' ({ext}). Binary files cannot be displayed as text."
            )
        }));
    }

    let meta = match std::fs::metadata(&full) {
        Ok(meta) => meta,
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            return ReadResult {
                error: Some(format!("File not found: {shown}")),
                similar_files: similar_files(root, &full),
                ..ReadResult::default()
            }
            .into_value();
        }
        Err(e) => return Err(io_error(&shown, &e)),
    };
    if !meta.is_file() {
        return ReadResult {
            error: Some(format!(
                "Cannot read '{shown}': not a regular file (directory, FIFO, socket, or device). Reading it could block indefinitely."
            )),
            ..ReadResult::default()
        }
        .into_value();
    }
    let file_size = meta.len();

    let open = || std::fs::File::open(&full).map_err(|e| io_error(&shown, &e));
    let mut sample = Vec::new();
    open()?
        .take(BINARY_SAMPLE_BYTES)
        .read_to_end(&mut sample)
        .map_err(|e| io_error(&shown, &e))?;
    if is_likely_binary(&sample) {
        if file_size <= UTF16_MAX_BYTES {
            let data = std::fs::read(&full).map_err(|e| io_error(&shown, &e))?;
            if let Some((text, encoding)) = decode_utf16(&data) {
                return utf16_result(&text, encoding, offset, limit, file_size).into_value();
            }
        }
        return ReadResult {
            is_binary: true,
            file_size,
            error: Some(describe_binary(&sample, file_size)),
            ..ReadResult::default()
        }
        .into_value();
    }

    let end_line = offset.saturating_add(limit - 1);
    let page = scan_page(open()?, offset, end_line).map_err(|e| io_error(&shown, &e))?;
    let result = assemble(page, offset, end_line, file_size);

    let content_chars = result.content.chars().count();
    if content_chars > MAX_READ_CHARS {
        return Ok(json!({
            "error": format!(
                "Read produced {} characters which exceeds the safety limit ({} chars). Use offset and limit to read a smaller range. The file has {} lines total.",
                thousands(content_chars as u64),
                thousands(MAX_READ_CHARS as u64),
                result.total_lines
            ),
            "path": shown,
            "total_lines": result.total_lines,
            "file_size": file_size,
        }));
    }
    let large = file_size > LARGE_FILE_HINT_BYTES && limit > 200 && result.truncated;
    let mut value = result.into_value()?;
    if large && let Some(map) = value.as_object_mut() {
        map.insert(
            "_hint".into(),
            Value::String(format!(
                "This file is large ({} bytes). Consider reading only the section you need with offset and limit to keep context usage efficient.",
                thousands(file_size)
            )),
        );
    }
    Ok(value)
}

/// The page `offset..=end_line` of a file, read in one streaming pass.
#[derive(Debug, Default, PartialEq)]
struct Page {
    /// Lines of the page (without newline), each clamped to `LINE_CLAMP_BYTES` bytes.
    lines: Vec<Vec<u8>>,
    /// Lines in the whole file; a last line without a newline counts.
    total_lines: u64,
}

/// Streams `reader` once: collects the page's lines and counts all lines, never holding
/// more than one clamped line (so a huge single-line file costs no memory).
fn scan_page(mut reader: impl Read, offset: u64, end_line: u64) -> std::io::Result<Page> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut page = Page::default();
    let mut lineno: u64 = 1;
    let mut kept: Vec<u8> = Vec::new();
    let mut partial = false;
    let mut newlines: u64 = 0;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = &buf[..n];
        if lineno > end_line {
            // Past the page: only the count and the trailing byte matter.
            let count = chunk.iter().filter(|&&b| b == b'\n').count() as u64;
            newlines += count;
            lineno += count;
            partial = chunk.last() != Some(&b'\n');
            continue;
        }
        let mut pos = 0;
        while pos < n {
            let in_page = (offset..=end_line).contains(&lineno);
            match chunk[pos..].iter().position(|&b| b == b'\n') {
                None => {
                    if in_page {
                        keep(&mut kept, &chunk[pos..]);
                    }
                    partial = true;
                    pos = n;
                }
                Some(i) => {
                    if in_page {
                        keep(&mut kept, &chunk[pos..pos + i]);
                        page.lines.push(std::mem::take(&mut kept));
                    }
                    kept.clear();
                    newlines += 1;
                    lineno += 1;
                    partial = false;
                    pos += i + 1;
                }
            }
        }
    }
    page.total_lines = newlines;
    if partial {
        page.total_lines += 1;
        if (offset..=end_line).contains(&lineno) {
            page.lines.push(kept);
        }
    }
    Ok(page)
}

fn keep(kept: &mut Vec<u8>, bytes: &[u8]) {
    let room = LINE_CLAMP_BYTES.saturating_sub(kept.len());
    kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
}

/// Hermes's `_assemble_read_result`: BOM strip, empty-file and past-the-end notes,
/// pagination hint, line numbers.
fn assemble(page: Page, offset: u64, end_line: u64, file_size: u64) -> ReadResult {
    let total_lines = page.total_lines;
    if file_size == 0 {
        return ReadResult {
            hint: Some("File is empty (0 bytes).".into()),
            ..ReadResult::default()
        };
    }
    if offset > total_lines && total_lines > 0 {
        return ReadResult {
            total_lines,
            file_size,
            hint: Some(format!(
                "Note: offset {offset} is beyond the end of the file ({total_lines} lines total). Retry with offset <= {total_lines}."
            )),
            ..ReadResult::default()
        };
    }
    let mut lines: Vec<String> = page
        .lines
        .iter()
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect();
    if offset == 1
        && let Some(first) = lines.first_mut()
        && first.starts_with('\u{feff}')
    {
        first.remove(0);
    }
    let truncated = total_lines > end_line;
    ReadResult {
        content: number_lines(&lines, offset),
        total_lines,
        file_size,
        truncated,
        hint: truncated.then(|| {
            format!(
                "Use offset={} to continue reading (showing {offset}-{end_line} of {total_lines} lines)",
                end_line + 1
            )
        }),
        ..ReadResult::default()
    }
}

/// Hermes's `_add_line_numbers`: a compact `N|` gutter, long lines clamped.
fn number_lines(lines: &[String], start: u64) -> String {
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("{}|", start + i as u64));
        match line.char_indices().nth(MAX_LINE_LENGTH) {
            Some((cut, _)) => {
                out.push_str(&line[..cut]);
                out.push_str("... [truncated]");
            }
            None => out.push_str(line),
        }
    }
    out
}

/// Byte-layer binary detection: text iff valid UTF-8 without NULs, allowing one
/// incomplete multibyte sequence at the very end (cut by the sample boundary).
fn is_likely_binary(sample: &[u8]) -> bool {
    if sample.contains(&0) {
        return true;
    }
    match std::str::from_utf8(sample) {
        Ok(_) => false,
        Err(e) => e.error_len().is_some(),
    }
}

/// UTF-16 text (by BOM, or by zero bytes all at odd / all at even offsets), decoded.
fn decode_utf16(data: &[u8]) -> Option<(String, &'static str)> {
    let sample = &data[..data.len().min(UTF16_SAMPLE_BYTES)];
    let little = if sample.starts_with(&[0xFF, 0xFE]) {
        true
    } else if sample.starts_with(&[0xFE, 0xFF]) {
        false
    } else {
        let odd = sample
            .iter()
            .skip(1)
            .step_by(2)
            .filter(|&&b| b == 0)
            .count();
        let even = sample.iter().step_by(2).filter(|&&b| b == 0).count();
        if even == 0 && odd >= 2 {
            true
        } else if odd == 0 && even >= 2 {
            false
        } else {
            return None;
        }
    };
    let units: Vec<u16> = data
        .chunks_exact(2)
        .map(|p| {
            if little {
                u16::from_le_bytes([p[0], p[1]])
            } else {
                u16::from_be_bytes([p[0], p[1]])
            }
        })
        .collect();
    let mut text = String::from_utf16_lossy(&units);
    if data.len() % 2 == 1 {
        text.push('\u{fffd}');
    }
    if text.starts_with('\u{feff}') {
        text.remove(0);
    }
    Some((text, if little { "UTF-16-LE" } else { "UTF-16-BE" }))
}

fn utf16_result(text: &str, encoding: &str, offset: u64, limit: u64, size: u64) -> ReadResult {
    let text = text.replace("\r\n", "\n");
    let mut all: Vec<&str> = text.split('\n').collect();
    if text.ends_with('\n') {
        all.pop();
    }
    let total_lines = all.len() as u64;
    let end_line = offset.saturating_add(limit - 1);
    let lines: Vec<String> = all
        .iter()
        .skip(usize::try_from(offset - 1).unwrap_or(usize::MAX))
        .take(usize::try_from(limit).unwrap_or(usize::MAX))
        .map(|s| (*s).to_owned())
        .collect();
    let truncated = total_lines > end_line;
    let mut hint = format!(
        "Transcoded from {encoding} to UTF-8 for display. Text edits via patch/write_file would re-encode as UTF-8."
    );
    if truncated {
        hint.push_str(&format!(
            " Use offset={} to continue reading (showing {offset}-{end_line} of {total_lines} lines)",
            end_line + 1
        ));
    }
    ReadResult {
        content: number_lines(&lines, offset),
        total_lines,
        file_size: size,
        truncated,
        hint: Some(hint),
        ..ReadResult::default()
    }
}

/// Hermes's `describe_binary_file`: "Binary file (PNG image data, 4.1 KB) — ...".
fn describe_binary(sample: &[u8], size: u64) -> String {
    const MAGIC: &[(&[u8], &str)] = &[
        (b"\x89PNG\r\n\x1a\n", "PNG image data"),
        (b"\xff\xd8\xff", "JPEG image data"),
        (b"GIF87a", "GIF image data"),
        (b"GIF89a", "GIF image data"),
        (b"RIFF", "RIFF container (WAV/AVI/WebP family)"),
        (b"%PDF-", "PDF document"),
        (b"PK\x03\x04", "ZIP archive (also docx/xlsx/jar/apk)"),
        (b"PK\x05\x06", "ZIP archive (empty)"),
        (b"\x1f\x8b", "gzip compressed data"),
        (b"BZh", "bzip2 compressed data"),
        (b"\xfd7zXZ\x00", "xz compressed data"),
        (b"7z\xbc\xaf\x27\x1c", "7-Zip archive"),
        (b"\x7fELF", "ELF executable"),
        (b"\0asm", "WebAssembly binary"),
        (b"MZ", "Windows PE executable"),
        (b"\xcf\xfa\xed\xfe", "Mach-O executable (64-bit)"),
        (b"\xca\xfe\xba\xbe", "Mach-O universal binary / Java class"),
        (b"SQLite format 3\x00", "SQLite database"),
        (b"OggS", "Ogg container"),
        (b"fLaC", "FLAC audio"),
        (b"ID3", "MP3 audio (ID3 tag)"),
        (b"\x00\x00\x00", "ISO media container (MP4/MOV family)"),
        (b"BM", "BMP image data"),
        (b"II*\x00", "TIFF image data (little-endian)"),
        (b"MM\x00*", "TIFF image data (big-endian)"),
    ];
    let kind = MAGIC
        .iter()
        .find(|(prefix, name)| {
            sample.starts_with(prefix)
                && (!name.starts_with("ISO media") || sample.get(4..8) == Some(b"ftyp"))
        })
        .map_or("unknown binary", |(_, name)| name);
    let size = if size >= 1024 * 1024 {
        format!("{:.1} MB", size as f64 / (1024.0 * 1024.0))
    } else if size >= 1024 {
        format!("{:.1} KB", size as f64 / 1024.0)
    } else {
        format!("{size} bytes")
    };
    format!("Binary file ({kind}, {size}) — cannot display as text.")
}

/// Extensions never read as text (Hermes tools/binary_extensions.py).
const BINARY_EXTENSIONS: &[&str] = &[
    "png", "jpg", "jpeg", "gif", "bmp", "ico", "webp", "tiff", "tif", // images
    "mp4", "mov", "avi", "mkv", "webm", "wmv", "flv", "m4v", "mpeg", "mpg", // video
    "mp3", "wav", "ogg", "flac", "aac", "m4a", "wma", "aiff", "opus", // audio
    "zip", "tar", "gz", "bz2", "7z", "rar", "xz", "z", "tgz", "iso", // archives
    "exe", "dll", "so", "dylib", "bin", "o", "a", "obj", "lib", "app", "msi", "deb", "rpm", "doc",
    "docx", "xls", "xlsx", "ppt", "pptx", "odt", "ods", "odp", // documents
    "ttf", "otf", "woff", "woff2", "eot", // fonts
    "pyc", "pyo", "class", "jar", "war", "ear", "node", "wasm", "rlib", // bytecode
    "sqlite", "sqlite3", "db", "mdb", "idx", // databases
    "psd", "ai", "eps", "sketch", "fig", "xd", "blend", "3ds", "max", // design
    "swf", "fla", "lockb", "dat", "data",
];

/// The path's extension (with its dot, lowercased) when it names a binary format.
fn binary_extension(path: &Path) -> Option<String> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    BINARY_EXTENSIONS
        .contains(&ext.as_str())
        .then(|| format!(".{ext}"))
}

/// Up to 5 names near `missing` in its directory, best first (Hermes
/// `_suggest_similar_files`), as workspace-relative paths.
fn similar_files(root: &str, missing: &Path) -> Vec<String> {
    let (Some(dir), Some(name)) = (missing.parent(), missing.file_name()) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    names.sort();
    names.truncate(SIMILAR_SCAN_ENTRIES);
    let wanted = name.to_string_lossy().to_lowercase();
    let mut scored: Vec<(u32, String)> = names
        .into_iter()
        .filter_map(|n| {
            let score = similarity_score(&wanted, &n.to_lowercase());
            (score > 0).then(|| (score, display_path(root, &dir.join(&n))))
        })
        .collect();
    scored.sort_by_key(|s| std::cmp::Reverse(s.0));
    scored.into_iter().take(5).map(|(_, p)| p).collect()
}

/// Hermes's scoring of a directory entry `candidate` against the missing name (both
/// lowercased): exact, same stem, prefix, substring, shared extension, near-miss spelling.
fn similarity_score(wanted: &str, candidate: &str) -> u32 {
    let (stem_w, ext_w) = split_ext(wanted);
    let (stem_c, ext_c) = split_ext(candidate);
    let mut score = if candidate == wanted {
        100
    } else if stem_c == stem_w {
        90
    } else if candidate.starts_with(wanted) || wanted.starts_with(candidate) {
        70
    } else if candidate.contains(wanted) {
        60
    } else if wanted.contains(candidate) && candidate.chars().count() > 2 {
        40
    } else if !ext_w.is_empty() && ext_c == ext_w {
        let common = wanted
            .chars()
            .filter(|c| candidate.contains(*c))
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        let longest = wanted.chars().count().max(candidate.chars().count());
        if common as f64 >= longest as f64 * 0.4 {
            30
        } else {
            0
        }
    } else {
        0
    };
    if score == 0 && similarity_ratio(wanted, candidate) >= 0.8 {
        score = 50;
    }
    score
}

/// `(stem, extension-with-dot)` like Python's `os.path.splitext` (a leading dot is
/// part of the stem).
fn split_ext(name: &str) -> (&str, &str) {
    match name.rfind('.') {
        Some(i) if name[..i].chars().any(|c| c != '.') => (&name[..i], &name[i..]),
        _ => (name, ""),
    }
}

/// `2 * LCS / (len_a + len_b)`: close to difflib's `SequenceMatcher.ratio()` for names.
fn similarity_ratio(a: &str, b: &str) -> f64 {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let mut prev = vec![0usize; b.len() + 1];
    for ca in &a {
        let mut cur = vec![0usize; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = if ca == cb {
                prev[j] + 1
            } else {
                prev[j + 1].max(cur[j])
            };
        }
        prev = cur;
    }
    2.0 * prev[b.len()] as f64 / (a.len() + b.len()) as f64
}

/// `1234567` → `"1,234,567"` (Python's `{:,}`).
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn setup(files: &[(&str, &[u8])]) -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        for (name, data) in files {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, data).unwrap();
        }
        let root = dir.path().to_str().unwrap().to_owned();
        (dir, root)
    }

    #[test]
    fn numbers_lines_and_counts_them() {
        let (_d, root) = setup(&[("a.txt", b"one\ntwo\nthree\n")]);
        let v = read_file(&root, "a.txt", 1, 500).unwrap();
        assert_eq!(v["content"], "1|one\n2|two\n3|three");
        assert_eq!(v["total_lines"], 3);
        assert_eq!(v["file_size"], 14);
        assert_eq!(v["truncated"], false);
        assert!(v.get("hint").is_none());
    }

    #[test]
    fn last_line_without_newline_counts() {
        let (_d, root) = setup(&[("a.txt", b"one\ntwo")]);
        let v = read_file(&root, "a.txt", 1, 500).unwrap();
        assert_eq!(v["content"], "1|one\n2|two");
        assert_eq!(v["total_lines"], 2);
    }

    #[test]
    fn paginates_with_a_hint() {
        let body: String = (1..=10).map(|i| format!("l{i}\n")).collect();
        let (_d, root) = setup(&[("a.txt", body.as_bytes())]);
        let v = read_file(&root, "a.txt", 3, 4).unwrap();
        assert_eq!(v["content"], "3|l3\n4|l4\n5|l5\n6|l6");
        assert_eq!(v["truncated"], true);
        assert_eq!(
            v["hint"],
            "Use offset=7 to continue reading (showing 3-6 of 10 lines)"
        );
        let v = read_file(&root, "a.txt", 11, 4).unwrap();
        assert_eq!(v["content"], "");
        assert!(v["hint"].as_str().unwrap().contains("beyond the end"));
    }

    #[test]
    fn pagination_is_clamped_and_coerced() {
        assert_eq!(normalize_pagination(None, None), (1, 500));
        assert_eq!(
            normalize_pagination(Some(&json!(0)), Some(&json!(99999))),
            (1, 2000)
        );
        assert_eq!(
            normalize_pagination(Some(&json!("7")), Some(&json!(-3))),
            (7, 1)
        );
        assert_eq!(
            normalize_pagination(Some(&json!("x")), Some(&json!(2.9))),
            (1, 2)
        );
    }

    #[test]
    fn long_lines_are_clamped() {
        let long = "é".repeat(MAX_LINE_LENGTH + 50);
        let (_d, root) = setup(&[("a.txt", long.as_bytes())]);
        let v = read_file(&root, "a.txt", 1, 10).unwrap();
        let content = v["content"].as_str().unwrap();
        assert!(content.ends_with("... [truncated]"));
        assert_eq!(
            content.chars().count(),
            2 + MAX_LINE_LENGTH + "... [truncated]".len()
        );
    }

    #[test]
    fn scan_keeps_counting_past_the_page_across_chunks() {
        let body: String = (0..100_000).map(|i| format!("{i}\n")).collect();
        let page = scan_page(body.as_bytes(), 2, 3).unwrap();
        assert_eq!(page.lines, vec![b"1".to_vec(), b"2".to_vec()]);
        assert_eq!(page.total_lines, 100_000);
    }

    #[test]
    fn empty_file_and_bom() {
        let (_d, root) = setup(&[("e.txt", b""), ("b.txt", b"\xef\xbb\xbfhi\n")]);
        let v = read_file(&root, "e.txt", 1, 10).unwrap();
        assert_eq!(v["hint"], "File is empty (0 bytes).");
        let v = read_file(&root, "b.txt", 1, 10).unwrap();
        assert_eq!(v["content"], "1|hi");
    }

    #[test]
    fn missing_file_suggests_similar_names() {
        let (_d, root) = setup(&[("src/config.yaml", b"x"), ("src/other.rs", b"y")]);
        let v = read_file(&root, "src/config.yml", 1, 10).unwrap();
        assert_eq!(v["error"], "File not found: src/config.yml");
        assert_eq!(v["similar_files"], json!(["src/config.yaml"]));
        let v = read_file(&root, "nodir/x.txt", 1, 10).unwrap();
        assert_eq!(v["error"], "File not found: nodir/x.txt");
        assert!(v.get("similar_files").is_none());
    }

    #[test]
    fn binary_files_are_refused() {
        let (_d, root) = setup(&[
            ("pic.png", b"\x89PNG\r\n\x1a\n...."),
            ("blob", b"\x7fELF\x02\x01\x01\0\0\0"),
        ]);
        let v = read_file(&root, "pic.png", 1, 10).unwrap();
        assert!(
            v["error"]
                .as_str()
                .unwrap()
                .contains("Cannot read binary file 'pic.png' (.png)")
        );
        let v = read_file(&root, "blob", 1, 10).unwrap();
        assert_eq!(v["is_binary"], true);
        assert_eq!(
            v["error"],
            "Binary file (ELF executable, 10 bytes) — cannot display as text."
        );
    }

    #[test]
    fn utf16_is_transcoded() {
        let mut data = vec![0xFF, 0xFE];
        for u in "hi\r\nthere\r\n".encode_utf16() {
            data.extend_from_slice(&u.to_le_bytes());
        }
        let (_d, root) = setup(&[("w.txt", &data)]);
        let v = read_file(&root, "w.txt", 1, 10).unwrap();
        assert_eq!(v["content"], "1|hi\n2|there");
        assert!(
            v["hint"]
                .as_str()
                .unwrap()
                .starts_with("Transcoded from UTF-16-LE")
        );
    }

    #[test]
    fn directories_and_escapes() {
        let (_d, root) = setup(&[("sub/a.txt", b"x")]);
        let v = read_file(&root, "sub", 1, 10).unwrap();
        assert!(v["error"].as_str().unwrap().contains("not a regular file"));
        assert!(read_file(&root, "../etc/passwd", 1, 10).is_err());
        assert!(read_file(&root, "/etc/passwd", 1, 10).is_err());
    }

    #[test]
    fn oversized_reads_are_rejected() {
        let line = "x".repeat(1999);
        let body: String = (0..60).map(|_| format!("{line}\n")).collect();
        let (_d, root) = setup(&[("big.txt", body.as_bytes())]);
        let v = read_file(&root, "big.txt", 1, 2000).unwrap();
        assert!(
            v["error"]
                .as_str()
                .unwrap()
                .starts_with("Read produced 120,")
        );
        assert_eq!(v["total_lines"], 60);
        assert_eq!(v["path"], "big.txt");
    }

    #[test]
    fn helpers() {
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(999), "999");
        assert_eq!(split_ext(".bashrc"), (".bashrc", ""));
        assert_eq!(split_ext("a.tar.gz"), ("a.tar", ".gz"));
        assert_eq!(similarity_score("agent.md", "agents.md"), 30);
        assert!(is_likely_binary(b"a\0b"));
        assert!(!is_likely_binary("é".as_bytes().get(..1).unwrap()));
        assert!(is_likely_binary(b"\xff\xfeabc"));
    }
}
