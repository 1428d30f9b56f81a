//! Single-use answers: a nonce per approval question, remembered until the question
//! expires, so an answer that crosses requests (MCP 2026-07-28's sealed
//! `requestState`) approves one run and no more. Behind a trait so a shared store
//! (Redis) can hold the nonces when hosts are many; this module has the in-memory one.

use super::store::StoreError;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Where used nonces are remembered.
///
/// Implementations must be safe to share between threads, and `consume` must be
/// atomic: of two concurrent calls with the same nonce, exactly one is told it is
/// fresh. The gate's callers treat an error as "already used" (the answer is refused,
/// never honoured twice).
pub trait NonceStore: Send + Sync {
    /// Marks `nonce` used and says whether it was fresh; remembers it for at least
    /// `ttl` (after which the answer carrying it has expired anyway).
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot answer.
    fn consume(&self, nonce: &str, ttl: Duration) -> Result<bool, StoreError>;
}

/// Longest nonce [`MemoryNonceStore`] keeps: nonces are made by the host (32 hex
/// digits), so anything longer is not one of ours.
const MAX_NONCE_BYTES: usize = 64;

/// Used nonces in this process's memory (one machine; a restart forgets them, which
/// is safe as long as what they seal dies with the process too — the server's
/// `requestState` key and its monotonic deadlines do).
///
/// Memory is bounded by expiry: an expired nonce is dropped at the next sweep, and a
/// sweep runs whenever the map has doubled since the last one, so the map holds at
/// most about twice the nonces used within one time-to-live.
#[derive(Debug, Default)]
pub struct MemoryNonceStore {
    inner: Mutex<Used>,
}

#[derive(Debug, Default)]
struct Used {
    until: HashMap<String, Instant>,
    /// The map's size after the last sweep.
    swept_at: usize,
}

impl MemoryNonceStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many nonces are remembered now (expired ones not yet swept included).
    pub fn len(&self) -> usize {
        self.inner.lock().until.len()
    }

    /// Whether no nonce is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// [`NonceStore::consume`] at `now` (tests move time by hand).
    pub fn consume_at(&self, nonce: &str, ttl: Duration, now: Instant) -> bool {
        if nonce.is_empty() || nonce.len() > MAX_NONCE_BYTES {
            return false;
        }
        let mut used = self.inner.lock();
        if used.until.len() >= (used.swept_at * 2).max(64) {
            used.until.retain(|_, until| *until > now);
            used.swept_at = used.until.len();
        }
        let until = now + ttl;
        match used.until.get_mut(nonce) {
            Some(held) if *held > now => false,
            Some(held) => {
                *held = until;
                true
            }
            None => {
                used.until.insert(nonce.to_owned(), until);
                true
            }
        }
    }
}

impl NonceStore for MemoryNonceStore {
    fn consume(&self, nonce: &str, ttl: Duration) -> Result<bool, StoreError> {
        Ok(self.consume_at(nonce, ttl, Instant::now()))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn a_nonce_is_fresh_once() {
        let store = MemoryNonceStore::new();
        let ttl = Duration::from_secs(300);
        assert!(store.consume("a1", ttl).unwrap());
        assert!(!store.consume("a1", ttl).unwrap());
        assert!(store.consume("b2", ttl).unwrap());
        // Not ours: empty or oversized.
        assert!(!store.consume("", ttl).unwrap());
        assert!(!store.consume(&"x".repeat(65), ttl).unwrap());
    }

    #[test]
    fn concurrent_uses_of_one_nonce_find_it_fresh_exactly_once() {
        let store = MemoryNonceStore::new();
        let fresh = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    if store.consume("same", Duration::from_secs(60)).unwrap() {
                        fresh.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                });
            }
        });
        assert_eq!(fresh.into_inner(), 1);
    }

    #[test]
    fn expired_nonces_are_forgotten_so_memory_stays_bounded() {
        let store = MemoryNonceStore::new();
        let start = Instant::now();
        let ttl = Duration::from_secs(10);
        for i in 0..10_000u32 {
            // Time moves 1 s per nonce and each lives 10 s: about ten are live at once.
            let now = start + Duration::from_secs(u64::from(i));
            assert!(store.consume_at(&format!("n{i}"), ttl, now));
        }
        // Ten live at the end (those of the last 10 s), plus what the last sweep left.
        assert!(store.len() <= 128, "{} remembered", store.len());
        // A forgotten nonce had expired: what it sealed is no answer any more.
        let later = start + Duration::from_secs(20_000);
        assert!(store.consume_at("n9999", ttl, later));
    }
}
