//! Scrubbing a secret out of text in every form the host may have put it on the wire.
//!
//! The host sends a bound secret raw in a header (`Authorization: Bearer {}`) or
//! percent-encoded in a query (`key=q5ecr3t%2BTok%2Fen%3D%3D`), and a destination may
//! hand it back in a body that echoes the request, or in a redirect that keeps the
//! query — as written, or re-encoded by the server's own rules (lower-case hex, `+`
//! for a space, unreserved characters encoded or not). So a value is matched with each
//! character either as itself or percent-encoded in either case (a space also as
//! `+`), in any mix: that covers the raw value, the formatted one (`Bearer X` holds
//! `X`), and every percent-encoding of either. A value re-encoded some other way
//! (base64, HTML or JSON escapes, split across strings) is not caught.

use regex::{NoExpand, Regex, RegexBuilder};
use std::borrow::Cow;
use std::sync::Arc;

/// What a scrubbed secret value becomes.
pub(crate) const REDACTED: &str = "[REDACTED]";

/// Longest value (bytes) matched as a pattern; a longer one (a certificate, a key
/// file) is matched in its five fixed forms only ([`WireForms::literal`]), so that no
/// secret costs a pattern of megabytes.
const MAX_PATTERN_BYTES: usize = 4096;

/// Compiled size a value's pattern may take (a 4 KiB value needs well under this).
const PATTERN_SIZE_LIMIT: usize = 32 << 20;

/// The forms of one secret value that are scrubbed, compiled once when the secrets
/// are read. `Debug` never shows the value.
pub(crate) struct WireForms {
    matcher: Matcher,
    /// The value's length, to scrub longer values first (a value that holds another
    /// is removed whole, not cut around the shorter one).
    len: usize,
}

enum Matcher {
    /// Each character as itself or percent-encoded (either hex case; a space also
    /// `+`), in any mix.
    Pattern(Regex),
    /// Raw, percent-encoded in upper and lower hex, each with `+` for a space.
    Literal(Vec<String>),
}

