//! Where key-value data lives: the [`KeyValueBackend`] seam, and what every backend
//! shares — whose data ([`StoreId`], [`Namespace`]), what fails ([`KeyValueError`]),
//! what operators see ([`StoreInfo`], [`StoreFilter`]). The embedded backend is
//! `Embedded` (a `redb` file, opened by `EmbeddedFile`, in the sibling modules, which
//! use this one and not the other way round); the cluster's is in the
//! server crate (Redis).
//!
//! A quota holds for a store as a whole: one tool's data for one tenant (and session,
//! for session scope), whatever buckets the tool spreads it over. A tenant's session
//! stores together are held to the operator's ceiling
//! ([`super::settings::KeyValueSettings`]), so opening sessions cannot multiply a
//! quota; they end with their session and expire when left idle.

use crate::policy::keyvalue::KeyValueQuota;
use std::sync::Arc;
use std::time::Duration;

/// One store: `tool`'s data for `tenant`, and for one session when the tool's scope
/// is the session.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StoreId {
    /// The tool's store owner (a bundled tool's name; `ext:NAME` for one from a file
    /// or a registry).
    pub tool: String,
    /// The tenant (`""`: the operator's own calls).
    pub tenant: String,
    /// `None` for a tool of tenant scope; the session's id for session scope.
    pub session: Option<String>,
}

impl StoreId {
    /// The store of a tool of tenant scope.
    pub fn tenant(tool: &str, tenant: &str) -> Self {
        Self {
            tool: tool.to_owned(),
            tenant: tenant.to_owned(),
            session: None,
        }
    }

    /// The store of a tool of session scope, for `session`.
    pub fn session(tool: &str, tenant: &str, session: &str) -> Self {
        Self {
            tool: tool.to_owned(),
            tenant: tenant.to_owned(),
            session: Some(session.to_owned()),
        }
    }

    /// Whether this is a session's store (held to the tenant's ceiling, deleted with
    /// its session, expiring when idle).
    pub fn is_session(&self) -> bool {
        self.session.is_some()
    }

    /// The session's id, `""` for tenant scope.
    pub fn session_str(&self) -> &str {
        self.session.as_deref().unwrap_or_default()
    }

    /// The encoded form every namespace of this store starts with: tool, tenant and
    /// session, each length-prefixed, so no choice of names can make one store's
    /// prefix another's. (Tenant scope encodes its session as `""`: the form data has
    /// always been kept under.)
    pub fn prefix(&self) -> String {
        let mut s = String::new();
        for part in [self.tool.as_str(), &self.tenant, self.session_str()] {
            push_part(&mut s, part);
        }
        s
    }

    /// The tool, tenant and session of an encoded prefix, and what follows it.
    pub fn parse_prefix(encoded: &str) -> Option<(&str, &str, &str, &str)> {
        let (tool, rest) = take_part(encoded)?;
        let (tenant, rest) = take_part(rest)?;
        let (session, rest) = take_part(rest)?;
        Some((tool, tenant, session, rest))
    }
}

impl std::fmt::Display for StoreId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} of tenant {:?}", self.tool, self.tenant)?;
        match &self.session {
            Some(s) => write!(f, ", session {s:?}"),
            None => Ok(()),
        }
    }
}

fn push_part(s: &mut String, part: &str) {
    s.push_str(&part.len().to_string());
    s.push(':');
    s.push_str(part);
    s.push('|');
}

/// The first length-prefixed part of `s`, and the rest.
fn take_part(s: &str) -> Option<(&str, &str)> {
    let (len, rest) = s.split_once(':')?;
    let len: usize = len.parse().ok()?;
    let part = rest.get(..len)?;
    let rest = rest.get(len..)?.strip_prefix('|')?;
    Some((part, rest))
}

/// A store and its encoded prefix, made once per call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    id: StoreId,
    prefix: String,
}

impl Store {
    /// `id`, encoded.
    pub fn new(id: StoreId) -> Self {
        let prefix = id.prefix();
        Self { id, prefix }
    }

