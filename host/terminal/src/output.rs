//! What the agent sees of a command's output: ANSI escapes stripped, secrets and
//! credential-looking text redacted, capped at [`MAX_OUTPUT_CHARS`] (40% head, 60%
//! tail, with a notice), and a note for exit codes that are not errors.

use regex::Regex;
use std::sync::LazyLock;

/// Most characters of output an agent gets from one command. Hermes's figure: enough
/// for a build log's head and its errors at the end, small enough for a context window.
pub const MAX_OUTPUT_CHARS: usize = 50_000;
/// Share of [`MAX_OUTPUT_CHARS`] kept from the start (the rest comes from the end,
/// where errors usually are).
const HEAD_SHARE_PERCENT: usize = 40;
/// What replaces redacted text.
pub const REDACTED: &str = "[REDACTED]";
/// Secret values shorter than this are not redacted: replacing every "1" or "on" in the
/// output would hide more than it protects.
const MIN_SECRET_CHARS: usize = 6;

/// CSI and OSC sequences, two-character escapes and carriage returns.
const ANSI_PATTERN: &str =
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|\r";

/// Common credential shapes. Each keeps a recognisable prefix (group `keep`) so the agent
/// still knows what was there.
const CREDENTIAL_PATTERNS: [&str; 9] = [
    // PEM private keys, whole block.
    r"-----BEGIN[A-Z ]*PRIVATE KEY-----[\s\S]*?-----END[A-Z ]*PRIVATE KEY-----",
    // AWS access key ids.
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    // GitHub tokens.
    r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})\b",
    // OpenAI / Anthropic style API keys.
    r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{20,}",
    // Slack tokens.
    r"\bxox[baprs]-[A-Za-z0-9\-]{10,}",
    // Google API keys.
    r"\bAIza[0-9A-Za-z_\-]{35}\b",
    // JSON web tokens.
    r"\beyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}",
    // Bearer / basic authorization values.
    r"(?i)(?P<keep>\b(?:authorization:\s*)?(?:bearer|basic)\s+)[A-Za-z0-9_\-\.=+/]{12,}",
    // NAME=value and "name": "value" assignments of secret-sounding names.
    r#"(?i)(?P<keep>\b[A-Z0-9_]*(?:password|passwd|secret|token|api_?key|access_?key|private_?key)[A-Z0-9_]*["']?\s*[:=]\s*["']?)[^\s"',;]{4,}"#,
];

/// [`ANSI_PATTERN`], compiled once. The patterns are constants, so a compile failure
/// is a bug in this file, caught by `every_pattern_compiles` rather than at a user's
/// call (where it would quietly stop stripping or redacting).
static ANSI: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(ANSI_PATTERN).ok());

/// [`CREDENTIAL_PATTERNS`], compiled once (see [`ANSI`] for why a failure is skipped
/// here and caught by a test).
static CREDENTIALS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    CREDENTIAL_PATTERNS
        .iter()
        .filter_map(|p| Regex::new(p).ok())
        .collect()
});

/// Removes ANSI escape sequences and carriage returns.
pub fn strip_ansi(text: &str) -> String {
    match &*ANSI {
        Some(re) if text.contains(['\x1b', '\r']) => re.replace_all(text, "").into_owned(),
        _ => text.to_owned(),
    }
}

/// Replaces every value in `secrets` (at least [`MIN_SECRET_CHARS`] long) and every
/// credential-looking string with [`REDACTED`].
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_owned();
    for secret in secrets {
        if secret.chars().count() >= MIN_SECRET_CHARS && out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), REDACTED);
        }
    }
    for re in CREDENTIALS.iter() {
        if re.is_match(&out) {
            out = re
                .replace_all(&out, |c: &regex::Captures<'_>| {
                    format!("{}{REDACTED}", c.name("keep").map_or("", |m| m.as_str()))
                })
                .into_owned();
        }
    }
    out
}

/// Caps `text` at [`MAX_OUTPUT_CHARS`]: 40% from the start and 60% from the end, with a
/// notice of how much was cut in between. `total_chars` is how long the output really
/// was (it may be longer than `text` when the middle was never kept).
pub fn cap(text: &str, total_chars: usize) -> String {
    let len = text.chars().count();
    if len <= MAX_OUTPUT_CHARS && total_chars <= MAX_OUTPUT_CHARS {
        return text.to_owned();
    }
    let head_chars = MAX_OUTPUT_CHARS * HEAD_SHARE_PERCENT / 100;
    let tail_chars = MAX_OUTPUT_CHARS - head_chars;
    let head: String = text.chars().take(head_chars).collect();
    let tail: String = text
        .chars()
        .skip(len.saturating_sub(tail_chars).max(head_chars))
        .collect();
    let omitted = total_chars.max(len).saturating_sub(head_chars + tail_chars);
    format!(
        "{head}\n\n... [OUTPUT TRUNCATED - {omitted} characters omitted out of {} total] ...\n\n{tail}",
        total_chars.max(len)
    )
}

/// Keeps the first [`MAX_OUTPUT_CHARS`] × 40% and the last × 60% characters of a stream
/// without holding all of it (a command may print gigabytes).
#[derive(Debug, Default)]
pub struct HeadTail {
    head: String,
    head_chars: usize,
    tail: String,
    tail_chars: usize,
    total: usize,
}

