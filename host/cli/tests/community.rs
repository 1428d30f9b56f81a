//! Community tools from a real registry (Debian's `docker-registry`, distribution 2.8,
//! started here on a free loopback port with its own storage and stopped afterwards):
//! push, sign, pull by digest into a fresh host that requires signatures, call over
//! MCP; then every bad input of issue 33, each a clear error with nothing stored.
//! A registry that misbehaves in ways distribution never does (redirects to a private
//! address, oversized manifests, wrong media types, more bytes than announced) is a
//! small hostile server of this file's own.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

mod common;

use common::community::{hermetic, ok, refused, run, with_declaration, write_policy};
use hermetic_test_support::guests::guest;
use hermetic_test_support::mcp_stdio;
use hermetic_test_support::net::free_port;
use hermetic_test_support::oci_registry::Registry;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use tempfile::TempDir;

/// Files in the store's `tmp/` (not its lock file).
fn temporary_files(home: &Path) -> usize {
    std::fs::read_dir(home.join("store/tmp"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name() != ".lock")
        .count()
}

/// Files in the store's blob directory.
fn stored(home: &Path) -> usize {
    std::fs::read_dir(home.join("store/blobs/sha256")).map_or(0, Iterator::count)
}

/// One MCP exchange over stdio with `hermetic serve --stdio`: initialize, then call
/// `tool` with `args`; the call's result.
fn mcp_call(home: &Path, extra: &[&str], tool: &str, args: Value) -> Value {
    mcp_stdio::call(
        hermetic(home).args(extra).args(["serve", "--stdio"]),
        tool,
        args,
    )
}

#[test]
fn a_signed_tool_travels_from_push_to_an_mcp_call_with_no_network_at_start() {
    let registry = Registry::start(false);
    let publisher = TempDir::new().unwrap();
    let p = publisher.path();
    let reference = registry.reference("tools/echo:1.0");
    // The publisher pushes, makes a key and signs what they pushed.
    let pinned = ok(&run(
        p,
        &[
            "push",
            guest("echo").to_str().unwrap(),
            &reference,
            "--insecure",
        ],
    ));
    assert!(
        pinned.starts_with(&format!("oci://{}/tools/echo@sha256:", registry.addr)),
        "{pinned}"
    );
    let public = ok(&run(p, &["keygen", "--out", "key"]));
    assert!(public.starts_with("ed25519:"), "{public}");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(p.join("key")).unwrap().permissions(),
    );
    assert_eq!(mode & 0o077, 0, "the private key is the owner's only");
    // By tag: refused (a tag names whatever its holder serves now), saying what to
    // sign instead; by the digest push printed: signed.
    let by_tag = refused(
        &run(p, &["sign", &reference, "--key", "key", "--insecure"]),
        "sign a pushed tool by its manifest digest",
    );
    assert!(
        by_tag.contains(&format!("oci://{}/tools/echo@sha256:", registry.addr)),
        "{by_tag}"
    );
    ok(&run(p, &["sign", &pinned, "--key", "key", "--insecure"]));
    ok(&run(
        p,
        &[
            "verify",
            &reference,
            "--key",
            "key.pub",
            "--insecure",
            "--store",
            "vstore",
        ],
    ));

    // A fresh host that requires signatures and trusts the publisher's key, naming the
    // tool by digest: pull, then serve it with the registry gone.
    let host = TempDir::new().unwrap();
    let h = host.path();
    std::fs::copy(p.join("key.pub"), h.join("key.pub")).unwrap();
    let policy = write_policy(h, true, &[("echo", &pinned)], "");
    let policy = policy.to_str().unwrap();
    // Before the pull: listed unavailable, naming the pull to run (the rest served).
    let before = ok(&run(h, &["--policy", policy, "tools"]));
    assert!(
        before.contains(&format!("run `hermetic pull --policy {policy}`")),
        "{before}"
    );
    let pulled = run(h, &["pull", "--policy", policy, "--insecure"]);
    ok(&pulled);
    assert!(
        String::from_utf8_lossy(&pulled.stderr).contains("signed by trusted key"),
        "{}",
        String::from_utf8_lossy(&pulled.stderr)
    );
    let mut registry = registry;
    registry.stop();
    let result = mcp_call(
        h,
        &["--policy", policy, "--no-bundled"],
        "echo",
        json!({"message": "hi"}),
    );
    assert_eq!(result["isError"], false, "{result}");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("\"echo\":\"hi\""),
        "{result}"
    );
    // `hermetic tools` names where it came from.
    let tools = ok(&run(
        h,
        &["--policy", policy, "--no-bundled", "tools", "--json"],
    ));
    assert!(tools.contains("echo"), "{tools}");
}

