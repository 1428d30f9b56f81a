//! Tools' key-value data in the cluster's Redis, so every node sees one store.
//!
//! One hash per store (`hermetic:kvs:{store}`: a field per entry, named by its bucket
//! and key, and the store's use in the fields `#k`, `#b`), so a quota holds for the
//! store whatever buckets its tool spreads it over, and a session store expires as one
//! key (`PEXPIRE`, set by every write). A tenant's session stores count together in
//! `hermetic:kvsess:{tenant}` (`#k`, `#b`, and each store's share) against the
//! operator's ceiling; `hermetic:kvlive:{tenant}` holds each session store's expiry,
//! so the next write of the tenant takes an expired store's share off the total;
//! `hermetic:kvsid:{tenant}{session}` names a session's stores, which its end deletes.
//! Every write is one Lua script that checks the quota and the ceiling and changes the
//! data and the use together — two nodes writing at once cannot both squeeze under a
//! limit. Runs on the call's blocking thread, so plain connections with timeouts
//! ([`super::BlockingRedis`]); Redis unreachable → the operation fails with a clear
//! error and nothing is changed.
//!
//! Data of layout 1 (a hash per bucket, `hermetic:kv:{namespace}`) is moved into its
//! store's hash once per Redis, by the first process that uses the store
//! ([`RedisKeyValue::migrate`]).
//!
//! Keys are named in the scripts (an expired store's hash is deleted by name): one
//! Redis, or a primary with replicas — not Redis Cluster, whose slots would split a
//! store from its tenant's use.

use super::BlockingRedis;
use hermetic::policy::keyvalue::KeyValueQuota;
use hermetic::{
    KeyValueBackend, KeyValueEntry as EntryInfo, KeyValueError, KeyValueNamespace as Namespace,
    KeyValueSettings, KeyValueStoreFilter as StoreFilter, KeyValueStoreId as StoreId,
    KeyValueStoreInfo as StoreInfo,
};
use std::time::Duration;

/// Where a store's hash is: this, then the store's encoded prefix.
const STORE_KEY: &str = "hermetic:kvs:";

/// Writes `ARGV[3]` at field `ARGV[2]` (`ARGV[9]`: the key's length) of store
/// `KEYS[1]` if the field's value is still `ARGV[7]` (when `ARGV[8]` is "1"; "0":
/// whatever it is), within the quota (`ARGV[4..6]`: max keys, max value bytes, max
/// total bytes); for a session store (`ARGV[10]` "1", `ARGV[14]` its name) also within
/// the tenant's ceiling (`ARGV[12..13]`), and its expiry set to `ARGV[11]` ms from now
/// (the tenant's keys and the session's set of stores `KEYS[4]`: `ARGV[15]`, twice
/// that). Both expiries are integers computed in Rust: Lua's numbers are doubles, and a
/// double Lua formats in exponent form is an error to `PEXPIRE` — after the data was
/// written. `ARGV[1]`: [`STORE_KEY`]. Returns `{0}` done, `{1}` changed meanwhile,
/// `{2, n}` value too large, `{3, n}` too many keys, `{4, n}` over the total, `{5, n}`
/// too many keys in the tenant's session stores, `{6, n}` over their total.
///
/// A compare that finds the value it would write already there answers done: the
/// connection layer repeats a script whose reply was lost, and the repeat must not
/// call a write that happened "changed" (a caller would start over on its own
/// change, an increment would add twice).
const SET: &str = r"
local session = ARGV[10] == '1'
local now = 0
if session then
  -- The tenant's session stores whose expiry passed: their share leaves the total,
  -- their hash goes (it has expired, or does within the millisecond).
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local lapsed = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', '(' .. now)
  for _, m in ipairs(lapsed) do
    local u = redis.call('HGET', KEYS[2], m)
    if u then
      local k, b = string.match(u, '^(%d+) (%d+)$')
      redis.call('HINCRBY', KEYS[2], '#k', -tonumber(k))
      redis.call('HINCRBY', KEYS[2], '#b', -tonumber(b))
      redis.call('HDEL', KEYS[2], m)
    end
    redis.call('DEL', ARGV[1] .. m)
    redis.call('ZREM', KEYS[3], m)
  end
  -- This store's hash and its share expire apart: a write in the millisecond of the
  -- hash's expiry finds no hash and a share not lapsed yet. A store without a hash
  -- holds nothing: its share goes first, or the tenant's total keeps it for good.
  if redis.call('EXISTS', KEYS[1]) == 0 then
    local u = redis.call('HGET', KEYS[2], ARGV[14])
    if u then
      local k, b = string.match(u, '^(%d+) (%d+)$')
      redis.call('HINCRBY', KEYS[2], '#k', -tonumber(k))
      redis.call('HINCRBY', KEYS[2], '#b', -tonumber(b))
      redis.call('HDEL', KEYS[2], ARGV[14])
    end
  end
end
local old = redis.call('HGET', KEYS[1], ARGV[2])
if ARGV[8] == '1' then
  if old == ARGV[3] then return {0} end
  local expected = ARGV[7]
  if (old == false) ~= (expected == '') then return {1} end
  if old ~= false and old ~= string.sub(expected, 2) then return {1} end
end
local klen = tonumber(ARGV[9])
local vlen = string.len(ARGV[3])
if vlen > tonumber(ARGV[5]) then return {2, vlen} end
local keys = tonumber(redis.call('HGET', KEYS[1], '#k') or '0')
local bytes = tonumber(redis.call('HGET', KEYS[1], '#b') or '0')
local added, before, after = 0, 0, klen + vlen
if old == false then added = 1 else before = klen + string.len(old) end
keys = keys + added
bytes = bytes - before + after
-- Only growth is refused: a store over a quota the operator lowered may still
-- rewrite what it holds, the same size or smaller.
if added > 0 and keys > tonumber(ARGV[4]) then return {3, keys - 1} end
if after > before and bytes > tonumber(ARGV[6]) then return {4, bytes} end
if not session then
  redis.call('HSET', KEYS[1], ARGV[2], ARGV[3], '#k', keys, '#b', bytes)
  return {0}
end
local tk = tonumber(redis.call('HGET', KEYS[2], '#k') or '0') + added
local tb = tonumber(redis.call('HGET', KEYS[2], '#b') or '0') - before + after
if added > 0 and tk > tonumber(ARGV[12]) then return {5, tk} end
if after > before and tb > tonumber(ARGV[13]) then return {6, tb} end
local ttl = tonumber(ARGV[11])
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3], '#k', keys, '#b', bytes, '#s', '1')
redis.call('PEXPIRE', KEYS[1], ARGV[11])
redis.call('HSET', KEYS[2], '#k', tk, '#b', tb, ARGV[14], string.format('%d %d', keys, bytes))
redis.call('PEXPIRE', KEYS[2], ARGV[15])
redis.call('ZADD', KEYS[3], now + ttl, ARGV[14])
redis.call('PEXPIRE', KEYS[3], ARGV[15])
redis.call('SADD', KEYS[4], ARGV[14])
redis.call('PEXPIRE', KEYS[4], ARGV[15])
return {0}
";

