//! Session approvals: "approved for this session" answers, keyed by tenant, session and
//! rule id, behind a trait so a shared store (Redis, PostgreSQL) can replace the
//! in-memory one when hosts are many.

use hermetic_detect::RuleId;
use parking_lot::Mutex;
use std::collections::HashSet;

/// Whose approvals: one tenant's one agent session.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct SessionKey {
    /// Tenant id (empty for single-tenant use).
    pub tenant: String,
    /// Session id.
    pub session: String,
}

impl SessionKey {
    /// A key for `tenant` and `session`.
    pub fn new(tenant: impl Into<String>, session: impl Into<String>) -> Self {
        Self {
            tenant: tenant.into(),
            session: session.into(),
        }
    }
}

/// A session-approval store that could not be reached or read.
#[derive(Debug, thiserror::Error)]
#[error("approval store: {0}")]
pub struct StoreError(pub String);

/// Where session approvals live.
///
/// Implementations must be safe to share between threads. An error is treated as "not
/// approved" by the gate (the human is asked again), never as approval.
pub trait ApprovalStore: Send + Sync {
    /// True when `rule` was approved for the rest of `key`'s session.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot answer.
    fn is_approved(&self, key: &SessionKey, rule: RuleId) -> Result<bool, StoreError>;

    /// Records that `rule` is approved for the rest of `key`'s session.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot record it.
    fn approve(&self, key: &SessionKey, rule: RuleId) -> Result<(), StoreError>;
}

/// Session approvals in this process's memory (one machine; lost on restart).
#[derive(Debug, Default)]
pub struct MemoryStore {
    approved: Mutex<HashSet<(SessionKey, RuleId)>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl ApprovalStore for MemoryStore {
    fn is_approved(&self, key: &SessionKey, rule: RuleId) -> Result<bool, StoreError> {
        let set = self.approved.lock();
        Ok(set.contains(&(key.clone(), rule)))
    }

    fn approve(&self, key: &SessionKey, rule: RuleId) -> Result<(), StoreError> {
        let mut set = self.approved.lock();
        set.insert((key.clone(), rule));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approvals_are_scoped_to_tenant_session_and_rule() {
        let store = MemoryStore::new();
        let a = SessionKey::new("t1", "s1");
        store.approve(&a, RuleId::RmRecursive).unwrap();
        assert!(store.is_approved(&a, RuleId::RmRecursive).unwrap());
        assert!(!store.is_approved(&a, RuleId::GitDestructive).unwrap());
        assert!(
            !store
                .is_approved(&SessionKey::new("t1", "s2"), RuleId::RmRecursive)
                .unwrap()
        );
        assert!(
            !store
                .is_approved(&SessionKey::new("t2", "s1"), RuleId::RmRecursive)
                .unwrap()
        );
    }
}
