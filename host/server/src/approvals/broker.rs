//! The broker: requests held for the operator console (this node's, or with a cluster
//! any node's) until an answer or the deadline.

use super::ack::{Ack, Acks};
use super::cluster::{self, ClusterApprovals};
use super::console::{BrokerError, PendingApproval, Receipt, SETTLE_WAIT, Settled};
use super::wait::wait;
use hermetic::CancelToken;
use hermetic::approval::{
    Answer, ApprovalRequest, Approver, ApproverError, ApproverKind, Outcome, Verdict,
};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Instant, SystemTime};

/// Pending approvals answered from outside (the HTTP approvals endpoint).
#[derive(Default)]
pub struct ApprovalBroker {
    next: AtomicU64,
    pending: Mutex<BTreeMap<u64, Pending>>,
    /// Which tenants have an allowlist file; `None`: nobody (the embedded default).
    allowlist: Option<AllowlistProbe>,
    /// Answers the broker gave as an approver itself, until the gate acts on them.
    acks: Acks,
    /// The cluster's shared approvals (`[cluster] redis_url`), when there is one.
    cluster: Option<Arc<ClusterApprovals>>,
    /// Added to this node's ids so that no two nodes give one id (random, below 2^53:
    /// ids stay exact in JSON).
    id_base: u64,
}

impl std::fmt::Debug for ApprovalBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalBroker")
            .field("pending", &self.list().len())
            .finish()
    }
}

impl ApprovalBroker {
    /// An empty broker that knows of no allowlist file: every request is listed with
    /// `always_persists: false` until [`Self::with_allowlist`] says otherwise.
    pub fn new() -> Self {
        Self::default()
    }

    /// Tells the broker which tenants' "always" answers are written to an allowlist
    /// file (`persists(tenant)`), so the console can say when "always" is
    /// session-only. [`crate::McpServer::new`] reads it from the terminal's approval
    /// settings.
    pub fn with_allowlist(
        mut self,
        persists: impl Fn(&str) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.allowlist = Some(Box::new(persists));
        self
    }

    /// Shares this broker's questions and answers with the other nodes of a cluster
    /// through the Redis at `url`.
    ///
    /// # Errors
    /// [`crate::store::StoreError`] when the URL does not parse.
    pub fn with_cluster(mut self, url: &str) -> Result<Self, crate::store::StoreError> {
        self.cluster = Some(Arc::new(ClusterApprovals::new(url)?));
        // 33 random bits above a 20-bit counter.
        let seed = <sha2::Sha256 as sha2::Digest>::digest(format!(
            "{}-{:?}-{:?}",
            std::process::id(),
            SystemTime::now(),
            std::thread::current().id()
        ));
        let mut first = [0u8; 8];
        first.copy_from_slice(&seed[..8]);
        let random = u64::from_be_bytes(first) & ((1 << 33) - 1);
        self.id_base = random.max(1) << 20;
        Ok(self)
    }

    /// Every question waiting for an answer — on this node, and with a cluster on
    /// every node — as the console lists them.
    pub async fn list_all(&self) -> Vec<serde_json::Value> {
        let mut all: Vec<serde_json::Value> = self
            .list()
            .iter()
            .filter_map(|p| serde_json::to_value(p).ok())
            .collect();
        if let Some(cluster) = &self.cluster {
            match cluster.list().await {
                Ok(remote) => {
                    let local: std::collections::BTreeSet<u64> =
                        all.iter().filter_map(|v| v["id"].as_u64()).collect();
                    all.extend(
                        remote
                            .into_iter()
                            .filter(|v| v["id"].as_u64().is_some_and(|id| !local.contains(&id))),
                    );
                }
                Err(e) => tracing::warn!("listing the cluster's approvals: {e}"),
            }
        }
        all
    }

    /// The requests waiting for an answer, oldest first.
    pub fn list(&self) -> Vec<PendingApproval> {
        let now = Instant::now();
        let pending = self.pending.lock();
        pending
            .values()
            .map(|p| {
                let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
                let mut view = p.view.clone();
                view.expires_in_ms = ms(p.deadline.saturating_duration_since(now));
                view.age_ms = ms(now.saturating_duration_since(p.raised));
                view
            })
            .collect()
    }

