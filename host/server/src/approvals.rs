//! Approvals over MCP and HTTP: who answers when a call's dangerous command needs a
//! human.
//!
//! - [`ElicitationApprover`] asks the MCP client that made the call, through form
//!   elicitation, when the client declared that capability (and the session's protocol
//!   still allows server-to-client requests).
//! - [`ApprovalBroker`] holds requests for an operator console: `GET /approvals` lists
//!   them and `POST /approvals/{id}` answers one (see [`super::http`]), acknowledged
//!   only once the gate has acted on the answer ("always" synced to disk); a request
//!   nobody answers by its deadline is a timeout, which the gate turns into a denial.
//! - [`McpApprover`] is what the MCP handler puts in
//!   [`CallOptions::approver`](hermetic::CallOptions::approver): among those the
//!   tenant's `approver` setting allows ([`ApproverChoice`]), the client first, the
//!   broker when the client cannot be asked, and [`Answer::Unavailable`] (the
//!   headless default: deny) when neither is.
//!
//! All three are deadline-driven [`Approver`]s of kind [`ApproverKind::Async`]: the gate
//! calls them on the call's blocking thread and they wait on a channel.

mod cluster;
mod seal;

pub(crate) use seal::RoundSeal;

use crate::formats::hex;
use hermetic::CancelToken;
use hermetic::approval::{
    Answer, ApprovalRequest, Approver, ApproverChoice, ApproverError, ApproverKind, NonceStore,
    Outcome, SessionKey, Verdict,
};
use parking_lot::Mutex;
use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest, InputRequiredResult,
};
use rmcp::{Peer, RoleServer};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
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

/// Asks the MCP client through form elicitation (the `form`; its answer means what
/// `answer_of` says), as a server-to-client request: the initialize-handshake era.
/// For 2026-07-28 see [`InputRound`].
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
        serde_json::from_value(form(request)).map_err(|e| ApproverError::Other(e.to_string()))
    }
}

/// The elicitation form, as the spec's wire JSON (the rmcp types are non-exhaustive):
/// one `answer` field with the four [`CHOICES`], optional, defaulting to `once`.
///
/// Optional with a default because some clients confirm instead of filling the form:
/// Hermes agent 0.19 shows the message and its own once/session/deny prompt, and
/// answers every approval with `{"action": "accept", "content": {}}` (hermes-agent
/// `tools/mcp_tool.py`, `ElicitationHandler.__call__`, fed by
/// `tools/approval.py::request_elicitation_consent`, which folds once, session and
/// always into `"accept"`). It never shows the schema either: it reads
/// `params.requested_schema`, which mcp 1.26 spells `requestedSchema`, so its user
/// sees only the message — hence the message carries the command and the rules. The
/// form itself then says what an empty accept means — the default, `once`, the
/// narrowest consent any of Hermes's choices gives — instead of us guessing (or, as
/// before, calling it a refusal).
fn form(request: &ApprovalRequest) -> serde_json::Value {
    serde_json::json!({
        "mode": "form",
        "message": message(request),
        "requestedSchema": {
            "type": "object",
            "properties": {
                "answer": {
                    "type": "string",
                    "title": "Allow this command?",
                    "description": "once (the default): run it this time; session: also allow these rules for the rest of the session; always: allow these rules permanently; deny: do not run it",
                    "enum": CHOICES,
                    "default": "once",
                }
            },
        }
    })
}

/// What a client's elicitation answer means, in both protocol eras.
///
/// - accept with an `answer` of the [`CHOICES`]: that choice (a tenant's "always" is
///   its session's, see [`tenant_scoped`]);
/// - accept without an `answer`: the form's default, `once` (see `form`);
/// - accept with anything else: unreadable, so an approver error (`pending_approval`)
///   — neither consent nor a refusal the user did not give;
/// - decline: the user refused;
/// - cancel: the user dismissed the question without choosing ([`Answer::Dismissed`]).
fn answer_of(result: &ElicitResult, request: &ApprovalRequest) -> Result<Answer, ApproverError> {
    match result.action {
        ElicitationAction::Accept => {
            let answer = match &result.content {
                None | Some(serde_json::Value::Null) => None,
                Some(serde_json::Value::Object(content)) => content.get("answer"),
                Some(other) => Some(other),
            };
            let choice = match answer {
                None => return Ok(Answer::Once),
                Some(serde_json::Value::String(text)) => parse_choice(text),
                Some(_) => None,
            };
            choice
                .map(|choice| tenant_scoped(choice, request))
                .ok_or_else(|| {
                    ApproverError::Other(format!(
                        "the client accepted with an answer that is not one of {CHOICES:?}: {}",
                        answer.map(ToString::to_string).unwrap_or_default()
                    ))
                })
        }
        ElicitationAction::Decline => Ok(Answer::Deny),
        ElicitationAction::Cancel => Ok(Answer::Dismissed),
        // A newer protocol's action: not understood, so not a refusal either.
        _ => Err(ApproverError::Other(
            "the client answered with an unknown elicitation action".to_owned(),
        )),
    }
}

