//! Hostile test tool `http_undeclared`: imports wasi:http (through the SDK's `http`
//! feature) but declares no network destination. The host must refuse to load it.
use hermetic_sdk::{Context, Tool, ToolError, Value, http, json};

#[derive(serde::Deserialize)]
struct Args {
    url: String,
}

struct Undeclared;

impl Tool for Undeclared {
    type Args = Args;

    fn schema() -> Value {
        json!({
            "name": "http_undeclared",
            "description": "Fetch a URL without declaring it",
            "parameters": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}
        })
    }

    fn handle(args: Args, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        let page = http::get(&args.url, 1024).map_err(|e| ToolError::new(e.to_string()))?;
        Ok(json!({"status": page.status}))
    }
}

hermetic_sdk::export_tool!(
    Undeclared,
    r#"
name = "http_undeclared"
toolset = "test"
description = "Imports wasi:http without declaring network access"
"#
);
