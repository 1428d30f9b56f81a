//! The audit log: one JSON line per tool call, policy decision, approval request and
//! approval answer, hash-chained so that editing, reordering or deleting a line is
//! detected by [`verify`] (`hermetic audit verify FILE`).
//!
//! Each line is a JSON object whose first keys are `seq` (1, 2, 3, … in file order),
//! `time` (RFC 3339, UTC) and whose last two are `prev` (the previous line's `hash`;
//! 64 zeros for the first line) and `hash`: the SHA-256, in hex, of the line's own
//! bytes up to `prev`'s value, closed with `}` — that is, of the line as it reads
//! without its `,"hash":"…"` member. Changing any byte breaks that line's hash;
//! deleting or moving a line breaks the next line's `prev` and the `seq` sequence.
//!
//! # What the chain cannot show
//! Cutting lines off the *end* leaves a valid shorter chain. [`verify`] reports the
//! number of lines and the last hash (the head); an operator who records the head
//! elsewhere (the server logs it at shutdown; `--head` checks it) detects truncation.
//!
//! # Durability and cost
//! Lines are written whole with one `write` each under a mutex, straight to the file
//! (no user-space buffer), so a line that was recorded survives a crash of the process.
//! There is no `fsync` per line (it would cost milliseconds per call): a crash of the
//! whole machine can lose the last lines the kernel had not written yet.

use crate::formats::rfc3339;
use hermetic::approval::{ApprovalObserver, ApprovalRequest, SessionKey, Verdict};
use parking_lot::Mutex;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

mod verify;
pub use verify::{
    Repair, RepairError, Repaired, Verified, VerifyError, repair, segments, verify, verify_after,
    verify_lines, verify_set,
};

/// What the server and `audit verify` both say of a file whose last line has no
/// newline: a write was cut short (a crash or a full disk), which is not tampering.
const TORN_TAIL: &str = "the last line is incomplete (a write was cut short); \
                         `hermetic audit repair` completes or cuts it";

/// `prev` of the first line.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Longest last line [`AuditLog::open`] reads back to continue a chain.
pub(crate) const MAX_LINE: u64 = 1 << 20;

/// Most bytes [`AuditLog::tail`] reads from the end of the file: a hundred typical
/// records are a few tens of kilobytes; this bounds the console's answer even when
/// lines are long.
pub const MAX_TAIL_BYTES: u64 = 1 << 20;

/// The `,"hash":"<64 hex>"}` a line ends with: 9 + 64 + 2 bytes.
const HASH_SUFFIX_LEN: usize = 75;

/// Errors opening or writing the audit log.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The file cannot be opened, read or written.
    #[error("audit log {path}: {reason}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        reason: String,
    },
    /// The existing file does not end with a valid line, so the chain cannot continue.
    #[error(
        "audit log {path}: cannot continue the chain: {reason} (run `hermetic audit verify {path}`)"
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with its last line.
        reason: String,
    },
}

/// Longest tool name written to a line, in bytes (longer ones are cut).
const MAX_TOOL_BYTES: usize = 256;

/// One event to record. Empty or `None` fields are left out of the line.
#[derive(Debug, Default, Clone, Copy, Serialize)]
pub struct Event<'a> {
    /// `call`, `decision`, `approval_request` or `approval_answer`.
    pub kind: &'a str,
    /// Tenant id (`""`: the operator).
    pub tenant: &'a str,
    /// Session id.
    pub session: &'a str,
    /// Tool name.
    #[serde(skip_serializing_if = "str::is_empty")]
    pub tool: &'a str,
    /// SHA-256 of the call's arguments (secret values redacted first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args_sha256: Option<&'a str>,
    /// The grants the call ran with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grants: Option<&'a Value>,
    /// What happened: `ok`, `error`, `cancelled`, `limit:<name>`, `unknown_tool`,
    /// `unavailable`, `rate_limited`, or an approval outcome.
    pub outcome: &'a str,
    /// Why, when the outcome needs explaining.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'a str>,
    /// How long the call took, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    /// Kind-specific details (an approval's command and rules).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<&'a Value>,
    /// The call's trace id (32 hex digits): its client's (`_meta.traceparent`), or the
    /// exported span's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<&'a str>,
    /// What the call's hooks did: each that refused, rewrote, replaced or failed
    /// (`[{"hook", "stage", "did"}]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hooks: Option<&'a Value>,
}

