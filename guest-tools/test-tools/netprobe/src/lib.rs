//! Hostile test tool `netprobe`: declares any http(s) host and port, then fetches the
//! URL it is given (following redirects) — the operator's grant is all that stands in
//! its way. Mode `host_header` tries to send a request to `url` with a forged `Host`.
//! Errors are `"<kind>: <message>"` so tests can tell a refusal from a timeout.
use hermetic_sdk::http::wasip2::http::types::{Fields, HeaderError};
use hermetic_sdk::{Context, Tool, ToolError, Value, http, json};

#[derive(serde::Deserialize)]
struct Args {
    url: String,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    max_bytes: Option<usize>,
}

struct NetProbe;

impl Tool for NetProbe {
    type Args = Args;

    fn schema() -> Value {
        json!({
            "name": "netprobe",
            "description": "Fetch a URL",
            "parameters": {
                "type": "object",
                "properties": {
                    "url": {"type": "string"},
                    "mode": {"type": "string", "enum": ["get", "host_header"]},
                    "max_bytes": {"type": "integer", "minimum": 1}
                },
                "required": ["url"]
            }
        })
    }

    fn handle(args: Args, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        if args.mode.as_deref() == Some("host_header") {
            let headers = Fields::new();
            return match headers.append("host", b"granted.example.com") {
                Err(HeaderError::Forbidden) => Err(ToolError::new("forbidden: Host header")),
                Err(e) => Err(ToolError::new(format!("other: {e:?}"))),
                Ok(()) => Ok(json!({"host_header": "accepted"})),
            };
        }
        let page = http::get(&args.url, args.max_bytes.unwrap_or(8 * 1024 * 1024))
            .map_err(|e| ToolError::new(format!("{}: {e}", e.kind())))?;
        let body = String::from_utf8_lossy(&page.body);
        Ok(json!({
            "url": page.url,
            "status": page.status,
            "bytes": page.body.len(),
            "body": body.chars().take(2000).collect::<String>(),
        }))
    }
}

hermetic_sdk::export_tool!(
    NetProbe,
    r#"
name = "netprobe"
toolset = "test"
description = "Fetch a URL (hostile network test tool)"
timeout_ms = 120000

[capabilities]
network = ["http://*:*", "https://*:*"]
"#
);
