//! The `terminal` host interface (wit/tool.wit) for tools that declare the terminal:
//! each function re-checks that this call was granted the terminal, then hands the
//! request to [`crate::terminal::TerminalCall`], which runs the approval gate before
//! any backend sees the command. Output is streamed as the call's progress.

use super::{CallState, MAX_LOG_BYTES, Progress, SandboxError, truncate};
use crate::engine::Runtime;
use crate::terminal::{CommandRequest as Request, ProcessRequest};
use serde_json::{Value, json};
use wasmtime::component::{HasSelf, Linker};

/// Host-side bindings of the `terminal` interface alone (world `terminal-imports`).
pub mod bindings {
    wasmtime::component::bindgen!({
        world: "terminal-imports",
        path: "../wit",
    });
}

use bindings::hermetic::tool::terminal::{CommandRequest, Host};

/// The WIT interface name, as it appears in link errors.
pub const INTERFACE: &str = "hermetic:tool/terminal";

/// The linker for tools that declare the terminal: everything [`super::linker`] links,
/// plus the `terminal` interface. Tools that do not declare it are loaded with the
/// plain linker, so a component importing `terminal` without declaring it fails to
/// load.
///
/// # Errors
/// [`SandboxError::Link`] on a wasmtime linking failure.
pub fn linker(runtime: &Runtime) -> Result<Linker<CallState>, SandboxError> {
    let mut linker = super::linker(runtime)?;
    bindings::hermetic::tool::terminal::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)
        .map_err(|e| SandboxError::Link(format!("{e:#}")))?;
    Ok(linker)
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

impl From<CommandRequest> for Request {
    fn from(r: CommandRequest) -> Self {
        Request {
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
            Some(t) => t.process(&request).to_string(),
            None => not_granted(),
        }
    }
}

impl Host for CallState {
    fn run(&mut self, request: CommandRequest) -> String {
        let Some(terminal) = self.terminal.clone() else {
            return not_granted();
        };
        let progress = self.progress.clone();
        let tool = self.tool.clone();
        let call_id = self.call_id.clone();
        let mut done: u64 = 0;
        let mut on_output = |text: &str| {
            if let Some(sink) = &progress {
                done += text.chars().count() as u64;
                sink(Progress {
                    tool: tool.clone(),
                    call_id: call_id.clone(),
                    done,
                    total: None,
                    message: truncate(text, MAX_LOG_BYTES).to_owned(),
                });
            }
        };
        let result: Value = terminal.run(&request.into(), &mut on_output);
        result.to_string()
    }

    fn start(&mut self, request: CommandRequest) -> String {
        match &self.terminal {
            Some(t) => t.start(&request.into()).to_string(),
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
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;
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
        let request = || CommandRequest {
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