    /// Which store.
    pub fn id(&self) -> &StoreId {
        &self.id
    }

    /// [`StoreId::prefix`].
    pub fn prefix(&self) -> &str {
        &self.prefix
    }
}

/// Whose data: one store and one of its buckets. Encoded injectively (each part
/// length-prefixed), so no choice of session id or bucket name can name another's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespace {
    store: Arc<Store>,
    encoded: String,
}

impl Namespace {
    /// `bucket` of `store`.
    pub fn new(store: Arc<Store>, bucket: &str) -> Self {
        let mut encoded = String::with_capacity(store.prefix.len() + bucket.len() + 8);
        encoded.push_str(&store.prefix);
        push_part(&mut encoded, bucket);
        Self { store, encoded }
    }

    /// The encoded form (a backend's key prefix).
    pub fn as_str(&self) -> &str {
        &self.encoded
    }

    /// The store this bucket belongs to.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The bucket's encoded part (`len:bucket|`): what follows the store's prefix.
    pub fn bucket_part(&self) -> &str {
        self.encoded
            .get(self.store.prefix.len()..)
            .unwrap_or_default()
    }

    /// The bucket's name.
    pub fn bucket(&self) -> &str {
        take_part(self.bucket_part()).map_or("", |(b, _)| b)
    }
}

/// The bucket and key of a data entry whose encoded bucket part starts `encoded`.
pub fn parse_bucket(encoded: &str) -> Option<(&str, &str)> {
    take_part(encoded)
}

/// Why a key-value operation failed (the guest gets it as `error.other`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyValueError {
    /// A quota would be exceeded: which, and by how much.
    #[error("quota: {0}")]
    Quota(String),
    /// The stored value is not what the operation needs (increment of a non-number).
    #[error("{0}")]
    Value(String),
    /// The backend failed (disk, network): nothing was changed.
    #[error("the key-value store failed: {0}")]
    Backend(String),
    /// The store's file (this path) is open in another process: the embedded store
    /// lets one process use its file at a time.
    #[error(
        "the key-value store {0} is open in another process (the embedded store lets one process use its file at a time)"
    )]
    InUse(String),
}

impl KeyValueError {
    /// A value over the quota's limit of one value.
    pub fn value_too_large(len: u64, quota: &KeyValueQuota) -> Self {
        Self::Quota(format!(
            "a value of {len} bytes is over the {}-byte limit of one value",
            quota.max_value_bytes
        ))
    }

    /// One key more than the quota allows.
    pub fn too_many_keys(quota: &KeyValueQuota) -> Self {
        Self::Quota(format!(
            "the store holds its {} keys (in all its buckets): delete some first",
            quota.max_keys
        ))
    }

    /// A store that would grow to `bytes`, over the quota's total.
    pub fn over_total(bytes: u64, quota: &KeyValueQuota) -> Self {
        Self::Quota(format!(
            "this write would make the store {bytes} bytes, over its {}-byte limit",
            quota.max_total_bytes
        ))
    }

    /// One key more than the tenant's session stores may hold together.
    pub fn sessions_too_many_keys(max: u64) -> Self {
        Self::Quota(format!(
            "this tenant's session stores hold their {max} keys together: end idle sessions, or delete some keys first"
        ))
    }

    /// The tenant's session stores would grow to `bytes` together, over the ceiling.
    pub fn sessions_over_total(bytes: u64, max: u64) -> Self {
        Self::Quota(format!(
            "this write would make this tenant's session stores {bytes} bytes together, over their {max}-byte limit: end idle sessions, or delete some keys first"
        ))
    }
}

/// What `increment` makes of `old` (the value at `key`, absent: 0): the decimal
/// number plus `delta` — the rule every backend follows (`wasmtime-wasi-keyvalue`
/// stores counters as decimal text too).
///
/// # Errors
/// [`KeyValueError::Value`] for a value that is not a decimal `u64`, or an overflow.
pub fn incremented(key: &str, old: Option<&[u8]>, delta: u64) -> Result<u64, KeyValueError> {
    let current = match old {
        None => 0,
        Some(bytes) => std::str::from_utf8(bytes)
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or_else(|| {
                KeyValueError::Value(format!(
                    "the value at {key:?} is not a decimal number to increment"
                ))
            })?,
    };
    current
        .checked_add(delta)
        .ok_or_else(|| KeyValueError::Value(format!("incrementing {key:?} would overflow")))
}

