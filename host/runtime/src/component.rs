//! Loading a tool component: read its declaration without running it, compile (or load
//! cached code), pre-link it once into an `InstancePre`, then ask it for its schema.

use crate::bindings::{CallContext, ToolComponentPre};
use crate::declaration::{self, Declaration, DeclarationError};
use crate::engine::{EngineError, Runtime};
use crate::policy::EffectiveGrants;
use crate::sandbox::{self, CallSetup, CallState, CancelToken, Linkers, SandboxError};
use crate::secrets::Secrets;
use crate::wasm_error::{Cause, WasmtimeError};
use lifted::Lifted;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use wasmtime::component::ComponentExportIndex;

mod lifted;

/// Deadline for `schema()` at load: metadata calls must be quick.
pub const METADATA_TIMEOUT: Duration = Duration::from_secs(5);
/// Deadline for `check()`: it runs when tools are listed and before calls (cached for
/// [`crate::registry::CHECK_TTL`]), so a slow or hostile check must not hold a listing
/// for long. A check that needs more than a second is treated as failed.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(1);
/// Largest component accepted, in bytes. The bundled tools are a few MiB; compiling is
/// linear in size and the compiled code is cached on disk, so a cap keeps a hostile or
/// mistaken file from costing minutes of CPU and hundreds of MB.
pub const MAX_COMPONENT_BYTES: usize = 64 * 1024 * 1024;
/// Largest schema a tool may return, in bytes.
pub const MAX_SCHEMA_BYTES: usize = 256 * 1024;

/// Where a tool came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolSource {
    /// Embedded in the binary (crate name).
    Bundled(String),
    /// A `.wasm` file.
    File(PathBuf),
    /// Pulled from a registry: the pinned reference (`oci://HOST/REPO@sha256:…`),
    /// loaded from the tool store.
    Oci(String),
}

impl std::fmt::Display for ToolSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolSource::Bundled(name) => write!(f, "bundled:{name}"),
            ToolSource::File(path) => write!(f, "{}", path.display()),
            ToolSource::Oci(reference) => f.write_str(reference),
        }
    }
}

/// Why a component could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// Reading the file failed.
    #[error("cannot read: {0}")]
    Io(#[source] std::io::Error),
    /// Not a WebAssembly component (a core module, or not wasm at all).
    #[error("not a WebAssembly component: {reason}")]
    NotAComponent {
        /// What is wrong, with the cause's words.
        reason: String,
        /// The parser's error, when it found the fault.
        #[source]
        source: Option<Cause>,
    },
    /// Declaration missing or invalid.
    #[error(transparent)]
    Declaration(#[from] DeclarationError),
    /// Compilation failed.
    #[error(transparent)]
    Compile(#[from] EngineError),
    /// Larger than [`MAX_COMPONENT_BYTES`].
    #[error("the component is {0} bytes, over the {MAX_COMPONENT_BYTES}-byte limit")]
    TooLarge(usize),
    /// Instantiating it failed (e.g. a data segment larger than its memory may grow,
    /// or a start function that traps).
    #[error("cannot be instantiated: {0}")]
    Instantiate(#[source] WasmtimeError),
    /// It creates more core instances than its sandbox may hold.
    #[error(
        "cannot be instantiated: it creates {} core wasm instances, over {limit}, its sandbox's limit: declare `core_instances = N` (the operator allows up to `max_core_instances`; componentize-py tools need 14)",
        found.map_or_else(|| format!("more than {limit}"), |n| n.to_string())
    )]
    TooManyInstances {
        /// The sandbox's limit.
        limit: u32,
        /// How many it creates, when counted before compiling (else wasmtime found
        /// it over the limit and did not say by how much).
        found: Option<u32>,
    },
    /// The component imports something the host does not provide, or does not export
    /// the `tool` interface.
    #[error("does not fit the hermetic:tool world: {reason}")]
    Link {
        /// What does not fit, with the cause's words and a hint where one helps.
        reason: String,
        /// wasmtime's or the sandbox's error, when one of them found the misfit.
        #[source]
        source: Option<Cause>,
    },
    /// `schema()` trapped, timed out or returned something that is not a valid schema.
    #[error("invalid schema: {reason}")]
    Schema {
        /// What is wrong, with the cause's words.
        reason: String,
        /// The trap, the JSON or JSON Schema error, or the sandbox's refusal.
        #[source]
        source: Option<Cause>,
    },
    /// The host's file check refused it (e.g. it is not signed by a trusted key).
    #[error("refused: {reason}")]
    Refused {
        /// Why, and what to do.
        reason: String,
    },
    /// The schema's name differs from the declared name.
    #[error("schema name {schema:?} differs from the declared name {declared:?}")]
    NameMismatch {
        /// Name in the declaration.
        declared: String,
        /// Name in the schema.
        schema: String,
    },
}

impl LoadError {
    fn not_a_component(reason: impl Into<String>) -> Self {
        Self::NotAComponent {
            reason: reason.into(),
            source: None,
        }
    }

    fn schema(reason: impl Into<String>) -> Self {
        Self::Schema {
            reason: reason.into(),
            source: None,
        }
    }

    /// A schema error whose words end with the cause's.
    fn schema_from(context: &str, cause: impl Into<Cause>) -> Self {
        let cause = cause.into();
        Self::Schema {
            reason: if context.is_empty() {
                cause.to_string()
            } else {
                format!("{context}: {cause}")
            },
            source: Some(cause),
        }
    }

    /// A link error in words alone.
    pub(crate) fn link(reason: impl Into<String>) -> Self {
        Self::Link {
            reason: reason.into(),
            source: None,
        }
    }

    /// A link error that keeps `cause`: its words, with what `hint` adds to them.
    fn link_from(cause: impl Into<Cause>, hint: impl FnOnce(String) -> String) -> Self {
        let cause = cause.into();
        Self::Link {
            reason: hint(cause.to_string()),
            source: Some(cause),
        }
    }
}

/// Reads a component file, refusing one over [`MAX_COMPONENT_BYTES`] before reading
/// more than that.
///
/// # Errors
/// [`LoadError::Io`] if it cannot be read, [`LoadError::TooLarge`] if it is too large.
pub fn read_file(path: &std::path::Path) -> Result<Vec<u8>, LoadError> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(LoadError::Io)?;
    let limit = u64::try_from(MAX_COMPONENT_BYTES).unwrap_or(u64::MAX);
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(LoadError::Io)?;
    if bytes.len() > MAX_COMPONENT_BYTES {
        return Err(LoadError::TooLarge(bytes.len()));
    }
    Ok(bytes)
}

