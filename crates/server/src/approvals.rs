//! Approvals over MCP and HTTP: who answers when a call's dangerous command needs a
//! human.
//!
//! - [`ElicitationApprover`] asks the MCP client that made the call, through form
//!   elicitation, when the client declared that capability (and the session's protocol
//!   still allows server-to-client requests).
//! - [`ApprovalBroker`] holds requests for an operator console: `GET /approvals` lists
//!   them and `POST /approvals/{id}` answers one (see [`super::http`]); a request nobody
//!   answers by its deadline is a timeout, which the gate turns into a denial.
//! - [`McpApprover`] is what the MCP handler puts in
//!   [`CallOptions::approver`](hermetic::CallOptions::approver): elicitation first, the
//!   broker when elicitation is not possible, and [`Answer::Unavailable`] (the headless
//!   default: deny) when neither is.
//!
//! All three are deadline-driven [`Approver`]s of kind [`ApproverKind::Async`]: the gate
//! calls them on the call's blocking thread and they wait on a channel.

use hermetic::CancelToken;
use hermetic::approval::{Answer, ApprovalRequest, Approver, ApproverError, ApproverKind};
use rmcp::model::{ElicitRequestParams, ElicitationAction};
use rmcp::{Peer, RoleServer};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Instant, SystemTime};

/// The answers a human can give (the console's and the elicitation form's choices).
pub const CHOICES: [&str; 4] = ["once", "session", "always", "deny"];

/// Parses a human's answer; only the four [`CHOICES`] are accepted.
pub fn parse_choice(text: &str) -> Option<Answer> {
    match text {
        "once" => Some(Answer::Once),
        "session" => Some(Answer::Session),
        "always" => Some(Answer::Always),
        "deny" => Some(Answer::Deny),
        _ => None,
    }
}

/// The message shown to the human: the command and the rules it triggered.
fn message(request: &ApprovalRequest) -> String {
    let mut text = format!(
        "hermetic: a dangerous command needs approval\n\n{}\n",
        request.command
    );
    for (rule, description) in request.rules.iter().zip(&request.descriptions) {
        text.push_str(&format!("\n- {rule}: {description}"));
    }
    text
}

/// Asks the MCP client through form elicitation: a single required `answer` field
/// with the four [`CHOICES`]. Decline and cancel are refusals ([`Answer::Deny`]).
#[derive(Clone)]
pub struct ElicitationApprover {
    peer: Peer<RoleServer>,
    runtime: tokio::runtime::Handle,
    /// The asking call's cancel token: a cancelled call stops waiting.
    cancel: Option<CancelToken>,
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
        // Built from JSON: the rmcp types are non-exhaustive, and this is the wire form
        // the spec documents.
        let params = serde_json::json!({
            "mode": "form",
            "message": message(request),
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "answer": {
                        "type": "string",
                        "title": "Allow this command?",
                        "description": "once: run it this time; session: also allow these rules for the rest of the session; always: allow these rules permanently; deny: do not run it",
                        "enum": CHOICES,
                    }
                },
                "required": ["answer"],
            }
        });
        serde_json::from_value(params).map_err(|e| ApproverError::Other(e.to_string()))
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
        let timeout = deadline.saturating_duration_since(Instant::now());
        let params = Self::params(request)?;
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
            Ok(Ok(result)) => Ok(match result.action {
                ElicitationAction::Accept => tenant_scoped(
                    result
                        .content
                        .as_ref()
                        .and_then(|c| c.get("answer"))
                        .and_then(|a| a.as_str())
                        .and_then(parse_choice)
                        // An accepted form without a valid answer is not consent.
                        .unwrap_or(Answer::Deny),
                    request,
                ),
                // Decline, cancel, and anything a newer protocol adds: a refusal.
                _ => Answer::Deny,
            }),
            Ok(Err(rmcp::ServiceError::Timeout { .. })) => Ok(Answer::Timeout),
            Ok(Err(e)) => Err(ApproverError::Other(format!("elicitation failed: {e}"))),
            Err(_) => {
                task.abort();
                Ok(Answer::Timeout)
            }
        }
    }
}

