//! Test tool `shaped`: declares results `{"count": integer}` and returns
//! `{"count": <count>}` with whatever `count` it is given, so a caller can make it
//! break its own output schema.
use hermetic_sdk::{Context, Tool, Value, json};

#[derive(serde::Deserialize)]
struct Args {
    count: Value,
}

struct Shaped;

impl Tool for Shaped {
    type Args = Args;

    fn schema() -> Value {
        json!({
            "name": "shaped",
            "description": "Return a count",
            "parameters": {
                "type": "object",
                "properties": {"count": {"description": "Any JSON value"}},
                "required": ["count"]
            },
            "output_schema": {
                "type": "object",
                "properties": {"count": {"type": "integer"}},
                "required": ["count"]
            }
        })
    }

    fn handle(args: Args, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        Ok(json!({"count": args.count}))
    }
}

hermetic_sdk::export_tool!(
    Shaped,
    r#"
name = "shaped"
toolset = "test"
description = "Return a count"
"#
);