/// Keys listed per `list-keys` page.
pub const PAGE: usize = 1000;

/// One store as an operator sees it (`hermetic state list`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreInfo {
    /// Which store.
    pub id: StoreId,
    /// Keys it holds, in all its buckets.
    pub keys: u64,
    /// Bytes of its keys and values.
    pub bytes: u64,
    /// For a session store: how long until it expires unless written again.
    pub expires_in: Option<Duration>,
}

/// One entry of a store (`hermetic state show`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct EntryInfo {
    /// Its bucket (`""`: the default one).
    pub bucket: String,
    /// Its key.
    pub key: String,
    /// Bytes of its value.
    pub len: u64,
}

/// Which stores an operator means: every part given must match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreFilter {
    /// Only this tenant's.
    pub tenant: Option<String>,
    /// Only this tool's.
    pub tool: Option<String>,
    /// Only this session's (session stores only).
    pub session: Option<String>,
}

impl StoreFilter {
    /// The stores of `tenant`'s `session` (every tool's).
    pub fn session(tenant: &str, session: &str) -> Self {
        Self {
            tenant: Some(tenant.to_owned()),
            tool: None,
            session: Some(session.to_owned()),
        }
    }

    /// Whether `id` is one of the stores meant.
    pub fn matches(&self, id: &StoreId) -> bool {
        self.tenant.as_ref().is_none_or(|t| *t == id.tenant)
            && self.tool.as_ref().is_none_or(|t| *t == id.tool)
            && self
                .session
                .as_ref()
                .is_none_or(|s| id.session.as_ref() == Some(s))
    }
}

/// A key-value backend. Every data method is one atomic step; `set`, `increment` and
/// `swap` check `quota` against the whole store's use (every bucket), and a session
/// store's write the tenant's ceiling, in the same step.
pub trait KeyValueBackend: Send + Sync {
    /// The value of `key`.
    ///
    /// # Errors
    /// [`KeyValueError::Backend`].
    fn get(&self, ns: &Namespace, key: &str) -> Result<Option<Vec<u8>>, KeyValueError>;

    /// Sets `key` to `value`.
    ///
    /// # Errors
    /// [`KeyValueError::Quota`] when it would exceed `quota` (nothing changed).
    fn set(
        &self,
        ns: &Namespace,
        key: &str,
        value: &[u8],
        quota: &KeyValueQuota,
    ) -> Result<(), KeyValueError>;

    /// Removes `key` (nothing when absent).
    ///
    /// # Errors
    /// [`KeyValueError::Backend`].
    fn delete(&self, ns: &Namespace, key: &str) -> Result<(), KeyValueError>;

    /// Up to [`PAGE`] keys from position `from` (in key order), and the next position
    /// when there are more.
    ///
    /// # Errors
    /// [`KeyValueError::Backend`].
    fn list(&self, ns: &Namespace, from: u64) -> Result<(Vec<String>, Option<u64>), KeyValueError>;

    /// Adds `delta` to the decimal number at `key` (absent: 0) and returns the sum.
    ///
    /// # Errors
    /// [`KeyValueError::Value`] for a value that is not a decimal `u64` or a sum that
    /// overflows; [`KeyValueError::Quota`] as for `set`.
    fn increment(
        &self,
        ns: &Namespace,
        key: &str,
        delta: u64,
        quota: &KeyValueQuota,
    ) -> Result<u64, KeyValueError>;

