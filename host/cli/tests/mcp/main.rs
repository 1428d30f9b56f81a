//! The `hermetic serve` binary driven by a real MCP client — the official Python SDK
//! (`mcp` on PyPI, installed by .ci/run) through tests/mcp/client.py — over stdio and
//! streamable HTTP, in both protocol eras (`legacy`: the initialize handshake; `auto`:
//! 2026-07-28 discovery), with raw requests where a client without an SDK is the
//! point. One test binary, a module per topic.
//!
//! Waits are bounded by [`harness::HANG_GUARD`] so a broken server fails the test
//! instead of hanging it; nothing asserts on how long anything took.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

mod harness;

mod answers;
mod approvals;
mod audit;
mod auth;
mod calls;
mod cancellation;
mod hermes;
mod list_changed;
mod tenants;
mod terminal;
