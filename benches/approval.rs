//! Speed of the dangerous-command detector over the shared corpus.
//!
//! The budget is a 5 µs median per command. Criterion's estimates are means
//! over many iterations, so before the criterion groups run, the bench times every
//! corpus command on its own (25 rounds) and prints the median, p90 and mean of those
//! per-command times. Then `detect/corpus_command` runs one corpus command per
//! iteration, cycling through all of them (its time is the mean per command), and
//! `detect/whole_corpus` runs every command per iteration.
#![allow(
    missing_docs,
    reason = "criterion_group! generates an undocumented public fn"
)]
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hermetic::approval::Detector;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

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

/// Times each command on its own and prints the distribution of per-command times.
fn per_command_distribution(detector: &Detector, commands: &[String]) {
    let mut times: Vec<u128> = Vec::with_capacity(commands.len() * 25);
    for _ in 0..25 {
        for command in commands {
            let start = Instant::now();
            black_box(detector.detect(black_box(command)));
            times.push(start.elapsed().as_nanos());
        }
    }
    times.sort_unstable();
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    let mean = times.iter().sum::<u128>() / times.len() as u128;
    println!(
        "detect per command over {} corpus commands: median {} ns, p90 {} ns, mean {} ns",
        commands.len(),
        at(0.5),
        at(0.9),
        mean
    );
}

fn bench_detect(c: &mut Criterion) {
    let commands = corpus();
    let detector = Detector::default();
    per_command_distribution(&detector, &commands);
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
