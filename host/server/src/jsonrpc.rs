//! Reading client messages, and the JSON-RPC error response owed to a message rmcp
//! cannot parse.
//!
//! rmcp drops a stdio line it cannot parse as a client message, and answers such an
//! HTTP body with a bare 415; either way a client waiting on the request's id never
//! hears back. JSON-RPC 2.0 says every request gets a response: a parse error (−32700,
//! id null) for text that is not JSON, otherwise an error with the request's id when
//! one can be read — invalid params (−32602) for a message with a method (rmcp knows
//! every method, custom ones included, so only its params can have failed), invalid
//! request (−32600) for anything else.

use rmcp::model::{
    CallToolRequest, CallToolRequestMethod, CancelTaskMethod, ClientJsonRpcMessage, ClientRequest,
    CompleteRequestMethod, ConstString, DiscoverRequestMethod, GetPromptRequestMethod,
    GetSkillRequestMethod, GetTaskMethod, InitializeResultMethod, JsonRpcRequest,
    ListPromptsRequestMethod, ListResourceTemplatesRequestMethod, ListResourcesRequestMethod,
    ListSkillsRequestMethod, ListToolsRequestMethod, PingRequestMethod,
    ReadResourceDirectoryRequestMethod, ReadResourceRequestMethod, SetLevelRequestMethod,
    SubscribeRequestMethod, SubscriptionsListenRequestMethod, UnsubscribeRequestMethod,
    UpdateTaskMethod,
};
use serde_json::{Value, json};

/// Parses one client message, as rmcp's own `ClientJsonRpcMessage` parse does.
///
/// A `tools/call` request, the message on the hot path, is read straight into rmcp's
/// request type: `ClientRequest` is an untagged enum, so serde buffers the message and
/// tries its variants in turn, and tools/call is the 14th of 22 (13 failed attempts,
/// each building an error, per call). No earlier variant can take a tools/call (each
/// has its own method), so the result is the same. Everything else takes rmcp's parse,
/// and so does a tools/call text that mentions `result` or `error` anywhere (rmcp
/// refuses a request that also has those members; the direct read would not).
pub(crate) fn parse_message(text: &[u8]) -> Result<ClientJsonRpcMessage, serde_json::Error> {
    if let Some(message) = tools_call(text) {
        return Ok(message);
    }
    let message: ClientJsonRpcMessage = serde_json::from_slice(text)?;
    // rmcp's last variant takes any method with any params: a standard request whose
    // params do not fit its type lands there, and would be answered "method not found"
    // (−32601). Its params are what is wrong (−32602, via `failure_response`).
    if let ClientJsonRpcMessage::Request(request) = &message
        && let ClientRequest::CustomRequest(custom) = &request.request
        && STANDARD_METHODS.contains(&custom.method.as_str())
    {
        return Err(match custom.method.as_str() {
            CallToolRequestMethod::VALUE => {
                serde_json::from_slice::<JsonRpcRequest<CallToolRequest>>(text)
                    .err()
                    .map_or_else(
                        || serde::de::Error::custom("tools/call: params do not fit the method"),
                        |e| serde::de::Error::custom(format!("tools/call: {e}")),
                    )
            }
            method => serde::de::Error::custom(format!("{method}: params do not fit the method")),
        });
    }
    Ok(message)
}

/// Methods rmcp reads into a type of their own (its `ClientRequest` variants but the
/// catch-all): a request for one of them that rmcp read as a custom request has
/// params that do not fit.
const STANDARD_METHODS: [&str; 21] = [
    PingRequestMethod::VALUE,
    InitializeResultMethod::VALUE,
    DiscoverRequestMethod::VALUE,
    CompleteRequestMethod::VALUE,
    SetLevelRequestMethod::VALUE,
    GetPromptRequestMethod::VALUE,
    ListPromptsRequestMethod::VALUE,
    ListResourcesRequestMethod::VALUE,
    ListResourceTemplatesRequestMethod::VALUE,
    ReadResourceRequestMethod::VALUE,
    SubscriptionsListenRequestMethod::VALUE,
    SubscribeRequestMethod::VALUE,
    UnsubscribeRequestMethod::VALUE,
    CallToolRequestMethod::VALUE,
    ListToolsRequestMethod::VALUE,
    GetTaskMethod::VALUE,
    UpdateTaskMethod::VALUE,
    CancelTaskMethod::VALUE,
    ListSkillsRequestMethod::VALUE,
    GetSkillRequestMethod::VALUE,
    ReadResourceDirectoryRequestMethod::VALUE,
];

/// The direct read of [`parse_message`]: `None` unless `text` is a tools/call request
/// it may read.
fn tools_call(text: &[u8]) -> Option<ClientJsonRpcMessage> {
    // A body may be up to the transport's limit (16 MiB): one fast scan per word, not a
    // slice compare per byte.
    let contains = |needle: &[u8]| memchr::memmem::find(text, needle).is_some();
    if !contains(b"\"tools/call\"") || contains(b"\"result\"") || contains(b"\"error\"") {
        return None;
    }
    let call = serde_json::from_slice::<JsonRpcRequest<CallToolRequest>>(text).ok()?;
    Some(ClientJsonRpcMessage::Request(JsonRpcRequest {
        jsonrpc: call.jsonrpc,
        id: call.id,
        request: ClientRequest::CallToolRequest(call.request),
    }))
}

