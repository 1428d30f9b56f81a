//! Tool `search_files`: regex search in file contents, or glob search of file names,
//! under a workspace directory.
//!
//! Re-creates Hermes's `search_files` (tools/file_tools.py `search_tool` /
//! `SEARCH_FILES_SCHEMA`, tools/file_operations_search.py `SearchMixin._search_with_rg` /
//! `_search_files_rg` / `_parse_search_output` / `_zero_match_probe` /
//! `_path_not_found_result`, tools/file_operations_common.py `SearchResult.to_dict`):
//! the same parameters, output modes and result fields, ripgrep's defaults re-done with
//! `std::fs` (hidden files and dot-directories skipped, symlinks not followed, binary
//! files skipped), Hermes's prune list of dependency/build/cache directories in place of
//! `.gitignore`, and results in path order.
use globset::{GlobBuilder, GlobMatcher};
use hermetic_sdk::fs::{WORKSPACE, display_path, io_error, resolve_in};
use hermetic_sdk::{Context, Tool, ToolError, Value, json};
use regex::{Regex, RegexBuilder};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const DEFAULT_LIMIT: i64 = 50;
/// Characters of a matching line returned (Hermes clamps `content` at 500).
const MAX_MATCH_CHARS: usize = 500;
/// Files larger than this are not searched.
const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// Directory entries visited before the walk stops.
const MAX_ENTRIES_VISITED: usize = 100_000;
/// Characters of paths and line text in one page of results (the host caps results at
/// 100K characters; JSON framing needs the rest).
const MAX_OUTPUT_CHARS: usize = 60_000;
/// Bytes sampled for a NUL when deciding a file is binary.
const BINARY_SAMPLE_BYTES: usize = 8192;
/// Files listed by a zero-match probe.
const PROBE_MAX_FILES: usize = 50;

/// Directory names never descended into below the search root (Hermes
/// agent/search_policy.py `SEARCH_PRUNE_DIR_NAMES`; ripgrep would skip most of them
/// through `.gitignore`, which is not read here).
const PRUNE_DIRS: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    "node_modules",
    "venv",
    ".venv",
    "site-packages",
    "dist-packages",
    "vendor",
    "third_party",
    "build",
    "dist",
    "target",
    "out",
    "coverage",
    ".next",
    ".turbo",
    ".parcel-cache",
    ".nuxt",
    ".svelte-kit",
    ".archive",
    "__pycache__",
    ".cache",
    ".Trash",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".npm",
    ".yarn",
    ".pnpm-store",
    ".gradle",
    ".m2",
    ".nuget",
    "backups",
    "backup",
    ".backups",
];

/// Extensions never searched as text (Hermes tools/binary_extensions.py).
const BINARY_EXTENSIONS: &[&str] = &[
    "png", "jpg", "jpeg", "gif", "bmp", "ico", "webp", "tiff", "tif", "mp4", "mov", "avi", "mkv",
    "webm", "wmv", "flv", "m4v", "mpeg", "mpg", "mp3", "wav", "ogg", "flac", "aac", "m4a", "wma",
    "aiff", "opus", "zip", "tar", "gz", "bz2", "7z", "rar", "xz", "z", "tgz", "iso", "exe", "dll",
    "so", "dylib", "bin", "o", "a", "obj", "lib", "app", "msi", "deb", "rpm", "doc", "docx", "xls",
    "xlsx", "ppt", "pptx", "odt", "ods", "odp", "ttf", "otf", "woff", "woff2", "eot", "pyc", "pyo",
    "class", "jar", "war", "ear", "node", "wasm", "rlib", "sqlite", "sqlite3", "db", "mdb", "idx",
    "psd", "ai", "eps", "sketch", "fig", "xd", "blend", "3ds", "max", "swf", "fla", "lockb", "dat",
    "data",
];

#[derive(serde::Deserialize)]
struct Args {
    #[serde(default)]
    pattern: String,
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    file_glob: Option<String>,
    #[serde(default)]
    limit: Option<Value>,
    #[serde(default)]
    offset: Option<Value>,
    #[serde(default)]
    output_mode: Option<String>,
    #[serde(default)]
    context: Option<Value>,
}

struct SearchFiles;

impl Tool for SearchFiles {
    type Args = Args;

