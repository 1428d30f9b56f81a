//! Who is calling: bearer tokens → tenants, the admin token of the approvals endpoint,
//! per-tenant rate limits, and the `Host`/`Origin` allow-list that stops DNS-rebinding
//! attacks. Everything here is compiled once when the server starts; the per-request
//! work is one SHA-256 of the presented token and a few comparisons.

use hermetic_config::{ServerPolicy, TokenDigest};
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use subtle::ConstantTimeEq;

/// Prefix of tokens made by [`new_token`], so a leaked one is recognisable in logs and
/// by secret scanners.
pub const TOKEN_PREFIX: &str = "hmt_";

/// The SHA-256 digest of a token (what the policy file stores).
pub fn digest(token: &str) -> TokenDigest {
    Sha256::digest(token.as_bytes()).into()
}

pub use crate::formats::hex;

/// Default of `[server] sessions_per_minute`: agents open a session when they start, not
/// per call; one a second (with bursts of 60) leaves room for restarts and reconnects.
pub const DEFAULT_SESSIONS_PER_MINUTE: u32 = 60;

/// A fresh random token: [`TOKEN_PREFIX`] + 256 bits from the OS, in hex.
///
/// # Errors
/// When the OS random source fails.
pub fn new_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(format!("{TOKEN_PREFIX}{}", hex(&bytes)))
}

/// The environment variable that fixes the MCP token of a server without tenant
/// tokens, so scripts and clients can know it before the server starts.
pub const TOKEN_ENV: &str = "HERMETIC_TOKEN";

/// The environment variable that fixes the console token of a server without tenant
/// tokens (its admin token when the policy names none). It must differ from
/// [`TOKEN_ENV`]'s value: the MCP token goes to agents, the console token answers
/// their approvals.
pub const CONSOLE_TOKEN_ENV: &str = "HERMETIC_CONSOLE_TOKEN";

/// Shortest token [`serve_tokens`] accepts from [`TOKEN_ENV`] or
/// [`CONSOLE_TOKEN_ENV`]: 32 characters, as many as a guess must cover (`openssl rand
/// -hex 16` makes 32, [`new_token`] 68).
pub const MIN_TOKEN_CHARS: usize = 32;

/// A token a server without tenant tokens made at start or took from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorToken {
    /// The token.
    pub token: String,
    /// It is an environment variable's value (the operator knows it: not worth
    /// printing).
    pub from_env: bool,
}

/// The tokens of a server whose policy gives no tenant a token: two, never one, so
/// that what an agent holds cannot answer its own approvals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeTokens {
    /// The MCP token: acts as the operator's tenant on `/mcp` (calls tools) and
    /// nowhere else — never an admin token, so it can neither list nor answer
    /// approvals. An agent is given it, and may find it (a project's `.mcp.json`, its
    /// environment): that must not let it approve its own dangerous commands.
    pub mcp: OperatorToken,
    /// The console token: the admin token of `/console`, `/approvals`, `/admin/…` and
    /// `/metrics`, and nothing else (it calls no tool). `None` when the policy names
    /// admin tokens of its own (`[server] admin_token_sha256`).
    pub console: Option<OperatorToken>,
}

/// Why [`serve_tokens`] made no tokens.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OperatorTokenError {
    /// The variable is set to something a client could not send or could guess.
    #[error(
        "{0} must be at least {MIN_TOKEN_CHARS} visible ASCII characters without spaces (e.g. the output of `hermetic token new` or `openssl rand -hex 32`)"
    )]
    Weak(&'static str),
    /// [`TOKEN_ENV`] and [`CONSOLE_TOKEN_ENV`] hold the same token.
    #[error(
        "{CONSOLE_TOKEN_ENV} must differ from {TOKEN_ENV}: the MCP token is given to agents, and the console token answers their approvals (an agent holding it could approve its own commands); set two different tokens"
    )]
    Same,
    /// [`TOKEN_ENV`] is one of the policy's admin tokens.
    #[error(
        "{TOKEN_ENV} is an admin token of the policy ([server] admin_token_sha256): the MCP token is given to agents and must not answer approvals; set another"
    )]
    Admin,
    /// The OS random source failed.
    #[error("reading the OS random source: {0}")]
    Random(String),
}

