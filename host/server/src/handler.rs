//! The MCP request handler: tools/list, tools/call (with progress and cancellation) and
//! tool-list change subscriptions, over the library API only.

use super::approvals::InputRound;
use super::trace::{CallSpan, TraceParent};
use super::{Shared, Tenant};
use hermetic::{CallOptions, CallOutcome, Declaration};
use hermetic::{CancelToken, Progress, ProgressSink};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ServerCapabilities, ServerConfig, SubscriptionFilter, Tool, ToolAnnotations,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, Peer, RoleServer, ServerHandler};
use serde_json::Value;
use std::sync::Arc;

/// Progress reports buffered per call before further ones are dropped. A guest can
/// report far faster than a client reads; progress is advisory, so losing some under
/// back-pressure is better than unbounded memory or stalling the guest.
const PROGRESS_BUFFER: usize = 64;

/// What clients are told about this server at initialization.
const INSTRUCTIONS: &str = "hermetic runs every tool in a fresh WebAssembly sandbox that gets \
only what the tool declared and the operator granted. A failed call is a tool result with \
isError set and a JSON {\"error\": ...} body; calling a tool that tools/list does not offer \
is a JSON-RPC invalid-params error.";

/// Serves one MCP session (stdio) or the requests of one HTTP session. Cheap to clone.
#[derive(Clone)]
pub struct McpHandler {
    shared: Arc<Shared>,
    /// Session id for transports without their own (stdio).
    session: Option<Arc<str>>,
}

impl std::fmt::Debug for McpHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHandler")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

impl McpHandler {
    pub(crate) fn new(shared: Arc<Shared>, session: Option<Arc<str>>) -> Self {
        Self { shared, session }
    }

    /// Tenant and session for a request: an HTTP request's [`Tenant`] extension (set
    /// from its bearer token by the HTTP front) and `Mcp-Session-Id` header (checked
    /// there to belong to that tenant) win over the server default and the handler's
    /// own id. `None` for an HTTP request without a tenant on a server that requires
    /// tokens: such a request must not fall back to the operator's view.
    fn identity(&self, context: &RequestContext<RoleServer>) -> Option<(Arc<str>, String)> {
        let parts = context.extensions.get::<::http::request::Parts>();
        let tenant = match parts.and_then(|p| p.extensions.get::<Tenant>()) {
            Some(t) => t.0.clone(),
            None if parts.is_some() && self.shared.auth.requires_tokens() => return None,
            None => Arc::from(self.shared.options.tenant.as_str()),
        };
        let session = parts
            .and_then(|p| p.headers.get("mcp-session-id"))
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .or_else(|| self.session.as_deref().map(str::to_owned))
            .unwrap_or_default();
        Some((tenant, session))
    }

    /// tools/call from rmcp: who asks and what the client can receive during the call
    /// come from the request's context.
    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some((tenant, session)) = self.identity(&context) else {
            return Ok(error_result("unauthenticated: this server requires a bearer token").into());
        };
        let site = CallSite::of_request(tenant, session, &request, &context);
        call_tool(&self.shared, request, site).await
    }
}

/// Where a tools/call comes from, as the call needs it: who asks, and what the client
/// can receive while it runs.
pub(crate) struct CallSite {
    /// The caller's tenant.
    pub(crate) tenant: Arc<str>,
    /// Its session ("" for none).
    pub(crate) session: String,
    /// The request's id (a transport cancels the call by it).
    pub(crate) request: rmcp::model::RequestId,
    /// Where to send progress, when the client asked for it.
    pub(crate) progress: Option<(Peer<RoleServer>, ProgressToken)>,
    /// Whether the call may answer with an input round ([`wants_input_round`]).
    pub(crate) round_wanted: bool,
    /// The session's peer, for approvals asked of the client (elicitation); without
    /// one they go to the approval broker only.
    pub(crate) peer: Option<Peer<RoleServer>>,
    /// Fires when the request is cancelled or its session ends (rmcp's token).
    pub(crate) cancelled: Option<tokio_util::sync::CancellationToken>,
    /// The client's trace context (`_meta.traceparent`), if it sent a valid one.
    pub(crate) trace: Option<TraceParent>,
}

