//! The hardening suite (issue: nothing an agent, a guest or a client sends may take the
//! host down, reach across tenants, or pass as the host's own word). Real components
//! from guest-tools/, one hostile act each, each with the reason it must fail.

use hermetic::{CallOptions, CallOutcome, LimitKind, Registry};
use hermetic_test_support::registry::{call, error_of, fixture, policy_registry};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn invoke(registry: &Registry, name: &str, args: Value) -> CallOutcome {
    registry.invoke(name, &args.to_string(), &CallOptions::default())
}

fn liar(registry: &Registry, mode: &str) -> CallOutcome {
    invoke(registry, "liar", json!({"mode": mode}))
}

// --- 1. the shell parser ---------------------------------------------------------

/// Commands that made the parser allocate without bound reach the detector through the
/// real terminal tool: each is refused as needing approval, and the host lives on.
#[test]
fn commands_that_aborted_the_parser_are_held_for_approval_through_the_terminal_tool() {
    let f = fixture(true, &["echo"]);
    for command in ["a << $( <<x ", "<<E$[\t\t", "cat <<'' "] {
        let out = call(&f.registry, "terminal", json!({"command": command}));
        assert_eq!(out["status"], "pending_approval", "{command:?}: {out}");
    }
    assert_eq!(
        call(&f.registry, "echo", json!({"message": "alive"}))["echo"],
        "alive"
    );
}

// --- 4. availability gates calls --------------------------------------------------

#[test]
fn a_tool_whose_check_fails_is_refused_by_name_not_only_hidden() {
    let f = fixture(false, &["flaky"]);
    std::fs::write(f.workspace.path().join("check.txt"), "false").unwrap();
    let listed = f.registry.definitions(&Default::default());
    assert_eq!(listed, json!([]), "hidden from listings");
    match invoke(&f.registry, "flaky", json!({})) {
        CallOutcome::Unavailable { name, reason } => {
            assert_eq!(name, "flaky");
            assert!(reason.contains("check() returned false"), "{reason}");
        }
        other => panic!("the call ran or failed otherwise: {other:?}"),
    }
}

#[test]
fn hostile_checks_are_run_at_once_with_a_short_deadline() {
    let f = fixture(
        false,
        &["echo", "slowcheck_a", "slowcheck_b", "slowcheck_c"],
    );
    let started = Instant::now();
    let tools = f.registry.tools();
    let took = started.elapsed();
    let unavailable: Vec<&str> = tools
        .iter()
        .filter(|t| !t.available)
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(unavailable, ["slowcheck_a", "slowcheck_b", "slowcheck_c"]);
    // Run one after another, three checks take at least three 1 s check deadlines (each
    // ends at its wall-clock deadline however loaded the machine is): anything under
    // that means they overlapped. (Not a speed goal: a structural bound.)
    assert!(took < Duration::from_secs(3), "listing took {took:?}");
    let reason = tools[1].reason.clone().unwrap();
    assert!(reason.contains("time limit"), "{reason}");
    match invoke(&f.registry, "slowcheck_a", json!({})) {
        CallOutcome::Unavailable { .. } => {}
        other => panic!("{other:?}"),
    }
}

// --- 5. a tenant's subdirectory replaced by a symlink -----------------------------

const TENANT_POLICY: &str = r#"
[mounts.workspace]
path = "ws"
access = "rw"

[tenants.acme]
[tenants.acme.mounts.workspace]
access = "rw"
subdir = "tenants/acme"
"#;

