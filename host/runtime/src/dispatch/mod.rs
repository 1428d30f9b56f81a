//! The call pipeline: resolve → parse and coerce arguments → validate against the
//! schema → sandboxed call → check and cap the result. Every failure becomes a
//! [`CallOutcome`] (JSON only at the edge); nothing here panics on agent or guest
//! input. What a tool is and who may see it is the [`Catalog`]'s: the dispatcher
//! asks it through [`Catalog::resolve`] and [`Catalog::check_failure`] only.

pub mod coerce;
mod hooked;

use crate::bindings::CallContext;
use crate::catalog::{Catalog, Resolved};
use crate::component::{CallFailure, LoadedTool};
use crate::outcome::{CallOutcome, LimitKind};
use crate::sandbox::capability::keyvalue::backend::KeyValueBackend;
use crate::sandbox::terminal::TerminalService;
use crate::sandbox::{CallSetup, Caller, CancelToken, ProgressSink, Services};
use crate::secrets::Scrubber;
use crate::slots::{Share, Slot, SlotStats, Slots};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Per-call options from the transport: `CallOptions::default()` and the `with_`
/// methods (the fields are public to read; new ones may be added).
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// Tenant id; [`crate::policy::OPERATOR_TENANT`] (empty, the default) = the operator
    /// itself, with no tenant narrowing (the guest sees
    /// [`crate::policy::OPERATOR_TENANT_FOR_GUESTS`] then).
    pub tenant: String,
    /// Agent session id.
    pub session: String,
    /// Progress receiver.
    pub progress: Option<ProgressSink>,
    /// Cancels the call while it runs (`None`: not cancellable, the cheapest path).
    pub cancel: Option<CancelToken>,
    /// Who answers approval requests raised during this call (a dangerous terminal
    /// command): a TTY prompt for the CLI, MCP elicitation or the approvals endpoint for
    /// the server. `None`: nobody can be asked, so the gate's headless default applies.
    pub approver: Option<Arc<dyn crate::approval::Approver>>,
    /// Where the call's hooks note what they did (refused, rewrote, replaced, failed),
    /// for its audit record. `None`: nobody reads them.
    pub hook_notes: Option<crate::hooks::HookNotes>,
}

impl CallOptions {
    /// These options with the call's hook notes put in `notes`.
    #[must_use]
    pub fn with_hook_notes(mut self, notes: crate::hooks::HookNotes) -> Self {
        self.hook_notes = Some(notes);
        self
    }

    /// These options for `tenant` (`""`: the operator itself).
    #[must_use]
    pub fn with_tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = tenant.into();
        self
    }

    /// These options in agent session `session`.
    #[must_use]
    pub fn with_session(mut self, session: impl Into<String>) -> Self {
        self.session = session.into();
        self
    }

    /// These options with progress reports sent to `sink`.
    #[must_use]
    pub fn with_progress(mut self, sink: ProgressSink) -> Self {
        self.progress = Some(sink);
        self
    }

    /// These options cancelled by `token`.
    #[must_use]
    pub fn with_cancel(mut self, token: CancelToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// These options with approval requests put to `approver`.
    #[must_use]
    pub fn with_approver(mut self, approver: Arc<dyn crate::approval::Approver>) -> Self {
        self.approver = Some(approver);
        self
    }
}

/// A call's arguments as the transport has them: JSON text, or an object it already
/// parsed.
enum Arguments<'a> {
    Text(std::borrow::Cow<'a, str>),
    Object(serde_json::Map<String, Value>),
}

static CALL_SEQ: AtomicU64 = AtomicU64::new(0);

/// Deepest nesting a tool's result may have. serde_json itself refuses more than 128
/// levels when parsing; 64 is far more than any real result needs, and keeps every
/// consumer downstream (MCP clients, Python's json, the audit log) far from its own
/// recursion limits.
pub const MAX_RESULT_DEPTH: usize = 64;

fn limit(kind: LimitKind, message: String) -> CallOutcome {
    CallOutcome::Limit { kind, message }
}