impl CallSite {
    /// A call rmcp handed over: everything a client can send with it comes from the
    /// request and its context.
    fn of_request(
        tenant: Arc<str>,
        session: String,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Self {
        Self {
            tenant,
            session,
            request: context.id.clone(),
            progress: context
                .meta
                .get_progress_token()
                .map(|token| (context.peer.clone(), token)),
            round_wanted: wants_input_round(context),
            peer: Some(context.peer.clone()),
            cancelled: Some(context.ct.clone()),
            trace: request
                .meta
                .as_deref()
                .and_then(|m| TraceParent::from_meta(m))
                .or_else(|| TraceParent::from_meta(&context.meta)),
        }
    }

    /// A plain call's site ([`crate::plain`]: stdio's and the HTTP front's own path).
    /// Plain calls carry no `_meta` (the plain path declines them), so they have no
    /// progress token, no input round and no trace context; no peer either, so
    /// approvals go to the broker. `cancelled`: what ends the call besides its
    /// future being dropped (stdio's end of the client).
    pub(crate) fn plain(
        tenant: Arc<str>,
        session: String,
        request: rmcp::model::RequestId,
        cancelled: Option<tokio_util::sync::CancellationToken>,
    ) -> Self {
        Self {
            tenant,
            session,
            request,
            progress: None,
            round_wanted: false,
            peer: None,
            cancelled,
            trace: None,
        }
    }
}

/// tools/call: runs the tool with the caller's tenant and session, forwards its
/// progress when the client asked for it, and cancels it when the request is
/// cancelled, its session ends, or this future is dropped. Audited. Shared by rmcp's
/// handler and the HTTP front's direct path for plain calls.
pub(crate) async fn call_tool(
    shared: &Arc<Shared>,
    request: CallToolRequestParams,
    site: CallSite,
) -> Result<CallToolResponse, McpError> {
    let started = std::time::Instant::now();
    let name = request.name.to_string();
    let CallSite {
        tenant,
        session,
        request: request_id,
        progress,
        round_wanted,
        peer,
        cancelled,
        trace,
    } = site;
    let audit = shared.options.audit.as_deref();
    // The arguments as JSON text only for the audit record and an input round's
    // binding; the call itself takes the parsed object.
    let args = if audit.is_some() || round_wanted {
        match &request.arguments {
            Some(map) => serde_json::to_string(map).unwrap_or_else(|_| "{}".to_owned()),
            None => "{}".to_owned(),
        }
    } else {
        String::new()
    };
    if shared.draining.load(std::sync::atomic::Ordering::SeqCst) {
        let result = "the server is shutting down; retry on another server or later";
        if let Some(audit) = audit {
            audit.record_or_log(&super::audit::Event {
                kind: "decision",
                tenant: &tenant,
                session: &session,
                tool: &name,
                outcome: "shutting_down",
                ..Default::default()
            });
        }
        return Ok(error_result(result).into());
    }
    // What the hooks did, for the audit record (only when there is one to write, and
    // hooks to note).
    let hook_notes = (audit.is_some() && !shared.registry.dispatcher().hooks().is_empty())
        .then(hermetic::hooks::HookNotes::default);
    let report = CallReport {
        shared,
        hook_notes: hook_notes.clone(),
        tenant: &tenant,
        session: &session,
        name: &name,
        args: &args,
        request: &request_id,
        trace,
        started,
        started_at: std::time::SystemTime::now(),
    };
    if !shared.may_call(&name) {
        // Same answer as for a tool that does not exist: a selection never reveals
        // what lies outside it.
        let result = CallOutcome::UnknownTool { name: name.clone() };
        report.finish(false, &result, None);
        return respond(&result, false);
    }
    let (progress, forwarder) = match progress {
        Some((peer, token)) => {
            let (sink, task) = forward_progress(peer, token);
            (Some(sink), Some(task))
        }
        None => (None, None),
    };
    let cancel = CancelOnDrop(CancelToken::new());
    // A call whose future is dropped before it returns (its client went away while a
    // transport awaited it) is cancelled by `cancel`, and audited as cancelled here.
    let mut unfinished = Unfinished {
        report: &report,
        finished: false,
    };
    // Lets the transport cancel this call at once: when the client's stream for it
    // goes away, its session is deleted, or a shutdown's grace ran out.
    let _live = shared
        .live
        .register(&session, request_id.clone(), cancel.0.clone());
    // Who may answer is the operator's choice for the tenant, never the client's.
    let choice = shared
        .registry
        .policy()
        .terminal
        .for_tenant(&tenant)
        .approval
        .approver;
    let round = (round_wanted && choice.asks_client())
        .then(|| input_round(shared, &request, &tenant, &session, &name, &args))
        .flatten();
    let mut approver = super::approvals::McpApprover::new(peer.as_ref(), shared.broker.clone())
        .with_choice(choice)
        .with_cancel(cancel.0.clone())
        .with_tool(&name);
    if let Some(round) = &round {
        approver = approver.with_round(round.clone());
    }
    let mut options = CallOptions::default()
        .with_tenant(tenant.to_string())
        .with_session(session.clone())
        .with_cancel(cancel.0.clone())
        .with_approver(Arc::new(approver));
    if let Some(notes) = hook_notes {
        options = options.with_hook_notes(notes);
    }
    options.progress = progress;
    let call_args = request.arguments.unwrap_or_default();
    let call = shared
        .registry
        .invoke_object_async(name.clone(), call_args, options);
    tokio::pin!(call);
    // `cancelled` fires on notifications/cancelled and when the session ends (the
    // client went away). The guest is interrupted at its next epoch tick and the call
    // returns the "cancelled" error, so no sandbox outlives its request.
    let result = match cancelled {
        Some(ct) => tokio::select! {
            result = &mut call => result,
            () = ct.cancelled() => {
                cancel.0.cancel();
                let result = call.await;
                tracing::info!(tool = %name, "call cancelled by the client: {}", result.to_json());
                result
            }
        },
        None => call.await,
    };
    // The call has returned, so its sink is dropped: the forwarder drains what is
    // buffered and ends, and every progress notification precedes the result.
    if let Some(task) = forwarder
        && let Err(e) = task.await
    {
        tracing::warn!("progress forwarding failed: {e}");
    }
    unfinished.finished = true;
    // A 2026-07-28 call that asked the user: this leg's result (the command did not
    // run) gives way to the question; the client retries with the answer.
    let input_required = round.as_deref().and_then(InputRound::input_required);
    report.finish(
        true,
        &result,
        input_required.is_some().then_some("input_required"),
    );
    match input_required {
        Some(input) => Ok(input.into()),
        None => respond(&result, shared.registry.has_output_schema(&name)),
    }
}

/// Longest tool name an unknown-tool error repeats, in bytes: the name is the
/// agent's, and the error need not carry more of it than the audit log keeps.
const MAX_ERROR_NAME_BYTES: usize = 256;

/// The answer to a tools/call that ended with `result`: a tool result (`isError` for
/// failures; `structuredContent` beside the text when the tool declares an output
/// schema), except for a tool the caller cannot see, which the MCP spec makes a
/// protocol error — invalid params (-32602), naming the tool.
fn respond(result: &CallOutcome, structured: bool) -> Result<CallToolResponse, McpError> {
    if let CallOutcome::UnknownTool { name } = result {
        let mut end = name.len().min(MAX_ERROR_NAME_BYTES);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        let cut = if end < name.len() { "…" } else { "" };
        return Err(McpError::invalid_params(
            format!("Unknown tool: {}{cut}", &name[..end]),
            None,
        ));
    }
    Ok(call_tool_result(result, structured).into())
}

/// Whether a tools/call gets an [`InputRound`]: a 2026-07-28 call whose client
/// declared form elicitation in the request's `_meta`. Not the handshake era (asked by
/// a server-to-client elicitation instead), nor clients that cannot answer.
fn wants_input_round(context: &RequestContext<RoleServer>) -> bool {
    let modern = context
        .protocol_version()
        .is_some_and(|v| !v.has_initialize());
    modern
        && context
            .client_capabilities()
            .and_then(|c| c.elicitation)
            // As rmcp reads a session's capability: neither mode named means form.
            .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// The [`InputRound`] of a tools/call that [`wants_input_round`], bound to its
/// arguments' JSON text; its answers are single-use through the server's nonces.
fn input_round(
    shared: &Shared,
    request: &CallToolRequestParams,
    tenant: &str,
    session: &str,
    name: &str,
    args: &str,
) -> Option<Arc<InputRound>> {
    InputRound::new(
        tenant,
        session,
        name,
        args,
        request.input_responses.as_ref(),
        request.request_state.as_deref(),
        &shared.rounds,
    )
    .map(Arc::new)
}

/// An error tool result with a JSON `{"error": message}` body.
fn error_result(message: &str) -> CallToolResult {
    let error = serde_json::json!({ "error": message });
    CallToolResult::error(vec![ContentBlock::text(error.to_string())])
}

/// One tools/call, as its end is reported: counted in the metrics, recorded as a span,
/// written in the audit log.
struct CallReport<'a> {
    shared: &'a Shared,
    /// What the call's hooks did (refused, rewrote, replaced, failed), when noted.
    hook_notes: Option<hermetic::hooks::HookNotes>,
    tenant: &'a str,
    session: &'a str,
    name: &'a str,
    /// The arguments' JSON text ("" without an audit log or input round).
    args: &'a str,
    request: &'a rmcp::model::RequestId,
    /// The client's trace context (`_meta.traceparent`).
    trace: Option<TraceParent>,
    started: std::time::Instant,
    started_at: std::time::SystemTime,
}

impl CallReport<'_> {
    /// Reports the call's end with `result`; `known` says whether it named a tool the
    /// caller may call, `outcome` overrides the result's own name.
    fn finish(&self, known: bool, result: &CallOutcome, outcome: Option<&str>) {
        let shared = self.shared;
        // A name no tool has stays out of labels and span names, whoever asked for it.
        let known = known && !matches!(result, CallOutcome::UnknownTool { .. });
        let named = || outcome.map_or_else(|| result.audit_name(), str::to_owned);
        if let Some(metrics) = &shared.metrics {
            metrics.call(
                self.tenant,
                self.name,
                known,
                &named(),
                self.started.elapsed().as_secs_f64(),
            );
        }
        let error = shared
            .spans
            .exporting()
            .then(named)
            .filter(|o| !matches!(o.as_str(), "ok" | "input_required"));
        let trace_id = shared.spans.record(&CallSpan {
            tool: known.then_some(self.name),
            parent: self.trace,
            tenant: self.tenant,
            session: self.session,
            request_id: self.request,
            started: self.started_at,
            error: error.as_deref(),
        });
        if let Some(audit) = shared.options.audit.as_deref() {
            self.record(audit, result, outcome, trace_id.as_deref());
        }
    }

