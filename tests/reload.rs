//! Hot reload of tools directories (`hermetic_server::Reloader`): add, remove
//! and replace components without a restart; broken or unchanged files change nothing;
//! a call in flight finishes on the version it started with.
use hermetic::{CallOptions, Progress, Registry};
use hermetic_server::{ReloadReport, Reloader};
use hermetic_test_support::guests::{guest, tools_dir};
use hermetic_test_support::registry::options;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::{Arc, Mutex};
use tempfile::TempDir;

struct Setup {
    _workspace: TempDir,
    dir: TempDir,
    registry: Arc<Registry>,
    reloader: Reloader,
}

/// A registry over a tools directory holding `names`, loaded like the CLI does
/// (`add_dir`), and a reloader adopting it.
fn setup(names: &[&str]) -> Setup {
    let (workspace, options) = options();
    let registry = Arc::new(Registry::new(options).unwrap());
    let dir = tools_dir(names);
    assert_eq!(registry.add_dir(dir.path()).unwrap(), vec![]);
    let reloader = Reloader::new(registry.clone(), vec![dir.path().to_path_buf()]);
    Setup {
        _workspace: workspace,
        dir,
        registry,
        reloader,
    }
}

fn report(added: &[&str], replaced: &[&str], removed: &[&str]) -> ReloadReport {
    let names = |n: &[&str]| n.iter().map(|s| (*s).to_owned()).collect();
    ReloadReport {
        added: names(added),
        replaced: names(replaced),
        removed: names(removed),
        problems: vec![],
    }
}

fn call(registry: &Registry, name: &str, args: Value) -> Value {
    let out = registry.call(name, &args.to_string(), &CallOptions::default());
    serde_json::from_str(&out).unwrap()
}

/// `name.wasm` with a custom section appended: a different file (and digest) holding
/// the same tool.
fn variant(name: &str) -> Vec<u8> {
    let mut bytes = std::fs::read(guest(name)).unwrap();
    let section_name = b"hermetic-test-variant";
    let payload = b"v2";
    bytes.push(0); // custom section id
    bytes.push(u8::try_from(1 + section_name.len() + payload.len()).unwrap());
    bytes.push(u8::try_from(section_name.len()).unwrap());
    bytes.extend_from_slice(section_name);
    bytes.extend_from_slice(payload);
    bytes
}

fn copy_in(dir: &Path, name: &str) {
    std::fs::copy(guest(name), dir.join(format!("{name}.wasm"))).unwrap();
}

#[test]
fn a_rescan_with_nothing_changed_reports_nothing() {
    let mut s = setup(&["echo", "fail"]);
    assert_eq!(s.reloader.rescan(), ReloadReport::default());
    assert_eq!(s.registry.names(), ["echo", "fail"]);
}

#[test]
fn a_component_dropped_into_the_directory_is_registered() {
    let mut s = setup(&["echo"]);
    copy_in(s.dir.path(), "progress");
    let r = s.reloader.rescan();
    assert_eq!(r, report(&["progress"], &[], &[]));
    assert!(r.changed());
    assert_eq!(s.registry.names(), ["echo", "progress"]);
    assert_eq!(
        call(&s.registry, "progress", json!({"steps": 1}))["steps"],
        1
    );
}

#[test]
fn a_deleted_component_is_deregistered() {
    let mut s = setup(&["echo", "fail"]);
    std::fs::remove_file(s.dir.path().join("fail.wasm")).unwrap();
    assert_eq!(s.reloader.rescan(), report(&[], &[], &["fail"]));
    assert_eq!(s.registry.names(), ["echo"]);
    assert_eq!(
        call(&s.registry, "fail", json!({})),
        json!({"error": "Unknown tool: fail"})
    );
}

#[test]
fn a_changed_component_replaces_its_tool() {
    let mut s = setup(&["echo"]);
    let before = s.registry.inspect("echo").unwrap()["sha256"].clone();
    std::fs::write(s.dir.path().join("echo.wasm"), variant("echo")).unwrap();
    assert_eq!(s.reloader.rescan(), report(&[], &["echo"], &[]));
    assert_ne!(s.registry.inspect("echo").unwrap()["sha256"], before);
    assert_eq!(
        call(&s.registry, "echo", json!({"message": "v2"}))["echo"],
        "v2"
    );
}

