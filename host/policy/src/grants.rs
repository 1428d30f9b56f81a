//! Pure grant decisions: what a tool declared ∩ what the operator allows ∩ what the
//! tenant allows → what the sandbox gives it. No I/O, no clocks, no wasmtime types:
//! plain data in, plain data out (the policy file is read by `hermetic-config`).
//!
//! Per capability, a declared-but-not-granted capability either hides the tool or is
//! simply absent from the sandbox:
//!
//! | capability | not granted → |
//! |---|---|
//! | mount (`fs`) | tool **unavailable** (it cannot reach its files) |
//! | required env (`requires_env`) | tool **unavailable** |
//! | optional env (`capabilities.env`) | absent: the tool does not see it |
//! | network destination | absent: a request to it is refused (`HTTP-request-denied` to the guest); when *none* of a tool's destinations is granted, the tool is **unavailable** |
//! | terminal | tool **unavailable** |
//!
//! Limits are wishes: the declaration asks, the operator's per-tool value or default
//! applies when it does not, and operator and tenant ceilings cap the result.

use crate::declaration::{Access, Declaration};
use crate::network::Destination;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

/// What the operator allows: mounts, default grants, per-tool grants, tenants.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct OperatorPolicy {
    /// Logical mount name → host directory and the most access any tool gets to it.
    pub mounts: BTreeMap<String, MountGrant>,
    /// Grants every tool gets (always intersected with its declaration).
    pub defaults: GrantSet,
    /// Per-tool grants: each field set here replaces the default for that tool.
    pub tools: BTreeMap<String, GrantOverride>,
    /// Tenants, by id. Each can only narrow what the operator grants.
    pub tenants: BTreeMap<String, TenantPolicy>,
    /// Terminal backends and approval settings (used only for tools granted the
    /// terminal).
    pub terminal: crate::terminal::TerminalSettings,
    /// Hooks around calls, in the order they run.
    pub hooks: Vec<crate::hooks::HookPolicy>,
}

impl OperatorPolicy {
    /// The embedded default: a read-write `workspace` mount at `workspace` that every
    /// tool may use, no env, no network, default limits, no tenants; the terminal only
    /// for the *bundled* `terminal` and `process` tools (local backend, approval mode
    /// manual — Hermes's defaults), never for other tools; a key-value store with the
    /// default quota for every tool that declares one (each tool's data its own). The
    /// terminal's `cwd` stays unset: commands start in the `workspace` mount, wherever
    /// it is moved later.
    pub fn with_workspace(workspace: PathBuf) -> Self {
        let mut mounts = BTreeMap::new();
        let terminal = crate::terminal::TerminalSettings {
            default: crate::terminal::TerminalConfig::default(),
            tenants: BTreeMap::new(),
            grant_bundled: true,
            ..Default::default()
        };
        mounts.insert(
            "workspace".to_owned(),
            MountGrant {
                host_path: workspace,
                ceiling: Access::Rw,
            },
        );
        Self {
            mounts,
            defaults: GrantSet {
                mounts: BTreeSet::from(["workspace".to_owned()]),
                keyvalue: Some(keyvalue::KeyValueQuota::default()),
                ..GrantSet::default()
            },
            tools: BTreeMap::new(),
            tenants: BTreeMap::new(),
            terminal,
            hooks: Vec::new(),
        }
    }

    /// The operator's grants for one tool: its override fields, else the defaults.
    pub fn grants_for(&self, tool: &str) -> GrantSet {
        let mut set = self.defaults.clone();
        if let Some(o) = self.tools.get(tool) {
            if let Some(m) = &o.mounts {
                set.mounts = m.clone();
            }
            if let Some(e) = &o.env {
                set.env = e.clone();
            }
            if let Some(n) = &o.network {
                set.network = n.clone();
            }
            if let Some(t) = o.terminal {
                set.terminal = t;
            }
            if let Some(kv) = o.keyvalue {
                set.keyvalue = kv;
            }
            if let Some(c) = o.clock {
                set.clock = c;
            }
            set.limits = o.limits.apply_to(set.limits);
        }
        set
    }

    /// The most core instances any tool's or hook's sandbox may be granted: what the
    /// engine's pool must allow per sandbox.
    pub fn max_core_instances(&self) -> u32 {
        let base = self.defaults.limits.max_core_instances;
        self.tools
            .values()
            .chain(self.hooks.iter().map(|h| &h.grants))
            .filter_map(|t| t.limits.max_core_instances)
            .fold(base, u32::max)
    }

