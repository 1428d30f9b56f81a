//! The benchmarks of the hot paths, one file each (`cargo bench -p hermetic-benches
//! --bench NAME`): `call.rs` (one call through the registry, against the floor),
//! `throughput.rs` (calls per second on 1 and N threads), `fairness.rs` (one tenant's
//! latency while another floods the host), `approval.rs` (the dangerous-command
//! detector over the corpus), `hooks.rs` (a call with and without an empty hook),
//! `terminal.rs` (one shell command on each terminal backend).
//! `floor.rs` is shared by call and throughput: wasmtime alone on hermetic's engine.
//! This library target is empty; it only gives the package a root.
