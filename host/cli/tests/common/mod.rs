//! Shared by the CLI test binaries.
#![allow(dead_code, reason = "each test binary uses part of it")]

pub mod community;
pub mod redis;
pub mod registry;
pub mod stdio;