#[derive(Serialize)]
struct Line<'a> {
    seq: u64,
    time: &'a str,
    /// The node that wrote it (several nodes keep a log each).
    #[serde(skip_serializing_if = "str::is_empty")]
    node: &'a str,
    #[serde(flatten)]
    event: &'a Event<'a>,
    prev: &'a str,
}

struct Chain {
    file: File,
    seq: u64,
    prev: String,
    buf: Vec<u8>,
    /// Bytes in the current file.
    bytes: u64,
    /// When the current file was started (or opened).
    since: std::time::Instant,
}

/// When the log moves on to a new file (the chain continues in it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rotation {
    /// When a line would take the file past this many bytes.
    pub max_bytes: Option<u64>,
    /// When the file has been written to this long.
    pub every: Option<std::time::Duration>,
}

/// An append-only, hash-chained audit log file. Share it with `Arc`.
pub struct AuditLog {
    path: PathBuf,
    chain: Mutex<Chain>,
    /// Secret values, raw and JSON-escaped, replaced before hashing or writing.
    redactions: Vec<(String, String)>,
    /// The node named in every line ("" for none).
    node: String,
    rotation: Rotation,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl AuditLog {
    /// Opens (or creates) `path` for appending. When the file has lines, the chain
    /// continues from its last one.
    ///
    /// # Errors
    /// [`AuditError::Io`], or [`AuditError::Corrupt`] when the last line is not a valid
    /// audit line (the server refuses to start rather than fork the chain).
    pub fn open(path: &Path) -> Result<Self, AuditError> {
        let io = |e: std::io::Error| AuditError::Io {
            path: path.to_path_buf(),
            reason: e.to_string(),
        };
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)
            .map_err(io)?;
        let bad = |reason| match reason {
            Tail::Io(e) => io(e),
            Tail::Bad(reason) => AuditError::Corrupt {
                path: path.to_path_buf(),
                reason,
            },
        };
        let (mut seq, mut prev) = last_link(&mut file).map_err(bad)?;
        let bytes = file.metadata().map_err(io)?.len();
        // A file just rotated (empty) continues the chain of the last file it left.
        if bytes == 0
            && let Some(last) = segments(path).iter().rev().nth(1)
        {
            let mut earlier = File::open(last).map_err(io)?;
            (seq, prev) = last_link(&mut earlier).map_err(bad)?;
        }
        Ok(Self {
            path: path.to_path_buf(),
            chain: Mutex::new(Chain {
                file,
                seq,
                prev,
                buf: Vec::with_capacity(512),
                bytes,
                since: std::time::Instant::now(),
            }),
            redactions: Vec::new(),
            node: String::new(),
            rotation: Rotation::default(),
        })
    }

    /// Names `node` in every line (a cluster's nodes keep one log each).
    #[must_use]
    pub fn with_node(mut self, node: &str) -> Self {
        self.node = node.to_owned();
        self
    }

    /// Moves to a new file by size or age ([`Rotation`]): the current one is renamed
    /// `FILE.N` (N one more than the last) and the chain continues in a new `FILE`;
    /// `audit verify FILE` checks them all.
    #[must_use]
    pub fn with_rotation(mut self, rotation: Rotation) -> Self {
        self.rotation = rotation;
        self
    }