/// How an elicitation went: the client answered (its answer, possibly unreadable), or
/// the question never got an answer from it at all (it could not be sent, the client
/// returned an error), so someone else may still be asked.
enum Elicited {
    Answered(Result<Answer, ApproverError>),
    Failed(ApproverError),
}

impl ElicitationApprover {
    fn elicit(&self, request: &ApprovalRequest, deadline: Instant) -> Elicited {
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
    fn answer_or_ask(
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
    fn holds(&self, request: &ApprovalRequest) -> bool {
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

/// A question's key in `inputRequests`: the same for the same command and rules, so
/// the retry finds the answer to the question its own gate asks.
fn approval_key(request: &ApprovalRequest) -> String {
    use sha2::Digest;
    let mut hash = sha2::Sha256::new();
    hash.update(request.command.as_bytes());
    for rule in &request.rules {
        hash.update([0]);
        hash.update(rule.as_str().as_bytes());
    }
    format!("approval-{}", &hex(&hash.finalize())[..32])
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

/// [`wait`] for a question the whole cluster sees: an answer from this node's console
/// (through `rx`), or one given on another node (in the shared store, looked for every
/// [`cluster::POLL`]). A store that stops answering while the call
/// waits leaves this node's console able to answer.
fn wait_in_cluster(
    cluster: &Arc<cluster::ClusterApprovals>,
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
    /// Session ("" for a call without one: then "session" and a session-only
    /// "always" approve this call only).
    pub session: String,
    /// The tool whose call raised it (`terminal`, `process`; empty when the asker did
    /// not say, see [`McpApprover::with_tool`]).
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

struct Pending {
    view: PendingApproval,
    raised: Instant,
    deadline: Instant,
    answer: mpsc::SyncSender<(Answer, Ack)>,
}

/// Whether a tenant's "always" answers reach an allowlist file (tenant id → bool).
type AllowlistProbe = Box<dyn Fn(&str) -> bool + Send + Sync>;

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

/// The gate's side of an answer's acknowledgement: sent once the gate has acted on
/// it ([`Approver::settled`]); dropped unsent when the call ends first.
#[derive(Debug)]
enum Ack {
    /// For this node's console.
    Local(tokio::sync::oneshot::Sender<Settled>),
    /// For the console of another node of the cluster, which answered question `id`.
    Remote(u64, Arc<cluster::ClusterApprovals>),
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
struct Acks(Mutex<Vec<(SessionKey, String, Ack)>>);

impl Acks {
    fn hold(&self, request: &ApprovalRequest, ack: Ack) {
        let mut held = self.0.lock();
        // Whoever waited for these has given up: do not keep them.
        held.retain(|(_, _, a)| !a.is_closed());
        held.push((request.key.clone(), approval_key(request), ack));
    }

    fn settle(&self, request: &ApprovalRequest, verdict: &Verdict) {
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

/// An answer delivered to its waiting request; [`Receipt::settled`] waits until the
/// gate has acted on it.
#[derive(Debug)]
pub struct Receipt {
    id: u64,
    answer: Answer,
    /// "always" was to be permanent (the console said so when it listed the request).
    permanent: bool,
    settled: tokio::sync::oneshot::Receiver<Settled>,
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
    cluster: Option<Arc<cluster::ClusterApprovals>>,
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
    /// session-only. [`super::McpServer::new`] reads it from the terminal's approval
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
        self.cluster = Some(Arc::new(cluster::ClusterApprovals::new(url)?));
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
    fn ask(
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

    fn elicit_result(value: serde_json::Value) -> ElicitResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn each_client_answer_means_what_the_user_chose() {
        let operator = {
            let mut r = request();
            r.key = SessionKey::new("", "s1");
            r
        };
        let answer = |v: serde_json::Value| answer_of(&elicit_result(v), &operator);
        use serde_json::json;
        assert_eq!(
            answer(json!({"action": "accept", "content": {"answer": "always"}})).unwrap(),
            Answer::Always
        );
        // Hermes's answer to every "allow": the form's default.
        assert_eq!(
            answer(json!({"action": "accept", "content": {}})).unwrap(),
            Answer::Once
        );
        assert_eq!(answer(json!({"action": "accept"})).unwrap(), Answer::Once);
        assert_eq!(answer(json!({"action": "decline"})).unwrap(), Answer::Deny);
        assert_eq!(
            answer(json!({"action": "cancel"})).unwrap(),
            Answer::Dismissed
        );
        // Unreadable: an error (pending_approval), never a refusal or a consent.
        assert!(answer(json!({"action": "accept", "content": {"answer": "yes"}})).is_err());
        assert!(answer(json!({"action": "accept", "content": {"answer": 1}})).is_err());
    }

    /// The server's rounds (its key and used nonces).
    fn nonces() -> Rounds {
        static ROUNDS: std::sync::OnceLock<Rounds> = std::sync::OnceLock::new();
        let seal = ROUNDS.get_or_init(Rounds::process).seal.clone();
        Rounds {
            seal,
            nonces: Arc::new(hermetic::approval::MemoryNonceStore::new()),
        }
    }

    fn round_in(
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

    fn round(
        responses: Option<&BTreeMap<String, serde_json::Value>>,
        state: Option<&str>,
    ) -> InputRound {
        round_in(&nonces(), responses, state)
    }

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
