//! Outbound HTTP through the host's `wasi:http` (feature `http`).
//!
//! The host sends a request only to destinations the tool declared in
//! `capabilities.network` *and* the operator granted; everything else comes back as
//! [`HttpError::Denied`] or [`HttpError::Prohibited`] without any connection being made.
//! Redirects are followed here, hop by hop, so the host checks every hop.
//!
//! ```ignore
//! let page = hermetic_sdk::http::get("https://example.com/", 1 << 20)?;
//! assert_eq!(page.status, 200);
//! ```

use wasip2::http::outgoing_handler;
use wasip2::http::types::{
    ErrorCode, Fields, IncomingBody, Method, OutgoingBody, OutgoingRequest, RequestOptions, Scheme,
};
use wasip2::io::streams::StreamError;

/// Redirect hops [`get`] follows before giving up.
pub const MAX_REDIRECTS: usize = 5;

/// A response, body read in full.
#[derive(Debug, Clone)]
pub struct Response {
    /// The URL that answered (after redirects).
    pub url: String,
    /// HTTP status code.
    pub status: u16,
    /// Header names (lower-case) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// The first value of a header, by lower-case name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpError {
    /// The URL is not an absolute http(s) URL.
    BadUrl(String),
    /// The host's policy does not grant this destination.
    Denied(String),
    /// The name resolves to a loopback, private or link-local address no grant names.
    Prohibited(String),
    /// A connect, first-byte, between-bytes or total timeout passed.
    Timeout(String),
    /// The body is longer than allowed.
    TooLarge(String),
    /// More redirects than [`MAX_REDIRECTS`], or a redirect without a usable `Location`.
    Redirects(String),
    /// Anything else (connection refused, TLS, protocol errors).
    Other(String),
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HttpError::BadUrl(u) => write!(f, "not an absolute http(s) URL: {u}"),
            HttpError::Denied(u) => write!(
                f,
                "the host refused {u}: the destination is not granted to this tool"
            ),
            HttpError::Prohibited(u) => write!(
                f,
                "the host refused {u}: it resolves to a loopback, private or link-local address"
            ),
            HttpError::Timeout(u) => write!(f, "timed out fetching {u}"),
            HttpError::TooLarge(u) => write!(f, "the response from {u} is too large"),
            HttpError::Redirects(u) => write!(f, "too many or broken redirects from {u}"),
            HttpError::Other(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for HttpError {}

impl HttpError {
    /// A stable one-word kind: `bad_url`, `denied`, `prohibited`, `timeout`,
    /// `too_large`, `redirects` or `other`.
    pub fn kind(&self) -> &'static str {
        match self {
            HttpError::BadUrl(_) => "bad_url",
            HttpError::Denied(_) => "denied",
            HttpError::Prohibited(_) => "prohibited",
            HttpError::Timeout(_) => "timeout",
            HttpError::TooLarge(_) => "too_large",
            HttpError::Redirects(_) => "redirects",
            HttpError::Other(_) => "other",
        }
    }
}

/// The raw WASI bindings, for tools that need more than [`get`].
#[doc(hidden)]
pub use wasip2;

/// GETs `url`, following up to [`MAX_REDIRECTS`] redirects, reading at most
/// `max_bytes` of body (more is [`HttpError::TooLarge`]).
pub fn get(url: &str, max_bytes: usize) -> Result<Response, HttpError> {
    let mut url = url.to_owned();
    for _ in 0..=MAX_REDIRECTS {
        let response = send_once(&url, max_bytes)?;
        if matches!(response.status, 301 | 302 | 303 | 307 | 308) {
            let location = response
                .header("location")
                .ok_or_else(|| HttpError::Redirects(url.clone()))?;
            url = resolve(&url, location).ok_or_else(|| HttpError::Redirects(url.clone()))?;
            continue;
        }
        return Ok(response);
    }
    Err(HttpError::Redirects(url))
}

/// Percent-encodes a query-string value (RFC 3986 unreserved characters kept).
pub fn encode_query_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The parts of an absolute URL a request needs.
struct Parts<'a> {
    https: bool,
    authority: &'a str,
    /// Path and query, always starting with `/`.
    path: String,
}

