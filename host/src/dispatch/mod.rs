//! The call pipeline: resolve → parse and coerce arguments → validate against the
//! schema → sandboxed call → check and cap the result. Every failure becomes a JSON
//! `{"error": ...}` string; nothing here panics on agent or guest input.

pub mod coerce;
pub mod sanitize;

use crate::bindings::CallContext;
use crate::component::CallFailure;
use crate::registry::Registry;
use crate::sandbox::{CallSetup, ProgressSink};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Per-call options from the transport.
#[derive(Clone, Default)]
pub struct CallOptions {
    /// Tenant id (`"default"` when empty).
    pub tenant: String,
    /// Agent session id.
    pub session: String,
    /// Progress receiver.
    pub progress: Option<ProgressSink>,
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
    pub fn call(&self, name: &str, args: &str, options: &CallOptions) -> String {
        let Some(entry) = self.entry(name) else {
            return error_json(format!("Unknown tool: {name}"));
        };
        if let Some(reason) = entry.grants.unavailable_reason() {
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
        };
        let cap = entry.grants.limits.result_chars;
        match entry
            .tool
            .handle(&self.runtime, &entry.grants, &args, &ctx, setup)
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
            Err(failure) => sanitize::tool_error_json(&failure.to_string()),
        }
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
