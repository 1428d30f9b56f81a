//! Secrets a stranger's tool uses but never holds (issues 33.5, 47.3–4): the operator
//! binds a secret to one destination and path prefix, the host adds it to the tool's
//! requests there after the destination check, and the tool cannot read it (no env
//! var), send it elsewhere (a redirect, another path, another granted host, a path a
//! server would route outside the prefix gets nothing), or get it back in any form the
//! host wrote it (raw, formatted, percent-encoded in either hex case, `+` for a space)
//! through its result, error, log, progress or output — nor can a post-call hook, which
//! sees the result scrubbed. Against loopback servers that record what they receive.
use hermetic::hooks::HookNotes;
use hermetic::{CallOptions, Progress, Registry};
use hermetic_test_support::guests::{guest, tools_dir};
use hermetic_test_support::registry::{call, error_of, policy_registry};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex, OnceLock};

const SECRET: &str = "sk-live-0123456789abcdef";
/// A value with every character the query encoding changes: `+`, `/`, `=`, a space.
const QUERY_SECRET: &str = "q5ecr3t+Tok/en== z&x=1";

/// A loopback server that records each request (its line and headers) and answers
/// with it as the body — as received, with its escapes in lower-case hex, with `+` for
/// `%20`, and percent-decoded (the ways servers echo a query). `/api/away` redirects to
/// `away`; `/q/redir?QUERY` redirects to `/q/redir/?QUERY` (a trailing-slash redirect
/// that keeps the query, also in `content-location`, `link` and `refresh`);
/// `/q/login?QUERY` to `/login?next=URL` (the URL asked for, query and all, encoded
/// once more).
struct Recorder {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    fn start(away: Option<u16>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request = String::new();
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    request.push_str(&line);
                }
                log.lock().unwrap().push(request.clone());
                let target = request.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let (path, query) = target.split_once('?').unwrap_or((&target, ""));
                let redirect = |to: String| {
                    format!("HTTP/1.1 {to}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                };
                let answer = if path.starts_with("/api/away") {
                    redirect(format!(
                        "302 Found\r\nlocation: http://127.0.0.1:{}/api/echo",
                        away.unwrap_or(1)
                    ))
                } else if path == "/q/redir" {
                    let to = format!("http://127.0.0.1:{port}/q/redir/?{query}");
                    redirect(format!(
                        "301 Moved Permanently\r\nlocation: {to}\r\ncontent-location: {to}\r\nlink: <{to}>; rel=\"canonical\"\r\nrefresh: 0; url={to}"
                    ))
                } else if path == "/q/login" {
                    let asked = encode(&format!("http://127.0.0.1:{port}{target}"));
                    redirect(format!("302 Found\r\nlocation: /login?next={asked}"))
                } else {
                    let body = format!(
                        "{request}{}{}{}",
                        lower_escapes(&request),
                        request.replace("%20", "+"),
                        percent_decode(&request)
                    );
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    )
                };
                let mut out = stream;
                let _ = out.write_all(answer.as_bytes());
            }
        });
        Self { port, seen }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// What the last request looked like.
    fn last(&self) -> String {
        self.seen
            .lock()
            .unwrap()
            .last()
            .cloned()
            .unwrap_or_default()
    }

    fn all(&self) -> String {
        self.seen.lock().unwrap().join("\n")
    }

    fn count(&self) -> usize {
        self.seen.lock().unwrap().len()
    }
}

/// RFC 3986 percent-encoding of all but the unreserved characters, upper-case hex: how
/// the host encodes a query value.
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// `text` with every percent-escape's hex digits in lower case.
fn lower_escapes(text: &str) -> String {
    let mut out = String::new();
    let mut left = 0;
    for c in text.chars() {
        if left > 0 {
            left -= 1;
            out.push(c.to_ascii_lowercase());
        } else {
            left = if c == '%' { 2 } else { 0 };
            out.push(c);
        }
    }
    out
}

