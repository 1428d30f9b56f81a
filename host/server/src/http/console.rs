//! The operator console: a small web page at [`CONSOLE_PATH`] for the operator to
//! answer pending approvals, read the audit log's newest records and see which tools
//! each tenant gets, plus the admin JSON endpoints it reads ([`AUDIT_PATH`],
//! [`TOOLS_PATH`]; approvals are [`super::APPROVALS_PATH`]).
//!
//! The page holds no data: its HTML, CSS and JavaScript are compiled into the binary
//! and are the same for everyone. The operator types the admin token into its login
//! form; the script keeps it in `sessionStorage` (gone when the tab closes) and sends
//! it as `Authorization: Bearer …` with every JSON request, so every datum comes
//! through the admin check. Nothing is served from elsewhere (no CDN, no web fonts),
//! and the `Content-Security-Policy` allows only this server's own script and style
//! files: no inline script, no `eval`, no frames, no form posts, no other origins.
//!
//! Like `/approvals`, all of it is off (404) when the policy has no
//! `[server] admin_token_sha256`.

use super::{Body, McpServer, json, text};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// Where the console page is served (`/` redirects here when the console is on).
pub const CONSOLE_PATH: &str = "/console";

/// The console's script and style sheet, as paths of their own so the page needs no
/// inline code.
const SCRIPT_PATH: &str = "/console/console.js";
const STYLE_PATH: &str = "/console/console.css";

/// `GET`: the audit log's newest records, newest first (`?limit=N`, 1 to
/// [`MAX_AUDIT_EVENTS`]).
pub const AUDIT_PATH: &str = "/admin/audit";

/// `GET`: every tenant's tools, whether tools/list offers each, and why not.
pub const TOOLS_PATH: &str = "/admin/tools";

/// Most audit records one answer carries: a screenful for a human, and a bound on the
/// answer's size together with [`crate::audit::MAX_TAIL_BYTES`].
pub const MAX_AUDIT_EVENTS: usize = 100;

/// Most tenants, and tools per tenant, in one tools answer (the rest are counted in
/// `truncated`): far more than a console shows usefully, and a bound on the answer.
const MAX_TENANTS: usize = 200;
const MAX_TOOLS: usize = 500;

const HTML: &str = include_str!("console/index.html");
const SCRIPT: &str = include_str!("console/console.js");
const STYLE: &str = include_str!("console/console.css");

/// The page may load only its own script and style sheet and talk only to this
/// origin; nothing may frame it, and it posts no forms (the script sends JSON).
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
                   connect-src 'self'; img-src 'self'; base-uri 'none'; \
                   form-action 'none'; frame-ancestors 'none'";

/// Whether `path` is one of the console's (page, assets, admin JSON endpoints).
pub(super) fn is_console_path(path: &str) -> bool {
    path == "/"
        || path == CONSOLE_PATH
        || path.starts_with("/console/")
        || path == AUDIT_PATH
        || path == TOOLS_PATH
}

