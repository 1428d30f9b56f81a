//! Used answers of MCP 2026-07-28 approval rounds, shared by the nodes: a nonce is
//! taken with one `SET NX PX`, so of two retries of the same answer — on one node or
//! two — exactly one is told it is fresh, and the key expires with the round.

use super::BlockingRedis;
use hermetic::approval::{NonceStore, StoreError};
use parking_lot::Mutex;
use std::time::Duration;

/// Longest nonce taken: the host makes them (32 hex digits); a sealed state is
/// verified before its nonce is looked at, so nothing longer reaches here.
const MAX_NONCE_BYTES: usize = 64;

/// Used nonces in Redis.
pub struct RedisNonces {
    redis: BlockingRedis,
    /// A connection kept between uses (taken out while in use, so two calls never
    /// wait on one another's round trip).
    idle: Mutex<Option<redis::Connection>>,
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
            idle: Mutex::new(None),
        })
    }
}

impl RedisNonces {
    fn connect(&self) -> Result<redis::Connection, StoreError> {
        self.redis.connect().map_err(|e| StoreError(e.to_string()))
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
        // A kept connection may have died with a Redis restart: then once more on a
        // new one. (Had the first attempt reached Redis, the second finds the nonce
        // taken and refuses: the safe side.)
        let kept = self.idle.lock().take();
        let reused = kept.is_some();
        let mut connection = match kept {
            Some(c) => c,
            None => self.connect()?,
        };
        let mut set: redis::RedisResult<Option<String>> = command.query(&mut connection);
        if set.is_err() && reused {
            connection = self.connect()?;
            set = command.query(&mut connection);
        }
        match set {
            Ok(answer) => {
                *self.idle.lock() = Some(connection);
                Ok(answer.is_some())
            }
            // The connection is dropped: the next use connects again.
            Err(e) => Err(StoreError(self.redis.error(e).to_string())),
        }
    }
}