/// The concurrency limit of a call whose queue budget `wait` (`queue_timeout_ms`, for
/// all its queues together) ran out before it got one of `slots`; `who` runs them all
/// ("tenant acme", a tool's name, "the host").
fn busy(who: &str, slots: &Slots, wait: Duration) -> CallOutcome {
    limit(
        LimitKind::Concurrency,
        format!(
            "concurrency limit exceeded: {who} already runs {} calls; waited {} ms for a slot",
            slots.capacity(),
            wait.as_millis()
        ),
    )
}

/// The slots a running call holds, given back when it ends: its tenant's (for a tenant
/// with a cap), its tool's, and its sandbox's (the host's
/// [`crate::EngineConfig::max_instances`]).
struct Held {
    _tenant: Option<Slot>,
    _tool: Slot,
    _sandbox: Slot,
}

/// Runs calls of a [`Catalog`]'s tools: concurrency slots per tool and per tenant,
/// arguments, the sandboxed call, the result's checks, and the terminal of tools
/// granted it.
pub struct Dispatcher {
    catalog: Arc<Catalog>,
    /// The host services calls reach through their capabilities: the terminal, the
    /// key-value store.
    services: Services,
    /// Tenant id → calls of that tenant running at once.
    tenant_slots: HashMap<String, Arc<Slots>>,
    /// Tenant id → its share of the slots every tenant's calls use (a tool's, the
    /// host's sandboxes) and of the CPU turns: each is served by fair share between
    /// tenants (`slots`), so a tenant's queued calls never stand between another's
    /// call and the next free slot. The operator (`""`), and a tenant the policy does
    /// not name, are share 0.
    shares: HashMap<String, Share>,
    /// The hooks around calls, in the order they run (empty: the common case, one
    /// read per call).
    hooks: parking_lot::RwLock<Arc<[Arc<crate::hooks::Hook>]>>,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher")
            .field("tenants", &self.tenant_slots.len())
            .field("terminal", &self.services.terminal.is_some())
            .finish_non_exhaustive()
    }
}

impl Dispatcher {
    /// A dispatcher for `catalog`'s tools, with a concurrency budget per tenant of its
    /// policy, `terminal` for tools granted it, and `keyvalue` holding granted tools'
    /// key-value data.
    pub(crate) fn new(
        catalog: Arc<Catalog>,
        terminal: Option<Arc<dyn TerminalService>>,
        keyvalue: Arc<dyn KeyValueBackend>,
    ) -> Self {
        let tenant_slots = catalog
            .policy()
            .tenants
            .iter()
            .map(|(id, t)| {
                (
                    id.clone(),
                    Arc::new(Slots::new(t.limits.max_concurrent.unwrap_or(usize::MAX))),
                )
            })
            .collect();
        let shares = catalog
            .policy()
            .tenants
            .keys()
            .enumerate()
            .map(|(i, id)| (id.clone(), i + 1))
            .collect();
        Self {
            catalog,
            services: Services { terminal, keyvalue },
            tenant_slots,
            shares,
            hooks: parking_lot::RwLock::new(Arc::from(Vec::new())),
        }
    }

    /// `tenant`'s share of the slots and turns all tenants use.
    fn share(&self, tenant: &str) -> Share {
        self.shares.get(tenant).copied().unwrap_or(0)
    }

    /// Use and queue waits of the host's call sandboxes, and of each tenant's
    /// `max_concurrent` slots (tenants with a cap only), for metrics.
    pub fn slot_stats(&self) -> (SlotStats, Vec<(&str, SlotStats)>) {
        let sandboxes = self.catalog.runtime().call_sandboxes().stats();
        let tenants = self
            .tenant_slots
            .iter()
            .map(|(tenant, slots)| (tenant.as_str(), slots.stats()))
            .collect();
        (sandboxes, tenants)
    }

    /// The terminal service, if one was given.
    pub fn terminal(&self) -> Option<&Arc<dyn TerminalService>> {
        self.services.terminal.as_ref()
    }

    /// Where granted tools' key-value data lives: a transport ends a session's stores
    /// with [`KeyValueBackend::end_session`] when the session ends.
    pub fn keyvalue(&self) -> &Arc<dyn KeyValueBackend> {
        &self.services.keyvalue
    }

