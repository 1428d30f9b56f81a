//! Outbound HTTP through wasi:http, against loopback servers these tests start: granted
//! destinations work, and everything else — ungranted hosts and ports, names that
//! resolve to loopback, private and link-local addresses, redirects to ungranted hosts,
//! oversized and stalled responses, a forged Host header — is refused or cut off, and
//! the refused servers never see a connection.
use hermetic::component::ToolSource;
use hermetic::{CallOptions, Registry};
use hermetic_test_support::guests::{guest, tools_dir};
use hermetic_test_support::registry::{call, error_of, fixture, policy_registry};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const PAGE: &str = "<!doctype html><html><head><title>Loopback page</title>\
    <script>document.write('script text')</script></head>\
    <body><h1>Welcome</h1><p>Hello &amp; world</p></body></html>";

/// A loopback HTTP/1.1 server that counts the connections it accepts.
struct Server {
    port: u16,
    connections: Arc<AtomicUsize>,
    /// Told when a `/hang` request arrives, and again when its client hangs up.
    hang: mpsc::Receiver<&'static str>,
}

impl Server {
    /// Starts a server; `away` is the port `/redirect-away` points to.
    fn start(away: Option<u16>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let count = connections.clone();
        let (hang_tx, hang) = mpsc::channel();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                count.fetch_add(1, Ordering::SeqCst);
                let hang_tx = hang_tx.clone();
                std::thread::spawn(move || serve(stream, away, &hang_tx));
            }
        });
        Server {
            port,
            connections,
            hang,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

fn serve(stream: TcpStream, away: Option<u16>, hang: &mpsc::Sender<&'static str>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
            break;
        }
    }
    let mut out = stream;
    let head = |status: &str, extra: &str| {
        format!("HTTP/1.1 {status}\r\nconnection: close\r\n{extra}\r\n")
    };
    let _ = match path.as_str() {
        "/page" => out.write_all(
            format!(
                "{}{PAGE}",
                head(
                    "200 OK",
                    &format!(
                        "content-type: text/html\r\ncontent-length: {}\r\n",
                        PAGE.len()
                    )
                )
            )
            .as_bytes(),
        ),
        "/redirect-same" => {
            out.write_all(head("302 Found", "location: /page\r\ncontent-length: 0\r\n").as_bytes())
        }
        "/redirect-away" => out.write_all(
            head(
                "302 Found",
                &format!(
                    "location: http://127.0.0.1:{}/page\r\ncontent-length: 0\r\n",
                    away.unwrap_or(1)
                ),
            )
            .as_bytes(),
        ),
        "/big" => {
            let body = vec![b'x'; 2 * 1024 * 1024];
            let _ = out.write_all(
                head("200 OK", &format!("content-length: {}\r\n", body.len())).as_bytes(),
            );
            out.write_all(&body)
        }
        "/big-chunked" => {
            let _ = out.write_all(head("200 OK", "transfer-encoding: chunked\r\n").as_bytes());
            let chunk = vec![b'y'; 64 * 1024];
            for _ in 0..32 {
                if out
                    .write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
                    .and_then(|()| out.write_all(&chunk))
                    .and_then(|()| out.write_all(b"\r\n"))
                    .is_err()
                {
                    return;
                }
            }
            out.write_all(b"0\r\n\r\n")
        }
        "/stall" => {
            let _ = out.write_all(head("200 OK", "content-length: 100\r\n").as_bytes());
            let _ = out.write_all(b"only ten b");
            let _ = out.flush();
            std::thread::sleep(Duration::from_secs(5));
            Ok(())
        }
        "/hang" => {
            // Never answer; report when the client gives up on the connection.
            let _ = hang.send("request");
            let mut rest = Vec::new();
            let _ = std::io::Read::read_to_end(&mut reader, &mut rest);
            let _ = hang.send("closed");
            Ok(())
        }
        "/slow-head" => {
            std::thread::sleep(Duration::from_secs(5));
            out.write_all(head("200 OK", "content-length: 0\r\n").as_bytes())
        }
        _ => out.write_all(head("404 Not Found", "content-length: 0\r\n").as_bytes()),
    };
}

/// A registry with the bundled tools, `netprobe` and `echo` under `policy` (TOML), next
/// to a `secrets.toml` holding a weather key.
fn registry(policy: &str) -> (tempfile::TempDir, Registry) {
    let root = tempfile::TempDir::new().unwrap();
    std::fs::write(
        root.path().join("secrets.toml"),
        "WEATHER_API_KEY = \"k-123\"\n",
    )
    .unwrap();
    let registry = policy_registry(root.path(), policy, true);
    let dir = tools_dir(&["netprobe", "echo"]);
    assert_eq!(registry.add_dir(dir.path()).unwrap(), vec![]);
    (root, registry)
}

/// The `"<kind>: …"` prefix of netprobe's error, or "ok".
fn probe(registry: &Registry, url: &str) -> String {
    let out = call(registry, "netprobe", json!({ "url": url }));
    match out["error"].as_str() {
        Some(e) => e
            .trim_start_matches("[TOOL_ERROR] ")
            .split(':')
            .next()
            .unwrap_or("")
            .to_owned(),
        None => "ok".to_owned(),
    }
}