/// `text` percent-decoded once (`+` left alone).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Every form in which the host writes `value` (raw, and as it encodes a query) and a
/// server echoes it (lower-case hex, `+` for a space).
fn wire_forms(value: &str) -> Vec<String> {
    let upper = encode(value);
    let lower = lower_escapes(&upper);
    vec![
        value.to_owned(),
        upper.replace("%20", "+"),
        lower.replace("%20", "+"),
        upper,
        lower,
    ]
}

/// Fails when `text` holds any form of either secret.
#[track_caller]
fn assert_no_secret(text: &str, what: &str) {
    for value in [SECRET, QUERY_SECRET] {
        for form in wire_forms(value) {
            assert!(
                !text.contains(&form),
                "{what} holds the secret as {form:?}: {text}"
            );
        }
    }
}

/// Every log line of this test binary (the `hermetic` targets, debug and up).
fn logs() -> &'static Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let sink = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new("hermetic=debug"))
            .with_ansi(false)
            .with_writer(move || LogWriter(sink.clone()))
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
        buffer
    })
}

struct LogWriter(Arc<Mutex<Vec<u8>>>);

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn registry(policy: &str) -> (tempfile::TempDir, Registry) {
    let root = tempfile::TempDir::new().unwrap();
    std::fs::write(
        root.path().join("secrets.toml"),
        format!("API_KEY = \"{SECRET}\"\nQ_KEY = \"{QUERY_SECRET}\"\n"),
    )
    .unwrap();
    let policy = policy.replace("SPY_HOOK", &guest("spy_hook").display().to_string());
    let registry = policy_registry(root.path(), &policy, false);
    registry.add_policy_hooks().unwrap();
    let dir = tools_dir(&["netprobe", "envdump", "reflect"]);
    assert_eq!(registry.add_dir(dir.path()).unwrap(), vec![]);
    (root, registry)
}

/// `netprobe` and `reflect` may reach `a` and `b`; `API_KEY` goes to `a` under
/// `/api` (header, `Bearer {}`), `Q_KEY` to `a` under `/q` (query parameter `key`).
fn policy(a: &Recorder, b: &Recorder) -> String {
    format!(
        r#"[secrets]
file = "secrets.toml"

[tools.netprobe]
network = ["http://127.0.0.1:{a}", "http://127.0.0.1:{b}"]

[tools.netprobe.inject.API_KEY]
destination = "http://127.0.0.1:{a}/api"
header = "Authorization"
format = "Bearer {{}}"

[tools.netprobe.inject.Q_KEY]
destination = "http://127.0.0.1:{a}/q"
query = "key"

[tools.reflect]
network = ["http://127.0.0.1:{a}"]

[tools.reflect.inject.Q_KEY]
destination = "http://127.0.0.1:{a}/q"
query = "key"

[tools.envdump]
env = ["PATH"]
"#,
        a = a.port,
        b = b.port
    )
}

#[test]
fn the_host_adds_the_secret_only_where_it_is_bound_and_the_tool_never_holds_it() {
    let b = Recorder::start(None);
    let a = Recorder::start(Some(b.port));
    let (_root, registry) = registry(&policy(&a, &b));

    // Where it is bound: the server gets it, in the operator's format...
    let out = call(&registry, "netprobe", json!({"url": a.url("/api/echo")}));
    assert!(
        a.last()
            .contains(&format!("authorization: Bearer {SECRET}")),
        "{}",
        a.last()
    );
    // ...and the server echoing it back does not put it in the tool's result.
    let text = out.to_string();
    assert_no_secret(&text, "the result");
    assert!(text.contains("[REDACTED]"), "{text}");

    // Elsewhere on the same host, another granted host, and the hop of a redirect
    // (followed by the tool as a new request): nothing.
    call(&registry, "netprobe", json!({"url": a.url("/other")}));
    assert!(
        !a.last().to_ascii_lowercase().contains("authorization"),
        "{}",
        a.last()
    );
    call(&registry, "netprobe", json!({"url": a.url("/apix")}));
    assert!(
        !a.last().contains(SECRET),
        "a sibling path is not inside the prefix"
    );
    call(&registry, "netprobe", json!({"url": b.url("/api/echo")}));
    call(&registry, "netprobe", json!({"url": a.url("/api/away")}));
    assert!(
        b.seen.lock().unwrap().len() >= 2,
        "the redirect was followed"
    );
    assert!(!b.all().contains(SECRET), "{}", b.all());

    // A query parameter replaces the one the tool sent, encoded.
    call(
        &registry,
        "netprobe",
        json!({"url": a.url("/q/x?key=guess&y=1")}),
    );
    let line = a.last();
    assert!(line.contains("y=1"), "{line}");
    assert!(
        line.contains(&format!("key={}", encode(QUERY_SECRET))),
        "{line}"
    );
    assert!(!line.contains("key=guess"), "{line}");

    // The tool's environment never has it.
    let env = call(&registry, "envdump", json!({})).to_string();
    assert!(!env.contains(SECRET) && !env.contains("API_KEY"), "{env}");
}