    /// Delivers `answer` to request `id`. The request's call goes on at once; the
    /// [`Receipt`] says when the gate has acted on the answer, which is when the
    /// operator may be told it is taken (the approvals endpoint waits for it).
    ///
    /// # Errors
    /// [`BrokerError::NotFound`] when no such request is waiting.
    pub fn answer(&self, id: u64, answer: Answer) -> Result<Receipt, BrokerError> {
        let pending = self
            .pending
            .lock()
            .remove(&id)
            .ok_or(BrokerError::NotFound(id))?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        // The waiter may have timed out a moment ago: the acknowledgement is then
        // dropped with the message, and the receipt says the answer was not used.
        let _ = pending.answer.try_send((answer, Ack::Local(tx)));
        Ok(Receipt {
            id,
            answer,
            permanent: answer == Answer::Always && pending.view.always_persists,
            settled: rx,
        })
    }

    /// [`Self::answer`], then [`Receipt::settled`] within [`SETTLE_WAIT`]: what the
    /// approvals endpoint answers the operator with.
    ///
    /// # Errors
    /// As [`Self::answer`] and [`Receipt::settled`].
    pub async fn answer_settled(&self, id: u64, answer: Answer) -> Result<Settled, BrokerError> {
        let here = self.pending.lock().contains_key(&id);
        match (&self.cluster, here) {
            (Some(cluster), false) => {
                // Another node's question: the answer goes through the cluster, once.
                let taken = cluster
                    .answer(id, answer)
                    .await
                    .map_err(|e| BrokerError::Store(e.to_string()))?;
                if !taken {
                    return Err(BrokerError::NotFound(id));
                }
                let settled = cluster
                    .settled(id, SETTLE_WAIT)
                    .await
                    .ok_or(BrokerError::Unsettled(id))?;
                let wanted_to_run =
                    matches!(answer, Answer::Once | Answer::Session | Answer::Always);
                if settled.outcome == Outcome::Timeout || (wanted_to_run && !settled.approved) {
                    return Err(BrokerError::NotUsed(id));
                }
                Ok(settled)
            }
            _ => self.answer(id, answer)?.settled(SETTLE_WAIT).await,
        }
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
        self.request_until(request, deadline, None)
    }

    fn settled(&self, request: &ApprovalRequest, verdict: &Verdict) {
        self.acks.settle(request, verdict);
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
    ) -> Result<Answer, ApproverError> {
        self.request_for("", request, deadline, cancel)
    }

    /// [`Self::request_until`] for a call of `tool` (shown to the console). The
    /// operator is told the answer is taken once the gate reports it acted on it
    /// ([`Approver::settled`] of this broker).
    pub fn request_for(
        &self,
        tool: &str,
        request: &ApprovalRequest,
        deadline: Instant,
        cancel: Option<&CancelToken>,
    ) -> Result<Answer, ApproverError> {
        let (answer, ack) = self.ask(tool, request, deadline, cancel)?;
        if let Some(ack) = ack {
            self.acks.hold(request, ack);
        }
        Ok(answer)
    }