#[test]
fn a_file_that_now_holds_another_tool_swaps_the_names() {
    let mut s = setup(&["echo"]);
    std::fs::copy(guest("progress"), s.dir.path().join("echo.wasm")).unwrap();
    assert_eq!(s.reloader.rescan(), report(&["progress"], &[], &["echo"]));
    assert_eq!(s.registry.names(), ["progress"]);
}

#[test]
fn a_broken_replacement_keeps_the_working_tool_and_is_reported() {
    let mut s = setup(&["echo"]);
    std::fs::write(s.dir.path().join("echo.wasm"), b"\0asm half-written").unwrap();
    let r = s.reloader.rescan();
    assert!(!r.changed(), "{r:?}");
    assert_eq!(r.problems.len(), 1, "{r:?}");
    assert!(r.problems[0].source.ends_with("echo.wasm"), "{r:?}");
    assert_eq!(
        call(&s.registry, "echo", json!({"message": "ok"}))["echo"],
        "ok"
    );
    // It is not retried until it changes again; the finished copy then loads.
    assert_eq!(s.reloader.rescan(), ReloadReport::default());
    std::fs::write(s.dir.path().join("echo.wasm"), variant("echo")).unwrap();
    assert_eq!(s.reloader.rescan(), report(&[], &["echo"], &[]));
}

#[test]
fn rewriting_a_file_with_the_same_bytes_reloads_nothing() {
    let mut s = setup(&["echo"]);
    let path = s.dir.path().join("echo.wasm");
    std::fs::write(&path, variant("echo")).unwrap();
    assert_eq!(s.reloader.rescan(), report(&[], &["echo"], &[]));
    let file = std::fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        .unwrap();
    assert_eq!(s.reloader.rescan(), ReloadReport::default());
}

#[test]
fn removing_a_file_leaves_a_tool_that_another_source_took_over() {
    let mut s = setup(&["echo"]);
    // The bundled-or-elsewhere case: the name now belongs to a tool from another file.
    let other = tools_dir(&["echo"]);
    let other_path = other.path().join("echo.wasm");
    std::fs::write(&other_path, variant("echo")).unwrap();
    assert_eq!(s.registry.add_dir(other.path()).unwrap(), vec![]);
    std::fs::remove_file(s.dir.path().join("echo.wasm")).unwrap();
    assert_eq!(s.reloader.rescan(), ReloadReport::default());
    assert_eq!(s.registry.names(), ["echo"]);
}

#[test]
fn a_call_in_flight_finishes_on_the_version_it_started_with() {
    let s = setup(&["progress"]);
    let reloader = Arc::new(Mutex::new(s.reloader));
    let dir = s.dir.path().to_path_buf();
    let removed = Arc::new(Mutex::new(None::<ReloadReport>));
    let (reloader_in_sink, removed_in_sink) = (reloader.clone(), removed.clone());
    // While the guest runs (at its first progress report) its file is deleted and the
    // directory rescanned: the tool is deregistered mid-call.
    let options = CallOptions::default().with_progress(Arc::new(move |p: Progress| {
        if p.done == 1 {
            std::fs::remove_file(dir.join("progress.wasm")).unwrap();
            *removed_in_sink.lock().unwrap() = Some(reloader_in_sink.lock().unwrap().rescan());
        }
    }));
    let out: Value =
        serde_json::from_str(&s.registry.call("progress", r#"{"steps": 3}"#, &options)).unwrap();
    assert_eq!(out["steps"], 3, "{out}");
    assert_eq!(
        removed.lock().unwrap().clone(),
        Some(report(&[], &[], &["progress"]))
    );
    assert_eq!(
        call(&s.registry, "progress", json!({"steps": 1})),
        json!({"error": "Unknown tool: progress"})
    );
}
