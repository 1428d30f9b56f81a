//! Speed of the dangerous-command detector over the shared corpus.
//!
//! The budget is a 5 µs median per command. Criterion's estimates are means
//! over many iterations, so before the criterion groups run, the bench times every
//! corpus command on its own (25 rounds) and prints the median, p90 and mean of those
//! per-command times, for the shared corpus and for every labelled command (the
//! corpus, our extra cases and the held-out `unseen.jsonl`). Then
//! `detect/corpus_command` runs one corpus command per iteration, cycling through all
//! of them (its time is the mean per command), and `detect/whole_corpus` runs every
//! command per iteration.
#![allow(
    missing_docs,
    reason = "criterion_group! generates an undocumented public fn"
)]
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hermetic::approval::Detector;
use std::hint::black_box;
use std::time::Instant;

#[path = "../host/detect/tests/common/mod.rs"]
mod labelled;

/// Times each command on its own and prints the distribution of per-command times.
fn per_command_distribution(detector: &Detector, what: &str, commands: &[String]) {
    // Warm up (the parser's lazily built options, the allocator).
    for command in commands {
        black_box(detector.detect(command));
    }
    let mut times: Vec<u128> = Vec::with_capacity(commands.len() * 25);
    let mut best: Vec<u128> = vec![u128::MAX; commands.len()];
    for _ in 0..25 {
        for (i, command) in commands.iter().enumerate() {
            let start = Instant::now();
            black_box(detector.detect(black_box(command)));
            let t = start.elapsed().as_nanos();
            times.push(t);
            best[i] = best[i].min(t);
        }
    }
    times.sort_unstable();
    best.sort_unstable();
    let at = |v: &[u128], q: f64| v[((v.len() - 1) as f64 * q) as usize];
    let mean = times.iter().sum::<u128>() / times.len() as u128;
    // The median of each command's best time is the figure least disturbed by other
    // work on a shared machine; the plain median is what a caller sees.
    println!(
        "detect per command over {} {what}: median {} ns, p90 {} ns, mean {} ns; \
         median of per-command best {} ns",
        commands.len(),
        at(&times, 0.5),
        at(&times, 0.9),
        mean,
        at(&best, 0.5)
    );
}

fn bench_detect(c: &mut Criterion) {
    let commands = labelled::commands(labelled::CORPUS);
    let detector = Detector::default();
    per_command_distribution(&detector, "corpus commands", &commands);
    let labelled: Vec<String> = labelled::LABELLED
        .iter()
        .flat_map(|file| labelled::commands(file))
        .collect();
    per_command_distribution(&detector, "labelled commands", &labelled);
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