    /// Calls a tool with JSON arguments and returns its JSON result, or a JSON
    /// `{"error": ...}` for every kind of failure: [`Dispatcher::invoke`] rendered at
    /// the edge.
    pub fn call(&self, name: &str, args: &str, options: &CallOptions) -> String {
        self.invoke(name, args, options).to_json()
    }

    /// Calls a tool with JSON arguments; how the call ended, as a value.
    ///
    /// A tenant sees only the tools its toolsets include; any other name is an unknown
    /// tool to it (so tenants cannot probe each other's tools). A tool whose
    /// availability check failed is [`CallOutcome::Unavailable`] here as in listings.
    pub fn invoke(&self, name: &str, args: &str, options: &CallOptions) -> CallOutcome {
        let (tool, wait) = match self.resolve(name, options) {
            Ok(found) => found,
            Err(outcome) => return outcome,
        };
        let until = Instant::now() + wait;
        let tenant = options.tenant.as_str();
        let share = self.share(tenant);
        let tenant_slot = match self.tenant_slots.get(tenant) {
            None => None,
            Some(slots) => match slots.acquire_by(share, until) {
                Some(slot) => Some(slot),
                None => return busy(&format!("tenant {tenant}"), slots, wait),
            },
        };
        let Some(tool_slot) = tool.slots().acquire_by(share, until) else {
            return busy(name, tool.slots(), wait);
        };
        let sandboxes = self.catalog.runtime().call_sandboxes();
        let Some(sandbox) = sandboxes.acquire_by(share, until) else {
            return busy("the host", sandboxes, wait);
        };
        let held = Held {
            _tenant: tenant_slot,
            _tool: tool_slot,
            _sandbox: sandbox,
        };
        let args = Arguments::Text(args.into());
        self.run(&tool, name, args, options, held)
    }

    /// [`Dispatcher::invoke`] for async callers. Waiting for a concurrency slot holds no
    /// thread (one tenant's thousands of queued calls cannot starve another's); only a
    /// call that holds its slots runs: on a fiber on the caller's task for a tool that
    /// asks for nothing that blocks (moved to a blocking thread if it runs past an
    /// epoch tick), on a blocking worker thread for every other.
    pub async fn invoke_async(
        self: &Arc<Self>,
        name: String,
        args: String,
        options: CallOptions,
    ) -> CallOutcome {
        self.invoke_with(name, Arguments::Text(args.into()), options)
            .await
    }

    /// [`Dispatcher::invoke_async`] with arguments already parsed, as an MCP server
    /// gets them: the call neither serialises them nor parses them again.
    pub async fn invoke_object_async(
        self: &Arc<Self>,
        name: String,
        args: serde_json::Map<String, Value>,
        options: CallOptions,
    ) -> CallOutcome {
        self.invoke_with(name, Arguments::Object(args), options)
            .await
    }

    async fn invoke_with(
        self: &Arc<Self>,
        name: String,
        args: Arguments<'static>,
        options: CallOptions,
    ) -> CallOutcome {
        let (tool, wait) = match self.resolve(&name, &options) {
            Ok(found) => found,
            Err(outcome) => return outcome,
        };
        let until = Instant::now() + wait;
        let share = self.share(&options.tenant);
        let tenant_slot = match self.tenant_slots.get(options.tenant.as_str()) {
            None => None,
            Some(slots) => match slots.acquire_async_by(share, until).await {
                Some(slot) => Some(slot),
                None => return busy(&format!("tenant {}", options.tenant), slots, wait),
            },
        };
        let Some(tool_slot) = tool.slots().acquire_async_by(share, until).await else {
            return busy(&name, tool.slots(), wait);
        };
        let sandboxes = self.catalog.runtime().call_sandboxes();
        let Some(sandbox) = sandboxes.acquire_async_by(share, until).await else {
            return busy("the host", sandboxes, wait);
        };
        let held = Held {
            _tenant: tenant_slot,
            _tool: tool_slot,
            _sandbox: sandbox,
        };
        if let Some(fiber) = self.fiber_for(&tool, &options.tenant) {
            return Arc::clone(self)
                .run_on_fiber(tool, name, args, options, (held, fiber))
                .await;
        }
        // Not `block_in_place`, though it would save the two thread hand-offs: the
        // caller's task must stay free while the call runs, because it is the one that
        // sees a cancel notification or a client going away (the MCP server's
        // cancellation tests fail with it).
        let dispatcher = Arc::clone(self);
        let run = move || dispatcher.run(&tool, &name, args, &options, held);
        match tokio::task::spawn_blocking(run).await {
            Ok(outcome) => outcome,
            Err(e) => CallOutcome::ToolError {
                message: format!("host failure: {e}"),
            },
        }
    }

