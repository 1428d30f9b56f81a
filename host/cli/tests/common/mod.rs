//! What only the community-tool suites share (community, review, broken_sources,
//! registry_auth): the binary in a home of its own, a trust policy naming tools by
//! source, and components edited into new versions. Every other harness is in the
//! hermetic-test-support crate (host/test-support).
#![allow(dead_code, reason = "each test binary uses part of it")]

pub mod community;