/// Reads the declaration from a component's bytes without instantiating it.
///
/// # Errors
/// [`LoadError::NotAComponent`] for malformed bytes or a core module, and
/// [`LoadError::Declaration`] for a missing, duplicated or invalid declaration.
pub fn read_declaration(bytes: &[u8]) -> Result<Declaration, LoadError> {
    scan(bytes).map(|(declaration, _)| declaration)
}

/// The declaration, and the core instances the component's top level creates: a lower
/// bound of what wasmtime counts (a nested component's are not added, as it may be
/// instantiated any number of times), so a component it finds over a limit is over it,
/// known before compiling (seconds of Cranelift for an interpreter's component).
fn scan(bytes: &[u8]) -> Result<(Declaration, u32), LoadError> {
    if bytes.is_empty() {
        return Err(LoadError::not_a_component("empty file"));
    }
    if !bytes.starts_with(b"\0asm") {
        // wasmparser's own message prints the expected and found bytes as arrays.
        return Err(LoadError::not_a_component(
            "the file is not WebAssembly (no \\0asm magic number)",
        ));
    }
    let not_a_component = |e: wasmparser::BinaryReaderError| LoadError::NotAComponent {
        reason: e.to_string(),
        source: Some(Box::new(e)),
    };
    let mut found: Option<&[u8]> = None;
    let mut core_instances = 0u32;
    let mut first = true;
    // `Parser::parse_all` would do, but it walks every function body of the nested core
    // modules, which reads (and faults in) every page of the bundled tools' embedded
    // bytes at each start: ~RSS for nothing. Code sections are skipped whole instead;
    // the declaration is a custom section, found wherever it is.
    let mut parser = wasmparser::Parser::new(0);
    let mut outer = Vec::new();
    let mut data = bytes;
    loop {
        let (payload, consumed) = match parser.parse(data, true).map_err(not_a_component)? {
            wasmparser::Chunk::Parsed { consumed, payload } => (payload, consumed),
            // With `eof` set the parser reports truncation as an error instead.
            wasmparser::Chunk::NeedMoreData(_) => {
                return Err(LoadError::not_a_component("truncated"));
            }
        };
        data = data.get(consumed..).unwrap_or_default();
        if first {
            first = false;
            match payload {
                wasmparser::Payload::Version {
                    encoding: wasmparser::Encoding::Component,
                    ..
                } => {}
                _ => {
                    return Err(LoadError::not_a_component(
                        "a core module, not a component (build for wasm32-wasip2)",
                    ));
                }
            }
        }
        match payload {
            wasmparser::Payload::CustomSection(section)
                if section.name() == declaration::SECTION =>
            {
                if found.is_some() {
                    return Err(DeclarationError::Duplicate.into());
                }
                found = Some(section.data());
            }
            wasmparser::Payload::InstanceSection(section) if outer.is_empty() => {
                for instance in section {
                    if let wasmparser::Instance::Instantiate { .. } =
                        instance.map_err(not_a_component)?
                    {
                        core_instances = core_instances.saturating_add(1);
                    }
                }
            }
            wasmparser::Payload::CodeSectionStart { size, .. } => {
                parser.skip_section();
                data = usize::try_from(size)
                    .ok()
                    .and_then(|size| data.get(size..))
                    .ok_or_else(|| LoadError::not_a_component("code section past the end"))?;
            }
            wasmparser::Payload::ModuleSection { parser: inner, .. }
            | wasmparser::Payload::ComponentSection { parser: inner, .. } => {
                outer.push(std::mem::replace(&mut parser, inner));
            }
            wasmparser::Payload::End(_) => match outer.pop() {
                Some(p) => parser = p,
                None => break,
            },
            _ => {}
        }
    }
    let declaration = Declaration::parse(found.ok_or(DeclarationError::Missing)?)?;
    Ok((declaration, core_instances))
}

