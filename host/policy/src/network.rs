//! Network destinations: `scheme://host[:port]` patterns with `*.domain` wildcards, `*`
//! for any host and `:*` for any port, the "covers" order between them, and their
//! intersection. Pure data; the sandbox's egress hooks do the matching against real
//! requests and resolved addresses.
//!
//! `*` and `:*` exist for declarations: a tool like `web_extract` declares
//! `https://*` ("any host I am pointed at") and the operator's grant, intersected with
//! it, decides which hosts that really is. An operator who grants `https://*` allows
//! every *public* host: private, loopback and link-local addresses are still refused
//! unless a grant names the address itself.

use serde::Serialize;
use std::net::IpAddr;

/// A parsed destination pattern.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(into = "String")]
pub struct Destination {
    /// `http` or `https`.
    pub scheme: Scheme,
    /// The host: an exact name, a `*.domain` wildcard, or an IP literal.
    pub host: HostPattern,
    /// The port (the scheme's default when the pattern names none).
    pub port: Port,
}

/// The port part of a destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Port {
    /// Exactly this port.
    Exact(u16),
    /// Any port (`:*`).
    Any,
}

impl Port {
    fn covers(self, other: Port) -> bool {
        self == Port::Any || self == other
    }

    fn intersect(self, other: Port) -> Option<Port> {
        match (self, other) {
            (Port::Any, p) | (p, Port::Any) => Some(p),
            (a, b) => (a == b).then_some(a),
        }
    }
}

/// URL scheme of a destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTP over TLS.
    Https,
}

impl Scheme {
    /// The scheme's default port.
    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// The host part of a destination.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum HostPattern {
    /// Exactly this (lower-case) name.
    Exact(String),
    /// Any name ending in `.suffix` (the suffix itself excluded, as for TLS wildcards).
    Wildcard(String),
    /// This IP address. Naming an address is how a grant opts into private ranges.
    Ip(IpAddr),
    /// Any host (`*`); private addresses are still refused unless named.
    Any,
}

impl HostPattern {
    fn covers(&self, other: &HostPattern) -> bool {
        match (self, other) {
            (HostPattern::Any, _) => true,
            (HostPattern::Exact(a), HostPattern::Exact(b)) => a == b,
            (HostPattern::Ip(a), HostPattern::Ip(b)) => a == b,
            (HostPattern::Wildcard(suffix), HostPattern::Exact(name)) => in_domain(name, suffix),
            (HostPattern::Wildcard(a), HostPattern::Wildcard(b)) => a == b || in_domain(b, a),
            _ => false,
        }
    }

    fn intersect(&self, other: &HostPattern) -> Option<HostPattern> {
        if self.covers(other) {
            Some(other.clone())
        } else if other.covers(self) {
            Some(self.clone())
        } else {
            None
        }
    }
}

/// A destination pattern that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid network destination {pattern:?}: {reason} (write e.g. \"https://api.example.com\", \"https://*.example.com\" or \"http://127.0.0.1:8080\")"
)]
pub struct DestinationError {
    /// The pattern as written.
    pub pattern: String,
    /// What is wrong.
    pub reason: &'static str,
}