/// Waits on `rx` until `deadline`, or until `cancel` fires (polled: the approver
/// waits on a blocking thread, and a cancelled call — its client went away, its
/// session was deleted — must not sit here until the deadline). `Err` when nothing
/// came in time.
fn wait<T>(
    rx: &mpsc::Receiver<T>,
    deadline: Instant,
    cancel: Option<&CancelToken>,
) -> Result<T, mpsc::RecvTimeoutError> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some(cancel) = cancel else {
            return rx.recv_timeout(left);
        };
        if cancel.is_cancelled() || left.is_zero() {
            return Err(mpsc::RecvTimeoutError::Timeout);
        }
        match rx.recv_timeout(left.min(CANCEL_POLL)) {
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            other => return other,
        }
    }
}

/// How often a waiting approver looks at its call's cancel token: quick enough that
/// a cancelled call ends at once for its client, rare enough to cost nothing.
const CANCEL_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// A tenant's own client may approve for its session, not forever: "always" writes to
/// the allowlist that every tenant sharing the operator's approval settings reads, so
/// only the operator (the console, or the operator's own sessions) may give it.
fn tenant_scoped(answer: Answer, request: &ApprovalRequest) -> Answer {
    if answer == Answer::Always && !request.key.tenant.is_empty() {
        Answer::Session
    } else {
        answer
    }
}

/// A request waiting in the [`ApprovalBroker`], as the console sees it.
#[derive(Debug, Clone, Serialize)]
pub struct PendingApproval {
    /// Id to answer it with (`POST /approvals/{id}`).
    pub id: u64,
    /// Tenant whose call raised it.
    pub tenant: String,
    /// Session.
    pub session: String,
    /// The command.
    pub command: String,
    /// Rules it triggered.
    pub rules: Vec<String>,
    /// Their descriptions.
    pub descriptions: Vec<&'static str>,
    /// When it was raised (RFC 3339).
    pub raised: String,
    /// Milliseconds left before it times out (and is denied).
    pub expires_in_ms: u64,
}

struct Pending {
    view: PendingApproval,
    deadline: Instant,
    answer: mpsc::SyncSender<Answer>,
}

/// Why the broker could not take an answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BrokerError {
    /// No pending request has that id (answered already, timed out, or never was).
    #[error("no pending approval with id {0}")]
    NotFound(u64),
}

/// Pending approvals answered from outside (the HTTP approvals endpoint).
#[derive(Default)]
pub struct ApprovalBroker {
    next: AtomicU64,
    pending: Mutex<BTreeMap<u64, Pending>>,
}

impl std::fmt::Debug for ApprovalBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalBroker")
            .field("pending", &self.list().len())
            .finish()
    }
}

impl ApprovalBroker {
    /// An empty broker.
    pub fn new() -> Self {
        Self::default()
    }

    /// The requests waiting for an answer, oldest first.
    pub fn list(&self) -> Vec<PendingApproval> {
        let now = Instant::now();
        let pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending
            .values()
            .map(|p| {
                let mut view = p.view.clone();
                view.expires_in_ms =
                    u64::try_from(p.deadline.saturating_duration_since(now).as_millis())
                        .unwrap_or(u64::MAX);
                view
            })
            .collect()
    }

    /// Answers request `id`.
    ///
    /// # Errors
    /// [`BrokerError::NotFound`] when no such request is waiting.
    pub fn answer(&self, id: u64, answer: Answer) -> Result<(), BrokerError> {
        let pending = self
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id)
            .ok_or(BrokerError::NotFound(id))?;
        // The waiter may have timed out a moment ago: then the answer is moot.
        let _ = pending.answer.try_send(answer);
        Ok(())
    }
}

impl Approver for ApprovalBroker {
    fn name(&self) -> &str {
        "console"
    }

    fn kind(&self) -> ApproverKind {
        ApproverKind::Async
    }

