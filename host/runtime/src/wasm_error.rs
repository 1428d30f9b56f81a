//! The causes kept under hermetic's errors, wasmtime's among them.

use std::fmt;

/// A cause kept under a hermetic error's words ([`std::error::Error::source`]), for
/// callers that inspect it.
pub type Cause = Box<dyn std::error::Error + Send + Sync>;

/// A wasmtime error kept whole as the cause ([`std::error::Error::source`]) of a
/// hermetic error, so a caller can walk its chain or downcast it (e.g. to
/// [`wasmtime::Trap`]) through [`WasmtimeError::get_ref`].
///
/// wasmtime's own error type is not a [`std::error::Error`] (like `anyhow`'s), so it
/// cannot be a `#[source]` itself. Its text is the whole chain on one line, as the
/// messages that name it have always printed it.
#[derive(Debug)]
pub struct WasmtimeError(wasmtime::Error);

impl WasmtimeError {
    /// The wasmtime error, e.g. to `downcast_ref::<wasmtime::Trap>()`.
    pub fn get_ref(&self) -> &wasmtime::Error {
        &self.0
    }
}

impl From<wasmtime::Error> for WasmtimeError {
    fn from(error: wasmtime::Error) -> Self {
        Self(error)
    }
}

impl fmt::Display for WasmtimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#}", self.0)
    }
}

impl std::error::Error for WasmtimeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

#[cfg(test)]
mod tests {
    use super::WasmtimeError;
    use std::error::Error as _;

    #[test]
    fn the_chain_is_kept_as_sources_and_printed_on_one_line() {
        let io = std::io::Error::other("disk on fire");
        let error = WasmtimeError::from(wasmtime::Error::new(io).context("compiling"));
        assert_eq!(error.to_string(), "compiling: disk on fire");
        let cause = error.source().map(ToString::to_string);
        assert_eq!(cause.as_deref(), Some("disk on fire"));
        assert!(error.get_ref().downcast_ref::<std::io::Error>().is_some());
    }
}
