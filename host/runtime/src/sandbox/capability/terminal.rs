//! The terminal capability: the `terminal` host interface (wit/tool.wit) for tools
//! that declare it, and the seam ([`TerminalService`]) the terminal backends plug into.
//!
//! The runtime knows nothing of backends or of the approval gate: each function
//! re-checks that this call was granted the terminal, then hands the request to the
//! registry's [`TerminalService`] (`hermetic-terminal`'s `TerminalHost`), which runs the
//! approval gate before any backend sees the command. Output is streamed as the call's
//! progress.
//!
//! The service answers in typed values ([`CommandFinished`], [`TerminalCallError`], …),
//! which this module turns into the interface's records and variants one to one: no
//! JSON crosses the boundary, so a guest never parses a string to learn an outcome.

use super::{CallInputs, Capability};
use crate::approval::{ApprovalObserver, Approver};
use crate::call::CancelToken;
use crate::declaration::Declaration;
use crate::policy::EffectiveGrants;
use crate::sandbox::{CallState, Coalesce, MAX_LOG_BYTES, Progress, truncate};
use std::sync::Arc;
use std::time::Instant;
use wasmtime::component::{HasSelf, Linker};

/// Host-side bindings of the `terminal` interface alone (world `terminal-imports`).
pub mod bindings {
    wasmtime::component::bindgen!({
        world: "terminal-imports",
        path: "../../wit",
    });
}

use bindings::hermetic::tool::terminal as wit;
use wit::{CommandRequest as WitCommandRequest, Host};

/// A command as the guest sent it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandRequest {
    /// The command line.
    pub command: String,
    /// Working directory (no shell metacharacters).
    pub workdir: Option<String>,
    /// Seconds before it is killed.
    pub timeout_secs: Option<u32>,
    /// Text for its standard input.
    pub stdin: Option<String>,
    /// Pseudo-terminal wanted.
    pub pty: bool,
}

/// A `process` tool action, as the guest sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessRequest {
    /// Every process of the session.
    List,
    /// Status and recent output.
    Poll(String),
    /// Output lines.
    Log {
        /// Process id.
        id: String,
        /// First line (0 or none: the newest lines).
        offset: Option<u64>,
        /// Most lines.
        limit: Option<u64>,
    },
    /// Wait for the end.
    Wait {
        /// Process id.
        id: String,
        /// Seconds.
        timeout_secs: Option<u32>,
    },
    /// Kill it.
    Kill(String),
    /// Write to its stdin.
    Write {
        /// Process id.
        id: String,
        /// Text.
        data: String,
    },
    /// Write a line to its stdin.
    Submit {
        /// Process id.
        id: String,
        /// Text (a newline is added).
        data: String,
    },
    /// Close its stdin.
    Close(String),
}

/// A foreground command that ran to its end (or was ended by its timeout or a cancel).
///
/// `#[non_exhaustive]`: more facts about a run may follow; build it with
/// [`CommandFinished::new`] and set the optional fields.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommandFinished {
    /// Standard output and error, merged and cleaned (ANSI stripped, secrets redacted,
    /// capped); a timeout or cancel is noted at its end.
    pub output: String,
    /// Exit code (124: timed out, 130: cancelled).
    pub exit_code: i32,
    /// What a non-zero exit code means when it is not a failure (`grep` found nothing).
    pub exit_code_meaning: Option<String>,
    /// Set when a PTY was asked for and the backend has none.
    pub pty_note: Option<String>,
}

impl CommandFinished {
    /// A run with `output` and `exit_code`, and no notes.
    pub fn new(output: impl Into<String>, exit_code: i32) -> Self {
        Self {
            output: output.into(),
            exit_code,
            exit_code_meaning: None,
            pty_note: None,
        }
    }
}

/// A background process, started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessStarted {
    /// Its id (`proc_…`).
    pub id: String,
    /// Its process id on the host.
    pub pid: u32,
}

/// Why the approval gate refused an input (a command, its stdin, data for a process).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateRefusal {
    /// The gate's explanation, for the agent.
    pub message: String,
    /// The refused text.
    pub input: String,
    /// Ids of the matched rules, most relevant first.
    pub rules: Vec<String>,
    /// The matched rules' descriptions.
    pub descriptions: Vec<String>,
}

