//! `[server]` and the tenants' `token_sha256` and `limits.calls_per_minute` keys: what
//! `hermetic serve` takes from the policy file ([`ServerPolicy`]). Only digests of
//! tokens are written there, so reading the file never reveals one.

use crate::error::PolicyFileError;
use crate::tenants::TenantToml;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A SHA-256 digest of a bearer token, as written in the policy file (64 hex digits).
/// Only digests are stored, so reading the policy file never reveals a token.
pub type TokenDigest = [u8; 32];

/// What `hermetic serve` takes from the policy file: the `[server]` section and the
/// tenants' `token_sha256` and `limits.calls_per_minute` keys. Plain data; the server
/// compiles it at start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerPolicy {
    /// Tenant id → digests of the bearer tokens that act as it (several, so tokens can
    /// be rotated). Tenants without tokens cannot be reached over HTTP.
    pub tenant_tokens: BTreeMap<String, Vec<TokenDigest>>,
    /// Tenant id → tools/call requests per minute over HTTP (absent: unlimited).
    pub calls_per_minute: BTreeMap<String, u32>,
    /// Digests of the admin tokens of the approvals endpoint (empty: endpoint off).
    pub admin_tokens: Vec<TokenDigest>,
    /// Extra `Host` values accepted besides loopback names (`name` or `name:port`).
    pub allowed_hosts: Vec<String>,
    /// Extra `Origin` values accepted besides loopback origins (`scheme://host[:port]`).
    pub allowed_origins: Vec<String>,
    /// Audit log file (relative: to the policy file's directory).
    pub audit_file: Option<PathBuf>,
    /// How long a shutdown waits for calls in flight, in seconds.
    pub shutdown_grace_secs: Option<u64>,
    /// Live MCP sessions one tenant may hold at once (absent: the server's default).
    pub max_sessions_per_tenant: Option<u32>,
    /// MCP sessions one tenant may open per minute (absent: the server's default).
    pub sessions_per_minute: Option<u32>,
    /// Seconds without traffic after which an MCP session ends (absent: the
    /// server's default).
    pub session_idle_timeout_secs: Option<u64>,
    /// Seconds a connection may take to send a request's headers, and may sit idle
    /// between requests (absent: the server's default).
    pub header_timeout_secs: Option<u64>,
    /// Open HTTP connections in total (absent: the server's default).
    pub max_connections: Option<u32>,
    /// Open HTTP connections from one peer IP address that have not yet sent an
    /// authenticated request (absent: the server's default).
    pub max_connections_per_ip: Option<u32>,
    /// Requests of one tenant the HTTP server handles at once; more wait briefly, then
    /// get 503 with `Retry-After` (absent: the server's default).
    pub max_requests_per_tenant: Option<u32>,
    /// Reverse proxies in front of the server (addresses or CIDR ranges): a connection
    /// from one of them does not count against `max_connections_per_ip` (it carries
    /// many clients' requests), and a request's client address is read from its
    /// `X-Forwarded-For` (or `Forwarded`) header, the rightmost hop not in this list.
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// `[cluster] redis_url`: the Redis every node of a cluster shares (rate limits
    /// across nodes). `None`: this process holds its state alone (the default).
    pub redis_url: Option<String>,
    /// `[cluster] state_key`: the name of the secret (in the secrets file) every node
    /// seals and opens MCP 2026-07-28 approval rounds (`requestState`) with, so a
    /// client's retry may reach any node. `None`: each process seals with its own
    /// random key and the retry must reach the node that asked.
    pub state_key: Option<String>,
    /// `[server] metrics`: serve `/metrics` (Prometheus text, behind the admin token).
    pub metrics: bool,
    /// `[server] audit_max_bytes`: start a new audit file (the chain continues) before
    /// one grows past this.
    pub audit_max_bytes: Option<u64>,
    /// `[server] audit_rotate_secs`: start a new audit file after this long.
    pub audit_rotate_secs: Option<u64>,
    /// `[server] node_name`: named in every audit line (default: the host name).
    pub node_name: Option<String>,
}