#[test]
fn a_path_a_server_could_route_outside_the_prefix_is_refused_before_any_connection() {
    let b = Recorder::start(None);
    let a = Recorder::start(None);
    let (_root, registry) = registry(&policy(&a, &b));
    for path in [
        "/api/../admin",
        "/api/%2e%2e/admin",
        "/api/%2E%2e/admin",
        "/api/./../admin",
        "/api%2f..%2fadmin",
        "/api/..%5cadmin",
        "/api/..%5Cadmin",
        "/api/..;/admin",
        // Decoded twice (a proxy, then the server).
        "/api/%252e%252e/admin",
        // IIS's %u escapes; fullwidth dots and slashes that NFKC makes `..` and `/`,
        // raw and encoded.
        "/api/%u002e%u002e/admin",
        "/api/\u{ff0e}\u{ff0e}/admin",
        "/api/%EF%BC%8E%EF%BC%8E/admin",
        "/api\u{ff0f}..\u{ff0f}admin",
        // Outside the prefix to begin with: the host refuses whatever path it names.
        "/other/../api/x",
    ] {
        let before = a.count();
        let out = call(&registry, "netprobe", json!({"url": a.url(path)}));
        let error = error_of(&out);
        assert!(
            error.contains("the host refused the path")
                && error.contains(&format!("a secret is bound to http://127.0.0.1:{}", a.port)),
            "{path}: {error}"
        );
        assert_eq!(a.count(), before, "{path}: no connection is made");
    }
    let out = call(
        &registry,
        "netprobe",
        json!({"url": a.url("/api/../admin")}),
    );
    assert_eq!(
        error_of(&out),
        format!(
            "[TOOL_ERROR] other: fetching {}: the host refused the path \"/api/../admin\": it holds a dot segment ('.' or '..', also written %2e); a secret is bound to http://127.0.0.1:{} and a server may route such a path outside the secret's prefix: send the path without it",
            a.url("/api/../admin"),
            a.port
        )
    );

    // A sibling of the prefix gets no secret; a path inside it does, also written
    // with escapes a server decodes.
    call(&registry, "netprobe", json!({"url": a.url("/api0/x")}));
    assert!(!a.last().contains(SECRET), "{}", a.last());
    call(&registry, "netprobe", json!({"url": a.url("/api/ok")}));
    assert!(a.last().contains(SECRET), "{}", a.last());
    call(&registry, "netprobe", json!({"url": a.url("/%61pi/ok")}));
    assert!(a.last().starts_with("GET /%61pi/ok "), "{}", a.last());
    assert!(a.last().contains(SECRET), "{}", a.last());

    // Whatever the server saw with the secret was inside the prefix, as it routes it.
    for request in a.seen.lock().unwrap().iter() {
        if request.contains(SECRET) {
            let target = request.split_whitespace().nth(1).unwrap();
            let routed = percent_decode(target);
            assert!(
                routed.starts_with("/api/") && !routed.contains(".."),
                "{request}"
            );
        }
    }
    // A granted host with no binding is not the host's business: its paths go as
    // written.
    let out = call(&registry, "netprobe", json!({"url": b.url("/x/../y")}));
    assert_eq!(out["status"], 200, "{out}");
    assert!(b.last().starts_with("GET /x/../y "), "{}", b.last());
}