    /// Sets `key` to `value` if its value is still `expected` (`None`: absent), with
    /// `set`'s quota check, in one step; `true` too when it already holds `value`
    /// (so a repeated swap whose first answer was lost still says done); `false`
    /// (nothing written) when it holds neither.
    ///
    /// # Errors
    /// [`KeyValueError::Quota`] as for `set` (nothing changed).
    fn swap(
        &self,
        ns: &Namespace,
        key: &str,
        expected: Option<&[u8]>,
        value: &[u8],
        quota: &KeyValueQuota,
    ) -> Result<bool, KeyValueError>;

    /// The stores `filter` means, with their use, in [`StoreId`] order.
    ///
    /// # Errors
    /// [`KeyValueError::Backend`].
    fn stores(&self, filter: &StoreFilter) -> Result<Vec<StoreInfo>, KeyValueError>;

    /// Every entry of `store`, by bucket and key.
    ///
    /// # Errors
    /// [`KeyValueError::Backend`].
    fn entries(&self, store: &StoreId) -> Result<Vec<EntryInfo>, KeyValueError>;

    /// Deletes the stores `filter` means, each in one step (its data and its use):
    /// what was deleted.
    ///
    /// # Errors
    /// [`KeyValueError::Backend`] (the stores deleted before the failure stay deleted).
    fn delete_stores(&self, filter: &StoreFilter) -> Result<Vec<StoreInfo>, KeyValueError>;

    /// Deletes store `id` in one step (its data and its use): whether it existed. For
    /// an operator who confirmed a listing: the stores listed go, not whatever the
    /// listing's filter means by the time it is confirmed.
    ///
    /// # Errors
    /// [`KeyValueError::Backend`].
    fn delete_store(&self, id: &StoreId) -> Result<bool, KeyValueError>;

    /// `tenant`'s `session` ended: its session stores (every tool's) are deleted. A
    /// session without an id (`""`) is no session: nothing is deleted.
    ///
    /// # Errors
    /// [`KeyValueError::Backend`].
    fn end_session(&self, tenant: &str, session: &str) -> Result<usize, KeyValueError> {
        if session.is_empty() {
            return Ok(0);
        }
        Ok(self
            .delete_stores(&StoreFilter::session(tenant, session))?
            .len())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn ns(tool: &str, tenant: &str, session: &str, bucket: &str) -> Namespace {
        let id = if session.is_empty() {
            StoreId::tenant(tool, tenant)
        } else {
            StoreId::session(tool, tenant, session)
        };
        Namespace::new(Arc::new(Store::new(id)), bucket)
    }

    #[test]
    fn namespaces_are_injective_and_parse_back() {
        assert_ne!(ns("t", "a|1:b", "", "x"), ns("t", "a", "1:b", "x"));
        assert_ne!(
            ns("t", "a", "", "b").as_str(),
            ns("t", "", "a", "b").as_str()
        );
        // The form data was always kept under (before stores were counted as one).
        assert_eq!(
            ns("todo", "acme", "s1", "").as_str(),
            "4:todo|4:acme|2:s1|0:|"
        );
        let n = ns("t:x", "ac|me", "s:1", "b.1");
        let (tool, tenant, session, rest) = StoreId::parse_prefix(n.as_str()).unwrap();
        assert_eq!((tool, tenant, session), ("t:x", "ac|me", "s:1"));
        assert_eq!(rest, n.bucket_part());
        assert_eq!(n.bucket(), "b.1");
        assert_eq!(parse_bucket("3:b.1|key|x"), Some(("b.1", "key|x")));
        assert_eq!(StoreId::parse_prefix("9:short|"), None);
    }

    #[test]
    fn a_filter_matches_what_it_names() {
        let tenant = StoreId::tenant("memory", "acme");
        let session = StoreId::session("todo", "acme", "s1");
        let f = StoreFilter::session("acme", "s1");
        assert!(f.matches(&session) && !f.matches(&tenant));
        assert!(!StoreFilter::session("acme", "s2").matches(&session));
        let all_of_acme = StoreFilter {
            tenant: Some("acme".into()),
            ..StoreFilter::default()
        };
        assert!(all_of_acme.matches(&tenant) && all_of_acme.matches(&session));
        assert!(!all_of_acme.matches(&StoreId::tenant("memory", "globex")));
    }
}
