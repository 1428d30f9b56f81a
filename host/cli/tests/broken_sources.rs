//! A community tool that cannot be loaded does not stop the server (issue 47, item
//! 7): not pulled, unsigned, tampered with in the store — each is listed unavailable
//! with what to do and the rest are served, unless the operator asks for strict
//! start-up. The hints name the command that helps (`hermetic pull --policy FILE`,
//! never `--store` for the policy's own store; never "pull it again" when the
//! registry serves the bad bytes). And a pull killed midway (kill -9) leaves nothing
//! in `store/tmp/` past the next pull or start, while a live pull's file is left
//! alone. Real `docker-registry`, real binary, MCP over stdio; a registry that stalls
//! mid-blob is a small server of this file's own.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

mod common;

use common::community::{hermetic, json, ok, refused, run, said, write_policy};
use hermetic_test_support::guests::guest;
use hermetic_test_support::mcp_stdio;
use hermetic_test_support::oci_registry::Registry;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// `hermetic tools --json` rows by name.
fn tools(h: &Path, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["--no-bundled"];
    all.extend(args);
    all.extend(["tools", "--json"]);
    json(&run(h, &all)).as_array().unwrap().clone()
}

fn row<'a>(rows: &'a [Value], name: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {rows:?}"))
}

#[test]
fn a_tool_that_cannot_be_loaded_is_listed_unavailable_and_the_rest_are_served() {
    let registry = Registry::start(false);
    let publisher = TempDir::new().unwrap();
    let p = publisher.path();
    ok(&run(p, &["keygen", "--out", "key"]));
    let push = |tool: &str, repo: &str| {
        ok(&run(
            p,
            &[
                "push",
                guest(tool).to_str().unwrap(),
                &registry.reference(repo),
                "--insecure",
            ],
        ))
    };
    let echo = push("echo", "tools/echo:1");
    ok(&run(p, &["sign", &echo, "--key", "key", "--insecure"]));
    let clock = push("clock", "tools/clock:1");
    // Pushed, never pulled.
    let absent = push("envdump", "tools/envdump:1");

    let host = TempDir::new().unwrap();
    let h = host.path();
    std::fs::copy(p.join("key.pub"), h.join("key.pub")).unwrap();
    let sources = [
        ("echo", echo.as_str()),
        ("clock", clock.as_str()),
        ("envdump", absent.as_str()),
    ];
    let policy_path = write_policy(h, true, &sources, "");
    let policy = policy_path.to_str().unwrap();
    // The operator pulls echo, and clock under a policy that does not require
    // signatures (same store): it is in the store, unsigned.
    ok(&run(h, &["pull", "--policy", policy, &echo, "--insecure"]));
    let lax = h.join("lax");
    std::fs::create_dir_all(&lax).unwrap();
    std::fs::write(
        lax.join("policy.toml"),
        "[trust]\nrequire_signature = false\nstore = \"../store\"\n",
    )
    .unwrap();
    ok(&run(
        h,
        &["pull", "--policy", "lax/policy.toml", &clock, "--insecure"],
    ));

    // `hermetic tools`: echo available; clock and envdump listed unavailable, why,
    // and what to do.
    let rows = tools(h, &["--policy", policy]);
    assert_eq!(row(&rows, "echo")["available"], true, "{rows:?}");
    let unsigned = row(&rows, "clock");
    assert_eq!(unsigned["available"], false);
    assert!(
        unsigned["reason"]
            .as_str()
            .unwrap()
            .contains("is not signed; ask its publisher"),
        "{unsigned}"
    );
    let missing = row(&rows, "envdump");
    let reason = missing["reason"].as_str().unwrap();
    assert!(
        reason.contains("is not in the tool store")
            && reason.contains(&format!("run `hermetic pull --policy {policy}`")),
        "{reason}"
    );
    assert!(
        !reason.contains("--store"),
        "the store is the policy's: {reason}"
    );
    // With a --store of the command line's, the hint names it.
    let elsewhere = tools(h, &["--policy", policy, "--store", "other"]);
    let other = row(&elsewhere, "echo")["reason"].as_str().unwrap();
    assert!(
        other.contains(&format!(
            "run `hermetic pull --policy {policy} --store other`"
        )),
        "{other}"
    );
    // `inspect` of a skipped tool: it does not load, and why (exit 1).
    let inspected = run(
        h,
        &["--policy", policy, "--no-bundled", "inspect", "envdump"],
    );
    assert_eq!(inspected.status.code(), Some(1), "{}", said(&inspected));
    let report: Value = serde_json::from_slice(&inspected.stdout).unwrap();
    assert_eq!(report["loads"], false);
    assert_eq!(report["reason"], reason);

    // Served over MCP: echo answers; the start warned about the other two.
    let mut serve = hermetic(h);
    serve.args(["--policy", policy, "--no-bundled", "serve", "--stdio"]);
    serve.stderr(Stdio::piped());
    let mut session = mcp_stdio::open(&mut serve);
    mcp_stdio::send(
        &mut session.stdin,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": "hi"}}}),
    );
    let result = mcp_stdio::reply(&mut session.lines, 2);
    assert_eq!(result["result"]["isError"], false, "{result}");
    drop(session.stdin);
    let mut stderr = String::new();
    session
        .child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let _ = session.child.wait();
    assert!(
        stderr.contains("warning: skipped tools.clock (")
            && stderr.contains("warning: skipped tools.envdump ("),
        "{stderr}"
    );

    // Strict start-up, asked for by flag or by policy: the first broken tool stops it.
    let strict = run(
        h,
        &["--policy", policy, "--no-bundled", "--strict", "tools"],
    );
    assert_eq!(strict.status.code(), Some(3), "{}", said(&strict));
    assert!(
        said(&strict).contains("strict start-up"),
        "{}",
        said(&strict)
    );
    let text = std::fs::read_to_string(&policy_path).unwrap();
    std::fs::write(
        &policy_path,
        text.replace(
            "require_signature = true\n",
            "require_signature = true\nstrict = true\n",
        ),
    )
    .unwrap();
    refused(
        &run(h, &["--policy", policy, "--no-bundled", "tools"]),
        "tools.clock:",
    );
    std::fs::write(&policy_path, &text).unwrap();

    // Echo's stored component changed on disk: unavailable, saying to pull again
    // with the policy; a pull puts the good bytes back.
    let blob = h.join("store/blobs/sha256").join(
        json(&run(
            h,
            &["--policy", policy, "--no-bundled", "inspect", "echo"],
        ))["sha256"]
            .as_str()
            .unwrap(),
    );
    let original = std::fs::read(&blob).unwrap();
    let mut changed = original.clone();
    changed.push(0);
    std::fs::write(&blob, &changed).unwrap();
    let rows = tools(h, &["--policy", policy]);
    let tampered = row(&rows, "echo")["reason"].as_str().unwrap().to_owned();
    assert!(
        tampered.contains("the stored file was changed or corrupted since it was pulled")
            && tampered.contains(&format!("run `hermetic pull --policy {policy}`")),
        "{tampered}"
    );
    ok(&run(h, &["pull", "--policy", policy, &echo, "--insecure"]));
    assert_eq!(std::fs::read(&blob).unwrap(), original);
    assert_eq!(
        row(&tools(h, &["--policy", policy]), "echo")["available"],
        true
    );
}

