//! Secrets a tool uses but never holds: the operator binds a secret to one destination
//! (`scheme://host[:port]` and a path prefix) and says where it goes — a header in a
//! format (`Authorization: Bearer {}`) or a query parameter. The host adds it to a
//! request after the destination check; the guest never sees the value, and results
//! and logs are scrubbed of it.
//!
//! The prefix is matched on the path as a server routes it ([`RequestPath`]), and a
//! request to a host with a binding whose path a server could route elsewhere than it
//! reads (`/v1/../admin`, `/v1/%2e%2e/admin`, `/v1%2fadmin`, IIS's `/v1/%u002e%u002e`,
//! fullwidth `/v1/．．/admin` that NFKC makes `..`) is refused outright: the host cannot
//! know how the destination normalises, so it sends no such path there.

use crate::network::{Destination, HostPattern, Port, Scheme};
use serde::Serialize;
use std::borrow::Cow;

/// Where the value goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InjectInto {
    /// This request header (replacing one the guest set).
    Header(String),
    /// This query parameter (replacing one the guest set).
    Query(String),
}

/// One binding of a secret to a destination.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SecretInjection {
    /// The secret's name in the secrets file.
    pub secret: String,
    /// The destination: an exact host (or IP) and port, never a wildcard.
    pub destination: Destination,
    /// Requests whose path starts with this (`/` for all).
    pub path_prefix: String,
    /// Header or query parameter.
    pub into: InjectInto,
    /// The value's format, with one `{}` for the secret (`Bearer {}`).
    pub format: String,
}

/// A binding that cannot work, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InjectionError(pub String);

impl SecretInjection {
    /// A binding of `secret` to `target` (`scheme://host[:port][/path/prefix]`).
    ///
    /// # Errors
    /// [`InjectionError`] for a wildcard or any-host destination (the secret could go
    /// to a host the operator never named), a malformed target, a path prefix a
    /// server could route elsewhere (see [`RequestPath::parse`]; it is kept decoded),
    /// a header name that is not a token, or a format without exactly one `{}`.
    pub fn new(
        secret: &str,
        target: &str,
        into: InjectInto,
        format: &str,
    ) -> Result<Self, InjectionError> {
        let err = |m: String| InjectionError(m);
        let (scheme_sep, rest) = target
            .split_once("://")
            .ok_or_else(|| err(format!("{target:?}: write scheme://host[:port][/path]")))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if path.contains(['?', '#']) {
            return Err(err(format!("{target:?}: the path prefix is a plain path")));
        }
        // Kept decoded: it is compared with request paths as a server routes them.
        let path = RequestPath::parse(path)
            .ok()
            .and_then(|p| String::from_utf8(p.0.into_owned()).ok())
            .ok_or_else(|| {
                err(format!(
                    "{target:?}: the path prefix is a plain path (no '.' or '..' segment, no %2f or %5c)"
                ))
            })?;
        let destination = Destination::parse(&format!("{scheme_sep}://{authority}"))
            .map_err(|e| err(e.to_string()))?;
        if matches!(
            destination.host,
            HostPattern::Wildcard(_) | HostPattern::Any
        ) || destination.port == Port::Any
        {
            return Err(err(format!(
                "{target:?}: a secret goes to one host and port, never a wildcard"
            )));
        }
        let name = match &into {
            InjectInto::Header(n) | InjectInto::Query(n) => n,
        };
        let token = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !token {
            return Err(err(format!("{name:?} is not a header or parameter name")));
        }
        if let InjectInto::Header(h) = &into
            && ["host", "content-length", "transfer-encoding", "connection"]
                .contains(&h.to_ascii_lowercase().as_str())
        {
            return Err(err(format!("{h:?} is not a header a secret may replace")));
        }
        if format.matches("{}").count() != 1 || format.contains(['\r', '\n']) {
            return Err(err(format!(
                "format {format:?} must hold exactly one {{}} (where the secret goes) and no line break"
            )));
        }
        Ok(Self {
            secret: secret.to_owned(),
            destination,
            path_prefix: path,
            into,
            format: format.to_owned(),
        })
    }

    /// Whether requests to `scheme://host:port` are this binding's host: the host whose
    /// request paths must parse as a [`RequestPath`] before they go out at all.
    pub fn binds(&self, scheme: Scheme, host: &str, port: u16) -> bool {
        self.destination.allows(scheme, host, port)
    }

