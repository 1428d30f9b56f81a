//! The Redis store: limits as one Lua GCRA step each, on Redis's own clock (`TIME`), so
//! every node's calls count against one budget whatever their clocks say. The
//! connection is made on first use and kept by redis-rs's connection manager, which
//! reconnects by itself; every operation has a short timeout, so an unreachable Redis
//! costs a call a bounded wait and a clear error, never a hang.

use super::{SharedState, StoreError, StoreFuture};
use crate::auth::RateLimiter;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use std::time::Duration;

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(1000);
/// How long one answer may take.
const RESPONSE_TIMEOUT: Duration = Duration::from_millis(500);

/// One GCRA step, atomically: `tat` (theoretical arrival time, µs on Redis's clock)
/// moves by the interval when the call fits within the burst; otherwise the wait in
/// µs is returned. Keys expire once they could no longer limit anything.
const GCRA: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local next = tat + interval
local allowed_at = next - tolerance
if allowed_at > now then
  return allowed_at - now
end
redis.call('SET', KEYS[1], string.format('%.0f', next), 'PX', math.floor((next - now) / 1000) + 1000)
return 0
";

/// Takes a lease (`ARGV`: member, max, ttl ms) in the sorted set `KEYS[1]` (member →
/// expiry, ms on Redis's clock): lapsed leases are dropped first; 1 taken, 0 full.
const LEASE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) == false and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ttl * 2)
return 1
";

/// Renews leases (`ARGV`: ttl ms, then members): each gets expiry now + ttl, lapsed
/// ones are taken again.
const RENEW: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], ttl * 2)
return 1
";

/// Redis at one URL.
pub struct RedisState {
    client: redis::Client,
    /// The URL without credentials, for messages.
    shown: String,
    connection: tokio::sync::OnceCell<ConnectionManager>,
    gcra: redis::Script,
    lease: redis::Script,
    renew: redis::Script,
}

impl std::fmt::Debug for RedisState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisState")
            .field("url", &self.shown)
            .finish_non_exhaustive()
    }
}

impl RedisState {
    /// A store at `url` (`redis://[user:password@]host[:port][/db]`); nothing is
    /// connected until it is used.
    ///
    /// # Errors
    /// [`StoreError`] when the URL does not parse.
    pub fn new(url: &str) -> Result<Self, StoreError> {
        let shown = without_credentials(url);
        let client = redis::Client::open(url).map_err(|e| StoreError {
            store: shown.clone(),
            reason: format!("not a Redis URL: {e}"),
        })?;
        Ok(Self {
            client,
            shown,
            connection: tokio::sync::OnceCell::new(),
            gcra: redis::Script::new(GCRA),
            lease: redis::Script::new(LEASE),
            renew: redis::Script::new(RENEW),
        })
    }

    fn error(&self, reason: impl std::fmt::Display) -> StoreError {
        StoreError {
            store: self.shown.clone(),
            reason: reason.to_string(),
        }
    }

    /// The shared connection (made on first use; a failed attempt is tried again on
    /// the next use).
    async fn connection(&self) -> Result<ConnectionManager, StoreError> {
        self.connection
            .get_or_try_init(|| async {
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(CONNECT_TIMEOUT))
                    .set_response_timeout(Some(RESPONSE_TIMEOUT))
                    .set_number_of_retries(1);
                tokio::time::timeout(
                    CONNECT_TIMEOUT * 2,
                    self.client.get_connection_manager_with_config(config),
                )
                .await
                .map_err(|_| self.error("connecting timed out"))?
                .map_err(|e| self.error(e))
            })
            .await
            .cloned()
    }
}

