//! The tool calls in flight, by session and request id, so a transport can cancel
//! them at once: one request's when its client went away, a session's when it is
//! deleted, all of them when a shutdown's grace ran out.
//!
//! rmcp cancels a session's handlers only after its own drain period (about five
//! seconds after a DELETE), and never when the HTTP stream of one request is dropped;
//! a guest would keep running to its deadline for a reply nobody reads. The handler
//! registers each call here; the registration ends with the call.

use hermetic::CancelToken;
use parking_lot::Mutex;
use rmcp::model::RequestId;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// One call in flight.
struct LiveCall {
    /// Tells registrations apart (request ids may repeat across sessions, and a
    /// client may reuse one).
    key: u64,
    request: RequestId,
    cancel: CancelToken,
}

/// The calls in flight, by session id.
#[derive(Default)]
pub(crate) struct LiveCalls {
    next: AtomicU64,
    by_session: Mutex<HashMap<String, Vec<LiveCall>>>,
}

/// Keeps a call registered until dropped (when the call returned).
pub(crate) struct Registration<'a> {
    calls: &'a LiveCalls,
    session: String,
    key: u64,
}

impl LiveCalls {
    /// Registers a call of `session` answering `request`, cancelled through `cancel`.
    pub(crate) fn register(
        &self,
        session: &str,
        request: RequestId,
        cancel: CancelToken,
    ) -> Registration<'_> {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock()
            .entry(session.to_owned())
            .or_default()
            .push(LiveCall {
                key,
                request,
                cancel,
            });
        Registration {
            calls: self,
            session: session.to_owned(),
            key,
        }
    }

    /// Cancels the calls of `session` answering `request`. Returns how many there were.
    pub(crate) fn cancel_request(&self, session: &str, request: &RequestId) -> usize {
        self.lock().get(session).map_or(0, |calls| {
            calls
                .iter()
                .filter(|c| &c.request == request)
                .inspect(|c| c.cancel.cancel())
                .count()
        })
    }

    /// Cancels every call of `session`. Returns how many there were.
    pub(crate) fn cancel_session(&self, session: &str) -> usize {
        self.lock().get(session).map_or(0, |calls| {
            calls.iter().for_each(|c| c.cancel.cancel());
            calls.len()
        })
    }

    /// Whether a call of `session` is in flight: a session with one is in use, however
    /// long the call runs.
    pub(crate) fn has_calls(&self, session: &str) -> bool {
        self.lock().contains_key(session)
    }

    /// Cancels every call. Returns how many there were.
    pub(crate) fn cancel_all(&self) -> usize {
        self.lock()
            .values()
            .flatten()
            .inspect(|c| c.cancel.cancel())
            .count()
    }

    fn lock(&self) -> parking_lot::MutexGuard<'_, HashMap<String, Vec<LiveCall>>> {
        self.by_session.lock()
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        let mut sessions = self.calls.lock();
        if let Some(calls) = sessions.get_mut(&self.session) {
            calls.retain(|c| c.key != self.key);
            // No entry outlives its session's last call: the map stays as small as
            // the set of sessions with calls running.
            if calls.is_empty() {
                sessions.remove(&self.session);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancelling_reaches_only_the_named_request_or_session_and_registrations_clean_up() {
        let calls = LiveCalls::default();
        let (a1, a2, b1) = (CancelToken::new(), CancelToken::new(), CancelToken::new());
        let r_a1 = calls.register("a", RequestId::Number(1), a1.clone());
        let _r_a2 = calls.register("a", RequestId::Number(2), a2.clone());
        let r_b1 = calls.register("b", RequestId::Number(1), b1.clone());
        assert_eq!(calls.cancel_request("a", &RequestId::Number(1)), 1);
        assert!(a1.is_cancelled() && !a2.is_cancelled() && !b1.is_cancelled());
        assert_eq!(calls.cancel_session("b"), 1);
        assert!(b1.is_cancelled() && !a2.is_cancelled());
        drop(r_b1);
        assert_eq!(calls.cancel_session("b"), 0);
        assert!(!calls.lock().contains_key("b"));
        drop(r_a1);
        assert_eq!(calls.cancel_all(), 1);
        assert!(a2.is_cancelled());
    }
}