impl std::fmt::Debug for WireForms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WireForms")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl WireForms {
    /// The forms of `value`; `None` for an empty one (nothing to scrub).
    pub(crate) fn of(value: &str) -> Option<Self> {
        if value.is_empty() {
            return None;
        }
        let matcher = if value.len() <= MAX_PATTERN_BYTES {
            RegexBuilder::new(&pattern(value))
                .size_limit(PATTERN_SIZE_LIMIT)
                .build()
                .map(Matcher::Pattern)
                .unwrap_or_else(|_| Matcher::Literal(literal(value)))
        } else {
            Matcher::Literal(literal(value))
        };
        Some(Self {
            matcher,
            len: value.len(),
        })
    }

    /// `text` with every form of the value replaced by [`REDACTED`] (borrowed when
    /// there is none).
    fn replace<'t>(&self, text: &'t str) -> Cow<'t, str> {
        match &self.matcher {
            Matcher::Pattern(re) => re.replace_all(text, NoExpand(REDACTED)),
            Matcher::Literal(forms) => {
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
}

/// The pattern of `value`: each character as itself or as the percent-encoding of its
/// UTF-8 bytes, hex digits in either case; a space also as `+`.
fn pattern(value: &str) -> String {
    let mut out = String::with_capacity(value.len() * 24);
    let mut utf8 = [0u8; 4];
    for c in value.chars() {
        out.push_str("(?:");
        out.push_str(&regex::escape(c.encode_utf8(&mut utf8)));
        out.push('|');
        for b in c.encode_utf8(&mut utf8).bytes() {
            out.push('%');
            hex_either_case(&mut out, b >> 4);
            hex_either_case(&mut out, b & 0xf);
        }
        if c == ' ' {
            out.push_str(r"|\+");
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
/// both with `+` for a space. Longest first, no duplicates.
fn literal(value: &str) -> Vec<String> {
    let upper = crate::policy::network::percent_encode(value);
    let lower = lower_hex(&upper);
    let mut forms = vec![
        value.to_owned(),
        upper.replace("%20", "+"),
        lower.replace("%20", "+"),
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

/// What one call's texts — result, error, log and progress lines, output — are
/// scrubbed of: the forms of the secrets the host adds to its requests. Cheap to
/// clone; built per call from forms compiled once ([`crate::Secrets`]).
#[derive(Debug, Clone)]
pub(crate) struct Scrubber(Arc<[Arc<WireForms>]>);

impl Scrubber {
    /// A scrubber of `forms` (longest value first); `None` when there are none.
    pub(crate) fn new(mut forms: Vec<Arc<WireForms>>) -> Option<Self> {
        forms.sort_by_key(|f| std::cmp::Reverse(f.len));
        forms.dedup_by(|a, b| Arc::ptr_eq(a, b));
        (!forms.is_empty()).then(|| Self(forms.into()))
    }

    /// `text` with every form of every secret replaced by [`REDACTED`] (borrowed
    /// when there is none).
    pub(crate) fn scrub<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out = Cow::Borrowed(text);
        for forms in self.0.iter() {
            let replaced = match forms.replace(&out) {
                Cow::Owned(s) => Some(s),
                Cow::Borrowed(_) => None,
            };
            if let Some(s) = replaced {
                out = Cow::Owned(s);
            }
        }
        out
    }

    /// Whether `text` holds any form of any secret.
    pub(crate) fn finds(&self, text: &str) -> bool {
        self.0.iter().any(|forms| match &forms.matcher {
            Matcher::Pattern(re) => re.is_match(text),
            Matcher::Literal(all) => all.iter().any(|f| text.contains(f.as_str())),
        })
    }

    /// [`Scrubber::scrub`] of an owned `text`, returned as it came when there is
    /// nothing in it.
    pub(crate) fn scrub_string(&self, text: String) -> String {
        match self.scrub(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(s) => s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scrubber(values: &[&str]) -> Scrubber {
        Scrubber::new(
            values
                .iter()
                .filter_map(|v| WireForms::of(v).map(Arc::new))
                .collect(),
        )
        .unwrap()
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
        let forms = WireForms::of(&value).unwrap();
        assert!(matches!(forms.matcher, Matcher::Literal(_)));
        let s = Scrubber::new(vec![Arc::new(forms)]).unwrap();
        let upper = crate::policy::network::percent_encode(&value);
        for text in [
            value.clone(),
            upper.clone(),
            upper.to_ascii_lowercase(),
            upper.replace("%20", "+"),
        ] {
            assert_eq!(s.scrub(&format!("<{text}>")), format!("<{REDACTED}>"));
        }
    }

    #[test]
    fn a_value_at_the_pattern_limit_is_still_a_pattern() {
        // Every character one the query encoding changes: the largest pattern there is.
        let value = "/+ é".repeat(MAX_PATTERN_BYTES / 5);
        assert!(value.len() <= MAX_PATTERN_BYTES);
        let forms = WireForms::of(&value).unwrap();
        assert!(matches!(forms.matcher, Matcher::Pattern(_)));
        let s = Scrubber::new(vec![Arc::new(forms)]).unwrap();
        let encoded = crate::policy::network::percent_encode(&value).to_ascii_lowercase();
        assert_eq!(s.scrub(&format!("<{encoded}>")), format!("<{REDACTED}>"));
    }

    #[test]
    fn an_empty_value_scrubs_nothing_and_debug_never_shows_a_value() {
        assert!(WireForms::of("").is_none());
        assert!(Scrubber::new(Vec::new()).is_none());
        let s = scrubber(&["hunter2-secret"]);
        assert!(!format!("{s:?}").contains("hunter2"));
        assert_eq!(lower_hex("A%2FB%3D"), "A%2fB%3d");
    }
}
