//! The approval flow, in the order: hardline → deny rules → (safe) → mode off →
//! permanent allowlist → session approvals → smart mode → a human → silence is denial.

use super::allowlist::AllowlistFile;
use super::approver::{
    Answer, ApprovalObserver, ApprovalRequest, Approver, ApproverError, ApproverKind,
};
use super::smart::{SmartAnswer, SmartClient};
use super::store::{ApprovalStore, MemoryStore, SessionKey};
use super::verdict::{DecidedBy, Outcome, Verdict};
use crate::clock::{Clock, SystemClock};
use hermetic_detect::{Detection, Detector};
use hermetic_detect::{RuleId, Tier};
use hermetic_policy::approval::{
    ApprovalConfig, ConfigError, Entry, Headless, Mode, Policy, has_shell_operators, squash,
};
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::sync::Arc;

/// Whose command this is.
///
/// An empty session means the call has none (a sessionless MCP 2026-07-28 request, a
/// one-shot `hermetic call`): every such caller of a tenant shares the key, so the gate
/// remembers nothing for it — an answer for the session approves that one call.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ApprovalContext {
    /// Tenant and session.
    pub key: SessionKey,
}

impl ApprovalContext {
    /// A context for `tenant` and `session`.
    pub fn new(tenant: impl Into<String>, session: impl Into<String>) -> Self {
        Self {
            key: SessionKey::new(tenant, session),
        }
    }
}

/// A request in flight: later identical requests wait for its verdict instead of
/// prompting again.
#[derive(Default)]
struct InFlight {
    verdict: Mutex<Option<Verdict>>,
    done: Condvar,
}

/// The approval gate for one tenant policy: detection plus the approval flow.
///
/// Built once per policy; `check` is called for every command. It is synchronous
/// and may block while a human or the smart endpoint answers (bounded by the
/// configured timeouts); from async code call it inside `spawn_blocking`.
pub struct ApprovalGate {
    detector: Detector,
    policy: Policy,
    allowlist: Option<AllowlistFile>,
    store: Arc<dyn ApprovalStore>,
    approver: Option<Arc<dyn Approver>>,
    smart: Option<SmartClient>,
    observers: Vec<Arc<dyn ApprovalObserver>>,
    clock: Arc<dyn Clock>,
    in_flight: Mutex<HashMap<(SessionKey, String), Arc<InFlight>>>,
}

impl std::fmt::Debug for ApprovalGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalGate")
            .field("policy", &self.policy)
            .field("allowlist", &self.allowlist)
            .field(
                "approver",
                &self.approver.as_ref().map(|a| a.name().to_owned()),
            )
            .field("smart", &self.smart)
            .finish_non_exhaustive()
    }
}

impl ApprovalGate {
    /// Compiles a gate from a tenant's settings. Defaults: in-memory session store, no
    /// approver (so dangerous commands are denied unless `headless = "allow"`), the
    /// system clock, no observers.
    ///
    /// # Errors
    /// [`ConfigError`] when the settings do not compile.
    pub fn new(config: &ApprovalConfig) -> Result<Self, ConfigError> {
        let policy = config.compile()?;
        Ok(Self {
            detector: Detector::new(&config.detector),
            policy,
            allowlist: config.allowlist_file.clone().map(|path| {
                let list = AllowlistFile::new(path);
                let removed = list.clean_stale_temps();
                if removed > 0 {
                    tracing::info!(path = %list.path().display(), removed, "removed temporary files of interrupted allowlist writes");
                }
                list
            }),
            store: Arc::new(MemoryStore::new()),
            approver: None,
            smart: config.smart.as_ref().map(SmartClient::new),
            observers: Vec::new(),
            clock: Arc::new(SystemClock),
            in_flight: Mutex::new(HashMap::new()),
        })
    }

    /// Uses `store` for session approvals (e.g. a shared store across hosts).
    pub fn with_store(mut self, store: Arc<dyn ApprovalStore>) -> Self {
        self.store = store;
        self
    }

    /// Asks `approver` when a human must decide.
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// Adds an observer of approval requests and answers.
    pub fn with_observer(mut self, observer: Arc<dyn ApprovalObserver>) -> Self {
        self.observers.push(observer);
        self
    }

    /// Uses `clock` for deadlines (tests use a manual clock).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The detector this gate uses.
    pub fn detector(&self) -> &Detector {
        &self.detector
    }

