//! Tools' key-value data in the cluster's Redis, so every node sees one store: a hash
//! per namespace (`hermetic:kv:{namespace}`: key → value) and one for its use
//! (`hermetic:kvuse:{namespace}`: `keys`, `bytes`), changed together by one Lua script
//! per write, which also checks the quota — two nodes writing at once cannot both
//! squeeze under it. Runs on the call's blocking thread, so plain connections with
//! timeouts ([`super::BlockingRedis`]); Redis unreachable → the operation fails with a
//! clear error and nothing is changed.

use super::BlockingRedis;
use hermetic::policy::keyvalue::KeyValueQuota;
use hermetic::{KeyValueBackend, KeyValueError, KeyValueNamespace as Namespace};

/// Writes `ARGV[2]` at field `ARGV[1]` if the field's value is still `ARGV[6]` (when
/// `ARGV[7]` is "1"; "0": whatever it is), within the quota (`ARGV[3..5]`: max keys,
/// max value bytes, max total bytes). Returns `{0}` done, `{1}` changed meanwhile,
/// `{2, n}` value too large, `{3, n}` too many keys, `{4, n}` over the total.
///
/// A compare that finds the value it would write already there answers done: the
/// connection layer repeats a script whose reply was lost, and the repeat must not
/// call a write that happened "changed" (a caller would start over on its own
/// change, an increment would add twice).
const SET: &str = r"
local old = redis.call('HGET', KEYS[1], ARGV[1])
if ARGV[7] == '1' then
  if old == ARGV[2] then return {0} end
  local expected = ARGV[6]
  if (old == false) ~= (expected == '') then return {1} end
  if old ~= false and old ~= string.sub(expected, 2) then return {1} end
end
local klen = string.len(ARGV[1])
local vlen = string.len(ARGV[2])
if vlen > tonumber(ARGV[4]) then return {2, vlen} end
local keys = tonumber(redis.call('HGET', KEYS[2], 'keys') or '0')
local bytes = tonumber(redis.call('HGET', KEYS[2], 'bytes') or '0')
if old == false then
  keys = keys + 1
  bytes = bytes + klen + vlen
else
  bytes = bytes - klen - string.len(old) + klen + vlen
end
if keys > tonumber(ARGV[3]) then return {3, keys - 1} end
if bytes > tonumber(ARGV[5]) then return {4, bytes} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], 'keys', keys, 'bytes', bytes)
return {0}
";

/// Removes field `ARGV[1]` and its share of the use.
const DELETE: &str = r"
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old == false then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HINCRBY', KEYS[2], 'keys', -1)
redis.call('HINCRBY', KEYS[2], 'bytes', -(string.len(ARGV[1]) + string.len(old)))
return 1
";

/// How often an increment retries when another writer changed the value meanwhile.
const INCREMENT_TRIES: usize = 16;

/// Key-value data in Redis.
pub struct RedisKeyValue {
    redis: BlockingRedis,
    set: redis::Script,
    delete: redis::Script,
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

impl RedisKeyValue {
    /// Data in the Redis at `url` (nothing connected yet).
    ///
    /// # Errors
    /// [`super::StoreError`] when the URL does not parse.
    pub fn new(url: &str) -> Result<Self, super::StoreError> {
        Ok(Self {
            redis: BlockingRedis::open(url)?,
            set: redis::Script::new(SET),
            delete: redis::Script::new(DELETE),
        })
    }

    /// Runs `op` on one of the kept connections ([`BlockingRedis::with`]: every
    /// operation here is safe to repeat).
    fn with<T>(
        &self,
        op: impl FnMut(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, KeyValueError> {
        self.redis
            .with(op)
            .map_err(|e| KeyValueError::Backend(e.to_string()))
    }

    fn keys(ns: &Namespace) -> (String, String) {
        (
            format!("hermetic:kv:{}", ns.as_str()),
            format!("hermetic:kvuse:{}", ns.as_str()),
        )
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
        let (data, usage) = Self::keys(ns);
        // The expected value travels with a one-byte prefix, so "absent" ("") and
        // "present and empty" ("=") differ.
        let (check, expect) = match expected {
            None => ("0", Vec::new()),
            Some(None) => ("1", Vec::new()),
            Some(Some(old)) => ("1", [b"=".as_slice(), old].concat()),
        };
        let answer: Vec<u64> = self.with(|c| {
            let mut invocation = self.set.key(&data);
            invocation
                .key(&usage)
                .arg(key)
                .arg(value)
                .arg(quota.max_keys)
                .arg(quota.max_value_bytes)
                .arg(quota.max_total_bytes)
                .arg(&expect)
                .arg(check);
            invocation.invoke(c)
        })?;
        match answer.as_slice() {
            [0] => Ok(Written::Done),
            [1] => Ok(Written::Changed),
            [2, n] => Err(KeyValueError::value_too_large(*n, quota)),
            [3, _] => Err(KeyValueError::too_many_keys(quota)),
            [4, n] => Err(KeyValueError::over_total(*n, quota)),
            other => Err(KeyValueError::Backend(format!(
                "unexpected answer from the store: {other:?}"
            ))),
        }
    }
}

impl KeyValueBackend for RedisKeyValue {
    fn get(&self, ns: &Namespace, key: &str) -> Result<Option<Vec<u8>>, KeyValueError> {
        let (data, _) = Self::keys(ns);
        self.with(|c| redis::cmd("HGET").arg(&data).arg(key).query(c))
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
        let (data, usage) = Self::keys(ns);
        self.with(|c| {
            let mut invocation = self.delete.key(&data);
            invocation.key(&usage).arg(key);
            invocation.invoke::<i64>(c)
        })
        .map(|_| ())
    }

    fn list(&self, ns: &Namespace, from: u64) -> Result<(Vec<String>, Option<u64>), KeyValueError> {
        let (data, _) = Self::keys(ns);
        let mut keys: Vec<String> = self.with(|c| redis::cmd("HKEYS").arg(&data).query(c))?;
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
}
