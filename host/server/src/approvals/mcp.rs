//! The approver of one MCP call: whom the tenant's setting allows, in order.

use super::ack::Acks;
use super::broker::ApprovalBroker;
use super::elicitation::{ElicitationApprover, Elicited};
use super::round::InputRound;
use hermetic::CancelToken;
use hermetic::approval::{
    Answer, ApprovalRequest, Approver, ApproverChoice, ApproverError, ApproverKind, Verdict,
};
use parking_lot::Mutex;
use rmcp::{Peer, RoleServer};
use std::sync::Arc;
use std::time::Instant;

/// The approver of one MCP call, among those the tenant's `approver` setting allows
/// ([`ApproverChoice`]): the client when it can answer (an [`InputRound`] in the
/// 2026-07-28 era, elicitation before it), else the operator console, else nobody
/// ([`Answer::Unavailable`], which the gate denies).
#[derive(Debug, Clone)]
pub struct McpApprover {
    elicitation: Option<ElicitationApprover>,
    /// A 2026-07-28 call whose client can answer: ask through `input_required`.
    round: Option<Arc<InputRound>>,
    broker: Option<Arc<ApprovalBroker>>,
    cancel: Option<CancelToken>,
    /// The tool whose call asks (for the console).
    tool: String,
    /// Who may be asked.
    choice: ApproverChoice,
    /// The console's answers, until the gate acts on them.
    acks: Arc<Acks>,
    /// Who gave the last answer: `client` or `console`.
    answerer: Arc<Mutex<Option<&'static str>>>,
}

impl McpApprover {
    /// Elicitation through `peer` if its client supports it, then `broker` if any
    /// (the default choice, [`ApproverChoice::ClientOrConsole`]).
    pub fn new(peer: Option<&Peer<RoleServer>>, broker: Option<Arc<ApprovalBroker>>) -> Self {
        Self {
            elicitation: peer.and_then(ElicitationApprover::for_peer),
            round: None,
            broker,
            cancel: None,
            tool: String::new(),
            choice: ApproverChoice::default(),
            acks: Arc::default(),
            answerer: Arc::default(),
        }
    }

    /// `answer`, remembering that `by` gave it.
    fn answered(
        &self,
        by: &'static str,
        answer: Result<Answer, ApproverError>,
    ) -> Result<Answer, ApproverError> {
        *self.answerer.lock() = Some(by);
        answer
    }

    /// Asks only whom `choice` allows: the operator's setting for the calling tenant
    /// (`[terminal.approval] approver`). A client it leaves out is never asked, the
    /// console it leaves out never lists the request.
    pub fn with_choice(mut self, choice: ApproverChoice) -> Self {
        self.choice = choice;
        self
    }

    /// Names the tool whose call asks, so the console can show it.
    pub fn with_tool(mut self, tool: &str) -> Self {
        tool.clone_into(&mut self.tool);
        self
    }

