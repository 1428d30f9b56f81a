//! # hermetic-config — the operator's policy file
//!
//! The one place that knows the policy file's shape: it reads the operator's TOML into
//! the runtime's types (the [`OperatorPolicy`](hermetic_policy::OperatorPolicy) the
//! pure [`hermetic_policy`] decides with, secret values, the host files to keep out of
//! reach, trust and key-value settings) and the server's ([`ServerPolicy`]), with the
//! file-system facts they need (canonical mount paths, secret values) gathered here.
//! The runtime never reads the file.
//!
//! One module per section, each holding its TOML as written and what turns it into
//! values: `mounts`, `grants` (`[defaults]`, `[tools.NAME]`) with `limits`, `inject`
//! and `keyvalue` (also `[keyvalue]`), `tenants`, `server`, `cluster`, `trust`,
//! `terminal`, `hooks`, `secrets`; `state_files` checks the host's own files; `load`
//! puts them together ([`load`], [`parse`]). See `policy.example.toml` for every key,
//! commented.
//!
//! Relative paths: the directories tools and terminal commands work in (mounts, the
//! terminal's `cwd` and workspaces, ssh key files) resolve against the directory
//! hermetic starts in; the files the host keeps for itself (the secrets file, the
//! server's audit log, the approval allowlist) against the policy file's own
//! directory. Those host files, and the policy file itself, must lie outside every
//! mount and terminal workspace ([`ToolReach`](hermetic::ToolReach)).

mod cluster;
mod error;
mod grants;
mod hooks;
mod inject;
mod keyvalue;
mod limits;
mod load;
mod mounts;
mod secrets;
mod server;
mod state_files;
mod tenants;
mod terminal;
mod trust;

pub use error::PolicyFileError;
pub use hooks::BUNDLED_HOOKS;
pub use load::{LoadedPolicy, load, parse};
pub use server::{ServerPolicy, TokenDigest, parse_ip_range, parse_token_digest};