/// Splits `scheme://authority/path?query#fragment` (hand-written: the `url` crate with
/// its IDNA tables would double a small tool's size for this one split).
fn split(url: &str) -> Option<Parts<'_>> {
    let (scheme, rest) = url.split_once("://")?;
    let https = match scheme.to_ascii_lowercase().as_str() {
        "https" => true,
        "http" => false,
        _ => return None,
    };
    let rest = rest.split('#').next().unwrap_or(rest);
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    Some(Parts {
        https,
        authority,
        path: if path.starts_with('/') {
            path.to_owned()
        } else {
            format!("/{path}")
        },
    })
}

/// Resolves a `Location` against the URL that sent it.
fn resolve(base: &str, location: &str) -> Option<String> {
    if split(location).is_some() {
        return Some(location.to_owned());
    }
    let b = split(base)?;
    let scheme = if b.https { "https" } else { "http" };
    if let Some(rest) = location.strip_prefix("//") {
        return Some(format!("{scheme}://{rest}"));
    }
    if location.starts_with('/') {
        return Some(format!("{scheme}://{}{location}", b.authority));
    }
    let dir = b.path.split('?').next().unwrap_or("/");
    let dir = &dir[..dir.rfind('/').map_or(0, |i| i + 1)];
    Some(format!("{scheme}://{}{dir}{location}", b.authority))
}

fn send_once(url: &str, max_bytes: usize) -> Result<Response, HttpError> {
    let parts = split(url).ok_or_else(|| HttpError::BadUrl(url.to_owned()))?;
    let headers = Fields::new();
    let _ = headers.append("user-agent", b"hermetic-tool/0.1");
    let _ = headers.append(
        "accept",
        b"text/html,text/plain,application/json;q=0.9,*/*;q=0.5",
    );
    let request = OutgoingRequest::new(headers);
    let bad = || HttpError::BadUrl(url.to_owned());
    request.set_method(&Method::Get).map_err(|()| bad())?;
    request
        .set_scheme(Some(if parts.https {
            &Scheme::Https
        } else {
            &Scheme::Http
        }))
        .map_err(|()| bad())?;
    request
        .set_authority(Some(parts.authority))
        .map_err(|()| bad())?;
    request
        .set_path_with_query(Some(&parts.path))
        .map_err(|()| bad())?;
    let body = request.body().map_err(|()| bad())?;
    OutgoingBody::finish(body, None).map_err(|e| classify(url, &e))?;

    let future =
        outgoing_handler::handle(request, None::<RequestOptions>).map_err(|e| classify(url, &e))?;
    future.subscribe().block();
    let response = match future.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(e))) => return Err(classify(url, &e)),
        Some(Err(())) | None => return Err(HttpError::Other(format!("no response from {url}"))),
    };
    let status = response.status();
    let headers = response
        .headers()
        .entries()
        .into_iter()
        .map(|(n, v)| {
            (
                n.to_ascii_lowercase(),
                String::from_utf8_lossy(&v).into_owned(),
            )
        })
        .collect();
    let incoming = response
        .consume()
        .map_err(|()| HttpError::Other("response body already taken".into()))?;
    let body = read_body(url, &incoming, max_bytes)?;
    drop(IncomingBody::finish(incoming));
    Ok(Response {
        url: url.to_owned(),
        status,
        headers,
        body,
    })
}

fn read_body(url: &str, incoming: &IncomingBody, max_bytes: usize) -> Result<Vec<u8>, HttpError> {
    let stream = incoming
        .stream()
        .map_err(|()| HttpError::Other("response body stream already taken".into()))?;
    let mut body = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => {
                if body.len() + chunk.len() > max_bytes {
                    return Err(HttpError::TooLarge(url.to_owned()));
                }
                body.extend_from_slice(&chunk);
            }
            Err(StreamError::Closed) => return Ok(body),
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(match wasip2::http::types::http_error_code(&e) {
                    Some(code) => classify(url, &code),
                    None => classify_text(url, &e.to_debug_string()),
                });
            }
        }
    }
}