/// Why a terminal request did nothing. Each variant is one variant of the interface's
/// `error`; the messages are what an agent is told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TerminalCallError {
    /// The gate refused: a hardline rule, a deny rule, or a human's no.
    #[error("{}", .0.message)]
    Blocked(GateRefusal),
    /// Nobody approved: no approver, no answer in time, a dismissed question.
    #[error("{}", .0.message)]
    PendingApproval(GateRefusal),
    /// This call was not granted the terminal.
    #[error("the terminal is not granted to this tool for this call")]
    NotGranted,
    /// The request cannot run as given; the message says what to change.
    #[error("{0}")]
    InvalidRequest(String),
    /// The session already holds this many background processes, all running.
    #[error(
        "this session already has {0} background processes running; kill or wait for one first"
    )]
    TooManyProcesses(u32),
    /// The tenant already holds this many live terminal sessions.
    #[error(
        "this tenant already has {0} live terminal sessions; end one (close its MCP session) before using the terminal in a new one"
    )]
    TooManySessions(u32),
    /// No background process of the session has this id.
    #[error("No process with ID {0}")]
    UnknownProcess(String),
    /// The process's stdin is closed, or an earlier write is still pending.
    #[error("stdin is closed, or an earlier write is still pending")]
    StdinUnavailable,
    /// Writing to the process's stdin failed: why.
    #[error("write failed: {0}")]
    WriteFailed(String),
    /// The host could not do it (backend unavailable, a spawn or write failed).
    #[error("{0}")]
    Failed(String),
}

/// Whether a background process is still running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessStatus {
    /// Still running.
    Running,
    /// Exited (or was killed).
    Exited,
}

/// One background process, as `list` and `poll` report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Its id.
    pub id: String,
    /// Its command line.
    pub command: String,
    /// Its process id on the host.
    pub pid: u32,
    /// Running or exited.
    pub status: ProcessStatus,
    /// Its exit code, once exited.
    pub exit_code: Option<i32>,
    /// Seconds since it started.
    pub uptime_secs: u64,
    /// Its newest output.
    pub output_preview: String,
}

/// Output lines of a background process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLines {
    /// The process id.
    pub id: String,
    /// Running or exited.
    pub status: ProcessStatus,
    /// The lines asked for, joined with newlines.
    pub output: String,
    /// Lines kept in all.
    pub total_lines: u64,
    /// Lines in `output`.
    pub shown_lines: u64,
}

/// How a `wait` ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaitOutcome {
    /// The process exited.
    Exited {
        /// Its exit code.
        exit_code: i32,
        /// Its newest output.
        output: String,
    },
    /// The wait timed out; the process still runs.
    TimedOut {
        /// Seconds waited.
        waited_secs: u64,
        /// Its newest output.
        output: String,
    },
}

/// What `kill` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillOutcome {
    /// It was running and is killed.
    Killed,
    /// It had already exited with this code.
    AlreadyExited(i32),
}

/// How a write to a process's stdin went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    /// All these bytes were written.
    Written(u64),
    /// The process has not read all these bytes yet; the rest follows as it reads.
    Pending(u64),
    /// The end of the input is held: the approval gate judges what a process reads a
    /// complete line (for a shell, a complete statement) at a time.
    Held {
        /// Bytes judged, approved and handed to the process.
        delivered: u64,
        /// Bytes held, not yet judged nor delivered.
        held: u64,
    },
}

/// The answer to a [`ProcessRequest`]: one variant per action.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProcessReply {
    /// [`ProcessRequest::List`].
    List(Vec<ProcessInfo>),
    /// [`ProcessRequest::Poll`].
    Poll(ProcessInfo),
    /// [`ProcessRequest::Log`].
    Log(LogLines),
    /// [`ProcessRequest::Wait`].
    Wait(WaitOutcome),
    /// [`ProcessRequest::Kill`].
    Kill(KillOutcome),
    /// [`ProcessRequest::Write`] and [`ProcessRequest::Submit`].
    Write(WriteOutcome),
    /// [`ProcessRequest::Close`].
    Closed,
}

/// Who is asking, for one call of a tool granted the terminal: the caller's tenant and
/// session, who answers approvals, the call's cancel token, the tool's granted env and
/// its deadline.
#[derive(Clone, Default)]
pub struct TerminalCallContext {
    /// Tenant id ("" = the operator).
    pub tenant: String,
    /// Agent session.
    pub session: String,
    /// Who answers approval requests (`None`: nobody; the headless default applies).
    pub approver: Option<Arc<dyn Approver>>,
    /// The call's cancel token: cancelling kills the running command.
    pub cancel: Option<CancelToken>,
    /// Granted env vars with their values (passed to commands, redacted from output).
    pub env: Vec<(String, String)>,
    /// When the calling tool's own deadline passes.
    pub deadline: Option<Instant>,
}

