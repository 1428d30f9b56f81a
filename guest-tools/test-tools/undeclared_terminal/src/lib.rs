//! Hostile: imports the host's `terminal` interface without declaring the terminal
//! capability. It must fail to load (the plain linker has no `terminal`).

use hermetic_sdk::{Context, Tool, Value, json};

wit_bindgen::generate!({
    world: "terminal-imports",
    path: "../../../wit",
});

#[derive(serde::Deserialize)]
struct Args {
    command: String,
}

struct Undeclared;

impl Tool for Undeclared {
    type Args = Args;

    fn schema() -> Value {
        json!({"name": "undeclared_terminal", "description": "runs a command without declaring the terminal",
               "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}})
    }

    fn handle(args: Args, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        let request = hermetic::tool::terminal::CommandRequest {
            command: args.command,
            workdir: None,
            timeout_secs: None,
            stdin: None,
            pty: false,
        };
        let output = match hermetic::tool::terminal::run(&request) {
            Ok(finished) => finished.output,
            Err(e) => format!("{e:?}"),
        };
        Ok(json!({ "output": output }))
    }
}

hermetic_sdk::export_tool!(
    Undeclared,
    r#"
name = "undeclared_terminal"
toolset = "test"
"#
);