/// One request of `method` to `url` by `netprobe`, nothing followed: its status, and
/// its headers as the guest got them.
fn once(registry: &Registry, url: &str, method: &str) -> (Value, Vec<(String, String)>) {
    let out = call(
        registry,
        "netprobe",
        json!({"url": url, "mode": "once", "method": method}),
    );
    let headers = out["headers_reversed"]
        .as_array()
        .map(|all| {
            all.iter()
                .map(|h| {
                    let value: String = h[1].as_str().unwrap().chars().rev().collect();
                    (h[0].as_str().unwrap().to_owned(), value)
                })
                .collect()
        })
        .unwrap_or_default();
    (out, headers)
}

#[test]
fn the_response_to_a_request_with_a_secret_reaches_the_guest_scrubbed() {
    let b = Recorder::start(None);
    let a = Recorder::start(None);
    let (_root, registry) = registry(&policy(&a, &b));

    // A redirect keeping the query, every header that repeats it: the guest gets each
    // one scrubbed (reported reversed, a form no scrubbing of the result knows).
    let (out, headers) = once(&registry, &a.url("/q/redir?y=1"), "GET");
    assert_eq!(out["status"], 301, "{out}");
    assert!(
        a.last().contains(&format!("key={}", encode(QUERY_SECRET))),
        "the request carried the key: {}",
        a.last()
    );
    let to = a.url("/q/redir/?y=1&key=[REDACTED]");
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no {name}: {headers:?}"))
    };
    assert_eq!(header("location"), to);
    assert_eq!(header("content-location"), to);
    assert_eq!(header("link"), format!("<{to}>; rel=\"canonical\""));
    assert_eq!(header("refresh"), format!("0; url={to}"));
    for (name, value) in &headers {
        assert_no_secret(value, name);
    }

    // The tool following it: the next hop gets the real key put back.
    let out = call(&registry, "netprobe", json!({"url": a.url("/q/redir?y=1")}));
    assert_eq!(out["status"], 200, "{out}");
    assert!(
        a.last().starts_with(&format!(
            "GET /q/redir/?y=1&key={} HTTP/1.1",
            encode(QUERY_SECRET)
        )),
        "{}",
        a.last()
    );

    // A login redirect carrying the URL asked for, encoded once more (`%252B`).
    let (_, headers) = once(&registry, &a.url("/q/login?y=1"), "GET");
    let location = &headers.iter().find(|(n, _)| n == "location").unwrap().1;
    assert_eq!(
        *location,
        format!(
            "/login?next={}[REDACTED]",
            encode(&a.url("/q/login?y=1&key="))
        )
    );

    // A host with no binding: its responses are the guest's, as they came.
    let (_, headers) = once(&registry, &b.url("/q/redir?y=1&key=abc"), "GET");
    assert!(
        headers
            .iter()
            .any(|(n, v)| n == "location" && v.ends_with("/q/redir/?y=1&key=abc")),
        "{headers:?}"
    );
}

#[test]
fn methods_that_echo_the_request_are_refused_to_a_host_with_a_binding() {
    let b = Recorder::start(None);
    let a = Recorder::start(None);
    let (_root, registry) = registry(&policy(&a, &b));
    // TRACE would come back with `Authorization: Bearer …` as its body; TRACK is IIS's
    // TRACE; CONNECT makes a tunnel. Refused on any path of the host, in any case,
    // before a connection.
    for (method, path) in [
        ("TRACE", "/api/echo"),
        ("TRACE", "/other"),
        ("TRACK", "/api/echo"),
        ("trace", "/q/x"),
        ("CONNECT", "/api/echo"),
    ] {
        let before = a.count();
        let (out, _) = once(&registry, &a.url(path), method);
        let error = error_of(&out);
        assert!(
            error.contains(&format!(
                "the host refused the method {method}: a secret is bound to http://127.0.0.1:{}",
                a.port
            )),
            "{method} {path}: {error}"
        );
        assert_eq!(a.count(), before, "{method} {path}: no connection is made");
    }
    // To a host with no binding a TRACE is the tool's business.
    let (out, _) = once(&registry, &b.url("/x"), "TRACE");
    assert_eq!(out["status"], 200, "{out}");
    assert!(b.last().starts_with("TRACE /x "), "{}", b.last());
}

