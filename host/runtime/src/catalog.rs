//! The catalog: discovery, registration rules, grants per tenant, availability (cached
//! `check()`), toolsets and OpenAI definitions — the Hermes registry's semantics, on
//! components. It decides what exists and who may see it; running a call is the
//! [`crate::dispatch::Dispatcher`]'s job, which asks the catalog through
//! [`Catalog::resolve`] and nothing else.

use crate::clock::Clock;
use crate::component::{self, CallFailure, LoadError, LoadedTool, ToolSource};
use crate::declaration::Declaration;
use crate::engine::{EngineConfig, EngineError, Runtime};
use crate::outcome::CallOutcome;
use crate::policy::{self, EffectiveGrants, OperatorPolicy};
use crate::sandbox::{self, SandboxError};
use crate::secrets::Secrets;
use crate::slots::Slots;
use crate::state_paths::{StatePathError, ToolReach, allowlist_files};
use crate::toolsets::{Toolsets, legacy_tools};
use parking_lot::{Mutex, RwLock};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a `check()` result is reused.
pub const CHECK_TTL: Duration = Duration::from_secs(30);
/// A `false` within this long after the last `true` is treated as a flake.
pub const FLAKE_GRACE: Duration = Duration::from_secs(60);

/// What the catalog keeps of [`crate::RegistryOptions`] (all but the terminal, which
/// is the dispatcher's).
pub(crate) struct CatalogOptions {
    pub(crate) engine: EngineConfig,
    pub(crate) policy: OperatorPolicy,
    pub(crate) secrets: Secrets,
    pub(crate) overrides: BTreeSet<String>,
    pub(crate) toolsets: Toolsets,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) file_check: Option<FileCheck>,
}

/// A check every component file passes before it is loaded: its path and bytes in,
/// `Err(why)` to refuse it.
pub type FileCheck = Arc<dyn Fn(&Path, &[u8]) -> Result<(), String> + Send + Sync>;

/// Registry errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Engine construction failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// Linker construction failed.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The name is taken by a tool in another toolset and no override was given.
    #[error(
        "tool {name:?} from toolset {new_toolset:?} collides with the registered tool of toolset {existing_toolset:?}; the first keeps the name (an operator override can allow the replacement)"
    )]
    Collision {
        /// Tool name.
        name: String,
        /// Toolset of the registered tool.
        existing_toolset: String,
        /// Toolset of the rejected tool.
        new_toolset: String,
    },
    /// No tenant with this id in the policy.
    #[error("Unknown tenant: {0}")]
    UnknownTenant(String),
    /// A tenant's `toolsets` names a toolset that does not exist.
    #[error("tenant {tenant:?}: unknown toolset {name:?} in its toolsets (known: {known}; or all)")]
    UnknownToolset {
        /// The tenant.
        tenant: String,
        /// The name that resolves to nothing.
        name: String,
        /// The known toolset names, comma-separated.
        known: String,
    },
    /// A tools directory could not be read.
    #[error("cannot read tools directory {path}: {source}")]
    Dir {
        /// Directory.
        path: PathBuf,
        /// OS error.
        #[source]
        source: std::io::Error,
    },
    /// A file the host keeps (an approval allowlist) lies where tools or terminal
    /// commands reach.
    #[error(transparent)]
    StatePath(#[from] StatePathError),
    /// The key-value store cannot be opened.
    #[error(transparent)]
    KeyValue(#[from] crate::KeyValueError),
}

/// A component that was skipped at discovery, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoadProblem {
    /// File or bundled name.
    pub source: String,
    /// Why it was skipped.
    pub reason: String,
}

impl LoadProblem {
    /// A problem whose reason is `error` on one line: wasmtime and wasmparser errors
    /// can span many (a debug-printed byte array), and a skipped component is reported
    /// as one line of a listing or a log.
    pub fn new(source: impl Into<String>, error: &impl std::fmt::Display) -> Self {
        Self {
            source: source.into(),
            reason: one_line(&error.to_string()),
        }
    }
}

/// `text` with every run of whitespace (newlines included) as one space.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What registering did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Registered {
    /// New name.
    Added,
    /// Replaced a tool of the same toolset.
    Replaced,
    /// Replaced a tool of another toolset, by operator override.
    Overrode,
}

/// A tool's availability.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Availability {
    /// Whether agents see and may call it.
    pub available: bool,
    /// Why not, when not.
    pub reason: Option<String>,
}

