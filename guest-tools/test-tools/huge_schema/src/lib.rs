//! Test tool: a schema of 4 MiB (a description of multi-byte characters), far over the
//! host's schema limit, which the host must refuse without copying it out.
use hermetic_sdk::{Context, Tool, Value, json};

struct Huge;

impl Tool for Huge {
    type Args = Value;

    fn schema() -> Value {
        json!({
            "name": "huge_schema",
            "description": "é".repeat(2 * 1024 * 1024),
            "parameters": {"type": "object"},
        })
    }

    fn handle(_args: Value, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        Ok(json!({}))
    }
}

hermetic_sdk::export_tool!(Huge, "name = \"huge_schema\"\ntoolset = \"test\"\n");
