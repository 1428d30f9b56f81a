//! # hermetic — a WebAssembly-sandboxed tool host for AI agents
//!
//! Every tool is a WebAssembly component exporting the `hermetic:tool` interface
//! (`schema`, `check`, `handle`). The [`Registry`] discovers components, applies the
//! operator's [`policy`], hides unavailable tools, and runs every call in a fresh
//! sandbox with only the granted capabilities, under time and memory limits.
//!
//! ```no_run
//! use hermetic::{CallOptions, OperatorPolicy, Registry, RegistryOptions};
//! let policy = OperatorPolicy::with_workspace(std::env::current_dir()?);
//! let registry = Registry::new(RegistryOptions::new(policy))?;
//! registry.add_bundled();
//! let result = registry.call("read_file", r#"{"path": "README.md"}"#, &CallOptions::default());
//! println!("{result}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// The public surface is curated: the modules below are private and what callers use is
// re-exported at the root. `component` and `toolsets` stay public: each is one
// coherent API of free functions and types (reading components, toolset tables). The
// policy file is read by `hermetic-config`, above this crate.
mod bindings;
mod call;
mod catalog;
mod compile_settings;
pub mod component;
mod dispatch;
mod engine;
pub mod hooks;
mod outcome;
mod registry;
mod sandbox;
mod sanitize;
mod secrets;
mod slots;
mod state_paths;
pub mod toolsets;
mod wasm_error;

/// The approval gate (`hermetic-approval`), re-exported: call options carry an
/// [`approval::Approver`].
pub use hermetic_approval as approval;
/// Clocks the approval state and the `check()` cache share.
pub use hermetic_approval::clock;
/// The pure policy (`hermetic-policy`), re-exported: grants are decided there.
pub use hermetic_policy as policy;
/// Tool declarations (part of `hermetic-policy`).
pub use hermetic_policy::declaration;

mod bundled {
    include!(concat!(env!("OUT_DIR"), "/bundled.rs"));
}

pub use call::{CancelToken, Progress, ProgressSink};
pub use catalog::{Catalog, FileCheck};
pub use clock::{Clock, ManualClock, SystemClock};
pub use component::{LoadError, ToolSource};
pub use declaration::{Access, Declaration};
pub use dispatch::{CallOptions, Dispatcher, MAX_RESULT_DEPTH};
pub use engine::{EngineConfig, EngineError, METADATA_SANDBOXES, Runtime, default_compute_turns};
pub use outcome::{CallOutcome, LimitKind};
pub use policy::{EffectiveGrants, OperatorPolicy};
pub use registry::{
    Availability, CHECK_TTL, FLAKE_GRACE, LoadProblem, Registered, Registry, RegistryError,
    RegistryOptions, Selection, ToolStatus, ToolsetInfo,
};
pub use sandbox::capability::keyvalue::backend::{
    EntryInfo as KeyValueEntry, KeyValueBackend, KeyValueError, Namespace as KeyValueNamespace,
    PAGE as KEYVALUE_PAGE, Store as KeyValueStore, StoreFilter as KeyValueStoreFilter,
    StoreId as KeyValueStoreId, StoreInfo as KeyValueStoreInfo,
    incremented as keyvalue_incremented, parse_bucket as keyvalue_parse_bucket,
};
pub use sandbox::capability::keyvalue::settings::{
    KeyValueSettings, MAX_SESSION_EXPIRY as KEYVALUE_MAX_SESSION_EXPIRY,
};
pub use sandbox::capability::keyvalue::{
    Embedded as EmbeddedKeyValue, EmbeddedFile as EmbeddedKeyValueFile,
};
/// Directory walks that follow no symlink (mounts, the terminal's tenant directories).
pub use sandbox::capability::{create_beneath, open_beneath};
pub use sandbox::terminal::{
    CommandFinished, CommandRequest, GateRefusal, KillOutcome, LogLines, ProcessInfo, ProcessReply,
    ProcessRequest, ProcessStarted, ProcessStatus, TerminalAccess, TerminalCallContext,
    TerminalCallError, TerminalService, WaitOutcome, WriteOutcome,
};
pub use sandbox::{
    MAX_PROGRESS_REPORTS, PROGRESS_BURST, PROGRESS_REFILL, SandboxError, egress::HttpState,
};
pub use secrets::Secrets;
pub use slots::SlotStats;
pub use state_paths::{StateFile, StatePathError, ToolReach, allowlist_files};
pub use wasm_error::{Cause, WasmtimeError};

/// Names and bytes of the tools embedded in this binary.
pub fn bundled_tools() -> &'static [(&'static str, &'static [u8])] {
    bundled::BUNDLED
}

/// Where the build put the guest components, including the test tools (for tests and
/// benches in this repository).
#[doc(hidden)]
pub const GUEST_BUILD_DIR: &str = env!("HERMETIC_GUEST_BUILD_DIR");
