//! State the nodes of a cluster share, behind one trait: [`SharedState`]. Two
//! implementations: [`Embedded`] (this process alone — the default, what a single node
//! has always done, at no extra cost) and [`RedisState`] (`[cluster] redis_url`: every
//! node's limits count together).
//!
//! Today it holds the per-tenant rate limits (tools/call `calls_per_minute`, new
//! sessions `sessions_per_minute`) and the leases of each tenant's live sessions
//! (`max_sessions_per_tenant`); [`RedisNonces`] holds the used answers of MCP
//! 2026-07-28 approval rounds, [`allowlists`] the "always" answers. When the store cannot be reached, what it guards
//! fails closed — a rate-limited call is refused with a clear error, never let through
//! uncounted — and everything it does not guard keeps working; a store back in reach
//! is used again without a restart.

pub mod allowlists;
mod keyvalue;
mod nonces;
mod redis;

pub use keyvalue::RedisKeyValue;
pub use nonces::RedisNonces;
pub(crate) use redis::BlockingRedis;
pub use redis::RedisState;

use crate::auth::RateLimiter;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// The shared store cannot be used right now.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the shared store ({store}) is unreachable: {reason}")]
pub struct StoreError {
    /// Which store, without credentials (`redis://host:port`).
    pub store: String,
    /// What failed.
    pub reason: String,
}

/// A store operation in flight.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// What the nodes of a cluster share.
pub trait SharedState: Send + Sync + std::fmt::Debug {
    /// Takes one unit of `limiter`'s rate (a GCRA step) under `key`: `Ok(Ok(()))`
    /// allowed, `Ok(Err(wait))` over the limit until `wait` has passed.
    fn take<'a>(
        &'a self,
        key: &'a str,
        limiter: &'a RateLimiter,
    ) -> StoreFuture<'a, Result<(), Duration>>;

    /// Whether the store answers now (for `/healthz`).
    fn check(&self) -> StoreFuture<'_, ()>;

    /// Whether this is the embedded store: one process counts alone, so what the
    /// process counts itself (its live sessions) needs no lease here.
    fn is_embedded(&self) -> bool {
        false
    }

    /// Takes one of `max` places under `key` for `member`, for `ttl` (a session's
    /// lease: a node that dies stops renewing, and its places free themselves):
    /// `Ok(false)` when all are held.
    fn lease<'a>(
        &'a self,
        key: &'a str,
        member: &'a str,
        max: usize,
        ttl: Duration,
    ) -> StoreFuture<'a, bool>;

    /// Extends the leases of `members` under `key` to `ttl` from now, taking again
    /// any that lapsed (a live session is always counted).
    fn renew<'a>(
        &'a self,
        key: &'a str,
        members: &'a [String],
        ttl: Duration,
    ) -> StoreFuture<'a, ()>;

    /// Gives `member`'s place under `key` back.
    fn release<'a>(&'a self, key: &'a str, member: &'a str) -> StoreFuture<'a, ()>;

    /// A name for messages (no credentials).
    fn name(&self) -> String;
}

/// This process's own state: each limiter counts here (what a single node does).
#[derive(Debug, Default)]
pub struct Embedded;

impl SharedState for Embedded {
    fn take<'a>(
        &'a self,
        _key: &'a str,
        limiter: &'a RateLimiter,
    ) -> StoreFuture<'a, Result<(), Duration>> {
        Box::pin(std::future::ready(Ok(limiter.check())))
    }

    fn check(&self) -> StoreFuture<'_, ()> {
        Box::pin(std::future::ready(Ok(())))
    }

    fn is_embedded(&self) -> bool {
        true
    }

    fn lease<'a>(
        &'a self,
        _key: &'a str,
        _member: &'a str,
        _max: usize,
        _ttl: Duration,
    ) -> StoreFuture<'a, bool> {
        Box::pin(std::future::ready(Ok(true)))
    }

    fn renew<'a>(
        &'a self,
        _key: &'a str,
        _members: &'a [String],
        _ttl: Duration,
    ) -> StoreFuture<'a, ()> {
        Box::pin(std::future::ready(Ok(())))
    }

    fn release<'a>(&'a self, _key: &'a str, _member: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(std::future::ready(Ok(())))
    }

    fn name(&self) -> String {
        "embedded".to_owned()
    }
}

/// The store a server's `[cluster]` settings name: Redis at `redis_url`, else the
/// embedded one.
///
/// # Errors
/// [`StoreError`] for a URL that does not parse (nothing is connected yet).
pub fn from_url(redis_url: Option<&str>) -> Result<std::sync::Arc<dyn SharedState>, StoreError> {
    Ok(match redis_url {
        Some(url) => std::sync::Arc::new(RedisState::new(url)?),
        None => std::sync::Arc::new(Embedded),
    })
}

/// The store key of one tenant's limit of one kind (`calls`, `sessions`).
pub fn rate_key(kind: &str, tenant: &str) -> String {
    format!("hermetic:rate:{kind}:{tenant}")
}

/// The store key of one tenant's session leases (`max_sessions_per_tenant`).
pub fn sessions_key(tenant: &str) -> String {
    format!("hermetic:sessions:{tenant}")
}
