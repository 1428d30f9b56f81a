//! In-session responses as plain JSON.
//!
//! rmcp answers every request of a legacy (`Mcp-Session-Id`) session with an SSE stream,
//! even when the only thing on it is the result. Clients then cannot reuse the
//! connection cheaply (the official Python SDK opens a new one per call), and both
//! sides pay for the event framing. The streamable HTTP spec lets a server answer a
//! request with `application/json` instead, when the client accepts it.
//!
//! So the front reads the start of rmcp's stream: when the first message on it is the
//! request's response, the client gets that message as a JSON body. When the first
//! message is anything else (a progress notification, an elicitation request), or
//! nothing came within [`JSON_WAIT`] (a long call, whose client should see the
//! stream's keep-alive comments rather than a silent connection), the stream is passed
//! on unchanged, the bytes already read first.
//!
//! The SSE scan is hand-written rather than `sse-stream`'s parser: the fallback must
//! replay the raw bytes exactly (comments included), and only the first event's data
//! is needed.

use super::Body;
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Frame;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Response, StatusCode};
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// How long the front waits for a call's first message before it streams instead:
/// short calls (nearly all) get JSON; a long one gets the stream at once after this,
/// with rmcp's keep-alives, so the client's read timeout never fires on a quiet line.
pub const JSON_WAIT: Duration = Duration::from_secs(5);

/// Most bytes read from the stream while looking for the first message. A result
/// bigger than this is streamed (the bytes read replayed first): the front never
/// holds more than this for one response.
const MAX_BUFFER: usize = 16 * 1024 * 1024;

/// Whether a request's `Accept` header takes `application/json` (the spec has clients
/// accept both it and `text/event-stream` on every POST).
pub fn accepts_json(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|range| {
            let media = range.split(';').next().unwrap_or("").trim();
            media.eq_ignore_ascii_case("application/json") || media == "*/*"
        })
}

/// `response` (rmcp's answer to one request of a session) as a JSON response when its
/// stream begins with the request's response within `wait` (the front uses
/// [`JSON_WAIT`]); otherwise the same stream. `answered` is told when the body's
/// message was taken as the whole answer (the rest of the stream is never read).
pub async fn prefer_json<B>(
    response: Response<B>,
    wait: Duration,
    answered: impl FnOnce(&mut B),
) -> Response<Body>
where
    B: hyper::body::Body<Data = Bytes, Error = Infallible> + Send + Sync + Unpin + 'static,
{
    if response.status() != StatusCode::OK || !is_event_stream(response.headers()) {
        return response.map(BodyExt::boxed);
    }
    let (mut parts, mut body) = response.into_parts();
    let mut read = BytesMut::new();
    let deadline = tokio::time::Instant::now() + wait;
    let first = loop {
        let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
            Ok(Some(Ok(frame))) => frame,
            // The stream ended, or a long call: pass on what there is.
            Ok(None | Some(Err(_))) | Err(_) => break None,
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        read.extend_from_slice(&data);
        match first_message(&read) {
            Scan::Message(range) => break Some(range),
            Scan::NotYet if read.len() <= MAX_BUFFER => {}
            Scan::NotYet | Scan::Other => break None,
        }
    };
    let read = read.freeze();
    match first.filter(|range| is_response(&read[range.clone()])) {
        Some(range) => {
            let json = read.slice(range);
            answered(&mut body);
            parts.headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            parts.headers.remove(header::CONTENT_LENGTH);
            parts.headers.remove(header::TRANSFER_ENCODING);
            // The rest of the stream is not read: after a request's response, rmcp's
            // stream for it carries nothing more. It stays alive with the body (it
            // holds the front's bookkeeping) until the JSON was sent.
            Response::from_parts(
                parts,
                JsonBody {
                    json: Some(json),
                    _stream: body,
                }
                .boxed(),
            )
        }
        None => Response::from_parts(
            parts,
            Replay {
                head: (!read.is_empty()).then_some(read),
                rest: body,
            }
            .boxed(),
        ),
    }
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("text/event-stream"))
}

