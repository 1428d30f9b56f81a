//! The integration suites over real components built from guest-tools/, one test target
//! each (see Cargo.toml); what they share is the `hermetic-test-support` crate
//! (host/test-support). This library target is empty: it only gives the package a root.
