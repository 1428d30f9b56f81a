//! Who answers an approval request: the transport's approver (a TTY prompt for the CLI;
//! later an asynchronous request a server resolves), a scripted approver for tests, and
//! observers that see every request and answer.

use super::store::SessionKey;
use super::verdict::Verdict;
use crate::clock::ManualClock;
use hermetic_detect::{RuleId, Tier};
use parking_lot::Mutex;
use serde::Serialize;
use std::collections::VecDeque;
use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a human (or the smart approver) is asked to decide.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApprovalRequest {
    /// Whose session.
    pub key: SessionKey,
    /// The command as the agent sent it.
    pub command: String,
    /// Its tier (always `Dangerous` here: hardline never reaches an approver).
    pub tier: Tier,
    /// The rules it triggered.
    pub rules: Vec<RuleId>,
    /// Their descriptions, in the same order.
    pub descriptions: Vec<&'static str>,
    /// The simple commands the detector saw.
    pub commands: Vec<String>,
}

impl ApprovalRequest {
    /// A request for `command` of `key`'s session, which triggered `rules` (their
    /// descriptions are filled in from the rules).
    pub fn new(
        key: SessionKey,
        command: impl Into<String>,
        tier: Tier,
        rules: Vec<RuleId>,
        commands: Vec<String>,
    ) -> Self {
        Self {
            key,
            command: command.into(),
            tier,
            descriptions: rules.iter().map(|r| r.description()).collect(),
            rules,
            commands,
        }
    }
}

/// An approver's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// Run this once.
    Once,
    /// Run this and the same rules for the rest of the session.
    Session,
    /// Run this and allow the same rules permanently (persisted to the allowlist).
    Always,
    /// Do not run it (a human refused).
    Deny,
    /// Nobody answered before the deadline.
    Timeout,
    /// Nobody can be asked (no terminal, no client attached).
    Unavailable,
    /// The human closed the question without choosing (MCP's `cancel`): not a refusal,
    /// and not silence either — someone was there, so `headless = "allow"` must not
    /// turn it into consent.
    Dismissed,
    /// The question went out, and the answer comes with a later request: MCP
    /// 2026-07-28 ends the call with an `input_required` result and the client
    /// retries it with the user's answer. Nothing runs now; headless does not apply
    /// (the question is being asked).
    Deferred,
}

/// The approver failed (as opposed to a human refusing).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApproverError {
    /// Reading or writing the prompt failed.
    #[error("approval prompt: {0}")]
    Io(#[from] std::io::Error),
    /// The answer was given before and has been used: an answer approves one run
    /// (a replayed MCP 2026-07-28 `requestState`). The gate refuses the command
    /// whatever `headless` says: someone answered, once.
    #[error("this approval answer was already used")]
    AnswerUsed,
    /// The question could not be put where its approver would see it (the cluster's
    /// shared store is unreachable). The gate refuses the command whatever `headless`
    /// says: this is a failure to ask, not silence.
    #[error("the approval request could not reach the operator: {0}")]
    Unreachable(String),
    /// Any other failure of an approver implementation.
    #[error("approver: {0}")]
    Other(String),
}

/// The most an approval wait keeps back from the deadline of the call that asks.
pub const CALL_MARGIN: Duration = Duration::from_secs(5);

/// When an approver asked during a call must stop waiting: before the call's own
/// `deadline`, by [`CALL_MARGIN`] or half the time left, whichever is less. A wait
/// that ran to the call's deadline would leave the call no time to say so: the agent
/// would read the call's time limit instead of "Nobody answered". Half the time left
/// keeps a short call's wait from vanishing altogether.
pub fn wait_within_call(deadline: Instant, now: Instant) -> Instant {
    let left = deadline.saturating_duration_since(now);
    deadline
        .checked_sub(CALL_MARGIN.min(left / 2))
        .unwrap_or(deadline)
}

/// How long an approver's requests may wait (the gate picks the configured timeout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApproverKind {
    /// A person at a terminal (`tty_timeout_secs`, 60 s by default).
    Interactive,
    /// A request resolved later by a server: MCP elicitation, an HTTP endpoint
    /// (`async_timeout_secs`, 300 s by default).
    Async,
}