#[test]
fn a_hook_not_in_the_store_names_the_pull_that_fetches_it() {
    // A hook stops the start (it stands in front of calls): its error says what to run.
    let h = TempDir::new().unwrap();
    let h = h.path();
    let source = format!("oci://127.0.0.1:1/hooks/gate@sha256:{}", "a".repeat(64));
    let policy = write_policy(
        h,
        false,
        &[],
        &format!("\n[hooks.gate]\nsource = \"{source}\"\norder = 1\n"),
    );
    let policy = policy.to_str().unwrap();
    let all = refused(
        &run(h, &["--policy", policy, "--no-bundled", "tools"]),
        "hooks.gate:",
    );
    assert!(
        all.contains(&format!("run `hermetic pull --policy {policy} {source}`")),
        "{all}"
    );
    assert!(!all.contains("--store"), "{all}");
}

#[test]
fn bad_bytes_from_the_registry_are_not_met_with_pull_it_again() {
    let registry = Registry::start(false);
    let h = TempDir::new().unwrap();
    let h = h.path();
    let pinned = ok(&run(
        h,
        &[
            "push",
            guest("echo").to_str().unwrap(),
            &registry.reference("tools/echo:1"),
            "--insecure",
        ],
    ));
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(registry.blob_file(pinned.rsplit_once('@').unwrap().1)).unwrap(),
    )
    .unwrap();
    let file = registry.blob_file(manifest["layers"][0]["digest"].as_str().unwrap());
    let mut bytes = std::fs::read(&file).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&file, &bytes).unwrap();
    let all = refused(
        &run(h, &["pull", &pinned, "--insecure", "--store", "store"]),
        "the registry serves content that does not match the digest it is pinned to",
    );
    assert!(
        all.contains("tell the publisher, or pin another digest"),
        "{all}"
    );
    assert!(!all.contains("pull it again"), "{all}");
}

