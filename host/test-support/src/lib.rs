//! The harnesses hermetic's test suites and benches share, one copy of each. Every test
//! tree (tests/, benches/, each host crate's tests/ and benches/) takes it as a
//! dev-dependency; it depends on the library crates it sets up, never the other way
//! round.
//!
//! - In this process: [`guests`] (components built from guest-tools/, the shared
//!   compiled-code cache), [`registry`] (registries over them), [`in_process`] (an MCP
//!   server on loopback), [`backends`] (podman, sshd, gVisor for the terminal).
//! - Child processes: [`serve_process`] (`hermetic serve --http`), [`lines`] (a child's
//!   output, waited on with a bound), [`redis`] and [`oci_registry`] (the real services a
//!   cluster and community tools use), [`net`] (free loopback ports).
//! - Clients: [`http`] (raw HTTP/1.1), [`mcp_http`] (sessionless MCP requests),
//!   [`mcp_stdio`] (a legacy session over a child's stdin and stdout), [`tokens`].
//!
//! A harness panics when its set-up fails: the test it serves fails there, saying what
//! was missing (a package to install, a component not built).

pub mod backends;
pub mod guests;
pub mod http;
pub mod in_process;
pub mod lines;
pub mod mcp_http;
pub mod mcp_stdio;
pub mod net;
pub mod oci_registry;
pub mod redis;
pub mod registry;
pub mod serve_process;
pub mod tokens;
