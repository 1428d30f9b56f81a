//! The key-value capability: `wasi:keyvalue` (store, atomics, batch — the WASI
//! proposal, so tools written for it elsewhere work) and hermetic's `keyvalue-swap`
//! (the compare-and-swap the proposal's draft lacks) for tools that declare it and are
//! granted it. Each tool's data is its own, per tenant (and per session for a tool of
//! session scope); quotas are the operator's. The guest names keys and buckets, never
//! namespaces: [`backend::Namespace`] is built here from the call's tool, tenant and
//! session, so no key, however written, reaches another's data.
//!
//! Hand-written rather than `wasmtime-wasi-keyvalue`: that crate keeps data in memory
//! only, with no namespaces or quotas; its WIT (vendored in `wit/deps/keyvalue`) is
//! what this implements.

pub mod backend;
mod embedded;
pub use embedded::Embedded;
pub use file::EmbeddedFile;
pub mod file;
pub mod settings;

use super::{CallInputs, Capability};
use crate::declaration::Declaration;
use crate::policy::EffectiveGrants;
use crate::policy::keyvalue::{KeyValueGrant, KeyValueScope};
use crate::sandbox::CallState;
use backend::{KeyValueBackend, KeyValueError, Namespace, Store, StoreId};
use std::sync::Arc;
use wasmtime::component::{HasSelf, Linker, Resource};

/// Host-side bindings of `wasi:keyvalue` (world `keyvalue-imports`).
pub mod bindings {
    wasmtime::component::bindgen!({
        world: "keyvalue-imports",
        path: "../../wit",
        with: {
            "wasi:keyvalue/store.bucket": super::Bucket,
        },
    });
}

use bindings::wasi::keyvalue::store::{Error, KeyResponse};
use bindings::wasi::keyvalue::{atomics, batch, store};

/// An open bucket: its name (the guest's `open` identifier).
#[derive(Debug)]
pub struct Bucket {
    name: String,
}

/// Longest key, in bytes.
pub const MAX_KEY_BYTES: usize = 512;
/// Longest bucket name, in bytes.
const MAX_BUCKET_BYTES: usize = 64;
/// Most keys one batch call may name.
const MAX_BATCH: usize = 1000;

/// One call's access to the store: whose data, and how much it may keep.
#[derive(Clone)]
pub struct KeyValueAccess {
    backend: Arc<dyn KeyValueBackend>,
    store: Arc<Store>,
    grant: KeyValueGrant,
}

impl std::fmt::Debug for KeyValueAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyValueAccess")
            .field("store", self.store.id())
            .finish_non_exhaustive()
    }
}

impl KeyValueAccess {
    /// `tool`'s store for `tenant` (and `session`, when `grant`'s scope is the session).
    pub fn new(
        backend: Arc<dyn KeyValueBackend>,
        tool: Arc<str>,
        tenant: &str,
        session: &str,
        grant: KeyValueGrant,
    ) -> Self {
        let id = match grant.scope {
            KeyValueScope::Tenant => StoreId::tenant(&tool, tenant),
            KeyValueScope::Session => StoreId::session(&tool, tenant, session),
        };
        Self {
            backend,
            store: Arc::new(Store::new(id)),
            grant,
        }
    }

    fn namespace(&self, bucket: &str) -> Namespace {
        Namespace::new(Arc::clone(&self.store), bucket)
    }
}

/// The key-value unit (a linked one: `wasi:keyvalue` only for tools that declare a
/// store).
pub(crate) struct Unit;

impl Capability for Unit {
    type Ctx = KeyValueAccess;

    /// A backend's read or write waits on a file or the network on the call's thread.
    const ON_FIBER: bool = false;

    fn declared(declaration: &Declaration) -> bool {
        declaration.capabilities.keyvalue.is_some()
    }

    fn granted(grants: &EffectiveGrants) -> bool {
        grants.keyvalue.is_some()
    }

    /// Adds `wasi:keyvalue` to a linker (only for tools that declare it).
    fn link(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
        bindings::KeyvalueImports::add_to_linker::<_, HasSelf<_>>(linker, |s| s)
    }

    /// The store of the tool's owner for the caller's tenant (and session), for a call
    /// granted it.
    fn for_call(call: &CallInputs<'_>) -> Option<KeyValueAccess> {
        let grant = call.grants.keyvalue?;
        let caller = call.caller?;
        Some(KeyValueAccess::new(
            Arc::clone(&caller.services.keyvalue),
            Arc::clone(caller.store_owner),
            caller.tenant,
            caller.session,
            grant,
        ))
    }
}

fn other(message: impl Into<String>) -> Error {
    Error::Other(message.into())
}

impl From<KeyValueError> for Error {
    fn from(e: KeyValueError) -> Self {
        Error::Other(e.to_string())
    }
}

/// Why `key` cannot be a key, if it cannot.
fn check_key(key: &str) -> Result<(), Error> {
    if key.is_empty() {
        return Err(other("a key cannot be empty"));
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(other(format!(
            "a key of {} bytes is over the {MAX_KEY_BYTES}-byte limit",
            key.len()
        )));
    }
    if key.chars().any(char::is_control) {
        return Err(other(
            "a key cannot hold control characters (NUL, newlines, …)",
        ));
    }
    Ok(())
}

impl CallState {
    fn keyvalue(&self) -> Result<&KeyValueAccess, Error> {
        self.granted.keyvalue.as_ref().ok_or(Error::AccessDenied)
    }

