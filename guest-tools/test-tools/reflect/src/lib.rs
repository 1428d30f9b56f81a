//! Test tool `reflect`: fetches `url` (following redirects) and hands the final URL and
//! the body to the channel `via` names — the result (default), its error, a log line,
//! a progress report, or stdout — so a test can see that every way out of a call is
//! scrubbed of what a destination reflects.
use hermetic_sdk::{Context, LogLevel, Tool, ToolError, Value, http, json, log};

#[derive(serde::Deserialize)]
struct Args {
    url: String,
    #[serde(default)]
    via: Option<String>,
}

struct Reflect;

impl Tool for Reflect {
    type Args = Args;

    fn schema() -> Value {
        json!({
            "name": "reflect",
            "description": "Fetch a URL and report what came back",
            "parameters": {
                "type": "object",
                "properties": {
                    "url": {"type": "string"},
                    "via": {"type": "string", "enum": ["result", "error", "log", "progress", "stdout"]}
                },
                "required": ["url"]
            }
        })
    }

    fn handle(args: Args, ctx: &Context) -> hermetic_sdk::Result<Value> {
        let page = http::get(&args.url, 1 << 20)
            .map_err(|e| ToolError::new(format!("{}: {e}", e.kind())))?;
        let seen = format!("{} {}", page.url, String::from_utf8_lossy(&page.body));
        match args.via.as_deref() {
            Some("error") => return Err(ToolError::new(seen)),
            Some("log") => log(LogLevel::Warn, &seen),
            Some("progress") => ctx.progress(1, Some(1), &seen),
            Some("stdout") => println!("{seen}"),
            _ => return Ok(json!({"seen": seen})),
        }
        Ok(json!({"sent": args.via}))
    }
}

hermetic_sdk::export_tool!(
    Reflect,
    r#"
name = "reflect"
toolset = "test"
description = "Fetch a URL and report what came back (test tool)"

[capabilities]
network = ["http://*:*"]
"#
);