    fn schema() -> Value {
        json!({
            "name": "search_files",
            "description": "Search file contents or find files by name. Use this instead of grep/rg/find/ls.\n\nContent search (target='content'): Regex search inside files. Output modes: full matches with line numbers, file paths only, or match counts.\n\nFile search (target='files'): Find files by glob pattern (e.g., '*.py', '*config*'). Also use this instead of ls — results sorted by path.\n\nHidden files and dependency/build/cache directories (.git, node_modules, target, ...) are skipped unless searched directly.",
            "parameters": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "pattern": {"type": "string", "description": "Regex pattern for content search, or glob pattern (e.g., '*.py') for file search"},
                    "target": {"type": "string", "enum": ["content", "files"], "description": "'content' searches inside file contents, 'files' searches for files by name", "default": "content"},
                    "path": {"type": "string", "description": "Directory or file to search in (default: the workspace root)", "default": "."},
                    "file_glob": {"type": "string", "description": "Filter files by pattern in grep mode (e.g., '*.py' to only search Python files)"},
                    "limit": {"type": "integer", "description": "Maximum number of results to return (default: 50)", "default": 50},
                    "offset": {"type": "integer", "description": "Skip first N results for pagination (default: 0)", "default": 0},
                    "output_mode": {"type": "string", "enum": ["content", "files_only", "count"], "description": "Output format for grep mode: 'content' shows matching lines with line numbers, 'files_only' lists file paths, 'count' shows match counts per file", "default": "content"},
                    "context": {"type": "integer", "description": "Number of context lines before and after each match (grep mode only)", "default": 0}
                },
                "required": ["pattern"]
            },
            "output_schema": {
                "type": "object",
                "properties": {
                    "total_count": {"type": "integer"},
                    "matches": {"type": "array", "items": {
                        "type": "object",
                        "properties": {
                            "path": {"type": "string"},
                            "line": {"type": "integer"},
                            "content": {"type": "string"}
                        }
                    }},
                    "files": {"type": "array", "items": {"type": "string"}},
                    "truncated": {"type": "boolean"},
                    "total_count_is_lower_bound": {"type": "boolean"},
                    "limit_reason": {"type": "string"},
                    "warnings": {"type": "array", "items": {"type": "string"}}
                }
            }
        })
    }

    fn handle(args: Args, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        let request = Request::from_args(args)?;
        search(WORKSPACE, &request)
    }
}

hermetic_sdk::export_tool!(
    SearchFiles,
    r#"
name = "search_files"
toolset = "file"
description = "Regex search in workspace file contents, or glob search of file names"
emoji = "🔎"
max_result_chars = 100000
timeout_ms = 60000
memory_mb = 128

[capabilities]
fs = [{ mount = "workspace", access = "ro" }]
"#
);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Target {
    Content,
    Files,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Content,
    FilesOnly,
    Count,
}

/// A validated call.
#[derive(Debug)]
struct Request {
    pattern: String,
    target: Target,
    path: String,
    file_glob: Option<String>,
    limit: usize,
    offset: usize,
    mode: Mode,
    context: usize,
}

