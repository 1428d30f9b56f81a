//! The call pipeline: resolve → parse and coerce arguments → validate against the
//! schema → sandboxed call → check and cap the result. Every failure becomes a JSON
//! `{"error": ...}` string; nothing here panics on agent or guest input.

pub mod coerce;
pub mod sanitize;

use crate::bindings::CallContext;
use crate::component::CallFailure;
use crate::registry::Registry;
use crate::sandbox::{CallSetup, CancelToken, ProgressSink};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Per-call options from the transport.
#[derive(Clone, Default)]
pub struct CallOptions {
    /// Tenant id; empty = the operator itself (no tenant narrowing). The guest sees
    /// `"default"` then.
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
}

static CALL_SEQ: AtomicU64 = AtomicU64::new(0);

fn error_json(message: impl Into<String>) -> String {
    json!({"error": message.into()}).to_string()
}

fn limit_error(limit: &str, message: String) -> String {
    let error = format!(
        "{}{}",
        sanitize::TOOL_ERROR_PREFIX,
        sanitize::tool_error_message(&message)
    );
    json!({"error": error, "limit": limit}).to_string()
}

impl Registry {
    /// Calls a tool with JSON arguments and returns its JSON result, or a JSON
    /// `{"error": ...}` for every kind of failure.
    ///
    /// A tenant sees only the tools its toolsets include; any other name is an unknown
    /// tool to it (so tenants cannot probe each other's tools).
    pub fn call(&self, name: &str, args: &str, options: &CallOptions) -> String {
        let tenant = options.tenant.as_str();
        if let Err(e) = self.check_tenant(tenant) {
            return error_json(e.to_string());
        }
        let (Some(entry), true) = (self.entry(name), self.tenant_sees(tenant, name)) else {
            return error_json(format!("Unknown tool: {name}"));
        };
        let Some(scope) = entry.scope(tenant) else {
            return error_json(format!("Unknown tool: {name}"));
        };
        let grants = &scope.grants;
        if let Some(reason) = grants.unavailable_reason() {
            return error_json(format!("Tool {name} is unavailable: {reason}"));
        }

        let mut value: Value = match serde_json::from_str(args) {
            Ok(v) => v,
            Err(e) => {
                return error_json(format!(
                    "Invalid arguments for {name}: not valid JSON ({e})"
                ));
            }
        };
        let Some(map) = value.as_object_mut() else {
            return error_json(format!(
                "Invalid arguments for {name}: expected a JSON object, got {}",
                kind_of(&value)
            ));
        };
        if let Some(parameters) = entry.tool.schema.get("parameters") {
            coerce::coerce_args(map, parameters);
        }
        if let Some(error) = entry.tool.validator.iter_errors(&value).next() {
            let at = error.instance_path().to_string();
            let field = if at.is_empty() {
                "(arguments)".to_owned()
            } else {
                at
            };
            return error_json(format!("Invalid arguments for {name}: {field}: {error}"));
        }
        let args = value.to_string();

        let seq = CALL_SEQ.fetch_add(1, Ordering::Relaxed);
        let call_id = format!("call_{seq:x}");
        let ctx = CallContext {
            call_id: call_id.clone(),
            tenant: if options.tenant.is_empty() {
                "default".to_owned()
            } else {
                options.tenant.clone()
            },
            session: options.session.clone(),
        };
        let setup = CallSetup {
            call_id,
            progress: options.progress.clone(),
            timeout: None,
            cancel: options.cancel.clone(),
            terminal: grants.terminal.then(|| self.terminal_call(grants, options)),
        };

        let wait = Duration::from_millis(grants.limits.queue_timeout_ms);
        let _tenant_slot = match self.tenant_slots.get(tenant) {
            None => None,
            Some(slots) => match slots.acquire(wait) {
                Some(slot) => Some(slot),
                None => {
                    return limit_error(
                        "concurrency",
                        format!(
                            "concurrency limit exceeded: tenant {tenant} already runs {} calls; waited {} ms for a slot",
                            slots.capacity(),
                            wait.as_millis()
                        ),
                    );
                }
            },
        };
        let Some(_tool_slot) = entry.slots.acquire(wait) else {
            return limit_error(
                "concurrency",
                format!(
                    "concurrency limit exceeded: {name} already runs {} calls; waited {} ms for a slot",
                    entry.slots.capacity(),
                    wait.as_millis()
                ),
            );
        };

        let cap = grants.limits.result_chars;
        match entry
            .tool
            .handle(&self.runtime, grants, &self.secrets, &args, &ctx, setup)
        {
            Ok(Ok(result)) => {
                let chars = result.chars().count();
                if chars > cap {
                    return limit_error(
                        "result_size",
                        format!(
                            "result size limit exceeded: {name} returned {chars} characters, over its {cap}-character limit"
                        ),
                    );
                }
                if serde_json::from_str::<serde::de::IgnoredAny>(&result).is_err() {
                    return sanitize::tool_error_json(&format!(
                        "{name} returned a result that is not valid JSON"
                    ));
                }
                result
            }
            Ok(Err(message)) => sanitize::tool_error_json(&message),
            Err(failure @ CallFailure::Timeout(_)) => limit_error("time", failure.to_string()),
            Err(failure @ CallFailure::Memory { .. }) => limit_error("memory", failure.to_string()),
            Err(failure @ CallFailure::Fuel(_)) => limit_error("fuel", failure.to_string()),
            Err(failure @ CallFailure::Output(_)) => limit_error("output", failure.to_string()),
            Err(failure) => sanitize::tool_error_json(&failure.to_string()),
        }
    }

    /// The terminal for one call of a tool granted it: the caller's tenant, session,
    /// approver and cancel token, the tool's granted env, and its deadline.
    fn terminal_call(
        &self,
        grants: &crate::EffectiveGrants,
        options: &CallOptions,
    ) -> Arc<crate::terminal::TerminalCall> {
        let env = grants
            .env
            .iter()
            .filter_map(|var| Some((var.clone(), self.secrets.env_value(var)?)))
            .collect();
        Arc::new(crate::terminal::TerminalCall {
            host: Arc::clone(&self.terminal),
            tenant: options.tenant.clone(),
            session: options.session.clone(),
            approver: options.approver.clone(),
            cancel: options.cancel.clone(),
            env,
            deadline: Some(
                std::time::Instant::now() + Duration::from_millis(grants.limits.timeout_ms),
            ),
        })
    }

    /// [`Registry::call`] on a blocking worker thread, for async callers.
    pub async fn call_async(
        self: &Arc<Self>,
        name: String,
        args: String,
        options: CallOptions,
    ) -> String {
        let registry = Arc::clone(self);
        match tokio::task::spawn_blocking(move || registry.call(&name, &args, &options)).await {
            Ok(result) => result,
            Err(e) => sanitize::tool_error_json(&format!("host failure: {e}")),
        }
    }
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