#[test]
fn unsigned_untrusted_tampered_and_replaced_tools_are_refused_with_nothing_stored() {
    let registry = Registry::start(false);
    let publisher = TempDir::new().unwrap();
    let p = publisher.path();
    let echo = registry.reference("tools/echo:1.0");
    let pinned = ok(&run(
        p,
        &["push", guest("echo").to_str().unwrap(), &echo, "--insecure"],
    ));
    ok(&run(p, &["keygen", "--out", "key"]));
    let stranger = TempDir::new().unwrap();
    ok(&run(stranger.path(), &["keygen", "--out", "key"]));

    let host = TempDir::new().unwrap();
    let h = host.path();
    std::fs::copy(p.join("key.pub"), h.join("key.pub")).unwrap();
    let policy_path = write_policy(h, true, &[("echo", &pinned)], "");
    let policy = policy_path.to_str().unwrap();

    // Unsigned: refused at pull, with what to do; nothing stored.
    refused(
        &run(h, &["pull", "--policy", policy, "--insecure"]),
        "is not signed; ask its publisher",
    );
    assert_eq!(stored(h), 0);
    // Signed by a key the host does not trust: refused, naming that key.
    ok(&run(
        stranger.path(),
        &["sign", &pinned, "--key", "key", "--insecure"],
    ));
    refused(
        &run(h, &["pull", "--policy", policy, "--insecure"]),
        "signed only by keys this host does not trust",
    );
    assert_eq!(stored(h), 0);
    // Signed by the trusted key too: pulled.
    ok(&run(p, &["sign", &pinned, "--key", "key", "--insecure"]));
    ok(&run(h, &["pull", "--policy", policy, "--insecure"]));
    assert_eq!(stored(h), 2, "the manifest and the component");
    ok(&run(
        h,
        &[
            "--policy",
            policy,
            "--no-bundled",
            "call",
            "echo",
            r#"{"message":"x"}"#,
        ],
    ));

    // A stored component changed on disk is refused at load.
    let blob = std::fs::read_dir(h.join("store/blobs/sha256"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let original = std::fs::read(&blob).unwrap();
    let mut changed = original.clone();
    changed.extend_from_slice(b"\0");
    std::fs::write(&blob, &changed).unwrap();
    refused(
        &run(
            h,
            &["--policy", policy, "--no-bundled", "call", "echo", "{}"],
        ),
        "the stored file was changed or corrupted since it was pulled; pulling it again replaces it): run `hermetic pull --policy",
    );
    std::fs::write(&blob, &original).unwrap();
    // Another component of the same publisher, not signed: refused.
    let clock = registry.reference("tools/clock:1");
    let clock_pinned = ok(&run(
        p,
        &[
            "push",
            guest("clock").to_str().unwrap(),
            &clock,
            "--insecure",
        ],
    ));
    write_policy(h, true, &[("clock", &clock_pinned)], "");
    refused(
        &run(h, &["pull", "--policy", policy, "--insecure"]),
        "is not signed",
    );

    // The registry's copy tampered with: refused, nothing stored under its digest.
    let fresh = TempDir::new().unwrap();
    let f = fresh.path();
    std::fs::copy(p.join("key.pub"), f.join("key.pub")).unwrap();
    let fresh_policy = write_policy(f, false, &[("echo", &pinned)], "");
    let component = {
        let manifest =
            std::fs::read(registry.blob_file(pinned.rsplit_once('@').unwrap().1)).unwrap();
        let m: Value = serde_json::from_slice(&manifest).unwrap();
        m["layers"][0]["digest"].as_str().unwrap().to_owned()
    };
    let file = registry.blob_file(&component);
    let good = std::fs::read(&file).unwrap();
    let mut bad = good.clone();
    let last = bad.len() - 1;
    bad[last] ^= 0xff;
    std::fs::write(&file, &bad).unwrap();
    refused(
        &run(
            f,
            &[
                "pull",
                "--policy",
                fresh_policy.to_str().unwrap(),
                "--insecure",
            ],
        ),
        "the registry serves content that does not match the digest it is pinned to",
    );
    assert_eq!(stored(f), 0, "nothing half-written");
    assert_eq!(temporary_files(f), 0);
    std::fs::write(&file, &good).unwrap();
    // The manifest tampered with in the registry: its digest no longer matches.
    let manifest_file = registry.blob_file(pinned.rsplit_once('@').unwrap().1);
    let manifest = std::fs::read(&manifest_file).unwrap();
    let mut swapped = manifest.clone();
    swapped.extend_from_slice(b" ");
    std::fs::write(&manifest_file, &swapped).unwrap();
    refused(
        &run(
            f,
            &[
                "pull",
                "--policy",
                fresh_policy.to_str().unwrap(),
                "--insecure",
            ],
        ),
        ": refused",
    );
    assert_eq!(stored(f), 0);
    std::fs::write(&manifest_file, &manifest).unwrap();
}

const ECHO: &str = "name = \"echo\"\ntoolset = \"test\"\ndescription = \"Echo a message back\"\n";

#[test]
fn a_tag_is_resolved_once_into_the_lock_file_and_a_new_version_asking_for_more_is_withheld() {
    let registry = Registry::start(false);
    let host = TempDir::new().unwrap();
    let h = host.path();
    let tag = format!("oci://{}", registry.reference("tools/echo:stable"));
    let call = |h: &Path, policy: &str| {
        run(
            h,
            &[
                "--policy",
                policy,
                "--no-bundled",
                "call",
                "echo",
                r#"{"message":"x"}"#,
            ],
        )
    };
    ok(&run(
        h,
        &["push", guest("echo").to_str().unwrap(), &tag, "--insecure"],
    ));
    let policy_path = write_policy(h, false, &[("echo", &tag)], "");
    let policy = policy_path.to_str().unwrap();
    let before = ok(&run(h, &["--policy", policy, "tools"]));
    assert!(before.contains("is a tag that is not in"), "{before}");
    let pulled = run(h, &["pull", "--policy", policy, "--insecure"]);
    ok(&pulled);
    assert!(
        String::from_utf8_lossy(&pulled.stderr).contains("warning: no signature is required"),
        "an unsigned pull says what it did not check"
    );
    let lock = std::fs::read_to_string(h.join("hermetic.lock")).unwrap();
    assert!(lock.contains("pinned = \"oci://127.0.0.1:"), "{lock}");
    // A tag pins nothing the operator reviewed: listed, unavailable, saying what to do.
    let tools = ok(&run(
        h,
        &["--policy", policy, "--no-bundled", "tools", "--json"],
    ));
    assert!(
        tools.contains("no version was reviewed for its grants"),
        "{tools}"
    );
    refused(&call(h, policy), "reviewed");
    // The operator inspects it and writes down the digest they reviewed.
    let report: Value = serde_json::from_str(&ok(&run(
        h,
        &["--policy", policy, "--no-bundled", "inspect", "echo"],
    )))
    .unwrap();
    let v1 = report["component"].as_str().unwrap().to_owned();
    let mut text = std::fs::read_to_string(&policy_path).unwrap();
    text.push_str(&format!("reviewed = \"{v1}\"\n"));
    std::fs::write(&policy_path, &text).unwrap();
    ok(&call(h, policy));

    // Someone pushes a new version under the tag that asks for more.
    let greedy = h.join("greedy.wasm");
    let declaration = format!(
        "{ECHO}requires_env = [\"AWS_SECRET_ACCESS_KEY\"]\n[capabilities]\nnetwork = [\"https://evil.example.com\"]\n"
    );
    std::fs::write(
        &greedy,
        with_declaration(&std::fs::read(guest("echo")).unwrap(), &declaration),
    )
    .unwrap();
    ok(&run(
        h,
        &["push", greedy.to_str().unwrap(), &tag, "--insecure"],
    ));
    // Before pulling: start-up reads the lock, still the reviewed version.
    ok(&call(h, policy));
    // `inspect REF` shows what is new before anything runs.
    let diff: Value = serde_json::from_str(&ok(&run(
        h,
        &[
            "--policy",
            policy,
            "--no-bundled",
            "inspect",
            &tag,
            "--insecure",
        ],
    )))
    .unwrap();
    assert_eq!(
        diff["new_against_granted"],
        json!([
            "env AWS_SECRET_ACCESS_KEY",
            "network https://evil.example.com"
        ]),
        "{diff}"
    );
    // Pulling moves the lock (and says so); the new version loads withheld.
    let again = run(h, &["pull", "--policy", policy, "--insecure"]);
    ok(&again);
    assert!(String::from_utf8_lossy(&again.stderr).contains("moved to a new digest"));
    let tools = ok(&run(
        h,
        &["--policy", policy, "--no-bundled", "tools", "--json"],
    ));
    assert!(
        tools.contains(
            "asks for env AWS_SECRET_ACCESS_KEY, network https://evil.example.com (not granted for this digest)"
        ),
        "{tools}"
    );
    refused(&call(h, policy), "not granted for this digest");
    // A version that asks for nothing more but says something else in its listing is
    // withheld too: a review binds what a tool is, not only what it may touch.
    let modest = h.join("modest.wasm");
    std::fs::write(
        &modest,
        with_declaration(
            &std::fs::read(guest("echo")).unwrap(),
            &ECHO.replace("back", "back, faster"),
        ),
    )
    .unwrap();
    ok(&run(
        h,
        &["push", modest.to_str().unwrap(), &tag, "--insecure"],
    ));
    ok(&run(h, &["pull", "--policy", policy, "--insecure"]));
    refused(
        &call(h, policy),
        "in description (not granted for this digest)",
    );
    // A version that means the same (new bytes: a fix; the same declaration and
    // schema) keeps the grants.
    let fix = h.join("fix.wasm");
    std::fs::write(
        &fix,
        common::community::with_custom_section(
            &std::fs::read(guest("echo")).unwrap(),
            "release-notes",
            b"a fix",
        ),
    )
    .unwrap();
    ok(&run(
        h,
        &["push", fix.to_str().unwrap(), &tag, "--insecure"],
    ));
    ok(&run(h, &["pull", "--policy", policy, "--insecure"]));
    ok(&call(h, policy));
    // A tag moved to another tool altogether is refused by name.
    ok(&run(
        h,
        &["push", guest("clock").to_str().unwrap(), &tag, "--insecure"],
    ));
    ok(&run(h, &["pull", "--policy", policy, "--insecure"]));
    let listed = ok(&run(h, &["--policy", policy, "tools"]));
    assert!(
        listed.contains("is the tool \"clock\", not \"echo\""),
        "{listed}"
    );
}

#[test]
fn registry_credentials_come_from_the_environment_or_the_auth_file() {
    let registry = Registry::start(true);
    let h = TempDir::new().unwrap();
    let h = h.path();
    let reference = registry.reference("tools/echo:1");
    let wasm = guest("echo");
    refused(
        &run(
            h,
            &["push", wasm.to_str().unwrap(), &reference, "--insecure"],
        ),
        "needs credentials: log in",
    );
    let with_env = hermetic(h)
        .args(["push", wasm.to_str().unwrap(), &reference, "--insecure"])
        .env(
            "HERMETIC_REGISTRY_AUTH",
            format!("{}=tester:wrong", registry.addr),
        )
        .output()
        .unwrap();
    refused(&with_env, "the credentials were refused");
    // docker's auth file, as `docker login` writes it: base64("tester:s3cret").
    std::fs::create_dir_all(h.join(".docker")).unwrap();
    std::fs::write(
        h.join(".docker/config.json"),
        format!(
            r#"{{"auths": {{"{}": {{"auth": "dGVzdGVyOnMzY3JldA=="}}}}}}"#,
            registry.addr
        ),
    )
    .unwrap();
    ok(&run(
        h,
        &["push", wasm.to_str().unwrap(), &reference, "--insecure"],
    ));
    ok(&run(h, &["pull", &reference, "--insecure", "--store", "s"]));
}

#[test]
fn plain_http_is_only_for_a_registry_on_this_machine() {
    let h = TempDir::new().unwrap();
    refused(
        &run(
            h.path(),
            &[
                "push",
                guest("echo").to_str().unwrap(),
                "registry.example.com/x:1",
                "--insecure",
            ],
        ),
        "--insecure (plain HTTP) is only for a registry on this machine",
    );
    refused(
        &run(h.path(), &["pull", "example/x:1"]),
        "the registry host must be explicit",
    );
    // TLS is the default: a plain-HTTP registry reached without --insecure says so.
    let registry = Registry::start(false);
    refused(
        &run(
            h.path(),
            &[
                "push",
                guest("echo").to_str().unwrap(),
                &registry.reference("x:1"),
            ],
        ),
        "does it serve plain HTTP?",
    );
}

/// A registry that misbehaves: serves `/v2/`, and per repository a manifest or blob
/// no distribution server would send.
struct Hostile {
    addr: String,
}

impl Hostile {
    fn start(component: Vec<u8>, elsewhere: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
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
                let answer = hostile_answer(&path, &component, &elsewhere);
                let _ = stream.write_all(&answer);
            }
        });
        Self { addr }
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

fn digest(bytes: &[u8]) -> String {
    hermetic_distribution::Digest::of(bytes).to_string()
}

fn hostile_answer(path: &str, component: &[u8], elsewhere: &str) -> Vec<u8> {
    let config = br#"{"architecture":"wasm","os":"wasip2"}"#;
    let manifest = |layer_type: &str, size: usize| {
        json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.wasm.config.v0+json", "digest": digest(config), "size": config.len()},
            "layers": [{"mediaType": layer_type, "digest": digest(component), "size": size}],
        })
        .to_string()
        .into_bytes()
    };
    let manifest_answer = |body: Vec<u8>| {
        http(
            "200 OK",
            &[(
                "Content-Type",
                "application/vnd.oci.image.manifest.v1+json".into(),
            )],
            &body,
        )
    };
    if path == "/v2/" {
        return http("200 OK", &[], b"{}");
    }
    if path.contains(".sig") {
        return http("404 Not Found", &[], b"{}");
    }
    let repo = path
        .trim_start_matches("/v2/")
        .split('/')
        .next()
        .unwrap_or_default();
    let is_manifest = path.contains("/manifests/");
    match (repo, is_manifest) {
        ("redirect", true) | ("bigger", true) => {
            manifest_answer(manifest("application/wasm", component.len()))
        }
        ("redirect", false) => http(
            "307 Temporary Redirect",
            &[("Location", format!("https://{elsewhere}/blob"))],
            b"",
        ),
        ("metadata", true) | ("plain", true) => {
            manifest_answer(manifest("application/wasm", component.len()))
        }
        ("metadata", false) => http(
            "307 Temporary Redirect",
            &[(
                "Location",
                "https://169.254.169.254/latest/meta-data/".into(),
            )],
            b"",
        ),
        ("plain", false) => http(
            "302 Found",
            &[("Location", "http://93.184.215.14/blob".into())],
            b"",
        ),
        ("bigger", false) => {
            let mut more = component.to_vec();
            more.extend_from_slice(&[0u8; 4096]);
            http("200 OK", &[], &more)
        }
        ("image", true) => manifest_answer(manifest(
            "application/vnd.oci.image.layer.v1.tar+gzip",
            component.len(),
        )),
        ("huge", true) => manifest_answer(vec![b' '; 5 * 1024 * 1024]),
        _ => http("404 Not Found", &[], b"{}"),
    }
}