/// JSON-RPC 2.0 "Parse error".
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC 2.0 "Invalid Request".
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC 2.0 "Invalid params".
pub const INVALID_PARAMS: i64 = -32602;

/// What a client message that rmcp rejected is owed: `None` when the message parses
/// (rmcp answers it) or when it is a notification (which gets no response).
/// `detail` is the parser's complaint, passed on to help the client's author.
pub(crate) fn failure_response(message: &[u8], detail: &str) -> Option<Value> {
    let value: Value = match serde_json::from_slice(message) {
        Ok(value) => value,
        Err(e) => {
            return Some(error(
                Value::Null,
                PARSE_ERROR,
                &format!("Parse error: {e}"),
            ));
        }
    };
    let Some(object) = value.as_object() else {
        // A batch or a bare value: this server takes one message at a time.
        return Some(error(
            Value::Null,
            INVALID_REQUEST,
            "Invalid Request: send one JSON-RPC message object",
        ));
    };
    // Only a number or a string is an id; anything else cannot be echoed.
    let id = object
        .get("id")
        .filter(|id| id.is_number() || id.is_string())
        .cloned();
    let has_method = object.get("method").is_some_and(Value::is_string);
    match (id, has_method) {
        (Some(id), true) => Some(error(
            id,
            INVALID_PARAMS,
            &format!("Invalid params: {detail}"),
        )),
        // A notification the server cannot read: nobody waits for an answer.
        (None, true) if !object.contains_key("id") => None,
        // A response or error from the client that did not parse: not a request.
        (None, false) if object.contains_key("result") || object.contains_key("error") => None,
        (id, _) => Some(error(
            id.unwrap_or(Value::Null),
            INVALID_REQUEST,
            &format!("Invalid Request: {detail}"),
        )),
    }
}

