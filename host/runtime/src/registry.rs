//! The registry: the one handle most callers need. It is a [`Catalog`] (what tools
//! exist, who may see them, their availability, toolsets and definitions) and a
//! [`Dispatcher`] (running calls) built together from one [`RegistryOptions`]; each
//! method forwards to the part that owns it.

use crate::catalog::{Catalog, CatalogOptions};
use crate::clock::{Clock, SystemClock};
use crate::component::{LoadError, LoadedTool, ToolSource};
use crate::declaration::Declaration;
use crate::dispatch::{CallOptions, Dispatcher};
use crate::engine::{EngineConfig, Runtime};
use crate::outcome::CallOutcome;
use crate::policy::{EffectiveGrants, OperatorPolicy};
use crate::sandbox::terminal::TerminalService;
use crate::secrets::Secrets;
use crate::toolsets::Toolsets;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

pub use crate::catalog::{
    Availability, CHECK_TTL, FLAKE_GRACE, LoadProblem, Registered, RegistryError, Selection,
    ToolStatus, ToolsetInfo,
};

/// Registry settings: [`RegistryOptions::new`], then set the public fields (new ones
/// may be added).
#[non_exhaustive]
pub struct RegistryOptions {
    /// Engine settings.
    pub engine: EngineConfig,
    /// The operator's policy.
    pub policy: OperatorPolicy,
    /// Secret values for env grants.
    pub secrets: Secrets,
    /// Tool names allowed to replace a registration from another toolset.
    pub overrides: BTreeSet<String>,
    /// Static toolsets (merged with registry membership).
    pub toolsets: Toolsets,
    /// Time source for check caching.
    pub clock: Arc<dyn Clock>,
    /// The terminal service tools granted the terminal reach (`hermetic-terminal`'s
    /// `TerminalHost`, built from [`OperatorPolicy::terminal`]). `None`: the terminal
    /// interface refuses every request, even for tools granted it.
    pub terminal: Option<Arc<dyn TerminalService>>,
    /// Checked before a component file is loaded (`--tools-dir`, reloads, `inspect`):
    /// `Err` says why it is refused (e.g. not signed by a trusted key). `None`: files
    /// load as they are.
    pub file_check: Option<crate::catalog::FileCheck>,
    /// Where tools granted a key-value store keep their data: the host's file (the
    /// CLI's `keyvalue` setting), the cluster's Redis, … `None`: a store in this
    /// process's memory, gone when it ends.
    pub keyvalue: Option<Arc<dyn crate::KeyValueBackend>>,
}

impl RegistryOptions {
    /// Defaults around an operator policy: default engine, no overrides, the built-in
    /// toolsets, the system clock.
    pub fn new(policy: OperatorPolicy) -> Self {
        let engine = EngineConfig {
            fuel: policy.uses_fuel(),
            max_core_instances: policy.max_core_instances(),
            ..EngineConfig::default()
        };
        Self {
            engine,
            policy,
            secrets: Secrets::default(),
            overrides: BTreeSet::new(),
            toolsets: Toolsets::builtin(),
            clock: Arc::new(SystemClock),
            terminal: None,
            file_check: None,
            keyvalue: None,
        }
    }

    /// These options with `service` as the terminal of tools granted it.
    #[must_use]
    pub fn with_terminal(mut self, service: Arc<dyn TerminalService>) -> Self {
        self.terminal = Some(service);
        self
    }
}

/// The catalog and the dispatcher of one set of tools. Cheap to share (`Arc`).
pub struct Registry {
    catalog: Arc<Catalog>,
    dispatcher: Arc<Dispatcher>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.names())
            .finish_non_exhaustive()
    }
}

impl Registry {
    /// An empty registry.
    ///
    /// # Errors
    /// If the engine or linker cannot be built.
    pub fn new(options: RegistryOptions) -> Result<Self, RegistryError> {
        let RegistryOptions {
            engine,
            policy,
            secrets,
            overrides,
            toolsets,
            clock,
            terminal,
            file_check,
            keyvalue,
        } = options;
        let catalog = Arc::new(Catalog::new(CatalogOptions {
            engine,
            policy,
            secrets,
            overrides,
            toolsets,
            clock,
            file_check,
        })?);
        let keyvalue = match keyvalue {
            Some(backend) => backend,
            None => Arc::new(crate::sandbox::capability::keyvalue::Embedded::in_memory()?),
        };
        let dispatcher = Arc::new(Dispatcher::new(Arc::clone(&catalog), terminal, keyvalue));
        Ok(Self {
            catalog,
            dispatcher,
        })
    }

