//! Concurrency caps: a counting semaphore whose waiters give up after a bounded time.
//!
//! Hand-written because it serves two kinds of waiter over one count: plain threads
//! (the sync API) block on a condvar, and async callers wait on a [`Notify`] without
//! holding any thread — so thousands of queued calls of one tenant cost memory, not
//! the blocking-pool threads every other tenant's calls need. `tokio::sync::Semaphore`
//! has no blocking acquire with a timeout, and std has no semaphore.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// A fixed number of slots.
#[derive(Debug)]
pub struct Slots {
    capacity: usize,
    state: Mutex<State>,
    freed: Condvar,
    freed_async: Notify,
}

/// The count, and how many threads sleep on it.
#[derive(Debug, Default)]
struct State {
    used: usize,
    /// Threads in [`Slots::acquire`] waiting on `freed`: a release with none skips the
    /// condvar, whose notify is a futex syscall even with no one to wake (seen in the
    /// throughput bench's profile, on every call).
    sleepers: usize,
}

/// A held slot; released on drop.
#[derive(Debug)]
pub struct Slot {
    slots: Arc<Slots>,
}

impl Slots {
    /// `capacity` slots (at least one).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            state: Mutex::new(State::default()),
            freed: Condvar::new(),
            freed_async: Notify::new(),
        }
    }

    /// The number of slots.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Takes a slot if one is free.
    pub fn try_acquire(self: &Arc<Self>) -> Option<Slot> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.used >= self.capacity {
            return None;
        }
        state.used += 1;
        Some(Slot {
            slots: Arc::clone(self),
        })
    }

    /// Takes a slot, waiting at most `wait` for one to free up, without blocking a
    /// thread. `None` if none did.
    pub async fn acquire_async(self: &Arc<Self>, wait: Duration) -> Option<Slot> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let notified = self.freed_async.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(slot) = self.try_acquire() {
                return Some(slot);
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.try_acquire();
            }
        }
    }

    /// Takes a slot, waiting at most `wait` for one to free up. `None` if none did.
    pub fn acquire(self: &Arc<Self>, wait: Duration) -> Option<Slot> {
        let deadline = Instant::now() + wait;
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while state.used >= self.capacity {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            state.sleepers += 1;
            state = self
                .freed
                .wait_timeout(state, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
            state.sleepers -= 1;
        }
        state.used += 1;
        Some(Slot {
            slots: Arc::clone(self),
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut state = self.slots.state.lock().unwrap_or_else(|p| p.into_inner());
        state.used = state.used.saturating_sub(1);
        let sleepers = state.sleepers;
        drop(state);
        // One waiter of each kind: whichever takes the slot first wins, the other
        // waits again. A notify with no async waiter is kept for the next one, which
        // then finds the slot taken or free and acts on that.
        if sleepers > 0 {
            self.slots.freed.notify_one();
        }
        self.slots.freed_async.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_set_refuses_after_the_wait_and_frees_on_drop() {
        let slots = Arc::new(Slots::new(2));
        let a = slots.acquire(Duration::ZERO).unwrap();
        let _b = slots.acquire(Duration::ZERO).unwrap();
        assert!(slots.acquire(Duration::from_millis(10)).is_none());
        drop(a);
        assert!(slots.acquire(Duration::ZERO).is_some());
    }

    #[test]
    fn a_waiter_gets_the_slot_another_thread_frees() {
        let slots = Arc::new(Slots::new(1));
        let held = slots.acquire(Duration::ZERO).unwrap();
        let other = slots.clone();
        let waiter = std::thread::spawn(move || other.acquire(Duration::from_secs(30)).is_some());
        std::thread::sleep(Duration::from_millis(20));
        drop(held);
        assert!(waiter.join().unwrap());
    }

    #[tokio::test]
    async fn an_async_waiter_holds_no_thread_and_gets_the_freed_slot() {
        let slots = Arc::new(Slots::new(1));
        let held = slots.acquire(Duration::ZERO).unwrap();
        // Many waiters on a current-thread runtime: they cannot be holding threads.
        let waiters: Vec<_> = (0..100)
            .map(|_| {
                let s = Arc::clone(&slots);
                tokio::spawn(
                    async move { s.acquire_async(Duration::from_secs(30)).await.is_some() },
                )
            })
            .collect();
        tokio::task::yield_now().await;
        drop(held);
        for w in waiters {
            assert!(w.await.unwrap());
        }
    }

    #[tokio::test]
    async fn an_async_waiter_gives_up_after_its_wait() {
        let slots = Arc::new(Slots::new(1));
        let _held = slots.acquire(Duration::ZERO).unwrap();
        assert!(
            slots
                .acquire_async(Duration::from_millis(20))
                .await
                .is_none()
        );
    }
}