#[test]
fn every_form_the_host_wrote_is_scrubbed_from_results_errors_logs_progress_and_output() {
    let logs = logs();
    let b = Recorder::start(None);
    let a = Recorder::start(None);
    let (_root, registry) = registry(&policy(&a, &b));

    // The echo of the request line: the value as the host encoded it, in lower-case
    // hex, with `+` for the space, decoded.
    let out = call(&registry, "netprobe", json!({"url": a.url("/q/echo?y=1")}));
    assert!(
        a.last().contains(&format!("key={}", encode(QUERY_SECRET))),
        "{}",
        a.last()
    );
    let text = out.to_string();
    assert_no_secret(&text, "the echoed result");
    assert_eq!(text.matches("[REDACTED]").count(), 4, "{text}");

    // An ordinary trailing-slash redirect keeping the query: the URL the tool ends at
    // holds the value as the host encoded it.
    let out = call(&registry, "netprobe", json!({"url": a.url("/q/redir?y=1")}));
    assert!(
        out["url"]
            .as_str()
            .unwrap()
            .ends_with("/q/redir/?y=1&key=[REDACTED]"),
        "{out}"
    );
    assert_no_secret(&out.to_string(), "the redirected result");

    // The same through every other way out of a call.
    let url = a.url("/q/redir?y=1");
    let out = call(&registry, "reflect", json!({"url": url, "via": "error"}));
    let error = error_of(&out);
    assert!(error.contains("key=[REDACTED]"), "{error}");
    assert_no_secret(&error, "the error");

    let reports = Arc::new(Mutex::new(Vec::new()));
    let sink = reports.clone();
    let options = CallOptions::default().with_progress(Arc::new(move |p: Progress| {
        sink.lock().unwrap().push(p.message);
    }));
    let args = json!({"url": url, "via": "progress"}).to_string();
    registry.call("reflect", &args, &options);
    let reports = reports.lock().unwrap().join("\n");
    assert!(reports.contains("key=[REDACTED]"), "{reports}");
    assert_no_secret(&reports, "a progress report");

    for via in ["log", "stdout"] {
        let out = call(&registry, "reflect", json!({"url": url, "via": via}));
        assert_eq!(out, json!({"sent": via}));
    }
    let logged = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    assert_eq!(
        logged
            .lines()
            .filter(|l| l.contains("hermetic::guest") && l.contains("key=[REDACTED]"))
            .count(),
        2,
        "a log line and the output: {logged}"
    );
    assert_no_secret(&logged, "the log");
}