#[test]
fn a_tenant_subdirectory_that_became_a_symlink_is_refused_not_followed() {
    let root = tempfile::TempDir::new().unwrap();
    let ws = root.path().join("ws");
    std::fs::create_dir_all(ws.join("tenants/acme")).unwrap();
    std::fs::write(ws.join("tenants/acme/mine.txt"), "acme's own").unwrap();
    let registry = policy_registry(root.path(), TENANT_POLICY, true);
    let acme = CallOptions::default().with_tenant("acme");
    let read = |path: &str| -> Value {
        let out = registry.call("read_file", &json!({"path": path}).to_string(), &acme);
        serde_json::from_str(&out).unwrap()
    };
    // The twin: the real subdirectory works.
    assert_eq!(read("mine.txt")["content"], "1|acme's own");

    // Someone with write access to `tenants/` (another tenant's terminal command, a
    // guest in a rw mount) swaps acme's directory for a link to /etc.
    std::fs::rename(ws.join("tenants/acme"), ws.join("tenants/acme-old")).unwrap();
    std::os::unix::fs::symlink("/etc", ws.join("tenants/acme")).unwrap();
    let out = read("passwd");
    let text = out.to_string();
    assert!(!text.contains("root:"), "/etc/passwd was read: {text}");
    let err = error_of(&out);
    assert!(err.contains("symlink"), "{err}");
    let out = registry.call(
        "write_file",
        &json!({"path": "planted", "content": "x"}).to_string(),
        &acme,
    );
    assert!(out.contains("error"), "{out}");
    assert!(!std::path::Path::new("/etc/planted").exists());

    // A link in the middle of the path is refused as well.
    std::fs::remove_file(ws.join("tenants/acme")).unwrap();
    std::fs::rename(ws.join("tenants"), ws.join("tenants-real")).unwrap();
    std::os::unix::fs::symlink("tenants-real", ws.join("tenants")).unwrap();
    let err = error_of(&read("mine.txt"));
    assert!(err.contains("symlink"), "{err}");
}

/// A guest in a read-write mount leaves no link behind that a terminal command or the
/// operator would follow out of the mount; links that point down stay allowed.
#[test]
fn a_guest_cannot_plant_a_symlink_pointing_out_of_its_mount() {
    let f = fixture(false, &["echo", "planter"]);
    let plant = |target: &str, link: &str| -> CallOutcome {
        invoke(
            &f.registry,
            "planter",
            json!({"target": target, "link": format!("/workspace/{link}")}),
        )
    };
    for (target, link) in [
        ("/etc/passwd", "abs"),
        ("..", "up"),
        ("../../../../etc", "rel"),
        ("sub/../../etc", "mixed"),
        ("./../x", "dot"),
    ] {
        let out = plant(target, link);
        match &out {
            CallOutcome::ToolError { message } => {
                assert!(
                    message.to_lowercase().contains("not permitted"),
                    "{target}: {message}"
                )
            }
            other => panic!("{target}: the link was not refused: {other:?}"),
        }
        assert!(
            std::fs::symlink_metadata(f.workspace.path().join(link)).is_err(),
            "{target}: a link was left on disk"
        );
    }
    // The twin: a link to a file beside it is created and points where it said.
    std::fs::create_dir(f.workspace.path().join("sub")).unwrap();
    let out = plant("sub/inner.txt", "inner");
    assert!(matches!(out, CallOutcome::Success(_)), "{out:?}");
    assert_eq!(
        std::fs::read_link(f.workspace.path().join("inner")).unwrap(),
        std::path::Path::new("sub/inner.txt")
    );
}

/// A FIFO planted in a mount (`mkfifo` from a terminal command) would block a reading
/// guest inside the kernel's `open`, where no deadline reaches: it is refused before it
/// is opened, so the call ends at once with an error, not at its deadline.
#[test]
fn opening_a_fifo_planted_in_the_mount_is_refused_without_blocking() {
    let f = fixture(false, &["echo", "escape"]);
    let fifo = f.workspace.path().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let out = invoke(
        &f.registry,
        "escape",
        json!({"op": "read", "path": "/workspace/pipe"}),
    );
    match &out {
        CallOutcome::ToolError { message } => assert!(
            message.to_lowercase().contains("not permitted"),
            "{message}"
        ),
        other => panic!("the FIFO was not refused: {other:?}"),
    }
    // Regular files in the same mount still read.
    std::fs::write(f.workspace.path().join("plain.txt"), "plain").unwrap();
    let out = call(
        &f.registry,
        "escape",
        json!({"op": "read", "path": "/workspace/plain.txt"}),
    );
    assert_eq!(out["content"], "plain", "{out}");
}

