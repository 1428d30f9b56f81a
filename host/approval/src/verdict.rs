//! The gate's answer for one command, as a value: shared by the flow that reaches it
//! and the approvers and observers that see it.

use hermetic_detect::{RuleId, Tier};
use serde::Serialize;

/// How the gate decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Nothing dangerous found.
    Allowed,
    /// Dangerous, but approvals are off for this tenant (logged).
    AllowedModeOff,
    /// Dangerous, but every rule hit (or the command) is on the permanent allowlist.
    AllowedAllowlist,
    /// Dangerous, but every rule hit was approved earlier in this session.
    AllowedSession,
    /// Approved for this one run.
    ApprovedOnce,
    /// Approved, and its rules for the rest of the session.
    ApprovedSession,
    /// Approved, and its rules permanently (written to the allowlist file).
    ApprovedAlways,
    /// Nobody answered, and the operator set `headless = "allow"`.
    ApprovedHeadless,
    /// A human (or the smart approver) refused.
    Denied,
    /// Nobody answered before the deadline.
    Timeout,
    /// Nobody could be asked (no approver, no terminal, no client).
    NoApprover,
    /// Asking failed.
    ApproverError,
    /// The human dismissed the question without choosing.
    Dismissed,
    /// The question was sent to the client to answer with a retry of the call (MCP
    /// 2026-07-28 `input_required`); nothing ran.
    InputRequired,
    /// On the hardline list: never runs.
    BlockedHardline,
    /// Matched an operator deny rule.
    BlockedDenyRule,
}

impl Outcome {
    /// The outcome's name, as it is serialized (`approved_once`, `denied`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allowed => "allowed",
            Self::AllowedModeOff => "allowed_mode_off",
            Self::AllowedAllowlist => "allowed_allowlist",
            Self::AllowedSession => "allowed_session",
            Self::ApprovedOnce => "approved_once",
            Self::ApprovedSession => "approved_session",
            Self::ApprovedAlways => "approved_always",
            Self::ApprovedHeadless => "approved_headless",
            Self::Denied => "denied",
            Self::Timeout => "timeout",
            Self::NoApprover => "no_approver",
            Self::ApproverError => "approver_error",
            Self::Dismissed => "dismissed",
            Self::InputRequired => "input_required",
            Self::BlockedHardline => "blocked_hardline",
            Self::BlockedDenyRule => "blocked_deny_rule",
        }
    }
}

/// Who made the decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// The detector found nothing.
    Detector,
    /// The operator's policy (hardline, deny rules, mode, allowlist, headless).
    Policy,
    /// An earlier approval in this session.
    Session,
    /// The smart approver.
    Smart,
    /// A human, through the approver.
    Human,
    /// Nobody (timeout, no approver, error): silence.
    Nobody,
}

/// The gate's answer for one command: what the agent and the audit log see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// May the command run?
    pub approved: bool,
    /// Its tier.
    pub tier: Tier,
    /// The rules it triggered.
    pub rules: Vec<RuleId>,
    /// Their descriptions, in the same order.
    pub descriptions: Vec<&'static str>,
    /// How the decision was reached.
    pub outcome: Outcome,
    /// Who reached it.
    pub decided_by: DecidedBy,
    /// Which approver answered, when a human did (`client`, `console`, `tty` …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
    /// For the agent: what happened and what to do next.
    pub message: String,
    /// The operator deny entry that matched, for `blocked_deny_rule`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deny_entry: Option<String>,
    /// The simple commands the detector saw.
    pub commands: Vec<String>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::Outcome;

    #[test]
    fn an_outcome_s_name_is_its_serialized_form() {
        use Outcome::*;
        for outcome in [
            Allowed,
            AllowedModeOff,
            AllowedAllowlist,
            AllowedSession,
            ApprovedOnce,
            ApprovedSession,
            ApprovedAlways,
            ApprovedHeadless,
            Denied,
            Timeout,
            NoApprover,
            ApproverError,
            Dismissed,
            InputRequired,
            BlockedHardline,
            BlockedDenyRule,
        ] {
            assert_eq!(
                serde_json::to_value(outcome).unwrap(),
                serde_json::json!(outcome.as_str())
            );
        }
    }
}
