//! Scrubbing a secret out of text in every form the host may have put it on the wire.
//!
//! The host sends a bound secret raw in a header (`Authorization: Bearer {}`) or
//! percent-encoded in a query (`key=q5ecr3t%2BTok%2Fen%3D%3D`), and a destination may
//! hand it back in a body that echoes the request, or in a redirect that keeps the
//! query — as written, or re-encoded by the server's own rules (lower-case hex, `+`
//! for a space, unreserved characters encoded or not), or encoded once more inside
//! another URL (`/login?next=…%3Fkey%3Dq5ecr3t%252BTok…`). So a value is matched with
//! each character either as itself or percent-encoded in either case, the `%` itself
//! encoded up to three times more (a space also as `+`), in any mix: that covers the
//! raw value, the formatted one (`Bearer X` holds `X`), and every percent-encoding of
//! either. A result is scrubbed in its parsed form, so JSON escapes are read too. A
//! value re-encoded some other way (base64, HTML escapes, split across strings) is
//! not caught.

use regex::{NoExpand, Regex, RegexBuilder};
use serde_json::Value;
use std::borrow::Cow;
use std::sync::Arc;

/// What a scrubbed secret value becomes.
pub(crate) const REDACTED: &str = "[REDACTED]";

/// Longest value (bytes) matched as a pattern; a longer one (a certificate, a key
/// file) is matched in its fixed forms only ([`literal`]), so that no secret costs a
/// pattern of megabytes.
const MAX_PATTERN_BYTES: usize = 4096;

/// Compiled size one value's pattern may take (a 4 KiB value needs well under this);
/// the patterns of all values together get this much per value.
const PATTERN_SIZE_LIMIT: usize = 32 << 20;

/// How many times over an encoded byte's `%` may itself be percent-encoded and still be
/// matched (`%2B`, `%252B`, `%25252B`, `%2525252B`): a URL carried inside another
/// URL's query (`/login?next=https%3A…%3Fkey%3Dq5ecr3t%252B…`) is encoded twice.
const MAX_EXTRA_ENCODINGS: usize = 3;

/// How one group of values is found.
enum Matcher {
    /// Each character of each value as itself or percent-encoded (either hex case,
    /// the `%` itself encoded up to [`MAX_EXTRA_ENCODINGS`] times; a space also `+`),
    /// in any mix; the values as alternatives, longest first.
    Pattern(Regex),
    /// One value's fixed forms (see [`literal`]), longest first.
    Literal(Vec<String>),
}

impl Matcher {
    /// `text` with every match replaced by [`REDACTED`] (borrowed when there is none).
    fn replace<'t>(&self, text: &'t str) -> Cow<'t, str> {
        match self {
            Self::Pattern(re) => re.replace_all(text, NoExpand(REDACTED)),
            Self::Literal(forms) => {
                let mut out = Cow::Borrowed(text);
                for form in forms {
                    if out.contains(form.as_str()) {
                        out = Cow::Owned(out.replace(form.as_str(), REDACTED));
                    }
                }
                out
            }
        }
    }

    fn finds(&self, text: &str) -> bool {
        match self {
            Self::Pattern(re) => re.is_match(text),
            Self::Literal(forms) => forms.iter().any(|f| text.contains(f.as_str())),
        }
    }
}

/// The pattern of `value`: each character as itself or as the percent-encoding of its
/// UTF-8 bytes, hex digits in either case, each `%` possibly encoded again (`%25`)
/// up to [`MAX_EXTRA_ENCODINGS`] times; a space also as `+` (or `+` encoded).
fn pattern(value: &str) -> String {
    let mut out = String::with_capacity(value.len() * 32);
    let mut utf8 = [0u8; 4];
    let percent = format!("%(?:25){{0,{MAX_EXTRA_ENCODINGS}}}");
    for c in value.chars() {
        out.push_str("(?:");
        out.push_str(&regex::escape(c.encode_utf8(&mut utf8)));
        out.push('|');
        for b in c.encode_utf8(&mut utf8).bytes() {
            out.push_str(&percent);
            hex_either_case(&mut out, b >> 4);
            hex_either_case(&mut out, b & 0xf);
        }
        if c == ' ' {
            out.push_str(r"|\+|");
            out.push_str(&percent);
            out.push_str("2[bB]");
        }
        out.push(')');
    }
    out
}