    fn request(
        &self,
        request: &ApprovalRequest,
        deadline: Instant,
    ) -> Result<Answer, ApproverError> {
        Ok(self.request_until(request, deadline, None))
    }
}

impl ApprovalBroker {
    /// [`Approver::request`] that also stops waiting (with [`Answer::Timeout`]) when
    /// `cancel` fires.
    pub fn request_until(
        &self,
        request: &ApprovalRequest,
        deadline: Instant,
        cancel: Option<&CancelToken>,
    ) -> Answer {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let (tx, rx) = mpsc::sync_channel(1);
        let view = PendingApproval {
            id,
            tenant: request.key.tenant.clone(),
            session: request.key.session.clone(),
            command: request.command.clone(),
            rules: request.rules.iter().map(ToString::to_string).collect(),
            descriptions: request.descriptions.clone(),
            raised: super::audit::rfc3339(SystemTime::now()),
            expires_in_ms: 0,
        };
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(
                id,
                Pending {
                    view,
                    deadline,
                    answer: tx,
                },
            );
        let answer = wait(&rx, deadline, cancel).unwrap_or(Answer::Timeout);
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        answer
    }
}

/// The approver of one MCP call: elicitation when the client can answer, else the
/// operator console, else nobody ([`Answer::Unavailable`], which the gate denies).
#[derive(Debug, Clone)]
pub struct McpApprover {
    elicitation: Option<ElicitationApprover>,
    broker: Option<Arc<ApprovalBroker>>,
    cancel: Option<CancelToken>,
}

impl McpApprover {
    /// Elicitation through `peer` if its client supports it, then `broker` if any.
    pub fn new(peer: Option<&Peer<RoleServer>>, broker: Option<Arc<ApprovalBroker>>) -> Self {
        Self {
            elicitation: peer.and_then(ElicitationApprover::for_peer),
            broker,
            cancel: None,
        }
    }

    /// Stops waiting for an answer (with [`Answer::Timeout`]) when `cancel` fires:
    /// the asking call's token, so a call cancelled while it waits for a human ends
    /// at once instead of at the approval's deadline.
    pub fn with_cancel(mut self, cancel: CancelToken) -> Self {
        if let Some(elicitation) = &mut self.elicitation {
            elicitation.cancel = Some(cancel.clone());
        }
        self.cancel = Some(cancel);
        self
    }
}

impl Approver for McpApprover {
    fn name(&self) -> &str {
        "mcp"
    }

    fn kind(&self) -> ApproverKind {
        ApproverKind::Async
    }

    fn request(
        &self,
        request: &ApprovalRequest,
        deadline: Instant,
    ) -> Result<Answer, ApproverError> {
        if let Some(elicitation) = &self.elicitation {
            match elicitation.request(request, deadline) {
                Ok(answer) => return Ok(answer),
                // E.g. a 2026-07-28 request, where server-to-client requests are not
                // allowed: the console may still answer in the time left.
                Err(e) => tracing::info!("elicitation unavailable, asking the console: {e}"),
            }
        }
        match &self.broker {
            Some(broker) if Instant::now() < deadline => {
                Ok(broker.request_until(request, deadline, self.cancel.as_ref()))
            }
            Some(_) => Ok(Answer::Timeout),
            None => Ok(Answer::Unavailable),
        }
    }
}

/// How long [`ApprovalBroker`] tests wait at most.
#[cfg(test)]
const TEST_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]
mod tests {
    use super::*;
    use hermetic::approval::{RuleId, SessionKey, Tier};
    use std::time::Duration;

    fn request() -> ApprovalRequest {
        ApprovalRequest::new(
            SessionKey::new("acme", "s1"),
            "rm -rf build",
            Tier::Dangerous,
            vec![RuleId::RmRecursive],
            vec!["rm -rf build".into()],
        )
    }