// --- 6. a tool's output is not the host's word --------------------------------------

#[test]
fn a_result_imitating_a_host_limit_is_the_tools_own_error_not_a_limit() {
    let f = fixture(false, &["liar"]);
    let outcome = liar(&f.registry, "fake_limit");
    assert!(
        matches!(outcome, CallOutcome::Success(_)),
        "the host took the tool's text for its own: {outcome:?}"
    );
    assert_eq!(outcome.audit_name(), "tool_error");
    assert!(!outcome.is_decision());
    let outcome = liar(&f.registry, "fake_unavailable");
    assert_eq!(outcome.audit_name(), "tool_error");
    assert!(!outcome.is_decision(), "filed as a policy decision");
}

#[test]
fn results_that_are_not_json_objects_are_tool_errors() {
    let f = fixture(false, &["liar"]);
    for (mode, kind) in [
        ("array", "an array"),
        ("number", "a number"),
        ("string", "a string"),
    ] {
        match liar(&f.registry, mode) {
            CallOutcome::ToolError { message } => {
                assert!(message.contains(kind), "{mode}: {message}");
            }
            other => panic!("{mode} passed as {other:?}"),
        }
    }
    assert!(matches!(
        liar(&f.registry, "deep_object"),
        CallOutcome::Success(_)
    ));
}

#[test]
fn a_result_nested_forty_thousand_deep_is_refused_without_recursion() {
    let f = fixture(false, &["liar"]);
    match liar(&f.registry, "deep") {
        CallOutcome::Limit {
            kind: LimitKind::ResultSize,
            message,
        } => assert!(message.contains("depth"), "{message}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(liar(&f.registry, "ok"), CallOutcome::Success(_)));
}

#[test]
fn control_characters_are_stripped_from_error_text() {
    let f = fixture(false, &["liar"]);
    let json = f.registry.call(
        "liar",
        r#"{"mode": "control_error"}"#,
        &CallOptions::default(),
    );
    let error = error_of(&serde_json::from_str(&json).unwrap());
    for bad in ['\u{1b}', '\0', '\u{202e}', '\u{2066}', '\u{7}'] {
        assert!(!error.contains(bad), "{bad:?} survived in {error:?}");
    }
    assert_eq!(
        error, "[TOOL_ERROR] red alert nul biditxet bell done",
        "the words survive"
    );
}

#[test]
fn an_unavailable_tool_and_an_unknown_one_are_decisions_with_their_own_names() {
    let f = fixture(false, &["echo"]);
    let outcome = invoke(&f.registry, "nope", json!({}));
    assert_eq!(
        outcome,
        CallOutcome::UnknownTool {
            name: "nope".into()
        }
    );
    assert!(outcome.is_decision());
    assert_eq!(outcome.audit_name(), "unknown_tool");
    let outcome = invoke(&f.registry, "echo", json!({"message": 5}));
    assert_eq!(outcome.audit_name(), "invalid_arguments");
}

// --- 7. progress flood ------------------------------------------------------------

#[test]
fn a_progress_flood_is_capped_and_coalesced() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    let f = fixture(false, &["liar"]);
    let reports = Arc::new(AtomicU64::new(0));
    let last_done = Arc::new(AtomicU64::new(0));
    let (r, l) = (Arc::clone(&reports), Arc::clone(&last_done));
    let options = CallOptions::default().with_progress(Arc::new(move |p: hermetic::Progress| {
        r.fetch_add(1, Ordering::Relaxed);
        l.store(p.done, Ordering::Relaxed);
    }));
    let outcome = f
        .registry
        .invoke("liar", r#"{"mode": "progress_flood"}"#, &options);
    assert!(matches!(outcome, CallOutcome::Success(_)), "{outcome:?}");
    let sent = reports.load(Ordering::Relaxed);
    // The guest sent 200,000.
    assert!(
        sent >= 1 && sent <= u64::from(hermetic::MAX_PROGRESS_REPORTS) + 1,
        "{sent} reports reached the caller"
    );
    // The last report the caller saw is the guest's last one (coalesced, not lost).
    assert_eq!(last_done.load(Ordering::Relaxed), 199_999);
}

// --- 2. deadlines reach host calls ------------------------------------------------

#[test]
fn a_guest_sleeping_in_a_host_call_ends_at_its_deadline() {
    let f = fixture(false, &["sleeper", "echo"]);
    let started = Instant::now();
    let outcome = invoke(&f.registry, "sleeper", json!({}));
    let took = started.elapsed();
    match outcome {
        CallOutcome::Limit {
            kind: LimitKind::Time,
            ..
        } => {}
        other => panic!("{other:?}"),
    }
    // The declared deadline is 2 s; the guest asked to sleep for an hour.
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert!(took >= Duration::from_millis(1900), "took {took:?}");
    // The twin: a short sleep completes.
    let out = call(&f.registry, "sleeper", json!({"secs": 0}));
    assert_eq!(out["slept"], 0, "{out}");
}

#[test]
fn a_guest_sleeping_in_a_host_call_is_cancelled_at_once() {
    let f = fixture(false, &["sleeper"]);
    let token = hermetic::CancelToken::new();
    let options = CallOptions::default().with_cancel(token.clone());
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        token.cancel();
    });
    let started = Instant::now();
    let outcome = f.registry.invoke("sleeper", "{}", &options);
    let took = started.elapsed();
    canceller.join().unwrap();
    assert_eq!(outcome, CallOutcome::Cancelled);
    assert!(took < Duration::from_millis(1500), "took {took:?}");
}