    /// Whether a request to `scheme://host:port` + `path` gets this secret: the same
    /// scheme, host and port, and a path inside the prefix (segment-wise: `/v1` covers
    /// `/v1` and `/v1/x`, not `/v10`), compared as the server routes it.
    pub fn matches(&self, scheme: Scheme, host: &str, port: u16, path: &RequestPath<'_>) -> bool {
        if !self.binds(scheme, host, port) {
            return false;
        }
        let prefix = self.path_prefix.trim_end_matches('/').as_bytes();
        let path = path.as_bytes();
        prefix.is_empty()
            || path == prefix
            || path
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.first() == Some(&b'/'))
    }

    /// The value as it is sent.
    pub fn render(&self, secret: &str) -> String {
        self.format.replacen("{}", secret, 1)
    }
}

/// How many times a path is percent-decoded to look for what a server that decodes
/// more than once would see (`%252e` is `%2e` after one decoding, `.` after two).
/// A path still changing after this many is refused: no API needs it.
const MAX_DECODE_LEVELS: usize = 4;

/// A request path as a server routes it (percent-decoded once), known to hold nothing
/// a server could route differently from how it reads: made only by
/// [`RequestPath::parse`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestPath<'a>(Cow<'a, [u8]>);

/// Why a request path is refused for a host with a secret binding: a server that
/// normalises the path could route it outside the binding's prefix (and the secret with
/// it), or read it differently from how the host did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathRefusal {
    /// A `.` or `..` segment, also percent-encoded (`%2e%2E`), with a `;` parameter
    /// (`..;`) or padded with blanks.
    #[error("it holds a dot segment ('.' or '..', also written %2e)")]
    DotSegment,
    /// An encoded separator (`%2f`, `%5c`, any case) or a backslash, which some servers
    /// read as a `/`.
    #[error("it holds an encoded separator (%2f or %5c) or a backslash")]
    Separator,
    /// A control character, percent-encoded (`%00`, `%0d%0a`: a raw one never parses).
    #[error("it holds a percent-encoded control character")]
    Control,
    /// Percent-encoding that does not decode to UTF-8 (overlong forms such as `%c0%ae`
    /// are an old way to write `.` and `/` past a check).
    #[error("it percent-decodes to bytes that are not UTF-8")]
    NotUtf8,
    /// Percent-encoding of percent-encoding nested deeper than the host looks.
    #[error("it is percent-encoded more than {MAX_DECODE_LEVELS} times over")]
    TooDeep,
    /// IIS's `%uXXXX` escape (`%u002e%u002e` is `..` to it).
    #[error("it holds a %u escape (%uXXXX, which IIS decodes)")]
    UnicodeEscape,
    /// A character that Unicode compatibility normalisation (NFKC, which some servers
    /// and frameworks apply) turns into ASCII punctuation or a blank: fullwidth `．`
    /// and `／`, `‥`, `℅`, an ideographic space.
    #[error(
        "it holds a character that Unicode normalisation (NFKC) turns into punctuation or a blank (such as a fullwidth '．' or '／')"
    )]
    Compatibility,
}

impl<'a> RequestPath<'a> {
    /// The path `raw` (as sent: percent-encoded, no query) as a server routes it.
    ///
    /// # Errors
    /// A [`PathRefusal`] when `raw`, or `raw` percent-decoded any number of times, holds
    /// a dot segment, a separator other than a plain `/`, a control character or bytes
    /// that are not UTF-8. (Decoding repeatedly catches servers and proxies that decode
    /// twice; plain paths pass without any copy.)
    pub fn parse(raw: &'a str) -> Result<Self, PathRefusal> {
        let bytes = raw.as_bytes();
        check_level(bytes)?;
        if !bytes.contains(&b'%') {
            return Ok(Self(Cow::Borrowed(bytes)));
        }
        let once: Vec<u8> = percent_encoding::percent_decode(bytes).collect();
        let mut level = Cow::Borrowed(once.as_slice());
        for _ in 1..MAX_DECODE_LEVELS {
            check_level(&level)?;
            if !level.contains(&b'%') {
                return Ok(Self(Cow::Owned(once)));
            }
            let next: Cow<'_, [u8]> = percent_encoding::percent_decode(&level).into();
            if next.as_ref() == level.as_ref() {
                // Only `%`s that start no escape: nothing decodes further.
                return Ok(Self(Cow::Owned(once)));
            }
            level = Cow::Owned(next.into_owned());
        }
        Err(PathRefusal::TooDeep)
    }

