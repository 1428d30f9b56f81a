//! The operator's approvals endpoint: `GET /approvals` lists what waits for an
//! answer, `POST /approvals/{id}` answers it. It takes an admin token.

use super::reply::{json, text, unauthorized_admin};
use super::{APPROVALS_PATH, Body, Front, MAX_ANSWER_BODY, console};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

impl Front {
    pub(super) async fn approvals(&self, request: Request<Incoming>) -> Response<Body> {
        let Some(broker) = &self.server.shared.broker else {
            return text(
                StatusCode::NOT_FOUND,
                "Not Found: the approvals endpoint is off (set [server] admin_token_sha256)\n",
            );
        };
        let authorization = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        if let Err(failure) = self.server.shared.auth.admin(authorization) {
            return unauthorized_admin(failure);
        }
        let path = request.uri().path().to_owned();
        match (request.method().clone(), path.strip_prefix("/approvals/")) {
            (Method::GET, None) => console::api_headers(json(
                StatusCode::OK,
                &serde_json::json!(broker.list_all().await),
            )),
            (Method::POST, Some(id)) => {
                let Ok(id) = id.parse::<u64>() else {
                    return text(StatusCode::NOT_FOUND, "Not Found: no such approval\n");
                };
                let body = match Limited::new(request.into_body(), MAX_ANSWER_BODY)
                    .collect()
                    .await
                {
                    Ok(body) => body.to_bytes(),
                    Err(_) => return text(StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large\n"),
                };
                #[derive(serde::Deserialize)]
                struct Body {
                    answer: String,
                }
                let answer = serde_json::from_slice::<Body>(&body)
                    .ok()
                    .and_then(|b| crate::approvals::parse_choice(&b.answer));
                let Some(answer) = answer else {
                    return text(
                        StatusCode::BAD_REQUEST,
                        "Bad Request: send {\"answer\": \"once\" | \"session\" | \"always\" | \"deny\"}\n",
                    );
                };
                // Answered only once the gate has acted on it: an acknowledged
                // "always" is on disk.
                match broker.answer_settled(id, answer).await {
                    Ok(settled) => console::api_headers(json(
                        StatusCode::OK,
                        &serde_json::json!({
                            "id": id, "answer": answer,
                            "outcome": settled.outcome, "message": settled.message,
                        }),
                    )),
                    Err(e) => text(e.status(), &format!("{e}\n")),
                }
            }
            _ => {
                let mut response = text(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed\n");
                let allow = if path == APPROVALS_PATH {
                    "GET"
                } else {
                    "POST"
                };
                response
                    .headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static(allow));
                response
            }
        }
    }
}
