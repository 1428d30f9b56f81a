//! Tools written in Python (componentize-py) and JavaScript (componentize-js), served
//! over MCP by the real binary: granted and refused like Rust tools, and contained like
//! them (memory, endless loops, sockets). The components are built by `.ci/run` into
//! `target/polyglot/` (see guest-tools/python and guest-tools/js); a missing one fails
//! the test with the command that builds it, unless `HERMETIC_SKIP_POLYGLOT=1` says
//! this machine has no Python or Node toolchain.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

use hermetic_test_support::guests::test_cache;
use hermetic_test_support::mcp_stdio::{self as stdio, Session};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tempfile::TempDir;

/// Where `.ci/run` puts the built Python and JavaScript components.
fn artifacts() -> Option<PathBuf> {
    let dir = std::env::var_os("HERMETIC_POLYGLOT_DIR").map_or_else(
        || Path::new(hermetic::GUEST_BUILD_DIR).join("../../../polyglot"),
        PathBuf::from,
    );
    if dir.join("py_probe.wasm").is_file() && dir.join("js_probe.wasm").is_file() {
        warm(&dir);
        return Some(dir);
    }
    if std::env::var_os("HERMETIC_SKIP_POLYGLOT").is_some() {
        eprintln!("HERMETIC_SKIP_POLYGLOT is set: skipping the Python/JavaScript tool tests");
        return None;
    }
    panic!(
        "the Python/JavaScript test tools are not built in {}: run .ci/run, or build them \
         as its `polyglot` step does (or set HERMETIC_SKIP_POLYGLOT=1 on a machine without \
         python3-venv and node)",
        dir.display()
    );
}

