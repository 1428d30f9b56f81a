//! Cancelling calls through `CallOptions::cancel`: a running guest is interrupted at its
//! next epoch tick and the call ends with a `cancelled` tool error; the time limit and
//! ordinary results are unchanged by a token.
use hermetic::{CallOptions, CancelToken, Progress};
use hermetic_test_support::registry::fixture;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex, mpsc};

const CANCELLED: &str = "[TOOL_ERROR] cancelled: the caller cancelled the call before it finished";

fn parse(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

#[test]
fn cancelling_a_running_call_from_another_thread_interrupts_the_guest() {
    let f = fixture(false, &["spin_long", "echo"]);
    let token = CancelToken::new();
    // spin_long reports progress once, then loops until stopped (60 s deadline): the
    // progress event says the guest is running.
    let (started, running) = mpsc::channel::<()>();
    let started = Mutex::new(started);
    let options = CallOptions::default()
        .with_progress(Arc::new(move |_: Progress| {
            let _ = started.lock().unwrap().send(());
        }))
        .with_cancel(token.clone());
    std::thread::scope(|s| {
        let call = s.spawn(|| f.registry.call("spin_long", "{}", &options));
        running.recv().unwrap();
        token.cancel();
        assert_eq!(parse(&call.join().unwrap()), json!({"error": CANCELLED}));
    });
    // The host carries on.
    let out = f
        .registry
        .call("echo", r#"{"message": "alive"}"#, &CallOptions::default());
    assert_eq!(parse(&out)["echo"], "alive");
}

#[test]
fn a_call_cancelled_before_it_starts_never_runs_the_guest() {
    let f = fixture(false, &["progress"]);
    let token = CancelToken::new();
    token.cancel();
    let events = Arc::new(Mutex::new(0_u32));
    let seen = events.clone();
    let options = CallOptions::default()
        .with_progress(Arc::new(move |_: Progress| *seen.lock().unwrap() += 1))
        .with_cancel(token);
    let out = f.registry.call("progress", r#"{"steps": 3}"#, &options);
    assert_eq!(parse(&out), json!({"error": CANCELLED}));
    assert_eq!(*events.lock().unwrap(), 0);
}

#[test]
fn a_cancellable_call_keeps_its_time_limit_and_error() {
    let f = fixture(false, &["spin"]);
    let options = CallOptions::default().with_cancel(CancelToken::new());
    let out = f.registry.call("spin", "{}", &options);
    assert_eq!(
        parse(&out),
        json!({
            "error": "[TOOL_ERROR] time limit exceeded: the call ran longer than 200 ms",
            "limit": "time"
        })
    );
}

#[test]
fn a_token_changes_nothing_for_a_call_that_completes() {
    let f = fixture(false, &["echo"]);
    let token = CancelToken::new();
    let with = f.registry.call(
        "echo",
        r#"{"message": "x", "times": 2}"#,
        &CallOptions::default().with_cancel(token.clone()),
    );
    let without = f.registry.call(
        "echo",
        r#"{"message": "x", "times": 2}"#,
        &CallOptions::default(),
    );
    assert_eq!(parse(&with), parse(&without));
    // Cancelling after the call returned affects nothing.
    token.cancel();
    assert_eq!(parse(&with)["echo"], "xx");
}

#[test]
fn cancelling_one_call_leaves_concurrent_calls_running() {
    let f = fixture(false, &["spin_long", "progress"]);
    let token = CancelToken::new();
    let (started, running) = mpsc::channel::<()>();
    let started = Mutex::new(started);
    let spin_options = CallOptions::default()
        .with_progress(Arc::new(move |_: Progress| {
            let _ = started.lock().unwrap().send(());
        }))
        .with_cancel(token.clone());
    let other_options = CallOptions::default().with_cancel(CancelToken::new());
    std::thread::scope(|s| {
        let spin = s.spawn(|| f.registry.call("spin_long", "{}", &spin_options));
        running.recv().unwrap();
        token.cancel();
        let other = f
            .registry
            .call("progress", r#"{"steps": 2}"#, &other_options);
        assert_eq!(parse(&other)["steps"], 2);
        assert_eq!(parse(&spin.join().unwrap()), json!({"error": CANCELLED}));
    });
}
