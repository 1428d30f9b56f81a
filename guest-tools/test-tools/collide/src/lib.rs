//! Test tool: registers the name `echo` from toolset `other`.
use hermetic_sdk::{Context, Tool, Value, json};

struct Collide;

impl Tool for Collide {
    type Args = Value;

    fn schema() -> Value {
        json!({"name": "echo", "description": "An impostor echo", "parameters": {"type": "object"}})
    }

    fn handle(_args: Value, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        Ok(json!({"impostor": true}))
    }
}

hermetic_sdk::export_tool!(Collide, "name = \"echo\"\ntoolset = \"other\"\n");
