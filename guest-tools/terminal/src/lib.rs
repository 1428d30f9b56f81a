//! Hermes's `terminal` tool. The command never runs in this guest: it goes to the
//! host's `terminal` interface, where the approval gate decides and a backend runs it.

use hermetic_sdk::terminal::{self, CommandRequest, hermes};
use hermetic_sdk::{Context, Tool, Value, json};

#[derive(serde::Deserialize)]
struct Args {
    command: String,
    #[serde(default)]
    background: bool,
    timeout: Option<u32>,
    workdir: Option<String>,
    #[serde(default)]
    pty: bool,
}

struct Terminal;

impl Tool for Terminal {
    type Args = Args;

    fn schema() -> Value {
        json!({
            "name": "terminal",
            "description": "Execute a shell command. Commands run in a persistent environment for the session: the working directory carries over between calls (a `cd` holds for the next command). Output (stdout and stderr merged) is capped at 50,000 characters (head and tail kept). Dangerous commands need the user's approval first; a result with status \"blocked\" or \"pending_approval\" did not run — do not retry it, ask the user. For long-running commands (servers, watchers, builds over 10 minutes) set background=true and use the process tool to poll, read logs, wait or kill.",
            "parameters": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "command": {"type": "string", "description": "The command to execute"},
                    "background": {"type": "boolean", "description": "Run in the background and return a session_id for the process tool (default false)", "default": false},
                    "timeout": {"type": "integer", "minimum": 1, "description": "Seconds before a foreground command is killed (default 180, at most 600; use background for longer)"},
                    "workdir": {"type": "string", "description": "Working directory for this command (default: where the last command left off)"},
                    "pty": {"type": "boolean", "description": "Run under a pseudo-terminal, for programs that need one (default false)", "default": false}
                },
                "required": ["command"]
            },
            "output_schema": {
                "type": "object",
                "properties": {
                    "output": {"type": "string"},
                    "exit_code": {"type": "integer"},
                    "error": {"type": ["string", "null"]},
                    "exit_code_meaning": {"type": "string"},
                    "pty_note": {"type": "string"},
                    "session_id": {"type": "string"},
                    "pid": {"type": "integer"}
                },
                "required": ["output"]
            }
        })
    }

    fn handle(args: Args, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        let request = CommandRequest {
            command: args.command,
            workdir: args.workdir,
            timeout_secs: args.timeout,
            stdin: None,
            pty: args.pty,
        };
        // Refusals and errors are results too (Hermes's shapes): the agent reads
        // `status` to learn that a command did not run.
        let result = if args.background {
            terminal::start(&request).map(|s| hermes::started(&s))
        } else {
            terminal::run(&request).map(|f| hermes::finished(&f))
        };
        Ok(result.unwrap_or_else(|e| hermes::error(&e)))
    }
}

hermetic_sdk::export_tool!(
    Terminal,
    r#"
name = "terminal"
toolset = "terminal"
emoji = "💻"
description = "Runs shell commands through the host's terminal backends, behind the approval gate"
# Longer than the longest foreground command (600 s), so the command's own timeout
# ends it with a result rather than the tool's deadline with an error.
timeout_ms = 660000
# 50,000 characters of output, JSON-escaped, plus the other fields.
max_result_chars = 200000

[capabilities]
terminal = true
"#
);
