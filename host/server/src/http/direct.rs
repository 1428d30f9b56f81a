//! Plain tools/calls ([`crate::plain`]) answered by the HTTP front itself, for a
//! client that takes JSON in a live session: plain JSON when the call ends within
//! [`JSON_WAIT`], else an event stream of keep-alives and then the response.

use super::json_reply::JSON_WAIT;
use super::{Body, McpServer};
use crate::handler::{CallSite, call_tool};
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use rmcp::model::{CallToolRequestParams, RequestId};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

/// How often a call still running after [`JSON_WAIT`] sends an SSE comment, so the
/// client and any proxy in between see the connection is alive.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

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
    // No cancel token: the client going away drops the response, and with it the call.
    let site = CallSite::plain(tenant, session, id.clone(), None);
    let call = {
        let shared = Arc::clone(&shared);
        async move { call_tool(&shared, params, site).await }
    };
    let mut call = Box::pin(shared.calls.track_future(call));
    if let Ok(result) = tokio::time::timeout(JSON_WAIT, &mut call).await {
        drop(sending);
        return super::json_bytes(StatusCode::OK, crate::plain::response_bytes(&id, result));
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
                    event.extend_from_slice(&crate::plain::response_bytes(&id, result));
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