/// Serves the console's paths for `server` (whose policy has an admin token, or the
/// answer is 404).
pub(super) async fn route(
    server: &McpServer,
    request: Request<hyper::body::Incoming>,
) -> Response<Body> {
    let path = request.uri().path().to_owned();
    let admin = path == AUDIT_PATH || path == TOOLS_PATH;
    if server.shared.broker.is_none() {
        return match path.as_str() {
            "/" => text(
                StatusCode::NOT_FOUND,
                "Not Found: the MCP endpoint is /mcp\n",
            ),
            _ if admin => error(StatusCode::NOT_FOUND, CONSOLE_OFF),
            _ => text(
                StatusCode::NOT_FOUND,
                &format!("Not Found: {CONSOLE_OFF}\n"),
            ),
        };
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut response = if admin {
            error(StatusCode::METHOD_NOT_ALLOWED, "only GET is served here")
        } else {
            text(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed\n")
        };
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    match path.as_str() {
        "/" | "/console/" => {
            let mut response = text(StatusCode::SEE_OTHER, "See /console\n");
            response
                .headers_mut()
                .insert(header::LOCATION, HeaderValue::from_static(CONSOLE_PATH));
            response
        }
        CONSOLE_PATH => asset(HTML, "text/html; charset=utf-8"),
        SCRIPT_PATH => asset(SCRIPT, "text/javascript; charset=utf-8"),
        STYLE_PATH => asset(STYLE, "text/css; charset=utf-8"),
        AUDIT_PATH | TOOLS_PATH => {
            let authorization = request
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok());
            if let Err(failure) = server.shared.auth.admin(authorization) {
                let mut response = super::reply::unauthorized_admin(failure);
                let message = match failure {
                    crate::auth::AuthFailure::Missing => {
                        "send the admin token as Authorization: Bearer <token>"
                    }
                    crate::auth::AuthFailure::Unknown => "that is not an admin token",
                };
                *response.body_mut() = json_body(&json!({ "error": message }));
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                return api_headers(response);
            }
            if path == AUDIT_PATH {
                audit(server, request.uri().query()).await
            } else {
                tools(server).await
            }
        }
        _ => text(
            StatusCode::NOT_FOUND,
            "Not Found: the console is at /console\n",
        ),
    }
}

/// What the console's paths say when the policy has no admin token.
const CONSOLE_OFF: &str =
    "the operator console is off (set [server] admin_token_sha256 in the policy)";

/// A static file of the console, with the headers that keep it from being reused as
/// something else (`nosniff`), framed, or run with code from elsewhere (the CSP).
/// `no-cache`: a browser may keep it but asks again, so an upgraded server's console
/// is used at once.
fn asset(body: &'static str, content_type: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(body.as_bytes())).boxed());
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    security_headers(response)
}

/// Headers every console and admin answer carries.
fn security_headers(mut response: Response<Body>) -> Response<Body> {
    let headers = response.headers_mut();
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// An admin JSON answer: never stored by a browser or proxy (it carries commands and
/// audit records), never sniffed as anything but JSON.
pub(super) fn api_headers(mut response: Response<Body>) -> Response<Body> {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    security_headers(response)
}

fn json_body(value: &Value) -> Body {
    Full::new(Bytes::from(value.to_string())).boxed()
}

/// `{"error": message}` with `status`.
fn error(status: StatusCode, message: &str) -> Response<Body> {
    api_headers(json(status, &json!({ "error": message })))
}

/// `GET /admin/audit[?limit=N]`.
async fn audit(server: &McpServer, query: Option<&str>) -> Response<Body> {
    let mut limit = MAX_AUDIT_EVENTS;
    for pair in query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match (key, value.parse::<usize>()) {
            ("limit", Ok(n)) if (1..=MAX_AUDIT_EVENTS).contains(&n) => limit = n,
            ("limit", _) => {
                return error(
                    StatusCode::BAD_REQUEST,
                    &format!("limit must be a whole number from 1 to {MAX_AUDIT_EVENTS}"),
                );
            }
            _ => {
                return error(
                    StatusCode::BAD_REQUEST,
                    "unknown query parameter: this endpoint takes only limit",
                );
            }
        }
    }
    let Some(log) = server.audit().cloned() else {
        return api_headers(json(
            StatusCode::OK,
            &json!({
                "configured": false,
                "message": "no audit log is configured (start the server with --audit FILE or set [server] audit_file)",
                "events": [],
            }),
        ));
    };
    // File reads stay off the async workers.
    let read = tokio::task::spawn_blocking(move || (log.tail(limit), log.path().to_owned())).await;
    match read {
        Ok((Ok(events), path)) => api_headers(json(
            StatusCode::OK,
            &json!({
                "configured": true,
                "file": path.display().to_string(),
                "limit": limit,
                "events": events,
            }),
        )),
        Ok((Err(e), _)) => {
            tracing::warn!("the console could not read the audit log: {e}");
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("the audit log could not be read: {e}"),
            )
        }
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("reading the audit log failed: {e}"),
        ),
    }
}

