//! Hermes's `process` tool: list, poll, read, wait for, kill and talk to the background
//! processes the `terminal` tool started in this session. The host keeps them.

use hermetic_sdk::terminal::{self, hermes};
use hermetic_sdk::{Context, Tool, ToolError, Value, json};

#[derive(serde::Deserialize)]
struct Args {
    action: String,
    session_id: Option<String>,
    data: Option<String>,
    offset: Option<u64>,
    limit: Option<u64>,
    timeout: Option<u32>,
}

struct Process;

impl Tool for Process {
    type Args = Args;

    fn schema() -> Value {
        json!({
            "name": "process",
            "description": "Manage background processes started with terminal(background=true). Actions: list (all processes of this session), poll (status and recent output), log (output lines; offset/limit, newest lines by default), wait (until it exits or timeout seconds pass), kill, write (send data to stdin), submit (send data plus a newline), close (close stdin).",
            "parameters": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "action": {"type": "string", "enum": ["list", "poll", "log", "wait", "kill", "write", "submit", "close"], "description": "What to do"},
                    "session_id": {"type": "string", "description": "The process id from terminal(background=true), e.g. proc_…; required except for list"},
                    "data": {"type": "string", "description": "Text for write/submit"},
                    "offset": {"type": "integer", "minimum": 0, "description": "log: first line (default: the newest lines)"},
                    "limit": {"type": "integer", "minimum": 1, "description": "log: most lines (default 200)"},
                    "timeout": {"type": "integer", "minimum": 1, "description": "wait: seconds (default 180, at most 600)"}
                },
                "required": ["action"]
            },
            "output_schema": {
                "type": "object",
                "properties": {
                    "processes": {"type": "array", "items": {"type": "object"}},
                    "session_id": {"type": "string"},
                    "status": {"type": "string"},
                    "output": {"type": "string"},
                    "exit_code": {"type": ["integer", "null"]},
                    "pid": {"type": "integer"}
                }
            }
        })
    }

    fn handle(args: Args, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        let id = || {
            args.session_id
                .clone()
                .ok_or_else(|| ToolError::new(format!("action {} needs session_id", args.action)))
        };
        let data = || {
            args.data
                .clone()
                .ok_or_else(|| ToolError::new(format!("action {} needs data", args.action)))
        };
        let result = match args.action.as_str() {
            "list" => terminal::list().map(|l| hermes::list(&l)),
            "poll" => terminal::poll(&id()?).map(|p| hermes::poll(&p)),
            "log" => terminal::log(&id()?, args.offset, args.limit).map(|l| hermes::log(&l)),
            "wait" => terminal::wait(&id()?, args.timeout).map(|w| hermes::wait(&w)),
            "kill" => {
                let id = id()?;
                terminal::kill(&id).map(|k| hermes::kill(&id, &k))
            }
            "write" => terminal::write(&id()?, &data()?).map(|w| hermes::write(&w)),
            "submit" => terminal::submit(&id()?, &data()?).map(|w| hermes::write(&w)),
            "close" => terminal::close(&id()?).map(|()| hermes::closed()),
            other => return Err(ToolError::new(format!("unknown action {other:?}"))),
        };
        // Errors (an unknown id, a refused write) are results in Hermes's shapes.
        Ok(result.unwrap_or_else(|e| hermes::error(&e)))
    }
}

hermetic_sdk::export_tool!(
    Process,
    r#"
name = "process"
toolset = "terminal"
emoji = "⚙️"
description = "Manages the background processes of the terminal tool"
# `wait` may take up to 600 s.
timeout_ms = 660000
max_result_chars = 200000

[capabilities]
terminal = true
"#
);