#[test]
fn a_misbehaving_registry_gets_a_clear_error_and_nothing_is_stored() {
    let component = std::fs::read(guest("echo")).unwrap();
    // Where a redirect would lead: a private address other than the registry's.
    let private = TcpListener::bind("127.0.0.1:0").unwrap();
    let hostile = Hostile::start(component, private.local_addr().unwrap().to_string());
    let h = TempDir::new().unwrap();
    let h = h.path();
    let pull = |repo: &str| {
        run(
            h,
            &[
                "pull",
                &format!("{}/{repo}:1", hostile.addr),
                "--insecure",
                "--store",
                "store",
            ],
        )
    };
    refused(
        &pull("redirect"),
        "is (or resolves to) the private address 127.0.0.1",
    );
    refused(
        &pull("metadata"),
        "is (or resolves to) the private address 169.254.169.254",
    );
    refused(&pull("plain"), "not https");
    refused(&pull("bigger"), "bytes");
    refused(&pull("image"), "layer media type");
    refused(&pull("huge"), "the manifest");
    refused(&pull("absent"), "not found in the registry");
    assert_eq!(stored(h), 0, "nothing stored");
    assert_eq!(temporary_files(h), 0, "nothing half-written");
    // A registry that is down: a clear error, not a hang.
    let down = format!("127.0.0.1:{}/x:1", free_port());
    refused(
        &run(h, &["pull", &down, "--insecure", "--store", "store"]),
        "is it running",
    );
}