impl Request {
    fn from_args(args: Args) -> hermetic_sdk::Result<Self> {
        let target = match args.target.as_deref().unwrap_or("content") {
            "content" | "grep" => Target::Content,
            "files" | "find" => Target::Files,
            other => {
                return Err(ToolError::new(format!(
                    "target must be 'content' or 'files', got {other:?}"
                )));
            }
        };
        let mode = match args.output_mode.as_deref().unwrap_or("content") {
            "content" => Mode::Content,
            "files_only" => Mode::FilesOnly,
            "count" => Mode::Count,
            other => {
                return Err(ToolError::new(format!(
                    "output_mode must be 'content', 'files_only' or 'count', got {other:?}"
                )));
            }
        };
        let to_usize = |v: i64| usize::try_from(v).unwrap_or(usize::MAX);
        Ok(Request {
            pattern: args.pattern,
            target,
            path: args
                .path
                .filter(|p| !p.trim().is_empty())
                .unwrap_or_else(|| ".".into()),
            file_glob: args.file_glob.filter(|g| !g.is_empty()),
            limit: to_usize(coerce_int(args.limit.as_ref(), DEFAULT_LIMIT).max(1)),
            offset: to_usize(coerce_int(args.offset.as_ref(), 0).max(0)),
            mode,
            context: to_usize(coerce_int(args.context.as_ref(), 0).max(0)),
        })
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

/// One row of content output: a matching (or context) line.
#[derive(Debug, Clone, PartialEq)]
struct Match {
    path: String,
    line: usize,
    content: String,
}

/// Hermes's `SearchResult`.
#[derive(Debug, Default)]
struct SearchResult {
    matches: Vec<Match>,
    files: Vec<String>,
    counts: Vec<(String, usize)>,
    total_count: usize,
    truncated: bool,
    limit_reason: Option<String>,
    warnings: Vec<String>,
    error: Option<String>,
}

impl SearchResult {
    fn error(message: String) -> Self {
        SearchResult {
            error: Some(message),
            ..SearchResult::default()
        }
    }

    /// `SearchResult.to_dict()` plus the truncation hint, in one shape per request
    /// kind: the key the kind reports under (`matches`, `files` or `counts`) is always
    /// there, empty when nothing matched. Hermes densifies five or more matches into a
    /// `matches_text` string; a result whose shape depends on how many matches there
    /// were is one callers must handle twice, so this tool keeps the array.
    fn into_value(self, next_offset: usize, request: &Request) -> Value {
        let mut out = serde_json::Map::new();
        out.insert("total_count".into(), json!(self.total_count));
        match (&request.target, &request.mode) {
            (Target::Files, _) | (Target::Content, Mode::FilesOnly) => {
                out.insert("files".into(), json!(self.files));
            }
            (Target::Content, Mode::Count) => {
                let counts: serde_json::Map<String, Value> = self
                    .counts
                    .into_iter()
                    .map(|(p, n)| (p, json!(n)))
                    .collect();
                out.insert("counts".into(), Value::Object(counts));
            }
            (Target::Content, Mode::Content) => {
                let rows: Vec<Value> = self
                    .matches
                    .iter()
                    .map(|m| json!({"path": m.path, "line": m.line, "content": m.content}))
                    .collect();
                out.insert("matches".into(), Value::Array(rows));
            }
        }
        if self.truncated {
            out.insert("truncated".into(), json!(true));
            out.insert("total_count_is_lower_bound".into(), json!(true));
        }
        if let Some(reason) = self.limit_reason {
            out.insert("limit_reason".into(), json!(reason));
        }
        if !self.warnings.is_empty() {
            out.insert("warning".into(), json!(self.warnings.join(" ")));
        }
        if let Some(error) = self.error {
            out.insert("error".into(), json!(error));
        }
        if self.truncated {
            out.insert(
                "_hint".into(),
                json!(format!(
                    "Results truncated. Use offset={next_offset} to see more, or narrow with a more specific pattern or file_glob."
                )),
            );
        }
        Value::Object(out)
    }
}

/// Runs `request` against the mount rooted at `root`.
fn search(root: &str, request: &Request) -> hermetic_sdk::Result<Value> {
    let start = resolve_in(root, &request.path)?;
    let shown = display_path(root, &start);
    match std::fs::metadata(&start) {
        Ok(_) => {}
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(path_not_found(root, &start).into_value(0, request));
        }
        Err(e) => return Err(io_error(&shown, &e)),
    }
    let result = match request.target {
        Target::Files => search_names(root, &start, request),
        Target::Content => search_content(root, &start, request),
    };
    Ok(result.into_value(request.offset.saturating_add(request.limit), request))
}

/// Hermes's `_path_not_found_result`: the error plus near names in the parent directory.
fn path_not_found(root: &str, start: &Path) -> SearchResult {
    let mut message = format!("Path not found: {}", display_path(root, start));
    if let (Some(parent), Some(name)) = (start.parent(), start.file_name()) {
        let wanted = name.to_string_lossy().to_lowercase();
        let prefix: String = wanted.chars().take(3).collect();
        if let Ok(entries) = std::fs::read_dir(parent) {
            let mut names: Vec<String> = entries
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect();
            names.sort();
            let similar: Vec<String> = names
                .iter()
                .take(20)
                .filter(|n| {
                    let n = n.to_lowercase();
                    n.contains(&wanted) || wanted.contains(&n) || n.starts_with(&prefix)
                })
                .take(5)
                .map(|n| display_path(root, &parent.join(n)))
                .collect();
            if !similar.is_empty() {
                message.push_str(&format!(". Similar paths: {}", similar.join(", ")));
            }
        }
    }
    SearchResult::error(message)
}

/// Files under `start` in path order (ripgrep defaults: no hidden entries unless asked,
/// symlinks not followed; Hermes's prune list below the root).
struct Walk {
    files: Vec<PathBuf>,
    unreadable: usize,
    capped: bool,
}

fn walk(start: &Path, include_hidden: bool) -> Walk {
    let mut out = Walk {
        files: Vec::new(),
        unreadable: 0,
        capped: false,
    };
    match std::fs::metadata(start) {
        Ok(meta) if meta.is_file() => {
            out.files.push(start.to_path_buf());
            return out;
        }
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return out,
        Err(_) => {
            out.unreadable += 1;
            return out;
        }
    }
    // Depth-first in name order, so where the entry cap stops the walk is deterministic.
    let mut visited = 0usize;
    let mut stack: Vec<PathBuf> = vec![start.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            out.unreadable += 1;
            continue;
        };
        let mut children: Vec<(String, PathBuf, std::fs::FileType)> = Vec::new();
        for entry in entries {
            let Ok((entry, kind)) = entry.and_then(|e| e.file_type().map(|k| (e, k))) else {
                out.unreadable += 1;
                continue;
            };
            let name = entry.file_name().to_string_lossy().into_owned();
            let hidden = !include_hidden && name.starts_with('.');
            let pruned = kind.is_dir() && PRUNE_DIRS.contains(&name.as_str());
            if !hidden && !pruned && !kind.is_symlink() {
                children.push((name, entry.path(), kind));
            }
        }
        children.sort_by(|a, b| a.0.cmp(&b.0));
        visited += children.len();
        if visited > MAX_ENTRIES_VISITED {
            out.capped = true;
            break;
        }
        let mut subdirs = Vec::new();
        for (_, path, kind) in children {
            if kind.is_dir() {
                subdirs.push(path);
            } else if kind.is_file() {
                out.files.push(path);
            }
        }
        stack.extend(subdirs.into_iter().rev());
    }
    // Path order compares component by component, so a directory's files stay together.
    out.files.sort();
    out
}

