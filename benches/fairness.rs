//! Fairness under flood (issue 10, item 3): tenant `flood` queues 5,000 calls of a
//! spinning tool (one at a time: `max_concurrent = 1`), tenant `calm` meanwhile makes
//! trivial echo calls. Prints `calm`'s latency percentiles unloaded and loaded and their
//! ratio; the goal is a loaded p99 at most twice the unloaded one.
//!
//! Not criterion: the figure of interest is a tail latency under a concurrent load that
//! criterion's iteration model cannot hold steady, so this bench (harness = false)
//! measures percentiles itself and prints them.
use hermetic::{CallOptions, Registry};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SAMPLES: usize = 2_000;
const FLOOD: usize = 5_000;

fn tenant(name: &str) -> CallOptions {
    CallOptions::default().with_tenant(name)
}

/// `SAMPLES` sequential echo calls of `calm`, sorted latencies.
async fn calm_latencies(registry: &Arc<Registry>) -> Vec<Duration> {
    let mut times = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        let started = Instant::now();
        let outcome = registry
            .invoke_async("echo".into(), r#"{"message": "hi"}"#.into(), tenant("calm"))
            .await;
        times.push(started.elapsed());
        assert!(outcome.is_success(), "{outcome:?}");
    }
    times.sort();
    times
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn main() {
    // `cargo bench` passes `--bench` (and `cargo test --benches` nothing): run either way.
    let root = tempfile::TempDir::new().unwrap();
    let registry = Arc::new(hermetic_tests::fairness_registry(root.path()));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        calm_latencies(&registry).await; // warm-up
        let unloaded = calm_latencies(&registry).await;
        let flood: Vec<_> = (0..FLOOD)
            .map(|_| {
                let registry = Arc::clone(&registry);
                tokio::spawn(async move {
                    registry
                        .invoke_async("spin".into(), "{}".into(), tenant("flood"))
                        .await
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let loaded = calm_latencies(&registry).await;
        for task in &flood {
            task.abort();
        }
        let row = |name: &str, t: &[Duration]| {
            println!(
                "fairness/{name:<34} p50 {:>9.1?}  p99 {:>9.1?}  max {:>9.1?}",
                percentile(t, 0.5),
                percentile(t, 0.99),
                t[t.len() - 1]
            );
        };
        row("calm echo, unloaded", &unloaded);
        row(&format!("calm echo, flood queued {FLOOD} spins"), &loaded);
        let ratio =
            percentile(&loaded, 0.99).as_secs_f64() / percentile(&unloaded, 0.99).as_secs_f64();
        println!(
            "fairness/p99 loaded / unloaded: {ratio:.2}× (goal ≤ 2×: {})",
            if ratio <= 2.0 { "met" } else { "NOT met" }
        );
    });
    // The flood call running spins to its 200 ms deadline; do not wait for it.
    runtime.shutdown_background();
}
