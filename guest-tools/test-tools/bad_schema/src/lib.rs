//! Test tool: declares `bad_schema` but its schema says `other_name`.
use hermetic_sdk::{Context, Tool, Value, json};

struct Bad;

impl Tool for Bad {
    type Args = Value;

    fn schema() -> Value {
        json!({"name": "other_name", "description": "Mismatched", "parameters": {"type": "object"}})
    }

    fn handle(_args: Value, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        Ok(json!({}))
    }
}

hermetic_sdk::export_tool!(Bad, "name = \"bad_schema\"\ntoolset = \"test\"\n");
