//! What a tool costs by the language it is written in (README "Tools in Python and
//! JavaScript"): for a Rust, a Python (componentize-py) and a JavaScript
//! (componentize-js) tool, the component's size, its first load (compiled by
//! Cranelift), a load from the compiled-code cache (a second start), and a warm call
//! (criterion). The Rust tool is `echo`; the others are the probes' `echo` mode, built
//! by `.ci/run` into `target/polyglot/` (`HERMETIC_POLYGLOT_DIR` elsewhere).
#![allow(
    missing_docs,
    reason = "criterion_group! generates an undocumented public fn"
)]

use criterion::{Criterion, criterion_group, criterion_main};
use hermetic::{CallOptions, Registry};
use hermetic_test_support::guests::guest;
use hermetic_test_support::registry::policy_registry_with;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// (language, tool name, component, arguments of a warm call).
fn tools() -> Vec<(&'static str, &'static str, PathBuf, &'static str)> {
    let built = std::env::var_os("HERMETIC_POLYGLOT_DIR").map_or_else(
        || Path::new(hermetic::GUEST_BUILD_DIR).join("../../../polyglot"),
        PathBuf::from,
    );
    vec![
        ("Rust", "echo", guest("echo"), r#"{"message": "hello"}"#),
        (
            "Python",
            "py_probe",
            built.join("py_probe.wasm"),
            r#"{"mode": "echo", "message": "hello"}"#,
        ),
        (
            "JavaScript",
            "js_probe",
            built.join("js_probe.wasm"),
            r#"{"mode": "echo", "message": "hello"}"#,
        ),
    ]
}

/// A registry whose compiled-code cache is `cache`, holding only `component`; how long
/// adding it took.
fn load(root: &Path, cache: &Path, component: &Path) -> (Registry, Duration) {
    let policy = "[tools.py_probe]\nnetwork = [\"http://127.0.0.1:1\"]\n\
                  [tools.js_probe]\nnetwork = [\"http://127.0.0.1:1\"]\n";
    let registry = policy_registry_with(root, policy, false, |options| {
        options.engine.cache_dir = Some(cache.to_path_buf());
    });
    let dir = tempfile::TempDir::new().unwrap();
    std::fs::copy(component, dir.path().join(component.file_name().unwrap())).unwrap();
    let started = Instant::now();
    assert_eq!(registry.add_dir(dir.path()).unwrap(), vec![]);
    (registry, started.elapsed())
}

fn benches(c: &mut Criterion) {
    let options = CallOptions::default();
    let mut table = Vec::new();
    for (lang, name, component, args) in tools() {
        if !component.is_file() {
            eprintln!(
                "{lang}: {} is not built (run .ci/run first); skipped",
                component.display()
            );
            continue;
        }
        let size = std::fs::metadata(&component).unwrap().len();
        let root = tempfile::TempDir::new().unwrap();
        std::fs::create_dir_all(root.path().join("cache")).unwrap();
        let cache = root.path().join("cache");
        let (_, first) = load(root.path(), &cache, &component);
        let (registry, cached) = load(root.path(), &cache, &component);
        let out = registry.call(name, args, &options);
        assert!(out.contains("hello"), "{lang}: {out}");
        c.bench_function(&format!("polyglot/{lang} warm call"), |b| {
            b.iter(|| black_box(registry.call(name, black_box(args), &options)))
        });
        table.push((lang, size, first, cached));
    }
    println!("\nlanguage    component   first load (compile)   cached load");
    for (lang, size, first, cached) in table {
        println!(
            "{lang:<11} {:>6.1} MB   {:>10.2} s           {:>7.0} ms",
            size as f64 / 1e6,
            first.as_secs_f64(),
            cached.as_secs_f64() * 1e3
        );
    }
    println!("(warm calls: the criterion lines above)");
}

criterion_group!(group, benches);
criterion_main!(group);
