//! What a human's answer means: the four choices, the message and form that ask for
//! one, how a client's elicitation answer reads, and the key that names a question.

use crate::formats::hex;
use hermetic::approval::{Answer, ApprovalRequest, ApproverError};
use rmcp::model::{ElicitResult, ElicitationAction};

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
pub(super) fn form(request: &ApprovalRequest) -> serde_json::Value {
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
pub(super) fn answer_of(
    result: &ElicitResult,
    request: &ApprovalRequest,
) -> Result<Answer, ApproverError> {
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

/// A question's key in `inputRequests`: the same for the same command and rules, so
/// the retry finds the answer to the question its own gate asks.
pub(super) fn approval_key(request: &ApprovalRequest) -> String {
    use sha2::Digest;
    let mut hash = sha2::Sha256::new();
    hash.update(request.command.as_bytes());
    for rule in &request.rules {
        hash.update([0]);
        hash.update(rule.as_str().as_bytes());
    }
    format!("approval-{}", &hex(&hash.finalize())[..32])
}

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

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]
mod tests {
    use super::*;
    use crate::approvals::test_support::request;
    use hermetic::approval::SessionKey;

    #[test]
    fn a_tenants_own_always_covers_its_session_only() {
        assert_eq!(tenant_scoped(Answer::Always, &request()), Answer::Session);
        assert_eq!(tenant_scoped(Answer::Once, &request()), Answer::Once);
        let mut operator = request();
        operator.key = SessionKey::new("", "s1");
        assert_eq!(tenant_scoped(Answer::Always, &operator), Answer::Always);
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
}