impl HeadTail {
    /// Appends text.
    pub fn push(&mut self, text: &str) {
        let head_cap = MAX_OUTPUT_CHARS * HEAD_SHARE_PERCENT / 100;
        let tail_cap = MAX_OUTPUT_CHARS - head_cap;
        for c in text.chars() {
            self.total += 1;
            if self.head_chars < head_cap {
                self.head.push(c);
                self.head_chars += 1;
            } else {
                self.tail.push(c);
                self.tail_chars += 1;
            }
        }
        // Trim the tail in batches so pushing stays linear.
        if self.tail_chars > tail_cap * 2 {
            let drop = self.tail_chars - tail_cap;
            let cut = self
                .tail
                .char_indices()
                .nth(drop)
                .map_or(self.tail.len(), |(i, _)| i);
            self.tail.drain(..cut);
            self.tail_chars = tail_cap;
        }
    }

    /// What was kept, with the total for [`cap`].
    pub fn into_parts(self) -> (String, usize) {
        let total = self.total;
        (self.head + &self.tail, total)
    }
}

/// A note for exit codes that do not mean failure for well-known commands (Hermes's
/// table), judged from the last command of the line.
pub fn exit_code_meaning(command: &str, exit_code: i32) -> Option<&'static str> {
    if exit_code == 0 {
        return None;
    }
    let last = command
        .rsplit(['|', ';', '&', '\n'])
        .map(str::trim)
        .find(|s| !s.is_empty())?;
    let program = last
        .split_whitespace()
        .find(|w| !w.contains('='))?
        .rsplit('/')
        .next()?;
    match (program, exit_code) {
        ("grep" | "egrep" | "fgrep" | "rg" | "ag" | "ack", 1) => {
            Some("No matches found (not an error)")
        }
        ("diff" | "cmp", 1) => Some("Files differ (not an error)"),
        ("test" | "[" | "[[", 1) => Some("Condition is false (not an error)"),
        ("find", 1) => Some("Some paths could not be read; the other results are valid"),
        ("curl", 22) => Some("The HTTP request returned an error status (4xx/5xx)"),
        ("git", 1) if last.contains(" diff") => Some("Differences found (not an error)"),
        (_, 124) => Some("Command timed out"),
        (_, 130) => Some("Command was interrupted"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles() {
        for pattern in std::iter::once(ANSI_PATTERN).chain(CREDENTIAL_PATTERNS) {
            if let Err(e) = Regex::new(pattern) {
                panic!("{pattern}: {e}");
            }
        }
        assert!(ANSI.is_some());
        assert_eq!(CREDENTIALS.len(), CREDENTIAL_PATTERNS.len());
    }

    #[test]
    fn ansi_sequences_and_carriage_returns_are_stripped() {
        assert_eq!(strip_ansi("\x1b[1;31mred\x1b[0m\r\n"), "red\n");
        assert_eq!(strip_ansi("\x1b]0;title\x07text"), "text");
        assert_eq!(strip_ansi("plain"), "plain");
    }

    #[test]
    fn granted_secrets_and_credential_patterns_are_redacted() {
        let secrets = vec!["s3cr3t-value".to_owned(), "on".to_owned()];
        assert_eq!(
            redact("key is s3cr3t-value, on", &secrets),
            "key is [REDACTED], on"
        );
        assert_eq!(
            redact("AKIAABCDEFGHIJKLMNOP", &[]),
            "[REDACTED]",
            "AWS access key id"
        );
        assert_eq!(
            redact("Authorization: Bearer abcdefghijklmnop", &[]),
            "Authorization: Bearer [REDACTED]"
        );
        assert_eq!(
            redact("DB_PASSWORD=hunter22", &[]),
            "DB_PASSWORD=[REDACTED]"
        );
        assert_eq!(
            redact("sk-proj-abcdefghijklmnopqrstuvwxyz", &[]),
            "[REDACTED]"
        );
        assert_eq!(redact("nothing here", &[]), "nothing here");
    }

    #[test]
    fn long_output_keeps_forty_percent_head_and_sixty_percent_tail() {
        let text = format!("{}{}", "a".repeat(60_000), "b".repeat(40_000));
        let mut ht = HeadTail::default();
        ht.push(&text);
        let (kept, total) = ht.into_parts();
        let out = cap(&kept, total);
        assert!(out.starts_with(&"a".repeat(20_000)));
        assert!(out.ends_with(&"b".repeat(30_000)));
        assert!(out.contains("[OUTPUT TRUNCATED - 50000 characters omitted out of 100000 total]"));
        assert_eq!(cap("short", 5), "short");
    }

    #[test]
    fn exit_codes_that_are_not_errors_get_a_note() {
        assert_eq!(
            exit_code_meaning("cat x | grep foo", 1),
            Some("No matches found (not an error)")
        );
        assert_eq!(
            exit_code_meaning("diff a b", 1),
            Some("Files differ (not an error)")
        );
        assert_eq!(exit_code_meaning("grep foo x", 2), None);
        assert_eq!(exit_code_meaning("false", 1), None);
        assert_eq!(exit_code_meaning("grep foo x", 0), None);
    }
}