/// Removes field `ARGV[2]` (`ARGV[3]`: the key's length) of store `KEYS[1]` and its
/// share of the use (the tenant's too for a session store: `ARGV[4]` "1", `ARGV[5]`
/// its name); a store left empty goes (from its session's set `KEYS[4]` too).
const DELETE: &str = r"
local old = redis.call('HGET', KEYS[1], ARGV[2])
if old == false then return 0 end
local entry = tonumber(ARGV[3]) + string.len(old)
local keys = tonumber(redis.call('HGET', KEYS[1], '#k') or '1') - 1
local bytes = tonumber(redis.call('HGET', KEYS[1], '#b') or '0') - entry
if keys <= 0 then
  redis.call('DEL', KEYS[1])
else
  redis.call('HDEL', KEYS[1], ARGV[2])
  redis.call('HSET', KEYS[1], '#k', keys, '#b', bytes)
end
if ARGV[4] == '1' and redis.call('HEXISTS', KEYS[2], ARGV[5]) == 1 then
  redis.call('HINCRBY', KEYS[2], '#k', -1)
  redis.call('HINCRBY', KEYS[2], '#b', -entry)
  if keys <= 0 then
    redis.call('HDEL', KEYS[2], ARGV[5])
    redis.call('ZREM', KEYS[3], ARGV[5])
    redis.call('SREM', KEYS[4], ARGV[5])
  else
    redis.call('HSET', KEYS[2], ARGV[5], string.format('%d %d', keys, bytes))
  end
end
return 1
";

/// Deletes store `KEYS[1]` (`ARGV[1]` its name), its share of its tenant's session
/// use and its place in its session's set `KEYS[4]`: 1 if it existed.
const DROP: &str = r"
local existed = redis.call('DEL', KEYS[1])
local u = redis.call('HGET', KEYS[2], ARGV[1])
if u then
  local k, b = string.match(u, '^(%d+) (%d+)$')
  redis.call('HINCRBY', KEYS[2], '#k', -tonumber(k))
  redis.call('HINCRBY', KEYS[2], '#b', -tonumber(b))
  redis.call('HDEL', KEYS[2], ARGV[1])
end
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('SREM', KEYS[4], ARGV[1])
return existed
";