impl std::fmt::Debug for TerminalCallContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerminalCallContext")
            .field("tenant", &self.tenant)
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

/// The host's terminal: what a tool granted the terminal reaches through its
/// `terminal` import. Implemented by `hermetic-terminal`'s `TerminalHost`; the
/// runtime only forwards requests, so every guarantee about commands (the approval
/// gate first, hardline never runs, silence is denial) is the implementation's.
///
/// Results are typed; the runtime converts them to the interface's records and
/// variants, and tools shape them for their callers.
pub trait TerminalService: Send + Sync + std::fmt::Debug {
    /// Runs a command in the foreground; `on_output` receives its cleaned output as it
    /// arrives.
    fn run(
        &self,
        call: &TerminalCallContext,
        request: &CommandRequest,
        on_output: &mut dyn FnMut(&str),
    ) -> Result<CommandFinished, TerminalCallError>;
    /// Starts a background process.
    fn start(
        &self,
        call: &TerminalCallContext,
        request: &CommandRequest,
    ) -> Result<ProcessStarted, TerminalCallError>;
    /// A `process` action on the session's background processes; the reply is the
    /// request's own variant of [`ProcessReply`].
    fn process(
        &self,
        call: &TerminalCallContext,
        request: &ProcessRequest,
    ) -> Result<ProcessReply, TerminalCallError>;
    /// Ends a session: its background processes and container go.
    fn end_session(&self, tenant: &str, session: &str);
    /// Ends everything (background processes, containers).
    fn shutdown(&self);
    /// Adds an observer of every approval request and answer (e.g. an audit log).
    fn add_observer(&self, observer: Arc<dyn ApprovalObserver>);
}

/// The terminal as one call holds it: the service and who is asking.
#[derive(Clone, Debug)]
pub struct TerminalAccess {
    /// The registry's terminal service.
    pub service: Arc<dyn TerminalService>,
    /// This call's tenant, session, approver, cancel token, env and deadline.
    pub call: Arc<TerminalCallContext>,
}

/// The WIT interface name, as it appears in link errors.
pub const INTERFACE: &str = "hermetic:tool/terminal";

/// The terminal unit (a linked one: the `terminal` interface only for tools that
/// declare it).
pub(crate) struct Unit;

impl Capability for Unit {
    type Ctx = TerminalAccess;

    /// A command holds the call's thread until it ends.
    const ON_FIBER: bool = false;

    fn declared(declaration: &Declaration) -> bool {
        declaration.capabilities.terminal
    }

    fn granted(grants: &EffectiveGrants) -> bool {
        grants.terminal
    }

    /// Adds the `terminal` interface to a linker (only for tools that declare the
    /// terminal: see [`super::LinkedCapabilities`]).
    fn link(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
        bindings::hermetic::tool::terminal::add_to_linker::<_, HasSelf<_>>(linker, |s| s)
    }

    /// The terminal for one call granted it, when the host has a terminal service: the
    /// caller's tenant, session and approver, the call's cancel token and deadline, with
    /// the granted env vars (values from the secrets, else the host environment).
    fn for_call(call: &CallInputs<'_>) -> Option<TerminalAccess> {
        if !Self::granted(call.grants) {
            return None;
        }
        let caller = call.caller?;
        let service = Arc::clone(caller.services.terminal.as_ref()?);
        let env = call
            .grants
            .env
            .iter()
            .filter_map(|var| Some((var.clone(), call.secrets.env_value(var)?)))
            .collect();
        let context = TerminalCallContext {
            tenant: caller.tenant.to_owned(),
            session: caller.session.to_owned(),
            approver: caller.approver.cloned(),
            cancel: call.cancel.cloned(),
            env,
            deadline: Some(call.deadline),
        };
        Some(TerminalAccess {
            service,
            call: Arc::new(context),
        })
    }
}

impl From<WitCommandRequest> for CommandRequest {
    fn from(r: WitCommandRequest) -> Self {
        CommandRequest {
            command: r.command,
            workdir: r.workdir,
            timeout_secs: r.timeout_secs,
            stdin: r.stdin,
            pty: r.pty,
        }
    }
}

impl From<GateRefusal> for wit::Refusal {
    fn from(r: GateRefusal) -> Self {
        wit::Refusal {
            message: r.message,
            input: r.input,
            rules: r.rules,
            descriptions: r.descriptions,
        }
    }
}

