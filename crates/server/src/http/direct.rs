//! Plain tools/calls answered by the front itself, without rmcp's session worker.
//!
//! A call in a live legacy session that asks for nothing but its result (no progress
//! token, no `_meta`, a client that takes JSON, a tool that cannot ask for approval)
//! needs none of what the session worker adds: it is run here through the same
//! [`call_tool`] as rmcp's handler (draining, selection, audit, cancellation by
//! request id and by session) and answered as plain JSON. Through the worker the same
//! call crossed five tasks and channels and was encoded as an event stream only to be
//! turned back into JSON; this path is what brings the server's CPU per HTTP call
//! towards the floor (issue 11).
//!
//! Everything else (initialize, tools/list, calls with progress or of terminal tools,
//! notifications, GET streams) still goes through rmcp.

use super::json_reply::JSON_WAIT;
use super::{Body, McpServer};
use crate::handler::{CallSite, call_tool};
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientJsonRpcMessage, ClientRequest, RequestId,
    ServerJsonRpcMessage, ServerResult,
};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

/// How often a call still running after [`JSON_WAIT`] sends an SSE comment, so the
/// client and any proxy in between see the connection is alive.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The parts of a tools/call this path answers, taken out of its message; `None` (the
/// message given back) when the call needs the session worker.
#[expect(
    clippy::result_large_err,
    reason = "the message goes back to the caller by value, once per request; boxing it would allocate for every other request"
)]
pub(super) fn plain_call(
    message: ClientJsonRpcMessage,
    server: &McpServer,
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
                && server
                    .registry()
                    .grants_for(&call.params.name, tenant)
                    .is_none_or(|grants| !grants.terminal)
        }
        _ => false,
    };
    match request.request {
        ClientRequest::CallToolRequest(call) if plain => Ok((request.id, call.params)),
        other => Err(ClientJsonRpcMessage::request(other, request.id)),
    }
}

/// Runs the call and answers it: plain JSON when it ends within [`JSON_WAIT`], else an
/// event stream of keep-alive comments and then the response. A client that goes away
/// (the response dropped) cancels the call.
pub(super) async fn answer(
    server: &McpServer,
    tenant: Arc<str>,
    session: String,
    id: RequestId,
    params: CallToolRequestParams,
    sending: tokio_util::task::task_tracker::TaskTrackerToken,
) -> Response<Body> {
    let shared = Arc::clone(&server.shared);
    let site = CallSite {
        tenant,
        session,
        request: id.clone(),
        progress: None,
        round_wanted: false,
        peer: None,
        cancelled: None,
    };
    let call = {
        let shared = Arc::clone(&shared);
        async move { call_tool(&shared, params, site).await }
    };
    let mut call = Box::pin(shared.calls.track_future(call));
    if let Ok(result) = tokio::time::timeout(JSON_WAIT, &mut call).await {
        drop(sending);
        return super::json_bytes(StatusCode::OK, message_bytes(&id, result));
    }
    // A long call: stream, so the client sees keep-alives while it runs.
    let (sender, receiver) = tokio::sync::mpsc::channel::<Bytes>(2);
    tokio::spawn(async move {
        let _sending = sending;
        let mut ticks = tokio::time::interval(KEEP_ALIVE);
        ticks.tick().await;
        loop {
            tokio::select! {
                result = &mut call => {
                    let mut event = b"data: ".to_vec();
                    event.extend_from_slice(&message_bytes(&id, result));
                    event.extend_from_slice(b"\n\n");
                    let _ = sender.send(Bytes::from(event)).await;
                    return;
                }
                _ = ticks.tick() => {
                    if sender.send(Bytes::from_static(b":\n\n")).await.is_err() {
                        break;
                    }
                }
                () = sender.closed() => break,
            }
        }
        // The client is gone: dropping the call cancels it.
        tracing::info!(request = %id, "the client went away: its call is cancelled");
    });
    let mut response = Response::new(ChannelBody(receiver).boxed());
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The JSON-RPC message answering request `id` with `result`, serialised.
fn message_bytes(id: &RequestId, result: Result<CallToolResponse, McpError>) -> Vec<u8> {
    let message = match result {
        Ok(response) => {
            // Sessions exist only in the handshake era: its results have the shape
            // rmcp gives legacy peers.
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

/// A response body fed by a channel; dropping it closes the channel.
struct ChannelBody(tokio::sync::mpsc::Receiver<Bytes>);

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        self.get_mut()
            .0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|bytes| Ok(hyper::body::Frame::data(bytes))))
    }
}
