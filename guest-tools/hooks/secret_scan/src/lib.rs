//! Bundled hook `secret_scan`: a call's arguments (before) and its result (after) are
//! searched for credentials — well-known credential shapes, and the values of the
//! secrets the host holds (asked of the host, which never hands the values over) — and
//! the operator's `mode` decides what happens:
//!
//! - `"deny"` (default): a call whose arguments hold one is refused; a result that holds
//!   one is replaced by an error naming what was found (never the credential).
//! - `"redact"`: each one is replaced by `[REDACTED:KIND]`, in every string of the
//!   arguments or result, and the call goes on.
//!
//! Strings are searched after JSON unescaping, so a credential written with escapes is
//! found as well.

use hermetic_sdk::hook::{After, Before, Call, Hook, secrets};
use hermetic_sdk::serde_json::{self, Value, json};
use regex::Regex;
use std::sync::OnceLock;

/// Credential shapes: (kind, pattern). ASCII-only patterns (no Unicode tables needed).
const SHAPES: &[(&str, &str)] = &[
    ("aws_access_key", r"(?-u)\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    (
        "github_token",
        r"(?-u)\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b",
    ),
    ("slack_token", r"(?-u)\bxox[abposr]-[A-Za-z0-9-]{10,250}"),
    (
        "private_key",
        r"(?-u)-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----",
    ),
    ("api_key", r"(?-u)\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,250}"),
    ("google_api_key", r"(?-u)\bAIza[0-9A-Za-z_-]{35}\b"),
    ("stripe_key", r"(?-u)\b(?:sk|rk)_live_[0-9A-Za-z]{16,250}"),
    (
        "jwt",
        r"(?-u)\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    ),
];

/// A shape as this run knows it: the words it needs, and its regex once a text had
/// them. Every run is a fresh sandbox, so compiling all eight for every call cost ~3 ms
/// a call (hooks bench); most texts hold none of their words and compile none.
struct Shape {
    kind: &'static str,
    pattern: &'static str,
    words: pattern_words::Words,
    regex: OnceLock<Option<Regex>>,
}

impl Shape {
    fn regex(&self) -> Option<&Regex> {
        self.regex
            .get_or_init(|| Regex::new(self.pattern).ok())
            .as_ref()
    }
}

fn shapes() -> &'static [Shape] {
    static SHAPES_READ: OnceLock<Vec<Shape>> = OnceLock::new();
    SHAPES_READ.get_or_init(|| {
        SHAPES
            .iter()
            .map(|&(kind, pattern)| Shape {
                kind,
                pattern,
                words: pattern_words::Words::of(pattern),
                regex: OnceLock::new(),
            })
            .collect()
    })
}

/// Every credential in `text`: (start, end, kind), sorted, overlaps merged (the first
/// kind kept).
fn found(text: &str) -> Vec<(usize, usize, &'static str)> {
    let mut spans: Vec<(usize, usize, &'static str)> = secrets::find(text)
        .into_iter()
        .map(|(s, e)| (s, e, "host_secret"))
        .collect();
    for shape in shapes() {
        if !shape.words.may_match(text) {
            continue;
        }
        if let Some(regex) = shape.regex() {
            spans.extend(
                regex
                    .find_iter(text)
                    .map(|m| (m.start(), m.end(), shape.kind)),
            );
        }
    }
    spans.sort();
    let mut merged: Vec<(usize, usize, &'static str)> = Vec::new();
    for span in spans {
        match merged.last_mut() {
            Some(last) if span.0 < last.1 => last.1 = last.1.max(span.1),
            _ => merged.push(span),
        }
    }
    merged
}

/// `text` with each credential replaced; the kinds found.
fn redact(text: &str, kinds: &mut Vec<&'static str>) -> String {
    let spans = found(text);
    if spans.is_empty() {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end, kind) in spans {
        // Spans come from the host or from regex matches: on char boundaries, but a
        // confused host must not make the hook panic.
        let (Some(before), true) = (text.get(at..start), text.is_char_boundary(end)) else {
            continue;
        };
        out.push_str(before);
        out.push_str(&format!("[REDACTED:{kind}]"));
        at = end;
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    out.push_str(text.get(at..).unwrap_or_default());
    out
}

/// Redacts every string (keys included) of `value`.
fn redact_value(value: &Value, kinds: &mut Vec<&'static str>) -> Value {
    match value {
        Value::String(s) => Value::String(redact(s, kinds)),
        Value::Array(items) => Value::Array(items.iter().map(|v| redact_value(v, kinds)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (redact(k, kinds), redact_value(v, kinds)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn deny_mode(call: &Call) -> bool {
    call.config.get("mode").and_then(Value::as_str) != Some("redact")
}

struct SecretScan;

impl Hook for SecretScan {
    fn pre_call(call: &Call) -> Before {
        let mut kinds = Vec::new();
        let redacted = redact_value(&call.args, &mut kinds);
        if kinds.is_empty() {
            return Before::Allow;
        }
        if deny_mode(call) {
            return Before::Deny(format!(
                "the arguments hold a credential ({}); remove it and call again",
                kinds.join(", ")
            ));
        }
        Before::Rewrite(redacted)
    }

    fn post_call(call: &Call, result: &str) -> After {
        let mut kinds = Vec::new();
        let redacted = match serde_json::from_str::<Value>(result) {
            Ok(value) => redact_value(&value, &mut kinds).to_string(),
            Err(_) => redact(result, &mut kinds),
        };
        if kinds.is_empty() {
            return After::Keep;
        }
        if deny_mode(call) {
            let error = format!(
                "the result was withheld: it holds a credential ({})",
                kinds.join(", ")
            );
            return After::Replace(json!({ "error": error }).to_string());
        }
        After::Replace(redacted)
    }
}

hermetic_sdk::export_hook!(
    SecretScan,
    r#"
name = "secret_scan"
description = "Finds credentials in arguments and results; denies or redacts"
[hook]
[capabilities]
secret_scan = true
"#
);