    /// Redacts these secret values from argument digests and approval commands.
    pub fn with_redactions<'a>(mut self, secrets: impl IntoIterator<Item = &'a str>) -> Self {
        self.redactions = secrets
            .into_iter()
            .filter(|s| !s.is_empty())
            .map(|s| {
                let escaped = serde_json::to_string(s).unwrap_or_default();
                let escaped = escaped
                    .strip_prefix('"')
                    .and_then(|e| e.strip_suffix('"'))
                    .unwrap_or(s)
                    .to_owned();
                (s.to_owned(), escaped)
            })
            .collect();
        self
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The hash of the last line written (the head of the chain).
    pub fn head(&self) -> (u64, String) {
        let chain = self.chain.lock();
        (chain.seq, chain.prev.clone())
    }

    /// `text` with every secret value replaced by `[REDACTED]`.
    pub fn redact<'t>(&self, text: &'t str) -> std::borrow::Cow<'t, str> {
        let mut out = std::borrow::Cow::Borrowed(text);
        for (raw, escaped) in &self.redactions {
            for needle in [raw, escaped] {
                if out.contains(needle.as_str()) {
                    out = std::borrow::Cow::Owned(out.replace(needle.as_str(), "[REDACTED]"));
                }
            }
        }
        out
    }

    /// SHA-256 (hex) of a call's JSON arguments after redacting secret values, so the
    /// digest cannot be used to test guesses of a secret.
    pub fn args_digest(&self, args: &str) -> String {
        crate::formats::hex(&Sha256::digest(self.redact(args).as_bytes()))
    }

    /// Appends one line.
    ///
    /// # Errors
    /// [`AuditError::Io`] when the write fails (the chain is unchanged then).
    pub fn record(&self, event: &Event<'_>) -> Result<(), AuditError> {
        // Tool names come from agents: a huge one must not make a huge line (which the
        // next start would refuse to continue the chain from).
        let short;
        let mut trimmed = *event;
        if event.tool.len() > MAX_TOOL_BYTES {
            let mut end = MAX_TOOL_BYTES;
            while !event.tool.is_char_boundary(end) {
                end -= 1;
            }
            short = format!("{}…", &event.tool[..end]);
            trimmed.tool = &short;
        }
        let event = &trimmed;
        let time = rfc3339(SystemTime::now());
        let mut chain = self.chain.lock();
        let chain = &mut *chain;
        let seq = chain.seq + 1;
        chain.buf.clear();
        let line = Line {
            seq,
            time: &time,
            node: &self.node,
            event,
            prev: &chain.prev,
        };
        serde_json::to_writer(&mut chain.buf, &line).map_err(|e| AuditError::Io {
            path: self.path.clone(),
            reason: e.to_string(),
        })?;
        let hash = crate::formats::hex(&Sha256::digest(&chain.buf));
        chain.buf.pop(); // the closing brace
        chain.buf.extend_from_slice(b",\"hash\":\"");
        chain.buf.extend_from_slice(hash.as_bytes());
        chain.buf.extend_from_slice(b"\"}\n");
        let len = chain.buf.len() as u64;
        let due = chain.bytes > 0
            && (self
                .rotation
                .max_bytes
                .is_some_and(|max| chain.bytes + len > max)
                || self
                    .rotation
                    .every
                    .is_some_and(|e| chain.since.elapsed() >= e));
        if due {
            self.rotate(chain)?;
        }
        chain
            .file
            .write_all(&chain.buf)
            .map_err(|e| AuditError::Io {
                path: self.path.clone(),
                reason: e.to_string(),
            })?;
        chain.seq = seq;
        chain.prev = hash;
        chain.bytes += len;
        Ok(())
    }

    /// Renames the current file to `FILE.N` and starts a new one; the chain (`seq`,
    /// `prev`) carries on into it.
    fn rotate(&self, chain: &mut Chain) -> Result<(), AuditError> {
        let io = |e: std::io::Error| AuditError::Io {
            path: self.path.clone(),
            reason: format!("rotating: {e}"),
        };
        let next = segments(&self.path)
            .iter()
            .filter_map(|p| p.extension()?.to_str()?.parse::<u64>().ok())
            .max()
            .unwrap_or(0)
            + 1;
        let mut name = self.path.as_os_str().to_owned();
        name.push(format!(".{next}"));
        std::fs::rename(&self.path, PathBuf::from(name)).map_err(io)?;
        chain.file = std::fs::OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&self.path)
            .map_err(io)?;
        chain.bytes = 0;
        chain.since = std::time::Instant::now();
        Ok(())
    }

    /// The last `n` records of the file, newest first, as JSON values (for the
    /// operator console). Reads at most [`MAX_TAIL_BYTES`] from the end, so the answer
    /// is bounded whatever the file's size: fewer than `n` records come back when
    /// they are longer than that together. A line cut at the start of that window, a
    /// last line still being written, and a line that is not JSON are left out. This
    /// shows the log; it does not verify it (`hermetic audit verify` does).
    ///
    /// # Errors
    /// [`AuditError::Io`] when the file cannot be opened or read.
    pub fn tail(&self, n: usize) -> Result<Vec<Value>, AuditError> {
        let io = |e: std::io::Error| AuditError::Io {
            path: self.path.clone(),
            reason: e.to_string(),
        };
        let mut file = File::open(&self.path).map_err(io)?;
        let len = file.seek(SeekFrom::End(0)).map_err(io)?;
        let start = len.saturating_sub(MAX_TAIL_BYTES);
        file.seek(SeekFrom::Start(start)).map_err(io)?;
        let mut bytes = Vec::new();
        file.take(MAX_TAIL_BYTES)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        let mut lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
        // After the last newline: empty, or a line whose write has not finished.
        lines.pop();
        if start > 0 && !lines.is_empty() {
            // Began mid-line.
            lines.remove(0);
        }
        Ok(lines
            .iter()
            .rev()
            .filter_map(|line| serde_json::from_slice(line).ok())
            .take(n)
            .collect())
    }

    /// Records `event`, logging (not returning) a failure: for transports, where an
    /// audit failure must be loud but must not change the agent's result.
    pub fn record_or_log(&self, event: &Event<'_>) {
        if let Err(e) = self.record(event) {
            tracing::error!("audit record lost: {e}");
        }
    }
}

