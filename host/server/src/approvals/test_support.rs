//! What the approvals tests share: a request, a broker's first pending request, the
//! server's rounds.

use super::{ApprovalBroker, InputRound, PendingApproval, Rounds};
use hermetic::approval::{ApprovalRequest, RuleId, SessionKey, Tier};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long [`ApprovalBroker`] tests wait at most.
pub(super) const TEST_WAIT: Duration = Duration::from_secs(10);

/// A dangerous command of tenant `acme`, session `s1`.
pub(super) fn request() -> ApprovalRequest {
    ApprovalRequest::new(
        SessionKey::new("acme", "s1"),
        "rm -rf build",
        Tier::Dangerous,
        vec![RuleId::RmRecursive],
        vec!["rm -rf build".into()],
    )
}

/// The broker's first pending request, once one arrives.
pub(super) fn wait_pending(broker: &ApprovalBroker) -> PendingApproval {
    let start = Instant::now();
    loop {
        if let Some(p) = broker.list().into_iter().next() {
            return p;
        }
        assert!(start.elapsed() < TEST_WAIT, "no request arrived");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The server's rounds (its key and used nonces).
pub(super) fn nonces() -> Rounds {
    static ROUNDS: std::sync::OnceLock<Rounds> = std::sync::OnceLock::new();
    let seal = ROUNDS.get_or_init(Rounds::process).seal.clone();
    Rounds {
        seal,
        nonces: Arc::new(hermetic::approval::MemoryNonceStore::new()),
    }
}

/// A round of the test call (`acme`/`s1`, `terminal`), sealed and remembered by
/// `nonces`.
pub(super) fn round_in(
    nonces: &Rounds,
    responses: Option<&BTreeMap<String, serde_json::Value>>,
    state: Option<&str>,
) -> InputRound {
    InputRound::new(
        "acme",
        "s1",
        "terminal",
        r#"{"command":"rm -rf build"}"#,
        responses,
        state,
        nonces,
    )
    .unwrap()
}

/// [`round_in`] with a fresh memory of used nonces, under the server's key.
pub(super) fn round(
    responses: Option<&BTreeMap<String, serde_json::Value>>,
    state: Option<&str>,
) -> InputRound {
    round_in(&nonces(), responses, state)
}