/// A compiled, pre-linked tool with its schema.
pub struct LoadedTool {
    /// The tool's declaration.
    pub declaration: Declaration,
    /// Its OpenAI function schema (as the tool returned it; `name` checked).
    pub schema: Value,
    /// Validator compiled from `schema.parameters`.
    pub validator: jsonschema::Validator,
    /// Validator compiled from `schema.output_schema`, when the tool declares what its
    /// results look like (MCP's `outputSchema`; results then also go out as
    /// `structuredContent`).
    pub output_validator: Option<jsonschema::Validator>,
    /// Pre-linked instance template: per call only a Store and instantiation.
    pub pre: ToolComponentPre<CallState>,
    /// Where it came from.
    pub source: ToolSource,
    /// SHA-256 of the component bytes.
    pub digest: String,
    /// Why the operator's grants are withheld from this version (e.g. it asks for
    /// more than the version they reviewed): registered, listed, unavailable with
    /// this reason, never called.
    pub withheld: Option<String>,
    /// Name as a shared string (cheap to put in every Store).
    pub name: Arc<str>,
    /// Whose key-value data it reaches: its name for a bundled tool, `ext:` and its
    /// name for one from a file or a registry — a community tool that takes a bundled
    /// tool's name and toolset (a replacement the registry allows) does not inherit
    /// the bundled tool's data (a tenant's `memory`, its `todo` lists).
    pub store_owner: Arc<str>,
    /// The `handle` export, called untyped-by-bindings so that its result can be
    /// measured in guest memory before it is copied out (see [`LoadedTool::handle`]).
    handle_export: ComponentExportIndex,
    /// The same component pre-linked for calls on a fiber, for a tool that asks for
    /// nothing that blocks ([`sandbox::runs_on_fiber`]).
    fiber_pre: Option<wasmtime::component::InstancePre<CallState>>,
}

/// The WIT package this host implements (wit/tool.wit). A component built against
/// another version is refused at load (see `link_hint`).
pub const WIT_PACKAGE: &str = "hermetic:tool@0.3.0";

/// The interface the tool world exports.
const TOOL_INTERFACE: &str = "hermetic:tool/tool@0.3.0";

impl std::fmt::Debug for LoadedTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedTool")
            .field("name", &self.name)
            .field("source", &self.source)
            .finish()
    }
}