// --- 3. one tenant cannot starve another ------------------------------------------

/// A registry over `policy` on a host with only `sandboxes` call sandboxes
/// (`EngineConfig::max_instances`), with the named test tools.
fn small_host(root: &std::path::Path, policy: &str, sandboxes: u32, tools: &[&str]) -> Registry {
    let registry =
        hermetic_test_support::registry::policy_registry_with(root, policy, false, |options| {
            options.engine.max_instances = sandboxes;
        });
    let dir = hermetic_test_support::guests::tools_dir(tools);
    assert_eq!(registry.add_dir(dir.path()).unwrap(), vec![]);
    registry
}

/// `n` calls of `sleeper` for `secs` seconds at once, each on its own thread.
fn sleepers(registry: &Registry, n: usize, secs: u64) -> Vec<CallOutcome> {
    std::thread::scope(|threads| {
        let calls: Vec<_> = (0..n)
            .map(|_| threads.spawn(|| invoke(registry, "sleeper", json!({"secs": secs}))))
            .collect();
        calls.into_iter().map(|call| call.join().unwrap()).collect()
    })
}

/// Five calls at once on a host with two sandboxes: three wait for a sandbox, and all
/// five end well. Before, the pool held fewer sandboxes than the cap (two core
/// instances each, where a Rust tool needs three): calls past two thirds of it failed
/// as "the tool crashed: maximum concurrent limit ... reached", whichever tenant made
/// them.
#[test]
fn calls_past_the_hosts_sandboxes_wait_for_one_and_all_run() {
    let root = tempfile::TempDir::new().unwrap();
    let registry = small_host(root.path(), "", 2, &["sleeper"]);
    let started = Instant::now();
    let outcomes = sleepers(&registry, 5, 1);
    for outcome in &outcomes {
        assert!(outcome.is_success(), "{outcome:?}");
    }
    // Two at a time: the third round started after the first two ended.
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

/// A call that finds every sandbox in use for longer than its queue timeout is refused
/// as a concurrency limit naming the host's cap (not a crash), and the host then runs
/// calls again.
#[test]
fn a_call_that_finds_no_sandbox_in_its_queue_time_is_a_concurrency_limit() {
    let root = tempfile::TempDir::new().unwrap();
    let policy = "[tools.sleeper.limits]\nqueue_timeout_ms = 100\n";
    let registry = small_host(root.path(), policy, 1, &["sleeper"]);
    std::thread::scope(|threads| {
        let busy = threads.spawn(|| invoke(&registry, "sleeper", json!({"secs": 1})));
        std::thread::sleep(Duration::from_millis(300));
        match invoke(&registry, "sleeper", json!({"secs": 0})) {
            CallOutcome::Limit {
                kind: LimitKind::Concurrency,
                message,
            } => assert!(
                message.contains("the host already runs 1 calls") && message.contains("100 ms"),
                "{message}"
            ),
            other => panic!("expected a concurrency limit, got {other:?}"),
        }
        assert!(busy.join().unwrap().is_success());
    });
    assert!(invoke(&registry, "sleeper", json!({"secs": 0})).is_success());
}

/// `queue_timeout_ms` is one budget for every queue a call waits in. Tenant `a` may run
/// one call at once and the host has one sandbox: `a`'s first call holds both, `b`'s
/// call queues for the sandbox, then `a`'s second call queues for its tenant's place.
/// When the first ends, `b` gets the sandbox (it ran for its 2 s deadline) and `a`'s
/// second call queues for it in turn, with only what its 2 s budget has left: it is
/// refused when the budget runs out, before the first call's end plus a whole budget.
/// Before, each queue had a budget of its own: the call waited about a second at its
/// tenant's queue and then 2 s more at the host's (or got the sandbox when `b`'s call
/// ended).
#[test]
fn queue_timeout_is_one_budget_across_the_tenant_the_tool_and_the_host_queues() {
    one_queue_budget(false);
}

/// [`queue_timeout_is_one_budget_across_the_tenant_the_tool_and_the_host_queues`] for
/// a call made with `invoke_async`, which waits in the same queues without a thread.
#[test]
fn queue_timeout_is_one_budget_on_the_async_path_too() {
    one_queue_budget(true);
}

/// The scenario of the two tests above; the measured call made `asynchronously` or
/// not.
fn one_queue_budget(asynchronously: bool) {
    let root = tempfile::TempDir::new().unwrap();
    let policy = "[tenants.a.limits]\nmax_concurrent = 1\n[tenants.b]\n\
                  [tools.sleeper.limits]\nqueue_timeout_ms = 2000\n";
    let registry = std::sync::Arc::new(small_host(root.path(), policy, 1, &["sleeper"]));
    let budget = Duration::from_millis(2000);
    let stagger = Duration::from_millis(100);
    let first = calls_as(&registry, "a", "sleeper", json!({"secs": 1}), 1, stagger);
    let b = calls_as(&registry, "b", "sleeper", json!({}), 1, stagger);
    let started = Instant::now();
    let second = if asynchronously {
        let registry = std::sync::Arc::clone(&registry);
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let options = CallOptions::default().with_tenant("a");
            let call = registry.invoke_async("sleeper".into(), r#"{"secs": 0}"#.into(), options);
            (runtime.block_on(call), Instant::now())
        })
    } else {
        let mut calls = calls_as(&registry, "a", "sleeper", json!({"secs": 0}), 1, stagger);
        calls.remove(0)
    };
    let (second, second_done) = second.join().unwrap();
    let (first, first_done) = first.into_iter().next().unwrap().join().unwrap();
    assert!(first.is_success(), "{first:?}");
    match &second {
        CallOutcome::Limit {
            kind: LimitKind::Concurrency,
            message,
        } => assert!(
            message.contains("the host already runs 1 calls"),
            "{message}"
        ),
        other => panic!("expected a concurrency limit at the host's queue, got {other:?}"),
    }
    // It waited at its tenant's queue until the first call ended: a budget of its own
    // for the host's queue would have ended no sooner than that plus the whole budget.
    assert!(
        first_done > started && second_done < first_done + budget,
        "waited {:?} in all; the first call ended after {:?}",
        second_done - started,
        first_done - started
    );
    let (b, _) = b.into_iter().next().unwrap().join().unwrap();
    assert!(
        matches!(
            b,
            CallOutcome::Limit {
                kind: LimitKind::Time,
                ..
            }
        ),
        "{b:?}"
    );
}