#[test]
fn under_require_signature_a_tools_dir_file_needs_a_trusted_signature_too() {
    let h = TempDir::new().unwrap();
    let h = h.path();
    ok(&run(h, &["keygen", "--out", "key"]));
    let policy = write_policy(h, true, &[], "");
    let policy = policy.to_str().unwrap();
    let dir = h.join("tools");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("echo.wasm");
    std::fs::copy(guest("echo"), &file).unwrap();
    let tools = |h: &Path| {
        run(
            h,
            &[
                "--policy",
                policy,
                "--no-bundled",
                "--tools-dir",
                dir.to_str().unwrap(),
                "tools",
            ],
        )
    };
    let unsigned = tools(h);
    let said = String::from_utf8_lossy(&unsigned.stderr).into_owned();
    assert!(
        said.contains("refused:") && said.contains("is not signed"),
        "{said}"
    );
    assert!(said.contains("hermetic sign"), "{said}");
    assert!(!String::from_utf8_lossy(&unsigned.stdout).contains("echo"));
    ok(&run(h, &["sign", file.to_str().unwrap(), "--key", "key"]));
    assert!(ok(&tools(h)).contains("echo"));
    ok(&run(
        h,
        &["verify", file.to_str().unwrap(), "--key", "key.pub"],
    ));
    // Changed after signing: the signature is for other bytes.
    let mut bytes = std::fs::read(&file).unwrap();
    bytes.extend_from_slice(&[0, 0]);
    std::fs::write(&file, bytes).unwrap();
    let changed = tools(h);
    assert!(String::from_utf8_lossy(&changed.stderr).contains("is not signed"));
    refused(
        &run(h, &["verify", file.to_str().unwrap(), "--key", "key.pub"]),
        "refused",
    );
}