/// Where the scan of the stream's first bytes stands.
#[derive(Debug, PartialEq, Eq)]
enum Scan {
    /// The first event with data is complete: its data is at this range (one `data:`
    /// line; the one form rmcp writes).
    Message(std::ops::Range<usize>),
    /// No complete event with data yet.
    NotYet,
    /// The first event with data is not in the one-line form: stream it.
    Other,
}

/// The data of the first event in `bytes` that has any. Events end at a blank line;
/// comments (`:` keep-alives) and data-less events (priming: `id`/`retry` and an empty
/// `data:`) are skipped.
fn first_message(bytes: &[u8]) -> Scan {
    let mut data: Option<std::ops::Range<usize>> = None;
    let mut lines = 0usize;
    let mut at = 0;
    while let Some(end) = bytes[at..].iter().position(|b| *b == b'\n') {
        let line_end = at + end;
        let line = &bytes[at..line_end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let next = line_end + 1;
        if line.is_empty() {
            if let Some(range) = data.take() {
                return if lines == 1 {
                    Scan::Message(range)
                } else {
                    Scan::Other
                };
            }
            lines = 0;
        } else if let Some(value) = line.strip_prefix(b"data:") {
            let skip = usize::from(value.first() == Some(&b' '));
            let start = at + 5 + skip;
            let stop = at + line.len();
            if start < stop {
                lines += 1;
                data = Some(start..stop);
            }
        }
        at = next;
    }
    Scan::NotYet
}

/// Whether a JSON-RPC message is a response (a result or an error, no method): the
/// request's own answer, since a request's stream carries nothing else of that kind.
fn is_response(message: &[u8]) -> bool {
    /// The members that tell a response from a request or notification; the values
    /// are skipped, not built.
    #[derive(serde::Deserialize)]
    struct Shape {
        method: Option<serde::de::IgnoredAny>,
        result: Option<serde::de::IgnoredAny>,
        error: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_slice::<Shape>(message)
        .is_ok_and(|s| s.method.is_none() && (s.result.is_some() || s.error.is_some()))
}

/// One JSON message, keeping the stream it came from alive until it was sent.
struct JsonBody<B> {
    json: Option<Bytes>,
    _stream: B,
}

impl<B: Unpin> hyper::body::Body for JsonBody<B> {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.get_mut().json.take().map(|json| Ok(Frame::data(json))))
    }

    fn is_end_stream(&self) -> bool {
        self.json.is_none()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        let len = self.json.as_ref().map_or(0, Bytes::len);
        hyper::body::SizeHint::with_exact(len as u64)
    }
}

/// The bytes already read from a stream, then the rest of it.
struct Replay<B> {
    head: Option<Bytes>,
    rest: B,
}