/// With every call sandbox in use, tools are still checked (listings run `check()` in
/// sandboxes of their own): a host full of one tenant's calls does not hide tools from
/// the others. Before, the check found the pool empty and the tool was listed as
/// unavailable for the check's cache time.
#[test]
fn a_host_full_of_calls_still_checks_and_lists_its_tools() {
    let root = tempfile::TempDir::new().unwrap();
    let policy = "[tools.echo.limits]\nqueue_timeout_ms = 50\n";
    let registry = small_host(root.path(), policy, 1, &["sleeper", "echo"]);
    std::thread::scope(|threads| {
        let busy = threads.spawn(|| invoke(&registry, "sleeper", json!({"secs": 1})));
        std::thread::sleep(Duration::from_millis(300));
        // The host is full: a call finds no sandbox (else this test would prove nothing).
        assert!(
            matches!(
                invoke(&registry, "echo", json!({"message": "x"})),
                CallOutcome::Limit {
                    kind: LimitKind::Concurrency,
                    ..
                }
            ),
            "the host is not full"
        );
        registry.invalidate_checks();
        let listed = registry
            .definitions(&hermetic::Selection::default())
            .to_string();
        assert!(
            listed.contains("\"echo\"") && listed.contains("\"sleeper\""),
            "{listed}"
        );
        assert!(busy.join().unwrap().is_success());
    });
}