/// One row of `hermetic tools`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolStatus {
    /// Tool name.
    pub name: String,
    /// Toolset.
    pub toolset: String,
    /// Emoji, if declared.
    pub emoji: Option<String>,
    /// Description (the schema's, else the declaration's).
    pub description: String,
    /// Whether it is available.
    pub available: bool,
    /// Why not, when not.
    pub reason: Option<String>,
    /// Where it came from.
    pub source: String,
}

/// One row of `hermetic toolsets`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolsetInfo {
    /// Toolset name.
    pub name: String,
    /// Description (static toolsets only).
    pub description: String,
    /// Its tools that are loaded (a toolset with none is not listed).
    pub tools: Vec<String>,
}

/// Which toolsets an agent gets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Toolsets to enable (`None` = all).
    pub enabled: Option<Vec<String>>,
    /// Toolsets to subtract afterwards.
    pub disabled: Vec<String>,
}

#[derive(Debug, Default)]
struct CheckState {
    cached: Option<(Availability, Instant)>,
    last_true: Option<Instant>,
}

/// Why a call is refused when the tool has `availability`; `None` when it may run.
fn refusal(availability: &Availability) -> Option<String> {
    (!availability.available).then(|| {
        availability
            .reason
            .clone()
            .unwrap_or_else(|| "check() returned false".to_owned())
    })
}

impl CheckState {
    /// The cached answer, if it is younger than [`CHECK_TTL`] at `now`.
    fn fresh(&self, now: Instant) -> Option<&Availability> {
        self.cached
            .as_ref()
            .filter(|(_, at)| now.saturating_duration_since(*at) < CHECK_TTL)
            .map(|(availability, _)| availability)
    }
}

/// A tool's grants and `check()` cache for one tenant (or the operator: tenant "").
struct Scope {
    grants: EffectiveGrants,
    check: Mutex<CheckState>,
}

/// A registered tool: the loaded component, its grants per tenant, its call slots.
pub(crate) struct Entry {
    tool: LoadedTool,
    /// Tenant id ("" = no tenant) → grants, decided once at registration.
    scopes: HashMap<String, Arc<Scope>>,
    /// Calls of this tool running at once.
    slots: Arc<Slots>,
}

impl Entry {
    fn scope(&self, tenant: &str) -> Option<&Arc<Scope>> {
        self.scopes.get(tenant)
    }
}

/// A tool as one tenant may call it: what [`Catalog::resolve`] gives the dispatcher.
/// Holding it keeps the tool loaded even if it is replaced or removed meanwhile.
pub(crate) struct Resolved {
    entry: Arc<Entry>,
    scope: Arc<Scope>,
}

impl Resolved {
    /// The loaded component.
    pub(crate) fn tool(&self) -> &LoadedTool {
        &self.entry.tool
    }

    /// The grants the call runs with (decided at registration).
    pub(crate) fn grants(&self) -> &EffectiveGrants {
        &self.scope.grants
    }

    /// The tool's own concurrency slots.
    pub(crate) fn slots(&self) -> &Arc<Slots> {
        &self.entry.slots
    }
}

/// The catalog: loaded tools, their grants and availability.
pub struct Catalog {
    runtime: Runtime,
    linkers: sandbox::Linkers,
    /// The policy bundled terminal tools get without a policy file (see
    /// [`crate::policy::terminal::TerminalSettings::grant_bundled`]).
    bundled_terminal_policy: Option<OperatorPolicy>,
    entries: RwLock<BTreeMap<String, Arc<Entry>>>,
    policy: OperatorPolicy,
    secrets: Secrets,
    overrides: BTreeSet<String>,
    toolsets: Toolsets,
    clock: Arc<dyn Clock>,
    /// Tenant id → tools its toolsets resolve to (recomputed when tools change).
    tenant_tools: RwLock<HashMap<String, Arc<BTreeSet<String>>>>,
    /// Grants for metadata calls (`schema()`): nothing.
    metadata_grants: EffectiveGrants,
    /// What tools and terminal commands of the policy reach (the host's own files
    /// must lie elsewhere).
    reach: ToolReach,
    /// What a component file must pass before it loads.
    file_check: Option<FileCheck>,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("tools", &self.names())
            .finish_non_exhaustive()
    }
}

