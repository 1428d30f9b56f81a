//! The 2026-07-28 way of asking: a call ends with `input_required` and its retry
//! carries the answers, sealed so that a client answers only what it was asked, once.

use super::answers::{answer_of, approval_key, form};
use super::seal::RoundSeal;
use crate::formats::hex;
use hermetic::approval::{Answer, ApprovalRequest, ApproverError, NonceStore};
use parking_lot::Mutex;
use rmcp::model::{ElicitResult, InputRequest, InputRequiredResult};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

/// One tools/call's questions in the 2026-07-28 way of asking (SEP-2322, multi
/// round-trip requests): that protocol forbids server-to-client requests, so instead
/// of waiting on an elicitation the call ends with an `input_required` result
/// carrying the `form`, and the client retries the same call with the user's
/// answer in `inputResponses` (rmcp 3.11 has the types and lets such a result reach
/// 2026-07-28 peers only; the round itself is ours).
///
/// The first leg does not run the command ([`Answer::Deferred`]); the retry runs the
/// tool again and each question's answer is looked up by its `approval_key`. So a
/// tool's work before its dangerous command happens once per leg — for the terminal
/// tool, nothing. The server keeps no state between legs but used nonces:
/// `requestState` carries the questions asked, a fresh nonce, their deadline (the
/// approval's: a later answer is no answer, as in the other era) and an HMAC binding
/// them to this tenant, session, tool and arguments under the server's [`Rounds`]
/// key, so a client cannot answer a question it was not asked.
///
/// **Single use.** The answers of one `requestState` approve one retry: the first
/// retry that uses them consumes its nonce in the [`NonceStore`], which remembers it
/// until the deadline; a second retry with the same state and answers is refused
/// ([`ApproverError::AnswerUsed`]) instead of running the command again.
///
/// **One node or many.** A node alone seals with its own random key and writes the
/// deadline on its monotonic clock, which an operator or NTP cannot step; neither
/// survives a restart, so a state from before one does not verify: the call is simply
/// asked again. Nodes of a cluster with `[cluster] state_key` seal with a key derived
/// from that shared secret, on the wall clock, and keep used nonces in Redis: the
/// retry may reach any node, and is honoured once across all of them (the seal:
/// `approvals/seal.rs`).
pub struct InputRound {
    binding: Vec<u8>,
    seal: Arc<RoundSeal>,
    /// Verified answers from the retry, by question key.
    answers: BTreeMap<String, serde_json::Value>,
    /// The retry came after the questions' deadline.
    expired: bool,
    /// The retried state's nonce and how long it must be remembered (until the
    /// deadline).
    nonce: Option<(String, std::time::Duration)>,
    nonces: Arc<dyn NonceStore>,
    /// Whether this round's answers may be used: decided by the first question that
    /// reads one (a retry answering two questions consumes its nonce once).
    fresh: Mutex<Option<bool>>,
    asked: Mutex<Asked>,
}

impl std::fmt::Debug for InputRound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InputRound")
            .field("answers", &self.answers.len())
            .field("expired", &self.expired)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct Asked {
    forms: BTreeMap<String, serde_json::Value>,
    /// The earliest deadline of the questions asked.
    deadline: Option<Instant>,
}

/// How a server seals 2026-07-28 approval rounds and remembers their used answers.
#[derive(Clone)]
pub struct Rounds {
    pub(crate) seal: Option<Arc<RoundSeal>>,
    pub(crate) nonces: Arc<dyn NonceStore>,
}

impl std::fmt::Debug for Rounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rounds")
            .field("seal", &self.seal)
            .finish_non_exhaustive()
    }
}

impl Rounds {
    /// This process's own rounds: a random key, used nonces in memory.
    pub fn process() -> Self {
        Self {
            seal: RoundSeal::process().map(Arc::new),
            nonces: Arc::new(hermetic::approval::MemoryNonceStore::new()),
        }
    }

    /// Rounds any node holding `secret` opens, with used nonces in `nonces` (shared by
    /// the nodes).
    pub fn shared(secret: &str, nonces: Arc<dyn NonceStore>) -> Self {
        Self {
            seal: Some(Arc::new(RoundSeal::shared(secret))),
            nonces,
        }
    }
}

/// What a verified `requestState` says.
struct Opened<'s> {
    nonce: &'s str,
    deadline: Option<Instant>,
    keys: Vec<&'s str>,
}