    /// Writes the audit record of the call.
    fn record(
        &self,
        audit: &super::audit::AuditLog,
        result: &CallOutcome,
        outcome: Option<&str>,
        trace_id: Option<&str>,
    ) {
        let (tenant, name) = (self.tenant, self.name);
        // The record reads the outcome's type, never the text a tool returned.
        let kind = if result.is_decision() {
            "decision"
        } else {
            "call"
        };
        let outcome = outcome.map_or_else(|| result.audit_name(), str::to_owned);
        let reason = result.decision_reason();
        let effective = (kind == "call")
            .then(|| self.shared.registry.grants_for(name, tenant))
            .flatten();
        let grants = effective.as_ref().map(grants_summary);
        // A terminal call's command, secrets redacted, so its row says what ran (or
        // was refused) next to its approval records.
        let detail = effective
            .filter(|g| g.terminal)
            .and_then(|_| serde_json::from_str::<Value>(self.args).ok())
            .and_then(|a| {
                a.get("command")
                    .and_then(Value::as_str)
                    .map(|c| audit.redact(c).into_owned())
            })
            .map(|command| serde_json::json!({ "command": command }));
        let digest = audit.args_digest(self.args);
        let hooks = self
            .hook_notes
            .as_ref()
            .map(|n| n.lock().clone())
            .filter(|n| !n.is_empty())
            .and_then(|n| serde_json::to_value(n).ok());
        audit.record_or_log(&super::audit::Event {
            kind,
            tenant,
            session: self.session,
            tool: name,
            args_sha256: Some(&digest),
            grants: grants.as_ref(),
            outcome: &outcome,
            reason: reason.as_deref(),
            duration_ms: Some(self.started.elapsed().as_secs_f64() * 1000.0),
            detail: detail.as_ref(),
            trace_id,
            hooks: hooks.as_ref(),
        });
    }
}