/// A compiled `file_glob`/name glob: `!` negates; without `/` it matches the file name,
/// with one it matches the path below the search root (ripgrep's `--glob`).
struct GlobFilter {
    matcher: GlobMatcher,
    negated: bool,
    on_name: bool,
}

impl GlobFilter {
    fn new(glob: &str) -> Result<Self, String> {
        let (negated, glob) = match glob.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, glob),
        };
        let on_name = !glob.contains('/');
        let glob = glob.trim_start_matches('/');
        let matcher = GlobBuilder::new(glob)
            .literal_separator(!on_name)
            .build()
            .map_err(|e| format!("invalid glob {glob:?}: {e}"))?
            .compile_matcher();
        Ok(GlobFilter {
            matcher,
            negated,
            on_name,
        })
    }

    fn accepts(&self, start: &Path, file: &Path) -> bool {
        let hit = if self.on_name {
            file.file_name().is_some_and(|n| self.matcher.is_match(n))
        } else {
            self.matcher
                .is_match(file.strip_prefix(start).unwrap_or(file))
        };
        hit != self.negated
    }
}

/// `target='files'`: names matching the glob (Hermes `_search_files_rg`: the last path
/// component of the pattern, with `*` put in front unless it starts with one).
fn search_names(root: &str, start: &Path, request: &Request) -> SearchResult {
    let last = request.pattern.rsplit('/').next().unwrap_or("");
    let glob = if last.starts_with('*') {
        last.to_owned()
    } else {
        format!("*{last}")
    };
    let filter = match GlobFilter::new(&glob) {
        Ok(filter) => filter,
        Err(e) => return SearchResult::error(format!("File search failed: {e}")),
    };
    let walked = walk(start, false);
    let wanted = request.offset.saturating_add(request.limit);
    let mut found: Vec<String> = Vec::new();
    for file in &walked.files {
        if filter.accepts(start, file) {
            found.push(display_path(root, file));
            if found.len() > wanted {
                break;
            }
        }
    }
    let mut result = SearchResult {
        total_count: found.len(),
        truncated: found.len() > wanted,
        ..SearchResult::default()
    };
    result.files = page(found, request.offset, request.limit);
    let used: usize = result.files.iter().map(|f| f.chars().count()).sum();
    if used > MAX_OUTPUT_CHARS {
        let mut kept = 0;
        result.files.retain(|f| {
            kept += f.chars().count();
            kept <= MAX_OUTPUT_CHARS
        });
        result.truncated = true;
        result.limit_reason = Some("max_output_chars".into());
    }
    note_walk(&mut result, &walked);
    result
}