    /// The decoded path's bytes (UTF-8, checked).
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

/// One decoding level of a path: refused for what a server could route differently.
fn check_level(bytes: &[u8]) -> Result<(), PathRefusal> {
    if bytes.contains(&b'\\')
        || bytes.windows(3).any(|w| {
            w[0] == b'%'
                && matches!(
                    (w[1], w[2].to_ascii_lowercase()),
                    (b'2', b'f') | (b'5', b'c')
                )
        })
    {
        return Err(PathRefusal::Separator);
    }
    if bytes.iter().any(u8::is_ascii_control) {
        return Err(PathRefusal::Control);
    }
    if bytes.windows(6).any(|w| {
        w[0] == b'%' && matches!(w[1], b'u' | b'U') && w[2..].iter().all(u8::is_ascii_hexdigit)
    }) {
        return Err(PathRefusal::UnicodeEscape);
    }
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err(PathRefusal::NotUtf8);
    };
    if !text.is_ascii() && text.chars().any(normalises_to_punctuation) {
        return Err(PathRefusal::Compatibility);
    }
    let dot = bytes.split(|b| *b == b'/').any(|segment| {
        // `..;x` is `..` to servers that strip path parameters (Tomcat), `.. ` to
        // ones that trim.
        let name = segment.split(|b| *b == b';').next().unwrap_or_default();
        matches!(name.trim_ascii(), b"." | b"..")
    });
    if dot {
        return Err(PathRefusal::DotSegment);
    }
    Ok(())
}