impl Destination {
    /// Parses `scheme://host[:port]`; a bare `host[:port]` means `https`.
    ///
    /// # Errors
    /// [`DestinationError`] for anything else (paths, user info, bad ports, empty
    /// labels, wildcards other than a leading `*.`).
    pub fn parse(pattern: &str) -> Result<Self, DestinationError> {
        let err = |reason| DestinationError {
            pattern: pattern.to_owned(),
            reason,
        };
        let (scheme, rest) = match pattern.split_once("://") {
            Some(("http", rest)) => (Scheme::Http, rest),
            Some(("https", rest)) => (Scheme::Https, rest),
            Some(_) => return Err(err("the scheme must be http or https")),
            None => (Scheme::Https, pattern),
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '@', '?', '#']) {
            return Err(err("only scheme, host and port are allowed"));
        }
        let (host, port) = split_host_port(rest).ok_or_else(|| err("malformed host or port"))?;
        let bracketed = rest.starts_with('[');
        let port = match port {
            Some("*") => Port::Any,
            Some(p) => Port::Exact(
                p.parse::<u16>()
                    .ok()
                    .filter(|p| *p != 0)
                    .ok_or_else(|| err("bad port"))?,
            ),
            None => Port::Exact(scheme.default_port()),
        };
        let host = host.to_ascii_lowercase();
        let host = if bracketed {
            // Brackets hold an IPv6 address and nothing else.
            match host.parse::<std::net::Ipv6Addr>() {
                Ok(ip) => HostPattern::Ip(IpAddr::V6(ip)),
                Err(_) => return Err(err("brackets must hold an IPv6 address")),
            }
        } else if host == "*" {
            HostPattern::Any
        } else if let Ok(ip) = host.parse::<IpAddr>() {
            HostPattern::Ip(ip)
        } else if host.rsplit('.').next().is_some_and(is_numeric_label) {
            // `127.1` or `0x7f.1` is no name: resolvers read it as an IPv4 address in
            // a short or hex form.
            return Err(err(
                "the last label is a number: write an IP address in full (a.b.c.d) or a name",
            ));
        } else if let Some(suffix) = host.strip_prefix("*.") {
            if !is_dns_name(suffix) || !suffix.contains('.') {
                return Err(err(
                    "a wildcard needs a domain with at least two labels, like *.example.com",
                ));
            }
            HostPattern::Wildcard(suffix.to_owned())
        } else if is_dns_name(&host) {
            HostPattern::Exact(host)
        } else {
            return Err(err("the host is not a valid DNS name or IP address"));
        };
        Ok(Self { scheme, host, port })
    }

    /// Whether every request this pattern allows is also allowed by `self`.
    pub fn covers(&self, other: &Destination) -> bool {
        self.scheme == other.scheme && self.port.covers(other.port) && self.host.covers(&other.host)
    }

    /// The destinations both patterns match, if any (each part narrowed on its own:
    /// `http://*:8080` ∩ `http://127.0.0.1:*` = `http://127.0.0.1:8080`).
    pub fn intersect(&self, other: &Destination) -> Option<Destination> {
        if self.scheme != other.scheme {
            return None;
        }
        Some(Destination {
            scheme: self.scheme,
            host: self.host.intersect(&other.host)?,
            port: self.port.intersect(other.port)?,
        })
    }

    /// Whether this pattern allows a request to `host` (lower-case name or IP literal)
    /// on `scheme` and `port`.
    pub fn allows(&self, scheme: Scheme, host: &str, port: u16) -> bool {
        if self.scheme != scheme || !self.port.covers(Port::Exact(port)) {
            return false;
        }
        match &self.host {
            HostPattern::Any => true,
            HostPattern::Exact(name) => name == host,
            HostPattern::Wildcard(suffix) => in_domain(host, suffix),
            HostPattern::Ip(ip) => host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<IpAddr>()
                .is_ok_and(|h| h == *ip),
        }
    }
}

impl std::fmt::Display for Destination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://", self.scheme.as_str())?;
        match &self.host {
            HostPattern::Exact(h) => f.write_str(h)?,
            HostPattern::Wildcard(s) => write!(f, "*.{s}")?,
            HostPattern::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]")?,
            HostPattern::Ip(ip) => write!(f, "{ip}")?,
            HostPattern::Any => f.write_str("*")?,
        }
        match self.port {
            Port::Any => f.write_str(":*")?,
            Port::Exact(p) if p != self.scheme.default_port() => write!(f, ":{p}")?,
            Port::Exact(_) => {}
        }
        Ok(())
    }
}

impl From<Destination> for String {
    fn from(d: Destination) -> String {
        d.to_string()
    }
}