/// `from_env` (the value of the variable `var`) when set, else a fresh [`new_token`].
fn operator_token(
    var: &'static str,
    from_env: Option<&str>,
) -> Result<OperatorToken, OperatorTokenError> {
    match from_env {
        Some(token) => {
            let visible = token.bytes().all(|b| b.is_ascii_graphic());
            if token.len() < MIN_TOKEN_CHARS || !visible {
                return Err(OperatorTokenError::Weak(var));
            }
            Ok(OperatorToken {
                token: token.to_owned(),
                from_env: true,
            })
        }
        None => Ok(OperatorToken {
            token: new_token().map_err(|e| OperatorTokenError::Random(e.to_string()))?,
            from_env: false,
        }),
    }
}

/// The tokens of a server whose policy gives no tenant a token, granted in `policy`:
/// the MCP token (`mcp_env`, the value of [`TOKEN_ENV`], else made now) as a token of
/// `tenant` (the operator); the console token (`console_env`, the value of
/// [`CONSOLE_TOKEN_ENV`], else made now) as the only admin token — unless the policy
/// names admin tokens of its own, which then stay the only ones (no console token).
///
/// # Errors
/// [`OperatorTokenError::Weak`] for a value shorter than [`MIN_TOKEN_CHARS`] or with
/// characters a header cannot carry; [`OperatorTokenError::Same`] when the two are
/// equal; [`OperatorTokenError::Admin`] when the MCP token is one of the policy's admin
/// tokens; [`OperatorTokenError::Random`].
pub fn serve_tokens(
    policy: &mut ServerPolicy,
    tenant: &str,
    mcp_env: Option<&str>,
    console_env: Option<&str>,
) -> Result<ServeTokens, OperatorTokenError> {
    let mcp = operator_token(TOKEN_ENV, mcp_env)?;
    let mcp_digest = digest(&mcp.token);
    if policy
        .admin_tokens
        .iter()
        .any(|d| bool::from(d.ct_eq(&mcp_digest)))
    {
        return Err(OperatorTokenError::Admin);
    }
    let console = if policy.admin_tokens.is_empty() {
        let console = operator_token(CONSOLE_TOKEN_ENV, console_env)?;
        // Equal only when both came from the environment (two fresh tokens differ).
        if bool::from(digest(&console.token).ct_eq(&mcp_digest)) {
            return Err(OperatorTokenError::Same);
        }
        policy.admin_tokens.push(digest(&console.token));
        Some(console)
    } else {
        None
    };
    policy
        .tenant_tokens
        .entry(tenant.to_owned())
        .or_default()
        .push(mcp_digest);
    Ok(ServeTokens { mcp, console })
}

/// The token of an `Authorization: Bearer <token>` header value.
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// Whether `candidate` equals one of `digests`, in time that depends only on how many
/// digests there are: every entry is compared in full, with no early exit, so timing
/// tells nothing about which (or whether one) matched.
fn find(digests: &[(TokenDigest, usize)], candidate: &TokenDigest) -> Option<usize> {
    let mut found = usize::MAX;
    for (known, index) in digests {
        let equal = known.ct_eq(candidate);
        // Branch-free select of the matching index.
        let mask = 0usize.wrapping_sub(usize::from(equal.unwrap_u8()));
        found = (found & !mask) | (index & mask);
    }
    (found != usize::MAX).then_some(found)
}

/// A tenant an HTTP request can act as: its id and its rate limit.
#[derive(Debug)]
pub struct TenantAccess {
    /// Tenant id (`""`: the operator, used when the policy defines no tokens).
    pub id: Arc<str>,
    /// tools/call rate limit (`None`: unlimited).
    pub limiter: Option<RateLimiter>,
    /// Rate limit of new MCP sessions (`initialize` handshakes), always on: each
    /// session holds a worker task and buffers until it ends.
    pub sessions: RateLimiter,
}

/// Compiled authentication: token digests → tenants, and the admin digests.
#[derive(Debug)]
pub struct Authenticator {
    tenants: Vec<Arc<TenantAccess>>,
    /// Digest → index into `tenants`.
    tokens: Vec<(TokenDigest, usize)>,
    admin: Vec<(TokenDigest, usize)>,
    /// Used when no tenant has a token: every request acts as the default tenant.
    open: Option<Arc<TenantAccess>>,
}

