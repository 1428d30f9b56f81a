//! Secrets a stranger's tool uses but never holds (issues 33.5, 47.3): the operator
//! binds a secret to one destination and path prefix, the host adds it to the tool's
//! requests there after the destination check, and the tool cannot read it (no env
//! var), echo it (results are scrubbed), or send it elsewhere (a redirect, another
//! path, another granted host, a path a server would route outside the prefix gets
//! nothing). Against loopback servers that record what they receive.
use hermetic::Registry;
use hermetic_tests::{call, error_of, policy_registry, tools_dir};
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

const SECRET: &str = "sk-live-0123456789abcdef";
const QUERY_SECRET: &str = "q/s3cr3t&x=1";

/// A loopback server that records each request (its line and headers) and answers
/// with them as the body; `/api/away` redirects to `away`.
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
                let path = request.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let mut out = stream;
                let _ = if path.starts_with("/api/away") {
                    out.write_all(
                        format!(
                            "HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:{}/api/echo\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                            away.unwrap_or(1)
                        )
                        .as_bytes(),
                    )
                } else {
                    out.write_all(
                        format!(
                            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{request}",
                            request.len()
                        )
                        .as_bytes(),
                    )
                };
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

fn registry(policy: &str) -> (tempfile::TempDir, Registry) {
    let root = tempfile::TempDir::new().unwrap();
    std::fs::write(
        root.path().join("secrets.toml"),
        format!("API_KEY = \"{SECRET}\"\nQ_KEY = \"{QUERY_SECRET}\"\n"),
    )
    .unwrap();
    let registry = policy_registry(root.path(), policy, false);
    let dir = tools_dir(&["netprobe", "envdump"]);
    assert_eq!(registry.add_dir(dir.path()).unwrap(), vec![]);
    (root, registry)
}

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
    assert!(!text.contains(SECRET), "{text}");
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
    assert!(line.contains("key=q%2Fs3cr3t%26x%3D1"), "{line}");
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
        hermetic::policy_file::load(&path, root.path())
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
