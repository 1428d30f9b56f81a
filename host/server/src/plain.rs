//! Plain tools/calls: the ones a transport answers itself, without rmcp's session
//! worker.
//!
//! A call in a live handshake-era session that asks for nothing but its result (no
//! progress token, no `_meta`, a tool that cannot ask for approval) needs none of what
//! the session worker adds: both transports run it through the same
//! [`call_tool`](crate::handler::call_tool) as rmcp's handler (draining, selection,
//! audit, cancellation by request id and by session) and write its answer themselves.
//! Through the worker the same call crossed several tasks and channels (over HTTP it
//! was also encoded as an event stream only to be turned back into JSON); this path is
//! what brings the server's CPU per call towards the floor (issue 11).
//!
//! Everything else (initialize, tools/list, calls with progress or of terminal tools,
//! notifications) still goes through rmcp.

use super::Shared;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientJsonRpcMessage, ClientNotification,
    ClientRequest, RequestId, ServerJsonRpcMessage, ServerResult,
};

/// The parts of a tools/call that may take the plain path, taken out of its message;
/// the message given back when the call needs the session worker.
#[expect(
    clippy::result_large_err,
    reason = "the message goes back to the caller by value, once per request; boxing it would allocate for every other request"
)]
pub(crate) fn take(
    message: ClientJsonRpcMessage,
    shared: &Shared,
    tenant: &str,
) -> Result<(RequestId, CallToolRequestParams), ClientJsonRpcMessage> {
    let ClientJsonRpcMessage::Request(request) = message else {
        return Err(message);
    };
    // `_meta` carries a progress token or the 2026-07-28 request metadata, which rmcp
    // checks; a terminal tool may ask the client for approval over the session.
    let plain = match &request.request {
        ClientRequest::CallToolRequest(call) => {
            call.params.meta.is_none()
                && call.extensions.is_empty()
                && !shared.registry.uses_terminal(&call.params.name, tenant)
        }
        _ => false,
    };
    match request.request {
        ClientRequest::CallToolRequest(call) if plain => Ok((request.id, call.params)),
        other => Err(ClientJsonRpcMessage::request(other, request.id)),
    }
}

/// The request a `notifications/cancelled` names: plain calls must be cancelled by the
/// transport (rmcp, which gets the notification too, knows only its own).
pub(crate) fn cancelled_request(message: &ClientJsonRpcMessage) -> Option<&RequestId> {
    match message {
        ClientJsonRpcMessage::Notification(notification) => match &notification.notification {
            ClientNotification::CancelledNotification(cancelled) => {
                cancelled.params.request_id.as_ref()
            }
            _ => None,
        },
        _ => None,
    }
}

/// The JSON-RPC message answering request `id` with `result`, serialised (no line or
/// event framing).
pub(crate) fn response_bytes(
    id: &RequestId,
    result: Result<CallToolResponse, McpError>,
) -> Vec<u8> {
    let message = match result {
        Ok(response) => {
            // Plain calls exist only in the handshake era: their results have the
            // shape rmcp gives legacy peers.
            let mut result = ServerResult::from(response);
            result.strip_result_type_for_legacy_peer();
            result.strip_non_object_output_for_legacy_peer();
            ServerJsonRpcMessage::response(result, id.clone())
        }
        Err(error) => ServerJsonRpcMessage::error(error, Some(id.clone())),
    };
    serde_json::to_vec(&message).unwrap_or_else(|e| {
        // Not expected (the message is made of JSON values); the client still gets
        // an answer for its id.
        tracing::error!("could not serialise a tools/call response: {e}");
        let error = ServerJsonRpcMessage::error(
            McpError::internal_error("the response could not be serialised", None),
            Some(id.clone()),
        );
        serde_json::to_vec(&error).unwrap_or_default()
    })
}