enum Tail {
    Io(std::io::Error),
    Bad(String),
}

/// The `seq` and `hash` of the file's last line (0 and [`GENESIS`] when empty).
fn last_link(file: &mut File) -> Result<(u64, String), Tail> {
    let len = file.seek(SeekFrom::End(0)).map_err(Tail::Io)?;
    if len == 0 {
        return Ok((0, GENESIS.to_owned()));
    }
    let start = len.saturating_sub(MAX_LINE);
    file.seek(SeekFrom::Start(start)).map_err(Tail::Io)?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail).map_err(Tail::Io)?;
    let Some(body) = tail.strip_suffix(b"\n") else {
        return Err(Tail::Bad(TORN_TAIL.to_owned()));
    };
    let line_start = match body.iter().rposition(|&b| b == b'\n') {
        Some(i) => i + 1,
        None if start == 0 => 0,
        None => return Err(Tail::Bad("the last line is too long".to_owned())),
    };
    let line = std::str::from_utf8(&body[line_start..])
        .map_err(|_| Tail::Bad("the last line is not UTF-8".to_owned()))?;
    let link = check_line(line).map_err(Tail::Bad)?;
    Ok((link.seq, link.hash))
}

/// What a line says about itself.
struct Link {
    seq: u64,
    prev: String,
    hash: String,
}

/// Checks one line's own hash and returns its links.
fn check_line(line: &str) -> Result<Link, String> {
    let split = line
        .len()
        .checked_sub(HASH_SUFFIX_LEN)
        .filter(|&i| line.is_char_boundary(i))
        .ok_or("not an audit line (too short)")?;
    let (body, suffix) = line.split_at(split);
    let hash = suffix
        .strip_prefix(",\"hash\":\"")
        .and_then(|s| s.strip_suffix("\"}"))
        .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or("not an audit line (no trailing hash)")?;
    let mut hasher = Sha256::new();
    hasher.update(body.as_bytes());
    hasher.update(b"}");
    if crate::formats::hex(&hasher.finalize()) != hash {
        return Err("its hash does not match its content (the line was edited)".to_owned());
    }
    #[derive(serde::Deserialize)]
    struct Probe {
        seq: u64,
        prev: String,
    }
    let probe: Probe = serde_json::from_str(line)
        .map_err(|e| format!("not an audit line (no seq or prev: {e})"))?;
    Ok(Link {
        seq: probe.seq,
        prev: probe.prev,
        hash: hash.to_owned(),
    })
}

/// Writes approval requests and answers to the audit log. Attach it to the approval
/// gate with [`hermetic::approval::ApprovalGate::with_observer`].
#[derive(Debug, Clone)]
pub struct AuditObserver(pub std::sync::Arc<AuditLog>);

impl ApprovalObserver for AuditObserver {
    fn before_request(&self, request: &ApprovalRequest, approver: &str) {
        let detail = serde_json::json!({
            "command": self.0.redact(&request.command),
            "rules": request.rules,
            "approver": approver,
        });
        self.0.record_or_log(&Event {
            kind: "approval_request",
            tenant: &request.key.tenant,
            session: &request.key.session,
            tool: "terminal",
            outcome: "asked",
            detail: Some(&detail),
            ..Event::default()
        });
    }

