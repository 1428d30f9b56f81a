//! Secrets a tool uses but never holds: the operator binds a secret to one destination
//! (`scheme://host[:port]` and a path prefix) and says where it goes — a header in a
//! format (`Authorization: Bearer {}`) or a query parameter. The host adds it to a
//! request after the destination check; the guest never sees the value, and results
//! and logs are scrubbed of it.

use crate::network::{Destination, HostPattern, Port, Scheme};
use serde::Serialize;

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
    /// to a host the operator never named), a malformed target, a header name that is
    /// not a token, or a format without exactly one `{}`.
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
        if path.contains(['?', '#']) || path.split('/').any(|s| s == "..") {
            return Err(err(format!("{target:?}: the path prefix is a plain path")));
        }
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
            path_prefix: path.to_owned(),
            into,
            format: format.to_owned(),
        })
    }

    /// Whether a request to `scheme://host:port` + `path` gets this secret: the same
    /// scheme, host and port, and a path inside the prefix (segment-wise: `/v1` covers
    /// `/v1` and `/v1/x`, not `/v10`).
    pub fn matches(&self, scheme: Scheme, host: &str, port: u16, path: &str) -> bool {
        if !self.destination.allows(scheme, host, port) {
            return false;
        }
        let prefix = self.path_prefix.trim_end_matches('/');
        prefix.is_empty()
            || path == prefix
            || path
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with('/'))
    }

    /// The value as it is sent.
    pub fn render(&self, secret: &str) -> String {
        self.format.replacen("{}", secret, 1)
    }
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
        assert!(b.matches(Scheme::Https, "api.weatherapi.com", 443, "/v1/current.json"));
        assert!(b.matches(Scheme::Https, "api.weatherapi.com", 443, "/v1"));
        assert!(!b.matches(Scheme::Https, "api.weatherapi.com", 443, "/v10/x"));
        assert!(!b.matches(Scheme::Https, "api.weatherapi.com", 443, "/other"));
        assert!(!b.matches(Scheme::Http, "api.weatherapi.com", 80, "/v1/x"));
        assert!(!b.matches(Scheme::Https, "evil.weatherapi.com", 443, "/v1/x"));
        assert!(!b.matches(Scheme::Https, "api.weatherapi.com", 8443, "/v1/x"));
        assert_eq!(b.render("s3"), "Bearer s3");
        let h = |n: &str| InjectInto::Header(n.into());
        for (target, into, format) in [
            ("https://*.example.com", h("X-Key"), "{}"),
            ("https://*", h("X-Key"), "{}"),
            ("https://example.com:*", h("X-Key"), "{}"),
            ("example.com", h("X-Key"), "{}"),
            ("https://example.com/a/../b", h("X-Key"), "{}"),
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
}
