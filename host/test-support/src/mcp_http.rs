//! MCP over streamable HTTP as a client without an SDK writes it: a 2026-07-28
//! (sessionless) request carries the client's `_meta` in its params and names its
//! method and tool in headers too.
use serde_json::{Value, json};

/// The protocol version of sessionless requests.
pub const SESSIONLESS: &str = "2026-07-28";

/// `params` with the `_meta` of client `client` declaring `capabilities`.
pub fn with_meta(params: Value, client: &str, capabilities: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": SESSIONLESS,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": client, "version": "0"}
    });
    params
}

/// A JSON-RPC request (id 1) of `method` with `params`.
pub fn message(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string()
}

/// The headers of a sessionless request of `method` with `params` (for
/// [`crate::http::request`]; `Authorization` and others go after them).
pub fn sessionless_headers<'a>(method: &str, params: &Value) -> Vec<(&'a str, String)> {
    let mut headers = vec![
        ("Content-Type", "application/json".to_owned()),
        ("Accept", "application/json, text/event-stream".to_owned()),
        ("MCP-Protocol-Version", SESSIONLESS.to_owned()),
        ("Mcp-Method", method.to_owned()),
    ];
    if let Some(name) = params["name"].as_str() {
        headers.push(("Mcp-Name", name.to_owned()));
    }
    headers
}
