//! The key-value store (`wasi:keyvalue`, the WASI proposal), for tools that declare
//! `keyvalue = "tenant"` or `"session"` under `[capabilities]` (feature `keyvalue`).
//! The host keeps each tool's data apart per tenant (and per session), under the
//! operator's quotas; a tool names buckets and keys only.
//!
//! ```ignore
//! let bucket = hermetic_sdk::kv::open("")?;      // "" is the default bucket
//! bucket.set("greeting", b"hello")?;
//! let visits = hermetic_sdk::kv::increment(&bucket, "visits", 1)?;
//! ```

/// Generated bindings of `wasi:keyvalue` (world `keyvalue-imports`).
#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "keyvalue-imports",
        path: "../../wit",
        generate_all,
    });
}

pub use bindings::wasi::keyvalue::store::{Bucket, Error, KeyResponse};

/// Opens a bucket: `""` (the default) or 1-64 of `[A-Za-z0-9_.-]`.
///
/// # Errors
/// [`Error`]: the store is not granted, the name is not a bucket name.
pub fn open(bucket: &str) -> Result<Bucket, Error> {
    bindings::wasi::keyvalue::store::open(bucket)
}

/// Adds `delta` to the decimal number at `key` (absent: 0), atomically.
///
/// # Errors
/// [`Error`]: the value is not a number, a quota.
pub fn increment(bucket: &Bucket, key: &str, delta: u64) -> Result<u64, Error> {
    bindings::wasi::keyvalue::atomics::increment(bucket, key, delta)
}

/// Sets `key` to `value` if its value is still `expected` (`None`: absent), atomically;
/// `true` also when it already holds `value`; `false` (nothing written) when another
/// writer changed it to something else since. Read, change, then
/// `swap` with what was read, and start over on `false`: no concurrent change is lost.
///
/// ```ignore
/// loop {
///     let old = bucket.get("list")?;
///     let new = with_my_change(old.as_deref());
///     if hermetic_sdk::kv::swap(&bucket, "list", old.as_deref(), &new)? {
///         break;
///     }
/// }
/// ```
///
/// # Errors
/// [`Error`]: a quota (nothing written).
pub fn swap(
    bucket: &Bucket,
    key: &str,
    expected: Option<&[u8]>,
    value: &[u8],
) -> Result<bool, Error> {
    bindings::hermetic::tool::keyvalue_swap::swap(bucket, key, expected, value)
}

/// Every key of `bucket`, page by page.
///
/// # Errors
/// [`Error`] from the store.
pub fn keys(bucket: &Bucket) -> Result<Vec<String>, Error> {
    let mut all = Vec::new();
    let mut cursor = None;
    loop {
        let page = bucket.list_keys(cursor)?;
        all.extend(page.keys);
        match page.cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(all),
        }
    }
}

/// What `e` says, in words for an agent.
pub fn describe(e: &Error) -> String {
    match e {
        Error::NoSuchStore => "no such store".to_owned(),
        Error::AccessDenied => "the key-value store is not granted to this tool".to_owned(),
        Error::Other(message) => message.clone(),
    }
}

impl From<Error> for crate::ToolError {
    fn from(e: Error) -> Self {
        Self(describe(&e))
    }
}