fn healthy(registry: &Registry) {
    assert_eq!(
        call(registry, "echo", json!({"message": "still here"}))["echo"],
        "still here"
    );
}

#[test]
fn web_extract_reads_a_granted_page_as_text() {
    let server = Server::start(None);
    let (_root, registry) = registry(&format!(
        "[tools.web_extract]\nnetwork = [\"http://127.0.0.1:{}\"]\n",
        server.port
    ));
    let out = call(
        &registry,
        "web_extract",
        json!({"urls": [server.url("/page")]}),
    );
    let page = &out["results"][0];
    assert_eq!(page["title"], "Loopback page", "{out}");
    assert_eq!(page["content"], "Welcome\nHello & world");
    assert!(page["error"].is_null());
    assert_eq!(server.connections(), 1);
}

#[test]
fn without_any_grant_the_network_tools_are_unavailable() {
    let server = Server::start(None);
    let f = fixture(true, &["netprobe"]);
    for tool in ["web_extract", "netprobe"] {
        let entry = f
            .registry
            .tools()
            .into_iter()
            .find(|t| t.name == tool)
            .unwrap();
        assert_eq!(
            entry.reason.as_deref(),
            Some("needs network access, which the operator does not grant"),
            "{tool}"
        );
    }
    let out = call(
        &f.registry,
        "web_extract",
        json!({"urls": [server.url("/page")]}),
    );
    assert!(error_of(&out).contains("needs network access"), "{out}");
    assert_eq!(server.connections(), 0);
}

#[test]
fn only_the_granted_scheme_host_and_port_are_reachable() {
    let granted = Server::start(None);
    let other = Server::start(None);
    let (_root, registry) = registry(&format!(
        "[tools.netprobe]\nnetwork = [\"http://127.0.0.1:{}\"]\n",
        granted.port
    ));
    assert_eq!(probe(&registry, &granted.url("/page")), "ok");
    assert_eq!(probe(&registry, &other.url("/page")), "denied");
    assert_eq!(
        probe(
            &registry,
            &format!("https://127.0.0.1:{}/page", granted.port)
        ),
        "denied"
    );
    assert_eq!(
        probe(
            &registry,
            &format!("http://127.0.0.2:{}/page", granted.port)
        ),
        "denied"
    );
    assert_eq!(granted.connections(), 1);
    assert_eq!(other.connections(), 0);
    healthy(&registry);
}

#[test]
fn a_granted_name_that_resolves_to_loopback_is_refused() {
    let server = Server::start(None);
    let (_root, registry) = registry(&format!(
        "[tools.netprobe]\nnetwork = [\"http://localhost:{}\"]\n",
        server.port
    ));
    assert_eq!(
        probe(&registry, &format!("http://localhost:{}/page", server.port)),
        "prohibited"
    );
    assert_eq!(server.connections(), 0);
}

#[test]
fn an_any_host_grant_still_refuses_loopback_private_and_metadata_addresses() {
    let server = Server::start(None);
    let (_root, registry) = registry("[tools.netprobe]\nnetwork = [\"http://*:*\"]\n");
    for url in [
        server.url("/page"),
        format!("http://[::ffff:127.0.0.1]:{}/page", server.port),
        format!("http://localhost:{}/page", server.port),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        "http://10.0.0.1/".to_owned(),
        "http://[::1]/".to_owned(),
        "http://[fd00::1]/".to_owned(),
    ] {
        assert_eq!(probe(&registry, &url), "prohibited", "{url}");
    }
    assert_eq!(server.connections(), 0);
    healthy(&registry);
}

#[test]
fn every_redirect_hop_is_checked_again() {
    let away = Server::start(None);
    let server = Server::start(Some(away.port));
    let (_root, registry) = registry(&format!(
        "[tools.netprobe]\nnetwork = [\"http://127.0.0.1:{}\"]\n",
        server.port
    ));
    let out = call(
        &registry,
        "netprobe",
        json!({"url": server.url("/redirect-same")}),
    );
    assert_eq!(out["status"], 200, "{out}");
    assert_eq!(out["url"], server.url("/page"));
    assert_eq!(probe(&registry, &server.url("/redirect-away")), "denied");
    assert_eq!(away.connections(), 0);
}

#[test]
fn oversized_and_stalled_responses_are_cut_off() {
    let server = Server::start(None);
    let (_root, registry) = registry(&format!(
        r#"
[tools.netprobe]
network = ["http://127.0.0.1:{}"]
[tools.netprobe.limits.http]
max_response_bytes = 1048576
first_byte_timeout_ms = 300
between_bytes_timeout_ms = 300
"#,
        server.port
    ));
    assert_eq!(probe(&registry, &server.url("/big")), "too_large");
    assert_eq!(probe(&registry, &server.url("/big-chunked")), "too_large");
    assert_eq!(probe(&registry, &server.url("/stall")), "timeout");
    assert_eq!(probe(&registry, &server.url("/slow-head")), "timeout");
    healthy(&registry);
}

