//! The operator console's side of the broker: what it lists, what it is told the gate
//! did with an answer, and why an answer could not be taken.

use hermetic::approval::{Answer, Outcome};
use serde::Serialize;

/// A request waiting in the [`ApprovalBroker`](super::ApprovalBroker), as the console sees it.
#[derive(Debug, Clone, Serialize)]
pub struct PendingApproval {
    /// Id to answer it with (`POST /approvals/{id}`).
    pub id: u64,
    /// Tenant whose call raised it.
    pub tenant: String,
    /// Session ("" for a call without one: then "session" and a session-only
    /// "always" approve this call only).
    pub session: String,
    /// The tool whose call raised it (`terminal`, `process`; empty when the asker did
    /// not say, see [`McpApprover::with_tool`](super::McpApprover::with_tool)).
    pub tool: String,
    /// The command.
    pub command: String,
    /// Rules it triggered.
    pub rules: Vec<String>,
    /// Their descriptions.
    pub descriptions: Vec<&'static str>,
    /// When it was raised (RFC 3339).
    pub raised: String,
    /// Milliseconds since it was raised.
    pub age_ms: u64,
    /// Milliseconds left before it times out (and is denied).
    pub expires_in_ms: u64,
    /// Whether answering "always" allows these rules permanently. False when the
    /// tenant's approval settings have no `allowlist_file` (then "always" lasts for the
    /// session, as the gate says in its verdict — for a call without a session, for
    /// the call) or a rule cannot be allowlisted (`input.*` findings);
    /// [`Self::always_note`] says which.
    pub always_persists: bool,
    /// Why "always" is not permanent, when it is not (for the console's button).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub always_note: Option<&'static str>,
}

/// Longest the approvals endpoint waits for the gate to act on an answer (record it,
/// write and sync the allowlist) before it answers the operator: far longer than a
/// synced write takes, short enough that a stuck file lock is reported.
pub const SETTLE_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Why the broker could not take an answer, or could not confirm it was acted on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BrokerError {
    /// No pending request has that id (answered already, timed out, or never was).
    #[error("no pending approval with id {0}")]
    NotFound(u64),
    /// The request ended before the gate used the answer: its call was cancelled, or
    /// its deadline passed as the answer arrived. Nothing ran because of it.
    #[error("approval {0} ended before the answer was used (its call was cancelled or timed out)")]
    NotUsed(u64),
    /// "always" could not be made permanent (the allowlist write failed); the gate
    /// approved for the session, or for the call, instead.
    #[error("approval {id}: \"always\" was not made permanent: {message}")]
    NotPersisted {
        /// The request.
        id: u64,
        /// The gate's verdict message, saying why.
        message: String,
    },
    /// The gate had not acted on the answer within [`SETTLE_WAIT`].
    #[error("approval {0}: the answer was delivered, but the gate has not acted on it yet")]
    Unsettled(u64),
    /// The cluster's shared store cannot be reached.
    #[error("{0}")]
    Store(String),
}

impl BrokerError {
    /// The HTTP status the approvals endpoint answers with.
    pub fn status(&self) -> ::http::StatusCode {
        match self {
            Self::NotFound(_) => ::http::StatusCode::NOT_FOUND,
            Self::NotUsed(_) => ::http::StatusCode::CONFLICT,
            Self::NotPersisted { .. } => ::http::StatusCode::INTERNAL_SERVER_ERROR,
            Self::Unsettled(_) => ::http::StatusCode::GATEWAY_TIMEOUT,
            Self::Store(_) => ::http::StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

/// What the gate did with an answer: its verdict, as the console is told.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Settled {
    /// How the gate decided (`approved_once`, `approved_always`, `denied`, …).
    pub outcome: Outcome,
    /// Whether the command runs.
    pub approved: bool,
    /// The gate's message to the agent (why an answer was narrowed, say).
    pub message: String,
}

/// An answer delivered to its waiting request; [`Receipt::settled`] waits until the
/// gate has acted on it.
#[derive(Debug)]
pub struct Receipt {
    pub(super) id: u64,
    pub(super) answer: Answer,
    /// "always" was to be permanent (the console said so when it listed the request).
    pub(super) permanent: bool,
    pub(super) settled: tokio::sync::oneshot::Receiver<Settled>,
}

impl Receipt {
    /// Waits (at most `within`) until the gate has acted on the answer — for "always",
    /// until the allowlist file holding the rules is synced to disk — and returns what
    /// it did.
    ///
    /// # Errors
    /// [`BrokerError::NotUsed`] when the request ended first (or the gate found the
    /// answer late), [`BrokerError::NotPersisted`] when "always" could not be made
    /// permanent, [`BrokerError::Unsettled`] when `within` passed.
    pub async fn settled(self, within: std::time::Duration) -> Result<Settled, BrokerError> {
        let settled = match tokio::time::timeout(within, self.settled).await {
            Ok(Ok(settled)) => settled,
            Ok(Err(_)) => return Err(BrokerError::NotUsed(self.id)),
            Err(_) => return Err(BrokerError::Unsettled(self.id)),
        };
        let wanted_to_run = matches!(self.answer, Answer::Once | Answer::Session | Answer::Always);
        if settled.outcome == Outcome::Timeout || (wanted_to_run && !settled.approved) {
            return Err(BrokerError::NotUsed(self.id));
        }
        if self.permanent && settled.outcome != Outcome::ApprovedAlways {
            return Err(BrokerError::NotPersisted {
                id: self.id,
                message: settled.message,
            });
        }
        Ok(settled)
    }
}
