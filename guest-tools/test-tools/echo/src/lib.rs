//! Test tool `echo`: returns `{"echo": <message>}`.
use hermetic_sdk::{Context, Tool, Value, json};

#[derive(serde::Deserialize)]
struct Args {
    message: String,
    #[serde(default)]
    times: Option<u32>,
}

struct Echo;

impl Tool for Echo {
    type Args = Args;

    fn schema() -> Value {
        json!({
            "name": "echo",
            "description": "Echo a message back",
            "parameters": {
                "type": "object",
                "properties": {
                    "message": {"type": "string", "description": "Text to echo"},
                    "times": {"type": "integer", "minimum": 1, "maximum": 10}
                },
                "required": ["message"]
            }
        })
    }

    fn handle(args: Args, ctx: &Context) -> hermetic_sdk::Result<Value> {
        let times = args.times.unwrap_or(1) as usize;
        Ok(json!({"echo": args.message.repeat(times), "tenant": ctx.tenant}))
    }
}

hermetic_sdk::export_tool!(
    Echo,
    r#"
name = "echo"
toolset = "test"
description = "Echo a message back"
"#
);
