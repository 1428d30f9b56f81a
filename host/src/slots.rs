//! Concurrency caps: a counting semaphore whose waiters give up after a bounded time.
//!
//! Hand-written because calls run on plain threads (the sync API) and std has no
//! semaphore; `tokio::sync::Semaphore` would force every caller onto a runtime.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// A fixed number of slots.
#[derive(Debug)]
pub struct Slots {
    capacity: usize,
    used: Mutex<usize>,
    freed: Condvar,
}

/// A held slot; released on drop.
#[derive(Debug)]
pub struct Slot<'a> {
    slots: &'a Slots,
}

impl Slots {
    /// `capacity` slots (at least one).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            used: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    /// The number of slots.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Takes a slot, waiting at most `wait` for one to free up. `None` if none did.
    pub fn acquire(&self, wait: Duration) -> Option<Slot<'_>> {
        let deadline = Instant::now() + wait;
        let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        while *used >= self.capacity {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            used = self
                .freed
                .wait_timeout(used, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        *used += 1;
        Some(Slot { slots: self })
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut used = self.slots.used.lock().unwrap_or_else(|p| p.into_inner());
        *used = used.saturating_sub(1);
        self.slots.freed.notify_one();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn a_full_set_refuses_after_the_wait_and_frees_on_drop() {
        let slots = Slots::new(2);
        let a = slots.acquire(Duration::ZERO).unwrap();
        let _b = slots.acquire(Duration::ZERO).unwrap();
        assert!(slots.acquire(Duration::from_millis(10)).is_none());
        drop(a);
        assert!(slots.acquire(Duration::ZERO).is_some());
    }

    #[test]
    fn a_waiter_gets_the_slot_another_thread_frees() {
        let slots = std::sync::Arc::new(Slots::new(1));
        let held = slots.acquire(Duration::ZERO).unwrap();
        let other = slots.clone();
        let waiter = std::thread::spawn(move || other.acquire(Duration::from_secs(30)).is_some());
        std::thread::sleep(Duration::from_millis(20));
        drop(held);
        assert!(waiter.join().unwrap());
    }
}