/// Loads a component: declaration, compile, pre-link, and its schema.
///
/// `metadata_grants` are the grants `schema()` runs with (none: no mounts, no env),
/// in the sandbox the tool's calls get: `sandbox_size` says its core instances and
/// memory bytes from its declaration (the operator's limits for it).
///
/// # Errors
/// See [`LoadError`]; every variant says what is wrong with the component.
pub fn load(
    runtime: &Runtime,
    linkers: &Linkers,
    bytes: &[u8],
    source: ToolSource,
    metadata_grants: &EffectiveGrants,
    sandbox_size: &dyn Fn(&Declaration) -> (u32, u64),
) -> Result<LoadedTool, LoadError> {
    if bytes.len() > MAX_COMPONENT_BYTES {
        return Err(LoadError::TooLarge(bytes.len()));
    }
    let (declaration, creates) = scan(bytes)?;
    // The sandbox this tool's calls get (core instances, memory), within the engine's
    // ceilings: an interpreter's component needs it just to start.
    let ceiling = runtime.config();
    let (core_instances, memory_bytes) = sandbox_size(&declaration);
    let core_instances = core_instances.min(ceiling.max_core_instances);
    // Refused before compiling when it is known to be over that size.
    if creates > core_instances {
        return Err(LoadError::TooManyInstances {
            limit: core_instances,
            found: Some(creates),
        });
    }
    let compiled = runtime.compile(bytes).map_err(|e| match &e {
        // Over the engine's ceiling (the operator's `max_core_instances`): wasmtime
        // refuses to compile it for this pool.
        EngineError::Compile(cause) if over_instances_text(&cause.to_string()) => {
            LoadError::TooManyInstances {
                limit: runtime.config().max_core_instances,
                found: None,
            }
        }
        _ => LoadError::Compile(e),
    })?;
    let component = &compiled.component;
    // The host's linker failing is a host fault, reported as a misfit all the same.
    let linker = linkers
        .for_declaration(&declaration)
        .map_err(|e| LoadError::link_from(e, |words| words))?;
    let misfit = |e| LoadError::link_from(WasmtimeError::from(e), |w| link_hint(&declaration, w));
    let pre = linker.instantiate_pre(component).map_err(misfit)?;
    let pre = ToolComponentPre::new(pre).map_err(|e| {
        LoadError::link_from(WasmtimeError::from(e), |words| {
            version_hint(exported_other_version(component), words)
        })
    })?;
    let name: Arc<str> = Arc::from(declaration.name.as_str());
    let mut sized = metadata_grants.clone();
    sized.limits.core_instances = core_instances;
    sized.limits.memory_bytes =
        memory_bytes.min(u64::try_from(ceiling.max_memory_bytes).unwrap_or(u64::MAX));
    let metadata_grants = &sized;

    let raw = {
        // Declared before the store, so it is given back after the store is dropped.
        let _sandbox = metadata_sandbox(runtime, METADATA_TIMEOUT)
            .map_err(|e| LoadError::schema_from("", e))?;
        let mut store = sandbox::store(
            runtime,
            &name,
            metadata_grants,
            &Secrets::default(),
            CallSetup {
                call_id: "schema".into(),
                progress: None,
                timeout: Some(METADATA_TIMEOUT),
                cancel: None,
                turn: None,
                ..CallSetup::default()
            },
        )
        .map_err(|e: SandboxError| LoadError::schema_from("", e))?;
        let instance = pre.instance_pre().instantiate(&mut store).map_err(|e| {
            if over_instances(&e) {
                LoadError::TooManyInstances {
                    limit: metadata_grants.limits.core_instances,
                    found: None,
                }
            } else {
                LoadError::Instantiate(e.into())
            }
        })?;
        // Lifted, not a `String`: a schema over the limit is measured where the guest
        // left it (it may be as large as the tool's memory), never copied.
        let failed =
            |e: wasmtime::Error| LoadError::schema_from("schema() failed", WasmtimeError::from(e));
        let schema_export = tool_export(component, "schema")?;
        let schema_func: wasmtime::component::TypedFunc<(), (Lifted<false>,)> = instance
            .get_typed_func(&mut store, schema_export)
            .map_err(failed)?;
        match lifted::with_cap(MAX_SCHEMA_BYTES, || schema_func.call(&mut store, ()))
            .map_err(failed)?
            .0
        {
            Lifted::Text(text) => text,
            Lifted::Over { chars, .. } => {
                return Err(LoadError::schema(format!(
                    "{chars} characters, over the {MAX_SCHEMA_BYTES}-byte limit"
                )));
            }
        }
    };
    if raw.len() > MAX_SCHEMA_BYTES {
        return Err(LoadError::schema(format!(
            "{} bytes, over the {MAX_SCHEMA_BYTES}-byte limit",
            raw.len()
        )));
    }
    let schema: Value =
        serde_json::from_str(&raw).map_err(|e| LoadError::schema_from("not JSON", e))?;
    let schema_name = schema
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| LoadError::schema("missing string field `name`"))?;
    if schema_name != declaration.name {
        return Err(LoadError::NameMismatch {
            declared: declaration.name.clone(),
            schema: schema_name.to_owned(),
        });
    }
    let parameters = schema
        .get("parameters")
        .filter(|p| p.is_object())
        .ok_or_else(|| LoadError::schema("missing object field `parameters`"))?;
    let validator = jsonschema::validator_for(parameters)
        .map_err(|e| LoadError::schema_from("`parameters` is not a valid JSON Schema", e))?;
    let output_validator = output_validator(&schema)?;

    let handle_export = tool_export(component, "handle")?;
    let fiber_pre = if sandbox::runs_on_fiber(&declaration) {
        let linker = linkers
            .fiber()
            .map_err(|e| LoadError::link_from(e, |words| words))?;
        Some(linker.instantiate_pre(component).map_err(misfit)?)
    } else {
        None
    };
    runtime.commit(&compiled);
    let store_owner: Arc<str> = match &source {
        ToolSource::Bundled(_) => Arc::clone(&name),
        ToolSource::File(_) | ToolSource::Oci(_) => Arc::from(format!("ext:{name}")),
    };
    Ok(LoadedTool {
        store_owner,
        declaration,
        schema,
        validator,
        output_validator,
        pre,
        source,
        digest: compiled.digest,
        withheld: None,
        name,
        handle_export,
        fiber_pre,
    })
}

/// Function `name` of the `tool` interface the component exports: called through a
/// typed function of our own, so that its string is lifted capped ([`Lifted`]).
fn tool_export(
    component: &wasmtime::component::Component,
    name: &str,
) -> Result<ComponentExportIndex, LoadError> {
    component
        .get_export_index(None, TOOL_INTERFACE)
        .and_then(|tool| component.get_export_index(Some(&tool), name))
        .ok_or_else(|| LoadError::Link {
            reason: format!("no `{name}` export in {TOOL_INTERFACE}"),
            source: None,
        })
}

/// The validator of a schema's optional `output_schema`: an object schema (MCP's
/// `structuredContent` is an object), compiled once at load.
fn output_validator(schema: &Value) -> Result<Option<jsonschema::Validator>, LoadError> {
    let Some(output) = schema.get(OUTPUT_SCHEMA).filter(|o| !o.is_null()) else {
        return Ok(None);
    };
    if output.get("type").and_then(Value::as_str) != Some("object") {
        return Err(LoadError::schema(format!(
            "`{OUTPUT_SCHEMA}` must be an object schema (\"type\": \"object\"): a structured result is a JSON object"
        )));
    }
    jsonschema::validator_for(output)
        .map(Some)
        .map_err(|e| LoadError::schema_from("`output_schema` is not a valid JSON Schema", e))
}

