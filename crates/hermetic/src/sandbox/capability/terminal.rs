//! The terminal capability: the `terminal` host interface (wit/tool.wit) for tools
//! that declare it, and the seam ([`TerminalService`]) the terminal backends plug into.
//!
//! The runtime knows nothing of backends or of the approval gate: each function
//! re-checks that this call was granted the terminal, then hands the request to the
//! registry's [`TerminalService`] (`hermetic-terminal`'s `TerminalHost`), which runs the
//! approval gate before any backend sees the command. Output is streamed as the call's
//! progress.

use crate::approval::{ApprovalObserver, Approver};
use crate::call::CancelToken;
use crate::policy::EffectiveGrants;
use crate::policy_file::Secrets;
use crate::sandbox::{CallState, Coalesce, MAX_LOG_BYTES, Progress, SandboxError, truncate};
use serde_json::{Value, json};
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

use bindings::hermetic::tool::terminal::{CommandRequest as WitCommandRequest, Host};

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
/// Results are Hermes's JSON shapes (`{"output", "exit_code", "error"}`, refusals with
/// `status`).
pub trait TerminalService: Send + Sync + std::fmt::Debug {
    /// Runs a command in the foreground; `on_output` receives its cleaned output as it
    /// arrives.
    fn run(
        &self,
        call: &TerminalCallContext,
        request: &CommandRequest,
        on_output: &mut dyn FnMut(&str),
    ) -> Value;
    /// Starts a background process.
    fn start(&self, call: &TerminalCallContext, request: &CommandRequest) -> Value;
    /// A `process` action on the session's background processes.
    fn process(&self, call: &TerminalCallContext, request: &ProcessRequest) -> Value;
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

impl TerminalAccess {
    /// The terminal for one call with `grants`: `caller`'s tenant, session, approver
    /// and cancel token, with the granted env vars (values from `secrets`, else the
    /// host environment) and the deadline of the tool's own time limit.
    pub(crate) fn for_call(
        service: Arc<dyn TerminalService>,
        grants: &EffectiveGrants,
        secrets: &Secrets,
        caller: TerminalCallContext,
    ) -> Self {
        let env = grants
            .env
            .iter()
            .filter_map(|var| Some((var.clone(), secrets.env_value(var)?)))
            .collect();
        let deadline = Instant::now() + std::time::Duration::from_millis(grants.limits.timeout_ms);
        let call = Arc::new(TerminalCallContext {
            env,
            deadline: Some(deadline),
            ..caller
        });
        Self { service, call }
    }
}

/// The WIT interface name, as it appears in link errors.
pub const INTERFACE: &str = "hermetic:tool/terminal";

/// Adds the `terminal` interface to a linker (only for tools that declare the
/// terminal: see [`super::LinkedCapabilities`]).
///
/// # Errors
/// [`SandboxError::Link`] on a wasmtime linking failure.
pub(crate) fn link(linker: &mut Linker<CallState>) -> Result<(), SandboxError> {
    bindings::hermetic::tool::terminal::add_to_linker::<_, HasSelf<_>>(linker, |s| s)
        .map_err(|e| super::link_error(&e))
}

fn not_granted() -> String {
    json!({
        "output": "",
        "exit_code": -1,
        "error": "the terminal is not granted to this tool for this call",
        "status": "blocked",
    })
    .to_string()
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

impl CallState {
    fn process(&mut self, request: ProcessRequest) -> String {
        match &self.terminal {
            Some(t) => t.service.process(&t.call, &request).to_string(),
            None => not_granted(),
        }
    }
}

impl Host for CallState {
    fn run(&mut self, request: WitCommandRequest) -> String {
        let Some(terminal) = self.terminal.clone() else {
            return not_granted();
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
        let result: Value = terminal
            .service
            .run(&terminal.call, &request.into(), &mut on_output);
        self.progress_gate = gate;
        result.to_string()
    }

    fn start(&mut self, request: WitCommandRequest) -> String {
        match &self.terminal {
            Some(t) => t.service.start(&t.call, &request.into()).to_string(),
            None => not_granted(),
        }
    }

    fn list(&mut self) -> String {
        self.process(ProcessRequest::List)
    }

    fn poll(&mut self, id: String) -> String {
        self.process(ProcessRequest::Poll(id))
    }

    fn log(&mut self, id: String, offset: Option<u64>, limit: Option<u64>) -> String {
        self.process(ProcessRequest::Log { id, offset, limit })
    }

    fn wait(&mut self, id: String, timeout_secs: Option<u32>) -> String {
        self.process(ProcessRequest::Wait { id, timeout_secs })
    }

    fn kill(&mut self, id: String) -> String {
        self.process(ProcessRequest::Kill(id))
    }

    fn write(&mut self, id: String, data: String) -> String {
        self.process(ProcessRequest::Write { id, data })
    }

    fn submit(&mut self, id: String, data: String) -> String {
        self.process(ProcessRequest::Submit { id, data })
    }

    fn close(&mut self, id: String) -> String {
        self.process(ProcessRequest::Close(id))
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
        let declaration = crate::Declaration {
            name: "t".into(),
            toolset: "t".into(),
            description: String::new(),
            emoji: None,
            requires_env: Vec::new(),
            max_result_chars: None,
            timeout_ms: None,
            memory_mb: None,
            capabilities: Default::default(),
        };
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
        let refused = not_granted();
        assert_eq!(Host::run(state, request()), refused);
        assert_eq!(Host::start(state, request()), refused);
        assert_eq!(Host::list(state), refused);
        assert_eq!(Host::kill(state, "proc_1".into()), refused);
        assert_eq!(Host::write(state, "proc_1".into(), "x".into()), refused);
    }
}
