//! Acknowledgements: the console that gave an answer is told what the gate did with
//! it, once the gate has acted ([`Approver::settled`]).
//!
//! [`Approver::settled`]: hermetic::approval::Approver::settled

use super::answers::approval_key;
use super::cluster::ClusterApprovals;
use super::console::Settled;
use hermetic::approval::{ApprovalRequest, SessionKey, Verdict};
use parking_lot::Mutex;
use std::sync::Arc;

/// The gate's side of an answer's acknowledgement: sent once the gate has acted on
/// it ([`Approver::settled`]); dropped unsent when the call ends first.
#[derive(Debug)]
pub(super) enum Ack {
    /// For this node's console.
    Local(tokio::sync::oneshot::Sender<Settled>),
    /// For the console of another node of the cluster, which answered question `id`.
    Remote(u64, Arc<ClusterApprovals>),
}

impl Ack {
    fn is_closed(&self) -> bool {
        match self {
            Ack::Local(tx) => tx.is_closed(),
            Ack::Remote(..) => false,
        }
    }

    fn send(self, settled: Settled) {
        match self {
            Ack::Local(tx) => {
                let _ = tx.send(settled);
            }
            Ack::Remote(id, cluster) => cluster.settle(id, &settled),
        }
    }
}

/// Acknowledgements waiting for the gate, by the question they answer. Both the
/// broker (used as an approver itself) and each call's [`McpApprover`] hold theirs.
#[derive(Debug, Default)]
pub(super) struct Acks(Mutex<Vec<(SessionKey, String, Ack)>>);

impl Acks {
    pub(super) fn hold(&self, request: &ApprovalRequest, ack: Ack) {
        let mut held = self.0.lock();
        // Whoever waited for these has given up: do not keep them.
        held.retain(|(_, _, a)| !a.is_closed());
        held.push((request.key.clone(), approval_key(request), ack));
    }

    pub(super) fn settle(&self, request: &ApprovalRequest, verdict: &Verdict) {
        let key = approval_key(request);
        let ack = {
            let mut held = self.0.lock();
            held.iter()
                .position(|(k, q, _)| *k == request.key && *q == key)
                .map(|at| held.remove(at).2)
        };
        if let Some(ack) = ack {
            ack.send(Settled {
                outcome: verdict.outcome,
                approved: verdict.approved,
                message: verdict.message.clone(),
            });
        }
    }
}