/// Why a request was not authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthFailure {
    /// No `Authorization: Bearer` header.
    Missing,
    /// A token no tenant (or admin) has.
    Unknown,
}

impl AuthFailure {
    /// What the client should do, for the body of a 401.
    pub fn hint(self) -> &'static str {
        match self {
            Self::Missing => {
                "Unauthorized: this server requires a bearer token. Send the header `Authorization: Bearer <token>` with the token `hermetic serve` printed on stderr at start ($HERMETIC_TOKEN when that was set), or a tenant's token from the policy file\n"
            }
            Self::Unknown => {
                "Unauthorized: unknown token. Send the token `hermetic serve` printed on stderr at start ($HERMETIC_TOKEN when that was set), or a tenant's token from the policy file; a new start without $HERMETIC_TOKEN makes a new token\n"
            }
        }
    }

    /// What the client should do, for the body of a 401 from an admin endpoint
    /// (`/approvals`, `/metrics`): the MCP token is not one.
    pub fn admin_hint(self) -> &'static str {
        match self {
            Self::Missing => {
                "Unauthorized: this endpoint requires an admin token. Send the header `Authorization: Bearer <token>` with the console token (the #token= of the console URL `hermetic serve` printed, or $HERMETIC_CONSOLE_TOKEN when that was set) or an admin token of the policy ([server] admin_token_sha256)\n"
            }
            Self::Unknown => {
                "Unauthorized: not an admin token. The MCP token (and a tenant's) only calls tools; send the console token (the #token= of the console URL `hermetic serve` printed, or $HERMETIC_CONSOLE_TOKEN when that was set) or an admin token of the policy ([server] admin_token_sha256)\n"
            }
        }
    }
}

impl Authenticator {
    /// Compiles the policy's tokens. With no tenant tokens at all, every request acts
    /// as `default_tenant` (a single-operator server; [`super::http::serve`] then
    /// refuses non-loopback addresses).
    pub fn new(policy: &ServerPolicy, default_tenant: &str) -> Self {
        let limiter = |tenant: &str| {
            policy
                .calls_per_minute
                .get(tenant)
                .map(|n| RateLimiter::per_minute(*n))
        };
        let sessions_per_minute = policy
            .sessions_per_minute
            .unwrap_or(DEFAULT_SESSIONS_PER_MINUTE);
        let mut tenants = Vec::new();
        let mut tokens = Vec::new();
        for (id, digests) in &policy.tenant_tokens {
            let index = tenants.len();
            tenants.push(Arc::new(TenantAccess {
                id: Arc::from(id.as_str()),
                limiter: limiter(id),
                sessions: RateLimiter::per_minute(sessions_per_minute),
            }));
            tokens.extend(digests.iter().map(|d| (*d, index)));
        }
        let open = tokens.is_empty().then(|| {
            Arc::new(TenantAccess {
                id: Arc::from(default_tenant),
                limiter: limiter(default_tenant),
                sessions: RateLimiter::per_minute(sessions_per_minute),
            })
        });
        let admin = policy.admin_tokens.iter().map(|d| (*d, 0)).collect();
        Self {
            tenants,
            tokens,
            admin,
            open,
        }
    }

    /// Whether requests must carry a token (the policy gives tenants tokens).
    pub fn requires_tokens(&self) -> bool {
        self.open.is_none()
    }

    /// The tenants a request can act as: with tokens, those that have one; without,
    /// the default tenant.
    pub fn tenant_ids(&self) -> impl Iterator<Item = &str> {
        self.open.iter().chain(&self.tenants).map(|t| t.id.as_ref())
    }

    /// Whether the approvals endpoint is on (the policy has admin tokens).
    pub fn has_admin(&self) -> bool {
        !self.admin.is_empty()
    }

    /// The tenant an `Authorization` header value acts as.
    ///
    /// # Errors
    /// [`AuthFailure`] when tokens are required and the header is missing or unknown.
    pub fn tenant(&self, authorization: Option<&str>) -> Result<Arc<TenantAccess>, AuthFailure> {
        if let Some(open) = &self.open {
            return Ok(open.clone());
        }
        let token = authorization.and_then(bearer).ok_or(AuthFailure::Missing)?;
        find(&self.tokens, &digest(token))
            .and_then(|i| self.tenants.get(i).cloned())
            .ok_or(AuthFailure::Unknown)
    }