/// The top-level `"id"` of a JSON object whose text is cut short (the head of an
/// oversized message): a number or a string that lies wholly within `head`. Keys
/// nested deeper (an argument called `id`) are skipped, so the reply never names
/// another request.
pub(crate) fn top_level_id(head: &[u8]) -> Option<Value> {
    let mut depth = 0usize;
    let mut i = 0;
    // Whether the last string closed at depth 1 was the key `id`, awaiting its `:`.
    let mut key_is_id = false;
    while i < head.len() {
        match head[i] {
            b'"' => {
                let end = string_end(head, i)?;
                let is_key = head[end + 1..]
                    .iter()
                    .find(|b| !b.is_ascii_whitespace())
                    .is_some_and(|b| *b == b':');
                key_is_id = depth == 1 && is_key && &head[i + 1..end] == b"id";
                i = end + 1;
                continue;
            }
            b':' if key_is_id => {
                let start = i
                    + 1
                    + head[i + 1..]
                        .iter()
                        .position(|b| !b.is_ascii_whitespace())?;
                let end = if head[start] == b'"' {
                    string_end(head, start)? + 1
                } else {
                    let len = head[start..]
                        .iter()
                        .position(|b| !(b.is_ascii_digit() || b"-+.eE".contains(b)))?;
                    start + len
                };
                let id: Value = serde_json::from_slice(&head[start..end]).ok()?;
                return (id.is_number() || id.is_string()).then_some(id);
            }
            // Between a key and its `:`: keep what the key was.
            b if b.is_ascii_whitespace() => {
                i += 1;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        key_is_id = false;
        i += 1;
    }
    None
}

/// The index of the quote that closes the string opening at `start`.
fn string_end(text: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < text.len() {
        match text[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// A JSON-RPC error response.
pub(crate) fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tools_call_read_directly_is_what_rmcp_reads() {
        let lines = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}"#,
            r#"{"id":"a-1","method":"tools/call","jsonrpc":"2.0","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"p","arguments":{},"_meta":{"progressToken":"t","io.x/y":[1]}}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t","arguments":{"a":{"b":[null,1.5,"é"]}},"inputResponses":{"k":{"action":"accept","content":{"answer":"once"}}},"requestState":"s"},"extra":1}"#,
            // Not read directly: another method, a notification, a stray result.
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"cursor":"tools/call"}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo"},"result":{}}"#,
            r#"{"jsonrpc":"1.0","id":6,"method":"tools/call","params":{"name":"echo"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{}}}"#,
        ];
        for (i, line) in lines.iter().enumerate() {
            // The first four take the direct read (else this test would compare rmcp
            // with itself).
            assert_eq!(tools_call(line.as_bytes()).is_some(), i < 4, "{line}");
            let ours = parse_message(line.as_bytes()).map(|m| serde_json::to_value(m).unwrap());
            let rmcp = serde_json::from_str::<ClientJsonRpcMessage>(line);
            // A tools/call rmcp could read only as a custom request has bad params:
            // refused here (invalid params) where rmcp would say "method not found".
            if let Ok(ClientJsonRpcMessage::Request(request)) = &rmcp
                && matches!(request.request, ClientRequest::CustomRequest(_))
            {
                assert!(ours.is_err(), "{line}");
                continue;
            }
            let rmcp = rmcp.map(|m| serde_json::to_value(m).unwrap());
            match (ours, rmcp) {
                (Ok(ours), Ok(rmcp)) => assert_eq!(ours, rmcp, "{line}"),
                (Err(_), Err(_)) => {}
                (ours, rmcp) => panic!("{line}: ours {ours:?}, rmcp {rmcp:?}"),
            }
        }
        // The _meta (where the progress token lives) reaches the request's extensions.
        let Ok(ClientJsonRpcMessage::Request(request)) = parse_message(lines[2].as_bytes()) else {
            panic!("not a request");
        };
        let ClientRequest::CallToolRequest(call) = request.request else {
            panic!("not a tools/call");
        };
        let meta = call.extensions.get::<rmcp::model::RequestMetaObject>();
        assert!(meta.is_some_and(|m| m.get_progress_token().is_some()));
    }

    #[test]
    fn a_standard_request_with_params_that_do_not_fit_is_invalid_params_not_an_unknown_method() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":3}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{}}"#,
        ] {
            let e = parse_message(line.as_bytes()).expect_err(line);
            let reply = failure_response(line.as_bytes(), &e.to_string()).unwrap();
            assert_eq!(reply["error"]["code"], json!(INVALID_PARAMS), "{line}");
            assert_eq!(reply["id"], json!(1), "{line}");
            let method = line
                .split("\"method\":\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next();
            assert!(e.to_string().starts_with(method.unwrap()), "{line}: {e}");
        }
        // A method of no standard shape stays rmcp's custom request (its handler says
        // whether it knows it).
        assert!(parse_message(br#"{"jsonrpc":"2.0","id":1,"method":"x/y","params":{}}"#).is_ok());
    }

    #[test]
    fn each_unparseable_request_gets_the_error_json_rpc_prescribes_with_its_id() {
        let code = |v: &Value| v["error"]["code"].as_i64().unwrap();
        // Not JSON: parse error, id null.
        let r = failure_response(b"{not json", "x").unwrap();
        assert_eq!((code(&r), r["id"].clone()), (PARSE_ERROR, Value::Null));
        // A request whose params do not fit its method: invalid params, with its id.
        let r = failure_response(
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":3}"#,
            "bad",
        )
        .unwrap();
        assert_eq!((code(&r), r["id"].clone()), (INVALID_PARAMS, json!(7)));
        let r = failure_response(
            br#"{"jsonrpc":"2.0","id":"a","method":"x","params":[]}"#,
            "bad",
        )
        .unwrap();
        assert_eq!(r["id"], json!("a"));
        // No method: invalid request, with the id when there is one.
        let r = failure_response(br#"{"jsonrpc":"2.0","id":8}"#, "bad").unwrap();
        assert_eq!((code(&r), r["id"].clone()), (INVALID_REQUEST, json!(8)));
        let r = failure_response(b"[1, 2]", "bad").unwrap();
        assert_eq!((code(&r), r["id"].clone()), (INVALID_REQUEST, Value::Null));
        // A notification or a client's response that did not parse: nothing is owed.
        assert!(failure_response(br#"{"jsonrpc":"2.0","method":"x","params":3}"#, "bad").is_none());
        assert!(failure_response(br#"{"jsonrpc":"2.0","id":1,"result":3,"x":[}"#, "").is_some());
        assert!(failure_response(br#"{"jsonrpc":"2.0","id":{},"result":3}"#, "bad").is_none());
    }

    #[test]
    fn the_id_of_a_cut_off_message_is_its_top_level_one_or_none() {
        let id = |text: &str| top_level_id(text.as_bytes());
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"x":"#),
            Some(json!(42))
        );
        assert_eq!(
            id(r#"{"jsonrpc":"2.0", "id" : "a\"b", "params"#),
            Some(json!("a\"b"))
        );
        // An `id` inside the params is not the request's.
        assert_eq!(
            id(r#"{"jsonrpc":"2.0","params":{"id":7,"s":"\"id\":8"},"id""#),
            None
        );
        assert_eq!(
            id(r#"{"method":"x","params":{"arguments":{"id":7}},"id":9,"#),
            Some(json!(9))
        );
        // Cut inside the id, or no id at all.
        assert_eq!(id(r#"{"jsonrpc":"2.0","id":12"#), None);
        assert_eq!(id(r#"{"jsonrpc":"2.0","id":"abc"#), None);
        assert_eq!(id(r#"{"id":null,"#), None);
        assert_eq!(id(r#"["id", 3]"#), None);
    }
}
