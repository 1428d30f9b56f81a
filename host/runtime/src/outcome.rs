//! How a call ended, as a value. Inside the host a call's end is a [`CallOutcome`];
//! JSON is made only at the edges ([`CallOutcome::to_json`]), so the audit log, the
//! CLI's exit codes and MCP's `isError` read the type — never the English text, and
//! never anything the tool itself wrote (a tool that returns
//! `{"error": "...", "limit": "time"}` has still *succeeded* as far as the host is
//! concerned: see [`CallOutcome::tool_reported_error`]).

use crate::sanitize;
use serde_json::json;

/// Which limit ended a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LimitKind {
    /// The wall-clock deadline.
    Time,
    /// The memory cap.
    Memory,
    /// The sandbox's core instance count (`core_instances`).
    Instances,
    /// The fuel budget.
    Fuel,
    /// stdout/stderr volume.
    Output,
    /// The result's size (characters) or nesting depth.
    ResultSize,
    /// No concurrency slot in time (per tool or per tenant).
    Concurrency,
}

impl LimitKind {
    /// The name used in JSON (`"limit": "time"`) and in the audit log (`limit:time`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Time => "time",
            Self::Memory => "memory",
            Self::Instances => "instances",
            Self::Fuel => "fuel",
            Self::Output => "output",
            Self::ResultSize => "result_size",
            Self::Concurrency => "concurrency",
        }
    }
}

/// How one call ended.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CallOutcome {
    /// The tool returned a result: a JSON object of bounded depth (checked by the
    /// host), as text.
    Success(String),
    /// No tool of that name is visible to the caller (it does not exist, or the
    /// caller's tenant or selection does not include it).
    UnknownTool {
        /// The name asked for.
        name: String,
    },
    /// The tool exists but may not run: its grants or its own `check()` say no.
    Unavailable {
        /// The tool.
        name: String,
        /// Why (the policy decision, or the failed check).
        reason: String,
    },
    /// The caller is not allowed to call at all (e.g. an unknown tenant).
    Denied {
        /// Why.
        reason: String,
    },
    /// The arguments are not JSON, not an object, or fail the tool's schema.
    InvalidArguments {
        /// The tool.
        name: String,
        /// What is wrong, for the agent.
        message: String,
    },
    /// A host limit ended the call.
    Limit {
        /// Which one.
        kind: LimitKind,
        /// The message for the agent (names the limit and its value).
        message: String,
    },
    /// The caller cancelled the call; the instance was discarded.
    Cancelled,
    /// The tool failed: it returned an error, trapped, or returned something that is
    /// not a result (not JSON, not an object). The message is sanitized.
    ToolError {
        /// The (sanitized, capped) message.
        message: String,
    },
}

impl CallOutcome {
    /// Whether the call produced a result (the tool's own `{"error": ...}` included).
    pub fn is_success(&self) -> bool {
        matches!(self, Self::Success(_))
    }

    /// Whether this counts as an error for the caller: every outcome but a success,
    /// and a success whose object carries a non-null `"error"` key (Hermes tools
    /// report their own failures that way).
    pub fn is_error(&self) -> bool {
        match self {
            Self::Success(text) => Self::tool_reported_error(text),
            _ => true,
        }
    }

    /// Whether a successful result is the tool's own error report: an object with a
    /// non-null `"error"` key. What the tool says there is its business; the host never
    /// reads it as a limit, a denial or anything else of its own.
    pub fn tool_reported_error(result: &str) -> bool {
        #[derive(serde::Deserialize)]
        struct Probe {
            #[serde(default)]
            error: Option<serde::de::IgnoredAny>,
        }
        serde_json::from_str::<Probe>(result).is_ok_and(|p| p.error.is_some())
    }

    /// The short name the audit log files this outcome under: `ok`, `tool_error`,
    /// `unknown_tool`, `unavailable`, `denied`, `invalid_arguments`, `limit:KIND`,
    /// `cancelled`, `error`.
    pub fn audit_name(&self) -> String {
        match self {
            Self::Success(text) if Self::tool_reported_error(text) => "tool_error".to_owned(),
            Self::Success(_) => "ok".to_owned(),
            Self::UnknownTool { .. } => "unknown_tool".to_owned(),
            Self::Unavailable { .. } => "unavailable".to_owned(),
            Self::Denied { .. } => "denied".to_owned(),
            Self::InvalidArguments { .. } => "invalid_arguments".to_owned(),
            Self::Limit { kind, .. } => format!("limit:{}", kind.as_str()),
            Self::Cancelled => "cancelled".to_owned(),
            Self::ToolError { .. } => "error".to_owned(),
        }
    }

    /// Whether policy (not the tool) decided: the audit log files these as decisions.
    pub fn is_decision(&self) -> bool {
        matches!(
            self,
            Self::UnknownTool { .. } | Self::Unavailable { .. } | Self::Denied { .. }
        )
    }

    /// The reason behind a decision (for the audit log), if any.
    pub fn decision_reason(&self) -> Option<String> {
        match self {
            Self::Unavailable { .. } | Self::Denied { .. } => Some(self.message()),
            _ => None,
        }
    }

    /// The message an agent reads (`error` of [`CallOutcome::to_json`]); for a success,
    /// the result itself.
    pub fn message(&self) -> String {
        match self {
            Self::Success(text) => text.clone(),
            Self::UnknownTool { name } => format!("Unknown tool: {name}"),
            Self::Unavailable { name, reason } => format!("Tool {name} is unavailable: {reason}"),
            Self::Denied { reason } => reason.clone(),
            Self::InvalidArguments { name, message } => {
                format!("Invalid arguments for {name}: {message}")
            }
            Self::Limit { message, .. } => format!(
                "{}{}",
                sanitize::TOOL_ERROR_PREFIX,
                sanitize::tool_error_message(message)
            ),
            Self::Cancelled => format!(
                "{}cancelled: the caller cancelled the call before it finished",
                sanitize::TOOL_ERROR_PREFIX
            ),
            Self::ToolError { message } => format!(
                "{}{}",
                sanitize::TOOL_ERROR_PREFIX,
                sanitize::tool_error_message(message)
            ),
        }
    }

    /// The JSON the agent gets: the result itself on success, else
    /// `{"error": message}` (with `"limit": KIND` for a limit).
    pub fn to_json(&self) -> String {
        match self {
            Self::Success(text) => text.clone(),
            Self::Limit { kind, .. } => {
                json!({"error": self.message(), "limit": kind.as_str()}).to_string()
            }
            _ => json!({"error": self.message()}).to_string(),
        }
    }
}

impl std::fmt::Display for CallOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_json())
    }
}
