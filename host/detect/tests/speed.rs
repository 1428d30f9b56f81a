//! Prints the detector's per-command time over every labelled command (the shared
//! corpus and our own files). A figure to read, not an assertion: speed is judged by
//! benchmarks that print numbers, never by timed asserts that flake on a busy machine.
//! For a meaningful figure run `cargo test --release -p hermetic-detect --test speed
//! -- --nocapture`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

mod common;
use common::{LABELLED, commands};
use hermetic_detect::Detector;
use std::hint::black_box;
use std::time::Instant;

#[test]
fn detect_time_per_command_is_printed() {
    let detector = Detector::default();
    for file in LABELLED {
        let commands = commands(file);
        // Warm up (the parser's lazily built options, the allocator).
        for c in &commands {
            black_box(detector.detect(c));
        }
        let rounds = 15;
        let mut times: Vec<u128> = Vec::with_capacity(commands.len() * rounds);
        let mut best: Vec<u128> = vec![u128::MAX; commands.len()];
        for _ in 0..rounds {
            for (i, c) in commands.iter().enumerate() {
                let start = Instant::now();
                black_box(detector.detect(black_box(c)));
                let t = start.elapsed().as_nanos();
                times.push(t);
                best[i] = best[i].min(t);
            }
        }
        times.sort_unstable();
        best.sort_unstable();
        let at = |v: &[u128], q: f64| v[((v.len() - 1) as f64 * q) as usize] as f64 / 1000.0;
        let mean = times.iter().sum::<u128>() / times.len() as u128;
        // The median of each command's best time is the figure least disturbed by
        // other work on a shared machine; the plain median is what a caller sees.
        println!(
            "{file}: {} commands, median {:.2} µs, p90 {:.2} µs, mean {:.2} µs; \
             median of per-command best {:.2} µs",
            commands.len(),
            at(&times, 0.5),
            at(&times, 0.9),
            mean as f64 / 1000.0,
            at(&best, 0.5)
        );
    }
}