    /// Whether any limit sets a fuel budget (the engine must then meter every call).
    pub fn uses_fuel(&self) -> bool {
        self.defaults.limits.fuel.is_some()
            || self.tools.values().any(|t| t.limits.fuel.is_some())
            || self.tenants.values().any(|t| t.limits.fuel.is_some())
    }

    /// Moves the `workspace` mount to `dir` (`--workspace`): only its path changes, so
    /// a policy file's ceiling for it holds; without one it is a read-write mount.
    pub fn move_workspace(&mut self, dir: PathBuf) {
        match self.mounts.get_mut("workspace") {
            Some(mount) => mount.host_path = dir,
            None => {
                let mount = MountGrant {
                    host_path: dir,
                    ceiling: Access::Rw,
                };
                self.mounts.insert("workspace".to_owned(), mount);
            }
        }
    }

    /// The operator's own additions from the command line (`--allow-env`,
    /// `--allow-net`): to the defaults and to every per-tool list (which replaces the
    /// defaults, so would otherwise lose them). Tenant lists narrow and stay as
    /// written.
    pub fn allow_everywhere(&mut self, env: &[String], network: &[Destination]) {
        self.defaults.env.extend(env.iter().cloned());
        self.defaults.network.extend(network.iter().cloned());
        for tool in self.tools.values_mut() {
            if let Some(e) = &mut tool.env {
                e.extend(env.iter().cloned());
            }
            if let Some(n) = &mut tool.network {
                n.extend(network.iter().cloned());
            }
        }
    }

    /// The policy the embedded defaults apply to the *bundled* terminal tools (see
    /// [`crate::terminal::TerminalSettings::grant_bundled`]): this one plus the terminal,
    /// and a deadline ceiling above the longest foreground command
    /// ([`crate::terminal::MAX_TIMEOUT_SECS`]) so a command's own timeout, not the
    /// tool's, ends it.
    pub fn for_bundled_terminal_tools(&self) -> Self {
        let mut p = self.clone();
        p.defaults.terminal = true;
        let ceiling = (crate::terminal::MAX_TIMEOUT_SECS + 60) * 1000;
        p.defaults.limits.max_timeout_ms = p.defaults.limits.max_timeout_ms.max(ceiling);
        for t in p.tools.values_mut() {
            if let Some(max) = t.limits.max_timeout_ms.as_mut() {
                *max = (*max).max(ceiling);
            }
        }
        p
    }
}

/// One operator mount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MountGrant {
    /// Host directory behind the mount (canonical when loaded from a policy file).
    pub host_path: PathBuf,
    /// Most access granted to any tool.
    pub ceiling: Access,
}

/// A set of grants (operator defaults, or one tool's after overrides).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct GrantSet {
    /// Names of mounts tools may use (each capped by the mount's ceiling).
    pub mounts: BTreeSet<String>,
    /// Env vars tools may see.
    pub env: BTreeSet<String>,
    /// Network destinations tools may reach.
    pub network: Vec<Destination>,
    /// Whether the terminal interface may be linked.
    pub terminal: bool,
    /// The key-value store, with its quota (`None`: not granted).
    pub keyvalue: Option<keyvalue::KeyValueQuota>,
    /// What the guest's clocks show.
    pub clock: ClockPolicy,
    /// Limits.
    pub limits: LimitPolicy,
}

/// Per-tool fields; `None` keeps the default.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct GrantOverride {
    /// Replaces the default mounts.
    pub mounts: Option<BTreeSet<String>>,
    /// Replaces the default env.
    pub env: Option<BTreeSet<String>>,
    /// Replaces the default network destinations.
    pub network: Option<Vec<Destination>>,
    /// Replaces the default terminal grant.
    pub terminal: Option<bool>,
    /// Replaces the default key-value grant (`Some(None)`: not granted).
    pub keyvalue: Option<Option<keyvalue::KeyValueQuota>>,
    /// Replaces the default clock.
    pub clock: Option<ClockPolicy>,
    /// Replaces individual limits.
    pub limits: LimitOverride,
    /// Secrets the host adds to this tool's requests (never given to the tool).
    pub inject: Vec<crate::inject::SecretInjection>,
}