    /// Lists `request` for the console and waits for its answer, which comes with
    /// the acknowledgement to send once the gate has acted on it.
    pub(super) fn ask(
        &self,
        tool: &str,
        request: &ApprovalRequest,
        deadline: Instant,
        cancel: Option<&CancelToken>,
    ) -> Result<(Answer, Option<Ack>), ApproverError> {
        let id = self.id_base + self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let (tx, rx) = mpsc::sync_channel(1);
        let has_file = self
            .allowlist
            .as_ref()
            .is_some_and(|persists| persists(&request.key.tenant));
        // The gate's own rule (host/approval flow.rs): without a file, or with a
        // finding that may not be allowed forever, "always" is approved for the
        // session — for a call without one, for the call.
        let sessionless = request.key.session.is_empty();
        let always_note = if !has_file {
            Some(if sessionless {
                "no allowlist_file is configured and this call has no session, so \"always\" approves this call only"
            } else {
                "no allowlist_file is configured, so \"always\" lasts for the session"
            })
        } else if !request.rules.iter().all(|r| r.is_allowlistable()) {
            Some(if sessionless {
                "input.* findings cannot be allowed permanently and this call has no session, so \"always\" approves this call only"
            } else {
                "input.* findings cannot be allowed permanently, so \"always\" lasts for the session"
            })
        } else {
            None
        };
        let view = PendingApproval {
            id,
            tenant: request.key.tenant.clone(),
            session: request.key.session.clone(),
            tool: tool.to_owned(),
            command: request.command.clone(),
            rules: request.rules.iter().map(ToString::to_string).collect(),
            descriptions: request.descriptions.clone(),
            raised: crate::formats::rfc3339(SystemTime::now()),
            age_ms: 0,
            expires_in_ms: 0,
            always_persists: always_note.is_none(),
            always_note,
        };
        if let Some(cluster) = &self.cluster {
            let left = deadline.saturating_duration_since(Instant::now());
            let deadline_ms = cluster::unix_ms(SystemTime::now() + left);
            if let Err(e) = cluster.raise(&view, deadline_ms) {
                // Fail closed: a question no other node's console can see could only
                // time out there; the call is refused now, saying why.
                tracing::warn!("approval {id} refused: {e}");
                return Err(ApproverError::Unreachable(e.to_string()));
            }
        }
        self.pending.lock().insert(
            id,
            Pending {
                view,
                raised: Instant::now(),
                deadline,
                answer: tx,
            },
        );
        let answered = match &self.cluster {
            None => wait(&rx, deadline, cancel).ok(),
            Some(cluster) => wait_in_cluster(cluster, id, &rx, deadline, cancel),
        };
        self.pending.lock().remove(&id);
        if let Some(cluster) = &self.cluster {
            cluster.withdraw(id);
        }
        Ok(match answered {
            Some((answer, ack)) => (answer, Some(ack)),
            None => (Answer::Timeout, None),
        })
    }
}

/// [`wait`] for a question the whole cluster sees: an answer from this node's console
/// (through `rx`), or one given on another node (in the shared store, looked for every
/// [`cluster::POLL`]). A store that stops answering while the call
/// waits leaves this node's console able to answer.
fn wait_in_cluster(
    cluster: &Arc<ClusterApprovals>,
    id: u64,
    rx: &mpsc::Receiver<(Answer, Ack)>,
    deadline: Instant,
    cancel: Option<&CancelToken>,
) -> Option<(Answer, Ack)> {
    let mut warned = false;
    let mut connection = None;
    loop {
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        let slice = deadline.min(now + cluster::POLL);
        match wait(rx, slice, cancel) {
            Ok(answered) => return Some(answered),
            Err(mpsc::RecvTimeoutError::Disconnected) => return None,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if cancel.is_some_and(CancelToken::is_cancelled) {
            return None;
        }
        match cluster.answered(id, &mut connection) {
            Ok(Some(answer)) => return Some((answer, Ack::Remote(id, Arc::clone(cluster)))),
            Ok(None) => {}
            Err(e) if !warned => {
                warned = true;
                tracing::warn!("approval {id}: the cluster's answers cannot be read: {e}");
            }
            Err(_) => {}
        }
    }
}

struct Pending {
    view: PendingApproval,
    raised: Instant,
    deadline: Instant,
    answer: mpsc::SyncSender<(Answer, Ack)>,
}

/// Whether a tenant's "always" answers reach an allowlist file (tenant id → bool).
type AllowlistProbe = Box<dyn Fn(&str) -> bool + Send + Sync>;

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]
mod tests {
    use super::*;
    use crate::approvals::test_support::{TEST_WAIT, request, wait_pending};
    use std::time::Duration;

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
            broker.answer(pending.id, Answer::Once).unwrap_err(),
            BrokerError::NotFound(pending.id)
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
}