impl From<TerminalCallError> for wit::Error {
    fn from(e: TerminalCallError) -> Self {
        match e {
            TerminalCallError::Blocked(r) => wit::Error::Blocked(r.into()),
            TerminalCallError::PendingApproval(r) => wit::Error::PendingApproval(r.into()),
            TerminalCallError::NotGranted => wit::Error::NotGranted,
            TerminalCallError::InvalidRequest(m) => wit::Error::InvalidRequest(m),
            TerminalCallError::TooManyProcesses(n) => wit::Error::TooManyProcesses(n),
            TerminalCallError::TooManySessions(n) => wit::Error::TooManySessions(n),
            TerminalCallError::UnknownProcess(id) => wit::Error::UnknownProcess(id),
            TerminalCallError::StdinUnavailable => wit::Error::StdinUnavailable,
            TerminalCallError::WriteFailed(m) => wit::Error::WriteFailed(m),
            TerminalCallError::Failed(m) => wit::Error::Failed(m),
        }
    }
}

impl From<CommandFinished> for wit::Finished {
    fn from(f: CommandFinished) -> Self {
        wit::Finished {
            output: f.output,
            exit_code: f.exit_code,
            exit_code_meaning: f.exit_code_meaning,
            pty_note: f.pty_note,
        }
    }
}

impl From<ProcessStatus> for wit::ProcessStatus {
    fn from(s: ProcessStatus) -> Self {
        match s {
            ProcessStatus::Running => wit::ProcessStatus::Running,
            ProcessStatus::Exited => wit::ProcessStatus::Exited,
        }
    }
}

impl From<ProcessInfo> for wit::ProcessInfo {
    fn from(p: ProcessInfo) -> Self {
        wit::ProcessInfo {
            id: p.id,
            command: p.command,
            pid: p.pid,
            status: p.status.into(),
            exit_code: p.exit_code,
            uptime_secs: p.uptime_secs,
            output_preview: p.output_preview,
        }
    }
}

/// A reply of another action than the one asked for: a bug in the service, reported
/// to the guest as a failure rather than trusted.
fn mismatched() -> wit::Error {
    wit::Error::Failed("the terminal service answered with another action's result".into())
}

impl CallState {
    fn process(&mut self, request: ProcessRequest) -> Result<ProcessReply, wit::Error> {
        match &self.granted.terminal {
            Some(t) => Ok(t.service.process(&t.call, &request)?),
            None => Err(wit::Error::NotGranted),
        }
    }
}

impl Host for CallState {
    fn run(&mut self, request: WitCommandRequest) -> Result<wit::Finished, wit::Error> {
        let Some(terminal) = self.granted.terminal.clone() else {
            return Err(wit::Error::NotGranted);
        };
        let progress = self.progress.clone();
        let tool = self.tool.clone();
        let call_id = self.call_id.clone();
        let mut gate = std::mem::take(&mut self.progress_gate);
        let mut done: u64 = 0;
        let mut on_output = |text: &str| {
            if let Some(sink) = &progress {
                done += text.chars().count() as u64;
                let report = Progress {
                    tool: tool.clone(),
                    call_id: call_id.clone(),
                    done,
                    total: None,
                    message: truncate(text, MAX_LOG_BYTES).to_owned(),
                };
                gate.offer(report, Coalesce::Append, sink);
            }
        };
        let result = terminal
            .service
            .run(&terminal.call, &request.into(), &mut on_output);
        self.progress_gate = gate;
        Ok(result?.into())
    }

    fn start(&mut self, request: WitCommandRequest) -> Result<wit::Started, wit::Error> {
        let Some(t) = &self.granted.terminal else {
            return Err(wit::Error::NotGranted);
        };
        let started = t.service.start(&t.call, &request.into())?;
        Ok(wit::Started {
            id: started.id,
            pid: started.pid,
        })
    }

    fn list(&mut self) -> Result<Vec<wit::ProcessInfo>, wit::Error> {
        match self.process(ProcessRequest::List)? {
            ProcessReply::List(list) => Ok(list.into_iter().map(Into::into).collect()),
            _ => Err(mismatched()),
        }
    }

    fn poll(&mut self, id: String) -> Result<wit::ProcessInfo, wit::Error> {
        match self.process(ProcessRequest::Poll(id))? {
            ProcessReply::Poll(info) => Ok(info.into()),
            _ => Err(mismatched()),
        }
    }