    fn after_answer(&self, request: &ApprovalRequest, verdict: &Verdict) {
        let outcome = verdict.outcome.as_str();
        let detail = serde_json::json!({
            "command": self.0.redact(&request.command),
            "approved": verdict.approved,
            "decided_by": verdict.decided_by,
            "answered_by": verdict.answered_by,
        });
        self.0.record_or_log(&Event {
            kind: "approval_answer",
            tenant: &request.key.tenant,
            session: &request.key.session,
            tool: "terminal",
            outcome,
            detail: Some(&detail),
            ..Event::default()
        });
    }

    fn decided(&self, key: &SessionKey, command: &str, verdict: &Verdict) {
        let outcome = verdict.outcome.as_str();
        let detail = serde_json::json!({
            "command": self.0.redact(command),
            "rules": verdict.rules,
            "approved": verdict.approved,
            "decided_by": verdict.decided_by,
        });
        self.0.record_or_log(&Event {
            kind: "decision",
            tenant: &key.tenant,
            session: &key.session,
            tool: "terminal",
            outcome,
            detail: Some(&detail),
            ..Event::default()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(outcome: &str) -> Event<'_> {
        Event {
            kind: "call",
            tenant: "acme",
            session: "s1",
            tool: "echo",
            outcome,
            ..Event::default()
        }
    }

    fn write_three(path: &Path) -> Vec<String> {
        let log = AuditLog::open(path).unwrap();
        for outcome in ["ok", "error", "ok"] {
            log.record(&event(outcome)).unwrap();
        }
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn verify_text(lines: &[String]) -> Result<Verified, VerifyError> {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        verify_lines(std::io::Cursor::new(text))
    }

    #[test]
    fn a_rotated_log_continues_its_chain_across_files_and_verifies_as_a_set() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&path)
            .unwrap()
            .with_node("node-a")
            .with_rotation(Rotation {
                max_bytes: Some(600),
                every: None,
            });
        for i in 0..12 {
            log.record(&event(if i % 2 == 0 { "ok" } else { "error" }))
                .unwrap();
        }
        let files = segments(&path);
        assert!(files.len() >= 3, "{files:?}");
        for f in &files[..files.len() - 1] {
            assert!(std::fs::metadata(f).unwrap().len() <= 600, "{f:?}");
        }
        let verified = verify(&path).unwrap();
        assert_eq!((verified.lines, verified.seq), (12, 12));
        assert_eq!(verified.head, log.head().1);
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .contains("\"node\":\"node-a\"")
        );
        // A later part alone does not start a chain; the set does.
        assert!(verify_lines(std::io::BufReader::new(File::open(&files[1]).unwrap())).is_err());
        // Reopened (a restart), the chain goes on; also right after a rotation, from
        // the file it left.
        drop(log);
        let log = AuditLog::open(&path).unwrap();
        log.record(&event("ok")).unwrap();
        assert_eq!(verify(&path).unwrap().seq, 13);
        drop(log);
        let last = segments(&path).len();
        std::fs::rename(&path, path.with_file_name(format!("audit.jsonl.{last}"))).unwrap();
        let log = AuditLog::open(&path).unwrap();
        log.record(&event("ok")).unwrap();
        assert_eq!(verify(&path).unwrap().seq, 14);
        // Deleting a middle file breaks the chain where the next one starts.
        std::fs::remove_file(&files[1]).unwrap();
        assert!(verify(&path).is_err());
    }