/// Compiles every built component into the shared cache once, before any test loads
/// them: tests run in parallel, and each compiling the same 20 MB components at once
/// (seconds each) would only repeat the work.
fn warm(dir: &Path) {
    static WARM: std::sync::Once = std::sync::Once::new();
    WARM.call_once(|| {
        let all = tools(dir, TOOLS);
        let root = TempDir::new().unwrap();
        let out = hermetic(root.path(), "", all.path(), &["tools"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
}

/// A tools directory holding copies of the built components `names`.
fn tools(dir: &Path, names: &[&str]) -> TempDir {
    let tools = TempDir::new().unwrap();
    for name in names {
        std::fs::copy(
            dir.join(format!("{name}.wasm")),
            tools.path().join(format!("{name}.wasm")),
        )
        .unwrap_or_else(|e| panic!("{name}.wasm: {e}"));
    }
    tools
}

/// `hermetic --policy POLICY --no-bundled --tools-dir TOOLS ARGS…`, in `root`.
fn hermetic(root: &Path, policy: &str, tools: &Path, args: &[&str]) -> Command {
    std::fs::write(root.join("policy.toml"), policy).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hermetic"));
    cmd.current_dir(root)
        .env("HERMETIC_CACHE_DIR", test_cache())
        .args(["--policy", "policy.toml", "--no-bundled", "--tools-dir"])
        .arg(tools)
        .args(args);
    cmd
}

/// A loopback HTTP server answering every request with `body`, on its own thread: its
/// port, and how many connections it took.
fn http_server(body: &'static str) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            counted.fetch_add(1, Ordering::SeqCst);
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, connections)
}

/// `tools/call` in an open session: (the result's text parsed as JSON, or as a string;
/// whether it is an error).
fn call(session: &mut Session, id: i64, tool: &str, args: Value) -> (Value, bool) {
    stdio::send(
        &mut session.stdin,
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": tool, "arguments": args}}),
    );
    let reply = stdio::reply(&mut session.lines, id);
    let result = &reply["result"];
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {reply}"));
    let value = serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()));
    (value, result["isError"] == true)
}

/// The names `tools/list` offers.
fn listed(session: &mut Session) -> Vec<String> {
    stdio::send(
        &mut session.stdin,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    );
    let reply = stdio::reply(&mut session.lines, 1);
    reply["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

fn close(session: Session) {
    let Session {
        mut child, stdin, ..
    } = session;
    drop(stdin);
    let _ = child.wait();
}

const TOOLS: &[&str] = &[
    "read_notes",
    "weather_py",
    "py_probe",
    "js_probe",
    "text_stats_js",
];

#[test]
fn python_and_javascript_tools_are_served_over_mcp_with_exactly_their_grants() {
    let Some(built) = artifacts() else { return };
    let tools = tools(&built, TOOLS);
    let root = TempDir::new().unwrap();
    let notes = root.path().join("notes");
    std::fs::create_dir(&notes).unwrap();
    std::fs::write(notes.join("hello.txt"), "a note from the mount\n").unwrap();
    let (port, _) = http_server("hello from loopback");
    let url = format!("http://127.0.0.1:{port}/x");
    // Listening, never granted: what a refused request would have reached.
    let (other, other_connections) = http_server("not granted");
    let other_url = format!("http://127.0.0.1:{other}/x");

    // Granted: the notes mount, the loopback server for both probes.
    let granting = format!(
        "[mounts.notes]\npath = \"notes\"\naccess = \"ro\"\n\
         [tools.read_notes]\nmounts = [\"notes\"]\n\
         [tools.py_probe]\nnetwork = [\"http://127.0.0.1:{port}\"]\n\
         [tools.js_probe]\nnetwork = [\"http://127.0.0.1:{port}\"]\n"
    );
    let mut s = stdio::open(&mut hermetic(
        root.path(),
        &granting,
        tools.path(),
        &["serve", "--stdio"],
    ));
    let names = listed(&mut s);
    for name in ["read_notes", "py_probe", "js_probe", "text_stats_js"] {
        assert!(names.contains(&name.to_owned()), "{name} not in {names:?}");
    }
    // No WEATHER_API_KEY granted: hidden, as the Rust weather is.
    assert!(!names.contains(&"weather_py".to_owned()), "{names:?}");

    let (read, error) = call(&mut s, 2, "read_notes", json!({"path": "hello.txt"}));
    assert!(!error, "{read}");
    assert!(read.to_string().contains("a note from the mount"), "{read}");
    let (escape, error) = call(&mut s, 3, "read_notes", json!({"path": "../policy.toml"}));
    assert!(error, "{escape}");
    for (id, probe) in [(4, "py_probe"), (5, "js_probe")] {
        let (fetched, error) = call(&mut s, id, probe, json!({"mode": "fetch", "url": url}));
        assert!(!error, "{probe}: {fetched}");
        assert_eq!(fetched["status"], 200, "{probe}: {fetched}");
        assert_eq!(fetched["body"], "hello from loopback", "{probe}: {fetched}");
        // Another port of the same host, listening, is not granted: refused before
        // any connection.
        let (refused, error) = call(
            &mut s,
            id + 10,
            probe,
            json!({"mode": "fetch", "url": other_url}),
        );
        assert!(error, "{probe}: {refused}");
    }
    assert_eq!(other_connections.load(Ordering::SeqCst), 0);
    let (stats, error) = call(
        &mut s,
        6,
        "text_stats_js",
        json!({"text": "one two two\nthree"}),
    );
    assert!(!error, "{stats}");
    assert!(stats.to_string().contains('4'), "four words: {stats}");
    close(s);

    // Not granted: no mount, so read_notes is unavailable; the probes are granted only
    // the other server, so a request to a third is refused; the pure tool works.
    let narrow = format!(
        "[tools.py_probe]\nnetwork = [\"http://127.0.0.1:{other}\"]\n\
         [tools.js_probe]\nnetwork = [\"http://127.0.0.1:{other}\"]\n"
    );
    let (third, connections) = http_server("hello from loopback");
    let url = format!("http://127.0.0.1:{third}/x");
    let mut s = stdio::open(&mut hermetic(
        root.path(),
        &narrow,
        tools.path(),
        &["serve", "--stdio"],
    ));
    let names = listed(&mut s);
    assert!(!names.contains(&"read_notes".to_owned()), "{names:?}");
    for name in ["py_probe", "js_probe", "text_stats_js"] {
        assert!(names.contains(&name.to_owned()), "{name} not in {names:?}");
    }
    let (refused, error) = call(&mut s, 2, "read_notes", json!({"path": "hello.txt"}));
    assert!(error, "{refused}");
    assert!(!refused.to_string().contains("a note"), "{refused}");
    for (id, probe) in [(3, "py_probe"), (4, "js_probe")] {
        let (refused, error) = call(&mut s, id, probe, json!({"mode": "fetch", "url": url}));
        assert!(error, "{probe}: {refused}");
        assert!(
            !refused.to_string().contains("hello from loopback"),
            "{refused}"
        );
    }
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "a refused request connected"
    );
    close(s);
}

#[test]
fn python_and_javascript_tools_are_contained_like_rust_ones() {
    let Some(built) = artifacts() else { return };
    let tools = tools(&built, &["py_probe", "js_probe"]);
    let root = TempDir::new().unwrap();
    let (port, _) = http_server("unused");
    let policy = format!(
        "[tools.py_probe]\nnetwork = [\"http://127.0.0.1:{port}\"]\n\
         [tools.js_probe]\nnetwork = [\"http://127.0.0.1:{port}\"]\n"
    );
    let mut s = stdio::open(&mut hermetic(
        root.path(),
        &policy,
        tools.path(),
        &["serve", "--stdio"],
    ));
    let mut id = 10;
    for probe in ["py_probe", "js_probe"] {
        let (out, error) = call(&mut s, id, probe, json!({"mode": "alloc"}));
        assert!(error, "{probe}: {out}");
        assert!(
            out.to_string().contains("memory limit exceeded"),
            "{probe} alloc: {out}"
        );
        let (out, error) = call(&mut s, id + 1, probe, json!({"mode": "spin"}));
        assert!(error, "{probe}: {out}");
        assert!(
            out.to_string().contains("time limit"),
            "{probe} spin: {out}"
        );
        // Still serving: the sandbox was thrown away, not the host.
        let (echo, error) = call(&mut s, id + 2, probe, json!({"mode": "echo", "x": 1}));
        assert!(!error, "{probe}: {echo}");
        id += 10;
    }
    // A raw socket from Python (libpython imports wasi:sockets): refused, and the
    // listener it aimed at never sees a connection.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let target = listener.local_addr().unwrap().port();
    let (out, error) = call(
        &mut s,
        99,
        "py_probe",
        json!({"mode": "socket", "port": target}),
    );
    assert!(error, "{out}");
    assert!(
        out.to_string().contains("ermission") || out.to_string().contains("denied"),
        "{out}"
    );
    assert!(
        listener.accept().is_err(),
        "a Python socket reached the host"
    );
    close(s);
}

#[test]
fn an_operator_ceiling_under_what_a_python_tool_needs_refuses_it_by_name() {
    let Some(built) = artifacts() else { return };
    let tools = tools(&built, &["py_probe", "text_stats_js"]);
    let root = TempDir::new().unwrap();
    let out = hermetic(
        root.path(),
        "[defaults.limits]\nmax_core_instances = 10\n[tools.py_probe]\nnetwork = [\"http://127.0.0.1:1\"]\n",
        tools.path(),
        &["tools"],
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("py_probe.wasm")
            && stderr.contains("creates 14 core wasm instances, over 10"),
        "{stderr}"
    );
    assert!(stderr.contains("core_instances"), "{stderr}");
    // The JavaScript tool fits under 10 and is listed.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("text_stats_js"), "{stdout}");
}

/// Compiled once, loaded from the cache after: the second start writes no new entry
/// and rewrites none (an entry is written only when a component was compiled).
#[test]
fn a_python_tool_is_compiled_once_and_then_loaded_from_the_cache() {
    let Some(built) = artifacts() else { return };
    let tools = tools(&built, &["read_notes"]);
    let root = TempDir::new().unwrap();
    let cache = TempDir::new().unwrap();
    let entries = || {
        let mut e: Vec<(String, std::time::SystemTime)> = std::fs::read_dir(cache.path())
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".cwasm"))
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    e.metadata().unwrap().modified().unwrap(),
                )
            })
            .collect();
        e.sort();
        e
    };
    let run = || {
        let out = hermetic(root.path(), "", tools.path(), &["tools", "--json"])
            .env("HERMETIC_CACHE_DIR", cache.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let first = run();
    assert!(first.contains("read_notes"), "{first}");
    let after_first = entries();
    assert_eq!(after_first.len(), 1, "{after_first:?}");
    let second = run();
    assert_eq!(first, second);
    assert_eq!(entries(), after_first, "the second start compiled again");
}

/// `hermetic new --lang L NAME` for each language: the project builds with its one
/// command and the component passes `inspect` and answers a call. The toolchains are
/// the ones `.ci/run` installed (the venv, node_modules, the guests' cargo target, so
/// nothing is downloaded or compiled twice).
#[test]
fn a_new_project_in_each_language_builds_with_one_command_and_loads() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // GUEST_BUILD_DIR is TARGET/guest-tools/wasm32-wasip2/release.
    let guest_target = Path::new(hermetic::GUEST_BUILD_DIR).join("../..");
    let mut langs = vec!["rust"];
    if artifacts().is_some() {
        langs.extend(["python", "js"]);
    }
    for lang in langs {
        let root = TempDir::new().unwrap();
        let name = format!("new-{lang}");
        let dir = root.path().join(&name);
        let out = Command::new(env!("CARGO_BIN_EXE_hermetic"))
            .args(["new", "--lang", lang, &name, "--dir"])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(said.contains("./build.sh"), "{said}");
        let mut build = Command::new(dir.join("build.sh"));
        // Python and JavaScript builds ask this hermetic for the world and to finish the
        // component, which it compiles into the suites' cache for the load below.
        build
            .env("HERMETIC", env!("CARGO_BIN_EXE_hermetic"))
            .env("HERMETIC_CACHE_DIR", test_cache());
        match lang {
            "python" => std::os::unix::fs::symlink(
                std::env::var_os("COMPONENTIZE_VENV")
                    .map_or_else(|| workspace.join("target/venv-componentize"), PathBuf::from),
                dir.join(".venv"),
            )
            .unwrap(),
            "js" => std::os::unix::fs::symlink(
                workspace.join("guest-tools/js/node_modules"),
                dir.join("node_modules"),
            )
            .unwrap(),
            _ => {
                // The guests' target already holds the SDK's dependencies, built
                // with the same profile.
                build
                    .env("CARGO_TARGET_DIR", &guest_target)
                    .env("CARGO_NET_OFFLINE", "true");
            }
        }
        let built = build.output().unwrap();
        assert!(
            built.status.success(),
            "{lang}: {}{}",
            String::from_utf8_lossy(&built.stdout),
            String::from_utf8_lossy(&built.stderr)
        );
        let wasm = dir.join(format!("{name}.wasm"));
        let inspect = Command::new(env!("CARGO_BIN_EXE_hermetic"))
            .current_dir(root.path())
            .env("HERMETIC_CACHE_DIR", test_cache())
            .args(["--no-bundled", "inspect"])
            .arg(&wasm)
            .output()
            .unwrap();
        let report: Value = serde_json::from_slice(&inspect.stdout).unwrap_or_else(|e| {
            panic!("{lang}: {e}: {}", String::from_utf8_lossy(&inspect.stderr))
        });
        assert_eq!(report["available"], true, "{lang}: {report}");
        assert_eq!(
            report["declaration"]["name"],
            name.as_str(),
            "{lang}: {report}"
        );
        let call = Command::new(env!("CARGO_BIN_EXE_hermetic"))
            .current_dir(root.path())
            .env("HERMETIC_CACHE_DIR", test_cache())
            .args(["--no-bundled", "--tools-dir"])
            .arg(&dir)
            .args(["call", &name, r#"{"name": "you"}"#])
            .output()
            .unwrap();
        let answer = String::from_utf8_lossy(&call.stdout);
        assert!(answer.contains("Hello, you!"), "{lang}: {answer}");
    }
}