/// Asks someone to approve a dangerous command.
///
/// # Contract
/// `request` blocks until it has an answer or `deadline` passes, and then returns
/// [`Answer::Timeout`]; it must not return an approval after the deadline (the gate
/// checks its clock and turns a late answer into a timeout anyway). It never approves
/// on its own: when nobody can be asked it returns [`Answer::Unavailable`].
///
/// # Asynchronous transports
/// The trait is deadline-driven rather than `async` so that every transport fits: a
/// server implementation registers the request (e.g. sends an MCP elicitation or
/// exposes it on an HTTP endpoint), then waits on a channel with
/// `recv_timeout(deadline - now)` while another task resolves it. From async code,
/// call [`super::ApprovalGate::check`] inside `spawn_blocking`.
pub trait Approver: Send + Sync {
    /// A short name for logs and verdicts (`tty`, `scripted`, `mcp`).
    fn name(&self) -> &str;

    /// Which configured timeout applies.
    fn kind(&self) -> ApproverKind;

    /// Asks for a decision on `request`, waiting until `deadline` at most.
    ///
    /// # Errors
    /// [`ApproverError`] when asking failed; the gate denies the command.
    fn request(
        &self,
        request: &ApprovalRequest,
        deadline: Instant,
    ) -> Result<Answer, ApproverError>;

    /// Called by the gate once it has acted on this approver's answer to `request`
    /// (recorded a session approval, written and synced the allowlist file), with the
    /// verdict it reached. An approver that tells whoever answered that the answer is
    /// taken (the operator console's endpoint) does so only now, so an acknowledged
    /// "always" is on disk. Wrappers must forward it. Default: nothing.
    fn settled(&self, request: &ApprovalRequest, verdict: &Verdict) {
        let _ = (request, verdict);
    }

    /// Whether the answer to `request` is already at hand: a 2026-07-28 retry carries
    /// the answer to a question asked (and recorded) in the call's first leg, so the
    /// gate does not record it as a new question. Wrappers must forward it. Default:
    /// no.
    fn holds_answer(&self, request: &ApprovalRequest) -> bool {
        let _ = request;
        false
    }

    /// Who gave this approver's last answer to `request` (`client`, `console`, `tty`
    /// …), for the audit log and for the agent's message. Wrappers must forward it.
    /// Default: the approver's name.
    fn answered_by(&self, request: &ApprovalRequest) -> String {
        let _ = request;
        self.name().to_owned()
    }
}

/// Hooks called around approval requests (audit logs, metrics, UI notifications).
pub trait ApprovalObserver: Send + Sync {
    /// Called before an approver (smart or human) is asked.
    fn before_request(&self, request: &ApprovalRequest, approver: &str) {
        let _ = (request, approver);
    }

    /// Called after the answer, with the verdict the gate reached.
    fn after_answer(&self, request: &ApprovalRequest, verdict: &Verdict) {
        let _ = (request, verdict);
    }

    /// Called when the gate decides a non-safe command without asking anyone: a
    /// hardline or deny-rule block, approval mode off, the allowlist, or an earlier
    /// session approval.
    fn decided(&self, key: &SessionKey, command: &str, verdict: &Verdict) {
        let _ = (key, command, verdict);
    }
}

/// The text of a TTY prompt (a contract: operators read it).
pub fn prompt_text(request: &ApprovalRequest, timeout: Duration) -> String {
    let mut text = String::from("\n⚠  hermetic: dangerous command needs approval\n");
    text.push_str(&format!("   {}\n", request.command.replace('\n', "\n   ")));
    for (rule, description) in request.rules.iter().zip(&request.descriptions) {
        text.push_str(&format!("   - {rule}: {description}\n"));
    }
    text.push_str(&format!(
        "Allow? [o]nce / [s]ession / [a]lways / [d]eny (deny after {} s): ",
        timeout.as_secs()
    ));
    text
}

/// Reads an answer typed at the prompt; anything unrecognised is a refusal.
pub fn parse_answer(line: &str) -> Answer {
    match line.trim().to_ascii_lowercase().as_str() {
        "o" | "once" | "y" | "yes" => Answer::Once,
        "s" | "session" => Answer::Session,
        "a" | "always" => Answer::Always,
        _ => Answer::Deny,
    }
}

