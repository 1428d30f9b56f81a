//! What a POST carries, as far as the front cares: its body (bounded in size and
//! time), the JSON-RPC message in it (or the 400 it is owed), and what that message
//! asks for.

use super::reply::{json, text};
use super::{BODY_TIMEOUT, Body, MAX_BODY};
use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, RequestId};

/// What one client message asks for, as far as the front cares.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Asked<'a> {
    /// The tool of a tools/call.
    pub(super) tool: Option<&'a str>,
    /// Whether it is an `initialize` (which opens a session).
    pub(super) initialize: bool,
    /// The id of a request (its response is owed on this POST's stream).
    pub(super) request: Option<RequestId>,
}

impl<'a> Asked<'a> {
    pub(super) fn of(message: &'a ClientJsonRpcMessage) -> Self {
        let ClientJsonRpcMessage::Request(request) = message else {
            return Self::default();
        };
        Self {
            tool: match &request.request {
                ClientRequest::CallToolRequest(call) => Some(call.params.name.as_ref()),
                _ => None,
            },
            initialize: matches!(&request.request, ClientRequest::InitializeRequest(_)),
            request: Some(request.id.clone()),
        }
    }
}

/// A POST's body, or the response that refuses it: over [`MAX_BODY`], unreadable, or
/// not arrived within [`BODY_TIMEOUT`] (the connection then closes).
pub(super) async fn read_body(body: Incoming) -> Result<Bytes, Response<Body>> {
    let collect = Limited::new(body, MAX_BODY).collect();
    match tokio::time::timeout(BODY_TIMEOUT, collect).await {
        Ok(Ok(body)) => Ok(body.to_bytes()),
        Ok(Err(_)) => Err(text(
            StatusCode::PAYLOAD_TOO_LARGE,
            "Payload Too Large (or the body could not be read)\n",
        )),
        Err(_) => {
            let mut response = text(
                StatusCode::REQUEST_TIMEOUT,
                "Request Timeout: the body did not arrive in time\n",
            );
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            Err(response)
        }
    }
}

/// The JSON-RPC message of a body, or the 400 that refuses it. Parsed here as well as
/// in rmcp (which answers an unparseable body with a bare 415 and no JSON-RPC error for
/// its id), to know what it asks for.
pub(super) fn parse_body(body: &[u8]) -> Result<ClientJsonRpcMessage, Box<Response<Body>>> {
    crate::jsonrpc::parse_message(body).map_err(|e| {
        Box::new(
            match crate::jsonrpc::failure_response(body, &e.to_string()) {
                Some(reply) => json(StatusCode::BAD_REQUEST, &reply),
                None => text(
                    StatusCode::BAD_REQUEST,
                    "Bad Request: the body is not a JSON-RPC message\n",
                ),
            },
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(body: &str) -> (Option<String>, bool, Option<RequestId>) {
        let message: ClientJsonRpcMessage = serde_json::from_str(body).unwrap();
        let asked = Asked::of(&message);
        (
            asked.tool.map(str::to_owned),
            asked.initialize,
            asked.request,
        )
    }

    #[test]
    fn the_front_reads_tool_calls_even_with_escaped_names_and_initializes_and_request_ids() {
        let one = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#;
        assert_eq!(
            asked(one),
            (Some("echo".into()), false, Some(RequestId::Number(1)))
        );
        // An escaped method name must not slip past the rate limit.
        let escaped = r#"{"jsonrpc":"2.0","id":"x","method":"tools\/call","params":{"name":"e"}}"#;
        assert_eq!(asked(escaped).0.as_deref(), Some("e"));
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
        assert_eq!(asked(init), (None, true, Some(RequestId::Number(0))));
        let notification = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert_eq!(asked(notification), (None, false, None));
    }
}