    #[test]
    fn a_tenants_own_always_covers_its_session_only() {
        assert_eq!(tenant_scoped(Answer::Always, &request()), Answer::Session);
        assert_eq!(tenant_scoped(Answer::Once, &request()), Answer::Once);
        let mut operator = request();
        operator.key = SessionKey::new("", "s1");
        assert_eq!(tenant_scoped(Answer::Always, &operator), Answer::Always);
    }

    fn wait_pending(broker: &ApprovalBroker) -> PendingApproval {
        let start = Instant::now();
        loop {
            if let Some(p) = broker.list().into_iter().next() {
                return p;
            }
            assert!(start.elapsed() < TEST_WAIT, "no request arrived");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_cancelled_call_stops_waiting_for_the_console_at_once() {
        let broker = Arc::new(ApprovalBroker::new());
        let cancel = CancelToken::new();
        let approver = McpApprover::new(None, Some(broker.clone())).with_cancel(cancel.clone());
        let waiter = std::thread::spawn(move || {
            let start = Instant::now();
            let answer = approver
                .request(&request(), Instant::now() + Duration::from_secs(600))
                .unwrap();
            (answer, start.elapsed())
        });
        wait_pending(&broker);
        cancel.cancel();
        let (answer, took) = waiter.join().unwrap();
        // Far below the 600 s deadline: the wait noticed the cancel.
        assert_eq!(answer, Answer::Timeout);
        assert!(took < TEST_WAIT, "{took:?}");
        assert!(broker.list().is_empty());
    }

    #[test]
    fn a_broker_request_waits_for_its_answer_and_then_leaves_the_list() {
        let broker = Arc::new(ApprovalBroker::new());
        let asker = broker.clone();
        let waiter = std::thread::spawn(move || {
            asker
                .request(&request(), Instant::now() + TEST_WAIT)
                .unwrap()
        });
        let pending = wait_pending(&broker);
        assert_eq!(pending.tenant, "acme");
        assert_eq!(pending.rules, ["fs.rm_recursive"]);
        broker.answer(pending.id, Answer::Session).unwrap();
        assert_eq!(waiter.join().unwrap(), Answer::Session);
        assert!(broker.list().is_empty());
        assert_eq!(
            broker.answer(pending.id, Answer::Once),
            Err(BrokerError::NotFound(pending.id))
        );
    }

    #[test]
    fn an_unanswered_broker_request_times_out() {
        let broker = ApprovalBroker::new();
        let answer = broker
            .request(&request(), Instant::now() + Duration::from_millis(20))
            .unwrap();
        assert_eq!(answer, Answer::Timeout);
        assert!(broker.list().is_empty());
    }

    #[test]
    fn the_gate_waits_for_the_console_through_the_mcp_approver() {
        use hermetic::approval::{ApprovalConfig, ApprovalContext, ApprovalGate, Outcome};
        let broker = Arc::new(ApprovalBroker::new());
        let gate = ApprovalGate::new(&ApprovalConfig::default())
            .unwrap()
            .with_approver(Arc::new(McpApprover::new(None, Some(broker.clone()))));
        let checker = std::thread::spawn(move || {
            gate.check(&ApprovalContext::new("acme", "s1"), "rm -rf build")
        });
        let pending = wait_pending(&broker);
        assert_eq!(pending.command, "rm -rf build");
        broker.answer(pending.id, Answer::Deny).unwrap();
        let verdict = checker.join().unwrap();
        assert!(!verdict.approved);
        assert_eq!(verdict.outcome, Outcome::Denied);
    }

    #[test]
    fn with_nobody_to_ask_the_answer_is_unavailable() {
        let approver = McpApprover::new(None, None);
        let answer = approver
            .request(&request(), Instant::now() + TEST_WAIT)
            .unwrap();
        assert_eq!(answer, Answer::Unavailable);
    }

    #[test]
    fn only_the_four_choices_parse() {
        assert_eq!(parse_choice("once"), Some(Answer::Once));
        assert_eq!(parse_choice("always"), Some(Answer::Always));
        assert_eq!(parse_choice("timeout"), None);
        assert_eq!(parse_choice("yes"), None);
    }

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