type Input = Box<dyn BufRead + Send>;
type Output = Box<dyn Write + Send>;

/// Prompts on a terminal: once / session / always / deny, with a timeout.
///
/// The answer is read on a helper thread so the deadline holds even while the reader
/// blocks; a reader that is still blocked after a timeout is left to finish (its line
/// is then ignored).
pub struct TtyApprover {
    input: Option<Arc<Mutex<Input>>>,
    output: Mutex<Output>,
}

impl std::fmt::Debug for TtyApprover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TtyApprover")
            .field("interactive", &self.input.is_some())
            .finish()
    }
}

impl TtyApprover {
    /// Prompts on stderr and reads stdin — when stdin is a terminal. Otherwise nobody
    /// can answer and every request is [`Answer::Unavailable`] (so a piped `hermetic`
    /// never takes its input as consent).
    pub fn stdio() -> Self {
        use std::io::IsTerminal;
        let input: Option<Input> = std::io::stdin()
            .is_terminal()
            .then(|| Box::new(std::io::BufReader::new(std::io::stdin())) as Input);
        Self {
            input: input.map(|i| Arc::new(Mutex::new(i))),
            output: Mutex::new(Box::new(std::io::stderr())),
        }
    }

    /// Prompts on `output` and reads answers from `input` (tests, other terminals).
    pub fn new(input: impl BufRead + Send + 'static, output: impl Write + Send + 'static) -> Self {
        Self {
            input: Some(Arc::new(Mutex::new(Box::new(input)))),
            output: Mutex::new(Box::new(output)),
        }
    }
}

impl Approver for TtyApprover {
    fn name(&self) -> &str {
        "tty"
    }

    fn kind(&self) -> ApproverKind {
        ApproverKind::Interactive
    }

    fn request(
        &self,
        request: &ApprovalRequest,
        deadline: Instant,
    ) -> Result<Answer, ApproverError> {
        let Some(input) = &self.input else {
            return Ok(Answer::Unavailable);
        };
        let timeout = deadline.saturating_duration_since(Instant::now());
        {
            let mut out = self.output.lock();
            out.write_all(prompt_text(request, timeout).as_bytes())?;
            out.flush()?;
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let input = Arc::clone(input);
        std::thread::spawn(move || {
            let mut line = String::new();
            let mut reader = input.lock();
            let read = reader.read_line(&mut line).map(|n| (n, line));
            let _ = tx.send(read);
        });
        match rx.recv_timeout(timeout) {
            Ok(Ok((0, _))) => Ok(Answer::Unavailable),
            Ok(Ok((_, line))) => Ok(parse_answer(&line)),
            Ok(Err(e)) => Err(ApproverError::Io(e)),
            Err(_) => Ok(Answer::Timeout),
        }
    }
}

/// Answers from a script, recording every request (for tests). Optionally moves a
/// manual clock before answering, to simulate a slow human.
#[derive(Default)]
pub struct ScriptedApprover {
    answers: Mutex<VecDeque<Result<Answer, String>>>,
    requests: Mutex<Vec<ApprovalRequest>>,
    delay: Option<(Arc<ManualClock>, Duration)>,
    kind: Option<ApproverKind>,
}

impl std::fmt::Debug for ScriptedApprover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedApprover").finish_non_exhaustive()
    }
}

impl ScriptedApprover {
    /// An approver that gives `answers` in order, then [`Answer::Unavailable`].
    pub fn new(answers: impl IntoIterator<Item = Answer>) -> Self {
        Self {
            answers: Mutex::new(answers.into_iter().map(Ok).collect()),
            ..Self::default()
        }
    }

    /// Makes the next answer an approver error.
    pub fn then_error(self, message: &str) -> Self {
        self.answers.lock().push_back(Err(message.to_owned()));
        self
    }

    /// Advances `clock` by `by` before each answer.
    pub fn with_delay(mut self, clock: Arc<ManualClock>, by: Duration) -> Self {
        self.delay = Some((clock, by));
        self
    }

    /// Declares the approver asynchronous (server-side) instead of interactive.
    pub fn asynchronous(mut self) -> Self {
        self.kind = Some(ApproverKind::Async);
        self
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<ApprovalRequest> {
        self.requests.lock().clone()
    }
}

impl Approver for ScriptedApprover {
    fn name(&self) -> &str {
        "scripted"
    }

