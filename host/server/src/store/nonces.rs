//! Used answers of MCP 2026-07-28 approval rounds, shared by the nodes: a nonce is
//! taken with one `SET NX PX`, so of two retries of the same answer — on one node or
//! two — exactly one is told it is fresh, and the key expires with the round.

use super::BlockingRedis;
use hermetic::approval::{NonceStore, StoreError};
use std::time::Duration;

/// Longest nonce taken: the host makes them (32 hex digits); a sealed state is
/// verified before its nonce is looked at, so nothing longer reaches here.
const MAX_NONCE_BYTES: usize = 64;

/// Used nonces in Redis.
pub struct RedisNonces {
    redis: BlockingRedis,
}

impl std::fmt::Debug for RedisNonces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisNonces")
            .field("store", &self.redis.shown)
            .finish_non_exhaustive()
    }
}

impl RedisNonces {
    /// Nonces in the Redis at `url` (nothing connected yet).
    ///
    /// # Errors
    /// [`super::StoreError`] when the URL does not parse.
    pub fn new(url: &str) -> Result<Self, super::StoreError> {
        Ok(Self {
            redis: BlockingRedis::open(url)?,
        })
    }
}

impl NonceStore for RedisNonces {
    fn consume(&self, nonce: &str, ttl: Duration) -> Result<bool, StoreError> {
        if nonce.len() > MAX_NONCE_BYTES {
            return Ok(false);
        }
        let millis = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
        let mut command = redis::cmd("SET");
        command
            .arg(format!("hermetic:nonce:{nonce}"))
            .arg(1)
            .arg("NX")
            .arg("PX")
            .arg(millis);
        // Repeated on a new connection if a kept one died (`with`): had the first
        // attempt reached Redis, the second finds the nonce taken and refuses — the
        // safe side.
        let set: Option<String> = self
            .redis
            .with(|c| command.query(c))
            .map_err(|e| StoreError(e.to_string()))?;
        Ok(set.is_some())
    }
}