/// What the guest's wall and monotonic clocks show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
// Not `#[non_exhaustive]`: the sandbox must match every clock policy, so a new one is
// a compile error there rather than a silent fall-through to the real clock.
pub enum ClockPolicy {
    /// The host's clocks.
    #[default]
    Real,
    /// The host's clocks rounded down to this many milliseconds (timing side channels).
    Coarse(u64),
    /// Always the Unix epoch / zero.
    Frozen,
}

/// Per-call limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LimitPolicy {
    /// Deadline for a tool that declares no `timeout_ms`.
    pub default_timeout_ms: u64,
    /// Largest deadline any tool gets.
    pub max_timeout_ms: u64,
    /// Memory for a tool that declares no `memory_mb`.
    pub default_memory_mb: u64,
    /// Most memory any tool gets.
    pub max_memory_mb: u64,
    /// Core wasm instances a sandbox of a tool that declares no `core_instances` may
    /// create (a Rust tool has 3; an interpreter's component more).
    pub default_core_instances: u32,
    /// Most core instances any tool's sandbox may create. The engine's pool allows
    /// this many per sandbox (a count, not reserved memory).
    pub max_core_instances: u32,
    /// Result cap for a tool that declares no `max_result_chars`.
    pub default_result_chars: usize,
    /// Largest result cap any tool gets.
    pub max_result_chars: usize,
    /// Fuel (wasm instructions, roughly) per call; `None` = unmetered.
    pub fuel: Option<u64>,
    /// Calls of one tool that may run at once.
    pub max_concurrent: usize,
    /// How long a call may wait for its concurrency slots, in all: one budget across
    /// its tenant's `max_concurrent`, its tool's and the host's sandboxes (a call
    /// queued at one queue has only what is left of it at the next), then it gets a
    /// `concurrency` limit error.
    pub queue_timeout_ms: u64,
    /// Bytes of guest stdout/stderr kept (for logs) per call; the rest is dropped.
    pub output_bytes: usize,
    /// Outbound HTTP limits (for tools granted network destinations).
    pub http: HttpLimits,
}

/// Limits on each outbound HTTP request. A request also never outlives its call's
/// deadline, whatever these say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HttpLimits {
    /// Name resolution, TCP connect, TLS and HTTP handshake together.
    pub connect_timeout_ms: u64,
    /// From sending the request to the response head.
    pub first_byte_timeout_ms: u64,
    /// Longest silence between two pieces of the response body.
    pub between_bytes_timeout_ms: u64,
    /// Largest response body; a longer one fails with a body-size error.
    pub max_response_bytes: u64,
}

impl Default for HttpLimits {
    /// 10 s to connect, 30 s to the first byte, 30 s between bytes, 10 MiB of body.
    fn default() -> Self {
        Self {
            connect_timeout_ms: 10_000,
            first_byte_timeout_ms: 30_000,
            between_bytes_timeout_ms: 30_000,
            max_response_bytes: 10 * 1024 * 1024,
        }
    }
}

/// Individual HTTP limit replacements; `None` keeps the value below.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct HttpLimitOverride {
    /// See [`HttpLimits::connect_timeout_ms`].
    pub connect_timeout_ms: Option<u64>,
    /// See [`HttpLimits::first_byte_timeout_ms`].
    pub first_byte_timeout_ms: Option<u64>,
    /// See [`HttpLimits::between_bytes_timeout_ms`].
    pub between_bytes_timeout_ms: Option<u64>,
    /// See [`HttpLimits::max_response_bytes`].
    pub max_response_bytes: Option<u64>,
}

impl HttpLimitOverride {
    /// `base` with every field set here replaced.
    pub fn apply_to(&self, base: HttpLimits) -> HttpLimits {
        HttpLimits {
            connect_timeout_ms: self.connect_timeout_ms.unwrap_or(base.connect_timeout_ms),
            first_byte_timeout_ms: self
                .first_byte_timeout_ms
                .unwrap_or(base.first_byte_timeout_ms),
            between_bytes_timeout_ms: self
                .between_bytes_timeout_ms
                .unwrap_or(base.between_bytes_timeout_ms),
            max_response_bytes: self.max_response_bytes.unwrap_or(base.max_response_bytes),
        }
    }
}