    /// Checks an admin `Authorization` header value.
    ///
    /// # Errors
    /// [`AuthFailure`] when it is missing or not an admin token.
    pub fn admin(&self, authorization: Option<&str>) -> Result<(), AuthFailure> {
        let token = authorization.and_then(bearer).ok_or(AuthFailure::Missing)?;
        find(&self.admin, &digest(token))
            .map(|_| ())
            .ok_or(AuthFailure::Unknown)
    }
}

/// A GCRA (generic cell rate algorithm) limiter: `n` calls per minute, with bursts of
/// up to `n`. Hand-written rather than the `governor` crate: it is one atomic and a
/// dozen lines, where governor would add several dependencies for the same thing.
#[derive(Debug)]
pub struct RateLimiter {
    base: Instant,
    /// Time between calls at the sustained rate, in nanoseconds.
    interval: u64,
    /// How far ahead of now the theoretical arrival time may run (the burst).
    tolerance: u64,
    /// Theoretical arrival time of the next call, in nanoseconds since `base`.
    tat: AtomicU64,
}

impl RateLimiter {
    /// `n` calls per minute (`n` ≥ 1; 0 is treated as 1).
    pub fn per_minute(n: u32) -> Self {
        let n = u64::from(n.max(1));
        let interval = 60_000_000_000 / n;
        Self {
            base: Instant::now(),
            interval,
            tolerance: interval * n,
            tat: AtomicU64::new(0),
        }
    }

    /// The interval between calls at the sustained rate, and the burst tolerance (what
    /// a shared store needs to run the same limit).
    pub fn params(&self) -> (Duration, Duration) {
        (
            Duration::from_nanos(self.interval),
            Duration::from_nanos(self.tolerance),
        )
    }

    /// Takes one call.
    ///
    /// # Errors
    /// How long until a call would be allowed, when over the limit.
    pub fn check(&self) -> Result<(), Duration> {
        let now = u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let mut tat = self.tat.load(Ordering::Relaxed);
        loop {
            let next = tat.max(now).saturating_add(self.interval);
            let allowed_at = next.saturating_sub(self.tolerance);
            if allowed_at > now {
                return Err(Duration::from_nanos(allowed_at - now));
            }
            match self
                .tat
                .compare_exchange_weak(tat, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Ok(()),
                Err(current) => tat = current,
            }
        }
    }
}

/// The `Host` and `Origin` values a server accepts (DNS-rebinding protection).
///
/// Defaults: the loopback names `localhost`, `127.0.0.1` and `[::1]` with the bound
/// port, the bound address itself when it is a specific (not unspecified) address, and
/// the matching `http://` origins. Requests without `Origin` (non-browser clients)
/// pass; one with an `Origin` must match.
#[derive(Debug, Clone)]
pub struct AllowList {
    hosts: Vec<String>,
    origins: Vec<String>,
}

impl AllowList {
    /// The defaults for `bound`, extended by the operator's `hosts` (`name` — which
    /// also matches `name:<bound port>` — or `name:port`) and `origins`
    /// (`scheme://host[:port]`). Entries are compared case-insensitively.
    pub fn new(bound: SocketAddr, hosts: &[String], origins: &[String]) -> Self {
        let port = bound.port();
        let mut names = vec![
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            "[::1]".to_owned(),
        ];
        if !bound.ip().is_unspecified() && !bound.ip().is_loopback() {
            names.push(match bound {
                SocketAddr::V4(a) => a.ip().to_string(),
                SocketAddr::V6(a) => format!("[{}]", a.ip()),
            });
        }
        let mut allowed_hosts: Vec<String> = names.iter().map(|n| format!("{n}:{port}")).collect();
        let mut allowed_origins: Vec<String> =
            names.iter().map(|n| format!("http://{n}:{port}")).collect();
        for host in hosts {
            let host = host.trim().to_ascii_lowercase();
            // `name` without a port: also with the bound port (clients send it).
            let has_port = if host.starts_with('[') {
                host.contains("]:")
            } else {
                host.contains(':')
            };
            if !has_port {
                allowed_hosts.push(format!("{host}:{port}"));
            }
            allowed_hosts.push(host);
        }
        allowed_origins.extend(
            origins
                .iter()
                .map(|o| o.trim().trim_end_matches('/').to_ascii_lowercase()),
        );
        Self {
            hosts: allowed_hosts,
            origins: allowed_origins,
        }
    }

