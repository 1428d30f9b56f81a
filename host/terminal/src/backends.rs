//! The backends by name, and what the host asks of one before any command runs: read
//! its options table (`[terminal.NAME]`), say which directories of this host its
//! commands reach, and build it for a tenant.
//!
//! A new backend is one file, `backends/NAME.rs` — its options struct, a
//! [`BackendSpec`], a [`BackendPlan`] and its [`TerminalBackend`] — plus its name in
//! the `backends!` line below.
//! Nothing else names backends: the policy keeps their tables as written, the
//! host-state check reads what [`BackendPlan::reach`] says, and the book's backend
//! table (`docs/src/terminal.md`) is the documentation of each file.

use crate::TerminalError;
use crate::backend::TerminalBackend;
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Each name is a file `backends/NAME.rs` with a `pub(crate) const SPEC:
/// BackendSpec`; the list makes the modules and [`BACKENDS`] in this order.
macro_rules! backends {
    ($($name:ident),* $(,)?) => {
        $(pub(crate) mod $name;)*
        /// Every backend: `[terminal] backend = "NAME"` picks one.
        pub(crate) static BACKENDS: &[BackendSpec] = &[$($name::SPEC),*];
    };
}

// The registration line: a new backend is its file and its name here.
backends!(local, bwrap, docker, ssh, gvisor);

/// The names of every backend, in registration order (for messages and `--help`).
pub fn backend_names() -> impl Iterator<Item = &'static str> {
    BACKENDS.iter().map(|b| b.name)
}

/// `name` as the registered backend's own `'static` name ("terminal" when none is
/// called that: it was refused when the settings were read).
pub(crate) fn name_of(name: &str) -> &'static str {
    BACKENDS
        .iter()
        .find(|b| b.name == name)
        .map_or("terminal", |b| b.name)
}

/// One backend as the host knows it before it runs anything.
pub(crate) struct BackendSpec {
    /// Its name in policy files, results and messages.
    pub name: &'static str,
    /// Reads its options table; `Err` says what is wrong, in the operator's words.
    pub read: fn(&Options<'_>) -> Result<Box<dyn BackendPlan>, String>,
}

/// A backend's options table, as its [`BackendSpec::read`] gets it.
pub(crate) struct Options<'a> {
    /// `[terminal.NAME]` (or a tenant's merged copy); `None` when the policy has none.
    pub table: Option<&'a toml::Value>,
    /// What relative paths resolve against.
    pub base_dir: &'a Path,
    /// Whether this backend is the one that runs commands (a table of another backend
    /// is read only to refuse mistakes in it).
    pub selected: bool,
}

impl Options<'_> {
    /// The table as the backend's options struct (its defaults where it has none).
    pub fn parse<T: DeserializeOwned + Default>(&self) -> Result<T, String> {
        match self.table {
            None => Ok(T::default()),
            Some(table) => table.clone().try_into().map_err(|e: toml::de::Error| {
                // toml's message for a value read on its own has no position to show.
                e.message().to_owned()
            }),
        }
    }

    /// `path` against the base directory when it is relative.
    pub fn resolve(&self, path: &mut Option<PathBuf>) {
        if let Some(p) = path.as_mut()
            && p.is_relative()
        {
            *p = self.base_dir.join(&*p);
        }
    }
}

/// Where a backend's commands live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Home {
    /// On the far side (a container, a remote host): `cwd` is in its file system.
    Elsewhere,
    /// On this host, in the tenant's part of the `workspace` mount, the configured
    /// `cwd` or where hermetic started.
    Host,
    /// On this host, in the tenant's own subdirectory of this directory.
    HostBelow(PathBuf),
}

/// A backend whose options were read: what the host needs before it builds one per
/// tenant.
pub(crate) trait BackendPlan: Send + Sync + std::fmt::Debug {
    /// Where its commands live.
    fn home(&self) -> Home;
    /// The directories of this host its commands reach besides their working
    /// directory (a writable workspace), each with what it is.
    fn reach(&self) -> Vec<(&'static str, PathBuf)>;
    /// The backend for one tenant.
    fn build(&self, cx: &BuildContext<'_>) -> Result<Arc<dyn TerminalBackend>, TerminalError>;
}

/// What the host knows of one tenant when it builds its backend.
pub(crate) struct BuildContext<'a> {
    /// `cwd` as the operator configured it (in the backend's file system).
    pub cwd: Option<String>,
    /// The tenant's directory on this host (backends whose [`Home`] is on it).
    pub dir: Option<PathBuf>,
    /// Where commands start when the agent names no directory, for backends on this
    /// host: `cwd`, else the tenant's directory.
    pub start: String,
    /// The host's own files (hidden from any view of the host a backend shows).
    pub protected: &'a [PathBuf],
    /// The tenant's own subdirectory below a backend workspace (`None` for the
    /// operator, whose directory is the whole workspace).
    pub tenant_subdir: &'a dyn Fn(&'static str) -> Result<Option<PathBuf>, TerminalError>,
}

/// Reads `config`'s backend options: the selected backend's plan, after every table in
/// `config.options` was read by its backend (so a mistake in a table not in use is
/// still said). `at` names the config in messages (`terminal`,
/// `terminal.tenants.acme`).
pub(crate) fn read(
    config: &hermetic_policy::terminal::TerminalConfig,
    base_dir: &Path,
    at: &str,
) -> Result<Box<dyn BackendPlan>, TerminalError> {
    let invalid = |key: &str, reason: String| TerminalError::Options {
        at: format!("{at}.{key}"),
        reason,
    };
    let known = || backend_names().collect::<Vec<_>>().join(", ");
    for (key, value) in &config.options {
        let Some(spec) = BACKENDS.iter().find(|b| b.name == key) else {
            let reason = if value.is_table() {
                format!("no backend is called {key:?} (there are: {})", known())
            } else {
                "unknown key (the keys are backend, cwd, timeout_secs, env, approval, and a table per backend)"
                    .to_owned()
            };
            return Err(invalid(key, reason));
        };
        if !value.is_table() {
            return Err(invalid(key, format!("must be a table: [{at}.{key}]")));
        }
        if spec.name != config.backend {
            (spec.read)(&Options {
                table: Some(value),
                base_dir,
                selected: false,
            })
            .map_err(|reason| invalid(key, reason))?;
        }
    }
    let Some(spec) = BACKENDS.iter().find(|b| b.name == config.backend) else {
        return Err(invalid(
            "backend",
            format!(
                "no backend is called {:?} (there are: {})",
                config.backend,
                known()
            ),
        ));
    };
    (spec.read)(&Options {
        table: config.options.get(spec.name),
        base_dir,
        selected: true,
    })
    .map_err(|reason| invalid(spec.name, reason))
}