impl Default for LimitPolicy {
    /// 30 s (max 300 s) per call, 64 MiB (max 512 MiB) of memory, 8 (max 64) core
    /// instances, 100,000 (max
    /// 1,000,000) result characters, unmetered fuel, 64 concurrent calls per tool with
    /// a 5 s queue, 64 KiB of captured output.
    fn default() -> Self {
        Self {
            default_timeout_ms: 30_000,
            max_timeout_ms: 300_000,
            default_memory_mb: 64,
            max_memory_mb: 512,
            default_core_instances: 8,
            max_core_instances: 64,
            default_result_chars: 100_000,
            max_result_chars: 1_000_000,
            fuel: None,
            max_concurrent: 64,
            queue_timeout_ms: 5_000,
            output_bytes: 64 * 1024,
            http: HttpLimits::default(),
        }
    }
}

/// Individual limit replacements; `None` keeps the value below.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct LimitOverride {
    /// See [`LimitPolicy::default_timeout_ms`].
    pub default_timeout_ms: Option<u64>,
    /// See [`LimitPolicy::max_timeout_ms`].
    pub max_timeout_ms: Option<u64>,
    /// See [`LimitPolicy::default_memory_mb`].
    pub default_memory_mb: Option<u64>,
    /// See [`LimitPolicy::max_memory_mb`].
    pub max_memory_mb: Option<u64>,
    /// See [`LimitPolicy::default_core_instances`].
    pub default_core_instances: Option<u32>,
    /// See [`LimitPolicy::max_core_instances`].
    pub max_core_instances: Option<u32>,
    /// See [`LimitPolicy::default_result_chars`].
    pub default_result_chars: Option<usize>,
    /// See [`LimitPolicy::max_result_chars`].
    pub max_result_chars: Option<usize>,
    /// See [`LimitPolicy::fuel`].
    pub fuel: Option<u64>,
    /// See [`LimitPolicy::max_concurrent`].
    pub max_concurrent: Option<usize>,
    /// See [`LimitPolicy::queue_timeout_ms`].
    pub queue_timeout_ms: Option<u64>,
    /// See [`LimitPolicy::output_bytes`].
    pub output_bytes: Option<usize>,
    /// See [`LimitPolicy::http`].
    pub http: HttpLimitOverride,
}

impl LimitOverride {
    /// `base` with every field set here replaced.
    pub fn apply_to(&self, base: LimitPolicy) -> LimitPolicy {
        LimitPolicy {
            default_timeout_ms: self.default_timeout_ms.unwrap_or(base.default_timeout_ms),
            max_timeout_ms: self.max_timeout_ms.unwrap_or(base.max_timeout_ms),
            default_memory_mb: self.default_memory_mb.unwrap_or(base.default_memory_mb),
            max_memory_mb: self.max_memory_mb.unwrap_or(base.max_memory_mb),
            default_core_instances: self
                .default_core_instances
                .unwrap_or(base.default_core_instances),
            max_core_instances: self.max_core_instances.unwrap_or(base.max_core_instances),
            default_result_chars: self
                .default_result_chars
                .unwrap_or(base.default_result_chars),
            max_result_chars: self.max_result_chars.unwrap_or(base.max_result_chars),
            fuel: self.fuel.or(base.fuel),
            max_concurrent: self.max_concurrent.unwrap_or(base.max_concurrent),
            queue_timeout_ms: self.queue_timeout_ms.unwrap_or(base.queue_timeout_ms),
            output_bytes: self.output_bytes.unwrap_or(base.output_bytes),
            http: self.http.apply_to(base.http),
        }
    }
}

/// The operator's own tenant id: calls made with it get the operator's grants with no
/// tenant narrowing and see every tool (the CLI, a server without tokens, the
/// console). The one name for it everywhere in the host; a guest's context shows it as
/// [`OPERATOR_TENANT_FOR_GUESTS`].
pub const OPERATOR_TENANT: &str = "";

/// What a guest's call context says for [`OPERATOR_TENANT`]: guests (and Hermes's
/// tools) expect a non-empty tenant id.
pub const OPERATOR_TENANT_FOR_GUESTS: &str = "default";