    /// What tools exist and who may see them.
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    /// What runs calls.
    pub fn dispatcher(&self) -> &Arc<Dispatcher> {
        &self.dispatcher
    }

    /// The operator policy in force.
    pub fn policy(&self) -> &OperatorPolicy {
        self.catalog.policy()
    }

    /// The secret values env grants draw from (e.g. to redact them from logs).
    pub fn secrets(&self) -> &Secrets {
        self.catalog.secrets()
    }

    /// [`Catalog::check_state_path`]: a host that opens files of its own after
    /// building the registry (an audit log, or the policy's files after it replaced a
    /// mount) checks each here.
    ///
    /// # Errors
    /// [`crate::StatePathError`] naming the path, the place and what to do.
    pub fn check_state_path(
        &self,
        what: &str,
        path: &std::path::Path,
    ) -> Result<(), crate::StatePathError> {
        self.catalog.check_state_path(what, path)
    }

    /// The engine runtime.
    pub fn runtime(&self) -> &Runtime {
        self.catalog.runtime()
    }

    /// The terminal service, if one was given: end a session's background processes
    /// and container with [`TerminalService::end_session`], everything with
    /// [`TerminalService::shutdown`].
    pub fn terminal(&self) -> Option<&Arc<dyn TerminalService>> {
        self.dispatcher.terminal()
    }

    /// [`Catalog::load`].
    ///
    /// # Errors
    /// A [`LoadError`] saying what is wrong with the component.
    pub fn load(&self, bytes: &[u8], source: ToolSource) -> Result<LoadedTool, LoadError> {
        self.catalog.load(bytes, source)
    }

    /// [`Catalog::register`].
    ///
    /// # Errors
    /// [`RegistryError::Collision`] when the name belongs to another toolset.
    pub fn register(&self, tool: LoadedTool) -> Result<Registered, RegistryError> {
        self.catalog.register(tool)
    }

    /// [`Catalog::deregister`].
    pub fn deregister(&self, name: &str) -> bool {
        self.catalog.deregister(name)
    }

    /// [`Catalog::check_tenant`].
    ///
    /// # Errors
    /// [`RegistryError::UnknownTenant`].
    pub fn check_tenant(&self, tenant: &str) -> Result<(), RegistryError> {
        self.catalog.check_tenant(tenant)
    }

    /// [`Catalog::check_tenant_toolsets`].
    ///
    /// # Errors
    /// [`RegistryError::UnknownToolset`].
    pub fn check_tenant_toolsets(&self) -> Result<(), RegistryError> {
        self.catalog.check_tenant_toolsets()
    }

    /// [`Catalog::add`].
    ///
    /// # Errors
    /// A [`LoadProblem`] saying why the component was not registered.
    pub fn add(&self, bytes: &[u8], source: ToolSource) -> Result<Registered, LoadProblem> {
        self.catalog.add(bytes, source)
    }

    /// Adds the hook `policy` configures, from its component's `bytes`
    /// ([`crate::hooks::bytes_of`] reads a bundled or file hook's).
    ///
    /// # Errors
    /// [`crate::hooks::HookError`]: the component is not that hook, or it needs what
    /// the policy does not grant it.
    pub fn add_hook(
        &self,
        policy: &crate::policy::hooks::HookPolicy,
        bytes: &[u8],
    ) -> Result<(), crate::hooks::HookError> {
        let hook = crate::hooks::configure::build(&self.catalog, policy, bytes)?;
        self.dispatcher.add_hook(hook);
        Ok(())
    }

    /// Adds every hook of the policy whose component is bundled or a file (an OCI
    /// source is the host program's to resolve, then [`Registry::add_hook`]).
    ///
    /// # Errors
    /// The first hook that cannot be used.
    pub fn add_policy_hooks(&self) -> Result<(), crate::hooks::HookError> {
        for policy in &self.catalog.policy().hooks {
            let bytes = crate::hooks::bytes_of(policy)?;
            self.add_hook(policy, &bytes)?;
        }
        Ok(())
    }

    /// [`Catalog::add_bundled`].
    pub fn add_bundled(&self) -> Vec<LoadProblem> {
        self.catalog.add_bundled()
    }

    /// [`Catalog::add_dir`].
    ///
    /// # Errors
    /// [`RegistryError::Dir`] if the directory itself cannot be read.
    pub fn add_dir(&self, dir: &Path) -> Result<Vec<LoadProblem>, RegistryError> {
        self.catalog.add_dir(dir)
    }