    #[test]
    fn a_written_chain_verifies_and_continues_after_reopening() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("audit.jsonl");
        let lines = write_three(&path);
        let first: Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(first["seq"], 1);
        assert_eq!(first["prev"], GENESIS);
        assert_eq!(first["tenant"], "acme");
        let verified = verify(&path).unwrap();
        assert_eq!(verified.lines, 3);
        let log = AuditLog::open(&path).unwrap();
        assert_eq!(log.head(), (3, verified.head.clone()));
        log.record(&event("ok")).unwrap();
        let again = verify(&path).unwrap();
        assert_eq!(again.lines, 4);
    }

    #[test]
    fn a_huge_agent_chosen_tool_name_is_cut_and_the_chain_still_reopens() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&path).unwrap();
        let name = "é".repeat(1 << 20);
        log.record(&Event {
            tool: &name,
            ..event("unknown_tool")
        })
        .unwrap();
        drop(log);
        let line = std::fs::read_to_string(&path).unwrap();
        assert!(line.len() < 2_000, "{} bytes", line.len());
        let log = AuditLog::open(&path).unwrap();
        log.record(&event("ok")).unwrap();
        assert_eq!(verify(&path).unwrap().lines, 2);
    }

    #[test]
    fn an_edited_line_is_caught_at_that_line() {
        let dir = tempfile::TempDir::new().unwrap();
        let mut lines = write_three(&dir.path().join("a"));
        lines[1] = lines[1].replace("\"error\"", "\"ok\"");
        assert_eq!(verify_text(&lines).unwrap_err().line(), Some(2));
    }

    #[test]
    fn a_deleted_line_is_caught_at_the_next_line() {
        let dir = tempfile::TempDir::new().unwrap();
        let mut lines = write_three(&dir.path().join("a"));
        lines.remove(1);
        assert_eq!(verify_text(&lines).unwrap_err().line(), Some(2));
        // Deleting the first line is caught too.
        let mut lines = write_three(&dir.path().join("b"));
        lines.remove(0);
        assert_eq!(verify_text(&lines).unwrap_err().line(), Some(1));
    }

    #[test]
    fn reordered_lines_are_caught() {
        let dir = tempfile::TempDir::new().unwrap();
        let mut lines = write_three(&dir.path().join("a"));
        lines.swap(1, 2);
        assert_eq!(verify_text(&lines).unwrap_err().line(), Some(2));
    }

    #[test]
    fn a_truncated_tail_shows_in_the_head_and_count() {
        let dir = tempfile::TempDir::new().unwrap();
        let mut lines = write_three(&dir.path().join("a"));
        let full = verify_text(&lines).unwrap();
        lines.pop();
        let cut = verify_text(&lines).unwrap();
        assert_eq!(cut.lines, 2);
        assert_ne!(cut.head, full.head);
    }

    #[test]
    fn a_file_with_a_broken_last_line_is_not_continued() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("a");
        write_three(&path);
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(b"{\"seq\":4").unwrap();
        assert!(matches!(
            AuditLog::open(&path),
            Err(AuditError::Corrupt { .. })
        ));
    }

    /// Appends `bytes` to the log, as a write cut short would leave them.
    fn append(path: &Path, bytes: &[u8]) {
        let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
        file.write_all(bytes).unwrap();
    }

    #[test]
    fn a_torn_last_line_is_torn_for_the_server_and_for_verify_alike() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("a");
        write_three(&path);
        append(&path, b"{\"seq\":4,\"time\":\"2026");
        let Err(AuditError::Corrupt { reason, .. }) = AuditLog::open(&path) else {
            panic!("a torn log was continued");
        };
        assert_eq!(reason, TORN_TAIL);
        match verify(&path) {
            Err(e @ VerifyError::TornTail { .. }) => {
                assert!(e.to_string().contains(TORN_TAIL), "{e}");
                assert_eq!(e.line(), Some(4));
            }
            other => panic!("verify did not call it torn: {other:?}"),
        }
    }

    #[test]
    fn repair_cuts_a_torn_tail_keeps_it_aside_and_the_chain_continues() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("a");
        let lines = write_three(&path);
        let before = verify(&path).unwrap();
        append(&path, b"{\"seq\":4,\"ti");
        let repaired = repair(&path).unwrap();
        let saved_to = dir.path().join("a.torn");
        assert_eq!(
            repaired.repair,
            Repair::Cut {
                bytes: 12,
                saved_to: saved_to.clone()
            }
        );
        assert_eq!(repaired.verified, before);
        assert_eq!(
            std::fs::read_to_string(&saved_to).unwrap(),
            "{\"seq\":4,\"ti\n"
        );
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        let log = AuditLog::open(&path).unwrap();
        log.record(&event("ok")).unwrap();
        assert_eq!(verify(&path).unwrap().lines, 4);
        // A second repair of an intact log does nothing.
        assert_eq!(repair(&path).unwrap().repair, Repair::Nothing);
    }

    #[test]
    fn a_whole_last_record_without_its_newline_is_completed_not_cut() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("a");
        write_three(&path);
        let full = verify(&path).unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(len - 1)
            .unwrap();
        assert!(matches!(
            verify(&path),
            Err(VerifyError::TornTail { whole: Some(_), .. })
        ));
        assert!(matches!(
            AuditLog::open(&path),
            Err(AuditError::Corrupt { .. })
        ));
        let repaired = repair(&path).unwrap();
        assert_eq!(repaired.repair, Repair::Completed);
        assert_eq!(repaired.verified, full);
        assert_eq!(verify(&path).unwrap(), full);
    }

    #[test]
    fn repair_refuses_a_chain_broken_before_its_tail_and_touches_nothing() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("a");
        let mut lines = write_three(&path);
        lines[1] = lines[1].replace("\"error\"", "\"ok\"");
        let mut text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        text.push_str("{\"seq\":4");
        std::fs::write(&path, &text).unwrap();
        match repair(&path) {
            Err(RepairError::Broken(e)) => assert_eq!(e.line(), Some(2)),
            other => panic!("a tampered log was repaired: {other:?}"),
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        assert!(!dir.path().join("a.torn").exists());
    }

    #[test]
    fn secrets_are_redacted_before_the_arguments_are_hashed() {
        let dir = tempfile::TempDir::new().unwrap();
        let log = AuditLog::open(&dir.path().join("a"))
            .unwrap()
            .with_redactions(["s3cr\"et"]);
        let with_secret = log.args_digest(r#"{"key":"s3cr\"et"}"#);
        let redacted = log.args_digest(r#"{"key":"[REDACTED]"}"#);
        assert_eq!(with_secret, redacted);
        assert_ne!(log.args_digest(r#"{"key":"other"}"#), redacted);
    }

    #[test]
    fn the_observer_records_the_gate_s_request_and_answer_with_secrets_redacted() {
        use hermetic::approval::{
            Answer, ApprovalConfig, ApprovalContext, ApprovalGate, ScriptedApprover,
        };
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = std::sync::Arc::new(AuditLog::open(&path).unwrap().with_redactions(["hunter2"]));
        let gate = ApprovalGate::new(&ApprovalConfig::default())
            .unwrap()
            .with_approver(std::sync::Arc::new(
                ScriptedApprover::new([Answer::Once]).asynchronous(),
            ))
            .with_observer(std::sync::Arc::new(AuditObserver(log.clone())));
        let verdict = gate.check(
            &ApprovalContext::new("acme", "s1"),
            "rm -rf build --password=hunter2",
        );
        assert!(verdict.approved);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("hunter2"), "{text}");
        let records: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(records.len(), 2, "{text}");
        assert_eq!(records[0]["kind"], "approval_request");
        assert_eq!(records[0]["tenant"], "acme");
        assert_eq!(records[0]["session"], "s1");
        assert_eq!(
            records[0]["detail"]["command"],
            "rm -rf build --password=[REDACTED]"
        );
        assert_eq!(records[0]["detail"]["rules"][0], "fs.rm_recursive");
        assert_eq!(records[1]["kind"], "approval_answer");
        assert_eq!(records[1]["outcome"], "approved_once");
        assert_eq!(records[1]["detail"]["approved"], true);
        assert_eq!(verify(&path).unwrap().lines, 2);
    }

    #[test]
    fn the_tail_is_the_newest_records_first_and_skips_a_torn_last_line() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("audit.jsonl");
        write_three(&path);
        let log = AuditLog::open(&path).unwrap();
        let tail = log.tail(2).unwrap();
        let outcomes: Vec<&Value> = tail.iter().map(|r| &r["outcome"]).collect();
        assert_eq!(outcomes, [&Value::from("ok"), &Value::from("error")]);
        assert_eq!(tail[0]["seq"], 3);
        assert_eq!(log.tail(100).unwrap().len(), 3);
        append(&path, b"{\"seq\":4,\"ti");
        assert_eq!(log.tail(100).unwrap()[0]["seq"], 3);
    }

    #[test]
    fn the_tail_reads_a_bounded_window_of_a_long_file() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&path).unwrap();
        let long = "x".repeat(100_000);
        for _ in 0..15 {
            log.record(&Event {
                reason: Some(&long),
                ..event("ok")
            })
            .unwrap();
        }
        let tail = log.tail(100).unwrap();
        // 15 lines of ~100 kB: only those wholly inside the last MiB come back.
        assert!(!tail.is_empty() && tail.len() < 15, "{}", tail.len());
        assert_eq!(tail[0]["seq"], 15);
        let seqs: Vec<u64> = tail.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
        assert!(seqs.windows(2).all(|w| w[0] == w[1] + 1), "{seqs:?}");
    }
}