fn page<T>(items: Vec<T>, offset: usize, limit: usize) -> Vec<T> {
    items.into_iter().skip(offset).take(limit).collect()
}

fn note_walk(result: &mut SearchResult, walked: &Walk) {
    if walked.capped {
        result.truncated = true;
        result.limit_reason = Some("max_entries_visited".into());
    }
    if walked.unreadable > 0 {
        result.warnings.push(format!(
            "{} file(s) or directories could not be read and were skipped.",
            walked.unreadable
        ));
    }
}

/// True when a newline is wanted: a literal one, or `\n` after an odd run of backslashes
/// (Hermes `_pattern_has_regex_newline`).
fn pattern_has_newline(pattern: &str) -> bool {
    if pattern.contains('\n') {
        return true;
    }
    let bytes = pattern.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            let run_start = i;
            while i < bytes.len() && bytes[i] == b'\\' {
                i += 1;
            }
            if (i - run_start) % 2 == 1 && bytes.get(i) == Some(&b'n') {
                return true;
            }
        } else {
            i += 1;
        }
    }
    false
}

/// The text of a searchable file, or None (binary, too large, unreadable).
fn load_text(file: &Path, skipped_large: &mut usize, unreadable: &mut usize) -> Option<String> {
    let is_binary_ext = file
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| BINARY_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()));
    if is_binary_ext {
        return None;
    }
    match std::fs::metadata(file) {
        Ok(meta) if meta.len() > MAX_FILE_BYTES => {
            *skipped_large += 1;
            return None;
        }
        Ok(_) => {}
        Err(_) => {
            *unreadable += 1;
            return None;
        }
    }
    let Ok(bytes) = std::fs::read(file) else {
        *unreadable += 1;
        return None;
    };
    if bytes[..bytes.len().min(BINARY_SAMPLE_BYTES)].contains(&0) {
        return None;
    }
    Some(match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// Line numbers (1-based, ascending) where `regex` matches in `text`: line by line, or,
/// for a `multiline` pattern, over the whole text with every spanned line marked.
fn matching_lines(regex: &Regex, text: &str, lines: &[&str], multiline: bool) -> Vec<usize> {
    if !multiline {
        return lines
            .iter()
            .enumerate()
            .filter(|(_, l)| regex.is_match(l))
            .map(|(i, _)| i + 1)
            .collect();
    }
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let line_of = |offset: usize| line_starts.partition_point(|&s| s <= offset);
    let mut hits = BTreeSet::new();
    for m in regex.find_iter(text) {
        let last = if m.end() > m.start() {
            m.end() - 1
        } else {
            m.start()
        };
        hits.extend(line_of(m.start())..=line_of(last));
    }
    hits.into_iter().filter(|&l| l <= lines.len()).collect()
}

/// Number of matches of `regex` (what `rg --count-matches` reports).
fn count_matches(regex: &Regex, text: &str, lines: &[&str], multiline: bool) -> usize {
    if multiline {
        regex.find_iter(text).count()
    } else {
        lines.iter().map(|l| regex.find_iter(l).count()).sum()
    }
}

fn split_text_lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    if text.ends_with('\n') {
        lines.pop();
    }
    lines
}

fn clamp_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((cut, _)) => s[..cut].to_owned(),
        None => s.to_owned(),
    }
}