/// Moves one hash of layout 1 (a hash per bucket: `KEYS[1]` its data, `KEYS[2]` its
/// use) into its store's hash `KEYS[3]` (fields prefixed with the bucket's part,
/// `ARGV[1]`), when `ARGV[2]` is "1" (a tenant store; a session store of layout 1 is
/// only deleted). A key the store already holds keeps its newer value. Safe on any
/// number of nodes at once: the old hash is read and deleted in one step.
const MIGRATE: &str = r"
if ARGV[2] == '1' then
  local all = redis.call('HGETALL', KEYS[1])
  local k, b = 0, 0
  for i = 1, #all, 2 do
    if redis.call('HSETNX', KEYS[3], ARGV[1] .. all[i], all[i + 1]) == 1 then
      k = k + 1
      b = b + string.len(all[i]) + string.len(all[i + 1])
    end
  end
  if k > 0 then
    redis.call('HINCRBY', KEYS[3], '#k', k)
    redis.call('HINCRBY', KEYS[3], '#b', b)
  end
end
redis.call('DEL', KEYS[1], KEYS[2])
return 1
";

/// Where layout 1 kept a bucket's data (this, then the bucket's namespace) and its use.
const OLD_DATA_KEY: &str = "hermetic:kv:";
const OLD_USE_KEY: &str = "hermetic:kvuse:";
/// Set once every hash of layout 1 was moved (`2`): later processes skip the scan.
const LAYOUT_KEY: &str = "hermetic:kv:layout";

/// How often an increment retries when another writer changed the value meanwhile.
const INCREMENT_TRIES: usize = 16;

/// Keys asked for per `SCAN` step when listing stores.
const SCAN_COUNT: usize = 1000;

/// Key-value data in Redis.
pub struct RedisKeyValue {
    redis: BlockingRedis,
    settings: KeyValueSettings,
    set: redis::Script,
    delete: redis::Script,
    drop: redis::Script,
    migrate: redis::Script,
    /// Layout 1's hashes were moved (or found moved) by this process.
    migrated: std::sync::atomic::AtomicBool,
    /// Held while moving them, so one thread of the process does it.
    migrating: parking_lot::Mutex<()>,
}

impl std::fmt::Debug for RedisKeyValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisKeyValue")
            .field("store", &self.redis.shown)
            .finish_non_exhaustive()
    }
}

/// The result of the SET script.
enum Written {
    Done,
    Changed,
}

/// A store hash's `#k`, `#b` and `#s` fields.
type StoreFields = (Option<u64>, Option<u64>, Option<String>);

/// A tenant's two keys: its session stores' use, and their expiries.
fn tenant_keys(tenant: &str) -> (String, String) {
    let part = format!("{}:{tenant}|", tenant.len());
    (
        format!("hermetic:kvsess:{part}"),
        format!("hermetic:kvlive:{part}"),
    )
}

/// The set of a session's stores (their names): what its end deletes, read without
/// walking every live session store of the tenant.
fn session_key(tenant: &str, session: &str) -> String {
    format!(
        "hermetic:kvsid:{}:{tenant}|{}:{session}|",
        tenant.len(),
        session.len()
    )
}

/// A store's id from the name of its hash, and whether it says it is a session's.
fn store_of(prefix: &str, session: bool) -> Option<StoreId> {
    let (tool, tenant, s, rest) = StoreId::parse_prefix(prefix)?;
    rest.is_empty().then(|| StoreId {
        tool: tool.to_owned(),
        tenant: tenant.to_owned(),
        session: session.then(|| s.to_owned()),
    })
}

impl RedisKeyValue {
    /// Data in the Redis at `url` (nothing connected yet), with the default
    /// [`KeyValueSettings`].
    ///
    /// # Errors
    /// [`super::StoreError`] when the URL does not parse.
    pub fn new(url: &str) -> Result<Self, super::StoreError> {
        Ok(Self {
            redis: BlockingRedis::open(url)?,
            settings: KeyValueSettings::default(),
            set: redis::Script::new(SET),
            delete: redis::Script::new(DELETE),
            drop: redis::Script::new(DROP),
            migrate: redis::Script::new(MIGRATE),
            migrated: std::sync::atomic::AtomicBool::new(false),
            migrating: parking_lot::Mutex::new(()),
        })
    }

    /// These stores under `settings` (the tenants' ceiling, the session expiry).
    #[must_use]
    pub fn with_settings(mut self, settings: KeyValueSettings) -> Self {
        self.settings = settings;
        self
    }

    /// These stores, for reading only (`hermetic state list`, `show`): data of layout 1
    /// is not moved (that writes, under the feet of older nodes still running during
    /// an upgrade) — it is not seen until a node moves it.
    #[must_use]
    pub fn without_migration(self) -> Self {
        self.migrated
            .store(true, std::sync::atomic::Ordering::Release);
        self
    }

