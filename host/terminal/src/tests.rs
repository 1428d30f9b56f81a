#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]
use super::*;

fn call<'a>(host: &'a TerminalHost, tenant: &str, session: &str) -> TerminalCall<'a> {
    TerminalCall {
        host,
        tenant: tenant.into(),
        session: session.into(),
        approver: None,
        cancel: None,
        env: Vec::new(),
        deadline: None,
    }
}

#[test]
fn stdin_is_code_to_the_gate() {
    let host = Arc::new(TerminalHost::new(TerminalSettings::default()).unwrap());
    let dir = tempfile::TempDir::new().unwrap();
    let marker = dir.path().join("from_stdin");
    let request = CommandRequest {
        command: "bash".into(),
        stdin: Some(format!("rm -rf scratch; touch {}", marker.display())),
        ..CommandRequest::default()
    };
    let r = call(&host, "", "stdin-gate").run(&request, &mut |_| {});
    assert!(
        matches!(&r, Err(TerminalCallError::PendingApproval(refusal)) if refusal.input.contains("rm -rf")),
        "{r:?}"
    );
    assert!(!marker.exists());
    // A background command's stdin is its first write: a line without its newline
    // is held, and judged when it is complete or at close.
    let started = call(&host, "", "stdin-gate").start(&request).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(!marker.exists());
    let r = call(&host, "", "stdin-gate").process(&ProcessRequest::Close(started.id));
    assert!(
        matches!(&r, Err(TerminalCallError::PendingApproval(refusal)) if refusal.input.contains("rm -rf")),
        "{r:?}"
    );
    let line = CommandRequest {
        stdin: Some(format!("rm -rf scratch; touch {}\n", marker.display())),
        ..request.clone()
    };
    let r = call(&host, "", "stdin-gate").start(&line);
    assert!(
        matches!(r, Err(TerminalCallError::PendingApproval(_))),
        "{r:?}"
    );
    assert!(!marker.exists());
    let safe = CommandRequest {
        command: "cat".into(),
        stdin: Some("hello".into()),
        ..CommandRequest::default()
    };
    let r = call(&host, "", "stdin-gate")
        .run(&safe, &mut |_| {})
        .unwrap();
    assert_eq!(r.output, "hello", "{r:?}");
    assert_eq!(r.exit_code, 0, "{r:?}");
    host.end_session("", "stdin-gate");
}

#[test]
fn a_background_start_with_stdin_nobody_reads_returns_and_is_killable() {
    // 1 MiB of stdin is more than the gate analyzes (so it would need approval, see
    // `stdin_is_code_to_the_gate`): this test is about the write, so the gate is off.
    let mut settings = TerminalSettings::default();
    settings.default.approval.mode = hermetic_approval::Mode::Off;
    let host = Arc::new(TerminalHost::new(settings).unwrap());
    let request = CommandRequest {
        command: "sleep 1000".into(),
        stdin: Some("x".repeat(1024 * 1024)),
        ..CommandRequest::default()
    };
    let started = Instant::now();
    let r = call(&host, "", "stdin").start(&request);
    assert!(started.elapsed() < Duration::from_secs(10), "{r:?}");
    let pid = r.unwrap().pid;
    assert_eq!(host.processes().running(), 1);
    host.end_session("", "stdin");
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the process is gone (killed and reaped)"
    );
}

#[test]
fn a_tenant_cannot_open_more_than_the_cap_of_terminal_sessions() {
    let host = Arc::new(TerminalHost::new(TerminalSettings::default()).unwrap());
    // An empty command is refused after the session is counted: nothing runs.
    let empty = CommandRequest::default();
    let empty_command = |r: Result<ProcessStarted, TerminalCallError>| matches!(r, Err(TerminalCallError::InvalidRequest(m)) if m == "command is empty");
    for n in 0..MAX_SESSIONS_PER_TENANT {
        assert!(empty_command(
            call(&host, "acme", &format!("s{n}")).start(&empty)
        ));
    }
    assert_eq!(host.live_sessions("acme"), MAX_SESSIONS_PER_TENANT);
    let over = call(&host, "acme", "one-too-many")
        .run(&empty, &mut |_| {})
        .unwrap_err();
    assert_eq!(
        over,
        TerminalCallError::TooManySessions(MAX_SESSIONS_PER_TENANT as u32)
    );
    assert!(
        over.to_string().contains("live terminal sessions"),
        "{over}"
    );
    // Known sessions and other tenants are not affected; an ended session frees
    // its slot.
    assert!(empty_command(call(&host, "acme", "s0").start(&empty)));
    assert!(empty_command(call(&host, "globex", "s0").start(&empty)));
    host.end_session("acme", "s1");
    assert!(empty_command(
        call(&host, "acme", "one-too-many").start(&empty)
    ));
}
