//! Registry credentials reach only the registry they are for (issue 47.5), tried with
//! the real binary against registries written for the test that record every request
//! they receive — one that asks for Basic credentials it was never given, one whose
//! Bearer challenge names a token server on another host — and against a real
//! `docker-registry` with htpasswd auth for the way that works.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

mod common;

use common::community::{hermetic, ok, refused};
use hermetic_test_support::guests::guest;
use hermetic_test_support::oci_registry::Registry;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};
use tempfile::TempDir;

/// base64("deployer:pa:ss=w0rd"): what `Authorization: Basic` carries for the test's
/// credentials.
const BASIC: &str = "Basic ZGVwbG95ZXI6cGE6c3M9dzByZA==";
/// The credentials, as `HERMETIC_REGISTRY_AUTH` writes them after `host[:port]=`.
const USERPASS: &str = "deployer:pa:ss=w0rd";

/// `hermetic pull REF --insecure --store s` with `env`.
fn pull(home: &Path, reference: &str, env: &[(&str, &str)]) -> Output {
    hermetic(home)
        .args(["pull", reference, "--insecure", "--store", "s"])
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

/// One request a test server received: its path and its `Authorization` header.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    path: String,
    authorization: Option<String>,
}

/// A loopback HTTP server written for the test: answers each request with `answer`
/// (given the path and the `Authorization` header) and records what it received.
struct Recorder {
    addr: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Recorder {
    fn start(answer: impl Fn(&str, Option<&str>) -> Vec<u8> + Send + 'static) -> Self {
        Self::on(TcpListener::bind("127.0.0.1:0").unwrap(), answer)
    }

    /// On a listener bound already (for a server that names its own address).
    fn on(
        listener: TcpListener,
        answer: impl Fn(&str, Option<&str>) -> Vec<u8> + Send + 'static,
    ) -> Self {
        let addr = listener.local_addr().unwrap().to_string();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&request).into_owned();
                let path = text.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let authorization = text.lines().find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("authorization")
                        .then(|| v.trim().to_owned())
                });
                let reply = answer(&path, authorization.as_deref());
                record.lock().unwrap().push(Seen {
                    path,
                    authorization,
                });
                let _ = stream.write_all(&reply);
            }
        });
        Self { addr, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// Every `Authorization` header it received.
    fn authorizations(&self) -> Vec<String> {
        self.seen()
            .into_iter()
            .filter_map(|s| s.authorization)
            .collect()
    }
}

