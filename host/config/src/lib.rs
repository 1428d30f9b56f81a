//! # hermetic-config — the operator's policy file
//!
//! The one place that knows the policy file's shape: it reads the operator's TOML and
//! turns it into the runtime's types (the [`OperatorPolicy`] the pure
//! [`hermetic_policy`] decides with, secret values, the host files to keep out of
//! reach, trust and key-value settings) and the server's ([`ServerPolicy`]), with the
//! file-system facts they need (canonical mount paths, secret values) gathered here.
//! The runtime never reads the file.
//!
//! See `policy.example.toml` for every key, commented.
//!
//! Relative paths: the directories tools and terminal commands work in (mounts, the
//! terminal's `cwd` and workspaces, ssh key files) resolve against the directory
//! hermetic starts in; the files the host keeps for itself (the secrets file, the
//! server's audit log, the approval allowlist) against the policy file's own
//! directory. Those host files, and the policy file itself, must lie outside every
//! mount and terminal workspace ([`ToolReach`]).

use hermetic::Secrets;
use hermetic::{StateFile, StatePathError, ToolReach, allowlist_files};
use hermetic_policy::declaration::Access;
use hermetic_policy::keyvalue::KeyValueQuota;
use hermetic_policy::network::{Destination, DestinationError};
use hermetic_policy::{
    ClockPolicy, GrantOverride, GrantSet, HttpLimitOverride, LimitOverride, MountGrant,
    OperatorPolicy, TenantLimits, TenantMount, TenantPolicy,
};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Why a policy file was rejected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyFileError {
    /// The file (or the secrets file) cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// File.
        path: PathBuf,
        /// OS error.
        #[source]
        source: std::io::Error,
    },
    /// Not valid TOML, or an unknown key, or a wrong type.
    #[error("{path}: {reason}")]
    Parse {
        /// File.
        path: PathBuf,
        /// What is wrong, with the key.
        reason: String,
    },
    /// A value that parses but makes no sense.
    #[error("{path}: {reason}")]
    Invalid {
        /// File.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A file the host keeps (the policy itself, secrets, audit log, approval
    /// allowlist) lies where tools or terminal commands of this policy reach.
    #[error("{path}: {source}")]
    StatePath {
        /// The policy file.
        path: PathBuf,
        /// Which file, and where it is reached from.
        #[source]
        source: StatePathError,
    },
}

/// A loaded policy file.
#[derive(Debug, Clone)]
pub struct LoadedPolicy {
    /// The operator policy.
    pub policy: OperatorPolicy,
    /// Secret values for env grants.
    pub secrets: Secrets,
    /// Settings of `hermetic serve`: tokens, rate limits, allow-lists, audit.
    pub server: ServerPolicy,
    /// The files the host keeps that this policy names — the policy file itself (from
    /// [`load`]), the secrets file, the audit log, each approval allowlist — already
    /// checked against this policy's [`ToolReach`]. A host that changes the mounts
    /// afterwards (`--workspace`) checks them again
    /// ([`hermetic::Registry::check_state_path`]).
    pub state_files: Vec<StateFile>,
    /// The tools named by reference, the trusted keys and the store.
    pub trust: hermetic_policy::trust::TrustPolicy,
    /// `[keyvalue] file`: where tools' key-value data is kept (relative to the policy
    /// file; `None`: the host's default). Ignored with a cluster: data is in Redis.
    pub keyvalue_file: Option<PathBuf>,
    /// `[keyvalue]`'s ceiling of a tenant's session stores and their expiry (the
    /// defaults without them).
    pub keyvalue_settings: hermetic::KeyValueSettings,
}

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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileToml {
    #[serde(default)]
    mounts: BTreeMap<String, MountToml>,
    #[serde(default)]
    secrets: Option<SecretsToml>,
    #[serde(default)]
    defaults: GrantsToml,
    #[serde(default)]
    tools: BTreeMap<String, GrantsToml>,
    #[serde(default)]
    tenants: BTreeMap<String, TenantToml>,
    /// Checked by hand (see [`terminal_settings`]): per-tenant tables merge onto it.
    #[serde(default)]
    terminal: Option<toml::Table>,
    #[serde(default)]
    server: ServerToml,
    #[serde(default)]
    trust: TrustToml,
    #[serde(default)]
    cluster: ClusterToml,
    #[serde(default)]
    hooks: BTreeMap<String, HookToml>,
    #[serde(default)]
    keyvalue: KeyValueFileToml,
}

/// `[keyvalue]`: where the embedded key-value store keeps its file, how much a
/// tenant's session stores hold together, and when an idle one expires.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct KeyValueFileToml {
    file: Option<PathBuf>,
    sessions_max_keys: Option<u64>,
    sessions_max_total_bytes: Option<u64>,
    session_expiry_secs: Option<u64>,
}

impl KeyValueFileToml {
    /// The settings these keys give (each positive: `0` would refuse every session
    /// write, or expire a store before its next call).
    fn settings(&self) -> Result<hermetic::KeyValueSettings, String> {
        let d = hermetic::KeyValueSettings::default();
        let positive = |key: &str, v: Option<u64>, default: u64| match v {
            Some(0) => Err(format!(
                "keyvalue.{key} must be positive (leave it out for the default, {default})"
            )),
            Some(v) => Ok(v),
            None => Ok(default),
        };
        Ok(hermetic::KeyValueSettings {
            sessions_max_keys: positive(
                "sessions_max_keys",
                self.sessions_max_keys,
                d.sessions_max_keys,
            )?,
            sessions_max_total_bytes: positive(
                "sessions_max_total_bytes",
                self.sessions_max_total_bytes,
                d.sessions_max_total_bytes,
            )?,
            session_expiry: std::time::Duration::from_secs(
                positive(
                    "session_expiry_secs",
                    self.session_expiry_secs,
                    d.session_expiry.as_secs(),
                )
                .and_then(|secs| {
                    let max = hermetic::KEYVALUE_MAX_SESSION_EXPIRY
                        .as_secs();
                    if secs > max {
                        Err(format!(
                            "keyvalue.session_expiry_secs must be at most {max} (365 days): a session store idle longer is over"
                        ))
                    } else {
                        Ok(secs)
                    }
                })?,
            ),
        })
    }
}

