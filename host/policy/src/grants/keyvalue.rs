//! The key-value capability as data: what a tool declares (`keyvalue = "tenant"` or
//! `"session"` under `[capabilities]`), what the operator grants (`keyvalue = true`,
//! or a table of quotas), and what the sandbox enforces.

use serde::Serialize;

pub use crate::declaration::KeyValueScope;

/// How much one store (one tool × tenant × session, as its scope says) may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct KeyValueQuota {
    /// Keys, at most.
    pub max_keys: u64,
    /// Bytes of one value, at most.
    pub max_value_bytes: u64,
    /// Bytes of keys and values together, at most.
    pub max_total_bytes: u64,
}

impl Default for KeyValueQuota {
    /// 10,000 keys, 1 MiB per value, 16 MiB in all.
    fn default() -> Self {
        Self {
            max_keys: 10_000,
            max_value_bytes: 1 << 20,
            max_total_bytes: 16 << 20,
        }
    }
}

/// A tool's key-value grant: its scope (from its declaration) and its quota (from the
/// operator).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct KeyValueGrant {
    /// Whose data it sees.
    pub scope: KeyValueScope,
    /// How much it may keep.
    pub quota: KeyValueQuota,
}