/// The schema key where a tool declares its results' shape.
pub const OUTPUT_SCHEMA: &str = "output_schema";

/// Adds what to do about a missing import the host *can* provide when declared, or
/// about a component built against another version of the WIT package.
fn link_hint(declaration: &Declaration, message: String) -> String {
    let other_version = other_package_version(&message);
    if other_version.is_some() {
        return version_hint(other_version, message);
    }
    if message.contains("wasi:http/") && declaration.capabilities.network.is_empty() {
        return format!(
            "{message} (wasi:http is only linked for tools that declare network destinations in `capabilities.network`)"
        );
    }
    if message.contains(sandbox::terminal::INTERFACE) && !declaration.capabilities.terminal {
        return format!(
            "{message} (the component imports the terminal but does not declare it: add `terminal = true` under [capabilities])"
        );
    }
    message
}

/// The version of a `hermetic:tool/…@VERSION` interface named in `message`, when it is
/// not this host's.
fn other_package_version(message: &str) -> Option<String> {
    let (_, rest) = message.split_once("hermetic:tool/")?;
    let (_, version) = rest.split_once('@')?;
    let version: String = version
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'))
        .collect();
    let current = WIT_PACKAGE.rsplit('@').next().unwrap_or_default();
    (version != current).then_some(version)
}

/// The version of `hermetic:tool/tool` the component exports, when it is not this
/// host's (a tool built against an older SDK).
fn exported_other_version(component: &wasmtime::component::Component) -> Option<String> {
    let ty = component.component_type();
    let engine = component.engine();
    ty.exports(engine).find_map(|(name, _)| {
        other_package_version(name).filter(|_| name.starts_with("hermetic:tool/"))
    })
}

/// `message`, with what to do about a component built against `version` of the WIT
/// package (none: `message` as it is).
fn version_hint(version: Option<String>, message: String) -> String {
    match version {
        Some(v) => format!(
            "{message} (the component was built against hermetic:tool@{v}; this host implements {WIT_PACKAGE}: rebuild it with the current SDK and wit/)"
        ),
        None => message,
    }
}

/// How a sandboxed call ended, short of returning.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallFailure {
    /// The wall-clock deadline passed.
    #[error("time limit exceeded: the call ran longer than {0} ms")]
    Timeout(u64),
    /// The guest tried to grow memory past its cap.
    #[error(
        "memory limit exceeded: the tool tried to grow its memory to {tried} bytes, over its {cap}-byte limit"
    )]
    Memory {
        /// Size asked for: all the call's linear memories together.
        tried: usize,
        /// The cap.
        cap: u64,
    },
    /// The component creates more core instances than its sandbox may hold.
    #[error(
        "instance limit exceeded: the component creates more than {0} core wasm instances, its sandbox's limit (a tool asks for more with `core_instances` in its declaration, up to the operator's `max_core_instances`)"
    )]
    Instances(u32),
    /// The fuel budget ran out.
    #[error("fuel limit exceeded: the call used more than {0} units of fuel")]
    Fuel(u64),
    /// The guest wrote more to stdout/stderr than it may.
    #[error("output limit exceeded: the tool wrote more than {0} bytes to stdout or stderr")]
    Output(usize),
    /// The caller cancelled the call (see [`crate::CancelToken`]); the guest was
    /// interrupted and its instance discarded.
    #[error("cancelled: the caller cancelled the call before it finished")]
    Cancelled,
    /// The result is longer than the tool's result cap (measured before it was copied
    /// out of the guest).
    #[error("result size limit exceeded: the tool returned {chars} characters")]
    ResultSize {
        /// Its length in characters.
        chars: usize,
    },
    /// The guest trapped (its instance is discarded).
    #[error("the tool crashed: {0}")]
    Trap(String),
    /// The sandbox could not be set up.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
}

/// What `handle` returned: copied out when within the result cap, else measured.
type Returned = wasmtime::Result<Result<Lifted<false>, Lifted<true>>>;

/// The `handle` export: arguments and context in, the result or the tool's error out
/// (each lifted under the call's result cap, before the guest's post-return frees it).
type HandleFunc<'a> = wasmtime::component::TypedFunc<
    (&'a str, &'a CallContext),
    (Result<Lifted<false>, Lifted<true>>,),
>;

