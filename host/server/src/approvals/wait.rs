//! Waiting for an answer until a deadline, or until the asking call is cancelled.

use hermetic::CancelToken;
use std::sync::mpsc;
use std::time::Instant;

/// Waits on `rx` until `deadline`, or until `cancel` fires (polled: the approver
/// waits on a blocking thread, and a cancelled call — its client went away, its
/// session was deleted — must not sit here until the deadline). `Err` when nothing
/// came in time.
pub(super) fn wait<T>(
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

/// How often a waiting approver looks at its call's cancel token: quick enough that
/// a cancelled call ends at once for its client, rare enough to cost nothing.
const CANCEL_POLL: std::time::Duration = std::time::Duration::from_millis(50);