    fn log(
        &mut self,
        id: String,
        offset: Option<u64>,
        limit: Option<u64>,
    ) -> Result<wit::LogLines, wit::Error> {
        match self.process(ProcessRequest::Log { id, offset, limit })? {
            ProcessReply::Log(l) => Ok(wit::LogLines {
                id: l.id,
                status: l.status.into(),
                output: l.output,
                total_lines: l.total_lines,
                shown_lines: l.shown_lines,
            }),
            _ => Err(mismatched()),
        }
    }

    fn wait(
        &mut self,
        id: String,
        timeout_secs: Option<u32>,
    ) -> Result<wit::WaitOutcome, wit::Error> {
        match self.process(ProcessRequest::Wait { id, timeout_secs })? {
            ProcessReply::Wait(WaitOutcome::Exited { exit_code, output }) => {
                Ok(wit::WaitOutcome::Exited(wit::ExitedProcess {
                    exit_code,
                    output,
                }))
            }
            ProcessReply::Wait(WaitOutcome::TimedOut {
                waited_secs,
                output,
            }) => Ok(wit::WaitOutcome::TimedOut(wit::StillRunning {
                waited_secs,
                output,
            })),
            _ => Err(mismatched()),
        }
    }

    fn kill(&mut self, id: String) -> Result<wit::KillOutcome, wit::Error> {
        match self.process(ProcessRequest::Kill(id))? {
            ProcessReply::Kill(KillOutcome::Killed) => Ok(wit::KillOutcome::Killed),
            ProcessReply::Kill(KillOutcome::AlreadyExited(code)) => {
                Ok(wit::KillOutcome::AlreadyExited(code))
            }
            _ => Err(mismatched()),
        }
    }

    fn write(&mut self, id: String, data: String) -> Result<wit::WriteOutcome, wit::Error> {
        write_reply(self.process(ProcessRequest::Write { id, data })?)
    }

    fn submit(&mut self, id: String, data: String) -> Result<wit::WriteOutcome, wit::Error> {
        write_reply(self.process(ProcessRequest::Submit { id, data })?)
    }

    fn close(&mut self, id: String) -> Result<(), wit::Error> {
        match self.process(ProcessRequest::Close(id))? {
            ProcessReply::Closed => Ok(()),
            _ => Err(mismatched()),
        }
    }
}

fn write_reply(reply: ProcessReply) -> Result<wit::WriteOutcome, wit::Error> {
    match reply {
        ProcessReply::Write(WriteOutcome::Written(n)) => Ok(wit::WriteOutcome::Written(n)),
        ProcessReply::Write(WriteOutcome::Pending(n)) => Ok(wit::WriteOutcome::Pending(n)),
        ProcessReply::Write(WriteOutcome::Held { delivered, held }) => {
            Ok(wit::WriteOutcome::Held(wit::HeldInput { delivered, held }))
        }
        _ => Err(mismatched()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Runtime;
    use crate::sandbox::{CallSetup, store};

    /// The host re-checks the grant on every call: a store built without the terminal
    /// (what dispatch builds for a tool not granted it) refuses every function, even if
    /// a component somehow reached the import.
    #[test]
    fn without_the_grant_every_terminal_function_refuses() {
        let runtime = Runtime::new(crate::EngineConfig::default()).unwrap();
        let declaration = crate::Declaration::nothing("t");
        let grants =
            crate::policy::effective(&declaration, &crate::OperatorPolicy::default(), None);
        let mut store = store(
            &runtime,
            &std::sync::Arc::from("t"),
            &grants,
            &crate::Secrets::default(),
            CallSetup::default(),
        )
        .unwrap();
        let state = store.data_mut();
        let request = || WitCommandRequest {
            command: "touch /tmp/hermetic-never".into(),
            workdir: None,
            timeout_secs: None,
            stdin: None,
            pty: false,
        };
        let refused = |e: wit::Error| matches!(e, wit::Error::NotGranted);
        assert!(Host::run(state, request()).is_err_and(refused));
        assert!(Host::start(state, request()).is_err_and(refused));
        assert!(Host::list(state).is_err_and(refused));
        assert!(Host::poll(state, "proc_1".into()).is_err_and(refused));
        assert!(Host::kill(state, "proc_1".into()).is_err_and(refused));
        assert!(Host::write(state, "proc_1".into(), "x".into()).is_err_and(refused));
        assert!(Host::close(state, "proc_1".into()).is_err_and(refused));
    }
}