/// Intersects a declared list with an allowed list: each declared pattern survives as
/// its intersection with any allowed pattern.
pub fn intersect_all(declared: &[Destination], allowed: &[Destination]) -> Vec<Destination> {
    let mut out: Vec<Destination> = declared
        .iter()
        .flat_map(|d| allowed.iter().filter_map(move |a| d.intersect(a)))
        .collect();
    out.sort();
    out.dedup();
    out
}

fn in_domain(name: &str, suffix: &str) -> bool {
    name.len() > suffix.len() + 1
        && name.ends_with(suffix)
        && name.as_bytes()[name.len() - suffix.len() - 1] == b'.'
}

fn split_host_port(s: &str) -> Option<(&str, Option<&str>)> {
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        return match after {
            "" => Some((host, None)),
            _ => Some((host, Some(after.strip_prefix(':')?))),
        };
    }
    match s.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => Some((host, Some(port))),
        Some(_) => None,
        None => Some((s, None)),
    }
}

/// A label resolvers may read as a number: decimal, or hex with `0x`.
fn is_numeric_label(label: &str) -> bool {
    let digits = label.strip_prefix("0x").unwrap_or(label);
    !digits.is_empty()
        && if digits.len() < label.len() {
            digits.bytes().all(|b| b.is_ascii_hexdigit())
        } else {
            digits.bytes().all(|b| b.is_ascii_digit())
        }
}

fn is_dns_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// Whether `ip` is an ordinary public address. Everything a tool could use to reach the
/// host itself, its network or its cloud provider is not: loopback, RFC 1918, link-local
/// (169.254.0.0/16 holds cloud metadata), CGNAT, unique-local and site-local IPv6,
/// multicast, broadcast, documentation, benchmarking and reserved ranges, IPv6 forms
/// that embed such an IPv4 address (v4-mapped, v4-compatible, NAT64, 6to4), NAT64's
/// local-use prefix (64:ff9b:1::/48, RFC 8215: translated by whatever the site runs,
/// so where it leads cannot be told from the address) and the IETF protocol
/// assignments in 2001::/23 (Teredo tunnels, benchmarking, ORCHID identifiers: none is
/// an ordinary host on the internet).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: std::net::Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_documentation()
        || ip.is_multicast()
        || a == 0
        || (a == 100 && (b & 0xc0) == 64)
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (b & 0xfe) == 18)
        || a >= 240)
}

fn is_public_v6(ip: std::net::Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let s = ip.segments();
    let embedded =
        || std::net::Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    // v4-compatible (::a.b.c.d, deprecated) and NAT64 (64:ff9b::/96) carry an IPv4
    // address in the low 32 bits.
    if s[..6] == [0; 6] || (s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0; 4]) {
        return !ip.is_unspecified() && !ip.is_loopback() && is_public_v4(embedded());
    }
    // 6to4 (2002::/16) carries one in bits 16..48.
    if s[0] == 0x2002 {
        let v4 =
            std::net::Ipv4Addr::new((s[1] >> 8) as u8, s[1] as u8, (s[2] >> 8) as u8, s[2] as u8);
        return is_public_v4(v4);
    }
    !(ip.is_multicast()
        || (s[0] & 0xfe00) == 0xfc00
        || (s[0] & 0xffc0) == 0xfe80
        || (s[0] & 0xffc0) == 0xfec0
        // Documentation: 2001:db8::/32 and 3fff::/20 (RFC 9637).
        || (s[0] == 0x2001 && s[1] == 0x0db8)
        || (s[0] == 0x3fff && s[1] < 0x1000)
        || (s[0] == 0x0100 && s[1..4] == [0; 3])
        // NAT64 local use (64:ff9b:1::/48).
        || (s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1)
        // IETF protocol assignments (2001::/23): Teredo 2001::/32, benchmarking
        // 2001:2::/48, ORCHID 2001:10::/28 and ORCHIDv2 2001:20::/28, among others.
        || (s[0] == 0x2001 && s[1] < 0x0200))
}