    fn kind(&self) -> ApproverKind {
        self.kind.unwrap_or(ApproverKind::Interactive)
    }

    fn request(
        &self,
        request: &ApprovalRequest,
        _deadline: Instant,
    ) -> Result<Answer, ApproverError> {
        self.requests.lock().push(request.clone());
        if let Some((clock, by)) = &self.delay {
            clock.advance(*by);
        }
        let next = self.answers.lock().pop_front();
        match next {
            Some(Ok(answer)) => Ok(answer),
            Some(Err(message)) => Err(ApproverError::Other(message)),
            None => Ok(Answer::Unavailable),
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

    fn request() -> ApprovalRequest {
        ApprovalRequest::new(
            SessionKey::new("t", "s"),
            "rm -rf build",
            Tier::Dangerous,
            vec![RuleId::RmRecursive],
            vec!["rm -rf build".into()],
        )
    }

    #[test]
    fn typed_answers_map_to_answers_and_anything_else_denies() {
        assert_eq!(parse_answer("o\n"), Answer::Once);
        assert_eq!(parse_answer("Session"), Answer::Session);
        assert_eq!(parse_answer("a"), Answer::Always);
        assert_eq!(parse_answer("d"), Answer::Deny);
        assert_eq!(parse_answer(""), Answer::Deny);
        assert_eq!(parse_answer("sure, go ahead"), Answer::Deny);
    }

    #[test]
    fn the_tty_prompt_shows_command_rules_and_choices() {
        let out = Arc::new(Mutex::new(Vec::<u8>::new()));
        struct Sink(Arc<Mutex<Vec<u8>>>);
        impl Write for Sink {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let tty = TtyApprover::new(std::io::Cursor::new(b"s\n".to_vec()), Sink(out.clone()));
        let deadline = Instant::now() + Duration::from_secs(60);
        assert_eq!(tty.request(&request(), deadline).unwrap(), Answer::Session);
        let shown = String::from_utf8(out.lock().clone()).unwrap();
        assert!(shown.contains("rm -rf build"), "{shown}");
        assert!(
            shown.contains("fs.rm_recursive: Recursive delete."),
            "{shown}"
        );
        assert!(
            shown.contains("[o]nce / [s]ession / [a]lways / [d]eny"),
            "{shown}"
        );
    }

    #[test]
    fn the_prompt_text_is_pinned() {
        assert_eq!(
            prompt_text(&request(), Duration::from_secs(60)),
            "\n⚠  hermetic: dangerous command needs approval\n   rm -rf build\n   - fs.rm_recursive: Recursive delete.\nAllow? [o]nce / [s]ession / [a]lways / [d]eny (deny after 60 s): "
        );
    }

    #[test]
    fn a_closed_tty_is_nobody_answering() {
        let tty = TtyApprover::new(std::io::Cursor::new(Vec::new()), std::io::sink());
        let deadline = Instant::now() + Duration::from_secs(60);
        assert_eq!(
            tty.request(&request(), deadline).unwrap(),
            Answer::Unavailable
        );
    }

    #[test]
    fn a_wait_inside_a_call_ends_before_the_call_does() {
        let now = Instant::now();
        let s = Duration::from_secs;
        // Long calls keep CALL_MARGIN back; short ones half of what is left.
        assert_eq!(wait_within_call(now + s(300), now), now + s(295));
        assert_eq!(wait_within_call(now + s(4), now), now + s(2));
        assert_eq!(wait_within_call(now, now), now);
        assert_eq!(wait_within_call(now, now + s(1)), now);
    }

    #[test]
    fn a_silent_tty_times_out() {
        struct Never;
        impl std::io::Read for Never {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                std::thread::sleep(Duration::from_secs(3600));
                Ok(0)
            }
        }
        let tty = TtyApprover::new(std::io::BufReader::new(Never), std::io::sink());
        // A deadline already passed: the prompt is shown and the answer is a timeout.
        let answer = tty.request(&request(), Instant::now()).unwrap();
        assert_eq!(answer, Answer::Timeout);
    }
}
