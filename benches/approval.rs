//! Speed of the dangerous-command detector over the shared corpus.
//!
//! `detect/corpus_command` runs one corpus command per iteration, cycling through all
//! of them, so its time per iteration is the time per command (the budget is
//! 5 µs); `detect/whole_corpus` runs every command per iteration.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "benchmark"
)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hermetic::approval::Detector;
use std::hint::black_box;
use std::path::PathBuf;

fn corpus() -> Vec<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/approval.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e} (shared/ must sit next to the repository)",
            path.display()
        )
    });
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["command"].as_str().unwrap().to_owned()
        })
        .collect()
}

fn bench_detect(c: &mut Criterion) {
    let commands = corpus();
    let detector = Detector::default();
    let mut group = c.benchmark_group("detect");
    let mut i = 0usize;
    group.bench_function("corpus_command", |b| {
        b.iter(|| {
            let command = &commands[i % commands.len()];
            i += 1;
            black_box(detector.detect(black_box(command)))
        })
    });
    group.throughput(Throughput::Elements(commands.len() as u64));
    group.bench_function("whole_corpus", |b| {
        b.iter(|| {
            for command in &commands {
                black_box(detector.detect(black_box(command)));
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench_detect);
criterion_main!(benches);