/// What a tenant allows. Every field narrows; `None` = no further narrowing.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct TenantPolicy {
    /// Toolsets the tenant may use (`None` = all the operator has).
    pub toolsets: Option<Vec<String>>,
    /// Mounts the tenant allows, with its own ceiling and optionally a subdirectory of
    /// the operator's mount (a per-tenant workspace).
    pub mounts: Option<BTreeMap<String, TenantMount>>,
    /// Env vars the tenant allows.
    pub env: Option<BTreeSet<String>>,
    /// Network destinations the tenant allows.
    pub network: Option<Vec<Destination>>,
    /// Whether the tenant allows the terminal.
    pub terminal: Option<bool>,
    /// Whether the tenant allows the key-value store.
    pub keyvalue: Option<bool>,
    /// Tenant ceilings (the smaller of tenant and operator applies).
    pub limits: TenantLimits,
}

/// A tenant's view of a mount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TenantMount {
    /// The tenant's ceiling.
    pub access: Access,
    /// A relative subdirectory of the operator's mount to use instead of its root.
    pub subdir: Option<PathBuf>,
}

/// Tenant ceilings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct TenantLimits {
    /// Most wall-clock time per call.
    pub timeout_ms: Option<u64>,
    /// Most memory per call.
    pub memory_mb: Option<u64>,
    /// Largest result.
    pub result_chars: Option<usize>,
    /// Fuel per call.
    pub fuel: Option<u64>,
    /// Calls of this tenant that may run at once (all tools together).
    pub max_concurrent: Option<usize>,
}

/// What the sandbox gives a tool (for one tenant, or for the operator itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EffectiveGrants {
    /// Mounts to preopen.
    pub mounts: Vec<EffectiveMount>,
    /// Env var names the tool sees.
    pub env: Vec<String>,
    /// Destinations the tool may reach.
    pub network: Vec<Destination>,
    /// Whether the terminal interface is linked.
    pub terminal: bool,
    /// The key-value store: scope and quota (`None`: not declared or not granted).
    pub keyvalue: Option<keyvalue::KeyValueGrant>,
    /// Clocks.
    pub clock: ClockPolicy,
    /// Per-call limits.
    pub limits: EffectiveLimits,
    /// What was asked and not granted, with why.
    pub denials: Vec<Denial>,
    /// Secrets the host adds to the tool's requests to their destinations.
    pub inject: Vec<crate::inject::SecretInjection>,
}

impl EffectiveGrants {
    /// The first denial that makes the tool unavailable, if any.
    pub fn unavailable_reason(&self) -> Option<&str> {
        self.denials
            .iter()
            .find(|d| d.blocks)
            .map(|d| d.reason.as_str())
    }
}

/// A granted mount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EffectiveMount {
    /// Logical name; the guest sees the mount at `/<name>`.
    pub name: String,
    /// Host directory: [`EffectiveMount::root`], or the tenant's subdirectory of it.
    pub host_path: PathBuf,
    /// The operator's mount directory. The sandbox opens it, then walks from it to
    /// `host_path` one component at a time without following symlinks, so a
    /// subdirectory that someone replaced with a symlink is refused, never followed.
    pub root: PathBuf,
    /// Granted access.
    pub access: Access,
}

/// Effective per-call limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct EffectiveLimits {
    /// Wall-clock deadline.
    pub timeout_ms: u64,
    /// Linear memory cap, in bytes.
    pub memory_bytes: u64,
    /// Core wasm instances the call's sandbox may create.
    pub core_instances: u32,
    /// Result cap, in characters.
    pub result_chars: usize,
    /// Fuel per call (`None` = unmetered).
    pub fuel: Option<u64>,
    /// Concurrent calls of this tool.
    pub max_concurrent: usize,
    /// Queue budget for all the call's slots together
    /// ([`LimitPolicy::queue_timeout_ms`]).
    pub queue_timeout_ms: u64,
    /// Captured guest output bytes.
    pub output_bytes: usize,
    /// Outbound HTTP limits.
    pub http: HttpLimits,
}

/// A capability asked for and not granted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Denial {
    /// Which capability, e.g. `env:WEATHER_API_KEY`, `fs:workspace`, `network:…`.
    pub capability: String,
    /// Why, in words an operator can act on.
    pub reason: String,
    /// Whether this makes the tool unavailable.
    pub blocks: bool,
}

/// The declared network destinations, parsed; unparseable ones become denials.
fn declared_network(decl: &Declaration, denials: &mut Vec<Denial>) -> Vec<Destination> {
    let mut out = Vec::new();
    for pattern in &decl.capabilities.network {
        match Destination::parse(pattern) {
            Ok(d) => out.push(d),
            Err(e) => denials.push(Denial {
                capability: format!("network:{pattern}"),
                reason: e.to_string(),
                blocks: false,
            }),
        }
    }
    out
}

