//! Asking the MCP client that made the call through form elicitation, a
//! server-to-client request (the initialize-handshake era).

use super::answers::{answer_of, form};
use super::wait::wait;
use hermetic::CancelToken;
use hermetic::approval::{Answer, ApprovalRequest, Approver, ApproverError, ApproverKind};
use rmcp::model::ElicitRequestParams;
use rmcp::{Peer, RoleServer};
use std::sync::mpsc;
use std::time::Instant;

/// Asks the MCP client through form elicitation (the `form`; its answer means what
/// `answer_of` says), as a server-to-client request: the initialize-handshake era.
/// For 2026-07-28 see [`InputRound`](super::InputRound).
#[derive(Clone)]
pub struct ElicitationApprover {
    peer: Peer<RoleServer>,
    runtime: tokio::runtime::Handle,
    /// The asking call's cancel token: a cancelled call stops waiting.
    pub(super) cancel: Option<CancelToken>,
}

impl std::fmt::Debug for ElicitationApprover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ElicitationApprover")
            .finish_non_exhaustive()
    }
}

impl ElicitationApprover {
    /// An approver for the session of `peer`, when its client declared form
    /// elicitation; `None` otherwise. Must be called inside a Tokio runtime (the
    /// request is sent from it).
    pub fn for_peer(peer: &Peer<RoleServer>) -> Option<Self> {
        use rmcp::service::ElicitationMode;
        if !peer
            .supported_elicitation_modes()
            .contains(&ElicitationMode::Form)
        {
            return None;
        }
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        Some(Self {
            peer: peer.clone(),
            runtime,
            cancel: None,
        })
    }

    fn params(request: &ApprovalRequest) -> Result<ElicitRequestParams, ApproverError> {
        serde_json::from_value(form(request)).map_err(|e| ApproverError::Other(e.to_string()))
    }
}

/// How an elicitation went: the client answered (its answer, possibly unreadable), or
/// the question never got an answer from it at all (it could not be sent, the client
/// returned an error), so someone else may still be asked.
pub(super) enum Elicited {
    Answered(Result<Answer, ApproverError>),
    Failed(ApproverError),
}

impl ElicitationApprover {
    pub(super) fn elicit(&self, request: &ApprovalRequest, deadline: Instant) -> Elicited {
        let timeout = deadline.saturating_duration_since(Instant::now());
        let params = match Self::params(request) {
            Ok(params) => params,
            Err(e) => return Elicited::Failed(e),
        };
        let (tx, rx) = mpsc::sync_channel(1);
        let peer = self.peer.clone();
        // Sent from the runtime; this (blocking) thread only waits, so the deadline
        // holds whatever the client does.
        let task = self.runtime.spawn(async move {
            let result = peer
                .create_elicitation_with_timeout(params, Some(timeout))
                .await;
            let _ = tx.send(result);
        });
        match wait(&rx, deadline, self.cancel.as_ref()) {
            Ok(Ok(result)) => Elicited::Answered(answer_of(&result, request)),
            Ok(Err(rmcp::ServiceError::Timeout { .. })) => Elicited::Answered(Ok(Answer::Timeout)),
            Ok(Err(e)) => {
                Elicited::Failed(ApproverError::Other(format!("elicitation failed: {e}")))
            }
            Err(_) => {
                task.abort();
                Elicited::Answered(Ok(Answer::Timeout))
            }
        }
    }
}

impl Approver for ElicitationApprover {
    fn name(&self) -> &str {
        "mcp-elicitation"
    }

    fn kind(&self) -> ApproverKind {
        ApproverKind::Async
    }

    fn request(
        &self,
        request: &ApprovalRequest,
        deadline: Instant,
    ) -> Result<Answer, ApproverError> {
        match self.elicit(request, deadline) {
            Elicited::Answered(answer) => answer,
            Elicited::Failed(e) => Err(e),
        }
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]
mod tests {
    use super::*;
    use crate::approvals::CHOICES;
    use crate::approvals::test_support::request;

    #[test]
    fn the_elicitation_form_parses_as_rmcp_params() {
        let params = ElicitationApprover::params(&request()).unwrap();
        let wire = serde_json::to_value(&params).unwrap();
        assert_eq!(
            wire["requestedSchema"]["properties"]["answer"]["enum"],
            serde_json::json!(CHOICES)
        );
        assert!(wire["message"].as_str().unwrap().contains("rm -rf build"));
    }
}