impl<B> hyper::body::Body for Replay<B>
where
    B: hyper::body::Body<Data = Bytes, Error = Infallible> + Unpin,
{
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        if let Some(head) = this.head.take() {
            return Poll::Ready(Some(Ok(Frame::data(head))));
        }
        Pin::new(&mut this.rest).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.head.is_none() && self.rest.is_end_stream()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic, reason = "tests")]
    use super::*;
    use http_body_util::Full;
    use tokio::sync::mpsc;

    /// A stream body fed through a channel, as rmcp's is by its session.
    struct Channel(mpsc::Receiver<Bytes>);

    impl hyper::body::Body for Channel {
        type Data = Bytes;
        type Error = Infallible;

        fn poll_frame(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            self.get_mut()
                .0
                .poll_recv(cx)
                .map(|chunk| chunk.map(|c| Ok(Frame::data(c))))
        }
    }

    fn stream() -> (mpsc::Sender<Bytes>, Response<Channel>) {
        let (sender, receiver) = mpsc::channel(16);
        let mut response = Response::new(Channel(receiver));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        (sender, response)
    }

    fn sse(chunks: &[&str]) -> Response<Channel> {
        let (sender, response) = stream();
        for chunk in chunks {
            sender.try_send(Bytes::from(chunk.to_string())).unwrap();
        }
        response
    }

    async fn answer(response: Response<Channel>) -> (String, String) {
        let response = prefer_json(response, JSON_WAIT, |_| {}).await;
        let kind = response.headers()[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .to_owned();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (kind, String::from_utf8(body.to_vec()).unwrap())
    }

    const RESULT: &str = r#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#;

    #[tokio::test]
    async fn a_stream_whose_first_message_is_the_response_becomes_json() {
        // rmcp's priming event, a keep-alive comment, then the result, split anywhere.
        let (kind, body) = answer(sse(&[
            "id: 0\nretry: 3000\ndata:\n\n:\n\ndata: ",
            r#"{"jsonrpc":"2.0","id":3,"#,
            r#""result":{"content":[]}}"#,
            "\n\n",
        ]))
        .await;
        assert_eq!(kind, "application/json");
        assert_eq!(body, RESULT);
        let (_, body) = answer(sse(&[
            "data: {\"jsonrpc\":\"2.0\",\"id\":\"a\",\"error\":{\"code\":-32602,\"message\":\"x\"}}\r\n\r\n",
        ]))
        .await;
        assert!(body.starts_with('{') && body.contains("-32602"), "{body}");
    }

    #[tokio::test]
    async fn a_stream_that_begins_with_anything_else_is_passed_on_unchanged() {
        let progress = r#"data: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#;
        let chunks = [
            "id: 0\ndata:\n\n".to_owned(),
            format!("{progress}\n\n"),
            format!("data: {RESULT}\n\n"),
        ];
        let (kind, body) = answer(sse(&chunks.each_ref().map(String::as_str))).await;
        assert_eq!(kind, "text/event-stream");
        assert_eq!(body, chunks.concat());
        // A stream that ends before any message, and one whose event is not one line.
        for chunks in [&["id: 0\ndata:\n\n"][..], &["data: {\ndata: }\n\n"][..]] {
            let (sender, response) = stream();
            for chunk in chunks {
                sender
                    .try_send(Bytes::from_static(chunk.as_bytes()))
                    .unwrap();
            }
            drop(sender);
            let (kind, body) = answer(response).await;
            assert_eq!(kind, "text/event-stream");
            assert_eq!(body, chunks.concat());
        }
    }

    #[tokio::test]
    async fn other_responses_are_left_alone() {
        let mut response = Response::new(Full::new(Bytes::from_static(b"{}")));
        *response.status_mut() = StatusCode::ACCEPTED;
        let response = prefer_json(response, JSON_WAIT, |_| panic!("not an answer")).await;
        assert_eq!(response.status(), StatusCode::ACCEPTED);
    }

    #[tokio::test]
    async fn a_call_slower_than_the_wait_is_streamed() {
        let (sender, response) = stream();
        sender
            .send(Bytes::from_static(b"id: 0\ndata:\n\n"))
            .await
            .unwrap();
        // The result is sent only after the wait ran out.
        let wait = Duration::from_millis(20);
        let response = prefer_json(response, wait, |_| panic!("not an answer")).await;
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "text/event-stream"
        );
        let late = format!("data: {RESULT}\n\n");
        sender.send(Bytes::from(late.clone())).await.unwrap();
        drop(sender);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(body, format!("id: 0\ndata:\n\n{late}").as_bytes());
    }

    #[test]
    fn accept_headers_are_read_as_media_ranges() {
        let accepts = |value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::ACCEPT, HeaderValue::from_static(value));
            accepts_json(&headers)
        };
        assert!(accepts("application/json, text/event-stream"));
        assert!(accepts("text/event-stream;q=1, Application/JSON;q=0.5"));
        assert!(accepts("*/*"));
        assert!(!accepts("text/event-stream"));
        assert!(!accepts("application/jsonx"));
        assert!(!accepts_json(&HeaderMap::new()));
    }

    #[test]
    fn the_scan_finds_only_complete_one_line_messages() {
        assert_eq!(first_message(b"data: {}\n"), Scan::NotYet);
        assert_eq!(first_message(b"data: {}\n\n"), Scan::Message(6..8));
        assert_eq!(first_message(b"data:{}\n\n"), Scan::Message(5..7));
        assert_eq!(first_message(b":ping\n\nid: 1\ndata:\n\n"), Scan::NotYet);
        assert_eq!(first_message(b"data: a\ndata: b\n\n"), Scan::Other);
        assert!(!is_response(br#"{"jsonrpc":"2.0","method":"x","id":1}"#));
        assert!(!is_response(b"not json"));
        assert!(is_response(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
    }
}