impl LoadedTool {
    /// Runs `handle` in a fresh sandbox. `Ok(Err(msg))` is the tool's own error.
    ///
    /// # Errors
    /// A [`CallFailure`] naming the limit hit, the trap, or the setup failure.
    pub fn handle(
        &self,
        runtime: &Runtime,
        grants: &EffectiveGrants,
        secrets: &Secrets,
        args: &str,
        ctx: &CallContext,
        setup: CallSetup<'_>,
    ) -> Result<Result<String, String>, CallFailure> {
        let cancel = setup.cancel.clone();
        if cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
            return Err(CallFailure::Cancelled);
        }
        let timeout_ms = timeout_ms(grants, &setup);
        let mut store = sandbox::store(runtime, &self.name, grants, secrets, setup)?;
        let returned = self
            .pre
            .instance_pre()
            .instantiate(&mut store)
            .and_then(|instance| {
                let handle = self.handle_func(&mut store, &instance)?;
                lifted::with_cap(grants.limits.result_chars, || {
                    Ok(handle.call(&mut store, (args, ctx))?.0)
                })
            });
        self.conclude(returned, store, grants, timeout_ms, cancel.as_ref())
    }

    /// Whether calls of this tool may run on a fiber ([`LoadedTool::handle_on_fiber`]).
    pub(crate) fn runs_on_fiber(&self) -> bool {
        self.fiber_pre.is_some()
    }

    /// [`LoadedTool::handle`] on a wasmtime fiber, for tools that
    /// [run on one](sandbox::runs_on_fiber): polled on the caller's task, it ends at
    /// once for a guest that neither waits nor computes past an epoch tick; otherwise
    /// it is pending at the tick (or the wait) and may be polled on to the end from
    /// any thread. The call races its deadline and cancel token: a guest suspended in
    /// a host wait (a sleep), out of the epoch interrupt's reach, is dropped when they
    /// fire and ends as `time` or `cancelled`, exactly as a computing one does.
    ///
    /// # Errors
    /// As [`LoadedTool::handle`]; [`CallFailure::Sandbox`] for a tool that does not run
    /// on a fiber.
    pub(crate) async fn handle_on_fiber(
        &self,
        runtime: &Runtime,
        grants: &EffectiveGrants,
        secrets: &Secrets,
        args: &str,
        ctx: &CallContext,
        setup: CallSetup<'_>,
    ) -> Result<Result<String, String>, CallFailure> {
        let Some(pre) = &self.fiber_pre else {
            return Err(CallFailure::Sandbox(SandboxError::NotForFiber(
                self.name.to_string(),
            )));
        };
        let cancel = setup.cancel.clone();
        if cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
            return Err(CallFailure::Cancelled);
        }
        let timeout_ms = timeout_ms(grants, &setup);
        let mut store = sandbox::fiber_store(runtime, &self.name, grants, secrets, setup)?;
        let stop = store.data().stop().clone();
        let guest = lifted::Capped::new(grants.limits.result_chars, async {
            let instance = pre.instantiate_async(&mut store).await?;
            let handle = self.handle_func(&mut store, &instance)?;
            Ok(handle.call_async(&mut store, (args, ctx)).await?.0)
        });
        let raced = tokio::select! {
            biased;
            returned = guest => Ok(returned),
            by_cancel = stop.reached_at_tick(runtime.ticks()) => Err(by_cancel),
        };
        let returned: Returned = match raced {
            Ok(returned) => returned,
            // The guest future is dropped: wasmtime unwinds its fiber.
            Err(by_cancel) => {
                store.data_mut().cancelled |= by_cancel;
                Err(wasmtime::Trap::Interrupt.into())
            }
        };
        self.conclude(returned, store, grants, timeout_ms, cancel.as_ref())
    }

    /// The `handle` export of `instance`, typed.
    fn handle_func<'a>(
        &self,
        store: &mut wasmtime::Store<CallState>,
        instance: &wasmtime::component::Instance,
    ) -> wasmtime::Result<HandleFunc<'a>> {
        instance.get_typed_func(store, self.handle_export)
    }

    /// What a call that `returned` comes to: its result copied out (if it fits) or
    /// the failure, with the guest's progress flushed and its output logged.
    fn conclude(
        &self,
        returned: Returned,
        mut store: wasmtime::Store<CallState>,
        grants: &EffectiveGrants,
        timeout_ms: u64,
        cancel: Option<&CancelToken>,
    ) -> Result<Result<String, String>, CallFailure> {
        // The result was measured where the guest left it and copied only when it
        // fit (`Lifted`): a guest may return up to its whole memory cap, which the
        // host need not hold a second time just to refuse it.
        let result = returned.map(|returned| match returned {
            Ok(Lifted::Text(text)) => {
                if text.len() > grants.limits.result_chars {
                    let chars = text.chars().count();
                    if chars > grants.limits.result_chars {
                        return Err(CallFailure::ResultSize { chars });
                    }
                }
                Ok(Ok(text))
            }
            Ok(Lifted::Over { chars, .. }) => Err(CallFailure::ResultSize { chars }),
            // Only what the sanitizer reads (`lifted::HEAD_CHARS`): the rest of a
            // huge error was never copied.
            Err(Lifted::Text(message) | Lifted::Over { head: message, .. }) => Ok(Err(message)),
        });
        let denied = store.data().limiter.denied;
        let result = match result {
            // An error after the host refused the guest memory (an interpreter's
            // MemoryError, caught and returned): the memory cap, as when a guest traps
            // on it. A result is the tool's, whatever it ran into on the way.
            Ok(Ok(Err(_))) if denied.is_some() => Err(CallFailure::Memory {
                tried: denied.unwrap_or_default(),
                cap: grants.limits.memory_bytes,
            }),
            Ok(Ok(value)) => Ok(value),
            Ok(Err(failure)) => Err(failure),
            Err(e) => Err(classify(e, store.data(), grants, timeout_ms)),
        };
        store.data_mut().flush_progress();
        log_output(&self.name, store.data());
        // A guest woken from a host call by the cancellation (an abandoned HTTP request)
        // may return — an error, or a result built around the failed request — before
        // the next epoch tick: the call was still cancelled, and says so.
        if result.is_ok() && cancel.is_some_and(CancelToken::is_cancelled) {
            return Err(CallFailure::Cancelled);
        }
        result
    }

    /// Runs `check()` in a fresh sandbox with the tool's grants.
    ///
    /// # Errors
    /// A [`CallFailure`] if it traps, times out or cannot be set up.
    pub fn check(
        &self,
        runtime: &Runtime,
        grants: &EffectiveGrants,
        secrets: &Secrets,
    ) -> Result<bool, CallFailure> {
        let timeout = CHECK_TIMEOUT.min(Duration::from_millis(grants.limits.timeout_ms));
        let setup = CallSetup {
            call_id: "check".into(),
            progress: None,
            timeout: Some(timeout),
            cancel: None,
            turn: None,
            ..CallSetup::default()
        };
        let _sandbox = metadata_sandbox(runtime, timeout)?;
        let mut store = sandbox::store(runtime, &self.name, grants, secrets, setup)?;
        let result = self
            .pre
            .instantiate(&mut store)
            .and_then(|tool| tool.hermetic_tool_tool().call_check(&mut store));
        let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        result.map_err(|e| classify(e, store.data(), grants, timeout_ms))
    }
}