    fn bucket(&self, bucket: &Resource<Bucket>) -> Result<(&KeyValueAccess, Namespace), Error> {
        let access = self.keyvalue()?;
        let name = &self
            .table
            .get(bucket)
            .map_err(|e| other(e.to_string()))?
            .name;
        Ok((access, access.namespace(name)))
    }
}

impl store::Host for CallState {
    fn open(&mut self, identifier: String) -> Result<Resource<Bucket>, Error> {
        self.keyvalue()?;
        let valid = identifier.len() <= MAX_BUCKET_BYTES
            && identifier
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
        if !valid {
            return Err(other(format!(
                "a bucket is \"\" or 1-{MAX_BUCKET_BYTES} of [A-Za-z0-9_.-]"
            )));
        }
        self.table
            .push(Bucket { name: identifier })
            .map_err(|e| other(e.to_string()))
    }
}

impl store::HostBucket for CallState {
    fn get(&mut self, bucket: Resource<Bucket>, key: String) -> Result<Option<Vec<u8>>, Error> {
        check_key(&key)?;
        let (access, ns) = self.bucket(&bucket)?;
        Ok(access.backend.get(&ns, &key)?)
    }

    fn set(&mut self, bucket: Resource<Bucket>, key: String, value: Vec<u8>) -> Result<(), Error> {
        check_key(&key)?;
        let (access, ns) = self.bucket(&bucket)?;
        Ok(access.backend.set(&ns, &key, &value, &access.grant.quota)?)
    }

    fn delete(&mut self, bucket: Resource<Bucket>, key: String) -> Result<(), Error> {
        check_key(&key)?;
        let (access, ns) = self.bucket(&bucket)?;
        Ok(access.backend.delete(&ns, &key)?)
    }

    fn exists(&mut self, bucket: Resource<Bucket>, key: String) -> Result<bool, Error> {
        check_key(&key)?;
        let (access, ns) = self.bucket(&bucket)?;
        Ok(access.backend.get(&ns, &key)?.is_some())
    }

    fn list_keys(
        &mut self,
        bucket: Resource<Bucket>,
        cursor: Option<u64>,
    ) -> Result<KeyResponse, Error> {
        let (access, ns) = self.bucket(&bucket)?;
        let (keys, cursor) = access.backend.list(&ns, cursor.unwrap_or(0))?;
        Ok(KeyResponse { keys, cursor })
    }

    fn drop(&mut self, bucket: Resource<Bucket>) -> wasmtime::Result<()> {
        self.table.delete(bucket)?;
        Ok(())
    }
}

impl atomics::Host for CallState {
    fn increment(
        &mut self,
        bucket: Resource<Bucket>,
        key: String,
        delta: u64,
    ) -> Result<u64, Error> {
        check_key(&key)?;
        let (access, ns) = self.bucket(&bucket)?;
        Ok(access
            .backend
            .increment(&ns, &key, delta, &access.grant.quota)?)
    }
}

impl bindings::hermetic::tool::keyvalue_swap::Host for CallState {
    fn swap(
        &mut self,
        bucket: Resource<Bucket>,
        key: String,
        expected: Option<Vec<u8>>,
        value: Vec<u8>,
    ) -> Result<bool, Error> {
        check_key(&key)?;
        let (access, ns) = self.bucket(&bucket)?;
        Ok(access
            .backend
            .swap(&ns, &key, expected.as_deref(), &value, &access.grant.quota)?)
    }
}

impl batch::Host for CallState {
    fn get_many(
        &mut self,
        bucket: Resource<Bucket>,
        keys: Vec<String>,
    ) -> Result<Vec<Option<(String, Vec<u8>)>>, Error> {
        if keys.len() > MAX_BATCH {
            return Err(other(format!("at most {MAX_BATCH} keys per batch")));
        }
        let (access, ns) = self.bucket(&bucket)?;
        let mut out = Vec::with_capacity(keys.len());
        for key in keys {
            check_key(&key)?;
            let value = access.backend.get(&ns, &key)?;
            out.push(value.map(|v| (key, v)));
        }
        Ok(out)
    }

    fn set_many(
        &mut self,
        bucket: Resource<Bucket>,
        key_values: Vec<(String, Vec<u8>)>,
    ) -> Result<(), Error> {
        if key_values.len() > MAX_BATCH {
            return Err(other(format!("at most {MAX_BATCH} keys per batch")));
        }
        let (access, ns) = self.bucket(&bucket)?;
        for (key, value) in &key_values {
            check_key(key)?;
            access.backend.set(&ns, key, value, &access.grant.quota)?;
        }
        Ok(())
    }

    fn delete_many(&mut self, bucket: Resource<Bucket>, keys: Vec<String>) -> Result<(), Error> {
        if keys.len() > MAX_BATCH {
            return Err(other(format!("at most {MAX_BATCH} keys per batch")));
        }
        let (access, ns) = self.bucket(&bucket)?;
        for key in &keys {
            check_key(key)?;
            access.backend.delete(&ns, key)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn keys_are_checked() {
        assert!(super::check_key("notes/2026/../x").is_ok(), "just a string");
        assert!(super::check_key("").is_err());
        assert!(super::check_key("a\0b").is_err());
        assert!(super::check_key("a\nb").is_err());
        assert!(super::check_key(&"k".repeat(10_000)).is_err());
    }
}