    /// A fiber stack for a call of `tool`, when the call may start on the caller's task:
    /// the tool [runs on a fiber](crate::sandbox::runs_on_fiber), its `check()` answer
    /// is cached and says yes (a stale one would run guest code synchronously, on an
    /// async worker), a stack is free, and the CPU turns are not all taken: a call
    /// computes its first tick before it asks for a turn, and while other calls wait
    /// for the CPU that tick must not be spent on an async worker, where every other
    /// request's I/O waits behind it (a flood of computing calls kept a server's
    /// workers busy that way).
    fn fiber_for(&self, tool: &Resolved, tenant: &str) -> Option<Slot> {
        if !tool.tool().runs_on_fiber() || tool.grants().unavailable_reason().is_some() {
            return None;
        }
        // Hooks run their own sandboxes, synchronously: such a call takes a thread.
        if self.hooks_for(tool, tenant).is_some() {
            return None;
        }
        if self.catalog.runtime().turns().saturated() {
            return None;
        }
        match self.catalog.cached_check_failure(tool) {
            Some(None) => self.catalog.runtime().fiber_slot(),
            _ => None,
        }
    }

    /// A call of a tool that runs on a fiber, holding its slots and fiber stack: started
    /// on the caller's task, so a call that neither waits nor computes past an epoch
    /// tick (most calls: tens of microseconds) ends with no thread hand-off at all. One
    /// still running then is finished on a blocking thread, so it cannot hold an async
    /// worker: the caller's task stays free to see a cancel or its client going away,
    /// as on the blocking path.
    async fn run_on_fiber(
        self: Arc<Self>,
        tool: Resolved,
        name: String,
        args: Arguments<'static>,
        options: CallOptions,
        held: (Held, Slot),
    ) -> CallOutcome {
        let call = async move {
            let _held = held;
            let prepared = match self.prepare(&tool, &name, args, &options) {
                Ok(prepared) => prepared,
                Err(outcome) => return outcome,
            };
            let grants = tool.grants();
            let (runtime, secrets) = (self.catalog.runtime(), self.catalog.secrets());
            let result = tool
                .tool()
                .handle_on_fiber(
                    runtime,
                    grants,
                    secrets,
                    &prepared.args,
                    &prepared.ctx,
                    prepared.setup,
                )
                .await;
            let outcome = finish(&name, tool.tool(), grants.limits.result_chars, result);
            // A tool on a fiber reaches no destination, but may hold a bound secret
            // another tool's destination echoed (e.g. granted it as an env var).
            match crate::sandbox::redact_values(grants, secrets) {
                Some(scrubber) => scrub(outcome, &scrubber),
                None => outcome,
            }
        };
        let mut call = Box::pin(call);
        // A panic in a host function stays this call's failure, as it does on a
        // blocking thread (there it is the task's `JoinError`), instead of unwinding
        // through the caller's task.
        let first = std::future::poll_fn(|cx| {
            let polled =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| call.as_mut().poll(cx)));
            std::task::Poll::Ready(match polled {
                Ok(std::task::Poll::Ready(outcome)) => Some(Ok(outcome)),
                Ok(std::task::Poll::Pending) => None,
                Err(_) => Some(Err(())),
            })
        })
        .await;
        match first {
            Some(Ok(outcome)) => return outcome,
            Some(Err(())) => {
                return CallOutcome::ToolError {
                    message: "host failure: a host function panicked".to_owned(),
                };
            }
            None => {}
        }
        let runtime = tokio::runtime::Handle::current();
        match tokio::task::spawn_blocking(move || runtime.block_on(call)).await {
            Ok(outcome) => outcome,
            Err(e) => CallOutcome::ToolError {
                message: format!("host failure: {e}"),
            },
        }
    }

    /// The tool `name` as the caller's tenant sees it, and how long its calls may wait
    /// for their concurrency slots: one budget for the tenant's, the tool's and the
    /// host's queues together (each queue gets what the ones before it left).
    fn resolve(
        &self,
        name: &str,
        options: &CallOptions,
    ) -> Result<(Resolved, Duration), CallOutcome> {
        let tool = self.catalog.resolve(name, &options.tenant)?;
        let wait = Duration::from_millis(tool.grants().limits.queue_timeout_ms);
        Ok((tool, wait))
    }

    /// The call itself, once its slots are held: availability, arguments, the
    /// sandboxed `handle`, and the result's checks.
    fn run(
        &self,
        tool: &Resolved,
        name: &str,
        args: Arguments<'_>,
        options: &CallOptions,
        _held: Held,
    ) -> CallOutcome {
        let grants = tool.grants();
        if let Some(reason) = self.catalog.check_failure(tool) {
            return CallOutcome::Unavailable {
                name: name.to_owned(),
                reason,
            };
        }
        let prepared = match self.prepare(tool, name, args, options) {
            Ok(prepared) => prepared,
            Err(outcome) => return outcome,
        };
        let (runtime, secrets) = (self.catalog.runtime(), self.catalog.secrets());
        let result = tool.tool().handle(
            runtime,
            grants,
            secrets,
            &prepared.args,
            &prepared.ctx,
            prepared.setup,
        );
        let mut outcome = finish(name, tool.tool(), grants.limits.result_chars, result);
        // Scrubbed before the hooks see it (a hook with a network grant of its own must
        // not receive a secret), and again after, in case a hook put one back.
        let scrubber = crate::sandbox::redact_values(grants, secrets);
        if let Some(scrubber) = &scrubber {
            outcome = scrub(outcome, scrubber);
        }
        if let Some(hooks) = &prepared.hooks {
            let site = hooked::HookSite {
                tool,
                name,
                ctx: &prepared.ctx,
                options,
            };
            outcome = self.hooks_after(hooks, &site, &prepared.args, outcome);
            if let Some(scrubber) = &scrubber {
                outcome = scrub(outcome, scrubber);
            }
        }
        outcome
    }

    /// Everything a call needs before its sandbox: the arguments parsed, coerced and
    /// validated, and the call's context and setup. Availability is the caller's to
    /// look at first: [`Dispatcher::run`] asks [`Catalog::check_failure`] (which
    /// reports grants that leave the tool unavailable, then runs `check()` if need
    /// be), the fiber path ([`Dispatcher::fiber_for`]) the grants and the cache.
    fn prepare<'a>(
        &'a self,
        tool: &'a Resolved,
        name: &str,
        args: Arguments<'_>,
        options: &'a CallOptions,
    ) -> Result<Prepared<'a>, CallOutcome> {
        let invalid = |message: String| CallOutcome::InvalidArguments {
            name: name.to_owned(),
            message,
        };

        let mut value: Value = match args {
            Arguments::Text(text) => match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(e) => return Err(invalid(format!("not valid JSON ({e})"))),
            },
            Arguments::Object(map) => Value::Object(map),
        };
        let Some(map) = value.as_object_mut() else {
            return Err(invalid(format!(
                "expected a JSON object, got {}",
                kind_of(&value)
            )));
        };
        if let Some(parameters) = tool.tool().schema.get("parameters") {
            coerce::coerce_args(map, parameters);
        }
        if let Some(error) = tool.tool().validator.iter_errors(&value).next() {
            let at = error.instance_path().to_string();
            let field = if at.is_empty() {
                "(arguments)".to_owned()
            } else {
                at
            };
            return Err(invalid(format!("{field}: {error}")));
        }
        let mut args = value.to_string();

        let seq = CALL_SEQ.fetch_add(1, Ordering::Relaxed);
        let call_id = format!("call_{seq:x}");
        let ctx = CallContext {
            call_id: call_id.clone(),
            tenant: if options.tenant == crate::policy::OPERATOR_TENANT {
                crate::policy::OPERATOR_TENANT_FOR_GUESTS.to_owned()
            } else {
                options.tenant.clone()
            },
            session: options.session.clone(),
        };
        let hooks = self.hooks_for(tool, &options.tenant);
        if let Some(hooks) = &hooks {
            let site = hooked::HookSite {
                tool,
                name,
                ctx: &ctx,
                options,
            };
            args = self.hooks_before(hooks, &site, args)?;
        }
        let setup = CallSetup {
            call_id,
            progress: options.progress.clone(),
            timeout: None,
            cancel: options.cancel.clone(),
            turn: Some(
                self.catalog
                    .runtime()
                    .turns()
                    .turn(self.share(&options.tenant)),
            ),
            caller: Some(Caller {
                services: &self.services,
                tenant: &options.tenant,
                session: &options.session,
                approver: options.approver.as_ref(),
                store_owner: &tool.tool().store_owner,
            }),
            scanned: None,
        };
        Ok(Prepared {
            args,
            ctx,
            setup,
            hooks,
        })
    }

    /// [`Dispatcher::call`] for async callers.
    pub async fn call_async(
        self: &Arc<Self>,
        name: String,
        args: String,
        options: CallOptions,
    ) -> String {
        self.invoke_async(name, args, options).await.to_json()
    }
}