impl InputRound {
    /// The round of a call by `tenant`/`session` of `tool` with `arguments` (its JSON
    /// text), given what the client sent back, if this is a retry; `rounds` seals it
    /// and remembers which answers were used. `None` when the server has no key to
    /// seal the round with (the OS random source failed).
    pub fn new(
        tenant: &str,
        session: &str,
        tool: &str,
        arguments: &str,
        responses: Option<&BTreeMap<String, serde_json::Value>>,
        state: Option<&str>,
        rounds: &Rounds,
    ) -> Option<Self> {
        let seal = Arc::clone(rounds.seal.as_ref()?);
        let mut binding = Vec::new();
        for part in [tenant, session, tool, arguments] {
            binding.extend_from_slice(part.as_bytes());
            binding.push(0);
        }
        let mut round = Self {
            binding,
            seal,
            answers: BTreeMap::new(),
            expired: false,
            nonce: None,
            nonces: Arc::clone(&rounds.nonces),
            fresh: Mutex::new(None),
            asked: Mutex::new(Asked::default()),
        };
        if let (Some(responses), Some(state)) = (responses, state)
            && let Some(opened) = round.open(state)
        {
            let now = Instant::now();
            match opened.deadline {
                Some(deadline) if now <= deadline => {
                    round.nonce = Some((opened.nonce.to_owned(), deadline - now));
                }
                _ => round.expired = true,
            }
            for key in opened.keys {
                if let Some(response) = responses.get(key) {
                    round.answers.insert(key.to_owned(), response.clone());
                }
            }
        }
        Some(round)
    }

    /// The answer to `request` from the retry, or [`Answer::Deferred`] after noting
    /// the question for [`Self::input_required`].
    pub(super) fn answer_or_ask(
        &self,
        request: &ApprovalRequest,
        deadline: Instant,
    ) -> Result<Answer, ApproverError> {
        let key = approval_key(request);
        if let Some(response) = self.answers.get(&key) {
            if self.expired {
                return Ok(Answer::Timeout);
            }
            let result: ElicitResult = serde_json::from_value(response.clone()).map_err(|e| {
                ApproverError::Other(format!(
                    "the client's answer is not an elicitation result: {e}"
                ))
            })?;
            if !self.consume() {
                tracing::info!("a retried call's requestState was used before; refusing it");
                return Err(ApproverError::AnswerUsed);
            }
            // A "session" answer on a call without a session counts for this call
            // only; the gate decides that for every approver (host/approval flow.rs).
            return answer_of(&result, request);
        }
        let mut asked = self.asked.lock();
        asked.forms.insert(key, form(request));
        asked.deadline = Some(asked.deadline.map_or(deadline, |d| d.min(deadline)));
        Ok(Answer::Deferred)
    }

    /// Whether the retried call carries an answer to `request`.
    pub(super) fn holds(&self, request: &ApprovalRequest) -> bool {
        self.answers.contains_key(&approval_key(request))
    }

    /// Consumes the retried state's nonce, once per round: true when its answers may
    /// be used. A store that cannot answer counts as "used" (refused, never honoured
    /// twice).
    fn consume(&self) -> bool {
        let mut fresh = self.fresh.lock();
        *fresh.get_or_insert_with(|| match &self.nonce {
            Some((nonce, ttl)) => self.nonces.consume(nonce, *ttl).unwrap_or_else(|e| {
                tracing::warn!("the nonce store failed; refusing the answer: {e}");
                false
            }),
            None => false,
        })
    }

    /// The `input_required` result to end the call with, when it asked anything.
    pub fn input_required(&self) -> Option<InputRequiredResult> {
        let asked = self.asked.lock();
        let deadline = asked.deadline?;
        let mut requests = BTreeMap::new();
        for (key, params) in &asked.forms {
            let request = serde_json::json!({"method": "elicitation/create", "params": params});
            match serde_json::from_value::<InputRequest>(request) {
                Ok(request) => {
                    requests.insert(key.clone(), request);
                }
                Err(e) => tracing::warn!("an approval form is not an input request: {e}"),
            }
        }
        let keys: Vec<&str> = asked.forms.keys().map(String::as_str).collect();
        let state = self.seal(deadline, &keys)?;
        Some(InputRequiredResult::new(Some(requests), Some(state)))
    }