/// A registry that serves one manifest and then, for its blob, half the bytes and
/// nothing more: a pull stays in the middle of writing `store/tmp/` until killed.
fn stalling_registry(component: Vec<u8>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let config = br#"{"architecture":"wasm","os":"wasip2"}"#.to_vec();
    let digest = |b: &[u8]| hermetic_distribution::Digest::of(b).to_string();
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.wasm.config.v0+json", "digest": digest(&config), "size": config.len()},
        "layers": [{"mediaType": "application/wasm", "digest": digest(&component), "size": component.len()}],
    })
    .to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let (manifest, component) = (manifest.clone(), component.clone());
            std::thread::spawn(move || {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&request).into_owned();
                let path = text.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let head = |status: &str, len: usize, kind: &str| {
                    format!(
                        "HTTP/1.1 {status}\r\nContent-Length: {len}\r\nContent-Type: {kind}\r\nConnection: close\r\n\r\n"
                    )
                };
                if path == "/v2/" {
                    let _ = stream.write_all(head("200 OK", 2, "application/json").as_bytes());
                    let _ = stream.write_all(b"{}");
                } else if path.contains("/manifests/") && !path.contains(".sig") {
                    let _ = stream.write_all(
                        head(
                            "200 OK",
                            manifest.len(),
                            "application/vnd.oci.image.manifest.v1+json",
                        )
                        .as_bytes(),
                    );
                    let _ = stream.write_all(manifest.as_bytes());
                } else if path.contains("/blobs/") {
                    let _ = stream.write_all(
                        head("200 OK", component.len(), "application/octet-stream").as_bytes(),
                    );
                    let _ = stream.write_all(&component[..component.len() / 2]);
                    let _ = stream.flush();
                    // Hold the connection open: the pull waits for the rest.
                    std::thread::sleep(Duration::from_secs(600));
                } else {
                    let _ =
                        stream.write_all(head("404 Not Found", 2, "application/json").as_bytes());
                    let _ = stream.write_all(b"{}");
                }
            });
        }
    });
    addr
}

/// The temporary files in `store/tmp/` (not its lock file).
fn temporary_files(store: &Path) -> Vec<String> {
    std::fs::read_dir(store.join("tmp"))
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n != ".lock")
                .collect()
        })
        .unwrap_or_default()
}