    /// Asks through `round` (a 2026-07-28 call from a client that declared form
    /// elicitation) before anyone else.
    pub fn with_round(mut self, round: Arc<InputRound>) -> Self {
        self.round = Some(round);
        self
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
    /// Who may answer: the tenant's `approver` setting.
    fn name(&self) -> &str {
        self.choice.as_str()
    }

    fn kind(&self) -> ApproverKind {
        ApproverKind::Async
    }

    fn request(
        &self,
        request: &ApprovalRequest,
        deadline: Instant,
    ) -> Result<Answer, ApproverError> {
        if self.choice.asks_client() {
            if let Some(round) = &self.round {
                return self.answered("client", round.answer_or_ask(request, deadline));
            }
            if let Some(elicitation) = &self.elicitation {
                match elicitation.elicit(request, deadline) {
                    Elicited::Answered(answer) => return self.answered("client", answer),
                    Elicited::Failed(e) if self.choice.asks_console() => {
                        // The client could not take the question: the console may
                        // still answer in the time left.
                        tracing::info!("elicitation unavailable, asking the console: {e}");
                    }
                    Elicited::Failed(e) => return Err(e),
                }
            }
        }
        match &self.broker {
            Some(broker) if self.choice.asks_console() && Instant::now() < deadline => {
                let (answer, ack) =
                    broker.ask(&self.tool, request, deadline, self.cancel.as_ref())?;
                if let Some(ack) = ack {
                    self.acks.hold(request, ack);
                }
                self.answered("console", Ok(answer))
            }
            Some(_) if self.choice.asks_console() => Ok(Answer::Timeout),
            _ => Ok(Answer::Unavailable),
        }
    }

    fn holds_answer(&self, request: &ApprovalRequest) -> bool {
        self.choice.asks_client()
            && self
                .round
                .as_ref()
                .is_some_and(|round| round.holds(request))
    }

    fn answered_by(&self, _request: &ApprovalRequest) -> String {
        (*self.answerer.lock()).unwrap_or("nobody").to_owned()
    }

    fn settled(&self, request: &ApprovalRequest, verdict: &Verdict) {
        self.acks.settle(request, verdict);
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
    use crate::approvals::BrokerError;
    use crate::approvals::test_support::{TEST_WAIT, request, round, wait_pending};
    use hermetic::approval::Outcome;
    use std::sync::mpsc;
    use std::time::Duration;

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
    fn the_approver_setting_decides_who_is_asked() {
        let broker = Arc::new(ApprovalBroker::new());
        let new_round = || Arc::new(round(None, None));
        let deadline = Instant::now() + std::time::Duration::from_millis(50);
        // Client only: its round asks; the console never lists the request.
        let client = McpApprover::new(None, Some(broker.clone()))
            .with_round(new_round())
            .with_choice(ApproverChoice::Client);
        assert_eq!(
            client.request(&request(), deadline).unwrap(),
            Answer::Deferred
        );
        // Client only, and the client cannot be asked: nobody, not the console.
        let client =
            McpApprover::new(None, Some(broker.clone())).with_choice(ApproverChoice::Client);
        assert_eq!(
            client.request(&request(), deadline).unwrap(),
            Answer::Unavailable
        );
        assert!(broker.list().is_empty());
        // Console only: the client's round is never used; the console is asked.
        let console_round = new_round();
        let console = McpApprover::new(None, Some(broker.clone()))
            .with_round(console_round.clone())
            .with_choice(ApproverChoice::Console);
        let waiter =
            std::thread::spawn(move || console.request(&request(), Instant::now() + TEST_WAIT));
        let pending = wait_pending(&broker);
        broker.answer(pending.id, Answer::Deny).unwrap();
        assert_eq!(waiter.join().unwrap().unwrap(), Answer::Deny);
        assert!(
            console_round.input_required().is_none(),
            "the client was asked"
        );
        // Console only, without a console: nobody.
        let nobody = McpApprover::new(None, None).with_choice(ApproverChoice::Console);
        assert_eq!(
            nobody.request(&request(), deadline).unwrap(),
            Answer::Unavailable
        );
    }

    /// An observer that holds the gate after its answer until released.
    struct Hold(Mutex<mpsc::Receiver<()>>);
    impl hermetic::approval::ApprovalObserver for Hold {
        fn after_answer(&self, _: &ApprovalRequest, _: &Verdict) {
            let _ = self.0.lock().recv_timeout(TEST_WAIT);
        }
    }

    #[tokio::test]
    async fn the_console_is_told_an_answer_is_taken_once_the_gate_acted_on_it() {
        use hermetic::approval::{AllowlistFile, ApprovalConfig, ApprovalContext, ApprovalGate};
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("allow.json");
        let config = ApprovalConfig {
            allowlist_file: Some(file.clone()),
            ..ApprovalConfig::default()
        };
        let broker = Arc::new(ApprovalBroker::new().with_allowlist(|_| true));
        let (release, held) = mpsc::channel();
        let gate = ApprovalGate::new(&config)
            .unwrap()
            .with_approver(Arc::new(McpApprover::new(None, Some(broker.clone()))))
            .with_observer(Arc::new(Hold(Mutex::new(held))));
        let checker = std::thread::spawn(move || {
            gate.check(&ApprovalContext::new("acme", "s1"), "git reset --hard")
        });
        let pending = tokio::task::spawn_blocking({
            let broker = broker.clone();
            move || wait_pending(&broker)
        })
        .await
        .unwrap();
        assert!(pending.always_persists);
        let receipt = broker.answer(pending.id, Answer::Always).unwrap();
        // The gate has the answer but has not finished with it: no acknowledgement.
        let (tx, rx) = tokio::sync::oneshot::channel();
        let waiting = tokio::spawn(async move {
            let settled = receipt.settled(TEST_WAIT).await;
            let _ = tx.send(());
            settled
        });
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert!(!waiting.is_finished());
        release.send(()).unwrap();
        rx.await.unwrap();
        let settled = waiting.await.unwrap().unwrap();
        assert_eq!(settled.outcome, Outcome::ApprovedAlways);
        // Acknowledged, so on disk.
        assert_eq!(
            AllowlistFile::new(&file).load().unwrap(),
            vec![hermetic::approval::RuleId::GitDestructive]
        );
        assert!(checker.join().unwrap().approved);
    }

    #[tokio::test]
    async fn an_answer_whose_call_ended_first_is_not_acknowledged() {
        let broker = Arc::new(ApprovalBroker::new());
        let cancel = CancelToken::new();
        let approver = McpApprover::new(None, Some(broker.clone())).with_cancel(cancel.clone());
        let waiter = std::thread::spawn(move || {
            let answer = approver.request(&request(), Instant::now() + TEST_WAIT);
            // The call ends (its approver dropped) without the gate acting on it.
            drop(approver);
            answer
        });
        let pending = tokio::task::spawn_blocking({
            let broker = broker.clone();
            move || wait_pending(&broker)
        })
        .await
        .unwrap();
        let receipt = broker.answer(pending.id, Answer::Once).unwrap();
        waiter.join().unwrap().unwrap();
        assert_eq!(
            receipt.settled(TEST_WAIT).await.unwrap_err(),
            BrokerError::NotUsed(pending.id)
        );
    }
}
