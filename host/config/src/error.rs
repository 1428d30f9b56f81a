//! The one error a policy file is refused with: every section's check names the key and
//! what to write instead; this names the file.

use hermetic::StatePathError;
use std::path::PathBuf;

/// Why a policy file was rejected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyFileError {
    /// The file (or the secrets file) cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// File.
        path: PathBuf,
        /// OS error.
        #[source]
        source: std::io::Error,
    },
    /// Not valid TOML, or an unknown key, or a wrong type.
    #[error("{path}: {reason}")]
    Parse {
        /// File.
        path: PathBuf,
        /// What is wrong, with the key.
        reason: String,
    },
    /// A value that parses but makes no sense.
    #[error("{path}: {reason}")]
    Invalid {
        /// File.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A file the host keeps (the policy itself, secrets, audit log, approval
    /// allowlist) lies where tools or terminal commands of this policy reach.
    #[error("{path}: {source}")]
    StatePath {
        /// The policy file.
        path: PathBuf,
        /// Which file, and where it is reached from.
        #[source]
        source: StatePathError,
    },
}