/// Parses an address range of `trusted_proxies`: an address (`10.0.0.7`, `::1`) or a
/// CIDR range (`10.0.0.0/8`, `fd00::/8`).
///
/// # Errors
/// A message saying what to write instead.
pub fn parse_ip_range(text: &str) -> Result<ipnet::IpNet, String> {
    let text = text.trim();
    if let Ok(net) = text.parse::<ipnet::IpNet>() {
        // `10.1.2.3/8` names the range by one of its members: keep the range.
        return Ok(net.trunc());
    }
    text.parse::<std::net::IpAddr>()
        .map(ipnet::IpNet::from)
        .map_err(|_| {
            format!(
                "{text:?} is not an IP address or CIDR range: write e.g. 10.0.0.7 or 10.0.0.0/8"
            )
        })
}

/// Parses a token digest written as 64 hex digits (either case).
///
/// # Errors
/// A message saying what to write instead.
pub fn parse_token_digest(text: &str) -> Result<TokenDigest, String> {
    let bytes = text.as_bytes();
    if bytes.len() != 64 {
        return Err(format!(
            "{text:?} is not a SHA-256 digest: write the 64 hex digits `hermetic token hash` prints"
        ));
    }
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        let digit = |b: u8| (b as char).to_digit(16);
        match (digit(pair[0]), digit(pair[1])) {
            (Some(hi), Some(lo)) => out[i] = (hi * 16 + lo) as u8,
            _ => {
                return Err(format!(
                    "{text:?} is not a SHA-256 digest: only hex digits 0-9 a-f are allowed"
                ));
            }
        }
    }
    Ok(out)
}

/// `[server]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct ServerToml {
    #[serde(default)]
    admin_token_sha256: Vec<String>,
    #[serde(default)]
    allowed_hosts: Vec<String>,
    #[serde(default)]
    allowed_origins: Vec<String>,
    audit_file: Option<PathBuf>,
    #[serde(default)]
    metrics: bool,
    audit_max_bytes: Option<u64>,
    audit_rotate_secs: Option<u64>,
    node_name: Option<String>,
    shutdown_grace_secs: Option<u64>,
    max_sessions_per_tenant: Option<u32>,
    sessions_per_minute: Option<u32>,
    session_idle_timeout_secs: Option<u64>,
    header_timeout_secs: Option<u64>,
    max_connections: Option<u32>,
    max_connections_per_ip: Option<u32>,
    max_requests_per_tenant: Option<u32>,
    #[serde(default)]
    trusted_proxies: Vec<String>,
}