/// `target='content'`: regex search of file contents in the three output modes.
fn search_content(root: &str, start: &Path, request: &Request) -> SearchResult {
    let multiline = pattern_has_newline(&request.pattern);
    let regex = match RegexBuilder::new(&request.pattern)
        .multi_line(multiline)
        .build()
    {
        Ok(regex) => regex,
        Err(e) => return SearchResult::error(format!("Search failed: invalid regex: {e}")),
    };
    let glob = match request
        .file_glob
        .as_deref()
        .map(GlobFilter::new)
        .transpose()
    {
        Ok(glob) => glob,
        Err(e) => return SearchResult::error(format!("Search failed: {e}")),
    };

    let walked = walk(start, false);
    let wanted = request.offset.saturating_add(request.limit);
    let (mut skipped_large, mut unreadable) = (0, 0);
    let mut rows: Vec<Match> = Vec::new();
    let mut files: Vec<String> = Vec::new();
    let mut counts: Vec<(String, usize)> = Vec::new();
    let mut more = false;
    for file in &walked.files {
        if glob.as_ref().is_some_and(|g| !g.accepts(start, file)) {
            continue;
        }
        let Some(text) = load_text(file, &mut skipped_large, &mut unreadable) else {
            continue;
        };
        let lines = split_text_lines(&text);
        let hits = matching_lines(&regex, &text, &lines, multiline);
        if hits.is_empty() {
            continue;
        }
        let shown = display_path(root, file);
        match request.mode {
            Mode::FilesOnly => files.push(shown),
            Mode::Count => counts.push((shown, hits.len())),
            Mode::Content => {
                let mut wanted_lines = BTreeSet::new();
                for &h in &hits {
                    let from = h.saturating_sub(request.context).max(1);
                    let to = h.saturating_add(request.context).min(lines.len());
                    wanted_lines.extend(from..=to);
                }
                for line in wanted_lines {
                    rows.push(Match {
                        path: shown.clone(),
                        line,
                        content: clamp_chars(lines[line - 1], MAX_MATCH_CHARS),
                    });
                }
            }
        }
        if rows.len().max(files.len()).max(counts.len()) > wanted {
            more = true;
            break;
        }
    }

    let mut result = SearchResult::default();
    match request.mode {
        Mode::FilesOnly => {
            result.total_count = files.len();
            result.files = page(files, request.offset, request.limit);
        }
        Mode::Count => {
            result.total_count = counts.iter().map(|(_, n)| n).sum();
            result.counts = page(counts, request.offset, request.limit);
        }
        Mode::Content => {
            result.total_count = rows.len();
            result.matches = page(rows, request.offset, request.limit);
        }
    }
    result.truncated = more;
    let mut used = 0usize;
    let before = result.matches.len() + result.files.len() + result.counts.len();
    let mut fits = |s: &str, extra: usize| {
        used += s.chars().count() + extra;
        used <= MAX_OUTPUT_CHARS
    };
    result
        .matches
        .retain(|m| fits(&m.path, m.content.chars().count()));
    result.files.retain(|f| fits(f, 0));
    result.counts.retain(|(p, _)| fits(p, 0));
    if result.matches.len() + result.files.len() + result.counts.len() < before {
        result.truncated = true;
        result.limit_reason = Some("max_output_chars".into());
    }

    if multiline {
        result.warnings.push(
            "Pattern contains \\n — multiline mode was enabled automatically so the regex can match across line boundaries."
                .into(),
        );
    }
    note_walk(&mut result, &walked);
    if unreadable > 0 {
        result.warnings.push(format!(
            "{unreadable} file(s) could not be read and were skipped."
        ));
    }
    if skipped_large > 0 {
        result.warnings.push(format!(
            "{skipped_large} file(s) larger than {} MiB were not searched.",
            MAX_FILE_BYTES / (1024 * 1024)
        ));
    }
    if result.total_count == 0
        && let Some(hint) = zero_match_probe(root, start, request, glob.as_ref(), &walked.files)
    {
        result.warnings.push(hint);
    }
    result
}

