//! The host's terminal (`hermetic:tool/terminal`, in the `terminal-imports` world),
//! for tools that declare `terminal = true`: commands run on the host, behind its
//! approval gate, never inside the guest. Every function answers with typed records
//! and variants; [`hermes`] turns them into the JSON shapes Hermes's `terminal` and
//! `process` tools return.
//!
//! ```ignore
//! use hermetic_sdk::terminal::{self, CommandRequest, Error};
//! match terminal::run(&CommandRequest { command: "ls".into(), workdir: None,
//!                                       timeout_secs: None, stdin: None, pty: false }) {
//!     Ok(finished) => println!("{} (exit {})", finished.output, finished.exit_code),
//!     Err(Error::PendingApproval(refusal)) => println!("ask first: {}", refusal.message),
//!     Err(other) => println!("{other:?}"),
//! }
//! ```

/// Generated bindings of the `terminal` interface.
#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "terminal-imports",
        path: "../../wit",
    });
}

pub use bindings::hermetic::tool::terminal::*;

/// The JSON shapes of Hermes's `terminal` and `process` tools, built from the typed
/// results (what the bundled tools return; the book's terminal page,
/// `docs/src/terminal.md`, shows them).
pub mod hermes {
    #[cfg(test)]
    use super::HeldInput;
    use super::{
        Error, Finished, KillOutcome, LogLines, ProcessInfo, ProcessStatus, Refusal, Started,
        WaitOutcome, WriteOutcome,
    };
    use serde_json::{Value, json};

    /// What the not-granted error tells the agent.
    const NOT_GRANTED: &str = "the terminal is not granted to this tool for this call";

    /// A foreground run: `{"output", "exit_code", "error": null}`, with
    /// `exit_code_meaning` and `pty_note` when the host sent them.
    pub fn finished(f: &Finished) -> Value {
        let mut v = json!({"output": f.output, "exit_code": f.exit_code, "error": null});
        if let Some(meaning) = &f.exit_code_meaning {
            v["exit_code_meaning"] = json!(meaning);
        }
        if let Some(note) = &f.pty_note {
            v["pty_note"] = json!(note);
        }
        v
    }

    /// A background start: `{"output": "Background process started", "session_id", "pid"}`.
    pub fn started(s: &Started) -> Value {
        json!({"output": "Background process started", "session_id": s.id, "pid": s.pid})
    }

    /// A command that did not run: `{"output": "", "exit_code": -1, "error"}`.
    fn not_run(message: &str) -> Value {
        json!({"output": "", "exit_code": -1, "error": message})
    }

    fn pending(r: &Refusal) -> Value {
        let mut v = not_run(&r.message);
        v["status"] = json!("pending_approval");
        v["command"] = json!(r.input);
        v["description"] = json!(r.descriptions.join("; "));
        v["pattern_key"] = json!(r.rules.first());
        v
    }

    fn blocked(message: &str) -> Value {
        let mut v = not_run(message);
        v["status"] = json!("blocked");
        v
    }

    /// Any error: gate refusals as `{"status": "blocked"}` or
    /// `{"status": "pending_approval", "command", "description", "pattern_key"}`,
    /// process errors as `{"status": "not_found" | "error", "error"}`, anything else as
    /// a command that did not run.
    pub fn error(e: &Error) -> Value {
        match e {
            Error::Blocked(r) => blocked(&r.message),
            Error::PendingApproval(r) => pending(r),
            Error::NotGranted => blocked(NOT_GRANTED),
            Error::InvalidRequest(m) | Error::Failed(m) => not_run(m),
            Error::TooManyProcesses(n) => not_run(&format!(
                "this session already has {n} background processes running; kill or wait for one first"
            )),
            Error::TooManySessions(n) => not_run(&format!(
                "this tenant already has {n} live terminal sessions; end one (close its MCP session) before using the terminal in a new one"
            )),
            Error::UnknownProcess(id) => {
                json!({"status": "not_found", "error": format!("No process with ID {id}")})
            }
            Error::StdinUnavailable => json!({
                "status": "error",
                "error": "stdin is closed, or an earlier write is still pending",
            }),
            Error::WriteFailed(why) => {
                json!({"status": "error", "error": format!("write failed: {why}")})
            }
        }
    }

