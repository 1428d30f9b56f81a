//! Tool `web_extract`: fetch up to five web pages and return their readable text, in the
//! shape of Hermes's `web_extract` (`{"results": [{"url", "title", "content", "error"}]}`).
//!
//! Hermes sends pages to an extraction service and summarises long ones with an LLM;
//! here the page is fetched through the host's wasi:http (only destinations the operator
//! grants are reachable) and HTML is reduced to text in the sandbox, capped per page.
//! The declaration asks for any http(s) host and port: the operator's grant decides
//! which hosts that really is, and with no grant every fetch is refused.

mod html;

use hermetic_sdk::{Context, Tool, ToolError, Value, http, json};

/// URLs per call, as in Hermes.
const MAX_URLS: usize = 5;
/// Bytes read per page before giving up on it (the host may cap lower).
const MAX_PAGE_BYTES: usize = 2 * 1024 * 1024;
/// Characters of text kept per page.
const MAX_CONTENT_CHARS: usize = 20_000;

#[derive(serde::Deserialize)]
struct Args {
    #[serde(default)]
    urls: Vec<String>,
}

struct WebExtract;

impl Tool for WebExtract {
    type Args = Args;

    fn schema() -> Value {
        json!({
            "name": "web_extract",
            "description": "Extract content from web page URLs. Returns each page's title and readable text (HTML reduced to text, long pages truncated). Use this to read pages found by search or given by the user.",
            "parameters": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "urls": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "List of URLs to extract content from (max 5 URLs per call)",
                        "maxItems": MAX_URLS
                    }
                },
                "required": ["urls"]
            },
            "output_schema": {
                "type": "object",
                "properties": {
                    "results": {"type": "array", "items": {
                        "type": "object",
                        "properties": {
                            "url": {"type": "string"},
                            "title": {"type": "string"},
                            "content": {"type": "string"},
                            "error": {"type": ["string", "null"]},
                            "truncated": {"type": "boolean"}
                        }
                    }}
                },
                "required": ["results"]
            }
        })
    }

    fn handle(args: Args, ctx: &Context) -> hermetic_sdk::Result<Value> {
        if args.urls.is_empty() {
            return Err(ToolError::new("urls must name at least one URL"));
        }
        if args.urls.len() > MAX_URLS {
            return Err(ToolError::new(format!(
                "at most {MAX_URLS} URLs per call, got {}",
                args.urls.len()
            )));
        }
        let total = args.urls.len() as u64;
        let mut results = Vec::with_capacity(args.urls.len());
        for (i, url) in args.urls.iter().enumerate() {
            ctx.progress(i as u64, Some(total), url);
            results.push(match http::get(url.trim(), MAX_PAGE_BYTES) {
                Ok(page) => extract(&page),
                Err(e) => json!({"url": url, "title": "", "content": "", "error": e.to_string()}),
            });
        }
        let mut out = json!({ "results": results });
        // Every page failed: say so at the top, so that callers (and `hermetic call`'s
        // exit code) see a failed call, not a list of empty pages.
        let failures: Vec<&str> = results_errors(&out);
        if failures.len() as u64 == total {
            out["error"] = json!(failures.join("; "));
        }
        Ok(out)
    }
}

/// The `error` text of every entry that has one.
fn results_errors(out: &Value) -> Vec<&str> {
    out["results"]
        .as_array()
        .map(|entries| entries.iter().filter_map(|e| e["error"].as_str()).collect())
        .unwrap_or_default()
}

/// One page's entry: HTML reduced to text, other text passed through, binary refused.
fn extract(page: &http::Response) -> Value {
    let content_type = page
        .header("content-type")
        .unwrap_or("")
        .to_ascii_lowercase();
    let body = String::from_utf8_lossy(&page.body);
    let error = if (200..300).contains(&page.status) {
        Value::Null
    } else {
        json!(format!("HTTP {}", page.status))
    };
    let looks_html = content_type.contains("html")
        || (content_type.is_empty() && body.trim_start().starts_with('<'));
    let (title, text) = if looks_html {
        html::to_text(&body)
    } else if content_type.is_empty()
        || content_type.starts_with("text/")
        || content_type.contains("json")
        || content_type.contains("xml")
    {
        (String::new(), body.into_owned())
    } else {
        return json!({
            "url": page.url, "title": "", "content": "",
            "error": format!("not a text page ({content_type})"),
        });
    };
    let (content, truncated) = cap(&text, MAX_CONTENT_CHARS);
    let mut entry = json!({"url": page.url, "title": title, "content": content, "error": error});
    if truncated {
        entry["truncated"] = json!(true);
    }
    entry
}

/// The first `max` characters, and whether anything was cut.
fn cap(text: &str, max: usize) -> (String, bool) {
    match text.char_indices().nth(max) {
        Some((end, _)) => (format!("{}\n[… truncated]", &text[..end]), true),
        None => (text.to_owned(), false),
    }
}

hermetic_sdk::export_tool!(
    WebExtract,
    r#"
name = "web_extract"
toolset = "web"
description = "Fetch web pages and return their readable text"
emoji = "📄"
max_result_chars = 110000
timeout_ms = 60000
memory_mb = 64

[capabilities]
network = ["https://*:*", "http://*:*"]
"#
);

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn page(content_type: &str, status: u16, body: &str) -> http::Response {
        http::Response {
            url: "http://x.example.com/".into(),
            status,
            headers: vec![("content-type".into(), content_type.into())],
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn html_is_reduced_and_other_text_passes_through() {
        let v = extract(&page(
            "text/html; charset=utf-8",
            200,
            "<title>T</title><p>Hello &amp; bye</p>",
        ));
        assert_eq!(v["title"], "T");
        assert_eq!(v["content"], "Hello & bye");
        assert!(v["error"].is_null());
        let v = extract(&page("application/json", 200, "{\"a\":1}"));
        assert_eq!(v["content"], "{\"a\":1}");
        let v = extract(&page("image/png", 200, "\u{89}PNG"));
        assert_eq!(v["error"], "not a text page (image/png)");
        let v = extract(&page("text/plain", 404, "nope"));
        assert_eq!(v["error"], "HTTP 404");
    }

    #[test]
    fn long_text_is_capped_on_a_char_boundary() {
        let (s, cut) = cap(&"é".repeat(10), 4);
        assert!(cut);
        assert_eq!(s, "éééé\n[… truncated]");
        assert_eq!(cap("abc", 4), ("abc".to_owned(), false));
    }
}
