//! The approval gate: dangerous-command detection and the approval flow.
//!
//! Every shell command an agent sends goes through [`ApprovalGate::check`] before a
//! terminal backend runs it:
//!
//! 1. **Detection** ([`Detector`]): the command is normalized (ANSI escapes, NUL,
//!    NFKC, line continuations; invisible or look-alike characters are dangerous by
//!    themselves), parsed as bash (unparseable → dangerous), and every simple command
//!    — inside substitutions, subshells, functions, loops, heredocs, and inside
//!    carriers such as `bash -c`, `eval`, `ssh host …`, `find -exec`, `xargs` — is
//!    checked after its words are folded statically and wrappers (`sudo`, `env`,
//!    `nice`, `timeout`, …) are unwrapped. Each finding names a [`RuleId`] from the
//!    table in [`rules`], with a [`Tier`]: hardline (never runs) or dangerous (needs
//!    approval).
//! 2. **The flow** ([`ApprovalGate`]): hardline → operator deny rules → mode `off` →
//!    permanent allowlist → session approvals ([`ApprovalStore`]) → smart mode (an
//!    OpenAI-compatible endpoint) → a human ([`Approver`]) → silence is denial.
//!
//! ```
//! use hermetic::approval::{ApprovalConfig, ApprovalContext, ApprovalGate, Outcome};
//! let gate = ApprovalGate::new(&ApprovalConfig::default())?;
//! let ctx = ApprovalContext::new("tenant", "session");
//! assert!(gate.check(&ctx, "ls -la").approved);
//! // No approver attached: nobody can answer, so a dangerous command is denied.
//! let verdict = gate.check(&ctx, "rm -rf build");
//! assert_eq!(verdict.outcome, Outcome::NoApprover);
//! assert!(!verdict.approved);
//! # Ok::<(), hermetic::approval::ConfigError>(())
//! ```

mod allowlist;
mod approver;
mod carriers;
mod checks;
mod code;
mod commands;
mod config;
mod detector;
mod flow;
mod fold;
mod git;
pub mod limits;
mod net;
mod normalize;
mod opts;
mod paths;
pub mod rules;
mod smart;
mod store;
mod walk;

pub use allowlist::{AllowlistError, AllowlistFile};
pub use approver::{
    Answer, ApprovalObserver, ApprovalRequest, Approver, ApproverError, ApproverKind,
    ScriptedApprover, TtyApprover, parse_answer, prompt_text,
};
pub use config::{
    ApprovalConfig, ConfigError, Entry, Headless, Mode, Pattern, Policy, SmartConfig,
};
pub use detector::{Detection, Detector, DetectorConfig, Hit};
pub use flow::{ApprovalContext, ApprovalGate, DecidedBy, Outcome, Verdict};
pub use rules::{RULES, Rule, RuleId, Tier};
pub use smart::{
    SYSTEM_PROMPT, SmartAnswer, SmartClient, SmartError, parse_smart_answer, strip_comments,
};
pub use store::{ApprovalStore, MemoryStore, SessionKey, StoreError};