/// Decides a tool's grants: declaration ∩ operator ∩ tenant. Deterministic and total;
/// never wider than any of the three.
pub fn effective(
    decl: &Declaration,
    op: &OperatorPolicy,
    tenant: Option<(&str, &TenantPolicy)>,
) -> EffectiveGrants {
    let mut n = Narrowing {
        decl,
        op,
        grants: op.grants_for(&decl.name),
        tenant: tenant.map(|(_, t)| t),
        who: tenant.map_or_else(
            || "the operator".to_owned(),
            |(id, _)| format!("tenant {id}"),
        ),
        denials: Vec::new(),
    };
    let mounts = n.mounts();
    let env = n.env();
    let network = n.network();
    let terminal = n.terminal();
    let keyvalue = n.keyvalue();
    let limits = n.limits();
    EffectiveGrants {
        mounts,
        env,
        network,
        terminal,
        keyvalue,
        clock: n.grants.clock,
        limits,
        denials: n.denials,
        inject: op
            .tools
            .get(&decl.name)
            .map(|t| t.inject.clone())
            .unwrap_or_default(),
    }
}

/// One tool's narrowing in progress: a step per capability, each adding its denials.
struct Narrowing<'a> {
    decl: &'a Declaration,
    op: &'a OperatorPolicy,
    /// The operator's grants for this tool.
    grants: GrantSet,
    tenant: Option<&'a TenantPolicy>,
    /// Who narrows last, for the reasons: "the operator" or "tenant <id>".
    who: String,
    denials: Vec<Denial>,
}