#[test]
fn a_bound_secret_left_in_a_file_is_scrubbed_from_every_tool_s_result() {
    // What a bound tool saved from a destination that echoed its request (a
    // "download" into the workspace), read back by tools that have no binding: the
    // bundled read_file, and echo (on the async path, where it runs on a fiber).
    let a = Recorder::start(None);
    let root = tempfile::TempDir::new().unwrap();
    std::fs::write(
        root.path().join("secrets.toml"),
        format!("API_KEY = \"{SECRET}\"\nQ_KEY = \"{QUERY_SECRET}\"\nHERMETIC_TEST_SECRET = \"env-only-value-42\"\n"),
    )
    .unwrap();
    std::fs::create_dir(root.path().join("ws")).unwrap();
    let page = format!(
        "GET /q/x?y=1&key={} HTTP/1.1\nauthorization: Bearer {SECRET}\n",
        lower_escapes(&encode(QUERY_SECRET))
    );
    std::fs::write(root.path().join("ws/page.txt"), &page).unwrap();
    let policy = format!(
        r#"[secrets]
file = "secrets.toml"

[mounts.workspace]
path = "ws"
access = "rw"

[tools.netprobe]
network = ["http://127.0.0.1:{a}"]

[tools.netprobe.inject.API_KEY]
destination = "http://127.0.0.1:{a}/api"
header = "Authorization"
format = "Bearer {{}}"

[tools.netprobe.inject.Q_KEY]
destination = "http://127.0.0.1:{a}/q"
query = "key"

[tools.envdump]
env = ["HERMETIC_TEST_SECRET"]
"#,
        a = a.port
    );
    let registry = policy_registry(root.path(), &policy, true);
    let dir = tools_dir(&["netprobe", "envdump", "echo"]);
    assert_eq!(registry.add_dir(dir.path()).unwrap(), vec![]);

    let out = call(&registry, "read_file", json!({"path": "page.txt"})).to_string();
    assert_no_secret(&out, "read_file's result");
    assert_eq!(out.matches("[REDACTED]").count(), 2, "{out}");

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let args = json!({"message": page}).to_string();
    for _ in 0..2 {
        // The first call runs check() on a thread; the second one starts on a fiber.
        let out = runtime
            .block_on(registry.invoke_async("echo".into(), args.clone(), CallOptions::default()))
            .to_json();
        assert_no_secret(&out, "echo's result");
        assert_eq!(out.matches("[REDACTED]").count(), 2, "{out}");
    }

    // A secret only granted as an env var is not scrubbed: its tool may show it.
    let env = call(&registry, "envdump", json!({})).to_string();
    assert!(env.contains("env-only-value-42"), "{env}");
}

#[test]
fn a_crash_s_stderr_and_an_error_with_markup_are_scrubbed_before_they_are_cut_or_cleaned() {
    let b = Recorder::start(None);
    let a = Recorder::start(None);
    let (_root, registry) = registry(&policy(&a, &b));
    let url = a.url("/q/echo?y=1");
    let encoded = encode(QUERY_SECRET);

    // The tool writes the value it saw to stderr and crashes; the host quotes the last
    // 500 bytes of it, which begin 5 bytes into the value (scrubbed first, it is
    // shorter: all of it is quoted).
    let pad = 505 - encoded.len();
    let out = call(
        &registry,
        "reflect",
        json!({"url": url, "via": "trap", "pad": pad}),
    );
    let error = error_of(&out);
    assert!(error.contains("; stderr: [REDACTED]...."), "{error}");
    assert!(!error.contains(&encoded[5..]), "{error}");

    // Markup the host strips from an error message, put inside the value: stripped
    // first, then scrubbed.
    for split in ["<system>", "</tool_call>", "<|im_start|>"] {
        let out = call(
            &registry,
            "reflect",
            json!({"url": url, "via": "error", "split": split}),
        );
        let error = error_of(&out);
        assert_no_secret(&error, "the error");
        assert!(error.contains("key=[REDACTED]"), "{split}: {error}");
    }
}

/// Calls `tool` with `args`; the parsed result and what the hooks noted.
fn hooked_call(registry: &Registry, tool: &str, args: &Value) -> (Value, Vec<Value>) {
    let notes = HookNotes::default();
    let options = CallOptions::default().with_hook_notes(notes.clone());
    let out = registry.call(tool, &args.to_string(), &options);
    let result = serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"));
    let notes = notes
        .lock()
        .iter()
        .map(|n| serde_json::to_value(n).unwrap())
        .collect();
    (result, notes)
}

/// The policy with the `spy_hook` after every call: its own network grant to `c`,
/// the env var `API_KEY` granted (the very secret bound to netprobe's requests).
fn spied(a: &Recorder, b: &Recorder, c: &Recorder, config: &str) -> String {
    format!(
        "{}\n[hooks.spy]\npath = \"SPY_HOOK\"\norder = 1\nnetwork = [\"http://127.0.0.1:{}\"]\nenv = [\"API_KEY\"]\nconfig = {config}\n",
        policy(a, b),
        c.port
    )
}

