//! Benchmarks live in `call.rs` (`cargo bench -p hermetic-benches`).