/// A call ready for its sandbox ([`Dispatcher::prepare`]).
struct Prepared<'a> {
    /// The arguments as the guest gets them (coerced and validated JSON text).
    args: String,
    ctx: CallContext,
    setup: CallSetup<'a>,
    /// The hooks, when any applies to the call (they run again after it).
    hooks: Option<Arc<[Arc<crate::hooks::Hook>]>>,
}

/// How a call of `name` that ended with `result` comes out: the result's shape checked
/// (it was measured against the `cap` before it was copied) and, when the tool
/// declares an `output_schema`, its content (the tool's own `{"error": …}` report
/// excepted), or the failure.
fn finish(
    name: &str,
    tool: &LoadedTool,
    cap: usize,
    result: Result<Result<String, String>, CallFailure>,
) -> CallOutcome {
    match result {
        Ok(Ok(result)) => match result_shape(&result) {
            Ok(()) => match output_mismatch(tool, &result) {
                None => CallOutcome::Success(result),
                Some(message) => CallOutcome::ToolError {
                    message: format!(
                        "{name} returned a result its output_schema does not allow: {message}"
                    ),
                },
            },
            Err(ResultShape::Depth) => limit(
                LimitKind::ResultSize,
                format!(
                    "result depth limit exceeded: {name} returned JSON nested deeper than {MAX_RESULT_DEPTH} levels"
                ),
            ),
            Err(ResultShape::NotJson) => CallOutcome::ToolError {
                message: format!("{name} returned a result that is not valid JSON"),
            },
            Err(ResultShape::NotObject(kind)) => CallOutcome::ToolError {
                message: format!(
                    "{name} returned {kind} as its result; a result must be a JSON object"
                ),
            },
        },
        Ok(Err(message)) => CallOutcome::ToolError { message },
        Err(CallFailure::ResultSize { chars }) => limit(
            LimitKind::ResultSize,
            format!(
                "result size limit exceeded: {name} returned {chars} characters, over its {cap}-character limit"
            ),
        ),
        Err(failure) => outcome_of_failure(failure),
    }
}

