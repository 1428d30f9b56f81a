//! The key and clock that seal an MCP 2026-07-28 approval round (`requestState`).
//!
//! One node alone seals with a random key of its own and writes deadlines on its
//! monotonic clock: nothing another process could verify or an operator's clock step
//! could move. Nodes of a cluster seal with a key derived from a secret they all hold
//! (`[cluster] state_key`) and write deadlines on the wall clock, the only clock they
//! share (keep them in NTP sync: a node whose clock runs ahead ends a round early,
//! never late by more than its skew). The two kinds carry different versions, and the
//! version is sealed too, so a state of one kind never opens as the other.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Which clock a sealed deadline is written on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Clock {
    /// Milliseconds since this process's first round.
    Monotonic(Instant),
    /// Milliseconds since the Unix epoch.
    Wall,
}

/// How rounds are sealed: a key and a clock.
pub(crate) struct RoundSeal {
    key: [u8; 32],
    clock: Clock,
}

impl std::fmt::Debug for RoundSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoundSeal")
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

impl RoundSeal {
    /// This process's own seal: a fresh random key, the monotonic clock. `None` when
    /// the OS random source fails (no round can be sealed then).
    pub(crate) fn process() -> Option<Self> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).ok()?;
        Some(Self {
            key,
            clock: Clock::Monotonic(Instant::now()),
        })
    }

    /// The seal every node holding `secret` shares: the key derived from it (so the
    /// secret itself is never the HMAC key of anything else), the wall clock.
    pub(crate) fn shared(secret: &str) -> Self {
        use sha2::Digest;
        let key = sha2::Sha256::new()
            .chain_update(b"hermetic requestState key\0")
            .chain_update(secret.as_bytes())
            .finalize()
            .into();
        Self {
            key,
            clock: Clock::Wall,
        }
    }

    /// The version a sealed state starts with.
    pub(crate) fn version(&self) -> &'static str {
        match self.clock {
            Clock::Monotonic(_) => "v2",
            Clock::Wall => "v3",
        }
    }

    /// `deadline` as written in a state.
    pub(crate) fn write_deadline(&self, deadline: Instant) -> u128 {
        match self.clock {
            Clock::Monotonic(origin) => deadline.saturating_duration_since(origin).as_millis(),
            Clock::Wall => {
                let left = deadline.saturating_duration_since(Instant::now());
                (SystemTime::now() + left)
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis())
            }
        }
    }

    /// A deadline read from a state, on this process's clock; `None` when it cannot
    /// be placed (treated as expired).
    pub(crate) fn read_deadline(&self, at: u64) -> Option<Instant> {
        let at = Duration::from_millis(at);
        match self.clock {
            Clock::Monotonic(origin) => origin.checked_add(at),
            Clock::Wall => {
                let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?;
                match at.checked_sub(now) {
                    Some(left) => Instant::now().checked_add(left),
                    None => Instant::now().checked_sub(now - at),
                }
            }
        }
    }

    /// The HMAC-SHA256 of `binding` then `body` under this seal's key.
    pub(crate) fn tag(&self, binding: &[u8], body: &str) -> [u8; 32] {
        hmac_sha256(&self.key, &[binding, body.as_bytes()])
    }
}

/// HMAC-SHA256 (RFC 2104) over `sha2`, which the server has already: one use does
/// not justify another crate.
fn hmac_sha256(key: &[u8; 32], message: &[&[u8]]) -> [u8; 32] {
    use sha2::Digest;
    let mut inner_pad = [0x36u8; 64];
    let mut outer_pad = [0x5cu8; 64];
    for (i, byte) in key.iter().enumerate() {
        inner_pad[i] ^= byte;
        outer_pad[i] ^= byte;
    }
    let mut inner = sha2::Sha256::new().chain_update(inner_pad);
    for part in message {
        inner.update(part);
    }
    sha2::Sha256::new()
        .chain_update(outer_pad)
        .chain_update(inner.finalize())
        .finalize()
        .into()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    /// RFC 4231 test case 2 needs a short key; case 1's 20-byte key, zero-padded to
    /// 32 bytes, is the same HMAC key (keys shorter than the block are zero-padded).
    #[test]
    fn hmac_matches_rfc_4231() {
        let mut key = [0u8; 32];
        key[..20].copy_from_slice(&[0x0b; 20]);
        let tag = hmac_sha256(&key, &[b"Hi ", b"There"]);
        assert_eq!(
            crate::formats::hex(&tag),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
    }

    #[test]
    fn shared_seals_agree_and_differ_from_the_secret() {
        let a = RoundSeal::shared("x".repeat(40).as_str());
        let b = RoundSeal::shared("x".repeat(40).as_str());
        let c = RoundSeal::shared("y".repeat(40).as_str());
        assert_eq!(a.tag(b"bind", "body"), b.tag(b"bind", "body"));
        assert_ne!(a.tag(b"bind", "body"), c.tag(b"bind", "body"));
        assert_ne!(a.version(), RoundSeal::process().unwrap().version());
    }

    #[test]
    fn wall_deadlines_round_trip_and_past_ones_read_as_past() {
        let seal = RoundSeal::shared("k");
        let deadline = Instant::now() + Duration::from_secs(30);
        let at = u64::try_from(seal.write_deadline(deadline)).unwrap();
        let read = seal.read_deadline(at).unwrap();
        let diff = if read > deadline {
            read - deadline
        } else {
            deadline - read
        };
        assert!(diff < Duration::from_secs(1), "{diff:?}");
        let past = seal.read_deadline(at - 60_000);
        assert!(past.is_none_or(|p| p < Instant::now()));
        assert!(seal.read_deadline(u64::MAX).is_none_or(|d| d > deadline));
    }
}