/// `[hooks.NAME]`: a hook the operator turns on.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HookToml {
    /// A component file (relative to the policy file).
    path: Option<PathBuf>,
    /// An OCI reference, pulled like a tool's `source`.
    source: Option<String>,
    /// When it runs among the hooks: lower first.
    order: Option<i64>,
    /// Settings handed to the hook.
    #[serde(default)]
    config: toml::Table,
    tenants: Option<BTreeSet<String>>,
    tools: Option<BTreeSet<String>>,
    toolsets: Option<BTreeSet<String>>,
    #[serde(default)]
    secret_scan: bool,
    mounts: Option<BTreeSet<String>>,
    env: Option<BTreeSet<String>>,
    network: Option<Vec<String>>,
    #[serde(default)]
    limits: LimitsToml,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ClusterToml {
    redis_url: Option<String>,
    state_key: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct TrustToml {
    #[serde(default)]
    keys: Vec<String>,
    #[serde(default)]
    require_signature: bool,
    #[serde(default)]
    strict: bool,
    store: Option<PathBuf>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ServerToml {
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MountToml {
    path: PathBuf,
    access: Access,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SecretsToml {
    file: PathBuf,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct GrantsToml {
    /// Only under `[tools.NAME]`: where the component comes from.
    source: Option<String>,
    /// Only under `[tools.NAME]`: the component digest the grants were reviewed for.
    reviewed: Option<String>,
    /// Only under `[tools.NAME]`: secrets the host adds to requests, by secret name.
    inject: Option<BTreeMap<String, InjectToml>>,
    mounts: Option<BTreeSet<String>>,
    env: Option<BTreeSet<String>>,
    network: Option<Vec<String>>,
    terminal: Option<bool>,
    keyvalue: Option<KeyValueToml>,
    clock: Option<ClockToml>,
    #[serde(default)]
    limits: LimitsToml,
}

/// `keyvalue = true | false | { max_keys, max_value_bytes, max_total_bytes }`.
#[derive(Deserialize)]
#[serde(untagged)]
enum KeyValueToml {
    Granted(bool),
    Quota(KeyValueQuotaToml),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyValueQuotaToml {
    max_keys: Option<u64>,
    max_value_bytes: Option<u64>,
    max_total_bytes: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InjectToml {
    destination: String,
    header: Option<String>,
    query: Option<String>,
    format: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ClockToml {
    Name(String),
    Coarse { coarse_ms: u64 },
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct LimitsToml {
    timeout_ms: Option<u64>,
    max_timeout_ms: Option<u64>,
    memory_mb: Option<u64>,
    max_memory_mb: Option<u64>,
    core_instances: Option<u32>,
    max_core_instances: Option<u32>,
    result_chars: Option<usize>,
    max_result_chars: Option<usize>,
    fuel: Option<u64>,
    max_concurrent: Option<usize>,
    queue_timeout_ms: Option<u64>,
    output_bytes: Option<usize>,
    #[serde(default)]
    http: HttpLimitsToml,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct HttpLimitsToml {
    connect_timeout_ms: Option<u64>,
    first_byte_timeout_ms: Option<u64>,
    between_bytes_timeout_ms: Option<u64>,
    max_response_bytes: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct TenantToml {
    toolsets: Option<Vec<String>>,
    mounts: Option<BTreeMap<String, TenantMountToml>>,
    env: Option<BTreeSet<String>>,
    network: Option<Vec<String>>,
    terminal: Option<bool>,
    keyvalue: Option<bool>,
    #[serde(default)]
    token_sha256: Vec<String>,
    #[serde(default)]
    limits: TenantLimitsToml,
    require_signature: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TenantMountToml {
    access: Access,
    subdir: Option<PathBuf>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct TenantLimitsToml {
    timeout_ms: Option<u64>,
    memory_mb: Option<u64>,
    result_chars: Option<usize>,
    fuel: Option<u64>,
    max_concurrent: Option<usize>,
    calls_per_minute: Option<u32>,
}

/// Reads and validates a policy file. Relative mount and terminal paths resolve
/// against `base_dir` (the directory hermetic was started in); relative paths of the
/// secrets file, the audit log and approval allowlists against the policy file's own
/// directory.
///
/// # Errors
/// [`PolicyFileError`] naming the file, the key and what to write instead;
/// [`PolicyFileError::StatePath`] when the policy file, or a file it names for the
/// host, lies inside a mount. (What terminal commands reach is the backends' to say:
/// `hermetic_terminal::attach` fills it in, and the registry built from the policy
/// checks these files against it too — `Registry::check_state_path`.)
pub fn load(path: &Path, base_dir: &Path) -> Result<LoadedPolicy, PolicyFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| PolicyFileError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let file_dir = path.parent().unwrap_or(Path::new("."));
    let mut loaded = parse(&text, path, base_dir, file_dir)?;
    let policy_file = StateFile {
        what: "the policy file".to_owned(),
        path: path.to_path_buf(),
    };
    ToolReach::of(&loaded.policy)
        .check(&policy_file.what, &policy_file.path)
        .map_err(|source| PolicyFileError::StatePath {
            path: path.to_path_buf(),
            source,
        })?;
    loaded.state_files.insert(0, policy_file);
    // What no terminal command may name: the host's files, and what it trusts at its
    // next start (the trusted keys' files, hook components from files).
    let key_files = toml::from_str::<toml::Table>(&text)
        .ok()
        .and_then(|t| t.get("trust")?.get("keys")?.as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|k| k.as_str().map(str::to_owned))
        .filter(|k| !k.starts_with("ed25519:"))
        .map(|k| file_dir.join(k));
    let hook_files = loaded
        .policy
        .hooks
        .iter()
        .filter_map(|h| match &h.location {
            hermetic_policy::hooks::HookLocation::Path(p) => Some(p.clone()),
            _ => None,
        });
    loaded.policy.terminal.protected = loaded
        .state_files
        .iter()
        .map(|f| f.path.clone())
        .chain(key_files)
        .chain(hook_files)
        .map(|p| std::path::absolute(&p).unwrap_or(p))
        .collect();
    Ok(loaded)
}

/// Parses policy text (see [`load`]); `path` is used in messages only (so the policy
/// file's own location is not checked: [`load`] does that).
///
/// # Errors
/// [`PolicyFileError`] as for [`load`].
pub fn parse(
    text: &str,
    path: &Path,
    base_dir: &Path,
    file_dir: &Path,
) -> Result<LoadedPolicy, PolicyFileError> {
    let invalid = |reason: String| PolicyFileError::Invalid {
        path: path.to_path_buf(),
        reason,
    };
    let raw: FileToml = toml::from_str(text).map_err(|e| PolicyFileError::Parse {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;

    let mounts = operator_mounts(raw.mounts, base_dir, &invalid)?;
    if raw.defaults.inject.is_some() {
        return Err(invalid(
            "defaults.inject: a secret is bound to one tool's requests: write it under [tools.NAME.inject.SECRET]".into(),
        ));
    }
    if raw.defaults.source.is_some() || raw.defaults.reviewed.is_some() {
        return Err(invalid(
            "defaults.source and defaults.reviewed name one tool's component: write them under [tools.NAME]".into(),
        ));
    }
    let mut reviewed = BTreeMap::new();
    let defaults = default_grants(raw.defaults, &mounts, &invalid)?;
    let mut tools = BTreeMap::new();
    let mut sources = BTreeMap::new();
    for (name, mut grants) in raw.tools {
        if let Some(digest) = grants.reviewed.take() {
            let valid = digest.strip_prefix("sha256:").is_some_and(|h| {
                h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            });
            if !valid {
                return Err(invalid(format!(
                    "tools.{name}.reviewed = {digest:?}: write the component's digest, sha256: and 64 lowercase hex digits (`hermetic inspect` shows it)"
                )));
            }
            reviewed.insert(name.clone(), digest);
        }
        if let Some(source) = grants.source.take() {
            if !source.starts_with("oci://") {
                return Err(invalid(format!(
                    "tools.{name}.source = {source:?}: write oci://HOST/REPOSITORY:TAG or oci://HOST/REPOSITORY@sha256:…"
                )));
            }
            sources.insert(name.clone(), source);
        }
        let o = grant_override(grants, &invalid)?;
        if let Some(m) = &o.mounts {
            check_mounts_exist(m, &mounts, &format!("tools.{name}"), &invalid)?;
        }
        tools.insert(name, o);
    }
    let mut server = server_policy(raw.server, &raw.tenants, file_dir, &invalid)?;
    if let Some(url) = raw.cluster.redis_url {
        if !(url.starts_with("redis://") || url.starts_with("rediss://")) {
            return Err(invalid(
                "cluster.redis_url: write redis://[user:password@]host[:port][/db] (or rediss:// for TLS)".into(),
            ));
        }
        server.redis_url = Some(url);
    }
    // Used only with a Redis (here or `serve --redis-url`), which holds the nonces:
    // a shared key without shared nonces would let one answer be replayed per node.
    server.state_key = raw.cluster.state_key;
    let mut trust = trust_policy(raw.trust, file_dir, &invalid)?;
    trust.sources = sources;
    trust.reviewed = reviewed;
    let mut tenants = BTreeMap::new();
    for (id, mut t) in raw.tenants {
        match t.require_signature.take() {
            Some(true) if !trust.require_signature => {
                trust.tenants_requiring.insert(id.clone());
            }
            Some(false) if trust.require_signature => {
                return Err(invalid(format!(
                    "tenants.{id}.require_signature = false: a tenant may only narrow, and [trust] requires signatures"
                )));
            }
            _ => {}
        }
        let tenant = tenant_policy(&id, t, &mounts, &invalid)?;
        tenants.insert(id, tenant);
    }
    let secrets_file = raw.secrets.map(|s| file_dir.join(s.file));
    let terminal = terminal_settings(raw.terminal, &tenants, base_dir, file_dir, &invalid)?;
    let hooks = hook_policies(raw.hooks, &mounts, &tenants, file_dir, &invalid)?;
    let policy = OperatorPolicy {
        mounts,
        defaults,
        tools,
        tenants,
        terminal,
        hooks,
    };
    console_approver_needs_admin(&policy.terminal, &server, &invalid)?;

    // Checked before the secrets are read: a secrets file a tool can reach is refused,
    // not used.
    let keyvalue_settings = raw.keyvalue.settings().map_err(&invalid)?;
    let keyvalue_file = raw.keyvalue.file.map(|f| file_dir.join(f));
    let mut state_files = host_files(&policy, secrets_file.as_deref(), &server);
    if let Some(file) = &keyvalue_file {
        state_files.push(StateFile {
            what: "the key-value store".to_owned(),
            path: file.clone(),
        });
    }
    if let Some(store) = &trust.store {
        state_files.push(StateFile {
            what: "the tool store".to_owned(),
            path: store.clone(),
        });
    }
    let reach = ToolReach::of(&policy);
    for file in &state_files {
        reach
            .check(&file.what, &file.path)
            .map_err(|source| PolicyFileError::StatePath {
                path: path.to_path_buf(),
                source,
            })?;
    }
    let secrets = match &secrets_file {
        None => Secrets::default(),
        Some(file) => read_secrets(file)?,
    };
    for (name, tool) in &policy.tools {
        for binding in &tool.inject {
            if secrets.get(&binding.secret).is_none() {
                return Err(invalid(format!(
                    "tools.{name}.inject.{}: no such secret in the secrets file ([secrets] file)",
                    binding.secret
                )));
            }
            if policy.grants_for(name).env.contains(&binding.secret) {
                return Err(invalid(format!(
                    "tools.{name}.inject.{0}: {0} is also granted to the tool as an env var, so the tool would hold it; grant one or the other",
                    binding.secret
                )));
            }
        }
    }
    if let Some(name) = &server.state_key {
        check_state_key(name, &secrets, &policy, &invalid)?;
    }
    Ok(LoadedPolicy {
        policy,
        secrets,
        server,
        state_files,
        trust,
        keyvalue_file,
        keyvalue_settings,
    })
}

/// Shortest `[cluster] state_key` secret: 32 characters (e.g. `openssl rand -hex 32`
/// makes 64), so it cannot be guessed.
const MIN_STATE_KEY_CHARS: usize = 32;

/// The secret `[cluster] state_key` names is in the secrets file, long enough, and no
/// tool or terminal command may see it as an env var (who holds it can forge an
/// approval round's answers).
fn check_state_key(
    name: &str,
    secrets: &Secrets,
    policy: &OperatorPolicy,
    invalid: &dyn Fn(String) -> PolicyFileError,
) -> Result<(), PolicyFileError> {
    let Some(value) = secrets.get(name) else {
        return Err(invalid(format!(
            "cluster.state_key = {name:?}: no such secret in the secrets file ([secrets] file); add e.g. {name} = \"<output of openssl rand -hex 32>\" there, the same on every node"
        )));
    };
    if value.chars().count() < MIN_STATE_KEY_CHARS {
        return Err(invalid(format!(
            "cluster.state_key: the secret {name} must be at least {MIN_STATE_KEY_CHARS} characters (e.g. openssl rand -hex 32)"
        )));
    }
    let granted = policy.defaults.env.contains(name)
        || policy
            .tools
            .keys()
            .any(|tool| policy.grants_for(tool).env.contains(name))
        || std::iter::once(&policy.terminal.default)
            .chain(policy.terminal.tenants.values())
            .any(|t| t.env.iter().any(|e| e == name));
    if granted {
        return Err(invalid(format!(
            "cluster.state_key: the secret {name} is also granted as an env var, so a tool or command could read it and forge approval answers; use a secret nothing is granted"
        )));
    }
    // A hook's env and an inject binding hand the value out as surely: to a hook's
    // code, or to a destination (which may echo it to the tool in a form no scrubbing
    // knows).
    if let Some(hook) = policy
        .hooks
        .iter()
        .find(|h| h.grants.env.as_ref().is_some_and(|env| env.contains(name)))
    {
        return Err(invalid(format!(
            "cluster.state_key: the secret {name} is also granted to hooks.{}.env, so the hook could read it and forge approval answers; use a secret nothing is granted",
            hook.name
        )));
    }
    if let Some(tool) = policy
        .tools
        .iter()
        .find_map(|(tool, o)| o.inject.iter().any(|b| b.secret == name).then_some(tool))
    {
        return Err(invalid(format!(
            "cluster.state_key: the secret {name} is also bound in tools.{tool}.inject.{name}, so the host would send it to that destination, where it could be read and used to forge approval answers; use a secret nothing else uses"
        )));
    }
    Ok(())
}

/// The files the host keeps that `policy` names: the secrets file, the audit log and
/// every distinct approval allowlist.
fn host_files(
    policy: &OperatorPolicy,
    secrets_file: Option<&Path>,
    server: &ServerPolicy,
) -> Vec<StateFile> {
    let file = |what: &str, path: &Path| StateFile {
        what: what.to_owned(),
        path: path.to_path_buf(),
    };
    let mut files = Vec::new();
    if let Some(path) = secrets_file {
        files.push(file("the secrets file", path));
    }
    if let Some(path) = &server.audit_file {
        files.push(file("the audit log", path));
    }
    for path in allowlist_files(policy) {
        if !files.iter().any(|f| f.path == path) {
            files.push(file("the approval allowlist", path));
        }
    }
    files
}

/// Largest public-key file read.
const MAX_KEY_FILE: u64 = 4096;

/// `[trust]`: each key inline (`ed25519:…`) or a file holding one (relative to the
/// policy file's directory, as `hermetic keygen` writes `KEY.pub`), and the store.
fn trust_policy(
    raw: TrustToml,
    file_dir: &Path,
    invalid: &impl Fn(String) -> PolicyFileError,
) -> Result<hermetic_policy::trust::TrustPolicy, PolicyFileError> {
    use std::io::Read as _;
    let mut keys = Vec::new();
    for key in raw.keys {
        if key.starts_with("ed25519:") {
            keys.push(key);
            continue;
        }
        let path = file_dir.join(&key);
        let mut text = String::new();
        std::fs::File::open(&path)
            .and_then(|f| f.take(MAX_KEY_FILE).read_to_string(&mut text))
            .map_err(|e| {
                invalid(format!(
                    "trust.keys: {key:?} is neither a key (ed25519:…) nor a readable key file ({}: {e})",
                    path.display()
                ))
            })?;
        keys.push(text.trim().to_owned());
    }
    Ok(hermetic_policy::trust::TrustPolicy {
        keys,
        require_signature: raw.require_signature,
        strict: raw.strict,
        store: raw.store.map(|s| file_dir.join(s)),
        ..Default::default()
    })
}

/// `[mounts.NAME]`: each path, relative to `base_dir`, must be a directory now.
fn operator_mounts(
    raw: BTreeMap<String, MountToml>,
    base_dir: &Path,
    invalid: &impl Fn(String) -> PolicyFileError,
) -> Result<BTreeMap<String, MountGrant>, PolicyFileError> {
    let mut mounts = BTreeMap::new();
    for (name, m) in raw {
        let joined = base_dir.join(&m.path);
        let host_path = joined.canonicalize().map_err(|e| {
            invalid(format!(
                "mount `{name}`: {} cannot be used: {e}",
                joined.display()
            ))
        })?;
        if !host_path.is_dir() {
            return Err(invalid(format!(
                "mount `{name}`: {} is not a directory",
                host_path.display()
            )));
        }
        mounts.insert(
            name,
            MountGrant {
                host_path,
                ceiling: m.access,
            },
        );
    }
    Ok(mounts)
}

/// `[defaults]`: every mount unless it names some; nothing else unless it grants it.
fn default_grants(
    raw: GrantsToml,
    mounts: &BTreeMap<String, MountGrant>,
    invalid: &impl Fn(String) -> PolicyFileError,
) -> Result<GrantSet, PolicyFileError> {
    let mut defaults = GrantSet {
        mounts: mounts.keys().cloned().collect(),
        ..GrantSet::default()
    };
    let d = grant_override(raw, invalid)?;
    if let Some(m) = d.mounts {
        defaults.mounts = m;
    }
    defaults.env = d.env.unwrap_or_default();
    defaults.network = d.network.unwrap_or_default();
    defaults.terminal = d.terminal.unwrap_or(false);
    defaults.keyvalue = d.keyvalue.flatten();
    defaults.clock = d.clock.unwrap_or_default();
    defaults.limits = d.limits.apply_to(defaults.limits);
    check_mounts_exist(&defaults.mounts, mounts, "defaults", invalid)?;
    Ok(defaults)
}

/// `[server]` and the tenants' tokens and call rates. Audit-file paths resolve against
/// the policy file's directory.
fn server_policy(
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

/// `[tenants.ID]`: what the tenant narrows; its mounts must be the operator's.
fn tenant_policy(
    id: &str,
    t: TenantToml,
    mounts: &BTreeMap<String, MountGrant>,
    invalid: &impl Fn(String) -> PolicyFileError,
) -> Result<TenantPolicy, PolicyFileError> {
    if id.is_empty() {
        return Err(invalid("a tenant id cannot be empty".into()));
    }
    let network = t
        .network
        .map(|n| destinations(&n).map_err(|e| invalid(format!("tenants.{id}.network: {e}"))))
        .transpose()?;
    let tenant_mounts = match t.mounts {
        None => None,
        Some(ms) => {
            let mut out = BTreeMap::new();
            for (name, m) in ms {
                if !mounts.contains_key(&name) {
                    return Err(invalid(format!(
                        "tenants.{id}.mounts.{name}: no such mount (define it under [mounts.{name}])"
                    )));
                }
                out.insert(
                    name,
                    TenantMount {
                        access: m.access,
                        subdir: m.subdir,
                    },
                );
            }
            Some(out)
        }
    };
    Ok(TenantPolicy {
        toolsets: t.toolsets,
        mounts: tenant_mounts,
        env: t.env,
        network,
        terminal: t.terminal,
        keyvalue: t.keyvalue,
        limits: TenantLimits {
            timeout_ms: t.limits.timeout_ms,
            memory_mb: t.limits.memory_mb,
            result_chars: t.limits.result_chars,
            fuel: t.limits.fuel,
            max_concurrent: t.limits.max_concurrent,
        },
    })
}

/// The `[terminal]` table: the operator's default terminal, and `[terminal.tenants.ID]`
/// tables whose keys replace the default's for that tenant (sub-tables merge key by
/// key). The keys every backend shares are read here; each backend's own table
/// (`[terminal.bwrap]`, …) is kept as written for the backend to read when the
/// terminal host is built (`hermetic_terminal::attach`), which also refuses keys no
/// backend owns and resolves the backends' relative paths against `base_dir`. The
/// approval allowlist is a file the host keeps, so it resolves against the policy
/// file's directory (`file_dir`), as the secrets file and the audit log do.
fn terminal_settings(
    table: Option<toml::Table>,
    tenants: &BTreeMap<String, TenantPolicy>,
    base_dir: &Path,
    file_dir: &Path,
    invalid: &impl Fn(String) -> PolicyFileError,
) -> Result<hermetic_policy::terminal::TerminalSettings, PolicyFileError> {
    use hermetic_policy::terminal::TerminalConfig;
    let mut table = table.unwrap_or_default();
    let per_tenant = match table.remove("tenants") {
        None => toml::Table::new(),
        Some(toml::Value::Table(t)) => t,
        Some(_) => {
            return Err(invalid(
                "terminal.tenants must be a table of tenant ids".into(),
            ));
        }
    };
    let parse = |t: toml::Table, at: &str| -> Result<TerminalConfig, PolicyFileError> {
        let mut config: TerminalConfig = toml::Value::Table(t)
            .try_into()
            .map_err(|e: toml::de::Error| invalid(format!("{at}: {}", e.message())))?;
        let resolve_in = |base: &Path, p: &mut Option<PathBuf>| {
            if let Some(path) = p.as_mut()
                && path.is_relative()
            {
                *path = base.join(&*path);
            }
        };
        resolve_in(file_dir, &mut config.approval.allowlist_file);
        if config.timeout_secs == 0
            || config.timeout_secs > hermetic_policy::terminal::MAX_TIMEOUT_SECS
        {
            return Err(invalid(format!(
                "{at}.timeout_secs must be 1 to {}",
                hermetic_policy::terminal::MAX_TIMEOUT_SECS
            )));
        }
        hermetic_approval::ApprovalGate::new(&config.approval)
            .map_err(|e| invalid(format!("{at}.approval: {e}")))?;
        Ok(config)
    };
    let default = parse(table.clone(), "terminal")?;
    let mut out = BTreeMap::new();
    for (id, value) in per_tenant {
        if !tenants.contains_key(&id) {
            return Err(invalid(format!(
                "terminal.tenants.{id}: no such tenant (define it under [tenants.{id}])"
            )));
        }
        let toml::Value::Table(overrides) = value else {
            return Err(invalid(format!("terminal.tenants.{id} must be a table")));
        };
        let mut merged = table.clone();
        merge(&mut merged, overrides);
        out.insert(
            id.clone(),
            parse(merged, &format!("terminal.tenants.{id}"))?,
        );
    }
    Ok(hermetic_policy::terminal::TerminalSettings {
        default,
        tenants: out,
        grant_bundled: false,
        protected: Vec::new(),
        programs: Vec::new(),
        base_dir: Some(base_dir.to_path_buf()),
    })
}

/// `approver = "console"` with no admin token: nobody could ever answer (the console
/// is off without one), so every dangerous command would be denied — surely not what
/// was meant. Said at load, with the fix.
fn console_approver_needs_admin(
    terminal: &hermetic_policy::terminal::TerminalSettings,
    server: &ServerPolicy,
    invalid: &impl Fn(String) -> PolicyFileError,
) -> Result<(), PolicyFileError> {
    use hermetic_policy::approval::ApproverChoice;
    if !server.admin_tokens.is_empty() {
        return Ok(());
    }
    let console_only = std::iter::once(("terminal", &terminal.default))
        .chain(terminal.tenants.iter().map(|(id, c)| (id.as_str(), c)))
        .find(|(_, c)| c.approval.approver == ApproverChoice::Console);
    match console_only {
        None => Ok(()),
        Some((at, _)) => {
            let at = if at == "terminal" {
                "terminal.approval".to_owned()
            } else {
                format!("terminal.tenants.{at}.approval")
            };
            Err(invalid(format!(
                "{at}.approver = \"console\" needs the console: set [server] admin_token_sha256 (`hermetic token new` makes one), or let the client answer (\"client\" or \"client_or_console\")"
            )))
        }
    }
}

/// `over`'s keys into `base`, sub-tables key by key.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

fn grant_override(
    g: GrantsToml,
    invalid: &impl Fn(String) -> PolicyFileError,
) -> Result<GrantOverride, PolicyFileError> {
    let clock = match g.clock {
        None => None,
        Some(ClockToml::Name(n)) if n == "real" => Some(ClockPolicy::Real),
        Some(ClockToml::Name(n)) if n == "frozen" => Some(ClockPolicy::Frozen),
        Some(ClockToml::Name(n)) => {
            return Err(invalid(format!(
                "clock {n:?}: write \"real\", \"frozen\" or {{ coarse_ms = N }}"
            )));
        }
        Some(ClockToml::Coarse { coarse_ms: 0 }) => {
            return Err(invalid("clock coarse_ms must be positive".into()));
        }
        Some(ClockToml::Coarse { coarse_ms }) => Some(ClockPolicy::Coarse(coarse_ms)),
    };
    let network = g
        .network
        .map(|n| destinations(&n).map_err(|e| invalid(e.to_string())))
        .transpose()?;
    let mut inject = Vec::new();
    for (secret, i) in g.inject.unwrap_or_default() {
        let at = format!("inject.{secret}");
        let into = match (i.header, i.query) {
            (Some(h), None) => hermetic_policy::inject::InjectInto::Header(h),
            (None, Some(q)) => hermetic_policy::inject::InjectInto::Query(q),
            _ => {
                return Err(invalid(format!(
                    "{at}: say where the secret goes: header = \"NAME\" or query = \"NAME\" (one of them)"
                )));
            }
        };
        let format = i.format.unwrap_or_else(|| "{}".to_owned());
        let binding =
            hermetic_policy::inject::SecretInjection::new(&secret, &i.destination, into, &format)
                .map_err(|e| invalid(format!("{at}: {e}")))?;
        inject.push(binding);
    }
    let l = g.limits;
    if l.core_instances == Some(0) || l.max_core_instances == Some(0) {
        return Err(invalid(
            "limits.core_instances and max_core_instances must be at least 1 (a Rust tool needs 3)"
                .into(),
        ));
    }
    if l.max_concurrent == Some(0) {
        return Err(invalid("limits.max_concurrent must be at least 1".into()));
    }
    let keyvalue = match g.keyvalue {
        None => None,
        Some(KeyValueToml::Granted(false)) => Some(None),
        Some(KeyValueToml::Granted(true)) => Some(Some(KeyValueQuota::default())),
        Some(KeyValueToml::Quota(q)) => {
            let d = KeyValueQuota::default();
            let quota = KeyValueQuota {
                max_keys: q.max_keys.unwrap_or(d.max_keys),
                max_value_bytes: q.max_value_bytes.unwrap_or(d.max_value_bytes),
                max_total_bytes: q.max_total_bytes.unwrap_or(d.max_total_bytes),
            };
            if quota.max_keys == 0 || quota.max_value_bytes == 0 || quota.max_total_bytes == 0 {
                return Err(invalid(
                    "keyvalue quotas must be positive (keyvalue = false takes the store away)"
                        .into(),
                ));
            }
            Some(Some(quota))
        }
    };
    Ok(GrantOverride {
        inject,
        mounts: g.mounts,
        env: g.env,
        network,
        terminal: g.terminal,
        keyvalue,
        clock,
        limits: LimitOverride {
            default_timeout_ms: l.timeout_ms,
            max_timeout_ms: l.max_timeout_ms,
            default_memory_mb: l.memory_mb,
            max_memory_mb: l.max_memory_mb,
            default_core_instances: l.core_instances,
            max_core_instances: l.max_core_instances,
            default_result_chars: l.result_chars,
            max_result_chars: l.max_result_chars,
            fuel: l.fuel,
            max_concurrent: l.max_concurrent,
            queue_timeout_ms: l.queue_timeout_ms,
            output_bytes: l.output_bytes,
            http: HttpLimitOverride {
                connect_timeout_ms: l.http.connect_timeout_ms,
                first_byte_timeout_ms: l.http.first_byte_timeout_ms,
                between_bytes_timeout_ms: l.http.between_bytes_timeout_ms,
                max_response_bytes: l.http.max_response_bytes,
            },
        },
    })
}

fn destinations(patterns: &[String]) -> Result<Vec<Destination>, DestinationError> {
    patterns.iter().map(|p| Destination::parse(p)).collect()
}

/// The bundled hooks, by name (their components are embedded in the binary).
pub const BUNDLED_HOOKS: &[&str] = &["secret_scan"];

/// `[hooks.NAME]` tables, in the order the hooks run.
fn hook_policies(
    raw: BTreeMap<String, HookToml>,
    mounts: &BTreeMap<String, MountGrant>,
    tenants: &BTreeMap<String, hermetic_policy::TenantPolicy>,
    file_dir: &Path,
    invalid: &impl Fn(String) -> PolicyFileError,
) -> Result<Vec<hermetic_policy::hooks::HookPolicy>, PolicyFileError> {
    use hermetic_policy::hooks::{HookLocation, HookPolicy};
    let mut hooks = Vec::new();
    for (name, h) in raw {
        let at = format!("hooks.{name}");
        let location = match (h.path, h.source) {
            (Some(path), None) => HookLocation::Path(file_dir.join(path)),
            (None, Some(source)) if source.starts_with("oci://") => HookLocation::Source(source),
            (None, Some(source)) => {
                return Err(invalid(format!(
                    "{at}.source = {source:?}: write oci://HOST/REPOSITORY:TAG or oci://HOST/REPOSITORY@sha256:…"
                )));
            }
            (None, None) if BUNDLED_HOOKS.contains(&name.as_str()) => {
                HookLocation::Bundled(name.clone())
            }
            (None, None) => {
                return Err(invalid(format!(
                    "{at}: say where the hook is: path = \"FILE.wasm\" or source = \"oci://…\" (bundled hooks: {})",
                    BUNDLED_HOOKS.join(", ")
                )));
            }
            (Some(_), Some(_)) => {
                return Err(invalid(format!("{at}: path or source, not both")));
            }
        };
        let Some(order) = h.order else {
            return Err(invalid(format!(
                "{at}: say when it runs among the hooks: order = N (lower first)"
            )));
        };
        if let Some(unknown) = h
            .tenants
            .iter()
            .flatten()
            .find(|t| !tenants.contains_key(*t))
        {
            return Err(invalid(format!(
                "{at}.tenants: no tenant {unknown:?} in [tenants]"
            )));
        }
        if let Some(m) = &h.mounts {
            check_mounts_exist(m, mounts, &at, invalid)?;
        }
        let config =
            serde_json::to_string(&h.config).map_err(|e| invalid(format!("{at}.config: {e}")))?;
        let grants = grant_override(
            GrantsToml {
                mounts: h.mounts,
                env: h.env,
                network: h.network,
                limits: h.limits,
                ..GrantsToml::default()
            },
            invalid,
        )
        .map_err(|e| match e {
            PolicyFileError::Invalid { path, reason } => PolicyFileError::Invalid {
                path,
                reason: format!("{at}: {reason}"),
            },
            other => other,
        })?;
        hooks.push(HookPolicy {
            name,
            location,
            order,
            config,
            tenants: h.tenants,
            tools: h.tools,
            toolsets: h.toolsets,
            grants,
            secret_scan: h.secret_scan,
        });
    }
    hooks.sort_by(|a, b| a.order.cmp(&b.order).then_with(|| a.name.cmp(&b.name)));
    Ok(hooks)
}

fn check_mounts_exist(
    names: &BTreeSet<String>,
    mounts: &BTreeMap<String, MountGrant>,
    at: &str,
    invalid: &impl Fn(String) -> PolicyFileError,
) -> Result<(), PolicyFileError> {
    match names.iter().find(|n| !mounts.contains_key(*n)) {
        Some(n) => Err(invalid(format!(
            "{at}.mounts: no mount named `{n}` (define it under [mounts.{n}])"
        ))),
        None => Ok(()),
    }
}

fn read_secrets(path: &Path) -> Result<Secrets, PolicyFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| PolicyFileError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    Secrets::from_toml(&text).map_err(|reason| PolicyFileError::Parse {
        path: path.to_path_buf(),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in(dir: &Path, text: &str) -> Result<LoadedPolicy, PolicyFileError> {
        parse(text, Path::new("policy.toml"), dir, dir)
    }

    #[test]
    fn the_shipped_example_parses() {
        let dir = tempfile::TempDir::new().unwrap();
        std::fs::create_dir_all(dir.path().join("examples/data")).unwrap();
        std::fs::create_dir_all(dir.path().join("examples/workspace")).unwrap();
        std::fs::write(
            dir.path().join("examples/secrets.toml"),
            "WEATHER_API_KEY = \"k\"\n",
        )
        .unwrap();
        let example = include_str!("../../../policy.example.toml");
        let loaded = parse_in(dir.path(), example).unwrap();
        assert!(loaded.policy.mounts.contains_key("workspace"));
        assert!(!loaded.policy.tenants.is_empty());
        assert_eq!(loaded.secrets.get("WEATHER_API_KEY"), Some("k"));
        assert_eq!(format!("{:?}", loaded.secrets), "{\"WEATHER_API_KEY\"}");
    }

    #[test]
    fn a_cluster_state_key_names_a_long_secret_nothing_is_granted() {
        let dir = tempfile::TempDir::new().unwrap();
        let key = "k".repeat(40);
        std::fs::write(
            dir.path().join("secrets.toml"),
            format!("STATE = \"{key}\"\nSHORT = \"abc\"\n"),
        )
        .unwrap();
        let head = "[secrets]\nfile = \"secrets.toml\"\n";
        let load = |rest: &str| parse_in(dir.path(), &format!("{head}{rest}"));
        let loaded = load("[cluster]\nstate_key = \"STATE\"\n").unwrap();
        assert_eq!(loaded.server.state_key.as_deref(), Some("STATE"));
        let says = |rest: &str, what: &str| {
            let e = load(rest).map(|_| ()).unwrap_err().to_string();
            assert!(e.contains(what), "{e}");
        };
        says("[cluster]\nstate_key = \"NOPE\"\n", "no such secret");
        says(
            "[cluster]\nstate_key = \"SHORT\"\n",
            "at least 32 characters",
        );
        says(
            "[defaults]\nenv = [\"STATE\"]\n[cluster]\nstate_key = \"STATE\"\n",
            "also granted as an env var",
        );
        says(
            "[tools.t]\nenv = [\"STATE\"]\n[cluster]\nstate_key = \"STATE\"\n",
            "also granted as an env var",
        );
        says(
            "[terminal]\nenv = [\"STATE\"]\n[cluster]\nstate_key = \"STATE\"\n",
            "also granted as an env var",
        );
        // Nor handed to a hook, nor sent by the host to a destination.
        says(
            "[hooks.audit]\npath = \"audit.wasm\"\norder = 1\nenv = [\"STATE\"]\n[cluster]\nstate_key = \"STATE\"\n",
            "cluster.state_key: the secret STATE is also granted to hooks.audit.env",
        );
        says(
            "[tools.t.inject.STATE]\ndestination = \"https://api.example.com/v1\"\nheader = \"X-Key\"\n[cluster]\nstate_key = \"STATE\"\n",
            "cluster.state_key: the secret STATE is also bound in tools.t.inject.STATE",
        );
        // Another secret in either place is fine.
        load(
            "[hooks.audit]\npath = \"audit.wasm\"\norder = 1\nenv = [\"SHORT\"]\n[tools.t.inject.SHORT]\ndestination = \"https://api.example.com/v1\"\nheader = \"X-Key\"\n[cluster]\nstate_key = \"STATE\"\n",
        )
        .unwrap();
    }

    #[test]
    fn who_answers_approvals_is_a_tenant_key_with_three_values() {
        use hermetic_policy::approval::ApproverChoice;
        let admin = format!("[server]\nadmin_token_sha256 = [\"{}\"]\n", "ab".repeat(32));
        let text = format!(
            "[tenants.a]\n[tenants.b]\n[terminal.approval]\napprover = \"client\"\n\
             [terminal.tenants.b.approval]\napprover = \"console\"\n{admin}"
        );
        let dir = tempfile::TempDir::new().unwrap();
        let loaded = parse_in(dir.path(), &text).unwrap();
        let terminal = &loaded.policy.terminal;
        assert_eq!(
            terminal.for_tenant("a").approval.approver,
            ApproverChoice::Client
        );
        assert_eq!(
            terminal.for_tenant("b").approval.approver,
            ApproverChoice::Console
        );
        let err = |text: &str| parse_in(dir.path(), text).unwrap_err().to_string();
        assert!(
            err("[terminal.approval]\napprover = \"anyone\"").contains("client_or_console"),
            "{}",
            err("[terminal.approval]\napprover = \"anyone\"")
        );
        assert!(err("[terminal.approval]\napprovers = \"client\"").contains("approvers"));
        // Console-only without a console: said at load, with the fix.
        let without_admin = "[tenants.b]\n[terminal.tenants.b.approval]\napprover = \"console\"";
        let message = err(without_admin);
        assert!(
            message.contains("terminal.tenants.b.approval.approver")
                && message.contains("admin_token_sha256"),
            "{message}"
        );
    }

    #[test]
    fn a_policy_toml_error_names_the_file_line_and_column() {
        let dir = tempfile::TempDir::new().unwrap();
        let err = parse_in(dir.path(), "[defaults]\nterminal = yes\n")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("policy.toml: "), "{err}");
        assert!(err.contains("line 2, column 12"), "{err}");
    }

    #[test]
    fn a_broken_secrets_file_is_located_by_line_without_quoting_it() {
        let dir = tempfile::TempDir::new().unwrap();
        std::fs::write(
            dir.path().join("secrets.toml"),
            "A = \"fine\"\nB = hunter2-not-quoted\n",
        )
        .unwrap();
        let err = parse_in(dir.path(), "[secrets]\nfile = \"secrets.toml\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2, column 5"), "{err}");
        assert!(!err.contains("hunter2"), "the secret was quoted: {err}");
    }

    #[test]
    fn unknown_keys_and_bad_values_are_load_errors_that_say_what_to_write() {
        let dir = tempfile::TempDir::new().unwrap();
        let err = |text: &str| parse_in(dir.path(), text).unwrap_err().to_string();
        assert!(err("[defaults]\ngrant_everything = true").contains("grant_everything"));
        assert!(err("[defaults]\nnetwork = [\"ftp://x.com\"]").contains("http or https"));
        assert!(err("[defaults]\nclock = \"fast\"").contains("coarse_ms"));
        assert!(err("[mounts.w]\npath = \"missing\"\naccess = \"rw\"").contains("cannot be used"));
        assert!(err("[defaults]\nmounts = [\"nope\"]").contains("no mount named `nope`"));
        assert!(err("[tenants.a.mounts.nope]\naccess = \"ro\"").contains("no such mount"));
        assert!(err("[mounts.w]\npath = \".\"\naccess = \"rwx\"").contains("access"));
    }

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

    /// Issue 39: with the workspace at the policy's own directory, a tenant's
    /// `write_file` could rewrite the approval allowlist (re-read on every check) and
    /// its next dangerous command would run with no human; the policy, secrets and
    /// audit log are as exposed. Each is refused at load, naming the file and the mount.
    #[test]
    fn host_files_inside_a_mount_or_terminal_workspace_are_refused_at_load() {
        let root = tempfile::TempDir::new().unwrap();
        let root = root.path();
        std::fs::create_dir_all(root.join("ws")).unwrap();
        std::fs::create_dir_all(root.join("box")).unwrap();
        std::fs::write(root.join("secrets.toml"), "K = \"v\"\n").unwrap();
        std::fs::write(root.join("ws/secrets.toml"), "K = \"v\"\n").unwrap();
        let refused = |policy: &str, what: &str, place: &str| {
            let file = root.join("policy.toml");
            std::fs::write(&file, policy).unwrap();
            match load(&file, root) {
                Err(PolicyFileError::StatePath { source, .. }) => {
                    assert_eq!((source.what.as_str(), source.place.as_str()), (what, place));
                    let text = source.to_string();
                    assert!(text.contains("move it outside every mount"), "{text}");
                }
                other => panic!("{what} in {place} was accepted: {other:?}"),
            }
        };
        let at_root = "[mounts.workspace]\npath = \".\"\naccess = \"rw\"\n";
        refused(at_root, "the policy file", "mount `workspace`");
        let ws = "[mounts.workspace]\npath = \"ws\"\naccess = \"rw\"\n";
        refused(
            &format!("{ws}[terminal.approval]\nallowlist_file = \"ws/approvals.json\"\n"),
            "the approval allowlist",
            "mount `workspace`",
        );
        refused(
            &format!(
                "{ws}[terminal.tenants.acme.approval]\nallowlist_file = \"ws/acme.json\"\n[tenants.acme]\n"
            ),
            "the approval allowlist",
            "mount `workspace`",
        );
        refused(
            &format!("{ws}[server]\naudit_file = \"ws/audit.jsonl\"\n"),
            "the audit log",
            "mount `workspace`",
        );
        refused(
            &format!("{ws}[secrets]\nfile = \"ws/secrets.toml\"\n"),
            "the secrets file",
            "mount `workspace`",
        );
        // A read-only mount is reach enough: a tool could read the secrets.
        refused(
            "[mounts.data]\npath = \"ws\"\naccess = \"ro\"\n[secrets]\nfile = \"ws/secrets.toml\"\n",
            "the secrets file",
            "mount `data`",
        );
        // A terminal's writable workspace is the terminal host's to say (it reads the
        // backends' options): tests/terminal.rs checks that the registry refuses it.
        // The same files beside the mount load.
        let file = root.join("policy.toml");
        std::fs::write(
            &file,
            format!(
                "{ws}[secrets]\nfile = \"secrets.toml\"\n[server]\naudit_file = \"audit.jsonl\"\n[terminal.approval]\nallowlist_file = \"approvals.json\"\n"
            ),
        )
        .unwrap();
        let loaded = load(&file, root).unwrap();
        let files: Vec<(&str, PathBuf)> = loaded
            .state_files
            .iter()
            .map(|f| (f.what.as_str(), f.path.clone()))
            .collect();
        assert_eq!(
            files,
            [
                ("the policy file", file.clone()),
                ("the secrets file", root.join("secrets.toml")),
                ("the audit log", root.join("audit.jsonl")),
                ("the approval allowlist", root.join("approvals.json")),
            ]
        );
    }

    #[test]
    fn host_files_resolve_against_the_policy_file_s_directory() {
        let root = tempfile::TempDir::new().unwrap();
        let (start, conf) = (root.path().join("start"), root.path().join("conf"));
        std::fs::create_dir_all(start.join("ws")).unwrap();
        std::fs::create_dir_all(&conf).unwrap();
        std::fs::write(conf.join("secrets.toml"), "K = \"v\"\n").unwrap();
        let file = conf.join("policy.toml");
        std::fs::write(
            &file,
            "[mounts.workspace]\npath = \"ws\"\naccess = \"rw\"\n\
             [secrets]\nfile = \"secrets.toml\"\n[server]\naudit_file = \"audit.jsonl\"\n\
             [terminal]\ncwd = \"ws\"\n[terminal.approval]\nallowlist_file = \"approvals.json\"\n",
        )
        .unwrap();
        let loaded = load(&file, &start).unwrap();
        // Where tools work: against the start directory.
        assert_eq!(
            loaded.policy.mounts["workspace"].host_path,
            start.join("ws").canonicalize().unwrap()
        );
        // (the terminal's `cwd` is the backend's to resolve: on this host or the far
        // side's; it gets the start directory to resolve against)
        assert_eq!(
            loaded.policy.terminal.default.cwd,
            Some(PathBuf::from("ws"))
        );
        assert_eq!(loaded.policy.terminal.base_dir, Some(start.clone()));
        // What the host keeps: against the policy file's directory.
        assert_eq!(loaded.secrets.get("K"), Some("v"));
        assert_eq!(loaded.server.audit_file, Some(conf.join("audit.jsonl")));
        assert_eq!(
            loaded.policy.terminal.default.approval.allowlist_file,
            Some(conf.join("approvals.json"))
        );
    }

    #[test]
    fn mount_paths_are_canonical() {
        let dir = tempfile::TempDir::new().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        let loaded = parse_in(
            dir.path(),
            "[mounts.w]\npath = \"a/./b/..\"\naccess = \"ro\"",
        )
        .unwrap();
        assert_eq!(
            loaded.policy.mounts["w"].host_path,
            dir.path().canonicalize().unwrap().join("a")
        );
        assert_eq!(
            loaded.policy.defaults.mounts,
            BTreeSet::from(["w".to_owned()])
        );
    }
}