/// The grants of a call, for the audit log: what it could touch, not the limits.
fn grants_summary(grants: &hermetic::EffectiveGrants) -> Value {
    serde_json::json!({
        "mounts": grants.mounts.iter()
            .map(|m| serde_json::json!({"name": m.name, "access": m.access}))
            .collect::<Vec<_>>(),
        "env": grants.env,
        "network": grants.network,
        "terminal": grants.terminal,
    })
}

impl ServerHandler for McpHandler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("hermetic", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let shared = self.shared.clone();
        let Some((tenant, _)) = self.identity(&context) else {
            return Err(McpError::invalid_request(
                "unauthenticated: this server requires a bearer token",
                None,
            ));
        };
        // Availability may run a tool's `check()` (a guest call): keep it off the
        // async workers.
        let tools = tokio::task::spawn_blocking(move || {
            let definitions = shared.listed_definitions(&tenant);
            mcp_tools(
                &definitions,
                |name| shared.registry.declaration_for(name, &tenant),
                |name| shared.registry.output_schema_for(name, &tenant),
            )
        })
        .await
        .map_err(|e| McpError::internal_error(format!("listing tools failed: {e}"), None))?;
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let call = self.call(request, context);
        self.shared.calls.track_future(call).await
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // Sessions that began with the initialize handshake predate
        // subscriptions/listen; they get list changes pushed on the session.
        self.shared.add_legacy_peer(context.peer);
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let mut changes = self.shared.changes.subscribe();
        if context.accepted().tools_list_changed != Some(true) {
            context.cancelled().await;
            return Ok(());
        }
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                changed = changes.changed() => {
                    if changed.is_err() {
                        // The server is gone: end the subscription gracefully.
                        return Ok(());
                    }
                    context
                        .sink()
                        .notify_tool_list_changed()
                        .await
                        .map_err(|e| McpError::internal_error(e.to_string(), None))?;
                }
            }
        }
    }
}