    /// `VERSION.NONCE.DEADLINE_MS.KEY,KEY.TAG`: the seal's version (`v2`: this
    /// process's key and monotonic clock; `v3`: the cluster's key and the wall clock),
    /// a fresh nonce, the deadline in milliseconds, the questions, and an HMAC of the
    /// rest and the binding.
    fn seal(&self, deadline: Instant, keys: &[&str]) -> Option<String> {
        let mut nonce = [0u8; 16];
        getrandom::fill(&mut nonce).ok()?;
        let at = self.seal.write_deadline(deadline);
        let body = format!(
            "{}.{}.{at}.{}",
            self.seal.version(),
            hex(&nonce),
            keys.join(",")
        );
        Some(format!("{body}.{}", hex(&self.tag(&body))))
    }

    fn open<'s>(&self, state: &'s str) -> Option<Opened<'s>> {
        let (body, tag) = state.rsplit_once('.')?;
        let expected = hex(&self.tag(body));
        if !bool::from(subtle::ConstantTimeEq::ct_eq(
            expected.as_bytes(),
            tag.as_bytes(),
        )) {
            tracing::info!("a retried call's requestState does not verify; asking again");
            return None;
        }
        let mut parts = body.splitn(4, '.');
        if parts.next()? != self.seal.version() {
            return None;
        }
        let nonce = parts.next()?;
        let at: u64 = parts.next()?.parse().ok()?;
        let keys = parts.next()?.split(',').filter(|k| !k.is_empty()).collect();
        Some(Opened {
            nonce,
            deadline: self.seal.read_deadline(at),
            keys,
        })
    }

    fn tag(&self, body: &str) -> [u8; 32] {
        self.seal.tag(&self.binding, body)
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
    use crate::approvals::McpApprover;
    use crate::approvals::test_support::{TEST_WAIT, nonces, request, round, round_in};
    use std::time::Duration;

    /// The first leg's question: its key and the sealed state.
    fn first_leg(deadline: Instant) -> (String, String) {
        let first = round(None, None);
        assert_eq!(
            first.answer_or_ask(&request(), deadline).unwrap(),
            Answer::Deferred
        );
        let wire = serde_json::to_value(first.input_required().unwrap()).unwrap();
        assert_eq!(wire["resultType"], "input_required");
        let requests = wire["inputRequests"].as_object().unwrap();
        assert_eq!(requests.len(), 1);
        let (key, asked) = requests.iter().next().unwrap();
        assert_eq!(asked["method"], "elicitation/create");
        assert_eq!(
            asked["params"]["requestedSchema"]["properties"]["answer"]["default"],
            "once"
        );
        (
            key.clone(),
            wire["requestState"].as_str().unwrap().to_owned(),
        )
    }

    #[test]
    fn a_2026_07_28_call_asks_by_input_required_and_reads_the_answer_from_its_retry() {
        let (key, state) = first_leg(Instant::now() + TEST_WAIT);
        let responses = BTreeMap::from([(
            key.clone(),
            serde_json::json!({"action": "accept", "content": {"answer": "session"}}),
        )]);
        let retry = round(Some(&responses), Some(&state));
        assert_eq!(
            retry
                .answer_or_ask(&request(), Instant::now() + TEST_WAIT)
                .unwrap(),
            Answer::Session
        );
        assert!(
            retry.input_required().is_none(),
            "answered: nothing more to ask"
        );

        // Another call (other arguments) cannot use this call's state and answers.
        let other = InputRound::new(
            "acme",
            "s1",
            "terminal",
            "{}",
            Some(&responses),
            Some(&state),
            &nonces(),
        )
        .unwrap();
        assert_eq!(
            other
                .answer_or_ask(&request(), Instant::now() + TEST_WAIT)
                .unwrap(),
            Answer::Deferred
        );
        // Nor can answers come without a question: no state, or a forged one.
        for state in [
            None,
            Some("v1.99999999999999.approval-x.00"),
            Some("v2.00.99999999999999.approval-x.00"),
        ] {
            let unasked = round(Some(&responses), state);
            assert_eq!(
                unasked
                    .answer_or_ask(&request(), Instant::now() + TEST_WAIT)
                    .unwrap(),
                Answer::Deferred
            );
        }
    }

    #[test]
    fn a_2026_07_28_answer_after_the_deadline_is_no_answer() {
        let (key, state) = first_leg(Instant::now());
        std::thread::sleep(Duration::from_millis(5));
        let responses = BTreeMap::from([(key, serde_json::json!({"action": "accept"}))]);
        let late = round(Some(&responses), Some(&state));
        assert_eq!(
            late.answer_or_ask(&request(), Instant::now() + TEST_WAIT)
                .unwrap(),
            Answer::Timeout
        );
    }

    #[test]
    fn a_2026_07_28_answer_approves_one_retry_and_is_refused_after() {
        let nonces = nonces();
        let (key, state) = first_leg(Instant::now() + TEST_WAIT);
        let responses = BTreeMap::from([(
            key,
            serde_json::json!({"action": "accept", "content": {"answer": "once"}}),
        )]);
        let first = round_in(&nonces, Some(&responses), Some(&state));
        let deadline = Instant::now() + TEST_WAIT;
        assert_eq!(
            first.answer_or_ask(&request(), deadline).unwrap(),
            Answer::Once
        );
        // The same retry asking the same question again (stdin gated like its
        // command, say) reads the same answer: one retry, one use.
        assert_eq!(
            first.answer_or_ask(&request(), deadline).unwrap(),
            Answer::Once
        );
        // The same state and answers again: refused, whatever they say.
        let replay = round_in(&nonces, Some(&responses), Some(&state));
        assert!(matches!(
            replay.answer_or_ask(&request(), deadline),
            Err(ApproverError::AnswerUsed)
        ));
        // A fresh question is a fresh nonce.
        let (key, state) = first_leg(Instant::now() + TEST_WAIT);
        let responses = BTreeMap::from([(key, serde_json::json!({"action": "accept"}))]);
        let again = round_in(&nonces, Some(&responses), Some(&state));
        assert_eq!(
            again.answer_or_ask(&request(), deadline).unwrap(),
            Answer::Once
        );
    }

    #[test]
    fn a_2026_07_28_state_seals_a_monotonic_deadline_not_the_wall_clock() {
        let deadline = Instant::now() + std::time::Duration::from_secs(300);
        let (_, state) = first_leg(deadline);
        let parts: Vec<&str> = state.split('.').collect();
        assert_eq!(parts[0], "v2");
        assert_eq!(parts[1].len(), 32, "a 128-bit nonce: {state}");
        // Milliseconds since this process's origin, not since 1970.
        let at: u128 = parts[2].parse().unwrap();
        assert_eq!(at, round(None, None).seal.write_deadline(deadline));
        assert!(at < 1_000_000_000_000, "not milliseconds since 1970: {at}");
        let deadline_back = round(None, None).open(&state).unwrap().deadline.unwrap();
        // Back to the same instant, to the millisecond it was sealed in.
        assert!(deadline_back <= deadline);
        assert!(deadline - deadline_back < std::time::Duration::from_millis(1));
        let other_session = InputRound::new(
            "acme",
            "s2",
            "terminal",
            r#"{"command":"rm -rf build"}"#,
            None,
            None,
            &nonces(),
        )
        .unwrap();
        assert!(
            other_session.open(&state).is_none(),
            "another call's round cannot open it"
        );
    }

    #[test]
    fn a_sessionless_retry_s_session_answer_runs_that_call_only() {
        use hermetic::approval::{ApprovalConfig, ApprovalContext, ApprovalGate, Outcome};
        let nonces = nonces();
        let gate = ApprovalGate::new(&ApprovalConfig::default()).unwrap();
        let sessionless = ApprovalContext::new("acme", "");
        let call = |responses, state| {
            let round = Arc::new(
                InputRound::new("acme", "", "terminal", "{}", responses, state, &nonces).unwrap(),
            );
            let approver = McpApprover::new(None, None).with_round(round.clone());
            let verdict = gate.check_with_approver(&sessionless, "rm -rf build", Some(&approver));
            (verdict, round)
        };
        let (verdict, round) = call(None, None);
        assert_eq!(verdict.outcome, Outcome::InputRequired);
        let wire = serde_json::to_value(round.input_required().unwrap()).unwrap();
        let state = wire["requestState"].as_str().unwrap().to_owned();
        let key = wire["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .next()
            .unwrap()
            .clone();
        let responses = BTreeMap::from([(
            key,
            serde_json::json!({"action": "accept", "content": {"answer": "session"}}),
        )]);
        let (verdict, _) = call(Some(&responses), Some(&state));
        assert_eq!(
            (verdict.approved, verdict.outcome),
            (true, Outcome::ApprovedOnce)
        );
        // The next sessionless call is asked again, not run.
        let (verdict, _) = call(None, None);
        assert_eq!(verdict.outcome, Outcome::InputRequired);
    }
}