/// `outcome` without the secrets the host adds to requests, in every form it writes
/// them ([`Scrubber`]): a result in its parsed form (every string and key, so it stays
/// valid JSON whatever the value looks like), an error message as the agent will read
/// it ([`scrub_error`]).
fn scrub(outcome: CallOutcome, values: &Scrubber) -> CallOutcome {
    match outcome {
        CallOutcome::Success(result) => CallOutcome::Success(values.scrub_json(result)),
        CallOutcome::ToolError { message } => CallOutcome::ToolError {
            message: scrub_error(message, values),
        },
        other => other,
    }
}

/// Rounds of cleaning and scrubbing an error message may take to settle.
const SCRUB_ERROR_ROUNDS: usize = 4;

/// A tool's error `message` scrubbed as the agent will read it. The edge cleans an
/// error ([`crate::sanitize::tool_error_message`]: markup stripped, length capped), and
/// stripping `<system>` out of `q5ecr3t<system>+Tok…` would join a value again after
/// the scrubbing. So the message is scrubbed whole (before any cut), then cleaned and
/// scrubbed again until cleaning changes nothing: what the edge makes of it is then
/// the message itself. One that does not settle is withheld.
fn scrub_error(message: String, values: &Scrubber) -> String {
    let mut text = values.scrub_string(message);
    for _ in 0..SCRUB_ERROR_ROUNDS {
        let cleaned = crate::sanitize::tool_error_message(&text);
        if cleaned == text {
            return text;
        }
        text = values.scrub_string(cleaned);
    }
    "the tool's error message is withheld: it kept changing as the host removed secrets and markup from it".to_owned()
}