/// `GET /admin/tools`: for each tenant that can reach this server, every tool it may
/// see with its availability for it, and whether its tools/list offers the tool —
/// computed by the same call as tools/list itself.
async fn tools(server: &McpServer) -> Response<Body> {
    let shared = server.shared.clone();
    let answer = tokio::task::spawn_blocking(move || {
        let registry = &shared.registry;
        // Who can call over HTTP: without tokens every request is the default tenant;
        // with tokens, those that have one (the operator's, when `hermetic serve` made
        // it), then the policy's tenants.
        let mut tenants: Vec<String> = shared.auth.tenant_ids().map(str::to_owned).collect();
        for id in registry.policy().tenants.keys() {
            if !tenants.contains(id) {
                tenants.push(id.clone());
            }
        }
        let truncated_tenants = tenants.len().saturating_sub(MAX_TENANTS);
        tenants.truncate(MAX_TENANTS);
        let every: Vec<String> = registry.names();
        let rows: Vec<Value> = tenants
            .iter()
            .map(|tenant| {
                let listed: BTreeSet<String> = shared
                    .listed_definitions(tenant)
                    .as_array()
                    .map(|defs| {
                        defs.iter()
                            .filter_map(|d| d["function"]["name"].as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default();
                let mut seen = registry.tools_for(tenant);
                let truncated = seen.len().saturating_sub(MAX_TOOLS);
                seen.truncate(MAX_TOOLS);
                let visible: BTreeSet<&str> = seen.iter().map(|t| t.name.as_str()).collect();
                let hidden: Vec<&String> = every
                    .iter()
                    .filter(|name| !visible.contains(name.as_str()))
                    .take(MAX_TOOLS)
                    .collect();
                let tools: Vec<Value> = seen
                    .iter()
                    .map(|t| {
                        let served = shared.may_call(&t.name);
                        json!({
                            "name": t.name,
                            "toolset": t.toolset,
                            "emoji": t.emoji,
                            "available": t.available,
                            "reason": t.reason,
                            "served": served,
                            "listed": listed.contains(&t.name),
                        })
                    })
                    .collect();
                json!({
                    "tenant": tenant,
                    "tools": tools,
                    "hidden": hidden,
                    "truncated": truncated,
                })
            })
            .collect();
        json!({
            "requires_tokens": shared.auth.requires_tokens(),
            "tenants": rows,
            "truncated": truncated_tenants,
        })
    })
    .await;
    match answer {
        Ok(answer) => api_headers(json(StatusCode::OK, &answer)),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("listing the tools failed: {e}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_has_no_inline_script_or_style_and_loads_only_its_own_files() {
        // The CSP would block them; this says so before a browser does.
        assert!(
            !HTML.contains("<script>") && !HTML.contains("style="),
            "{HTML}"
        );
        assert!(HTML.contains(&format!("src=\"{SCRIPT_PATH}\"")));
        assert!(HTML.contains(&format!("href=\"{STYLE_PATH}\"")));
        for text in [HTML, SCRIPT, STYLE] {
            assert!(!text.contains("http://") && !text.contains("https://"));
        }
        // Data reaches the page as text, never as markup.
        assert!(!SCRIPT.contains("innerHTML"));
    }

    #[test]
    fn console_paths_are_recognised_and_others_are_not() {
        for path in [
            "/",
            "/console",
            "/console/console.js",
            "/admin/audit",
            "/admin/tools",
        ] {
            assert!(is_console_path(path), "{path}");
        }
        for path in [
            "/mcp",
            "/approvals",
            "/admin",
            "/consoles",
            "/admin/tools/x",
        ] {
            assert!(!is_console_path(path), "{path}");
        }
    }
}
