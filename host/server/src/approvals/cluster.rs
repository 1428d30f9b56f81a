//! Approvals across the nodes of a cluster (`[cluster] redis_url`): a question raised on
//! one node is listed in every node's console and may be answered on any of them; the
//! call waiting on the first node gets the answer, and the console that gave it is told
//! what the gate did. An answer is taken once (`SET … NX`): a replay, on any node, is
//! refused.
//!
//! Keys (each expiring with its question): `hermetic:approval:{id}` (the question, as
//! the console shows it, with its deadline), `hermetic:approvals` (ids by deadline),
//! `hermetic:answer:{id}` (the answer), `hermetic:settled:{id}` (what the gate did).
//! The asking node polls for the answer ([`POLL`]): a lost message cannot lose an
//! answer, and an answer written before a Redis restart survives it in the
//! append-only file.
//!
//! The asker's side runs on the call's blocking thread, so it uses plain (blocking)
//! connections with timeouts; the console's side is async.

use super::answers::parse_choice;
use super::console::{PendingApproval, Settled};
use crate::store::StoreError;
use hermetic::approval::Answer;
use redis::AsyncCommands as _;
use redis::Commands as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How often a waiting call looks for an answer given on another node.
pub(crate) const POLL: Duration = Duration::from_millis(150);
/// How long one Redis operation may take.
const TIMEOUT: Duration = Duration::from_secs(1);
/// How long what the gate did stays readable for the console that answered.
const SETTLED_TTL_MS: u64 = 120_000;

/// The cluster's shared approvals.
pub(crate) struct ClusterApprovals {
    redis: crate::store::BlockingRedis,
}

impl std::fmt::Debug for ClusterApprovals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterApprovals")
            .field("store", &self.redis.shown)
            .finish()
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn key(kind: &str, id: u64) -> String {
    format!("hermetic:{kind}:{id}")
}

const INDEX: &str = "hermetic:approvals";

/// The answer as stored (what `parse_choice` reads back).
fn answer_text(answer: Answer) -> &'static str {
    match answer {
        Answer::Once => "once",
        Answer::Session => "session",
        Answer::Always => "always",
        _ => "deny",
    }
}

impl ClusterApprovals {
    /// Approvals through the Redis at `url` (nothing connected yet).
    ///
    /// # Errors
    /// [`StoreError`] when the URL does not parse.
    pub(crate) fn new(url: &str) -> Result<Self, StoreError> {
        Ok(Self {
            redis: crate::store::BlockingRedis::open(url)?,
        })
    }

    fn error(&self, reason: impl std::fmt::Display) -> StoreError {
        self.redis.error(reason)
    }

    fn blocking(&self) -> Result<redis::Connection, StoreError> {
        self.redis.connect()
    }