fn http(status: &str, headers: &[(&str, String)], body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

/// A registry that asks every request for Basic credentials, and says 404 to any
/// request that brings some (it only wants to see them).
fn basic_asker() -> Recorder {
    Recorder::start(|_, auth| match auth {
        None => http(
            "401 Unauthorized",
            &[("WWW-Authenticate", r#"Basic realm="hostile""#.into())],
            b"{}",
        ),
        Some(_) => http("404 Not Found", &[], b"{}"),
    })
}

/// A registry whose Bearer challenge names `realm` as its token server; it accepts
/// `Bearer tok-123` (and then has nothing: 404).
fn bearer_registry(realm: String) -> Recorder {
    Recorder::start(move |path, auth| {
        if path.starts_with("/token") {
            return match auth {
                Some(BASIC) => http("200 OK", &[], br#"{"token": "tok-123"}"#),
                _ => http("401 Unauthorized", &[], b"{}"),
            };
        }
        match auth {
            Some("Bearer tok-123") => http("404 Not Found", &[], b"{}"),
            _ => http(
                "401 Unauthorized",
                &[(
                    "WWW-Authenticate",
                    format!(
                        r#"Bearer realm="{realm}",service="hostile",scope="repository:x:pull""#
                    ),
                )],
                b"{}",
            ),
        }
    })
}

/// A token server that hands out `tok-123` for the test's credentials.
fn token_server() -> Recorder {
    Recorder::start(|_, auth| match auth {
        Some(BASIC) => http("200 OK", &[], br#"{"token": "tok-123"}"#),
        _ => http("401 Unauthorized", &[], b"{}"),
    })
}

/// The unscoped variables of earlier versions were answered to any registry's Basic
/// challenge. Now they are refused before anything is sent, saying what to set instead.
/// (Fails on 443f11c: the hostile registry received `tester:s3cret`.)
#[test]
fn unscoped_credential_variables_are_refused_and_never_sent() {
    let hostile = basic_asker();
    let h = TempDir::new().unwrap();
    let out = pull(
        h.path(),
        &format!("{}/x:1", hostile.addr),
        &[
            ("HERMETIC_REGISTRY_USERNAME", "tester"),
            ("HERMETIC_REGISTRY_PASSWORD", "s3cret"),
        ],
    );
    assert_eq!(hostile.authorizations(), Vec::<String>::new());
    let said = refused(
        &out,
        &format!(
            "HERMETIC_REGISTRY_USERNAME and HERMETIC_REGISTRY_PASSWORD are no longer read: they were given to whichever registry asked. Name the registry they are for instead: HERMETIC_REGISTRY_AUTH=\"{}=USER:PASSWORD\"",
            hostile.addr
        ),
    );
    assert!(!said.contains("s3cret"), "{said}");
}

/// A registry that asks for Basic credentials gets none that were configured for
/// another registry — from the variable or from docker's auth file — and the error
/// says how to name the registry.
#[test]
fn a_registry_gets_no_credentials_configured_for_another() {
    let hostile = basic_asker();
    let elsewhere = format!("127.0.0.1:{}", hermetic_test_support::net::free_port());
    let h = TempDir::new().unwrap();
    std::fs::create_dir_all(h.path().join(".docker")).unwrap();
    std::fs::write(
        h.path().join(".docker/config.json"),
        format!(r#"{{"auths": {{"{elsewhere}": {{"auth": "dGVzdGVyOnMzY3JldA=="}}}}}}"#),
    )
    .unwrap();
    let auth = format!("{elsewhere}={USERPASS}\nregistry.example.com={USERPASS}");
    let out = pull(
        h.path(),
        &format!("{}/x:1", hostile.addr),
        &[("HERMETIC_REGISTRY_AUTH", &auth)],
    );
    refused(
        &out,
        &format!(
            "the registry needs credentials: log in first: set HERMETIC_REGISTRY_AUTH=\"{r}=USER:PASSWORD\", or `docker login {r}`",
            r = hostile.addr
        ),
    );
    assert!(!hostile.seen().is_empty(), "it was asked");
    assert_eq!(hostile.authorizations(), Vec::<String>::new());
    // A malformed variable is said at once, without its password.
    let out = pull(
        h.path(),
        &format!("{}/x:1", hostile.addr),
        &[("HERMETIC_REGISTRY_AUTH", "registry.example.com:pa:ss=w0rd")],
    );
    let said = refused(
        &out,
        "HERMETIC_REGISTRY_AUTH, entry 1: the registry is written host[:port]",
    );
    assert!(!said.contains("w0rd"), "{said}");
}

/// A Bearer challenge naming a token server on another host, over plain HTTP, is
/// refused before any request — even when it is the registry's own port under another
/// name — and the error says how an operator names a token server of the registry's
/// own. (Every server here is on loopback, so plain HTTP: an HTTPS token server on
/// another host, which is asked anonymously, is the client's unit test
/// `a_token_server_on_another_host_is_asked_without_the_credentials`.)
#[test]
fn a_token_server_on_another_host_over_plain_http_is_refused_before_any_request() {
    let tokens = token_server();
    let hostile = bearer_registry(format!("http://{}/token", tokens.addr));
    let h = TempDir::new().unwrap();
    let auth = format!("{}={USERPASS}", hostile.addr);
    let out = pull(
        h.path(),
        &format!("{}/x:1", hostile.addr),
        &[("HERMETIC_REGISTRY_AUTH", &auth)],
    );
    refused(
        &out,
        &format!(
            "If {t} is {r}'s own, name it: HERMETIC_REGISTRY_TOKEN_HOSTS=\"{r}={t}\"",
            r = hostile.addr,
            t = tokens.addr
        ),
    );
    assert_eq!(tokens.seen(), Vec::<Seen>::new());
    assert_eq!(hostile.authorizations(), Vec::<String>::new());
    // The registry's own port by another name is another host.
    let port = hostile.addr.rsplit_once(':').unwrap().1;
    let alias = bearer_registry(format!("http://localhost:{port}/token"));
    let auth = format!("{}={USERPASS}", alias.addr);
    refused(
        &pull(
            h.path(),
            &format!("{}/x:1", alias.addr),
            &[("HERMETIC_REGISTRY_AUTH", &auth)],
        ),
        "not https",
    );
    assert_eq!(alias.authorizations(), Vec::<String>::new());
    // Naming it for another registry does not name it for this one.
    let names = format!("registry.example.com={}", tokens.addr);
    let auth = format!("{}={USERPASS}", hostile.addr);
    refused(
        &pull(
            h.path(),
            &format!("{}/x:1", hostile.addr),
            &[
                ("HERMETIC_REGISTRY_AUTH", &auth),
                ("HERMETIC_REGISTRY_TOKEN_HOSTS", &names),
            ],
        ),
        "not https",
    );
    assert_eq!(tokens.seen(), Vec::<Seen>::new());
}

/// The way that works: a token server on the registry's own `host:port`, or one the
/// operator named for it, receives the credentials and the registry receives the token.
#[test]
fn the_registry_and_its_named_token_server_receive_the_credentials() {
    let h = TempDir::new().unwrap();
    let tokens = token_server();
    let registry = bearer_registry(format!("http://{}/token", tokens.addr));
    let auth = format!("{}={USERPASS}", registry.addr);
    let names = format!("{}={}", registry.addr, tokens.addr);
    let out = pull(
        h.path(),
        &format!("{}/x:1", registry.addr),
        &[
            ("HERMETIC_REGISTRY_AUTH", &auth),
            ("HERMETIC_REGISTRY_TOKEN_HOSTS", &names),
        ],
    );
    // Authenticated: the registry then has nothing at that reference.
    refused(&out, "not found in the registry");
    assert_eq!(tokens.authorizations(), [BASIC]);
    assert!(tokens.seen()[0].path.contains("service=hostile"));
    assert!(
        registry
            .authorizations()
            .iter()
            .all(|a| a == "Bearer tok-123"),
        "{:?}",
        registry.seen()
    );
    assert!(!registry.authorizations().is_empty());
}

/// A token server on the registry's own `host:port` needs no naming.
#[test]
fn a_token_server_on_the_registry_itself_receives_the_credentials() {
    let h = TempDir::new().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let realm = format!("http://{}/token", listener.local_addr().unwrap());
    let registry = Recorder::on(listener, move |path, auth| {
        if path.starts_with("/token") {
            return match auth {
                Some(BASIC) => http("200 OK", &[], br#"{"access_token": "tok-9"}"#),
                _ => http("401 Unauthorized", &[], b"{}"),
            };
        }
        match auth {
            Some("Bearer tok-9") => http("404 Not Found", &[], b"{}"),
            _ => http(
                "401 Unauthorized",
                &[("WWW-Authenticate", format!(r#"Bearer realm="{realm}""#))],
                b"{}",
            ),
        }
    });
    let auth = format!("{}={USERPASS}", registry.addr);
    refused(
        &pull(
            h.path(),
            &format!("{}/x:1", registry.addr),
            &[("HERMETIC_REGISTRY_AUTH", &auth)],
        ),
        "not found in the registry",
    );
    let seen = registry.seen();
    let token_requests: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.path.starts_with("/token"))
        .collect();
    assert_eq!(token_requests.len(), 1, "{seen:?}");
    assert_eq!(token_requests[0].authorization.as_deref(), Some(BASIC));
    assert!(
        seen.iter().filter(|s| !s.path.starts_with("/token")).all(
            |s| s.authorization.is_none() || s.authorization.as_deref() == Some("Bearer tok-9")
        ),
        "{seen:?}"
    );
}

/// A real registry (distribution 2.8, htpasswd): credentials named for it — a password
/// holding `:` and `=` — push and pull; credentials named for another registry are not
/// used; wrong ones are refused by the registry.
#[test]
fn a_real_registry_takes_the_credentials_named_for_it() {
    let registry = Registry::start(true);
    let h = TempDir::new().unwrap();
    let h = h.path();
    let reference = registry.reference("tools/echo:1");
    let wasm = guest("echo");
    let push = |auth: &str| {
        hermetic(h)
            .args(["push", wasm.to_str().unwrap(), &reference, "--insecure"])
            .env("HERMETIC_REGISTRY_AUTH", auth)
            .output()
            .unwrap()
    };
    refused(
        &push(&format!("127.0.0.1:1={USERPASS}")),
        "the registry needs credentials: log in first",
    );
    refused(
        &push(&format!("{}=deployer:wrong", registry.addr)),
        "the credentials were refused",
    );
    let both = format!("127.0.0.1:1=x:y\n{}={USERPASS}\n", registry.addr);
    let pinned = ok(&push(&both));
    assert!(pinned.starts_with("oci://"), "{pinned}");
    ok(&pull(h, &reference, &[("HERMETIC_REGISTRY_AUTH", &both)]));
}