impl Catalog {
    /// An empty catalog (the parts of `options` it keeps: all but the terminal).
    ///
    /// A compiled-code cache directory that tools or terminal commands reach is not
    /// used (a warning says why; code is compiled instead): whatever is written there
    /// would be mapped and run by the host.
    ///
    /// # Errors
    /// If the engine or linker cannot be built; [`RegistryError::StatePath`] when an
    /// approval allowlist lies where tools or terminal commands reach.
    pub(crate) fn new(options: CatalogOptions) -> Result<Self, RegistryError> {
        let reach = ToolReach::of(&options.policy);
        for file in allowlist_files(&options.policy) {
            reach.check("the approval allowlist", file)?;
        }
        let mut engine = options.engine;
        if let Some(dir) = &engine.cache_dir
            && let Err(e) = reach.check("the compiled-code cache", dir)
        {
            tracing::warn!("not using the compiled-code cache: {e}");
            engine.cache_dir = None;
        }
        let runtime = Runtime::new(engine)?;
        let linkers = sandbox::Linkers::new(&runtime)?;
        let bundled_terminal_policy = options
            .policy
            .terminal
            .grant_bundled
            .then(|| options.policy.for_bundled_terminal_tools());
        let nothing = Declaration::nothing("metadata");
        let metadata_grants = policy::effective(&nothing, &options.policy, None);
        // Every secret the policy binds is scrubbed from every call's result.
        let secrets = options.secrets.bound_to(&options.policy);
        Ok(Self {
            runtime,
            linkers,
            bundled_terminal_policy,
            entries: RwLock::new(BTreeMap::new()),
            policy: options.policy,
            secrets,
            overrides: options.overrides,
            toolsets: options.toolsets,
            clock: options.clock,
            tenant_tools: RwLock::new(HashMap::new()),
            metadata_grants,
            reach,
            file_check: options.file_check,
        })
    }

    /// Refuses `path`, a file the host keeps (`what`: "the audit log", …), when tools
    /// or terminal commands of this catalog's policy reach it (see
    /// [`ToolReach::check`]).
    ///
    /// # Errors
    /// [`StatePathError`] naming the path, the place and what to do.
    pub fn check_state_path(&self, what: &str, path: &Path) -> Result<(), StatePathError> {
        self.reach.check(what, path)
    }

    /// The operator policy in force.
    pub(crate) fn linkers(&self) -> &sandbox::Linkers {
        &self.linkers
    }

    /// The check a component file must pass before it loads, if any.
    pub(crate) fn file_check(&self) -> Option<&FileCheck> {
        self.file_check.as_ref()
    }

    /// The operator's policy.
    pub fn policy(&self) -> &OperatorPolicy {
        &self.policy
    }

    /// The secret values env grants draw from (e.g. to redact them from logs).
    pub fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// The engine runtime.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Loads (but does not register) a component.
    ///
    /// # Errors
    /// A [`LoadError`] saying what is wrong with it.
    pub fn load(&self, bytes: &[u8], source: ToolSource) -> Result<LoadedTool, LoadError> {
        if let (Some(check), ToolSource::File(path)) = (&self.file_check, &source) {
            check(path, bytes).map_err(|reason| LoadError::Refused { reason })?;
        }
        component::load(
            &self.runtime,
            &self.linkers,
            bytes,
            source,
            &self.metadata_grants,
            &|declaration| {
                let limits = policy::effective(declaration, &self.policy, None).limits;
                (limits.core_instances, limits.memory_bytes)
            },
        )
    }