/// A `check()` that finds no sandbox free (the only one kept for checks runs a hostile
/// check) is not the tool's answer: a tool's last answer stands, a tool never checked
/// is unavailable for that listing only, and nothing is cached, so the next listing
/// checks again. Before, the failure was cached as the tool's answer for
/// `CHECK_TTL`, hiding healthy tools because others' checks were slow.
#[test]
fn a_check_that_finds_no_sandbox_is_not_the_tools_answer() {
    use std::sync::Arc;
    let root = tempfile::TempDir::new().unwrap();
    let clock = Arc::new(hermetic::ManualClock::default());
    // Short waits for echo's and sleeper's checks; slowcheck_a's check spins for the
    // whole check deadline (1 s), holding the only sandbox.
    let policy = "[tools.echo.limits]\nmax_timeout_ms = 200\n\
                  [tools.sleeper.limits]\nmax_timeout_ms = 200\n";
    let registry = hermetic_test_support::registry::policy_registry_with(
        root.path(),
        policy,
        false,
        |options| {
            options.engine.metadata_sandboxes = 1;
            options.clock = clock.clone();
        },
    );
    let dir = hermetic_test_support::guests::tools_dir(&["slowcheck_a", "echo", "sleeper"]);
    assert_eq!(registry.add_dir(dir.path()).unwrap(), vec![]);
    let availability = |tool: &str| registry.availability(tool).unwrap();
    assert!(availability("echo").available);
    clock.advance(hermetic::CHECK_TTL + Duration::from_secs(1));
    std::thread::scope(|threads| {
        let hog = threads.spawn(|| availability("slowcheck_a"));
        std::thread::sleep(Duration::from_millis(300));
        let echo = availability("echo");
        assert!(echo.available, "echo's last answer must stand: {echo:?}");
        let sleeper = availability("sleeper");
        let reason = sleeper.reason.clone().unwrap_or_default();
        assert!(
            !sleeper.available && reason.contains("check() could not run: no sandbox free"),
            "{sleeper:?}"
        );
        let hog = hog.join().unwrap();
        assert!(
            !hog.available,
            "the hostile check must have timed out: {hog:?}"
        );
    });
    let sleeper = availability("sleeper");
    assert!(
        sleeper.available,
        "sleeper is checked once a sandbox is free: {sleeper:?}"
    );
}