/// One of the sandboxes kept for `schema()` and `check()` runs, waiting at most `wait`
/// for one; held until the run's store is dropped.
fn metadata_sandbox(runtime: &Runtime, wait: Duration) -> Result<crate::slots::Slot, SandboxError> {
    runtime.metadata_sandbox(wait).ok_or(SandboxError::Busy {
        sandboxes: runtime.config().metadata_sandboxes,
        waited_ms: wait.as_millis(),
    })
}

/// A call's time limit in milliseconds, as its errors report it.
fn timeout_ms(grants: &EffectiveGrants, setup: &CallSetup<'_>) -> u64 {
    setup.timeout.map_or(grants.limits.timeout_ms, |t| {
        u64::try_from(t.as_millis()).unwrap_or(u64::MAX)
    })
}

/// Bytes of a crashed guest's stderr quoted in the error (its panic message).
const STDERR_TAIL: usize = 500;

/// What a guest's failure was: a limit (memory, time, fuel), a cancellation, a trap.
pub(crate) fn classify(
    error: wasmtime::Error,
    state: &CallState,
    grants: &EffectiveGrants,
    timeout_ms: u64,
) -> CallFailure {
    // A Rust guest that cannot grow memory aborts with `unreachable`; the limiter's
    // record is what tells a memory cap from a genuine crash.
    if let Some(tried) = state.limiter.denied {
        return CallFailure::Memory {
            tried,
            cap: grants.limits.memory_bytes,
        };
    }
    match error.downcast_ref::<wasmtime::Trap>() {
        // The epoch callback records why it interrupted; both reasons share the trap.
        Some(wasmtime::Trap::Interrupt) if state.cancelled => return CallFailure::Cancelled,
        Some(wasmtime::Trap::Interrupt) => return CallFailure::Timeout(timeout_ms),
        Some(wasmtime::Trap::OutOfFuel) => {
            return CallFailure::Fuel(grants.limits.fuel.unwrap_or(u64::MAX));
        }
        _ => {}
    }
    if state.stdout.overflowed() || state.stderr.overflowed() {
        return CallFailure::Output(grants.limits.output_bytes);
    }
    if over_instances(&error) {
        return CallFailure::Instances(grants.limits.core_instances);
    }
    // The trap's own words ("call stack exhausted", "unreachable executed"), not the
    // wasm backtrace, which can be thousands of frames long; that goes to the log.
    tracing::debug!(target: "hermetic::guest", "trap: {error:?}");
    let reason = match error.downcast_ref::<wasmtime::Trap>() {
        Some(wasmtime::Trap::MemoryOutOfBounds) if ran_off_its_stack(&error) => {
            "stack overflow: the tool recursed until its stack ran out of its memory".to_owned()
        }
        Some(wasmtime::Trap::StackOverflow) => {
            "stack overflow: the tool recursed past the host's wasm stack limit".to_owned()
        }
        Some(trap) => trap.to_string(),
        None => error.root_cause().to_string(),
    };
    // Scrubbed whole, then cut: a secret the cut went through would lose its head (no
    // longer a form the scrubber knows) and keep its tail.
    let stderr = state.scrubbed(String::from_utf8_lossy(&state.stderr.contents()).into_owned());
    let mut start = stderr.len().saturating_sub(STDERR_TAIL);
    while !stderr.is_char_boundary(start) {
        start += 1;
    }
    let tail = stderr[start..].trim();
    if tail.is_empty() {
        CallFailure::Trap(reason)
    } else {
        CallFailure::Trap(format!("{reason}; stderr: {tail}"))
    }
}