/// Audits a tools/call whose future was dropped before the call returned: the call is
/// cancelled then ([`CancelOnDrop`]), and the audit log must still say it happened.
struct Unfinished<'a> {
    report: &'a CallReport<'a>,
    /// Set once the call returned (it is reported with its outcome).
    finished: bool,
}

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.report.finish(true, &CallOutcome::Cancelled, None);
        }
    }
}

/// Cancels the call when the request's future is dropped before the call returned
/// (e.g. its session was torn down): no guest keeps running for a request nobody
/// waits for. Cancelling after the call returned changes nothing.
struct CancelOnDrop(CancelToken);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// MCP tool entries from OpenAI function definitions (`[{"type": "function",
/// "function": {name, description, parameters}}]`), each with a `title` (the schema's
/// own `title`, else one made from the name) and, when `declaration` knows the tool,
/// the [`annotations`] its declared capabilities imply.
fn mcp_tools(
    definitions: &Value,
    declaration: impl Fn(&str) -> Option<Declaration>,
    output_schema: impl Fn(&str) -> Option<Value>,
) -> Vec<Tool> {
    let Some(definitions) = definitions.as_array() else {
        return Vec::new();
    };
    definitions
        .iter()
        .filter_map(|definition| {
            let function = definition.get("function")?;
            let name = function.get("name")?.as_str()?.to_owned();
            let description = function
                .get("description")
                .and_then(Value::as_str)
                .map(|d| std::borrow::Cow::Owned(d.to_owned()));
            // `parameters` is checked to be an object schema when the tool loads.
            let parameters: JsonObject = function.get("parameters")?.as_object()?.clone();
            let title = function
                .get("title")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map_or_else(|| readable_title(&name), str::to_owned);
            let mut tool = Tool::new_with_raw(name.clone(), description, Arc::new(parameters))
                .with_title(title.clone());
            if let Some(declaration) = declaration(&name) {
                tool = tool.with_annotations(annotations(&declaration, title));
            }
            // Checked to be an object schema when the tool loads.
            if let Some(Value::Object(schema)) = output_schema(&name) {
                tool = tool.with_raw_output_schema(Arc::new(schema));
            }
            Some(tool)
        })
        .collect()
}

