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
//!
//! The parts, lowest first: `answers` (the four choices, the form, what an answer
//! means), `wait` (a deadline- and cancel-bound wait), `console` (what the console
//! lists and is told), `cluster` (the same across nodes), `ack` (telling the console
//! the gate acted), `broker`, `elicitation`, `round` (the 2026-07-28 way of asking,
//! sealed by `seal`), and `mcp`, which chooses among them.
//!
//! [`ApproverChoice`]: hermetic::approval::ApproverChoice
//! [`Answer::Unavailable`]: hermetic::approval::Answer::Unavailable
//! [`Approver`]: hermetic::approval::Approver
//! [`ApproverKind::Async`]: hermetic::approval::ApproverKind::Async

mod ack;
mod answers;
mod broker;
mod cluster;
mod console;
mod elicitation;
mod mcp;
mod round;
mod seal;
#[cfg(test)]
mod test_support;
mod wait;

pub use answers::{CHOICES, parse_choice};
pub use broker::ApprovalBroker;
pub use console::{BrokerError, PendingApproval, Receipt, SETTLE_WAIT, Settled};
pub use elicitation::ElicitationApprover;
pub use mcp::McpApprover;
pub use round::{InputRound, Rounds};