/// `[server]` and the tenants' tokens and call rates. Audit-file paths resolve against
/// the policy file's directory.
pub(crate) fn server_policy(
    raw: ServerToml,
    tenants: &BTreeMap<String, TenantToml>,
    file_dir: &Path,
    invalid: &impl Fn(String) -> PolicyFileError,
) -> Result<ServerPolicy, PolicyFileError> {
    let mut server = ServerPolicy::default();
    // Every digest, to refuse one token acting as two principals.
    let mut seen: BTreeSet<TokenDigest> = BTreeSet::new();
    let mut digests = |at: &str, texts: &[String]| -> Result<Vec<TokenDigest>, PolicyFileError> {
        let mut out = Vec::with_capacity(texts.len());
        for text in texts {
            let digest = parse_token_digest(text).map_err(|e| invalid(format!("{at}: {e}")))?;
            if !seen.insert(digest) {
                return Err(invalid(format!(
                    "{at}: token digest {text} is used twice (each token must name one tenant)"
                )));
            }
            out.push(digest);
        }
        Ok(out)
    };
    server.admin_tokens = digests("server.admin_token_sha256", &raw.admin_token_sha256)?;
    for (id, t) in tenants {
        let tokens = digests(&format!("tenants.{id}.token_sha256"), &t.token_sha256)?;
        if !tokens.is_empty() {
            server.tenant_tokens.insert(id.clone(), tokens);
        }
        match t.limits.calls_per_minute {
            Some(0) => {
                return Err(invalid(format!(
                    "tenants.{id}.limits.calls_per_minute must be at least 1 (omit it for no limit)"
                )));
            }
            Some(n) => {
                server.calls_per_minute.insert(id.clone(), n);
            }
            None => {}
        }
    }
    // Zero would refuse every session or connection, or end them at once: say so
    // rather than serve nothing.
    let at_least_one = |key: &str, value: Option<u64>| match value {
        Some(0) => Err(invalid(format!(
            "server.{key} must be at least 1 (omit it for the default)"
        ))),
        _ => Ok(()),
    };
    at_least_one(
        "max_sessions_per_tenant",
        raw.max_sessions_per_tenant.map(u64::from),
    )?;
    at_least_one(
        "sessions_per_minute",
        raw.sessions_per_minute.map(u64::from),
    )?;
    at_least_one("session_idle_timeout_secs", raw.session_idle_timeout_secs)?;
    at_least_one("header_timeout_secs", raw.header_timeout_secs)?;
    at_least_one("max_connections", raw.max_connections.map(u64::from))?;
    at_least_one(
        "max_connections_per_ip",
        raw.max_connections_per_ip.map(u64::from),
    )?;
    at_least_one(
        "max_requests_per_tenant",
        raw.max_requests_per_tenant.map(u64::from),
    )?;
    server.trusted_proxies = raw
        .trusted_proxies
        .iter()
        .map(|text| {
            parse_ip_range(text).map_err(|e| invalid(format!("server.trusted_proxies: {e}")))
        })
        .collect::<Result<_, _>>()?;
    server.allowed_hosts = raw.allowed_hosts;
    server.allowed_origins = raw.allowed_origins;
    server.shutdown_grace_secs = raw.shutdown_grace_secs;
    server.metrics = raw.metrics;
    if raw.audit_max_bytes.is_some_and(|b| b < 4096) || raw.audit_rotate_secs == Some(0) {
        return Err(invalid(
            "server.audit_max_bytes must be at least 4096 and audit_rotate_secs at least 1".into(),
        ));
    }
    server.audit_max_bytes = raw.audit_max_bytes;
    server.audit_rotate_secs = raw.audit_rotate_secs;
    server.node_name = raw.node_name;
    server.max_sessions_per_tenant = raw.max_sessions_per_tenant;
    server.sessions_per_minute = raw.sessions_per_minute;
    server.session_idle_timeout_secs = raw.session_idle_timeout_secs;
    server.header_timeout_secs = raw.header_timeout_secs;
    server.max_connections = raw.max_connections;
    server.max_connections_per_ip = raw.max_connections_per_ip;
    server.max_requests_per_tenant = raw.max_requests_per_tenant;
    server.audit_file = raw.audit_file.map(|f| file_dir.join(f));
    Ok(server)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::parse_in;

    #[test]
    fn the_example_s_server_keys_parse_into_the_server_policy() {
        let dir = tempfile::TempDir::new().unwrap();
        std::fs::create_dir_all(dir.path().join("examples/data")).unwrap();
        std::fs::create_dir_all(dir.path().join("examples/workspace")).unwrap();
        std::fs::write(dir.path().join("examples/secrets.toml"), "").unwrap();
        let server = parse_in(dir.path(), include_str!("../../../policy.example.toml"))
            .unwrap()
            .server;
        let digest = |token: &str| -> TokenDigest {
            use sha2::Digest;
            sha2::Sha256::digest(token.as_bytes()).into()
        };
        assert_eq!(
            server.tenant_tokens["acme"],
            [digest("hmt_example_acme_token_do_not_use")]
        );
        assert_eq!(
            server.admin_tokens,
            [digest("hmt_example_admin_token_do_not_use")]
        );
        assert_eq!(server.calls_per_minute["acme"], 120);
        assert_eq!(server.allowed_hosts, ["mcp.example.com"]);
        assert_eq!(server.allowed_origins, ["https://console.example.com"]);
        assert_eq!(server.audit_file, Some(dir.path().join("audit.jsonl")));
        assert_eq!(server.shutdown_grace_secs, Some(30));
        assert_eq!(server.max_sessions_per_tenant, Some(256));
        assert_eq!(server.sessions_per_minute, Some(60));
        assert_eq!(server.session_idle_timeout_secs, Some(300));
        assert_eq!(server.header_timeout_secs, Some(10));
        assert_eq!(server.max_connections, Some(1024));
        assert_eq!(server.max_connections_per_ip, Some(64));
        assert_eq!(server.max_requests_per_tenant, Some(256));
        assert_eq!(
            server.trusted_proxies,
            ["10.0.0.0/8".parse::<ipnet::IpNet>().unwrap()]
        );
    }

    #[test]
    fn trusted_proxies_are_addresses_or_ranges_and_anything_else_is_a_load_error() {
        let dir = tempfile::TempDir::new().unwrap();
        let server = parse_in(
            dir.path(),
            "[server]\ntrusted_proxies = [\"10.1.2.3\", \"10.9.9.9/8\", \"fd00::/8\", \"::1\"]",
        )
        .unwrap()
        .server;
        let nets: Vec<String> = server
            .trusted_proxies
            .iter()
            .map(ToString::to_string)
            .collect();
        // An address is its own /32 (/128); a range written by a member is the range.
        assert_eq!(nets, ["10.1.2.3/32", "10.0.0.0/8", "fd00::/8", "::1/128"]);
        for bad in ["proxy.example.com", "10.0.0.0/33", "", "10.0.0.1:80"] {
            let err = parse_in(
                dir.path(),
                &format!("[server]\ntrusted_proxies = [\"{bad}\"]"),
            )
            .unwrap_err()
            .to_string();
            assert!(
                err.contains("server.trusted_proxies") && err.contains("CIDR"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn bad_server_keys_are_load_errors_that_say_what_to_write() {
        let dir = tempfile::TempDir::new().unwrap();
        let err = |text: &str| parse_in(dir.path(), text).unwrap_err().to_string();
        let digest = "a".repeat(64);
        assert!(err("[tenants.a]\ntoken_sha256 = [\"abc\"]").contains("hermetic token hash"));
        assert!(
            err(&format!(
                "[tenants.a]\ntoken_sha256 = [\"{}\"]",
                "g".repeat(64)
            ))
            .contains("only hex digits")
        );
        assert!(
            err(&format!(
                "[tenants.a]\ntoken_sha256 = [\"{digest}\"]\n[server]\nadmin_token_sha256 = [\"{digest}\"]"
            ))
            .contains("used twice")
        );
        assert!(err("[tenants.a.limits]\ncalls_per_minute = 0").contains("at least 1"));
        for key in [
            "max_sessions_per_tenant",
            "sessions_per_minute",
            "session_idle_timeout_secs",
            "header_timeout_secs",
            "max_connections",
            "max_connections_per_ip",
            "max_requests_per_tenant",
        ] {
            let e = err(&format!("[server]\n{key} = 0"));
            assert!(
                e.contains(&format!("server.{key} must be at least 1")),
                "{e}"
            );
        }
        assert!(err("[server]\nmax_session = 3").contains("max_session"));
        assert!(err("[server]\nlisten = \"0.0.0.0:80\"").contains("listen"));
        // Without any of them: no tokens, nothing else.
        let none = parse_in(dir.path(), "").unwrap().server;
        assert_eq!(none, ServerPolicy::default());
    }
}
