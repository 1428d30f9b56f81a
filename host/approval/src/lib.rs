//! # hermetic-approval — the gate every shell command passes
//!
//! Every shell command an agent sends goes through [`ApprovalGate::check`] before a
//! terminal backend runs it:
//!
//! 1. **Detection** ([`Detector`], from `hermetic-detect`): hardline (never runs),
//!    dangerous (needs approval) or safe, with the [`RuleId`]s that matched.
//! 2. **The flow** ([`ApprovalGate`]): hardline → operator deny rules → mode `off` →
//!    permanent allowlist → session approvals ([`ApprovalStore`]) → smart mode (an
//!    OpenAI-compatible endpoint) → a human ([`Approver`]) → silence is denial.
//!
//! The settings are data in `hermetic-policy` ([`ApprovalConfig`]); this crate holds
//! the state (session approvals, the allowlist file) and the approvers.
//!
//! ```
//! use hermetic_approval::{ApprovalConfig, ApprovalContext, ApprovalGate, Outcome};
//! let gate = ApprovalGate::new(&ApprovalConfig::default())?;
//! let ctx = ApprovalContext::new("tenant", "session");
//! assert!(gate.check(&ctx, "ls -la").approved);
//! // No approver attached: nobody can answer, so a dangerous command is denied.
//! let verdict = gate.check(&ctx, "rm -rf build");
//! assert_eq!(verdict.outcome, Outcome::NoApprover);
//! assert!(!verdict.approved);
//! # Ok::<(), hermetic_approval::ConfigError>(())
//! ```

mod allowlist;
mod approver;
pub mod clock;
mod flow;
mod nonce;
mod smart;
mod store;
mod verdict;

pub use allowlist::{AllowlistError, AllowlistFile};
pub use approver::{
    Answer, ApprovalObserver, ApprovalRequest, Approver, ApproverError, ApproverKind, CALL_MARGIN,
    ScriptedApprover, TtyApprover, parse_answer, prompt_text, wait_within_call,
};
pub use clock::{Clock, ManualClock, SystemClock};
pub use flow::{ApprovalContext, ApprovalGate};
pub use hermetic_detect::{
    Detection, Detector, DetectorConfig, Hit, RULES, Rule, RuleId, Tier, limits, rules,
};
pub use hermetic_policy::approval::{
    ApprovalConfig, ApproverChoice, ConfigError, Entry, Headless, Mode, Pattern, Policy,
    SmartConfig,
};
pub use nonce::{MemoryNonceStore, NonceStore};
pub use smart::{
    SYSTEM_PROMPT, SmartAnswer, SmartClient, SmartError, parse_smart_answer, strip_comments,
};
pub use store::{ApprovalStore, MemoryStore, SessionKey, StoreError};
pub use verdict::{DecidedBy, Outcome, Verdict};