/// RFC 3986 percent-encoding of everything but the unreserved characters (for a query
/// value the host writes into a URL: a secret it adds, a token request's scope).
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Destination {
        Destination::parse(s).unwrap()
    }

    #[test]
    fn patterns_parse_with_defaults_and_refuse_junk() {
        assert_eq!(d("api.example.com").to_string(), "https://api.example.com");
        assert_eq!(
            d("http://127.0.0.1:8080").to_string(),
            "http://127.0.0.1:8080"
        );
        assert_eq!(
            d("https://[::1]:9000").host,
            HostPattern::Ip("::1".parse().unwrap())
        );
        assert_eq!(
            d("https://*.Example.com").host,
            HostPattern::Wildcard("example.com".into())
        );
        for bad in [
            "ftp://a.com",
            "https://a.com/path",
            "https://u@a.com",
            "https://*.com",
            "https://a.com:0",
            "https://a..com",
            "https://*a.com",
            "https://[a.com]",
            "https://[127.0.0.1]",
            "https://127.1",
            "https://0x7f.1",
            "https://10.0.0.010.1",
            "https://1234",
            "",
        ] {
            assert!(Destination::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn wildcards_cover_subdomains_but_not_the_apex_or_lookalikes() {
        let w = d("https://*.example.com");
        assert!(w.covers(&d("https://api.example.com")));
        assert!(w.covers(&d("https://a.b.example.com")));
        assert!(w.covers(&d("https://*.b.example.com")));
        assert!(!w.covers(&d("https://example.com")));
        assert!(!w.covers(&d("https://evilexample.com")));
        assert!(!w.covers(&d("http://api.example.com")));
        assert!(!w.covers(&d("https://api.example.com:8443")));
        assert!(w.allows(Scheme::Https, "x.example.com", 443));
        assert!(!w.allows(Scheme::Https, "x.example.com.evil.net", 443));
    }

    #[test]
    fn intersection_keeps_the_narrower_pattern() {
        let declared = [d("https://api.example.com"), d("https://other.net")];
        let allowed = [d("https://*.example.com")];
        assert_eq!(
            intersect_all(&declared, &allowed),
            [d("https://api.example.com")]
        );
        assert_eq!(
            intersect_all(
                &[d("https://*.example.com")],
                &[d("https://api.example.com")]
            ),
            [d("https://api.example.com")]
        );
        assert!(intersect_all(&declared, &[]).is_empty());
    }

    #[test]
    fn any_host_and_any_port_narrow_to_the_other_side() {
        let any = d("https://*");
        assert_eq!(any.to_string(), "https://*");
        assert!(any.covers(&d("https://api.example.com")));
        assert!(any.covers(&d("https://*.example.com")));
        assert!(any.covers(&d("https://10.0.0.1")));
        assert!(!any.covers(&d("https://api.example.com:8443")));
        assert!(!any.covers(&d("http://api.example.com")));
        let any_port = d("http://127.0.0.1:*");
        assert_eq!(any_port.to_string(), "http://127.0.0.1:*");
        assert!(any_port.allows(Scheme::Http, "127.0.0.1", 41234));
        assert!(!any_port.allows(Scheme::Http, "127.0.0.2", 41234));
        assert_eq!(
            d("http://*:8080").intersect(&any_port),
            Some(d("http://127.0.0.1:8080"))
        );
        assert_eq!(
            d("http://*:*").intersect(&d("http://a.example.com")),
            Some(d("http://a.example.com"))
        );
        assert_eq!(d("https://*").intersect(&d("http://a.example.com")), None);
        assert_eq!(
            d("https://a.example.com").intersect(&d("https://b.example.com")),
            None
        );
        assert!(Destination::parse("https://*x").is_err());
        assert!(Destination::parse("https://a.com:**").is_err());
    }
}