/// A steer for a search with no match (Hermes `_zero_match_probe`): would it match
/// case-insensitively, in hidden files, or as a literal string?
fn zero_match_probe(
    root: &str,
    start: &Path,
    request: &Request,
    glob: Option<&GlobFilter>,
    visible: &[PathBuf],
) -> Option<String> {
    let multiline = pattern_has_newline(&request.pattern);
    let has_meta = request
        .pattern
        .chars()
        .any(|c| ".[](){}?*+^$\\|".contains(c));
    let probes: [(Option<Regex>, bool, &str); 3] = [
        (
            RegexBuilder::new(&request.pattern)
                .multi_line(multiline)
                .case_insensitive(true)
                .build()
                .ok(),
            false,
            "0 exact matches, but {total} case-insensitive match(es) in {n} file(s): {paths} — the pattern's casing may be wrong.",
        ),
        (
            RegexBuilder::new(&request.pattern)
                .multi_line(multiline)
                .build()
                .ok(),
            true,
            "0 matches in visible files, but {total} match(es) in {n} hidden file(s): {paths} — these are excluded by default.",
        ),
        (
            has_meta
                .then(|| Regex::new(&regex::escape(&request.pattern)).ok())
                .flatten(),
            false,
            "0 regex matches, but {total} literal match(es) in {n} file(s): {paths} — the pattern contains regex metacharacters that likely need escaping (or pass a simpler substring).",
        ),
    ];
    for (regex, hidden, template) in probes {
        let Some(regex) = regex else { continue };
        let candidates: Vec<PathBuf> = if hidden {
            let seen: BTreeSet<&PathBuf> = visible.iter().collect();
            walk(start, true)
                .files
                .into_iter()
                .filter(|f| !seen.contains(f))
                .collect()
        } else {
            visible.to_vec()
        };
        let (mut total, mut hit_files) = (0usize, Vec::new());
        let (mut large, mut unreadable) = (0, 0);
        for file in &candidates {
            if glob.is_some_and(|g| !g.accepts(start, file)) {
                continue;
            }
            let Some(text) = load_text(file, &mut large, &mut unreadable) else {
                continue;
            };
            let lines = split_text_lines(&text);
            let count = count_matches(&regex, &text, &lines, multiline);
            if count > 0 {
                total += count;
                hit_files.push(display_path(root, file));
                if hit_files.len() >= PROBE_MAX_FILES {
                    break;
                }
            }
        }
        if total > 0 {
            let mut paths = hit_files
                .iter()
                .take(5)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ");
            if hit_files.len() > 5 {
                paths.push_str(&format!(" (+{} more)", hit_files.len() - 5));
            }
            return Some(
                template
                    .replace("{total}", &total.to_string())
                    .replace("{n}", &hit_files.len().to_string())
                    .replace("{paths}", &paths),
            );
        }
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn setup(files: &[(&str, &str)]) -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        for (name, data) in files {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, data).unwrap();
        }
        let root = dir.path().to_str().unwrap().to_owned();
        (dir, root)
    }

    fn req(args: Value) -> Request {
        Request::from_args(serde_json::from_value(args).unwrap()).unwrap()
    }

    const TREE: &[(&str, &str)] = &[
        ("src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n"),
        ("src/lib.rs", "pub fn hello() {}\n// TODO: more\n"),
        ("README.md", "# Hello\nTODO list\n"),
        (".hidden/secret.txt", "TODO hidden\n"),
        ("node_modules/dep/index.js", "TODO dep\n"),
        ("target/debug/out.txt", "TODO build\n"),
    ];

    #[test]
    fn content_search_in_path_order_skipping_hidden_and_pruned() {
        let (_d, root) = setup(TREE);
        let v = search(&root, &req(json!({"pattern": "TODO"}))).unwrap();
        assert_eq!(v["total_count"], 2);
        assert_eq!(
            v["matches"],
            json!([
                {"path": "README.md", "line": 2, "content": "TODO list"},
                {"path": "src/lib.rs", "line": 2, "content": "// TODO: more"}
            ])
        );
        assert!(v.get("truncated").is_none());
    }

    #[test]
    fn explicit_roots_are_searched_even_if_pruned_or_hidden() {
        let (_d, root) = setup(TREE);
        let v = search(
            &root,
            &req(json!({"pattern": "TODO", "path": "node_modules"})),
        )
        .unwrap();
        assert_eq!(v["matches"][0]["path"], "node_modules/dep/index.js");
        let v = search(
            &root,
            &req(json!({"pattern": "TODO", "path": ".hidden/secret.txt"})),
        )
        .unwrap();
        assert_eq!(v["total_count"], 1);
    }

    #[test]
    fn output_modes_and_glob() {
        let (_d, root) = setup(TREE);
        let v = search(
            &root,
            &req(json!({"pattern": "hello", "output_mode": "files_only"})),
        )
        .unwrap();
        assert_eq!(v["files"], json!(["src/lib.rs", "src/main.rs"]));
        let v = search(
            &root,
            &req(json!({"pattern": "(?i)hello|TODO", "output_mode": "count"})),
        )
        .unwrap();
        assert_eq!(
            v["counts"],
            json!({"README.md": 2, "src/lib.rs": 2, "src/main.rs": 1})
        );
        assert_eq!(v["total_count"], 5);
        let v = search(&root, &req(json!({"pattern": "TODO", "file_glob": "*.rs"}))).unwrap();
        assert_eq!(v["total_count"], 1);
        let v = search(
            &root,
            &req(json!({"pattern": "TODO", "file_glob": "!*.rs"})),
        )
        .unwrap();
        assert_eq!(v["matches"][0]["path"], "README.md");
        let v = search(
            &root,
            &req(json!({"pattern": "fn", "file_glob": "src/*.rs"})),
        )
        .unwrap();
        assert_eq!(v["total_count"], 2);
    }

    #[test]
    fn context_pagination_and_one_shape() {
        let body: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let (_d, root) = setup(&[("a.txt", &body)]);
        let v = search(&root, &req(json!({"pattern": "line 1[05]", "context": 1}))).unwrap();
        assert_eq!(v["total_count"], 6);
        let rows: Vec<(u64, &str)> = v["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["line"].as_u64().unwrap(), m["content"].as_str().unwrap()))
            .collect();
        assert_eq!(
            rows,
            [
                (9, "line 9"),
                (10, "line 10"),
                (11, "line 11"),
                (14, "line 14"),
                (15, "line 15"),
                (16, "line 16")
            ]
        );
        // No match: the same key, empty.
        let v = search(&root, &req(json!({"pattern": "absent"}))).unwrap();
        assert_eq!(v["matches"], json!([]), "{v}");
        let v = search(
            &root,
            &req(json!({"pattern": "line", "limit": 3, "offset": 2})),
        )
        .unwrap();
        assert_eq!(v["matches"][0]["line"], 3);
        assert_eq!(v["matches"].as_array().unwrap().len(), 3);
        assert_eq!(v["truncated"], true);
        assert_eq!(v["total_count_is_lower_bound"], true);
        assert!(v["_hint"].as_str().unwrap().contains("offset=5"));
    }

    #[test]
    fn file_name_search() {
        let (_d, root) = setup(TREE);
        let v = search(&root, &req(json!({"pattern": "*.rs", "target": "files"}))).unwrap();
        assert_eq!(v["files"], json!(["src/lib.rs", "src/main.rs"]));
        let v = search(&root, &req(json!({"pattern": "main.rs", "target": "find"}))).unwrap();
        assert_eq!(v["files"], json!(["src/main.rs"]));
        let v = search(
            &root,
            &req(json!({"pattern": "src/*.md", "target": "files"})),
        )
        .unwrap();
        assert_eq!(v["files"], json!(["README.md"]));
    }

    #[test]
    fn errors_are_clear() {
        let (_d, root) = setup(TREE);
        let v = search(&root, &req(json!({"pattern": "a(b"}))).unwrap();
        assert!(
            v["error"]
                .as_str()
                .unwrap()
                .starts_with("Search failed: invalid regex")
        );
        assert_eq!(v["total_count"], 0);
        let v = search(&root, &req(json!({"pattern": "x", "path": "sr"}))).unwrap();
        assert_eq!(v["error"], "Path not found: sr. Similar paths: src");
        assert!(search(&root, &req(json!({"pattern": "x", "path": "../.."}))).is_err());
        let bad = Request::from_args(
            serde_json::from_value(json!({"pattern": "x", "target": "dirs"})).unwrap(),
        );
        assert!(bad.is_err());
    }

    #[test]
    fn zero_match_probes_steer() {
        let (_d, root) = setup(TREE);
        let v = search(&root, &req(json!({"pattern": "todo list"}))).unwrap();
        assert!(
            v["warning"]
                .as_str()
                .unwrap()
                .contains("case-insensitive match(es) in 1 file(s): README.md")
        );
        let v = search(&root, &req(json!({"pattern": "TODO hidden"}))).unwrap();
        assert!(
            v["warning"]
                .as_str()
                .unwrap()
                .contains("hidden file(s): .hidden/secret.txt")
        );
        let (_d, root) = setup(&[("m.py", "x = a+b\n")]);
        let v = search(&root, &req(json!({"pattern": "a+b"}))).unwrap();
        assert_eq!(v["total_count"], 0, "{v}");
        assert_eq!(
            v["warning"],
            "0 regex matches, but 1 literal match(es) in 1 file(s): m.py — the pattern contains regex metacharacters that likely need escaping (or pass a simpler substring)."
        );
    }

    #[test]
    fn binary_and_symlinks_are_skipped_and_multiline_works() {
        let (d, root) = setup(&[("a.txt", "foo\nbar\n"), ("b.bin", "foo")]);
        std::fs::write(d.path().join("c.dat2"), b"foo\0bar").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(d.path().join("a.txt"), d.path().join("link.txt")).unwrap();
        let v = search(&root, &req(json!({"pattern": "foo"}))).unwrap();
        assert_eq!(v["total_count"], 1);
        let v = search(&root, &req(json!({"pattern": "foo\\nbar"}))).unwrap();
        assert_eq!(v["total_count"], 2);
        assert!(v["warning"].as_str().unwrap().contains("multiline"));
        assert!(pattern_has_newline("a\\nb"));
        assert!(!pattern_has_newline("a\\\\nb"));
    }
}