    /// Whether a `Host` header value is allowed (a missing header is not).
    pub fn host_allowed(&self, host: Option<&str>) -> bool {
        host.is_some_and(|h| self.hosts.iter().any(|a| a.eq_ignore_ascii_case(h.trim())))
    }

    /// Whether an `Origin` header value is allowed (a missing header is).
    pub fn origin_allowed(&self, origin: Option<&str>) -> bool {
        origin.is_none_or(|o| {
            let o = o.trim().trim_end_matches('/');
            self.origins.iter().any(|a| a.eq_ignore_ascii_case(o))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> ServerPolicy {
        let mut p = ServerPolicy::default();
        p.tenant_tokens
            .insert("acme".into(), vec![digest("a1"), digest("a2")]);
        p.tenant_tokens.insert("globex".into(), vec![digest("g1")]);
        p.admin_tokens.push(digest("root"));
        p.calls_per_minute.insert("acme".into(), 2);
        p
    }

    #[test]
    fn the_digest_is_sha256_in_hex() {
        assert_eq!(
            hex(&digest("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn new_tokens_are_prefixed_random_and_distinct() {
        let a = new_token().unwrap();
        let b = new_token().unwrap();
        assert!(a.starts_with(TOKEN_PREFIX) && a.len() == TOKEN_PREFIX.len() + 64);
        assert_ne!(a, b);
    }

    #[test]
    fn tokens_map_to_their_tenant_and_nothing_else_authenticates() {
        let auth = Authenticator::new(&policy(), "");
        assert!(auth.requires_tokens());
        let id = |h: Option<&str>| auth.tenant(h).map(|t| t.id.to_string());
        assert_eq!(id(Some("Bearer a1")).unwrap(), "acme");
        assert_eq!(id(Some("bearer  a2 ")).unwrap(), "acme");
        assert_eq!(id(Some("Bearer g1")).unwrap(), "globex");
        assert_eq!(id(None), Err(AuthFailure::Missing));
        assert_eq!(id(Some("Basic a1")), Err(AuthFailure::Missing));
        assert_eq!(id(Some("Bearer ")), Err(AuthFailure::Missing));
        assert_eq!(id(Some("Bearer nope")), Err(AuthFailure::Unknown));
        // The admin token is not a tenant token, and tenant tokens are not admin.
        assert_eq!(id(Some("Bearer root")), Err(AuthFailure::Unknown));
        assert_eq!(auth.admin(Some("Bearer root")), Ok(()));
        assert_eq!(auth.admin(Some("Bearer a1")), Err(AuthFailure::Unknown));
    }

    #[test]
    fn without_tokens_every_request_is_the_default_tenant() {
        let auth = Authenticator::new(&ServerPolicy::default(), "ops");
        assert!(!auth.requires_tokens());
        assert!(!auth.has_admin());
        assert_eq!(&*auth.tenant(None).unwrap().id, "ops");
    }

    #[test]
    fn the_rate_limiter_allows_a_burst_then_says_when_to_retry() {
        let limiter = RateLimiter::per_minute(2);
        assert!(limiter.check().is_ok());
        assert!(limiter.check().is_ok());
        let wait = limiter.check().unwrap_err();
        assert!(
            wait > Duration::from_secs(25) && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
    }

    #[test]
    fn the_allow_list_takes_loopback_for_the_bound_port_and_operator_entries() {
        let bound: SocketAddr = "127.0.0.1:8788".parse().unwrap();
        let list = AllowList::new(
            bound,
            &["mcp.example.com".into(), "api.example.com:443".into()],
            &["https://console.example.com".into()],
        );
        for ok in [
            "localhost:8788",
            "127.0.0.1:8788",
            "[::1]:8788",
            "LOCALHOST:8788",
            "mcp.example.com",
            "mcp.example.com:8788",
            "api.example.com:443",
        ] {
            assert!(list.host_allowed(Some(ok)), "{ok}");
        }
        for bad in [
            "localhost:9999",
            "evil.com:8788",
            "localhost",
            "api.example.com",
            "",
        ] {
            assert!(!list.host_allowed(Some(bad)), "{bad}");
        }
        assert!(!list.host_allowed(None));
        assert!(list.origin_allowed(None));
        assert!(list.origin_allowed(Some("http://localhost:8788")));
        assert!(list.origin_allowed(Some("https://console.example.com/")));
        assert!(!list.origin_allowed(Some("http://evil.com")));
        assert!(!list.origin_allowed(Some("null")));
    }

    #[test]
    fn the_operator_token_is_made_or_taken_from_the_environment() {
        let made = operator_token(TOKEN_ENV, None).unwrap();
        assert!(made.token.starts_with(TOKEN_PREFIX) && !made.from_env);
        let fixed = "x".repeat(MIN_TOKEN_CHARS);
        let given = operator_token(TOKEN_ENV, Some(&fixed)).unwrap();
        assert_eq!(
            (given.token.as_str(), given.from_env),
            (fixed.as_str(), true)
        );
        for weak in ["short", &format!("{} ", "x".repeat(40)), &"é".repeat(40)] {
            let refused = operator_token(CONSOLE_TOKEN_ENV, Some(weak)).unwrap_err();
            assert!(
                matches!(refused, OperatorTokenError::Weak(CONSOLE_TOKEN_ENV)),
                "{refused}"
            );
            assert!(
                refused
                    .to_string()
                    .starts_with("HERMETIC_CONSOLE_TOKEN must")
            );
        }
    }

    /// Review r3, finding 2: the token an agent is given acts as the operator's
    /// tenant and is no admin token; the console's is an admin token and no tenant's.
    #[test]
    fn the_mcp_token_calls_tools_and_only_the_console_token_answers_approvals() {
        let mut policy = ServerPolicy::default();
        let tokens = serve_tokens(&mut policy, "", None, None).unwrap();
        let console = tokens.console.clone().unwrap();
        assert_ne!(tokens.mcp.token, console.token);
        let auth = Authenticator::new(&policy, "");
        assert!(auth.requires_tokens() && auth.has_admin());
        let mcp = format!("Bearer {}", tokens.mcp.token);
        let admin = format!("Bearer {}", console.token);
        assert_eq!(&*auth.tenant(Some(&mcp)).unwrap().id, "");
        assert_eq!(auth.admin(Some(&mcp)), Err(AuthFailure::Unknown));
        assert_eq!(auth.admin(Some(&admin)), Ok(()));
        assert_eq!(auth.tenant(Some(&admin)).unwrap_err(), AuthFailure::Unknown);
        assert_eq!(auth.tenant(None).unwrap_err(), AuthFailure::Missing);
        assert_eq!(auth.tenant_ids().collect::<Vec<_>>(), [""]);
        assert!(
            AuthFailure::Unknown
                .admin_hint()
                .contains("not an admin token")
        );
        // An admin token of the policy's own stays the only one: no console token.
        let mut policy = ServerPolicy::default();
        policy.admin_tokens.push(digest("root"));
        let tokens = serve_tokens(&mut policy, "", None, None).unwrap();
        assert_eq!(tokens.console, None);
        let auth = Authenticator::new(&policy, "");
        assert!(
            auth.admin(Some(&format!("Bearer {}", tokens.mcp.token)))
                .is_err()
        );
        assert!(auth.admin(Some("Bearer root")).is_ok());
    }

    #[test]
    fn the_two_tokens_must_differ_and_the_mcp_token_is_never_an_admin_s() {
        let same = "y".repeat(MIN_TOKEN_CHARS);
        let mut policy = ServerPolicy::default();
        assert!(matches!(
            serve_tokens(&mut policy, "", Some(&same), Some(&same)),
            Err(OperatorTokenError::Same)
        ));
        assert!(policy.admin_tokens.is_empty() && policy.tenant_tokens.is_empty());
        let mut policy = ServerPolicy::default();
        policy.admin_tokens.push(digest(&same));
        assert!(matches!(
            serve_tokens(&mut policy, "", Some(&same), None),
            Err(OperatorTokenError::Admin)
        ));
        let mut policy = ServerPolicy::default();
        let other = "z".repeat(MIN_TOKEN_CHARS);
        let tokens = serve_tokens(&mut policy, "", Some(&same), Some(&other)).unwrap();
        assert!(tokens.mcp.from_env && tokens.console.is_some_and(|c| c.from_env));
    }
}