/// Tenant `flood` queues 5,000 calls of a spinning tool (its limit: one at a time);
/// tenant `calm`'s echo calls meanwhile are served as if nothing were queued. Before,
/// every queued call held a blocking-pool thread while it waited for its slot, and
/// `calm` waited behind all of them.
#[test]
fn five_thousand_queued_calls_of_one_tenant_do_not_delay_another() {
    use std::sync::Arc;
    let root = tempfile::TempDir::new().unwrap();
    let registry = Arc::new(hermetic_test_support::registry::fairness_registry(
        root.path(),
    ));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let as_tenant = |tenant: &str| CallOptions::default().with_tenant(tenant);
    runtime.block_on(async {
        let echo = || {
            registry.invoke_async(
                "echo".into(),
                r#"{"message": "hi"}"#.into(),
                as_tenant("calm"),
            )
        };
        // Unloaded: warm up, then the slowest of 20.
        for _ in 0..5 {
            echo().await;
        }
        let mut unloaded = Duration::ZERO;
        for _ in 0..20 {
            let started = Instant::now();
            assert!(echo().await.is_success());
            unloaded = unloaded.max(started.elapsed());
        }
        let flood: Vec<_> = (0..5_000)
            .map(|_| {
                let r = Arc::clone(&registry);
                let options = as_tenant("flood");
                tokio::spawn(
                    async move { r.invoke_async("spin".into(), "{}".into(), options).await },
                )
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut loaded = Duration::ZERO;
        for _ in 0..20 {
            let started = Instant::now();
            assert!(echo().await.is_success());
            loaded = loaded.max(started.elapsed());
        }
        for task in &flood {
            task.abort();
        }
        // One spinning call holds one core; calm's calls have the other. Generous
        // against noise, far below the 12–44 s seen before.
        assert!(
            loaded < unloaded * 10 + Duration::from_millis(200),
            "calm's slowest echo: {loaded:?} while flood queued, {unloaded:?} before"
        );
    });
    // The one flood call running spins to its deadline; do not wait for it.
    runtime.shutdown_background();
}

/// `n` calls of `tool` with `args` as `tenant`, each on its own thread, started
/// `stagger` apart (so they queue in order); each reports its outcome and when it
/// ended.
fn calls_as(
    registry: &std::sync::Arc<Registry>,
    tenant: &str,
    tool: &str,
    args: Value,
    n: usize,
    stagger: Duration,
) -> Vec<std::thread::JoinHandle<(CallOutcome, Instant)>> {
    (0..n)
        .map(|_| {
            let (registry, args) = (std::sync::Arc::clone(registry), args.to_string());
            let options = CallOptions::default().with_tenant(tenant);
            let tool = tool.to_owned();
            let call = std::thread::spawn(move || {
                let outcome = registry.invoke(&tool, &args, &options);
                (outcome, Instant::now())
            });
            std::thread::sleep(stagger);
            call
        })
        .collect()
}

/// No tenant limits configured, two sandboxes: tenant `flood` takes both and queues
/// four more calls, then `calm` asks for one. The next sandbox that frees is `calm`'s
/// (its tenant holds none), not the next of `flood`'s queue. Before, a freed sandbox
/// went to the longest waiter: `calm` waited behind all of `flood`'s queued calls.
#[test]
fn a_freed_sandbox_goes_to_the_tenant_holding_fewest_not_to_the_first_queued() {
    let root = tempfile::TempDir::new().unwrap();
    let policy = "[tenants.flood]\n[tenants.calm]\n";
    let registry = std::sync::Arc::new(small_host(root.path(), policy, 2, &["sleeper"]));
    let stagger = Duration::from_millis(20);
    let flood = calls_as(
        &registry,
        "flood",
        "sleeper",
        json!({"secs": 1}),
        6,
        stagger,
    );
    std::thread::sleep(Duration::from_millis(200));
    let calm = calls_as(&registry, "calm", "sleeper", json!({"secs": 0}), 1, stagger);
    let (calm_outcome, calm_done) = calm.into_iter().next().unwrap().join().unwrap();
    assert!(calm_outcome.is_success(), "{calm_outcome:?}");
    let flood: Vec<(CallOutcome, Instant)> = flood.into_iter().map(|c| c.join().unwrap()).collect();
    assert!(flood.iter().all(|(o, _)| o.is_success()), "{flood:?}");
    let before_calm = flood.iter().filter(|(_, done)| *done < calm_done).count();
    assert!(
        before_calm <= 2,
        "{before_calm} of flood's calls ended before calm's: calm waited behind its queue"
    );
}