    async fn connection(&self) -> Result<redis::aio::MultiplexedConnection, StoreError> {
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(TIMEOUT))
            .set_response_timeout(Some(TIMEOUT));
        self.redis
            .client()
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| self.error(e))
    }

    /// Lists question `view` for every node's console until `deadline` (Unix ms).
    pub(crate) fn raise(&self, view: &PendingApproval, deadline_ms: u64) -> Result<(), StoreError> {
        let mut c = self.blocking()?;
        let ttl = deadline_ms
            .saturating_sub(unix_ms(SystemTime::now()))
            .max(1);
        let mut record = serde_json::to_value(view).map_err(|e| self.error(e))?;
        record["deadline_ms"] = deadline_ms.into();
        record["raised_ms"] = unix_ms(SystemTime::now()).into();
        redis::pipe()
            .atomic()
            .cmd("SET")
            .arg(key("approval", view.id))
            .arg(record.to_string())
            .arg("PX")
            .arg(ttl)
            .ignore()
            .cmd("ZADD")
            .arg(INDEX)
            .arg(deadline_ms)
            .arg(view.id)
            .ignore()
            .query::<()>(&mut c)
            .map_err(|e| self.error(e))
    }

    /// The answer another node's console gave to `id`, if one did. `connection` is the
    /// waiting call's own, kept between looks (made on the first, made again after a
    /// failure).
    pub(crate) fn answered(
        &self,
        id: u64,
        connection: &mut Option<redis::Connection>,
    ) -> Result<Option<Answer>, StoreError> {
        let c = match connection {
            Some(c) => c,
            None => connection.insert(self.blocking()?),
        };
        let text: Result<Option<String>, _> = c.get(key("answer", id));
        match text {
            Ok(text) => Ok(text.as_deref().and_then(parse_choice)),
            Err(e) => {
                *connection = None;
                Err(self.error(e))
            }
        }
    }

    /// Takes question `id` down (answered, timed out or cancelled on its node).
    pub(crate) fn withdraw(&self, id: u64) {
        if let Ok(mut c) = self.blocking() {
            let _: Result<(), _> = redis::pipe()
                .cmd("DEL")
                .arg(key("approval", id))
                .ignore()
                .cmd("ZREM")
                .arg(INDEX)
                .arg(id)
                .ignore()
                .query(&mut c);
        }
    }

    /// Records what the gate did with the answer to `id`, for the console that gave it.
    pub(crate) fn settle(&self, id: u64, settled: &Settled) {
        let Ok(json) = serde_json::to_string(settled) else {
            return;
        };
        match self.blocking() {
            Ok(mut c) => {
                let done: Result<(), _> = c.pset_ex(key("settled", id), json, SETTLED_TTL_MS);
                if let Err(e) = done {
                    tracing::warn!("approval {id}: could not record what the gate did: {e}");
                }
            }
            Err(e) => tracing::warn!("approval {id}: could not record what the gate did: {e}"),
        }
    }

    /// Every question waiting on any node, as the console lists them (JSON objects).
    pub(crate) async fn list(&self) -> Result<Vec<serde_json::Value>, StoreError> {
        let mut c = self.connection().await?;
        let now = unix_ms(SystemTime::now());
        let ids: Vec<u64> = c
            .zrangebyscore(INDEX, now, "+inf")
            .await
            .map_err(|e| self.error(e))?;
        // Ids whose question expired are dropped from the index as they are seen.
        let _: Result<(), _> = c.zrembyscore(INDEX, 0, now).await;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = ids.iter().map(|id| key("approval", *id)).collect();
        let records: Vec<Option<String>> = c.mget(keys).await.map_err(|e| self.error(e))?;
        Ok(records
            .into_iter()
            .flatten()
            .filter_map(|r| serde_json::from_str::<serde_json::Value>(&r).ok())
            .map(|mut v| {
                let deadline = v["deadline_ms"].as_u64().unwrap_or(now);
                let raised = v["raised_ms"].as_u64().unwrap_or(now);
                v["expires_in_ms"] = deadline.saturating_sub(now).into();
                v["age_ms"] = now.saturating_sub(raised).into();
                v
            })
            .collect())
    }

    /// Gives `answer` to question `id`: `Ok(true)` when it was waiting and this is its
    /// first answer, `Ok(false)` when there is no such question or it was answered
    /// already (on any node).
    pub(crate) async fn answer(&self, id: u64, answer: Answer) -> Result<bool, StoreError> {
        let mut c = self.connection().await?;
        let ttl: i64 = c
            .pttl(key("approval", id))
            .await
            .map_err(|e| self.error(e))?;
        if ttl <= 0 {
            return Ok(false);
        }
        let taken: Option<String> = redis::cmd("SET")
            .arg(key("answer", id))
            .arg(answer_text(answer))
            .arg("NX")
            .arg("PX")
            .arg(ttl.saturating_add(60_000))
            .query_async(&mut c)
            .await
            .map_err(|e| self.error(e))?;
        Ok(taken.is_some())
    }

    /// What the gate did with the answer to `id`, once its node records it (at most
    /// `within`).
    pub(crate) async fn settled(&self, id: u64, within: Duration) -> Option<Settled> {
        let until = tokio::time::Instant::now() + within;
        while tokio::time::Instant::now() < until {
            if let Ok(mut c) = self.connection().await {
                let got: Result<Option<String>, _> = c.get(key("settled", id)).await;
                if let Ok(Some(json)) = got
                    && let Ok(settled) = serde_json::from_str(&json)
                {
                    return Some(settled);
                }
            }
            tokio::time::sleep(POLL).await;
        }
        None
    }
}