/// Whether `c` is a non-ASCII character whose compatibility decomposition (what NFKC
/// is made of: composition never yields ASCII) holds ASCII that is not a letter or a
/// digit. Letters and digits are left alone (`ｖ１` is `v1`: a server that normalises
/// routes it elsewhere than the host reads it, but only outside a prefix the host
/// would have matched, so no secret goes with it); punctuation and blanks could make
/// a dot segment, a separator, an escape or a `;` parameter.
fn normalises_to_punctuation(c: char) -> bool {
    if c.is_ascii() {
        return false;
    }
    let mut found = false;
    unicode_normalization::char::decompose_compatible(c, |d| {
        found |= d.is_ascii() && !d.is_ascii_alphanumeric();
    });
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binding_names_one_host_port_and_path() {
        let b = SecretInjection::new(
            "KEY",
            "https://api.weatherapi.com/v1",
            InjectInto::Header("Authorization".into()),
            "Bearer {}",
        )
        .unwrap();
        let path = |p: &'static str| RequestPath::parse(p).unwrap();
        let api = |p| b.matches(Scheme::Https, "api.weatherapi.com", 443, &path(p));
        assert!(api("/v1/current.json"));
        assert!(api("/v1"));
        assert!(api("/v1/"));
        // Matched as the server routes it: decoded, segment-wise.
        assert!(api("/%76%31/current.json"));
        assert!(!api("/v10/x"));
        assert!(!api("/v1;x/y"));
        assert!(!api("/other"));
        assert!(!b.matches(Scheme::Http, "api.weatherapi.com", 80, &path("/v1/x")));
        assert!(!b.matches(Scheme::Https, "evil.weatherapi.com", 443, &path("/v1/x")));
        assert!(!b.matches(Scheme::Https, "api.weatherapi.com", 8443, &path("/v1/x")));
        assert!(b.binds(Scheme::Https, "api.weatherapi.com", 443));
        assert!(!b.binds(Scheme::Https, "api.weatherapi.com", 8443));
        assert_eq!(b.render("s3"), "Bearer s3");
        let h = |n: &str| InjectInto::Header(n.into());
        for (target, into, format) in [
            ("https://*.example.com", h("X-Key"), "{}"),
            ("https://*", h("X-Key"), "{}"),
            ("https://example.com:*", h("X-Key"), "{}"),
            ("example.com", h("X-Key"), "{}"),
            ("https://example.com/a/../b", h("X-Key"), "{}"),
            ("https://example.com/a/./b", h("X-Key"), "{}"),
            ("https://example.com/a/%2e%2e/b", h("X-Key"), "{}"),
            ("https://example.com/a%2fb", h("X-Key"), "{}"),
            ("https://example.com", h("Host"), "{}"),
            ("https://example.com", h("X Key"), "{}"),
            ("https://example.com", h("X-Key"), "no placeholder"),
            ("https://example.com", h("X-Key"), "{} {}"),
            ("https://example.com", h("X-Key"), "{}\r\nX-Evil: 1"),
            (
                "https://example.com",
                InjectInto::Query(String::new()),
                "{}",
            ),
        ] {
            assert!(
                SecretInjection::new("K", target, into, format).is_err(),
                "{target} {format}"
            );
        }
    }

    #[test]
    fn a_prefix_is_kept_decoded() {
        let b = SecretInjection::new(
            "KEY",
            "https://api.example.com/v1%20beta",
            InjectInto::Query("key".into()),
            "{}",
        )
        .unwrap();
        assert_eq!(b.path_prefix, "/v1 beta");
        let path = RequestPath::parse("/v1%20beta/x").unwrap();
        assert!(b.matches(Scheme::Https, "api.example.com", 443, &path));
    }

    #[test]
    fn paths_a_server_could_route_elsewhere_are_refused() {
        use PathRefusal::*;
        for (raw, why) in [
            ("/v1/../admin", DotSegment),
            ("/v1/./../admin", DotSegment),
            ("/v1/.", DotSegment),
            ("/v1/%2e%2e/admin", DotSegment),
            ("/v1/%2E%2e/admin", DotSegment),
            ("/v1/.%2E/admin", DotSegment),
            ("/v1/%2e/admin", DotSegment),
            // Decoded twice by a proxy and then the server.
            ("/v1/%252e%252e/admin", DotSegment),
            // Tomcat strips path parameters; some servers trim blanks.
            ("/v1/..;x/admin", DotSegment),
            ("/v1/..%20/admin", DotSegment),
            ("/v1%2f..%2fadmin", Separator),
            ("/v1%2F..%2Fadmin", Separator),
            ("/v1/..%5cadmin", Separator),
            ("/v1/..%5Cadmin", Separator),
            ("/v1/%255c", Separator),
            ("/v1/%252f", Separator),
            ("/v1/x%00", Control),
            ("/v1/x%0d%0aX-Evil:%201", Control),
            // Overlong UTF-8 for '.' and '/'.
            ("/v1/%c0%ae%c0%ae/admin", NotUtf8),
            ("/v1/%c0%af", NotUtf8),
            ("/v1/%2525252525252e", TooDeep),
            // IIS's %u escapes, any case, also encoded once more.
            ("/v1/%u002e%u002e/admin", UnicodeEscape),
            ("/v1%U002Fadmin", UnicodeEscape),
            ("/v1/%25u002e%25u002e/admin", UnicodeEscape),
            // What NFKC makes `.`, `..`, `/`, `\`, `%`, `;` or a blank: raw (the http
            // crate takes UTF-8 in a path) or percent-encoded.
            ("/v1/\u{ff0e}\u{ff0e}/admin", Compatibility),
            ("/v1/%EF%BC%8E%EF%BC%8E/admin", Compatibility),
            ("/v1\u{ff0f}..\u{ff0f}admin", Compatibility),
            ("/v1/%ef%bc%8f", Compatibility),
            ("/v1/\u{2025}/admin", Compatibility),
            ("/v1/\u{2024}\u{2024}/admin", Compatibility),
            ("/v1/\u{ff3c}admin", Compatibility),
            ("/v1/\u{ff05}2e\u{ff05}2e", Compatibility),
            ("/v1/..\u{ff1b}x/admin", Compatibility),
            ("/v1/..\u{3000}/admin", Compatibility),
            ("/v1/%25EF%25BC%258E%25EF%25BC%258E/admin", Compatibility),
        ] {
            assert_eq!(RequestPath::parse(raw), Err(why), "{raw}");
        }
        for (raw, routed) in [
            ("/v1/x", "/v1/x"),
            ("/", "/"),
            ("/v1/a.b/..c/...", "/v1/a.b/..c/..."),
            ("/v1/100%25", "/v1/100%"),
            ("/v1/%zz", "/v1/%zz"),
            ("/v1/%C3%A9t%C3%A9", "/v1/été"),
            ("/v1/été/München", "/v1/été/München"),
            ("/v1/\u{ff56}\u{ff11}", "/v1/\u{ff56}\u{ff11}"),
            ("/v1/%users", "/v1/%users"),
            ("/v1//x", "/v1//x"),
        ] {
            let parsed = RequestPath::parse(raw).unwrap_or_else(|e| panic!("{raw}: {e}"));
            assert_eq!(parsed.as_bytes(), routed.as_bytes(), "{raw}");
        }
        // Plain paths are not copied.
        assert!(matches!(
            RequestPath::parse("/v1/x").unwrap().0,
            Cow::Borrowed(_)
        ));
    }
}