    /// Registers a loaded tool under the Hermes rules: a new name is added; the same
    /// toolset replaces; another toolset is rejected (logged) unless overridden.
    ///
    /// # Errors
    /// [`RegistryError::Collision`] when the name belongs to another toolset.
    pub fn register(&self, tool: LoadedTool) -> Result<Registered, RegistryError> {
        let mut scopes = HashMap::new();
        let policy = match (&self.bundled_terminal_policy, &tool.source) {
            (Some(p), ToolSource::Bundled(_)) if tool.declaration.capabilities.terminal => p,
            _ => &self.policy,
        };
        let withhold = |mut grants: policy::EffectiveGrants| {
            if let Some(reason) = &tool.withheld {
                grants.denials.insert(
                    0,
                    policy::Denial {
                        capability: "review".to_owned(),
                        reason: reason.clone(),
                        blocks: true,
                    },
                );
            }
            grants
        };
        let operator = withhold(policy::effective(&tool.declaration, policy, None));
        let slots = Arc::new(Slots::new(operator.limits.max_concurrent));
        scopes.insert(
            String::new(),
            Arc::new(Scope {
                grants: operator,
                check: Mutex::default(),
            }),
        );
        for (id, tenant) in &policy.tenants {
            let grants = withhold(policy::effective(
                &tool.declaration,
                policy,
                Some((id, tenant)),
            ));
            scopes.insert(
                id.clone(),
                Arc::new(Scope {
                    grants,
                    check: Mutex::default(),
                }),
            );
        }
        let name = tool.declaration.name.clone();
        let entry = Arc::new(Entry {
            tool,
            scopes,
            slots,
        });
        let mut entries = self.entries.write();
        let outcome = match entries.get(&name) {
            None => Registered::Added,
            Some(old) if old.tool.declaration.toolset == entry.tool.declaration.toolset => {
                Registered::Replaced
            }
            Some(old) => {
                let existing_toolset = old.tool.declaration.toolset.clone();
                if !self.overrides.contains(&name) {
                    let err = RegistryError::Collision {
                        name,
                        existing_toolset,
                        new_toolset: entry.tool.declaration.toolset.clone(),
                    };
                    tracing::error!("{err}");
                    return Err(err);
                }
                tracing::warn!(
                    tool = %name,
                    from = %existing_toolset,
                    to = %entry.tool.declaration.toolset,
                    "operator override: replacing a tool of another toolset"
                );
                Registered::Overrode
            }
        };
        entries.insert(name, entry);
        drop(entries);
        self.refresh_tenant_tools();
        Ok(outcome)
    }

    /// Removes a tool. Returns whether it was registered.
    pub fn deregister(&self, name: &str) -> bool {
        let mut entries = self.entries.write();
        let removed = entries.remove(name).is_some();
        drop(entries);
        self.refresh_tenant_tools();
        removed
    }

    fn refresh_tenant_tools(&self) {
        let members = self.membership();
        let resolved = self
            .policy
            .tenants
            .iter()
            .map(|(id, t)| {
                let tools = match &t.toolsets {
                    None => members.values().flatten().cloned().collect(),
                    Some(sets) => {
                        self.toolsets
                            .select(Some(sets.as_slice()), &[], &members)
                            .tools
                    }
                };
                (id.clone(), Arc::new(tools))
            })
            .collect();
        *self.tenant_tools.write() = resolved;
    }

    /// Checks a tenant id: [`policy::OPERATOR_TENANT`] is the operator itself; others
    /// must be in the policy.
    ///
    /// # Errors
    /// [`RegistryError::UnknownTenant`].
    pub fn check_tenant(&self, tenant: &str) -> Result<(), RegistryError> {
        if tenant == policy::OPERATOR_TENANT || self.policy.tenants.contains_key(tenant) {
            Ok(())
        } else {
            Err(RegistryError::UnknownTenant(tenant.to_owned()))
        }
    }

    /// Whether a tenant may see a tool (its toolsets include it). The operator
    /// ([`policy::OPERATOR_TENANT`]) sees everything.
    fn tenant_sees(&self, tenant: &str, name: &str) -> bool {
        if tenant == policy::OPERATOR_TENANT {
            return true;
        }
        let visible = self.tenant_tools.read();
        visible
            .get(tenant)
            .is_some_and(|tools| tools.contains(name))
    }

    /// Loads and registers one component; failures come back as a [`LoadProblem`].
    pub fn add(&self, bytes: &[u8], source: ToolSource) -> Result<Registered, LoadProblem> {
        let label = source.to_string();
        let tool = self
            .load(bytes, source)
            .map_err(|e| LoadProblem::new(label.clone(), &e))?;
        self.register(tool).map_err(|e| LoadProblem::new(label, &e))
    }

    /// Registers the tools embedded in this binary. Returns what was skipped.
    pub fn add_bundled(&self) -> Vec<LoadProblem> {
        let loaded = self.load_each(crate::bundled::BUNDLED, |(name, bytes)| {
            let source = ToolSource::Bundled((*name).into());
            let label = source.to_string();
            self.load(bytes, source)
                .map_err(|e| LoadProblem::new(label, &e))
        });
        self.register_all(loaded)
    }