/// `hermetic pull REF` into `store/`, in the background.
fn pull_in_background(h: &Path, reference: &str) -> std::process::Child {
    hermetic(h)
        .args(["pull", reference, "--insecure", "--store", "store"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits until a temporary file not in `before` holds bytes (a pull is in the middle
/// of its blob); its name.
fn writing(h: &Path, before: &[String]) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let writing = temporary_files(&h.join("store"))
            .into_iter()
            .find(|f| !before.contains(f))
            .filter(|f| std::fs::metadata(h.join("store/tmp").join(f)).is_ok_and(|m| m.len() > 0));
        if let Some(file) = writing {
            return file;
        }
        assert!(Instant::now() < deadline, "the pull never started writing");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_pull_killed_midway_leaves_nothing_past_the_next_pull_or_start() {
    let component = std::fs::read(guest("echo")).unwrap();
    let stall = stalling_registry(component);
    let registry = Registry::start(false);
    let h = TempDir::new().unwrap();
    let h = h.path();
    let good = ok(&run(
        h,
        &[
            "push",
            guest("clock").to_str().unwrap(),
            &registry.reference("tools/clock:1"),
            "--insecure",
        ],
    ));
    let stalled = format!("{stall}/tools/echo:1");

    // A pull killed (SIGKILL: no clean-up of its own) midway through the blob.
    let mut first = pull_in_background(h, &stalled);
    let dead = writing(h, &[]);
    first.kill().unwrap();
    first.wait().unwrap();
    assert_eq!(temporary_files(&h.join("store")), vec![dead.clone()]);

    // The next pull removes it — and while that pull is live, writing its own file,
    // a third pull leaves the live one's file alone.
    let mut second = pull_in_background(h, &stalled);
    let live = writing(h, std::slice::from_ref(&dead));
    assert_eq!(
        temporary_files(&h.join("store")),
        vec![live.clone()],
        "the dead pull's file is gone, the live one's is there"
    );
    ok(&run(h, &["pull", &good, "--insecure", "--store", "store"]));
    assert_eq!(
        temporary_files(&h.join("store")),
        vec![live.clone()],
        "a live pull's file is not removed under it"
    );
    second.kill().unwrap();
    second.wait().unwrap();

    // At start: a host whose policy names a tool from this store cleans it.
    let policy = write_policy(h, false, &[("clock", good.as_str())], "");
    assert_eq!(temporary_files(&h.join("store")), [live]);
    let rows = json(&run(
        h,
        &[
            "--policy",
            policy.to_str().unwrap(),
            "--no-bundled",
            "tools",
            "--json",
        ],
    ));
    assert!(rows.to_string().contains("clock"), "{rows}");
    assert!(temporary_files(&h.join("store")).is_empty());
}

#[test]
fn a_name_the_policy_gives_a_source_is_never_handed_to_a_bundled_or_tools_dir_tool() {
    let host = TempDir::new().unwrap();
    let h = host.path();
    let digest = format!("sha256:{}", "a".repeat(64));
    // read_file is bundled; echo comes from a --tools-dir. The policy names both by
    // source (never pulled) and grants them, as a policy for the community tools.
    let policy_path = write_policy(
        h,
        false,
        &[
            (
                "read_file",
                &format!("oci://127.0.0.1:1/tools/read_file@{digest}"),
            ),
            ("echo", &format!("oci://127.0.0.1:1/tools/echo@{digest}")),
        ],
        "",
    );
    let policy = policy_path.to_str().unwrap();
    let dir = h.join("tools");
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(guest("echo"), dir.join("echo.wasm")).unwrap();
    let args = ["--policy", policy, "--tools-dir", dir.to_str().unwrap()];
    let listed = run(h, &[&args[..], &["tools", "--json"]].concat());
    let rows: Vec<Value> = serde_json::from_str(&ok(&listed)).unwrap();
    for name in ["read_file", "echo"] {
        let named: Vec<&Value> = rows.iter().filter(|r| r["name"] == name).collect();
        assert_eq!(named.len(), 1, "one row for {name}: {rows:?}");
        assert_eq!(named[0]["available"], false, "{name}: {rows:?}");
        assert!(
            named[0]["reason"]
                .as_str()
                .unwrap()
                .contains("is not in the tool store"),
            "{name}: {rows:?}"
        );
    }
    let warned = said(&listed);
    assert!(
        warned.contains(
            "warning: skipped bundled:read_file: the policy names the tool \"read_file\" by source"
        ) && warned.contains("echo.wasm: refused: the policy names the tool \"echo\" by source"),
        "{warned}"
    );
    // Neither runs under the grants written for the community tool.
    refused(
        &run(
            h,
            &[&args[..], &["call", "echo", r#"{"message":"hi"}"#]].concat(),
        ),
        "echo",
    );
    let call = run(
        h,
        &[&args[..], &["call", "read_file", r#"{"path":"x"}"#]].concat(),
    );
    assert!(!call.status.success(), "{}", said(&call));
}
