//! The front's own answers: plain text and JSON responses, 401 with its challenge,
//! 429 and 503 with `Retry-After`.

use super::Body;
use crate::auth::AuthFailure;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use std::time::Duration;

/// 429, with `Retry-After` when the wait is known.
pub(super) fn too_many_requests(body: &str, wait: Option<Duration>) -> Response<Body> {
    let mut response = text(StatusCode::TOO_MANY_REQUESTS, body);
    if let Some(wait) = wait {
        retry_after(&mut response, wait);
    }
    response
}

/// 503 with `Retry-After`: the server is too busy for this request now.
pub(super) fn service_unavailable(body: &str, wait: Duration) -> Response<Body> {
    let mut response = text(StatusCode::SERVICE_UNAVAILABLE, body);
    retry_after(&mut response, wait);
    response
}

/// Sets `Retry-After` to `wait` in whole seconds, at least 1.
fn retry_after(response: &mut Response<Body>, wait: Duration) {
    let retry = wait.as_secs_f64().ceil().max(1.0) as u64;
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry));
}

/// A plain-text response.
pub(super) fn text(status: StatusCode, body: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_owned())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// A JSON response.
pub(super) fn json(status: StatusCode, value: &serde_json::Value) -> Response<Body> {
    json_bytes(status, value.to_string().into_bytes())
}

/// A response of JSON already serialised.
pub(super) fn json_bytes(status: StatusCode, body: Vec<u8>) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// 401 with the `WWW-Authenticate` challenge RFC 6750 asks for.
pub(super) fn unauthorized(failure: AuthFailure) -> Response<Body> {
    challenge(failure, failure.hint())
}

/// 401 from an endpoint that takes an admin token (its hint says which token that is).
pub(super) fn unauthorized_admin(failure: AuthFailure) -> Response<Body> {
    challenge(failure, failure.admin_hint())
}

/// 401 saying `hint`, with the challenge for `failure`.
fn challenge(failure: AuthFailure, hint: &str) -> Response<Body> {
    let challenge = match failure {
        AuthFailure::Missing => "Bearer realm=\"hermetic\"",
        AuthFailure::Unknown => "Bearer realm=\"hermetic\", error=\"invalid_token\"",
    };
    let mut response = text(StatusCode::UNAUTHORIZED, hint);
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(challenge),
    );
    response
}
