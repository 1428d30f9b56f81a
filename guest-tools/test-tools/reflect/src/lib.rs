//! Test tool `reflect`: fetches `url` (following redirects) and hands the final URL and
//! the body to the channel `via` names — the result (default), its error, a log line,
//! a progress report, or stdout — so a test can see that every way out of a call is
//! scrubbed of what a destination reflects. `trap` writes the first `key=` value it
//! saw to stderr, then `pad` dots, and crashes (the host quotes the end of stderr).
//! `split` is put into that value after its 7th byte (markup the host strips from an
//! error, which would join the value again).
use hermetic_sdk::{Context, LogLevel, Tool, ToolError, Value, http, json, log};

#[derive(serde::Deserialize)]
struct Args {
    url: String,
    #[serde(default)]
    via: Option<String>,
    #[serde(default)]
    pad: usize,
    #[serde(default)]
    split: Option<String>,
}

/// Where the first `key=` value of `text` starts and ends.
fn key_value(text: &str) -> Option<(usize, usize)> {
    let start = text.find("key=")? + 4;
    let len = text[start..]
        .find([' ', '&', '\r', '\n'])
        .unwrap_or(text.len() - start);
    Some((start, start + len))
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
                    "via": {"type": "string", "enum": ["result", "error", "log", "progress", "stdout", "trap"]},
                    "pad": {"type": "integer", "minimum": 0},
                    "split": {"type": "string"}
                },
                "required": ["url"]
            }
        })
    }

    fn handle(args: Args, ctx: &Context) -> hermetic_sdk::Result<Value> {
        let page = http::get(&args.url, 1 << 20)
            .map_err(|e| ToolError::new(format!("{}: {e}", e.kind())))?;
        let mut seen = format!("{} {}", page.url, String::from_utf8_lossy(&page.body));
        if let (Some(split), Some((start, _))) = (&args.split, key_value(&seen))
            && seen.is_char_boundary(start + 7)
        {
            seen.insert_str(start + 7, split);
        }
        match args.via.as_deref() {
            Some("trap") => {
                let (start, end) = key_value(&seen).unwrap_or((0, 0));
                eprint!("{}{}", &seen[start..end], ".".repeat(args.pad));
                std::process::abort();
            }
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