impl RedisState {
    /// The answer of `operation`, within the answer timeout.
    async fn answer<T>(
        &self,
        operation: impl std::future::Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, StoreError> {
        tokio::time::timeout(RESPONSE_TIMEOUT * 2, operation)
            .await
            .map_err(|_| self.error("no answer in time"))?
            .map_err(|e| self.error(e))
    }
}

/// `ttl` in whole milliseconds (at least 1).
fn millis(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
}

impl SharedState for RedisState {
    fn take<'a>(
        &'a self,
        key: &'a str,
        limiter: &'a RateLimiter,
    ) -> StoreFuture<'a, Result<(), Duration>> {
        Box::pin(async move {
            let mut connection = self.connection().await?;
            let (interval, tolerance) = limiter.params();
            let micros = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
            let mut invocation = self.gcra.key(key);
            invocation.arg(micros(interval)).arg(micros(tolerance));
            let wait = self
                .answer(invocation.invoke_async::<i64>(&mut connection))
                .await?;
            Ok(match u64::try_from(wait) {
                Ok(0) | Err(_) => Ok(()),
                Ok(us) => Err(Duration::from_micros(us)),
            })
        })
    }

    fn check(&self) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let mut connection = self.connection().await?;
            let command = redis::cmd("PING");
            self.answer(command.query_async::<String>(&mut connection))
                .await
                .map(|_| ())
        })
    }

    fn lease<'a>(
        &'a self,
        key: &'a str,
        member: &'a str,
        max: usize,
        ttl: Duration,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let mut connection = self.connection().await?;
            let mut invocation = self.lease.key(key);
            invocation.arg(member).arg(max).arg(millis(ttl));
            let taken: i64 = self
                .answer(invocation.invoke_async(&mut connection))
                .await?;
            Ok(taken == 1)
        })
    }

    fn renew<'a>(
        &'a self,
        key: &'a str,
        members: &'a [String],
        ttl: Duration,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            if members.is_empty() {
                return Ok(());
            }
            let mut connection = self.connection().await?;
            let mut invocation = self.renew.key(key);
            invocation.arg(millis(ttl)).arg(members);
            self.answer(invocation.invoke_async::<i64>(&mut connection))
                .await
                .map(|_| ())
        })
    }

    fn release<'a>(&'a self, key: &'a str, member: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut connection = self.connection().await?;
            let mut command = redis::cmd("ZREM");
            command.arg(key).arg(member);
            self.answer(command.query_async::<i64>(&mut connection))
                .await
                .map(|_| ())
        })
    }

    fn name(&self) -> String {
        self.shown.clone()
    }
}

/// Redis at one URL for callers on blocking threads (a tool call's approval wait):
/// plain connections with timeouts on connect, read and write.
pub(crate) struct BlockingRedis {
    client: redis::Client,
    /// The URL without credentials, for messages.
    pub(crate) shown: String,
    /// Connections kept between operations ([`BlockingRedis::with`]); one is taken out
    /// while in use, so two callers never wait on each other's round trip.
    idle: parking_lot::Mutex<Vec<redis::Connection>>,
}

/// How long one blocking operation may take.
const BLOCKING_TIMEOUT: Duration = Duration::from_secs(1);

impl BlockingRedis {
    /// Redis at `url` (nothing connected yet).
    ///
    /// # Errors
    /// [`StoreError`] when the URL does not parse.
    pub(crate) fn open(url: &str) -> Result<Self, StoreError> {
        let shown = without_credentials(url);
        let client = redis::Client::open(url).map_err(|e| StoreError {
            store: shown.clone(),
            reason: format!("not a Redis URL: {e}"),
        })?;
        Ok(Self {
            client,
            shown,
            idle: parking_lot::Mutex::new(Vec::new()),
        })
    }

    /// Runs `op` on a kept connection, else a new one. A kept connection may have died
    /// with a Redis restart: then `op` runs once more on a new one, so callers' `op`s
    /// must be safe to repeat (a script that reached Redis before its answer was lost
    /// runs twice). A failed connection is dropped; the next use connects again.
    pub(crate) fn with<T>(
        &self,
        mut op: impl FnMut(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, StoreError> {
        let kept = self.idle.lock().pop();
        let reused = kept.is_some();
        let mut connection = match kept {
            Some(c) => c,
            None => self.connect()?,
        };
        let mut answer = op(&mut connection);
        if answer.is_err() && reused {
            connection = self.connect()?;
            answer = op(&mut connection);
        }
        let out = answer.map_err(|e| self.error(e))?;
        self.idle.lock().push(connection);
        Ok(out)
    }

    /// The client, for async connections.
    pub(crate) fn client(&self) -> &redis::Client {
        &self.client
    }

    /// A store error saying `reason`.
    pub(crate) fn error(&self, reason: impl std::fmt::Display) -> StoreError {
        StoreError {
            store: self.shown.clone(),
            reason: reason.to_string(),
        }
    }

    /// A new connection whose every operation times out.
    pub(crate) fn connect(&self) -> Result<redis::Connection, StoreError> {
        let connection = self
            .client
            .get_connection_with_timeout(BLOCKING_TIMEOUT)
            .map_err(|e| self.error(e))?;
        connection
            .set_read_timeout(Some(BLOCKING_TIMEOUT))
            .and_then(|()| connection.set_write_timeout(Some(BLOCKING_TIMEOUT)))
            .map_err(|e| self.error(e))?;
        Ok(connection)
    }
}

/// `redis://user:password@host:port/db` → `redis://host:port/db`.
pub(crate) fn without_credentials(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
            format!("{scheme}://{rest}")
        }
        None => "(not a URL)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn messages_never_show_the_password() {
        assert_eq!(
            super::without_credentials("redis://u:secret@10.0.0.5:6379/2"),
            "redis://10.0.0.5:6379/2"
        );
        let e = super::RedisState::new("redis://:pw@").map(|_| ()).err();
        assert!(e.is_none_or(|e| !e.to_string().contains("pw")));
    }
}