    /// Whether a node of this version has yet to look for data of layout 1 here (what
    /// [`RedisKeyValue::without_migration`] does not see, if there is any).
    ///
    /// # Errors
    /// [`KeyValueError::Backend`] when Redis cannot be reached.
    pub fn layout_unchecked(&self) -> Result<bool, KeyValueError> {
        let layout: Option<String> = self.raw(|c| redis::cmd("GET").arg(LAYOUT_KEY).query(c))?;
        Ok(layout.as_deref() != Some("2"))
    }

    /// Runs `op` on one of the kept connections ([`BlockingRedis::with`]: every
    /// operation here is safe to repeat).
    fn with<T>(
        &self,
        op: impl FnMut(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, KeyValueError> {
        if !self.migrated.load(std::sync::atomic::Ordering::Acquire) {
            self.migrate()?;
        }
        self.raw(op)
    }

    fn raw<T>(
        &self,
        op: impl FnMut(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, KeyValueError> {
        self.redis
            .with(op)
            .map_err(|e| KeyValueError::Backend(e.to_string()))
    }

    /// Moves the data of layout 1 (a hash per bucket, before stores were counted as
    /// one) into the stores' hashes, once per Redis: the first use of the store in a
    /// process checks [`LAYOUT_KEY`], and scans only when it is not set yet. Tenant
    /// stores keep their data; session stores of layout 1 are deleted (their sessions
    /// are over or end with the upgrade).
    fn migrate(&self) -> Result<(), KeyValueError> {
        let _one = self.migrating.lock();
        if self.migrated.load(std::sync::atomic::Ordering::Acquire) {
            return Ok(());
        }
        let layout: Option<String> = self.raw(|c| redis::cmd("GET").arg(LAYOUT_KEY).query(c))?;
        if layout.as_deref() != Some("2") {
            let pattern = format!("{OLD_DATA_KEY}*");
            let mut cursor: u64 = 0;
            let mut moved = 0usize;
            loop {
                let (next, batch): (u64, Vec<String>) =
                    self.raw(|c| scan_step(cursor, &pattern).query(c))?;
                for old in batch {
                    let Some(ns) = old.strip_prefix(OLD_DATA_KEY) else {
                        continue;
                    };
                    let Some((tool, tenant, session, bucket)) = StoreId::parse_prefix(ns) else {
                        continue;
                    };
                    if hermetic::keyvalue_parse_bucket(bucket)
                        .is_none_or(|(_, rest)| !rest.is_empty())
                    {
                        continue;
                    }
                    let prefix = StoreId::tenant(tool, tenant).prefix();
                    let tenant_store = session.is_empty();
                    let new = format!("{STORE_KEY}{prefix}");
                    let use_ = format!("{OLD_USE_KEY}{ns}");
                    self.raw(|c| {
                        let mut invocation = self.migrate.key(&old);
                        invocation
                            .key(&use_)
                            .key(&new)
                            .arg(bucket)
                            .arg(if tenant_store { "1" } else { "0" });
                        invocation.invoke::<i64>(c)
                    })?;
                    moved += 1;
                }
                if next == 0 {
                    break;
                }
                cursor = next;
            }
            self.raw(|c| redis::cmd("SET").arg(LAYOUT_KEY).arg("2").query::<()>(c))?;
            if moved > 0 {
                tracing::info!(
                    hashes = moved,
                    "key-value data of layout 1 moved into its stores"
                );
            }
        }
        self.migrated
            .store(true, std::sync::atomic::Ordering::Release);
        Ok(())
    }

    /// The keys a script on `ns`'s store names: the store's hash, its tenant's use and
    /// expiries, its session's set of stores.
    fn keys(id: &StoreId, prefix: &str) -> [String; 4] {
        let (use_, live) = tenant_keys(&id.tenant);
        [
            format!("{STORE_KEY}{prefix}"),
            use_,
            live,
            session_key(&id.tenant, id.session_str()),
        ]
    }

    /// The field of `key` in `ns`'s bucket.
    fn field(ns: &Namespace, key: &str) -> String {
        [ns.bucket_part(), key].concat()
    }

    /// The SET script: `expected` `Some(old)` makes it a compare-and-set.
    fn write(
        &self,
        ns: &Namespace,
        key: &str,
        value: &[u8],
        quota: &KeyValueQuota,
        expected: Option<Option<&[u8]>>,
    ) -> Result<Written, KeyValueError> {
        let store = ns.store();
        let id = store.id();
        let keys = Self::keys(id, store.prefix());
        let field = Self::field(ns, key);
        // The expected value travels with a one-byte prefix, so "absent" ("") and
        // "present and empty" ("=") differ.
        let (check, expect) = match expected {
            None => ("0", Vec::new()),
            Some(None) => ("1", Vec::new()),
            Some(Some(old)) => ("1", [b"=".as_slice(), old].concat()),
        };
        let s = &self.settings;
        // At most a year ([`KeyValueSettings::expiry_millis`]): twice it, and now plus
        // it, are exact in Lua's doubles.
        let ttl = s.expiry_millis();
        let answer: Vec<u64> = self.with(|c| {
            let mut invocation = self.set.key(&keys[0]);
            invocation
                .key(&keys[1])
                .key(&keys[2])
                .key(&keys[3])
                .arg(STORE_KEY)
                .arg(&field)
                .arg(value)
                .arg(quota.max_keys)
                .arg(quota.max_value_bytes)
                .arg(quota.max_total_bytes)
                .arg(&expect)
                .arg(check)
                .arg(key.len())
                .arg(if id.is_session() { "1" } else { "0" })
                .arg(ttl)
                .arg(s.sessions_max_keys)
                .arg(s.sessions_max_total_bytes)
                .arg(store.prefix())
                .arg(ttl.saturating_mul(2));
            invocation.invoke(c)
        })?;
        match answer.as_slice() {
            [0] => Ok(Written::Done),
            [1] => Ok(Written::Changed),
            [2, n] => Err(KeyValueError::value_too_large(*n, quota)),
            [3, _] => Err(KeyValueError::too_many_keys(quota)),
            [4, n] => Err(KeyValueError::over_total(*n, quota)),
            [5, _] => Err(KeyValueError::sessions_too_many_keys(s.sessions_max_keys)),
            [6, n] => Err(KeyValueError::sessions_over_total(
                *n,
                s.sessions_max_total_bytes,
            )),
            other => Err(KeyValueError::Backend(format!(
                "unexpected answer from the store: {other:?}"
            ))),
        }
    }

    /// Deletes the store `id` (its hash and its tenant's share of it): whether it
    /// existed.
    fn drop_store(&self, id: &StoreId) -> Result<bool, KeyValueError> {
        let prefix = id.prefix();
        let keys = Self::keys(id, &prefix);
        let existed: i64 = self.with(|c| {
            let mut invocation = self.drop.key(&keys[0]);
            invocation
                .key(&keys[1])
                .key(&keys[2])
                .key(&keys[3])
                .arg(&prefix);
            invocation.invoke(c)
        })?;
        Ok(existed == 1)
    }

    /// The encoded prefix of every store (`SCAN`: the keyspace is walked in steps,
    /// never blocked).
    fn scan(&self) -> Result<Vec<String>, KeyValueError> {
        let pattern = format!("{STORE_KEY}*");
        let mut cursor: u64 = 0;
        let mut names: Vec<String> = Vec::new();
        loop {
            let (next, batch): (u64, Vec<String>) =
                self.with(|c| scan_step(cursor, &pattern).query(c))?;
            names.extend(
                batch
                    .into_iter()
                    .filter_map(|n| n.strip_prefix(STORE_KEY).map(str::to_owned)),
            );
            if next == 0 {
                break;
            }
            cursor = next;
        }
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// What an operator sees of the store whose hash is named by `prefix`: `None` when
    /// it is gone (deleted, expired) or not a store's.
    fn info(&self, prefix: &str) -> Result<Option<StoreInfo>, KeyValueError> {
        let name = format!("{STORE_KEY}{prefix}");
        let (use_, ttl): (StoreFields, i64) = self.with(|c| {
            redis::pipe()
                .cmd("HMGET")
                .arg(&name)
                .arg("#k")
                .arg("#b")
                .arg("#s")
                .cmd("PTTL")
                .arg(&name)
                .query(c)
        })?;
        let (Some(keys), Some(bytes), session) = use_ else {
            return Ok(None);
        };
        let Some(id) = store_of(prefix, session.is_some()) else {
            return Ok(None);
        };
        let expires_in = u64::try_from(ttl).ok().map(Duration::from_millis);
        Ok(Some(StoreInfo {
            id,
            keys,
            bytes,
            expires_in,
        }))
    }
}

impl KeyValueBackend for RedisKeyValue {
    fn get(&self, ns: &Namespace, key: &str) -> Result<Option<Vec<u8>>, KeyValueError> {
        let name = format!("{STORE_KEY}{}", ns.store().prefix());
        let field = Self::field(ns, key);
        self.with(|c| redis::cmd("HGET").arg(&name).arg(&field).query(c))
    }

    fn set(
        &self,
        ns: &Namespace,
        key: &str,
        value: &[u8],
        quota: &KeyValueQuota,
    ) -> Result<(), KeyValueError> {
        self.write(ns, key, value, quota, None).map(|_| ())
    }

    fn delete(&self, ns: &Namespace, key: &str) -> Result<(), KeyValueError> {
        let store = ns.store();
        let id = store.id();
        let keys = Self::keys(id, store.prefix());
        let field = Self::field(ns, key);
        self.with(|c| {
            let mut invocation = self.delete.key(&keys[0]);
            invocation
                .key(&keys[1])
                .key(&keys[2])
                .key(&keys[3])
                .arg(STORE_KEY)
                .arg(&field)
                .arg(key.len())
                .arg(if id.is_session() { "1" } else { "0" })
                .arg(store.prefix());
            invocation.invoke::<i64>(c)
        })
        .map(|_| ())
    }

    fn list(&self, ns: &Namespace, from: u64) -> Result<(Vec<String>, Option<u64>), KeyValueError> {
        let name = format!("{STORE_KEY}{}", ns.store().prefix());
        let fields: Vec<String> = self.with(|c| redis::cmd("HKEYS").arg(&name).query(c))?;
        let bucket = ns.bucket_part();
        let mut keys: Vec<String> = fields
            .into_iter()
            .filter_map(|f| f.strip_prefix(bucket).map(str::to_owned))
            .collect();
        keys.sort();
        let skip = usize::try_from(from).unwrap_or(usize::MAX);
        let page = hermetic::KEYVALUE_PAGE;
        let rest: Vec<String> = keys.into_iter().skip(skip).collect();
        let more = rest.len() > page;
        let next = more.then(|| from + u64::try_from(page).unwrap_or(u64::MAX));
        Ok((rest.into_iter().take(page).collect(), next))
    }

    fn increment(
        &self,
        ns: &Namespace,
        key: &str,
        delta: u64,
        quota: &KeyValueQuota,
    ) -> Result<u64, KeyValueError> {
        // Read, add in u64 (Lua's numbers are doubles), write if unchanged.
        for _ in 0..INCREMENT_TRIES {
            let old = self.get(ns, key)?;
            let sum = hermetic::keyvalue_incremented(key, old.as_deref(), delta)?;
            let text = sum.to_string();
            match self.write(ns, key, text.as_bytes(), quota, Some(old.as_deref()))? {
                Written::Done => return Ok(sum),
                Written::Changed => continue,
            }
        }
        Err(KeyValueError::Backend(format!(
            "{key:?} kept changing under {INCREMENT_TRIES} increments: try again"
        )))
    }

    fn swap(
        &self,
        ns: &Namespace,
        key: &str,
        expected: Option<&[u8]>,
        value: &[u8],
        quota: &KeyValueQuota,
    ) -> Result<bool, KeyValueError> {
        match self.write(ns, key, value, quota, Some(expected))? {
            Written::Done => Ok(true),
            Written::Changed => Ok(false),
        }
    }

    fn stores(&self, filter: &StoreFilter) -> Result<Vec<StoreInfo>, KeyValueError> {
        let mut out = Vec::new();
        for prefix in self.scan()? {
            // Tenant and tool are read from the name; the scope needs the hash.
            let named = StoreId::parse_prefix(&prefix).is_some_and(|(tool, tenant, _, _)| {
                filter.tenant.as_deref().is_none_or(|t| t == tenant)
                    && filter.tool.as_deref().is_none_or(|t| t == tool)
            });
            if named
                && let Some(info) = self.info(&prefix)?
                && filter.matches(&info.id)
            {
                out.push(info);
            }
        }
        out.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(out)
    }

    fn entries(&self, store: &StoreId) -> Result<Vec<EntryInfo>, KeyValueError> {
        let name = format!("{STORE_KEY}{}", store.prefix());
        let fields: Vec<String> = self.with(|c| redis::cmd("HKEYS").arg(&name).query(c))?;
        let fields: Vec<String> = fields.into_iter().filter(|f| !f.starts_with('#')).collect();
        if fields.is_empty() {
            return Ok(Vec::new());
        }
        let lens: Vec<u64> = self.with(|c| {
            let mut pipe = redis::pipe();
            for f in &fields {
                pipe.cmd("HSTRLEN").arg(&name).arg(f);
            }
            pipe.query(c)
        })?;
        let mut out: Vec<EntryInfo> = fields
            .iter()
            .zip(lens)
            .filter_map(|(f, len)| {
                let (bucket, key) = hermetic::keyvalue_parse_bucket(f)?;
                Some(EntryInfo {
                    bucket: bucket.to_owned(),
                    key: key.to_owned(),
                    len,
                })
            })
            .collect();
        out.sort();
        Ok(out)
    }

    fn delete_stores(&self, filter: &StoreFilter) -> Result<Vec<StoreInfo>, KeyValueError> {
        let mut deleted = Vec::new();
        for info in self.stores(filter)? {
            if self.drop_store(&info.id)? {
                deleted.push(info);
            }
        }
        Ok(deleted)
    }

    fn delete_store(&self, id: &StoreId) -> Result<bool, KeyValueError> {
        self.drop_store(id)
    }

    fn end_session(&self, tenant: &str, session: &str) -> Result<usize, KeyValueError> {
        if session.is_empty() {
            return Ok(0);
        }
        // The session's own set of stores: its end reads what it wrote, not every
        // live session store of the tenant (a ZRANGE of those at every end was
        // quadratic in the tenant's sessions). A store only a node before this one
        // wrote is in no set: it expires when idle.
        let set = session_key(tenant, session);
        let members: Vec<String> = self.with(|c| redis::cmd("SMEMBERS").arg(&set).query(c))?;
        let mut ended = 0;
        for member in members {
            if let Some(id) = store_of(&member, true)
                && id.session_str() == session
                && id.tenant == tenant
                && self.drop_store(&id)?
            {
                ended += 1;
            }
        }
        Ok(ended)
    }
}

/// One `SCAN` step from `cursor` over the keys matching `pattern` (the keyspace is
/// walked in steps, never blocked).
fn scan_step(cursor: u64, pattern: &str) -> redis::Cmd {
    let mut cmd = redis::cmd("SCAN");
    cmd.arg(cursor)
        .arg("MATCH")
        .arg(pattern)
        .arg("COUNT")
        .arg(SCAN_COUNT);
    cmd
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    //! Against a real `redis-server` (Debian's package, installed by `.ci/run`) on a
    //! free loopback port.
    use super::*;
    use hermetic::KeyValueStore as Store;
    use std::sync::Arc;

    /// A running redis-server without persistence; killed on drop.
    struct Server {
        child: std::process::Child,
        port: u16,
    }

    impl Server {
        fn start() -> Self {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let child = std::process::Command::new("/usr/bin/redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("redis-server is not installed: apt-get install -y redis-server");
            let server = Self { child, port };
            let deadline = std::time::Instant::now() + Duration::from_secs(15);
            while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
                assert!(
                    std::time::Instant::now() < deadline,
                    "redis-server did not start"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            server
        }

        fn store(&self, settings: KeyValueSettings) -> RedisKeyValue {
            RedisKeyValue::new(&format!("redis://127.0.0.1:{}", self.port))
                .unwrap()
                .with_settings(settings)
        }

        /// A raw command's answer.
        fn cmd<T: redis::FromRedisValue>(&self, cmd: &mut redis::Cmd) -> T {
            let client = redis::Client::open(format!("redis://127.0.0.1:{}", self.port)).unwrap();
            let mut c = client.get_connection().unwrap();
            cmd.query(&mut c).unwrap()
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    fn ns(id: &StoreId, bucket: &str) -> Namespace {
        Namespace::new(Arc::new(Store::new(id.clone())), bucket)
    }

    fn quota(max_keys: u64, max_total_bytes: u64) -> KeyValueQuota {
        KeyValueQuota {
            max_keys,
            max_value_bytes: 1000,
            max_total_bytes,
        }
    }

    /// How many of `n` keys `k0`, `k1`, … a write took before one was refused.
    fn flood(kv: &RedisKeyValue, ns: &Namespace, n: usize, quota: &KeyValueQuota) -> usize {
        (0..n)
            .take_while(|i| kv.set(ns, &format!("k{i}"), b"x", quota).is_ok())
            .count()
    }

    /// After the operator lowers a quota below what a store holds, the store may
    /// still rewrite a key the same size or smaller; a new key or growth is refused.
    #[test]
    fn a_lowered_quota_refuses_growth_only() {
        let server = Server::start();
        let kv = server.store(KeyValueSettings::default());
        for id in [
            StoreId::tenant("t", "acme"),
            StoreId::session("t", "acme", "s1"),
        ] {
            let n = ns(&id, "");
            for k in ["a", "b", "c"] {
                kv.set(&n, k, b"12345", &quota(10, 100)).unwrap();
            }
            let lowered = quota(2, 10);
            kv.set(&n, "a", b"54321", &lowered).unwrap();
            kv.set(&n, "b", b"1", &lowered).unwrap();
            assert!(kv.swap(&n, "c", Some(b"12345"), b"xyz", &lowered).unwrap());
            assert!(matches!(
                kv.set(&n, "a", b"543210", &lowered),
                Err(KeyValueError::Quota(_))
            ));
            assert!(matches!(
                kv.set(&n, "d", b"", &lowered),
                Err(KeyValueError::Quota(_))
            ));
            assert_eq!(kv.get(&n, "a").unwrap().unwrap(), b"54321");
            let info = kv.info(&id.prefix()).unwrap().unwrap();
            assert_eq!((info.keys, info.bytes), (3, 12), "{id}");
        }
    }

    /// A session store's hash and its share of the tenant's total expire apart: a
    /// write that finds no hash while the share is still counted takes the share off
    /// first (it stayed in the total for good, a ceiling shrinking by itself).
    #[test]
    fn a_store_whose_hash_expired_leaves_no_share_behind() {
        let server = Server::start();
        let kv = server.store(KeyValueSettings {
            sessions_max_keys: 5,
            ..KeyValueSettings::default()
        });
        let q = quota(10, 1000);
        let id = StoreId::session("todo", "acme", "s1");
        let s1 = ns(&id, "");
        assert_eq!(flood(&kv, &s1, 3, &q), 3);
        // What its expiry does to the hash alone (the share's expiry not lapsed yet).
        let gone: i64 = server.cmd(redis::cmd("DEL").arg(format!("{STORE_KEY}{}", id.prefix())));
        assert_eq!(gone, 1);
        assert_eq!(flood(&kv, &s1, 10, &q), 5, "the whole ceiling is free");
        let total: Option<u64> =
            server.cmd(redis::cmd("HGET").arg(tenant_keys("acme").0).arg("#k"));
        assert_eq!(total, Some(5));
    }

    /// A session's end deletes its stores (every tool's), and only those, reading
    /// the session's own set: no walk of the tenant's live session stores.
    #[test]
    fn a_session_s_end_reads_only_its_own_stores() {
        let server = Server::start();
        let kv = server.store(KeyValueSettings::default());
        let q = quota(10, 1000);
        for s in 0..50 {
            let other = ns(&StoreId::session("todo", "acme", &format!("o{s}")), "");
            kv.set(&other, "k", b"x", &q).unwrap();
        }
        let mine = [
            StoreId::session("todo", "acme", "s1"),
            StoreId::session("notes", "acme", "s1"),
        ];
        for id in &mine {
            kv.set(&ns(id, "b"), "k", b"x", &q).unwrap();
        }
        kv.set(
            &ns(&StoreId::session("todo", "globex", "s1"), ""),
            "k",
            b"x",
            &q,
        )
        .unwrap();
        let () = server.cmd(redis::cmd("CONFIG").arg("RESETSTAT"));
        assert_eq!(kv.end_session("acme", "s1").unwrap(), 2);
        let stats: String = server.cmd(redis::cmd("INFO").arg("commandstats"));
        assert!(
            !stats.contains("cmdstat_zrange:"),
            "read the tenant's every live store: {stats}"
        );
        assert_eq!(kv.end_session("acme", "s1").unwrap(), 0);
        let left: Vec<String> = kv
            .stores(&StoreFilter::default())
            .unwrap()
            .iter()
            .map(|s| s.id.to_string())
            .collect();
        assert_eq!(left.len(), 51, "{left:?}");
        assert!(
            left.iter()
                .all(|s| !s.contains("session \"s1\"") || s.contains("globex"))
        );
        // The share of the ended stores left the tenant's total.
        let total: Option<u64> =
            server.cmd(redis::cmd("HGET").arg(tenant_keys("acme").0).arg("#k"));
        assert_eq!(total, Some(50));
    }

    /// An expiry over what the policy file accepts (an embedder's settings) is taken
    /// as the longest: writes work and the ceiling holds (Lua wrote `ttl * 2` in
    /// exponent form, PEXPIRE refused it after the data was written, and the tenant's
    /// total was never updated).
    #[test]
    fn a_huge_session_expiry_still_writes_and_holds_the_ceiling() {
        let server = Server::start();
        let kv = server.store(KeyValueSettings {
            sessions_max_keys: 3,
            session_expiry: Duration::from_secs(u64::MAX / 4),
            ..KeyValueSettings::default()
        });
        let q = quota(10, 1000);
        let s1 = ns(&StoreId::session("todo", "acme", "s1"), "");
        let s2 = ns(&StoreId::session("todo", "acme", "s2"), "");
        assert_eq!(flood(&kv, &s1, 2, &q), 2);
        assert_eq!(flood(&kv, &s2, 5, &q), 1, "three keys across the sessions");
        let ttl: i64 = server.cmd(redis::cmd("PTTL").arg(format!(
            "{STORE_KEY}{}",
            StoreId::session("todo", "acme", "s1").prefix()
        )));
        assert!(
            ttl > 364 * 86_400_000 && ttl <= 365 * 86_400_000,
            "the longest expiry: {ttl}"
        );
    }
}