/// One hex digit of `nibble`, as a class of both cases for a letter.
fn hex_either_case(out: &mut String, nibble: u8) {
    const UPPER: &[u8; 16] = b"0123456789ABCDEF";
    let upper = char::from(UPPER[usize::from(nibble & 0xf)]);
    if upper.is_ascii_digit() {
        out.push(upper);
    } else {
        out.push('[');
        out.push(upper);
        out.push(upper.to_ascii_lowercase());
        out.push(']');
    }
}

/// The fixed forms of `value`: raw; percent-encoded as the host encodes a query
/// value (`hermetic_policy::network::percent_encode`, upper hex) and in lower hex;
/// both with `+` for a space; and both encoded once more (`%252B`). Longest first, no
/// duplicates.
fn literal(value: &str) -> Vec<String> {
    let encode = crate::policy::network::percent_encode;
    let upper = encode(value);
    let lower = lower_hex(&upper);
    let twice = encode(&upper);
    let mut forms = vec![
        value.to_owned(),
        upper.replace("%20", "+"),
        lower.replace("%20", "+"),
        lower_hex(&twice),
        twice,
        upper,
        lower,
    ];
    forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
    forms.dedup();
    forms
}

/// `encoded` (percent-encoded) with every escape's hex digits in lower case.
fn lower_hex(encoded: &str) -> String {
    let mut out = String::with_capacity(encoded.len());
    let mut left = 0;
    for c in encoded.chars() {
        if c == '%' {
            left = 2;
            out.push(c);
        } else if left > 0 {
            left -= 1;
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// What texts — results, errors, log and progress lines, output, the headers of a
/// response to a request that got a secret — are scrubbed of: every form of the
/// secrets the host adds to requests. Built once ([`crate::Secrets::scrubber`]);
/// cheap to clone. `Debug` never shows a value.
#[derive(Clone)]
pub(crate) struct Scrubber(Arc<[Matcher]>);

impl std::fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scrubber")
            .field("matchers", &self.0.len())
            .finish_non_exhaustive()
    }
}

impl Scrubber {
    /// A scrubber of `values`; `None` when there is none (or only empty ones).
    ///
    /// Longer values are scrubbed first, so a value that holds another is removed
    /// whole, not cut around the shorter one: the long ones matched literally, then
    /// the rest as one pattern whose alternatives run longest first (one pass over a
    /// text whatever the number of values). Values whose patterns together pass the
    /// size limit get a pattern each, and a value whose own pattern does, its fixed
    /// forms.
    pub(crate) fn new(mut values: Vec<&str>) -> Option<Self> {
        values.retain(|v| !v.is_empty());
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        if values.is_empty() {
            return None;
        }
        let split = values.partition_point(|v| v.len() > MAX_PATTERN_BYTES);
        let (long, short) = values.split_at(split);
        let mut matchers: Vec<Matcher> =
            long.iter().map(|v| Matcher::Literal(literal(v))).collect();
        let one =
            |pattern: &str, limit: usize| RegexBuilder::new(pattern).size_limit(limit).build().ok();
        if !short.is_empty() {
            let patterns: Vec<String> = short.iter().map(|v| pattern(v)).collect();
            let all = patterns
                .iter()
                .map(|p| format!("(?:{p})"))
                .collect::<Vec<_>>()
                .join("|");
            match one(&all, PATTERN_SIZE_LIMIT.saturating_mul(short.len())) {
                Some(re) => matchers.push(Matcher::Pattern(re)),
                None => {
                    for (value, pattern) in short.iter().zip(&patterns) {
                        matchers.push(match one(pattern, PATTERN_SIZE_LIMIT) {
                            Some(re) => Matcher::Pattern(re),
                            None => Matcher::Literal(literal(value)),
                        });
                    }
                }
            }
        }
        Some(Self(matchers.into()))
    }

    /// `text` with every form of every secret replaced by [`REDACTED`] (borrowed
    /// when there is none).
    pub(crate) fn scrub<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out = Cow::Borrowed(text);
        for matcher in self.0.iter() {
            if let Cow::Owned(s) = matcher.replace(&out) {
                out = Cow::Owned(s);
            }
        }
        out
    }

    /// Whether `text` holds any form of any secret.
    pub(crate) fn finds(&self, text: &str) -> bool {
        self.0.iter().any(|m| m.finds(text))
    }

    /// [`Scrubber::scrub`] of an owned `text`, returned as it came when there is
    /// nothing in it.
    pub(crate) fn scrub_string(&self, text: String) -> String {
        match self.scrub(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(s) => s,
        }
    }

    /// `json` (a result: JSON text, or any text) scrubbed in its parsed form — every
    /// string and key — so it stays valid JSON whatever the value looks like, and a
    /// value written with JSON escapes (`\u002b`) is found too; text that is not JSON
    /// is scrubbed as text. Returned as it came when there is nothing to scrub: text
    /// without a backslash holds every string of it verbatim, so one pass over it
    /// decides, with no parse (the common case).
    pub(crate) fn scrub_json(&self, json: String) -> String {
        if !json.contains('\\') && !self.finds(&json) {
            return json;
        }
        let Ok(mut value) = serde_json::from_str::<Value>(&json) else {
            return self.scrub_string(json);
        };
        if self.scrub_value(&mut value) {
            value.to_string()
        } else {
            json
        }
    }

    /// Scrubs every string and key of `value` in place; whether anything changed.
    fn scrub_value(&self, value: &mut Value) -> bool {
        match value {
            Value::String(s) => match self.scrub(s) {
                Cow::Borrowed(_) => false,
                Cow::Owned(clean) => {
                    *s = clean;
                    true
                }
            },
            Value::Array(items) => items
                .iter_mut()
                .fold(false, |changed, item| self.scrub_value(item) | changed),
            Value::Object(map) => {
                let mut changed = false;
                let keys_clean = map.keys().all(|k| !self.finds(k));
                if keys_clean {
                    for item in map.values_mut() {
                        changed |= self.scrub_value(item);
                    }
                    return changed;
                }
                let entries = std::mem::take(map);
                for (key, mut item) in entries {
                    self.scrub_value(&mut item);
                    map.insert(self.scrub_string(key), item);
                }
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scrubber(values: &[&str]) -> Scrubber {
        Scrubber::new(values.to_vec()).unwrap()
    }

    fn only_literals(s: &Scrubber) -> bool {
        s.0.iter().all(|m| matches!(m, Matcher::Literal(_)))
    }

    #[test]
    fn every_form_the_host_writes_and_a_server_echoes_is_scrubbed() {
        let s = scrubber(&["q5ecr3t+Tok/en== z"]);
        for text in [
            // Raw (a body echoing a header), formatted, as the host encodes a query,
            // in lower hex, with `+` for the space, every character encoded, and the
            // mixes servers write (unreserved characters encoded, `/` left alone).
            "q5ecr3t+Tok/en== z",
            "Bearer q5ecr3t+Tok/en== z",
            "key=q5ecr3t%2BTok%2Fen%3D%3D%20z",
            "key=q5ecr3t%2bTok%2fen%3d%3d%20z",
            "key=q5ecr3t%2BTok%2Fen%3D%3D+z",
            "key=q5ecr3t%2bTok%2fen%3d%3d+z",
            "key=%71%35%65%63%72%33%74%2B%54%6F%6B%2F%65%6E%3D%3D%20%7A",
            "key=q5ecr3t%2BTok/en%3d%3D+z",
            // Encoded once more inside another URL (a login redirect's `next=`),
            // and again.
            "next=https%3A%2F%2Fapi%3Fkey%3Dq5ecr3t%252BTok%252Fen%253D%253D%2520z",
            "next=q5ecr3t%252bTok%252fen%253d%253d%252Bz",
            "q5ecr3t%25252BTok%2525252Fen%3D%253d+z",
        ] {
            let out = s.scrub(text);
            assert!(out.contains(REDACTED), "{text} -> {out}");
            for piece in ["q5ecr3t", "Tok", "en=="] {
                assert!(!out.contains(piece), "{text} -> {out}");
            }
        }
        assert_eq!(
            s.scrub("GET /q?key=q5ecr3t%2bTok%2fen%3d%3d+z&y=1 HTTP/1.1"),
            "GET /q?key=[REDACTED]&y=1 HTTP/1.1"
        );
        // Nothing to scrub: nothing copied.
        assert!(matches!(s.scrub("nothing here"), Cow::Borrowed(_)));
        // The case of the value's own letters counts; only hex digits go either way.
        assert!(matches!(s.scrub("Q5ECR3T+TOK/EN== Z"), Cow::Borrowed(_)));
        assert_eq!(
            s.scrub("/login?next=%2Fq%3Fkey%3Dq5ecr3t%252BTok%252Fen%253D%253D%2520z%26y%3D1"),
            "/login?next=%2Fq%3Fkey%3D[REDACTED]%26y%3D1"
        );
        // Four more encodings of the `%` are past what is looked for.
        assert!(!s.finds("q5ecr3t%2525252525252BTok/en== z"));
    }

    #[test]
    fn non_ascii_values_match_encoded_byte_by_byte() {
        let s = scrubber(&["pässwörd-1"]);
        assert_eq!(s.scrub("a pässwörd-1 b"), "a [REDACTED] b");
        assert_eq!(s.scrub("p%C3%A4ssw%c3%b6rd-1"), REDACTED);
    }

    #[test]
    fn a_value_holding_another_is_scrubbed_whole() {
        let s = scrubber(&["abc-123", "xx-abc-123-yy"]);
        assert_eq!(
            s.scrub("[xx-abc-123-yy] abc-123"),
            "[[REDACTED]] [REDACTED]"
        );
    }

    #[test]
    fn values_too_long_for_a_pattern_are_scrubbed_in_their_fixed_forms() {
        let value = format!("{}/ {}", "k".repeat(MAX_PATTERN_BYTES), "v".repeat(10));
        let s = scrubber(&[&value]);
        assert!(only_literals(&s));
        let upper = crate::policy::network::percent_encode(&value);
        for text in [
            value.clone(),
            upper.clone(),
            upper.to_ascii_lowercase(),
            upper.replace("%20", "+"),
            crate::policy::network::percent_encode(&upper),
        ] {
            assert_eq!(s.scrub(&format!("<{text}>")), format!("<{REDACTED}>"));
        }
    }

    #[test]
    fn a_value_at_the_pattern_limit_is_still_a_pattern() {
        // Every character one the query encoding changes: the largest pattern there is.
        let value = "/+ é".repeat(MAX_PATTERN_BYTES / 5);
        assert!(value.len() <= MAX_PATTERN_BYTES);
        let s = scrubber(&[&value]);
        assert!(!only_literals(&s));
        let encoded = crate::policy::network::percent_encode(&value).to_ascii_lowercase();
        assert_eq!(s.scrub(&format!("<{encoded}>")), format!("<{REDACTED}>"));
    }

    #[test]
    fn many_values_are_one_pattern_long_ones_literals_and_the_longest_goes_first() {
        let long = format!("{}-abc-123", "L".repeat(MAX_PATTERN_BYTES));
        let s = scrubber(&["abc-123", "xx-abc-123-yy", "zz9", &long, "abc-123"]);
        // The long value's forms, then one pattern for the three short ones.
        assert_eq!(s.0.len(), 2);
        assert!(matches!(s.0[0], Matcher::Literal(_)));
        assert!(matches!(s.0[1], Matcher::Pattern(_)));
        assert_eq!(
            s.scrub(&format!("<{long}> xx-abc-123-yy zz9 abc-123")),
            "<[REDACTED]> [REDACTED] [REDACTED] [REDACTED]"
        );
    }

    #[test]
    fn a_result_is_scrubbed_as_json_and_left_alone_when_clean() {
        let s = scrubber(&["q5ecr3t+Tok"]);
        let clean = r#"{"a":"nothing","b":[1,"x\n"]}"#.to_owned();
        assert_eq!(s.scrub_json(clean.clone()), clean);
        // A JSON escape inside the value, in a key and in a string.
        let escaped = r#"{"q5ecr3t\u002bTok":["key=q5ecr3t\u002BTok"],"n":1}"#;
        let out: Value = serde_json::from_str(&s.scrub_json(escaped.to_owned())).unwrap();
        assert_eq!(
            out,
            serde_json::json!({"[REDACTED]": ["key=[REDACTED]"], "n": 1})
        );
        // Not JSON: scrubbed as text.
        assert_eq!(s.scrub_json("x q5ecr3t+Tok".to_owned()), "x [REDACTED]");
    }

    #[test]
    fn an_empty_value_scrubs_nothing_and_debug_never_shows_a_value() {
        assert!(Scrubber::new(vec![""]).is_none());
        assert!(Scrubber::new(Vec::new()).is_none());
        let s = scrubber(&["hunter2-secret"]);
        assert!(!format!("{s:?}").contains("hunter2"));
        assert_eq!(lower_hex("A%2FB%3D"), "A%2fB%3d");
    }
}
