//! # hermetic-policy — what a tool may do, decided as data
//!
//! Pure: declarations, operator and tenant policies, network destinations, and the
//! terminal and approval settings, as plain data; [`effective`] turns a tool's
//! [`Declaration`] ∩ the operator's [`OperatorPolicy`] ∩ a tenant's [`TenantPolicy`]
//! into the [`EffectiveGrants`] its sandbox gets. No I/O, no clocks, no wasmtime, no
//! async runtime: every decision here can be unit-tested and fuzzed alone. Reading
//! policy files (and the file-system facts they need) is `hermetic-config`'s job.

pub mod approval;
pub mod declaration;
mod grants;
/// Hooks the operator turns on (`[hooks.NAME]`).
pub use grants::hooks;
/// The key-value capability: scope, quota, grant.
pub use grants::keyvalue;
pub mod inject;
pub mod network;
pub mod review;
pub mod terminal;
pub mod trust;

pub use declaration::{Access, Capabilities, Declaration, DeclarationError, FsRequest};
pub use grants::*;