    /// Registers every `*.wasm` in a directory (sorted by file name, not recursive).
    /// A broken or non-conforming component is reported and skipped; the rest load.
    ///
    /// # Errors
    /// [`RegistryError::Dir`] if the directory itself cannot be read.
    pub fn add_dir(&self, dir: &Path) -> Result<Vec<LoadProblem>, RegistryError> {
        let dir_err = |source: std::io::Error| RegistryError::Dir {
            path: dir.to_path_buf(),
            source,
        };
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(dir_err)?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "wasm") && p.is_file())
            .collect();
        files.sort();
        let loaded = self.load_each(&files, |path| {
            let label = || path.display().to_string();
            let bytes = component::read_file(path).map_err(|e| LoadProblem::new(label(), &e))?;
            self.load(&bytes, ToolSource::File(path.clone()))
                .map_err(|e| LoadProblem::new(label(), &e))
        });
        Ok(self.register_all(loaded))
    }

    /// Runs `load` over `items` on up to one thread per core (loading is CPU work:
    /// decoding or compiling code, instantiating for `schema()`), the calling thread
    /// included, and returns the results in `items`' order.
    fn load_each<T: Sync>(
        &self,
        items: &[T],
        load: impl Fn(&T) -> Result<LoadedTool, LoadProblem> + Sync,
    ) -> Vec<Result<LoadedTool, LoadProblem>> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        // Asked once: on Linux it reads cgroup files each time.
        static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        let cores =
            *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from));
        let helpers = cores.min(items.len()).saturating_sub(1);
        if helpers == 0 {
            return items.iter().map(load).collect();
        }
        let next = AtomicUsize::new(0);
        let done = Mutex::new(Vec::with_capacity(items.len()));
        let work = || {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { return };
                let result = load(item);
                done.lock().push((i, result));
            }
        };
        std::thread::scope(|scope| {
            for _ in 0..helpers {
                // Without a thread the calling one does that share of the work.
                let _ = std::thread::Builder::new()
                    .name("hermetic-load".into())
                    .spawn_scoped(scope, work);
            }
            work();
        });
        let mut done = done.into_inner();
        done.sort_unstable_by_key(|(i, _)| *i);
        done.into_iter().map(|(_, result)| result).collect()
    }

    /// Registers loaded tools in order (the first of a name keeps it, as when they are
    /// added one by one); returns what was skipped.
    fn register_all(&self, loaded: Vec<Result<LoadedTool, LoadProblem>>) -> Vec<LoadProblem> {
        let mut problems = Vec::new();
        for result in loaded {
            let outcome = result.and_then(|tool| {
                let label = tool.source.to_string();
                self.register(tool).map_err(|e| LoadProblem::new(label, &e))
            });
            if let Err(problem) = outcome {
                // The caller reports it (the CLI and the server print problems once).
                tracing::debug!(source = %problem.source, "skipped: {}", problem.reason);
                problems.push(problem);
            }
        }
        problems
    }

    fn entry(&self, name: &str) -> Option<Arc<Entry>> {
        let entries = self.entries.read();
        entries.get(name).cloned()
    }

    /// Where each registered tool came from, by name (runs no guest code, unlike
    /// [`Catalog::tools`]).
    pub fn sources(&self) -> BTreeMap<String, ToolSource> {
        let entries = self.entries.read();
        entries
            .iter()
            .map(|(name, entry)| (name.clone(), entry.tool.source.clone()))
            .collect()
    }

    /// Where the registered tool `name` came from.
    pub fn source_of(&self, name: &str) -> Option<ToolSource> {
        Some(self.entry(name)?.tool.source.clone())
    }

    /// Registered tool names, sorted.
    pub fn names(&self) -> Vec<String> {
        let entries = self.entries.read();
        entries.keys().cloned().collect()
    }

    fn snapshot(&self) -> Vec<Arc<Entry>> {
        let entries = self.entries.read();
        entries.values().cloned().collect()
    }

    /// Whether a tool is available (to the operator), running its `check()` if the
    /// cached answer is older than [`CHECK_TTL`]. `None` for an unknown tool.
    pub fn availability(&self, name: &str) -> Option<Availability> {
        self.availability_for(name, "")
    }

    /// The grants a tool's calls run with for `tenant` (as decided at registration);
    /// `None` when the tenant may not see the tool or it does not exist. For audit
    /// records and diagnostics: the call path uses them in place.
    pub fn grants_for(&self, name: &str, tenant: &str) -> Option<EffectiveGrants> {
        if !self.tenant_sees(tenant, name) {
            return None;
        }
        Some(self.entry(name)?.scope(tenant)?.grants.clone())
    }

    /// Whether `tenant`'s calls of `name` are granted the terminal (and so may ask for
    /// an approval while they run); `false` when the tool is unknown or hidden from
    /// the tenant. [`Catalog::grants_for`] without cloning the grants: transports ask
    /// it per call.
    pub fn uses_terminal(&self, name: &str, tenant: &str) -> bool {
        self.tenant_sees(tenant, name)
            && self
                .entry(name)
                .and_then(|entry| entry.scope(tenant).map(|scope| scope.grants.terminal))
                .unwrap_or(false)
    }

    /// [`Catalog::availability`] for a tenant; `None` also when the tenant may not see
    /// the tool or does not exist.
    pub fn availability_for(&self, name: &str, tenant: &str) -> Option<Availability> {
        if !self.tenant_sees(tenant, name) {
            return None;
        }
        let entry = self.entry(name)?;
        Some(self.entry_availability(&entry, entry.scope(tenant)?))
    }

    /// The tool `name` as `tenant` sees it, for a call: an unknown tenant is
    /// [`CallOutcome::Denied`]; a tool that does not exist or that the tenant may not
    /// see is [`CallOutcome::UnknownTool`] (so tenants cannot probe each other's
    /// tools).
    pub(crate) fn resolve(&self, name: &str, tenant: &str) -> Result<Resolved, CallOutcome> {
        if let Err(e) = self.check_tenant(tenant) {
            return Err(CallOutcome::Denied {
                reason: e.to_string(),
            });
        }
        let unknown = || CallOutcome::UnknownTool {
            name: name.to_owned(),
        };
        let (Some(entry), true) = (self.entry(name), self.tenant_sees(tenant, name)) else {
            return Err(unknown());
        };
        let Some(scope) = entry.scope(tenant).cloned() else {
            return Err(unknown());
        };
        Ok(Resolved { entry, scope })
    }

    /// Why a call of `tool` must not run because its `check()` says no (cached for
    /// [`CHECK_TTL`]); `None` when it may run. Listings hide such a tool, and a call
    /// by name is refused the same way.
    pub(crate) fn check_failure(&self, tool: &Resolved) -> Option<String> {
        refusal(&self.entry_availability(&tool.entry, &tool.scope))
    }

    /// [`Catalog::check_failure`] from the cache alone: `None` when `check()` would
    /// have to run (never run, or older than [`CHECK_TTL`]). For callers that must not
    /// run guest code synchronously (an async task).
    pub(crate) fn cached_check_failure(&self, tool: &Resolved) -> Option<Option<String>> {
        let state = tool.scope.check.lock();
        Some(refusal(state.fresh(self.clock.now())?))
    }

    /// Runs the stale `check()`s of `entries` for `tenant` at once (each bounded by the
    /// short check deadline), so a listing of N slow tools costs one deadline, not N.
    fn refresh_checks(&self, entries: &[Arc<Entry>], tenant: &str) {
        let now = self.clock.now();
        let stale: Vec<&Arc<Entry>> = entries
            .iter()
            .filter(|entry| {
                entry.scope(tenant).is_some_and(|scope| {
                    scope.grants.unavailable_reason().is_none()
                        && scope.check.lock().fresh(now).is_none()
                })
            })
            .collect();
        if stale.len() < 2 {
            return;
        }
        std::thread::scope(|threads| {
            for entry in stale {
                threads.spawn(move || {
                    if let Some(scope) = entry.scope(tenant) {
                        self.entry_availability(entry, scope);
                    }
                });
            }
        });
    }

    fn entry_availability(&self, entry: &Entry, scope: &Scope) -> Availability {
        if let Some(reason) = scope.grants.unavailable_reason() {
            return Availability {
                available: false,
                reason: Some(reason.to_owned()),
            };
        }
        let mut state = scope.check.lock();
        let now = self.clock.now();
        if let Some(availability) = state.fresh(now) {
            return availability.clone();
        }
        let availability = match entry
            .tool
            .check(&self.runtime, &scope.grants, &self.secrets)
        {
            Ok(true) => {
                state.last_true = Some(now);
                Availability {
                    available: true,
                    reason: None,
                }
            }
            Ok(false) => {
                if state
                    .last_true
                    .is_some_and(|t| now.saturating_duration_since(t) < FLAKE_GRACE)
                {
                    tracing::warn!(tool = %entry.tool.name, "check() returned false shortly after true; treating it as a flake");
                    return Availability {
                        available: true,
                        reason: None,
                    };
                }
                Availability {
                    available: false,
                    reason: Some(check_false_reason(entry, &self.secrets)),
                }
            }
            // No sandbox was free: the host is full, which says nothing of the tool.
            // Its last answer stands (however old) and nothing is cached, so the next
            // listing asks again; a tool never checked is unavailable for now.
            Err(CallFailure::Sandbox(busy @ SandboxError::Busy { .. })) => {
                return match &state.cached {
                    Some((last, _)) => last.clone(),
                    None => Availability {
                        available: false,
                        reason: Some(format!("check() could not run: {busy}")),
                    },
                };
            }
            Err(failure) => Availability {
                available: false,
                reason: Some(format!("check() failed: {failure}")),
            },
        };
        state.cached = Some((availability.clone(), now));
        availability
    }

    /// Forgets every cached `check()` result (and flake history).
    pub fn invalidate_checks(&self) {
        for entry in self.snapshot() {
            for scope in entry.scopes.values() {
                *scope.check.lock() = CheckState::default();
            }
        }
    }

    /// Every tool with its toolset and availability, sorted by name.
    pub fn tools(&self) -> Vec<ToolStatus> {
        self.tools_for("")
    }

    /// The tools a tenant may see, with their availability for that tenant (an unknown
    /// tenant sees nothing).
    pub fn tools_for(&self, tenant: &str) -> Vec<ToolStatus> {
        let entries = self.snapshot();
        self.refresh_checks(&entries, tenant);
        entries
            .into_iter()
            .filter(|entry| self.tenant_sees(tenant, &entry.tool.declaration.name))
            .filter_map(|entry| {
                let availability = self.entry_availability(&entry, entry.scope(tenant)?);
                let d = &entry.tool.declaration;
                let description = entry
                    .tool
                    .schema
                    .get("description")
                    .and_then(Value::as_str)
                    .map_or_else(|| d.description.clone(), str::to_owned);
                Some(ToolStatus {
                    name: d.name.clone(),
                    toolset: d.toolset.clone(),
                    emoji: d.emoji.clone(),
                    description,
                    available: availability.available,
                    reason: availability.reason,
                    source: entry.tool.source.to_string(),
                })
            })
            .collect()
    }

    fn membership(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut members: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for entry in self.snapshot() {
            let d = &entry.tool.declaration;
            members
                .entry(d.toolset.clone())
                .or_default()
                .insert(d.name.clone());
        }
        members
    }

    /// Toolsets (static ∪ registry) with the tools each resolves to.
    pub fn toolsets(&self) -> Vec<ToolsetInfo> {
        let members = self.membership();
        let registered: BTreeSet<String> = self.names().into_iter().collect();
        self.toolsets
            .names(&members)
            .into_iter()
            .filter_map(|name| {
                let resolution = self.toolsets.resolve(&name, &members);
                // Only what is loaded: a built-in toolset none of whose tools is here
                // (Hermes's `browser`, say) is not offered. Its name still resolves in
                // a selection.
                let tools: Vec<String> = resolution
                    .tools
                    .into_iter()
                    .filter(|tool| registered.contains(tool))
                    .collect();
                if tools.is_empty() {
                    return None;
                }
                Some(ToolsetInfo {
                    description: self
                        .toolsets
                        .description(&name, &members)
                        .unwrap_or_default(),
                    tools,
                    name,
                })
            })
            .collect()
    }

    /// Tool names a selection resolves to, with warnings for unknown toolsets. The
    /// warnings are returned, not logged: a selection is resolved on every listing, and
    /// its owner says them once (the CLI when it starts).
    pub fn select(&self, selection: &Selection) -> (BTreeSet<String>, Vec<String>) {
        let members = self.membership();
        let resolution =
            self.toolsets
                .select(selection.enabled.as_deref(), &selection.disabled, &members);
        (resolution.tools, resolution.warnings)
    }

    /// Checks that every toolset a tenant of the policy names exists (a toolset of the
    /// static table, of a registered tool, a legacy name or `all`), so a typo in
    /// `toolsets` is an error instead of a tenant who silently sees nothing. Run it once
    /// the tools are loaded: a tool's own toolset is known only then.
    ///
    /// # Errors
    /// [`RegistryError::UnknownToolset`] for the first unknown name.
    pub fn check_tenant_toolsets(&self) -> Result<(), RegistryError> {
        let members = self.membership();
        for (tenant, policy) in &self.policy.tenants {
            for name in policy.toolsets.iter().flatten() {
                if !self.toolsets.is_known(name, &members) && legacy_tools(name).is_none() {
                    return Err(RegistryError::UnknownToolset {
                        tenant: tenant.clone(),
                        name: name.clone(),
                        known: self.toolsets.names(&members).join(", "),
                    });
                }
            }
        }
        Ok(())
    }

    /// OpenAI function definitions of the selected, available tools, sorted by name:
    /// `[{"type": "function", "function": {...schema, "name": name}}]`.
    pub fn definitions(&self, selection: &Selection) -> Value {
        self.definitions_for("", selection)
    }

    /// [`Catalog::definitions`] of the tools a tenant may see and use.
    pub fn definitions_for(&self, tenant: &str, selection: &Selection) -> Value {
        let (names, _) = self.select(selection);
        let entries: Vec<Arc<Entry>> = names
            .iter()
            .filter(|name| self.tenant_sees(tenant, name))
            .filter_map(|name| self.entry(name))
            .collect();
        self.refresh_checks(&entries, tenant);
        let mut definitions = Vec::new();
        for name in names {
            if !self.tenant_sees(tenant, &name) {
                continue;
            }
            let Some(entry) = self.entry(&name) else {
                continue;
            };
            let Some(scope) = entry.scope(tenant) else {
                continue;
            };
            if !self.entry_availability(&entry, scope).available {
                continue;
            }
            let mut function = entry.tool.schema.clone();
            if let Some(obj) = function.as_object_mut() {
                obj.insert("name".into(), Value::String(name));
                // Not a key of OpenAI's function schema, which model APIs may refuse;
                // MCP clients get it as `outputSchema` (`Catalog::output_schema_for`).
                obj.remove(crate::component::OUTPUT_SCHEMA);
            }
            definitions.push(json!({"type": "function", "function": function}));
        }
        Value::Array(definitions)
    }

    /// Whether tool `name` declares an output schema.
    pub fn has_output_schema(&self, name: &str) -> bool {
        self.entry(name)
            .is_some_and(|e| e.tool.output_validator.is_some())
    }

    /// The `output_schema` tool `name` declares, as `tenant` may see it (`None`: none
    /// declared, or the tool is unknown or hidden from the tenant).
    pub fn output_schema_for(&self, name: &str, tenant: &str) -> Option<Value> {
        if !self.tenant_sees(tenant, name) {
            return None;
        }
        let entry = self.entry(name)?;
        entry.tool.output_validator.as_ref()?;
        entry
            .tool
            .schema
            .get(crate::component::OUTPUT_SCHEMA)
            .cloned()
    }

    /// What a tool declares and what it is granted, for `hermetic inspect`.
    pub fn inspect(&self, name: &str) -> Option<Value> {
        self.inspect_for(name, "")
    }

    /// What tool `name` declares, as `tenant` may see it (`None` if the tool is unknown
    /// or the tenant may not see it). Runs no guest code.
    pub fn declaration_for(&self, name: &str, tenant: &str) -> Option<Declaration> {
        if !self.tenant_sees(tenant, name) {
            return None;
        }
        Some(self.entry(name)?.tool.declaration.clone())
    }

    /// What a tool declares, what the operator grants it, what the tenant allows, and
    /// the effective result with the reasons for every denial. `None` if the tool is
    /// unknown or the tenant may not see it.
    pub fn inspect_for(&self, name: &str, tenant: &str) -> Option<Value> {
        if !self.tenant_sees(tenant, name) {
            return None;
        }
        let entry = self.entry(name)?;
        let scope = entry.scope(tenant)?;
        let availability = self.entry_availability(&entry, scope);
        Some(json!({
            "name": name,
            "tenant": if tenant.is_empty() { Value::Null } else { Value::String(tenant.to_owned()) },
            "source": entry.tool.source.to_string(),
            "sha256": entry.tool.digest,
            "declaration": entry.tool.declaration,
            "operator": self.policy.grants_for(name),
            "tenant_policy": self.policy.tenants.get(tenant),
            "grants": scope.grants,
            "available": availability.available,
            "reason": availability.reason,
            "schema": entry.tool.schema,
        }))
    }
}

/// Explains a `check()` that said no, naming required env vars that are granted but
/// not set on the host.
fn check_false_reason(entry: &Entry, secrets: &Secrets) -> String {
    let unset: Vec<&str> = entry
        .tool
        .declaration
        .requires_env
        .iter()
        .filter(|v| secrets.get(v).is_none() && std::env::var_os(v).is_none())
        .map(String::as_str)
        .collect();
    if unset.is_empty() {
        "check() returned false".to_owned()
    } else {
        format!(
            "check() returned false: {} granted but not set in the host environment",
            unset.join(", ")
        )
    }
}