    /// Decides whether `command` may run for `ctx`.
    pub fn check(&self, ctx: &ApprovalContext, command: &str) -> Verdict {
        let detection = self.detector.detect(command);
        self.decide(ctx, command, detection)
    }

    /// [`ApprovalGate::check`] with the approver of this one call (a call's TTY, MCP
    /// client or approvals endpoint) instead of the gate's own. `None`: nobody can be
    /// asked, so silence applies (the headless default). The gate's state — session
    /// approvals, requests in flight — is shared by every approver.
    pub fn check_with_approver(
        &self,
        ctx: &ApprovalContext,
        command: &str,
        approver: Option<&dyn Approver>,
    ) -> Verdict {
        let detection = self.detector.detect(command);
        self.decide_with(ctx, command, detection, approver)
    }

    /// [`ApprovalGate::check_with_approver`] for an already-made detection: the
    /// terminal judges a command in its session (files earlier commands wrote, see
    /// `Detector::judge`) and input to a running program in that program's language
    /// (`Detector::judge_input`), then runs the same flow. `command` is the text the
    /// approver is shown and the deny rules and allowlist match.
    pub fn decide_with_approver(
        &self,
        ctx: &ApprovalContext,
        command: &str,
        detection: Detection,
        approver: Option<&dyn Approver>,
    ) -> Verdict {
        self.decide_with(ctx, command, detection, approver)
    }

    /// The flow for an already-made detection.
    pub fn decide(&self, ctx: &ApprovalContext, command: &str, detection: Detection) -> Verdict {
        self.decide_with(ctx, command, detection, self.approver.as_deref())
    }

    fn decide_with(
        &self,
        ctx: &ApprovalContext,
        command: &str,
        detection: Detection,
        approver: Option<&dyn Approver>,
    ) -> Verdict {
        let rules = detection.rule_ids();
        let base = |outcome: Outcome, decided_by: DecidedBy, approved: bool| Verdict {
            approved,
            tier: detection.tier,
            rules: rules.clone(),
            descriptions: rules.iter().map(|r| r.description()).collect(),
            outcome,
            decided_by,
            answered_by: None,
            message: String::new(),
            deny_entry: None,
            commands: detection.commands.clone(),
        };
        // Verdicts the policy reaches on a non-safe command without asking anyone are
        // decisions observers (the audit log) must see too.
        let decided = |v: Verdict| {
            for o in &self.observers {
                o.decided(&ctx.key, command, &v);
            }
            v
        };
        // 1. Hardline: never, in any mode.
        if detection.tier == Tier::Hardline {
            let mut v = base(Outcome::BlockedHardline, DecidedBy::Policy, false);
            let hard: Vec<&str> = detection
                .hits
                .iter()
                .filter(|h| h.tier == Tier::Hardline)
                .map(|h| h.rule.as_str())
                .collect();
            v.message = format!(
                "BLOCKED: this command is on the hardline list ({}) and cannot be approved in any mode. Do not retry it or any variant of it.",
                hard.join(", ")
            );
            if hard.contains(&hermetic_detect::RuleId::HostState.as_str()) {
                v.message.push_str(
                    " It names a file or directory of the agent host's own (its policy, secrets, approval allowlist, audit log, stores, cache or program), which no command may read or change: work on the files of your workspace.",
                );
            }
            return decided(v);
        }
        // 2. Operator deny rules.
        if let Some(entry) = self.deny_match(&detection, command) {
            let mut v = base(Outcome::BlockedDenyRule, DecidedBy::Policy, false);
            v.message = format!(
                "BLOCKED by the operator's policy (deny rule {entry:?}). Do not retry this command or a variant of it."
            );
            v.deny_entry = Some(entry);
            return decided(v);
        }
        if detection.tier == Tier::Safe {
            return base(Outcome::Allowed, DecidedBy::Detector, true);
        }
        // 3. Mode off: an explicit operator opt-in; logged.
        if self.policy.mode == Mode::Off {
            tracing::info!(command, rules = ?rules, "approval mode off: dangerous command allowed");
            return decided(base(Outcome::AllowedModeOff, DecidedBy::Policy, true));
        }
        // 4. Permanent allowlist.
        if self.allowlisted(&detection, command, &rules) {
            return decided(base(Outcome::AllowedAllowlist, DecidedBy::Policy, true));
        }
        // 5. Session approvals. A call without a session has none: nothing is ever
        // remembered for the key every sessionless caller of the tenant shares.
        let sessionless = ctx.key.session.is_empty();
        let session_ok = !sessionless
            && !rules.is_empty()
            && rules
                .iter()
                .all(|r| self.store.is_approved(&ctx.key, *r).unwrap_or(false));
        if session_ok {
            return decided(base(Outcome::AllowedSession, DecidedBy::Session, true));
        }
        let request = ApprovalRequest::new(
            ctx.key.clone(),
            command,
            detection.tier,
            rules.clone(),
            detection.commands.clone(),
        );
        // Identical requests of one session in flight are asked once. Sessionless
        // callers are strangers to each other: each asks its own question, or one
        // client's answer would run another's command.
        if sessionless {
            return self.ask(
                &request,
                base(Outcome::Denied, DecidedBy::Nobody, false),
                approver,
            );
        }
        let flight_key = (ctx.key.clone(), command.to_owned());
        let (flight, leader) = {
            let mut map = self.in_flight.lock();
            match map.get(&flight_key) {
                Some(f) => (Arc::clone(f), false),
                None => {
                    let f = Arc::new(InFlight::default());
                    map.insert(flight_key.clone(), Arc::clone(&f));
                    (f, true)
                }
            }
        };
        if !leader {
            let mut slot = flight.verdict.lock();
            while slot.is_none() {
                flight.done.wait(&mut slot);
            }
            return slot
                .clone()
                .unwrap_or_else(|| base(Outcome::ApproverError, DecidedBy::Nobody, false));
        }
        let verdict = self.ask(
            &request,
            base(Outcome::Denied, DecidedBy::Nobody, false),
            approver,
        );
        *flight.verdict.lock() = Some(verdict.clone());
        flight.done.notify_all();
        self.in_flight.lock().remove(&flight_key);
        verdict
    }