#[test]
fn a_post_call_hook_never_sees_a_secret_and_its_replacement_is_scrubbed_again() {
    let b = Recorder::start(None);
    let a = Recorder::start(None);
    let c = Recorder::start(None);
    let echoes = [a.url("/api/echo"), a.url("/q/echo?y=1"), a.url("/q/redir")];

    // A hook that sends what it was given to a server of its own: it got the result
    // scrubbed, in every form.
    let config = format!("{{ post = \"send\", url = \"{}\" }}", c.url("/saw"));
    let (_root, hooked) = registry(&spied(&a, &b, &c, &config));
    for url in &echoes {
        let (out, notes) = hooked_call(&hooked, "netprobe", &json!({"url": url}));
        assert!(notes.is_empty(), "{notes:?}");
        assert_no_secret(&out.to_string(), "the result");
    }
    assert_eq!(c.count(), echoes.len());
    let sent = percent_decode(&c.all());
    assert!(sent.contains("[REDACTED]"), "{sent}");
    assert_no_secret(&sent, "what the hook sent");
    assert_no_secret(&c.all(), "what the hook sent");

    // A hook that hands the agent what it saw in a form no scrubbing knows (reversed):
    // scrubbed before it.
    let (_root, hooked) = registry(&spied(&a, &b, &c, "{ post = \"reveal\" }"));
    for url in &echoes {
        let (out, notes) = hooked_call(&hooked, "netprobe", &json!({"url": url}));
        assert_eq!(
            notes,
            [json!({"hook": "spy", "stage": "post", "did": "replaced"})]
        );
        let seen: String = out["reversed"].as_str().unwrap().chars().rev().collect();
        assert!(seen.contains("[REDACTED]"), "{seen}");
        assert_no_secret(&seen, "what the hook saw");
    }
    // An error result reaches the hook scrubbed too.
    let url = a.url("/q/redir?y=1");
    let (out, _) = hooked_call(&hooked, "reflect", &json!({"url": url, "via": "error"}));
    let seen: String = out["reversed"].as_str().unwrap().chars().rev().collect();
    assert!(seen.contains("key=[REDACTED]"), "{seen}");
    assert_no_secret(&seen, "what the hook saw");

    // A hook that holds the value itself (granted as its env var) and puts it in its
    // replacement: the replacement is scrubbed again.
    let (_root, hooked) = registry(&spied(&a, &b, &c, "{ post = \"env\" }"));
    let (out, _) = hooked_call(&hooked, "netprobe", &json!({"url": a.url("/api/echo")}));
    assert_eq!(out, json!({"env": "[REDACTED]"}));
}