/// `read_file` → `Read File`: the name's words, capitalised.
fn readable_title(name: &str) -> String {
    let words: Vec<String> = name
        .split(['_', '-', '.', ' '])
        .filter(|w| !w.is_empty())
        .map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|first| first.to_uppercase().chain(chars).collect())
                .unwrap_or_default()
        })
        .collect();
    if words.is_empty() {
        name.to_owned()
    } else {
        words.join(" ")
    }
}

/// MCP tool annotations from what a tool declares it may touch — an upper bound on
/// what it can do, since undeclared capabilities are denied:
/// - **read-only** when it declares no read-write mount, no terminal, no network and
///   no key-value store (it can only read mounts and compute);
/// - **destructive** when it declares a read-write mount, the terminal or a key-value
///   store (it may overwrite or delete);
/// - **open-world** when it declares network destinations, and also with the terminal:
///   a shell command reaches whatever its backend can, often the network.
///
/// Hints only (clients must not trust them for safety): the sandbox, not these,
/// enforces what a call may do.
fn annotations(declaration: &Declaration, title: String) -> ToolAnnotations {
    let capabilities = &declaration.capabilities;
    let writes = capabilities
        .fs
        .iter()
        .any(|fs| fs.access == hermetic::Access::Rw);
    let writes = writes || capabilities.keyvalue.is_some();
    let network = !capabilities.network.is_empty();
    let terminal = capabilities.terminal;
    ToolAnnotations::with_title(title)
        .read_only(!writes && !terminal && !network)
        .destructive(writes || terminal)
        .open_world(network || terminal)
}

/// A call's outcome as an MCP tool result: its JSON as the content, and `isError` for
/// every failure and for a result that reports the tool's own error. With
/// `structured` (the tool declares an output schema, which the host checked the
/// result against), a success also goes out as `structuredContent`; the text block
/// stays for clients that read only text, as the MCP spec advises.
fn call_tool_result(result: &CallOutcome, structured: bool) -> CallToolResult {
    let content = vec![ContentBlock::text(result.to_json())];
    if result.is_error() {
        return CallToolResult::error(content);
    }
    let mut success = CallToolResult::success(content);
    if structured && let CallOutcome::Success(text) = result {
        success.structured_content = serde_json::from_str(text).ok();
    }
    success
}

