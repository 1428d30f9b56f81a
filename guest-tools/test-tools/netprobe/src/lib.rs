//! Hostile test tool `netprobe`: declares any http(s) host and port, then fetches the
//! URL it is given (following redirects) — the operator's grant is all that stands in
//! its way. Mode `host_header` tries to send a request to `url` with a forged `Host`.
//! Mode `once` sends one request with `method` (default GET), follows nothing, and
//! reports the response's headers and body *reversed* — a form no scrubbing knows, so
//! a test sees exactly what reached the guest.
//! Errors are `"<kind>: <message>"` so tests can tell a refusal from a timeout.
use hermetic_sdk::http::wasip2::http::outgoing_handler;
use hermetic_sdk::http::wasip2::http::types::{
    ErrorCode, Fields, HeaderError, Method, OutgoingBody, OutgoingRequest, RequestOptions, Scheme,
};
use hermetic_sdk::http::wasip2::io::streams::StreamError;
use hermetic_sdk::{Context, Tool, ToolError, Value, http, json};

#[derive(serde::Deserialize)]
struct Args {
    url: String,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    max_bytes: Option<usize>,
}

/// `text` reversed.
fn reversed(text: &str) -> String {
    text.chars().rev().collect()
}

/// An error code as the test reads it: the host's own words when it gave some.
fn refused(code: &ErrorCode) -> ToolError {
    match code {
        ErrorCode::InternalError(Some(text)) => ToolError::new(format!("refused: {text}")),
        other => ToolError::new(format!("other: {other:?}")),
    }
}

/// One request of `method` to `url`, no redirect followed: status, headers and body,
/// each value reversed.
fn once(url: &str, method: &str) -> hermetic_sdk::Result<Value> {
    let bad = || ToolError::new(format!("bad_url: {url}"));
    let (scheme, rest) = url.split_once("://").ok_or_else(bad)?;
    let end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let request = OutgoingRequest::new(Fields::new());
    let method = match method {
        "GET" => Method::Get,
        "TRACE" => Method::Trace,
        "CONNECT" => Method::Connect,
        other => Method::Other(other.to_owned()),
    };
    request.set_method(&method).map_err(|()| bad())?;
    let scheme = if scheme == "https" {
        Scheme::Https
    } else {
        Scheme::Http
    };
    request.set_scheme(Some(&scheme)).map_err(|()| bad())?;
    request.set_authority(Some(authority)).map_err(|()| bad())?;
    let path = if path.is_empty() { "/" } else { path };
    request
        .set_path_with_query(Some(path))
        .map_err(|()| bad())?;
    let body = request.body().map_err(|()| bad())?;
    OutgoingBody::finish(body, None).map_err(|e| refused(&e))?;
    let future =
        outgoing_handler::handle(request, None::<RequestOptions>).map_err(|e| refused(&e))?;
    future.subscribe().block();
    let response = match future.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(e))) => return Err(refused(&e)),
        _ => return Err(ToolError::new("other: no response")),
    };
    let headers: Vec<Value> = response
        .headers()
        .entries()
        .into_iter()
        .map(|(n, v)| json!([n, reversed(&String::from_utf8_lossy(&v))]))
        .collect();
    let status = response.status();
    let incoming = response
        .consume()
        .map_err(|()| ToolError::new("other: no body"))?;
    let stream = incoming
        .stream()
        .map_err(|()| ToolError::new("other: no body stream"))?;
    let mut body = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => body.extend_from_slice(&chunk),
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(ToolError::new(format!("other: {}", e.to_debug_string())));
            }
        }
    }
    Ok(json!({
        "status": status,
        "headers_reversed": headers,
        "body_reversed": reversed(&String::from_utf8_lossy(&body)),
    }))
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
                    "mode": {"type": "string", "enum": ["get", "host_header", "once"]},
                    "method": {"type": "string"},
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
        if args.mode.as_deref() == Some("once") {
            return once(&args.url, args.method.as_deref().unwrap_or("GET"));
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