/// Why `result` (a JSON object, checked) does not fit the tool's `output_schema`;
/// `None` when it fits, when the tool declares none, or when the result is the tool's
/// own error report (whose shape is the error's, not the result's).
fn output_mismatch(tool: &LoadedTool, result: &str) -> Option<String> {
    let validator = tool.output_validator.as_ref()?;
    if CallOutcome::tool_reported_error(result) {
        return None;
    }
    let value: Value = serde_json::from_str(result).ok()?;
    let error = validator.iter_errors(&value).next()?;
    let at = error.instance_path().to_string();
    Some(if at.is_empty() {
        error.to_string()
    } else {
        format!("{at}: {error}")
    })
}

/// What the host turns a call's failure into.
pub(crate) fn outcome_of_failure(failure: CallFailure) -> CallOutcome {
    let kind = match &failure {
        CallFailure::Timeout(_) => LimitKind::Time,
        CallFailure::Memory { .. } => LimitKind::Memory,
        CallFailure::Instances(_) => LimitKind::Instances,
        CallFailure::Fuel(_) => LimitKind::Fuel,
        CallFailure::Output(_) => LimitKind::Output,
        CallFailure::ResultSize { .. } => LimitKind::ResultSize,
        CallFailure::Cancelled => return CallOutcome::Cancelled,
        CallFailure::Trap(_) | CallFailure::Sandbox(_) => {
            return CallOutcome::ToolError {
                message: failure.to_string(),
            };
        }
    };
    limit(kind, failure.to_string())
}

/// Why a tool's result is not one.
#[derive(Debug, PartialEq, Eq)]
enum ResultShape {
    NotJson,
    NotObject(&'static str),
    Depth,
}

/// A result must be a JSON object nested at most [`MAX_RESULT_DEPTH`] deep. The
/// depth is measured on the text before anything is built from it, so a hostile
/// 40,000-deep result costs one linear scan and no recursion.
fn result_shape(result: &str) -> Result<(), ResultShape> {
    if json_depth(result) > MAX_RESULT_DEPTH {
        return Err(ResultShape::Depth);
    }
    // Validated without building a value tree (the result is passed on as text).
    serde_json::from_str::<serde::de::IgnoredAny>(result).map_err(|_| ResultShape::NotJson)?;
    // Valid JSON: its first byte says what it is.
    match result.trim_start().as_bytes().first() {
        Some(b'{') => Ok(()),
        Some(b'[') => Err(ResultShape::NotObject("an array")),
        Some(b'"') => Err(ResultShape::NotObject("a string")),
        Some(b't' | b'f') => Err(ResultShape::NotObject("a boolean")),
        Some(b'n') => Err(ResultShape::NotObject("null")),
        _ => Err(ResultShape::NotObject("a number")),
    }
}

/// The deepest `[`/`{` nesting of JSON text, outside strings. Invalid JSON gets some
/// number; the parser that follows refuses it anyway.
fn json_depth(text: &str) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for b in text.bytes() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