    /// [`Catalog::sources`].
    pub fn sources(&self) -> BTreeMap<String, ToolSource> {
        self.catalog.sources()
    }

    /// [`Catalog::source_of`].
    pub fn source_of(&self, name: &str) -> Option<ToolSource> {
        self.catalog.source_of(name)
    }

    /// [`Catalog::names`].
    pub fn names(&self) -> Vec<String> {
        self.catalog.names()
    }

    /// [`Catalog::availability`].
    pub fn availability(&self, name: &str) -> Option<Availability> {
        self.catalog.availability(name)
    }

    /// [`Catalog::grants_for`].
    pub fn grants_for(&self, name: &str, tenant: &str) -> Option<EffectiveGrants> {
        self.catalog.grants_for(name, tenant)
    }

    /// [`Catalog::uses_terminal`].
    pub fn uses_terminal(&self, name: &str, tenant: &str) -> bool {
        self.catalog.uses_terminal(name, tenant)
    }

    /// [`Catalog::availability_for`].
    pub fn availability_for(&self, name: &str, tenant: &str) -> Option<Availability> {
        self.catalog.availability_for(name, tenant)
    }

    /// [`Catalog::invalidate_checks`].
    pub fn invalidate_checks(&self) {
        self.catalog.invalidate_checks();
    }

    /// [`Catalog::tools`].
    pub fn tools(&self) -> Vec<ToolStatus> {
        self.catalog.tools()
    }

    /// [`Catalog::tools_for`].
    pub fn tools_for(&self, tenant: &str) -> Vec<ToolStatus> {
        self.catalog.tools_for(tenant)
    }

    /// [`Catalog::toolsets`].
    pub fn toolsets(&self) -> Vec<ToolsetInfo> {
        self.catalog.toolsets()
    }

    /// [`Catalog::select`].
    pub fn select(&self, selection: &Selection) -> (BTreeSet<String>, Vec<String>) {
        self.catalog.select(selection)
    }

    /// [`Catalog::definitions`].
    pub fn definitions(&self, selection: &Selection) -> Value {
        self.catalog.definitions(selection)
    }

    /// [`Catalog::definitions_for`].
    pub fn definitions_for(&self, tenant: &str, selection: &Selection) -> Value {
        self.catalog.definitions_for(tenant, selection)
    }

    /// [`Catalog::declaration_for`].
    pub fn declaration_for(&self, name: &str, tenant: &str) -> Option<Declaration> {
        self.catalog.declaration_for(name, tenant)
    }

    /// Whether tool `name` declares an output schema (its successful results then go
    /// out as structured content too).
    pub fn has_output_schema(&self, name: &str) -> bool {
        self.catalog.has_output_schema(name)
    }

    /// [`Catalog::output_schema_for`].
    pub fn output_schema_for(&self, name: &str, tenant: &str) -> Option<Value> {
        self.catalog.output_schema_for(name, tenant)
    }

    /// [`Catalog::inspect`].
    pub fn inspect(&self, name: &str) -> Option<Value> {
        self.catalog.inspect(name)
    }

    /// [`Catalog::inspect_for`].
    pub fn inspect_for(&self, name: &str, tenant: &str) -> Option<Value> {
        self.catalog.inspect_for(name, tenant)
    }

    /// [`Dispatcher::call`].
    pub fn call(&self, name: &str, args: &str, options: &CallOptions) -> String {
        self.dispatcher.call(name, args, options)
    }

    /// [`Dispatcher::invoke`].
    pub fn invoke(&self, name: &str, args: &str, options: &CallOptions) -> CallOutcome {
        self.dispatcher.invoke(name, args, options)
    }

    /// [`Dispatcher::invoke_async`].
    pub async fn invoke_async(
        &self,
        name: String,
        args: String,
        options: CallOptions,
    ) -> CallOutcome {
        self.dispatcher.invoke_async(name, args, options).await
    }

    /// [`Dispatcher::invoke_object_async`].
    pub async fn invoke_object_async(
        &self,
        name: String,
        args: serde_json::Map<String, Value>,
        options: CallOptions,
    ) -> CallOutcome {
        self.dispatcher
            .invoke_object_async(name, args, options)
            .await
    }

    /// [`Dispatcher::call_async`].
    pub async fn call_async(&self, name: String, args: String, options: CallOptions) -> String {
        self.dispatcher.call_async(name, args, options).await
    }
}