    /// Steps 6–8: smart mode, a human, silence.
    fn ask(
        &self,
        request: &ApprovalRequest,
        v: Verdict,
        approver: Option<&dyn Approver>,
    ) -> Verdict {
        if let Some(decided) = self.ask_smart(request, &v) {
            return decided;
        }
        let answer = self.ask_human(request, approver);
        let mut v = v;
        if let (Some(approver), Ok(answer)) = (approver, &answer)
            && !matches!(
                answer,
                Answer::Deferred | Answer::Timeout | Answer::Unavailable
            )
        {
            v.answered_by = Some(approver.answered_by(request));
        }
        let v = match answer {
            Ok(answer) => self.apply_answer(request, v, answer),
            Err(e) => self.approver_failed(v, e),
        };
        // A question sent to the client (2026-07-28) is not answered yet: its answer
        // comes with the retry, and is recorded then.
        let v = if v.outcome == Outcome::InputRequired {
            v
        } else {
            self.notify_after(request, v)
        };
        if let Some(approver) = approver {
            approver.settled(request, &v);
        }
        v
    }

    /// Step 6, smart mode: the verdict when the smart approver decides; `None` when it
    /// escalates to a human (or the mode is not smart).
    fn ask_smart(&self, request: &ApprovalRequest, v: &Verdict) -> Option<Verdict> {
        if self.policy.mode != Mode::Smart {
            return None;
        }
        let smart = self.smart.as_ref()?;
        self.notify_before(request, "smart");
        let answer = smart.assess(request).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "smart approver failed; escalating");
            SmartAnswer::Escalate
        });
        let mut v = v.clone();
        match answer {
            SmartAnswer::Approve => {
                v.approved = true;
                v.decided_by = DecidedBy::Smart;
                self.for_session(request, &mut v, None);
            }
            SmartAnswer::Deny => {
                v.outcome = Outcome::Denied;
                v.decided_by = DecidedBy::Smart;
                v.message = "DENIED by the smart approver. Do not retry this command or a variant of it; ask the user how to proceed.".to_owned();
            }
            SmartAnswer::Escalate => return None,
        }
        Some(self.notify_after(request, v))
    }

    /// Step 7, a human: the approver's answer, by the gate's deadline.
    fn ask_human(
        &self,
        request: &ApprovalRequest,
        approver: Option<&dyn Approver>,
    ) -> Result<Answer, ApproverError> {
        let Some(approver) = approver else {
            return Ok(Answer::Unavailable);
        };
        // A retry's answer was asked for in the first leg: one question record.
        if !approver.holds_answer(request) {
            self.notify_before(request, approver.name());
        }
        let timeout = match approver.kind() {
            ApproverKind::Interactive => self.policy.tty_timeout,
            ApproverKind::Async => self.policy.async_timeout,
        };
        let deadline = self.clock.now() + timeout;
        match approver.request(request, deadline) {
            // A late answer is no answer: the deadline is the gate's, not the
            // approver's.
            Ok(_) if self.clock.now() > deadline => Ok(Answer::Timeout),
            other => other,
        }
    }

    /// What a human's answer (or step 8, its absence) makes of the verdict.
    fn apply_answer(&self, request: &ApprovalRequest, mut v: Verdict, answer: Answer) -> Verdict {
        match answer {
            Answer::Once => {
                v.approved = true;
                v.outcome = Outcome::ApprovedOnce;
                v.decided_by = DecidedBy::Human;
            }
            Answer::Session => {
                v.approved = true;
                v.decided_by = DecidedBy::Human;
                self.for_session(request, &mut v, None);
            }
            Answer::Always => {
                v.approved = true;
                v.decided_by = DecidedBy::Human;
                self.approve_always(request, &mut v);
            }
            Answer::Deny => {
                v.outcome = Outcome::Denied;
                v.decided_by = DecidedBy::Human;
                v.message = if v.answered_by.as_deref() == Some("console") {
                    "DENIED by the operator. Do not retry this command or a variant of it; ask the user how to proceed.".to_owned()
                } else {
                    "DENIED by the user. Do not retry this command or a variant of it; ask the user how to proceed.".to_owned()
                };
            }
            Answer::Dismissed => {
                v.outcome = Outcome::Dismissed;
                v.decided_by = DecidedBy::Human;
                v.message = "NOT RUN: the user dismissed the approval request without choosing. Do not retry this command automatically; ask the user whether to run it.".to_owned();
            }
            Answer::Deferred => {
                v.outcome = Outcome::InputRequired;
                v.decided_by = DecidedBy::Nobody;
                v.message = "NOT RUN yet: the approval request went to the client, which retries the call with the user's answer.".to_owned();
            }
            // 8. Silence is not consent.
            Answer::Timeout => {
                v = self.silence(
                    v,
                    Outcome::Timeout,
                    "Nobody answered the approval request in time",
                );
            }
            Answer::Unavailable => {
                v = self.silence(
                    v,
                    Outcome::NoApprover,
                    "Nobody could be asked to approve this command",
                );
            }
        }
        v
    }

    /// "always": the rules go to the allowlist file when they may and it is written;
    /// otherwise they are approved for the session, saying why.
    fn approve_always(&self, request: &ApprovalRequest, v: &mut Verdict) {
        let permanent: Vec<RuleId> = request
            .rules
            .iter()
            .copied()
            .filter(|r| r.is_allowlistable())
            .collect();
        match &self.allowlist {
            Some(_) if permanent.len() < request.rules.len() => {
                self.for_session(
                    request,
                    v,
                    Some("input.* findings cannot be allowed permanently".to_owned()),
                );
            }
            // Synced to disk before the verdict exists: whoever is told the
            // answer is taken (Approver::settled) is told after this.
            Some(list) => match list.add(&permanent) {
                Ok(()) => {
                    if !request.key.session.is_empty() {
                        self.grant_session(request);
                    }
                    v.outcome = Outcome::ApprovedAlways;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "could not persist the allowlist; approved for this session only");
                    self.for_session(
                        request,
                        v,
                        Some(format!("the allowlist could not be written: {e}")),
                    );
                }
            },
            None => {
                self.for_session(
                    request,
                    v,
                    Some(
                        "no allowlist file is configured, so \"always\" lasts for the session"
                            .to_owned(),
                    ),
                );
            }
        }
    }

    /// The approver failed to bring an answer.
    fn approver_failed(&self, mut v: Verdict, error: ApproverError) -> Verdict {
        match error {
            // The question could not be asked where its approver looks (a cluster's
            // store is down): fail closed, whatever headless says.
            ApproverError::Unreachable(reason) => {
                v.outcome = Outcome::ApproverError;
                v.decided_by = DecidedBy::Nobody;
                v.message = format!(
                    "NOT RUN: the approval request could not reach the operator ({reason}). Nothing ran; retry the command later."
                );
                v
            }
            // A replayed answer: someone answered, once, and it was used. Neither
            // consent nor silence (headless does not apply).
            ApproverError::AnswerUsed => {
                v.outcome = Outcome::ApproverError;
                v.decided_by = DecidedBy::Nobody;
                v.message = "NOT RUN: this approval answer was already used, and an answer approves one run of the call it was given for. Do not retry with it; call again without it to be asked anew.".to_owned();
                v
            }
            e => {
                tracing::warn!(error = %e, "approver failed");
                self.silence(v, Outcome::ApproverError, "The approval request failed")
            }
        }
    }

    /// Approves `request`'s rules for the rest of its session — or, for a call without
    /// a session, for this call only: the sessionless key "" is every sessionless
    /// caller's, and remembering the rules there would approve them for all of them,
    /// whoever gave the answer. `why` says why a wider answer was narrowed to this.
    fn for_session(&self, request: &ApprovalRequest, v: &mut Verdict, why: Option<String>) {
        if request.key.session.is_empty() {
            v.outcome = Outcome::ApprovedOnce;
            v.message = match why {
                Some(why) => format!(
                    "Approved for this call only ({why}, and the call has no session to remember it for)."
                ),
                None => {
                    "Approved for this call only (it has no session to remember the answer for)."
                        .to_owned()
                }
            };
        } else {
            self.grant_session(request);
            v.outcome = Outcome::ApprovedSession;
            if let Some(why) = why {
                v.message = format!("Approved for this session ({why}).");
            }
        }
    }

    fn silence(&self, mut v: Verdict, outcome: Outcome, what: &str) -> Verdict {
        v.decided_by = DecidedBy::Nobody;
        if self.policy.headless == Headless::Allow {
            tracing::warn!(
                ?outcome,
                "no approval answer; headless = allow, so the command runs"
            );
            v.approved = true;
            v.outcome = Outcome::ApprovedHeadless;
            v.decided_by = DecidedBy::Policy;
            v.message =
                format!("{what}; the operator allows unattended commands (headless = allow).");
        } else {
            v.outcome = outcome;
            v.message = format!(
                "DENIED: {what}, and silence is not consent. Do not retry this command automatically; ask the user to run or approve it."
            );
        }
        v
    }

    fn grant_session(&self, request: &ApprovalRequest) {
        for rule in &request.rules {
            if let Err(e) = self.store.approve(&request.key, *rule) {
                tracing::warn!(error = %e, rule = %rule, "could not record a session approval");
            }
        }
    }

    fn notify_before(&self, request: &ApprovalRequest, approver: &str) {
        for o in &self.observers {
            o.before_request(request, approver);
        }
    }

    fn notify_after(&self, request: &ApprovalRequest, v: Verdict) -> Verdict {
        for o in &self.observers {
            o.after_answer(request, &v);
        }
        v
    }

    /// The first deny entry matching the detection or one of its simple commands.
    fn deny_match(&self, detection: &Detection, command: &str) -> Option<String> {
        let whole = squash(command);
        for entry in &self.policy.deny {
            match entry {
                Entry::Rule(id) => {
                    if detection.hits.iter().any(|h| h.rule == *id) {
                        return Some(id.as_str().to_owned());
                    }
                }
                Entry::Command(p) => {
                    if p.matches(&whole) || detection.commands.iter().any(|c| p.matches(&squash(c)))
                    {
                        return Some(p.as_str().to_owned());
                    }
                }
            }
        }
        None
    }

    /// Every rule is allowed permanently (policy or allowlist file), or the whole
    /// command — a single command without shell operators — matches an allow pattern.
    ///
    /// The file is read on each dangerous command (never for safe ones): other hosts
    /// and processes add to it, and a dangerous command is about to wait for a human
    /// anyway.
    fn allowlisted(&self, detection: &Detection, command: &str, rules: &[RuleId]) -> bool {
        let file_rules = match &self.allowlist {
            Some(list) => list.load().unwrap_or_else(|e| {
                // A damaged list allows nothing; the human is asked instead.
                tracing::warn!(error = %e, "allowlist unreadable; ignoring it");
                Vec::new()
            }),
            None => Vec::new(),
        };
        let rule_ok = |r: &RuleId| {
            r.is_allowlistable()
                && (file_rules.contains(r)
                    || self.policy.allow.iter().any(|e| e == &Entry::Rule(*r)))
        };
        if !rules.is_empty() && rules.iter().all(rule_ok) {
            return true;
        }
        let plain = detection.commands.len() == 1 && !has_shell_operators(command);
        plain
            && self.policy.allow.iter().any(|e| match e {
                Entry::Command(p) => p.matches(&squash(command)),
                Entry::Rule(_) => false,
            })
    }
}

#[cfg(test)]
mod tests;