    fn status(s: ProcessStatus) -> &'static str {
        match s {
            ProcessStatus::Running => "running",
            ProcessStatus::Exited => "exited",
        }
    }

    /// `list`: `{"processes": [{"session_id", "command", "pid", "status", "exit_code",
    /// "uptime_seconds", "output_preview"}]}` (`exit_code` null while running).
    pub fn list(processes: &[ProcessInfo]) -> Value {
        let list: Vec<Value> = processes
            .iter()
            .map(|p| {
                json!({
                    "session_id": p.id,
                    "command": p.command,
                    "pid": p.pid,
                    "status": status(p.status),
                    "exit_code": p.exit_code,
                    "uptime_seconds": p.uptime_secs,
                    "output_preview": p.output_preview,
                })
            })
            .collect();
        json!({"processes": list})
    }

    /// `poll`: as one `list` entry, with `exit_code` only once exited.
    pub fn poll(p: &ProcessInfo) -> Value {
        let mut v = json!({
            "session_id": p.id,
            "command": p.command,
            "status": status(p.status),
            "pid": p.pid,
            "uptime_seconds": p.uptime_secs,
            "output_preview": p.output_preview,
        });
        if let Some(code) = p.exit_code {
            v["exit_code"] = json!(code);
        }
        v
    }

    /// `log`: `{"session_id", "status", "output", "total_lines", "showing": "N lines"}`.
    pub fn log(l: &LogLines) -> Value {
        json!({
            "session_id": l.id,
            "status": status(l.status),
            "output": l.output,
            "total_lines": l.total_lines,
            "showing": format!("{} lines", l.shown_lines),
        })
    }

    /// `wait`: `{"status": "exited", "exit_code", "output"}` or
    /// `{"status": "timeout", "output", "timeout_note"}`.
    pub fn wait(w: &WaitOutcome) -> Value {
        match w {
            WaitOutcome::Exited(e) => {
                json!({"status": "exited", "exit_code": e.exit_code, "output": e.output})
            }
            WaitOutcome::TimedOut(t) => json!({
                "status": "timeout",
                "output": t.output,
                "timeout_note": format!("Waited {}s; the process is still running", t.waited_secs),
            }),
        }
    }

    /// `kill` of process `id`: `{"status": "killed" | "already_exited", "session_id"}`
    /// (with `exit_code` when it had exited).
    pub fn kill(id: &str, k: &KillOutcome) -> Value {
        match k {
            KillOutcome::Killed => json!({"status": "killed", "session_id": id}),
            KillOutcome::AlreadyExited(code) => {
                json!({"status": "already_exited", "session_id": id, "exit_code": code})
            }
        }
    }

    /// `write` and `submit`: `{"status": "ok", "bytes_written"}`,
    /// `{"status": "pending", "error"}` while the process has not read it all, or
    /// `{"status": "held", "bytes_written", "bytes_held", "note"}` while the host holds
    /// an incomplete line or shell statement back from the approval gate.
    pub fn write(w: &WriteOutcome) -> Value {
        match w {
            WriteOutcome::Written(n) => json!({"status": "ok", "bytes_written": n}),
            WriteOutcome::Held(h) => json!({
                "status": "held",
                "bytes_written": h.delivered,
                "bytes_held": h.held,
                "note": format!(
                    "{} bytes are held, not yet sent: the approval gate judges a process's input a complete line at a time (for a shell, a complete statement: closed quotes, `done` after `do`, a here-document's end line). Send the rest (submit adds the newline), or close stdin to have it judged as it is.",
                    h.held
                ),
            }),
            WriteOutcome::Pending(n) => json!({
                "status": "pending",
                "error": format!(
                    "the process has not read all {n} bytes yet; the rest is written as it reads (further writes wait until then; kill it to stop)"
                ),
            }),
        }
    }

    /// `close`: `{"status": "ok", "message": "stdin closed"}`.
    pub fn closed() -> Value {
        json!({"status": "ok", "message": "stdin closed"})
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn refusal() -> Refusal {
            Refusal {
                message: "needs approval".into(),
                input: "rm -rf build".into(),
                rules: vec!["recursive-delete".into(), "other".into()],
                descriptions: vec!["recursive delete".into(), "other".into()],
            }
        }

        #[test]
        fn refusals_keep_hermes_shapes() {
            assert_eq!(
                error(&Error::PendingApproval(refusal())),
                json!({"output": "", "exit_code": -1, "error": "needs approval",
                       "status": "pending_approval", "command": "rm -rf build",
                       "description": "recursive delete; other",
                       "pattern_key": "recursive-delete"})
            );
            let none = Refusal {
                rules: Vec::new(),
                ..refusal()
            };
            assert_eq!(
                error(&Error::PendingApproval(none))["pattern_key"],
                Value::Null
            );
            assert_eq!(
                error(&Error::Blocked(refusal())),
                json!({"output": "", "exit_code": -1, "error": "needs approval", "status": "blocked"})
            );
            assert_eq!(
                error(&Error::NotGranted),
                json!({"output": "", "exit_code": -1, "error": NOT_GRANTED, "status": "blocked"})
            );
        }

        #[test]
        fn other_errors_keep_hermes_shapes() {
            assert_eq!(
                error(&Error::InvalidRequest("command is empty".into())),
                json!({"output": "", "exit_code": -1, "error": "command is empty"})
            );
            assert_eq!(
                error(&Error::UnknownProcess("proc_1".into())),
                json!({"status": "not_found", "error": "No process with ID proc_1"})
            );
            assert_eq!(error(&Error::StdinUnavailable)["status"], "error");
            assert_eq!(
                error(&Error::WriteFailed("broken pipe".into()))["error"],
                "write failed: broken pipe"
            );
            assert!(
                error(&Error::TooManyProcesses(64))["error"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("this session already has 64 background"))
            );
        }

        #[test]
        fn results_keep_hermes_shapes() {
            let f = Finished {
                output: "x".into(),
                exit_code: 1,
                exit_code_meaning: Some("no match".into()),
                pty_note: None,
            };
            assert_eq!(
                finished(&f),
                json!({"output": "x", "exit_code": 1, "error": null, "exit_code_meaning": "no match"})
            );
            let p = ProcessInfo {
                id: "proc_1".into(),
                command: "sleep 9".into(),
                pid: 7,
                status: ProcessStatus::Running,
                exit_code: None,
                uptime_secs: 3,
                output_preview: String::new(),
            };
            assert_eq!(
                list(std::slice::from_ref(&p))["processes"][0]["exit_code"],
                Value::Null
            );
            assert!(poll(&p).get("exit_code").is_none());
            assert_eq!(kill("proc_1", &KillOutcome::Killed)["session_id"], "proc_1");
            assert_eq!(
                write(&WriteOutcome::Written(3)),
                json!({"status": "ok", "bytes_written": 3})
            );
            let held = write(&WriteOutcome::Held(HeldInput {
                delivered: 4,
                held: 2,
            }));
            assert_eq!(held["status"], "held");
            assert_eq!(held["bytes_written"], 4);
            assert_eq!(held["bytes_held"], 2);
        }
    }
}