/// Whether instantiating failed on the sandbox's core instance limit: the store's
/// count (`ResourceLimiter::instances`) or the pool's per-component ceiling. wasmtime
/// says so only in words (pinned version; `tests/polyglot.rs` checks them).
fn over_instances(error: &wasmtime::Error) -> bool {
    over_instances_text(&error.root_cause().to_string())
}

/// [`over_instances`], from the error's words.
fn over_instances_text(text: &str) -> bool {
    text.contains("instance count too high")
        || (text.contains("core module instances") && text.contains("pooling allocator"))
}

/// Frames of one function in a row that make an out-of-bounds access a stack
/// overflow: a Rust guest's stack lives in its linear memory, so deep recursion ends as
/// an out-of-bounds store below the memory's start, not as wasmtime's own stack trap.
/// wasmtime captures the innermost 20 frames; 16 of them being one function is
/// recursion, not an ordinary bad pointer.
const RECURSION_FRAMES: usize = 16;

/// Whether a trap's backtrace is one function calling itself at least
/// [`RECURSION_FRAMES`] times in a row.
fn ran_off_its_stack(error: &wasmtime::Error) -> bool {
    let Some(trace) = error.downcast_ref::<wasmtime::WasmBacktrace>() else {
        return false;
    };
    let (mut run, mut previous) = (0usize, None);
    for frame in trace.frames() {
        let current = (frame.module().name().map(str::to_owned), frame.func_index());
        if previous.as_ref() == Some(&current) {
            run += 1;
            if run >= RECURSION_FRAMES {
                return true;
            }
        } else {
            run = 1;
            previous = Some(current);
        }
    }
    false
}

/// Sends what the guest printed to the log (debug level), attributed to the tool (or
/// hook).
pub(crate) fn log_output(tool: &str, state: &CallState) {
    for (stream, pipe) in [("stdout", &state.stdout), ("stderr", &state.stderr)] {
        let bytes = pipe.contents();
        // Scrubbed (which copies) only for a log that keeps it.
        if !bytes.is_empty() && tracing::enabled!(target: "hermetic::guest", tracing::Level::DEBUG)
        {
            let text = state.scrubbed(String::from_utf8_lossy(&bytes).into_owned());
            tracing::debug!(target: "hermetic::guest", tool, stream, "{text}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_component_of_another_package_version_is_told_to_rebuild() {
        let old = "component imports instance `hermetic:tool/terminal@0.1.0`, but a matching implementation was not found in the linker";
        assert_eq!(other_package_version(old).as_deref(), Some("0.1.0"));
        let hinted = version_hint(other_package_version(old), old.to_owned());
        assert!(
            hinted.ends_with(
                "(the component was built against hermetic:tool@0.1.0; this host implements hermetic:tool@0.3.0: rebuild it with the current SDK and wit/)"
            ),
            "{hinted}"
        );
        // The host's own version, and messages about other packages, get no hint.
        let current = "component imports instance `hermetic:tool/terminal@0.3.0`, but …";
        assert_eq!(other_package_version(current), None);
        assert_eq!(
            other_package_version("imports `wasi:http/types@0.2.12`"),
            None
        );
        assert_eq!(version_hint(None, current.to_owned()), current);
    }
}

#[cfg(test)]
mod declaration_tests {
    use super::*;

    /// The straightforward reading (every payload, every function body) that
    /// [`read_declaration`] must agree with.
    fn declaration_by_parse_all(bytes: &[u8]) -> Option<Vec<u8>> {
        let mut found = None;
        for payload in wasmparser::Parser::new(0).parse_all(bytes) {
            if let wasmparser::Payload::CustomSection(s) = payload.ok()?
                && s.name() == declaration::SECTION
            {
                found = Some(s.data().to_vec());
            }
        }
        found
    }

    #[test]
    fn skipping_code_sections_finds_the_same_declaration_in_every_bundled_tool() {
        for (name, bytes) in crate::bundled_tools() {
            let expected = declaration_by_parse_all(bytes).expect(name);
            let read = read_declaration(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(read, Declaration::parse(&expected).unwrap(), "{name}");
            assert_eq!(read.name, *name, "{name}");
        }
    }

    #[test]
    fn a_truncated_component_is_an_error_or_still_holds_its_declaration() {
        let (_, bytes) = crate::bundled_tools()[0];
        let whole = read_declaration(bytes).unwrap();
        // Every cut in the headers, then one every 251 bytes through the rest. A cut at
        // a top-level section boundary is a shorter component, not a malformed one.
        let cuts = (0..4096.min(bytes.len())).chain((4096..bytes.len()).step_by(251));
        for cut in cuts {
            if let Ok(read) = read_declaration(&bytes[..cut]) {
                assert_eq!(read, whole, "cut at {cut}");
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn corrupted_components_never_panic(
            flips in proptest::collection::vec((proptest::num::usize::ANY, proptest::num::u8::ANY), 1..8)
        ) {
            let (_, bytes) = crate::bundled_tools()[0];
            let mut bytes = bytes.to_vec();
            for (at, value) in flips {
                let at = at % bytes.len();
                bytes[at] = value;
            }
            let _ = read_declaration(&bytes);
        }
    }
}
