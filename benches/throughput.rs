//! Isolated calls per second (issue 11: "≥ 250,000 isolated calls/s on 2 cores"): every
//! call a fresh sandbox of the echo tool with the whole dispatch pipeline, as many at
//! once as the machine has cores. Two ways in:
//!
//! - `call`: one OS thread per core, each calling the blocking `Registry::call` in a loop;
//! - `invoke_async`: a tokio runtime with one worker per core and 64 tasks, each awaiting
//!   `Registry::invoke_async` in a loop (the MCP server's path: echo runs on a fiber on
//!   the task's worker).
//!
//! Then the floor ([`floor::Floor`]): the same echo calls in wasmtime alone on
//! hermetic's engine, from 1 and N threads, so the gap to the goal can be told apart
//! into hermetic's share and wasmtime's.
//!
//! Not criterion: the figure is a rate over concurrent callers, which criterion's
//! one-closure iteration model does not measure; this bench (harness = false) counts
//! calls over a fixed window and prints the rate.
mod floor;

use hermetic::{CallOptions, Registry};
use hermetic_test_support::registry::fixture;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const ARGS: &str = r#"{"message": "hello"}"#;
/// How long each measurement counts calls (after a warm-up of the same length / 4).
const WINDOW: Duration = Duration::from_secs(3);
/// Concurrent tasks on the async path (as many keep-alive connections as the HTTP bench).
const TASKS: usize = 64;

/// What callers share: whether to go on, whether calls count yet, and the count.
#[derive(Default)]
struct Window {
    stop: AtomicBool,
    counting: AtomicBool,
    calls: AtomicU64,
}

impl Window {
    /// Whether a caller goes on.
    fn open(&self) -> bool {
        !self.stop.load(Ordering::Relaxed)
    }

    /// A caller's own count (kept locally, added once: no shared counter per call).
    fn count(&self, mine: &mut u64) {
        if self.counting.load(Ordering::Relaxed) {
            *mine += 1;
        }
    }

    /// Lets the callers warm up, counts their calls for [`WINDOW`], then tells them
    /// to stop; the time counted.
    fn measure(&self) -> Duration {
        std::thread::sleep(WINDOW / 4);
        self.counting.store(true, Ordering::Relaxed);
        let started = Instant::now();
        std::thread::sleep(WINDOW);
        self.counting.store(false, Ordering::Relaxed);
        let elapsed = started.elapsed();
        self.stop.store(true, Ordering::Relaxed);
        elapsed
    }

    /// Calls per second over `elapsed`, once every caller has added its count.
    fn rate(&self, elapsed: Duration) -> f64 {
        self.calls.load(Ordering::Relaxed) as f64 / elapsed.as_secs_f64()
    }
}

/// Calls per second of `threads` threads each running `call` in a loop until told to
/// stop.
fn blocking_rate(threads: usize, call: impl Fn() + Sync) -> f64 {
    let window = Window::default();
    let elapsed = std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut mine = 0u64;
                while window.open() {
                    call();
                    window.count(&mut mine);
                }
                window.calls.fetch_add(mine, Ordering::Relaxed);
            });
        }
        window.measure()
    });
    window.rate(elapsed)
}

/// Calls per second of `TASKS` tasks on a `workers`-thread runtime awaiting
/// `Registry::invoke_async`.
fn async_rate(registry: &Arc<Registry>, workers: usize) -> f64 {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .build()
        .unwrap();
    let window = Arc::new(Window::default());
    let tasks: Vec<_> = (0..TASKS)
        .map(|_| {
            let (registry, window) = (Arc::clone(registry), Arc::clone(&window));
            runtime.spawn(async move {
                let mut mine = 0u64;
                while window.open() {
                    let outcome = registry
                        .invoke_async("echo".into(), ARGS.into(), CallOptions::default())
                        .await;
                    assert!(outcome.is_success(), "{outcome:?}");
                    window.count(&mut mine);
                }
                window.calls.fetch_add(mine, Ordering::Relaxed);
            })
        })
        .collect();
    let elapsed = window.measure();
    runtime.block_on(async {
        for task in tasks {
            task.await.unwrap();
        }
    });
    window.rate(elapsed)
}

fn main() {
    // `cargo bench` passes `--bench` (and `cargo test --benches` nothing): run either way.
    let hermetic_test_support::registry::Fixture {
        workspace: _workspace,
        registry,
    } = fixture(false, &["echo"]);
    let registry = Arc::new(registry);
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let row = |name: String, rate: f64| {
        println!("throughput/{name:<52} {rate:>10.0} calls/s");
    };
    let options = CallOptions::default();
    let call = || {
        let out = registry.call("echo", ARGS, &options);
        assert!(out.contains("hello"), "{out}");
    };
    row("call, 1 thread".into(), blocking_rate(1, call));
    let threads = blocking_rate(cores, call);
    row(format!("call, {cores} threads"), threads);
    let tasks = async_rate(&registry, cores);
    row(
        format!("invoke_async, {TASKS} tasks on {cores} workers"),
        tasks,
    );
    // The same calls in wasmtime alone on hermetic's engine: what is left of the goal
    // below this line is wasmtime's, not hermetic's.
    let floor = floor::Floor::echo();
    let bare = || {
        let out = floor.call(ARGS);
        assert!(
            out.as_ref().is_ok_and(|out| out.contains("hello")),
            "{out:?}"
        );
    };
    row(
        "floor (wasmtime alone), 1 thread".into(),
        blocking_rate(1, bare),
    );
    let floor_threads = blocking_rate(cores, bare);
    row(
        format!("floor (wasmtime alone), {cores} threads"),
        floor_threads,
    );
    let best = threads.max(tasks);
    println!(
        "throughput/best of the two on {cores} cores: {best:.0} calls/s, {:.0} % of the floor's {floor_threads:.0} (goal ≥ 250,000 on 2 cores)",
        100.0 * best / floor_threads
    );
}