#[test]
fn no_request_outlives_its_call() {
    let server = Server::start(None);
    let (_root, registry) = registry(&format!(
        r#"
[tools.netprobe]
network = ["http://127.0.0.1:{}"]
[tools.netprobe.limits]
max_timeout_ms = 500
"#,
        server.port
    ));
    // The policy's first-byte timeout (30 s) would wait; the call's 500 ms deadline
    // does not: either the request times out or the call's time limit ends it.
    let out = call(
        &registry,
        "netprobe",
        json!({"url": server.url("/slow-head")}),
    );
    let error = error_of(&out);
    assert!(
        error.contains("timeout: timed out") || error.contains("time limit exceeded"),
        "{error}"
    );
    healthy(&registry);
}

#[test]
fn cancelling_a_call_abandons_its_request_in_flight() {
    let server = Server::start(None);
    let (_root, registry) = registry(&format!(
        "[tools.netprobe]\nnetwork = [\"http://127.0.0.1:{}\"]\n",
        server.port
    ));
    let token = hermetic::CancelToken::new();
    let options = CallOptions::default().with_cancel(token.clone());
    let args = json!({"url": server.url("/hang")}).to_string();
    std::thread::scope(|s| {
        let call = s.spawn(|| registry.call("netprobe", &args, &options));
        assert_eq!(server.hang.recv().unwrap(), "request");
        let cancelled_at = Instant::now();
        token.cancel();
        let out: Value = serde_json::from_str(&call.join().unwrap()).unwrap();
        assert!(error_of(&out).contains("cancelled"), "{out}");
        // The guest sat in a host call, out of reach of epoch interruption: without the
        // request watching the token, it would wait for the 30 s first-byte timeout.
        // 15 s is a bound on that, not a speed goal.
        assert!(cancelled_at.elapsed() < Duration::from_secs(15));
        assert_eq!(server.hang.recv().unwrap(), "closed");
    });
    healthy(&registry);
}

#[test]
fn a_tenant_can_take_network_access_away() {
    let server = Server::start(None);
    let (_root, registry) = registry(&format!(
        "[tools.netprobe]\nnetwork = [\"http://127.0.0.1:{}\"]\n[tenants.acme]\nnetwork = []\n",
        server.port
    ));
    let options = CallOptions::default().with_tenant("acme");
    let out: Value = serde_json::from_str(&registry.call(
        "netprobe",
        &json!({"url": server.url("/page")}).to_string(),
        &options,
    ))
    .unwrap();
    assert!(
        error_of(&out).contains("needs network access, which tenant acme does not grant"),
        "{out}"
    );
    assert_eq!(server.connections(), 0);
}

#[test]
fn the_host_header_cannot_be_forged() {
    let (_root, registry) = registry("[tools.netprobe]\nnetwork = [\"https://example.com\"]\n");
    let out = call(
        &registry,
        "netprobe",
        json!({"url": "http://127.0.0.1:1/", "mode": "host_header"}),
    );
    assert!(error_of(&out).contains("forbidden: Host header"), "{out}");
}

#[test]
fn weather_needs_its_api_granted_as_well_as_its_key() {
    let policy =
        "[secrets]\nfile = \"secrets.toml\"\n[tools.weather]\nenv = [\"WEATHER_API_KEY\"]\n";
    let status = |policy: &str| {
        let (_root, registry) = registry(policy);
        let weather = registry
            .tools()
            .into_iter()
            .find(|t| t.name == "weather")
            .unwrap();
        (weather.available, weather.reason)
    };
    assert_eq!(
        status(policy),
        (
            false,
            Some("needs network access, which the operator does not grant".to_owned())
        )
    );
    // A grant for another host is no grant for weatherapi.com.
    assert!(
        !status(&format!(
            "{policy}network = [\"https://api.example.com\"]\n"
        ))
        .0
    );
    assert_eq!(
        status(&format!(
            "{policy}network = [\"https://api.weatherapi.com\"]\n"
        )),
        (true, None)
    );
}

#[test]
fn a_component_importing_wasi_http_without_declaring_network_is_refused_at_load() {
    let f = fixture(false, &[]);
    let bytes = std::fs::read(guest("http_undeclared")).unwrap();
    let error = f
        .registry
        .load(&bytes, ToolSource::File(guest("http_undeclared")))
        .unwrap_err();
    let err = error.to_string();
    assert!(err.contains("wasi:http/"), "{err}");
    assert!(err.contains("declare network destinations"), "{err}");
    // wasmtime's error is kept whole under the words, for callers that inspect it.
    let source = std::error::Error::source(&error).expect("the link error keeps its cause");
    let wasmtime = source
        .downcast_ref::<hermetic::WasmtimeError>()
        .expect("the cause is wasmtime's error");
    assert!(
        format!("{:#}", wasmtime.get_ref()).contains("wasi:http/"),
        "{wasmtime}"
    );
}