/// A progress sink for one call and the task that forwards what it receives as
/// `notifications/progress` with the client's token. The task ends when the sink (held
/// by the call) is dropped.
fn forward_progress(
    peer: Peer<RoleServer>,
    token: ProgressToken,
) -> (ProgressSink, tokio::task::JoinHandle<()>) {
    let (sender, mut receiver) = tokio::sync::mpsc::channel::<Progress>(PROGRESS_BUFFER);
    let sink: ProgressSink = Arc::new(move |progress| {
        // Full: dropped (see PROGRESS_BUFFER). Closed: the request is gone.
        let _ = sender.try_send(progress);
    });
    let task = tokio::spawn(async move {
        while let Some(progress) = receiver.recv().await {
            let mut param = ProgressNotificationParam::new(token.clone(), progress.done as f64);
            param.total = progress.total.map(|t| t as f64);
            if !progress.message.is_empty() {
                param.message = Some(progress.message);
            }
            if let Err(e) = peer.notify_progress(param).await {
                tracing::debug!("could not send a progress notification: {e}");
                break;
            }
        }
    });
    (sink, task)
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        reason = "tests"
    )]
    use super::*;
    use serde_json::json;

    #[test]
    fn a_result_with_an_error_key_is_an_error_result() {
        let r = call_tool_result(
            &CallOutcome::Success(r#"{"error": "nope"}"#.to_owned()),
            true,
        );
        assert_eq!(r.is_error, Some(true));
        assert_eq!(
            r.content[0].as_text().map(|t| t.text.as_str()),
            Some(r#"{"error": "nope"}"#)
        );
    }

    #[test]
    fn a_success_of_a_tool_with_an_output_schema_is_structured_too() {
        let ok = CallOutcome::Success(r#"{"count": 3}"#.to_owned());
        let r = call_tool_result(&ok, true);
        assert_eq!(r.structured_content, Some(json!({"count": 3})));
        assert_eq!(
            r.content[0].as_text().map(|t| t.text.as_str()),
            Some(r#"{"count": 3}"#),
            "the text block stays"
        );
        assert_eq!(call_tool_result(&ok, false).structured_content, None);
        let error = CallOutcome::Success(r#"{"error": "nope"}"#.to_owned());
        assert_eq!(call_tool_result(&error, true).structured_content, None);
    }

    #[test]
    fn other_results_are_successes() {
        for text in [r#"{"echo": "x"}"#, r#"{"errors": 1}"#, r#"{"error": null}"#] {
            let r = call_tool_result(&CallOutcome::Success(text.to_owned()), false);
            assert_eq!(r.is_error, Some(false), "{text}");
        }
    }

    #[test]
    fn an_unknown_tool_is_an_invalid_params_protocol_error_naming_it() {
        let Err(error) = respond(
            &CallOutcome::UnknownTool {
                name: "nope".to_owned(),
            },
            false,
        ) else {
            panic!("an unknown tool got a tool result");
        };
        assert_eq!(error.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        assert_eq!(error.code.0, -32602);
        assert_eq!(error.message, "Unknown tool: nope");
        // An agent's huge name is cut, on a character boundary.
        let Err(error) = respond(
            &CallOutcome::UnknownTool {
                name: "é".repeat(10_000),
            },
            false,
        ) else {
            panic!("an unknown tool got a tool result");
        };
        assert!(error.message.len() < 300, "{}", error.message.len());
        assert!(error.message.ends_with('…'));
    }

    #[test]
    fn every_host_failure_is_an_error_result() {
        // Every outcome but Success and UnknownTool (a protocol error, above), each
        // with the JSON error text the agent reads.
        let failures = [
            CallOutcome::Unavailable {
                name: "t".to_owned(),
                reason: "requires env K".to_owned(),
            },
            CallOutcome::Denied {
                reason: "Unknown tenant: x".to_owned(),
            },
            CallOutcome::InvalidArguments {
                name: "t".to_owned(),
                message: "/path: missing".to_owned(),
            },
            CallOutcome::Limit {
                kind: hermetic::LimitKind::Time,
                message: "time limit exceeded".to_owned(),
            },
            CallOutcome::Cancelled,
            CallOutcome::ToolError {
                message: "trap".to_owned(),
            },
        ];
        for outcome in failures {
            let r = call_tool_result(&outcome, true);
            assert_eq!(r.is_error, Some(true), "{outcome:?}");
            let text = r.content[0].as_text().map(|t| t.text.as_str()).unwrap();
            let json: Value = serde_json::from_str(text).unwrap();
            assert!(
                json["error"].as_str().is_some_and(|e| !e.is_empty()),
                "{outcome:?}: {text}"
            );
        }
    }

    #[test]
    fn definitions_become_mcp_tools_with_the_parameters_as_input_schema() {
        let definitions = json!([{"type": "function", "function": {
            "name": "echo", "description": "Echo", "parameters": {"type": "object", "properties": {}}
        }}]);
        let tools = mcp_tools(&definitions, |_| None, |_| None);
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0].name, "echo");
        assert_eq!(tools[0].description.as_deref(), Some("Echo"));
        assert_eq!(tools[0].title.as_deref(), Some("Echo"));
        assert_eq!(tools[0].annotations, None);
        assert_eq!(
            Value::Object((*tools[0].input_schema).clone()),
            json!({"type": "object", "properties": {}})
        );
    }

    fn declared(capabilities: &str) -> Declaration {
        let text = format!("name = \"t\"\ntoolset = \"x\"\n[capabilities]\n{capabilities}");
        Declaration::parse(text.as_bytes()).unwrap()
    }

    #[test]
    fn annotations_follow_the_declared_capabilities() {
        // (capabilities, readOnly, destructive, openWorld, why)
        let rows = [
            ("", true, false, false, "declares nothing: can only compute"),
            (
                r#"fs = [{ mount = "w", access = "ro" }]"#,
                true,
                false,
                false,
                "reads a mount",
            ),
            (
                r#"fs = [{ mount = "w", access = "rw" }]"#,
                false,
                true,
                false,
                "may overwrite files",
            ),
            (
                r#"network = ["https://a.example"]"#,
                false,
                false,
                true,
                "talks to the network",
            ),
            (
                "terminal = true",
                false,
                true,
                true,
                "a shell command may do anything its backend allows",
            ),
            (
                r#"env = ["KEY"]"#,
                true,
                false,
                false,
                "an env var is not an effect",
            ),
        ];
        for (capabilities, read_only, destructive, open_world, why) in rows {
            let a = annotations(&declared(capabilities), "T".to_owned());
            assert_eq!(
                (a.read_only_hint, a.destructive_hint, a.open_world_hint),
                (Some(read_only), Some(destructive), Some(open_world)),
                "{why}"
            );
            assert_eq!(a.title.as_deref(), Some("T"));
        }
    }

    #[test]
    fn a_title_is_the_schema_s_own_or_made_from_the_name() {
        let definitions = json!([
            {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}},
            {"type": "function", "function": {"name": "x", "title": "Fetch a page",
                                              "parameters": {"type": "object"}}},
            {"type": "function", "function": {"name": "__", "parameters": {"type": "object"}}},
        ]);
        let tools = mcp_tools(&definitions, |_| Some(declared("")), |_| None);
        let titles: Vec<Option<&str>> = tools.iter().map(|t| t.title.as_deref()).collect();
        assert_eq!(
            titles,
            [Some("Read File"), Some("Fetch a page"), Some("__")]
        );
        assert_eq!(
            tools[1].annotations.as_ref().unwrap().title.as_deref(),
            Some("Fetch a page")
        );
    }
}