impl Narrowing<'_> {
    /// The narrower a denial names: the operator when it refused, else the tenant.
    fn by(&self, operator_ok: bool) -> String {
        if operator_ok {
            self.who.clone()
        } else {
            "the operator".to_owned()
        }
    }

    fn mounts(&mut self) -> Vec<EffectiveMount> {
        let mut mounts = Vec::new();
        for req in &self.decl.capabilities.fs {
            match self.mount(req) {
                Ok(mount) => mounts.push(mount),
                Err(reason) => self.denials.push(Denial {
                    capability: format!("fs:{}", req.mount),
                    reason,
                    blocks: true,
                }),
            }
        }
        mounts
    }

    /// One declared mount, or why it is refused.
    fn mount(&self, req: &crate::declaration::FsRequest) -> Result<EffectiveMount, String> {
        let name = &req.mount;
        let Some(mount) = self.op.mounts.get(name) else {
            return Err(format!(
                "needs mount `{name}`, which the operator does not configure"
            ));
        };
        if !self.grants.mounts.contains(name) {
            return Err(format!(
                "needs mount `{name}`, which the operator does not grant to this tool"
            ));
        }
        if req.access > mount.ceiling {
            return Err(format!(
                "needs mount `{name}` {}, the operator allows only {}",
                req.access, mount.ceiling
            ));
        }
        let mut host_path = mount.host_path.clone();
        if let Some(t) = self.tenant.and_then(|t| t.mounts.as_ref()) {
            let who = &self.who;
            let Some(tm) = t.get(name) else {
                return Err(format!("{who} does not allow mount `{name}`"));
            };
            if req.access > tm.access {
                return Err(format!(
                    "needs mount `{name}` {}, {who} allows only {}",
                    req.access, tm.access
                ));
            }
            if let Some(sub) = &tm.subdir {
                host_path = confined_join(&host_path, sub).ok_or_else(|| {
                    format!(
                        "{who}'s subdirectory {} for mount `{name}` leaves the mount",
                        sub.display()
                    )
                })?;
            }
        }
        Ok(EffectiveMount {
            name: name.clone(),
            host_path,
            root: mount.host_path.clone(),
            access: req.access,
        })
    }

    fn env(&mut self) -> Vec<String> {
        let mut env = Vec::new();
        for var in self.decl.env_vars() {
            let required = self.decl.requires_env.iter().any(|r| r == var);
            let operator_ok = self.grants.env.contains(var);
            let tenant_ok = self
                .tenant
                .and_then(|t| t.env.as_ref())
                .is_none_or(|e| e.contains(var));
            if operator_ok && tenant_ok {
                env.push(var.to_owned());
                continue;
            }
            let by = self.by(operator_ok);
            self.denials.push(Denial {
                capability: format!("env:{var}"),
                reason: if required {
                    format!("requires env {var}, which {by} does not grant")
                } else {
                    format!("optional env {var} is not granted by {by}")
                },
                blocks: required,
            });
        }
        env
    }

    fn network(&mut self) -> Vec<Destination> {
        let declared = declared_network(self.decl, &mut self.denials);
        let operator_network = crate::network::intersect_all(&declared, &self.grants.network);
        let network = match self.tenant.and_then(|t| t.network.as_ref()) {
            Some(allowed) => crate::network::intersect_all(&operator_network, allowed),
            None => operator_network.clone(),
        };
        for d in &declared {
            if !network.iter().any(|g| d.covers(g)) {
                self.denials.push(Denial {
                    capability: format!("network:{d}"),
                    reason: format!("network destination {d} is not granted"),
                    blocks: false,
                });
            }
        }
        // A tool that needs the network and may reach nothing at all cannot work: hide
        // it (as Hermes hides tools whose check fails) rather than offer it to fail
        // every call.
        if !self.decl.capabilities.network.is_empty() && network.is_empty() {
            let by = self.by(!operator_network.is_empty());
            self.denials.push(Denial {
                capability: "network".to_owned(),
                reason: format!("needs network access, which {by} does not grant"),
                blocks: true,
            });
        }
        network
    }

    fn terminal(&mut self) -> bool {
        if !self.decl.capabilities.terminal {
            return false;
        }
        let tenant_ok = self.tenant.and_then(|t| t.terminal).unwrap_or(true);
        if self.grants.terminal && tenant_ok {
            return true;
        }
        let by = self.by(self.grants.terminal);
        self.denials.push(Denial {
            capability: "terminal".to_owned(),
            reason: format!("needs the terminal, which {by} does not grant"),
            blocks: true,
        });
        false
    }

    fn keyvalue(&mut self) -> Option<keyvalue::KeyValueGrant> {
        let scope = self.decl.capabilities.keyvalue?;
        let tenant_ok = self.tenant.and_then(|t| t.keyvalue).unwrap_or(true);
        if let (Some(quota), true) = (self.grants.keyvalue, tenant_ok) {
            return Some(keyvalue::KeyValueGrant { scope, quota });
        }
        let by = self.by(self.grants.keyvalue.is_some());
        self.denials.push(Denial {
            capability: "keyvalue".to_owned(),
            reason: format!("needs the key-value store, which {by} does not grant"),
            blocks: true,
        });
        None
    }

    /// The declaration's wishes, else the operator's defaults, under the operator's
    /// and the tenant's ceilings.
    fn limits(&self) -> EffectiveLimits {
        let l = &self.grants.limits;
        let t = self.tenant.map(|t| t.limits).unwrap_or_default();
        let decl = self.decl;
        let min = |a: u64, b: Option<u64>| b.map_or(a, |b| a.min(b));
        EffectiveLimits {
            timeout_ms: min(
                decl.timeout_ms
                    .unwrap_or(l.default_timeout_ms)
                    .min(l.max_timeout_ms),
                t.timeout_ms,
            ),
            memory_bytes: min(
                decl.memory_mb
                    .unwrap_or(l.default_memory_mb)
                    .min(l.max_memory_mb),
                t.memory_mb,
            )
            .saturating_mul(1024 * 1024),
            core_instances: decl
                .core_instances
                .unwrap_or(l.default_core_instances)
                .min(l.max_core_instances),
            result_chars: decl
                .max_result_chars
                .unwrap_or(l.default_result_chars)
                .min(l.max_result_chars)
                .min(t.result_chars.unwrap_or(usize::MAX)),
            fuel: match (l.fuel, t.fuel) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            max_concurrent: l.max_concurrent.max(1),
            queue_timeout_ms: l.queue_timeout_ms,
            output_bytes: l.output_bytes,
            http: l.http,
        }
    }
}

/// `base/sub` when `sub` is relative and stays inside `base` lexically.
fn confined_join(base: &Path, sub: &Path) -> Option<PathBuf> {
    let mut out = base.to_path_buf();
    for c in sub.components() {
        match c {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            _ => return None,
        }
    }
    Some(out)
}

pub mod hooks;
pub mod keyvalue;

#[cfg(test)]
mod tests;
