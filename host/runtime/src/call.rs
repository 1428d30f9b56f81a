//! What every call carries, whatever runs it: its cancel token and its progress
//! reports. A leaf module: it depends on nothing else in the crate, so the sandbox,
//! the dispatcher and the terminal seam can all use it without a cycle.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A progress report from a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Tool that reported.
    pub tool: Arc<str>,
    /// Call id it belongs to.
    pub call_id: String,
    /// Units done.
    pub done: u64,
    /// Units in all, when known.
    pub total: Option<u64>,
    /// Short message (capped).
    pub message: String,
}

/// Receives progress reports during a call.
pub type ProgressSink = Arc<dyn Fn(Progress) + Send + Sync>;

/// Asks a running call to stop: [`CancelToken::cancel`] from any thread interrupts the
/// guest at its next epoch tick (within one [`crate::EngineConfig::epoch_tick`]), and
/// the call ends with a `cancelled` error. Clones share one flag.
///
/// Cancelling never affects other calls, and a call that already returned is unaffected.
///
/// ```
/// let token = hermetic::CancelToken::new();
/// let handle = token.clone();
/// assert!(!token.is_cancelled());
/// handle.cancel();
/// assert!(token.is_cancelled());
/// ```
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels every call holding this token (idempotent).
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether [`CancelToken::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}
