//! Shared by the CLI test binaries.

pub mod registry;