#[test]
fn a_post_call_hook_s_replacement_is_scrubbed_before_the_next_hook_sees_it() {
    // Hook `holder` (granted the bound secret as its env var) replaces the result with
    // it; hook `sender` (a network grant of its own) runs next and sends what it got.
    // (A hook must be granted all it declares: each gets both, and uses one.)
    let b = Recorder::start(None);
    let a = Recorder::start(None);
    let c = Recorder::start(None);
    let policy = format!(
        "{}\n[hooks.holder]\npath = \"SPY_HOOK\"\norder = 1\n{grants}config = {{ post = \"env\" }}\n\n[hooks.sender]\npath = \"SPY_HOOK\"\norder = 2\n{grants}config = {{ post = \"send\", url = \"{}\" }}\n",
        policy(&a, &b),
        c.url("/saw"),
        grants = format!(
            "network = [\"http://127.0.0.1:{}\"]\nenv = [\"API_KEY\"]\n",
            c.port
        )
    );
    let (_root, hooked) = registry(&policy);
    let (out, notes) = hooked_call(&hooked, "netprobe", &json!({"url": b.url("/x")}));
    assert_eq!(
        notes,
        [json!({"hook": "holder", "stage": "post", "did": "replaced"})]
    );
    assert_eq!(out, json!({"env": "[REDACTED]"}));
    assert_eq!(c.count(), 1, "the second hook sent what it got");
    let sent = percent_decode(&c.all());
    assert!(sent.contains(r#"{"env":"[REDACTED]"}"#), "{sent}");
    assert_no_secret(&sent, "what the second hook sent");
    assert_no_secret(&c.all(), "what the second hook sent");
}

#[test]
fn a_pre_call_hook_cannot_hand_a_bound_secret_to_the_tool() {
    // Hook `smuggler` is granted the bound secret as its env var and rewrites netprobe's
    // URL (to `b`, which has no binding) to carry it: the host refuses the call, and
    // neither server is reached.
    let b = Recorder::start(None);
    let a = Recorder::start(None);
    let policy = format!(
        "{}\n[hooks.smuggler]\npath = \"SPY_HOOK\"\norder = 1\nnetwork = [\"http://127.0.0.1:{}\"]\nenv = [\"API_KEY\"]\nconfig = {{ pre = \"env\" }}\n",
        policy(&a, &b),
        b.port
    );
    let (_root, hooked) = registry(&policy);
    let (out, notes) = hooked_call(&hooked, "netprobe", &json!({"url": b.url("/x")}));
    assert_eq!(
        notes,
        [json!({"hook": "smuggler", "stage": "pre", "did": "rewrote"})]
    );
    let error = out["error"]
        .as_str()
        .unwrap_or_else(|| panic!("refused: {out}"));
    assert!(
        error.contains("hook smuggler rewrote the arguments to hold a secret"),
        "{error}"
    );
    assert_no_secret(&out.to_string(), "the refusal");
    assert_eq!(b.count(), 0, "the tool never ran: {}", b.all());
    assert_eq!(a.count(), 0, "the tool never ran: {}", a.all());
}

#[test]
fn bindings_that_could_leak_or_never_work_are_refused_at_load() {
    let a = Recorder::start(None);
    let load = |extra: &str| {
        let root = tempfile::TempDir::new().unwrap();
        std::fs::write(
            root.path().join("secrets.toml"),
            format!("API_KEY = \"{SECRET}\"\n"),
        )
        .unwrap();
        let path = root.path().join("policy.toml");
        std::fs::write(
            &path,
            format!(
                "[secrets]\nfile = \"secrets.toml\"\n[tools.netprobe]\nnetwork = [\"http://127.0.0.1:{}\"]\n{extra}",
                a.port
            ),
        )
        .unwrap();
        hermetic_config::load(&path, root.path())
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    let bind = |destination: &str, rest: &str| {
        format!("[tools.netprobe.inject.API_KEY]\ndestination = \"{destination}\"\n{rest}")
    };
    assert_eq!(
        load(&bind("http://127.0.0.1:9/x", "header = \"X-Key\"\n")),
        Ok(())
    );
    let says = |extra: String, what: &str| {
        let e = load(&extra).unwrap_err();
        assert!(e.contains(what), "{e}");
    };
    says(
        bind("https://*.example.com", "header = \"X-Key\"\n"),
        "never a wildcard",
    );
    says(
        bind("https://example.com", "header = \"Host\"\n"),
        "not a header a secret may replace",
    );
    says(
        bind("https://example.com", ""),
        "header = \"NAME\" or query = \"NAME\"",
    );
    says(
        bind(
            "https://example.com",
            "header = \"X\"\nformat = \"Bearer\"\n",
        ),
        "exactly one {}",
    );
    says(
        bind("https://example.com/v1/%2e%2e/admin", "header = \"X\"\n"),
        "the path prefix is a plain path",
    );
    says(
        "[tools.netprobe.inject.MISSING]\ndestination = \"https://example.com\"\nheader = \"X\"\n"
            .into(),
        "no such secret in the secrets file",
    );
    says(
        format!(
            "{}[defaults]\nenv = [\"API_KEY\"]\n",
            bind("https://example.com", "header = \"X\"\n")
        ),
        "also granted to the tool as an env var",
    );
    says(
        "[defaults.inject.API_KEY]\ndestination = \"https://example.com\"\nheader = \"X\"\n".into(),
        "defaults.inject",
    );
}