/// Body-stream errors from wasmtime 48's wasi:http arrive without an error code (the
/// host's error type is not the p2 `error-code`), only with its text: sort by that.
fn classify_text(url: &str, text: &str) -> HttpError {
    if text.contains("body size exceeds limit") {
        HttpError::TooLarge(url.to_owned())
    } else if text.contains("timeout") {
        HttpError::Timeout(url.to_owned())
    } else {
        HttpError::Other(format!("reading {url}: {text}"))
    }
}

fn classify(url: &str, code: &ErrorCode) -> HttpError {
    let url = url.to_owned();
    match code {
        ErrorCode::HttpRequestDenied => HttpError::Denied(url),
        ErrorCode::DestinationIpProhibited => HttpError::Prohibited(url),
        ErrorCode::DnsTimeout
        | ErrorCode::ConnectionTimeout
        | ErrorCode::ConnectionReadTimeout
        | ErrorCode::HttpResponseTimeout => HttpError::Timeout(url),
        ErrorCode::HttpResponseBodySize(_) => HttpError::TooLarge(url),
        other => HttpError::Other(format!("fetching {url}: {}", describe(other))),
    }
}

/// An error code in words for the agent and the user (its `Debug` form reads
/// `ErrorCode::DnsError(DnsErrorPayload { rcode: Some(…) … })`).
fn describe(code: &ErrorCode) -> String {
    match code {
        ErrorCode::DnsError(payload) => match &payload.rcode {
            Some(reason) => format!("the name does not resolve ({reason})"),
            None => "the name does not resolve".to_owned(),
        },
        ErrorCode::ConnectionRefused => "the connection was refused".to_owned(),
        ErrorCode::ConnectionTerminated => "the connection was closed early".to_owned(),
        ErrorCode::ConnectionLimitReached => "too many connections".to_owned(),
        ErrorCode::DestinationNotFound => "the destination was not found".to_owned(),
        ErrorCode::DestinationUnavailable => "the destination is unavailable".to_owned(),
        ErrorCode::TlsProtocolError => "the TLS handshake failed".to_owned(),
        ErrorCode::TlsCertificateError => "the server's TLS certificate was refused".to_owned(),
        ErrorCode::TlsAlertReceived(_) => "the server ended TLS with an alert".to_owned(),
        ErrorCode::HttpProtocolError => "the server broke the HTTP protocol".to_owned(),
        ErrorCode::InternalError(Some(text)) => text.clone(),
        other => {
            // The variant's name, spaced out: `HttpResponseIncomplete` → "http response incomplete".
            let name = format!("{other:?}");
            let name = name.split('(').next().unwrap_or(&name);
            let mut words = String::new();
            for (i, c) in name.chars().enumerate() {
                if c.is_uppercase() && i > 0 {
                    words.push(' ');
                }
                words.push(c.to_ascii_lowercase());
            }
            words
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(
            encode_query_value("São Paulo&x=1"),
            "S%C3%A3o%20Paulo%26x%3D1"
        );
    }

    #[test]
    fn redirect_locations_resolve_against_the_sender() {
        let base = "http://a.example.com:8080/docs/page?x=1";
        assert_eq!(
            resolve(base, "https://b.example.com/").as_deref(),
            Some("https://b.example.com/")
        );
        assert_eq!(
            resolve(base, "//c.example.com/p").as_deref(),
            Some("http://c.example.com/p")
        );
        assert_eq!(
            resolve(base, "/root").as_deref(),
            Some("http://a.example.com:8080/root")
        );
        assert_eq!(
            resolve(base, "next").as_deref(),
            Some("http://a.example.com:8080/docs/next")
        );
        assert!(split("ftp://x").is_none());
        assert!(split("http://user@evil.example.com/").is_none());
        let p = split("https://x.example.com?q#f").unwrap_or_else(|| unreachable!());
        assert_eq!((p.authority, p.path.as_str()), ("x.example.com", "/?q"));
    }
}
