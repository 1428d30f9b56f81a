//! Registry rules over real components: discovery, registration, availability and
//! check caching, toolsets, definitions, and the compiled-code cache.
use hermetic::toolsets::ToolsetDef;
use hermetic::{ManualClock, Registered, Registry, RegistryError, Selection, ToolSource};
use hermetic_test_support::guests::{guest, tools_dir};
use hermetic_test_support::registry::{call, engine_config, fixture, options};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

#[test]
fn bundled_tools_load_out_of_the_box() {
    let f = fixture(true, &[]);
    let tools = f.registry.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "memory",
            "patch",
            "process",
            "read_file",
            "search_files",
            "terminal",
            "todo",
            "weather",
            "web_extract",
            "write_file"
        ]
    );
    for t in &tools {
        let expected = match t.name.as_str() {
            "weather" => "weather",
            "terminal" | "process" => "terminal",
            "web_extract" => "web",
            "todo" => "todo",
            "memory" => "memory",
            _ => "file",
        };
        assert_eq!(t.toolset, expected, "{}", t.name);
        assert!(t.source.starts_with("bundled:"), "{}", t.source);
    }
}

#[test]
fn broken_components_are_reported_and_skipped_while_the_rest_load() {
    let dir = tools_dir(&["echo", "bad_schema"]);
    std::fs::write(dir.path().join("garbage.wasm"), b"this is not wasm").unwrap();
    // A core module (not a component): the wasm magic and version 1.
    std::fs::write(dir.path().join("core.wasm"), b"\0asm\x01\0\0\0").unwrap();
    std::fs::write(dir.path().join("empty.wasm"), b"").unwrap();
    std::fs::write(dir.path().join("ignored.txt"), b"not a component").unwrap();
    let (_ws, options) = options();
    let registry = Registry::new(options).unwrap();
    let problems = registry.add_dir(dir.path()).unwrap();
    let mut seen: Vec<(String, String)> = problems
        .iter()
        .map(|p| {
            let file = std::path::Path::new(&p.source)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (file, p.reason.clone())
        })
        .collect();
    seen.sort();
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert_eq!(seen[0].0, "bad_schema.wasm");
    assert_eq!(
        seen[0].1,
        "schema name \"other_name\" differs from the declared name \"bad_schema\""
    );
    assert_eq!(seen[1].0, "core.wasm");
    assert!(seen[1].1.contains("not a component"), "{}", seen[1].1);
    assert_eq!(seen[2].0, "empty.wasm");
    assert!(
        seen[2].1.starts_with("not a WebAssembly component"),
        "{}",
        seen[2].1
    );
    assert_eq!(seen[3].0, "garbage.wasm");
    assert!(
        seen[3].1.starts_with("not a WebAssembly component"),
        "{}",
        seen[3].1
    );
    assert_eq!(registry.names(), ["echo"]);
}

#[test]
fn a_missing_tools_dir_is_an_error_naming_it() {
    let (_ws, options) = options();
    let registry = Registry::new(options).unwrap();
    let err = registry
        .add_dir(std::path::Path::new("/nonexistent/tools"))
        .unwrap_err();
    assert!(matches!(err, RegistryError::Dir { .. }));
    assert!(err.to_string().contains("/nonexistent/tools"));
}

#[test]
fn a_name_from_another_toolset_is_rejected_and_the_first_keeps_it() {
    let f = fixture(false, &["echo"]);
    let bytes = std::fs::read(guest("collide")).unwrap();
    let impostor = f
        .registry
        .load(&bytes, ToolSource::File(guest("collide")))
        .unwrap();
    let err = f.registry.register(impostor).unwrap_err();
    match err {
        RegistryError::Collision {
            name,
            existing_toolset,
            new_toolset,
        } => {
            assert_eq!(
                (
                    name.as_str(),
                    existing_toolset.as_str(),
                    new_toolset.as_str()
                ),
                ("echo", "test", "other")
            );
        }
        other => panic!("expected a collision, got {other}"),
    }
    let out = call(&f.registry, "echo", json!({"message": "hi"}));
    assert_eq!(out["echo"], "hi");
}

#[test]
fn an_operator_override_lets_another_toolset_take_the_name() {
    let (_ws, mut options) = options();
    options.overrides.insert("echo".into());
    let registry = Registry::new(options).unwrap();
    let echo = std::fs::read(guest("echo")).unwrap();
    let collide = std::fs::read(guest("collide")).unwrap();
    assert_eq!(
        registry.add(&echo, ToolSource::File(guest("echo"))),
        Ok(Registered::Added)
    );
    assert_eq!(
        registry.add(&collide, ToolSource::File(guest("collide"))),
        Ok(Registered::Overrode)
    );
    assert_eq!(
        call(&registry, "echo", json!({})),
        json!({"impostor": true})
    );
}

#[test]
fn re_registering_in_the_same_toolset_replaces() {
    let f = fixture(false, &["echo"]);
    let bytes = std::fs::read(guest("echo")).unwrap();
    let again = f
        .registry
        .add(&bytes, ToolSource::Bundled("echo-again".into()));
    assert_eq!(again, Ok(Registered::Replaced));
    let tools = f.registry.tools();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].source, "bundled:echo-again");
}

#[test]
fn weather_is_unavailable_until_its_key_is_granted_and_says_why() {
    let f = fixture(true, &[]);
    let weather = f
        .registry
        .tools()
        .into_iter()
        .find(|t| t.name == "weather")
        .unwrap();
    assert!(!weather.available);
    let reason = weather.reason.unwrap();
    assert!(reason.contains("WEATHER_API_KEY"), "{reason}");
    let defs = f.registry.definitions(&Selection::default());
    assert!(!defs.to_string().contains("\"weather\""));
    let out = call(&f.registry, "weather", json!({"location": "Paris"}));
    assert!(
        out["error"].as_str().unwrap().contains("unavailable"),
        "{out}"
    );
}

fn flaky_registry() -> (tempfile::TempDir, Registry, Arc<ManualClock>) {
    let (ws, mut options) = options();
    let clock = Arc::new(ManualClock::default());
    options.clock = clock.clone();
    let registry = Registry::new(options).unwrap();
    let dir = tools_dir(&["flaky"]);
    assert_eq!(registry.add_dir(dir.path()).unwrap(), vec![]);
    (ws, registry, clock)
}

fn set_check(ws: &tempfile::TempDir, answer: &str) {
    std::fs::write(ws.path().join("check.txt"), answer).unwrap();
}

fn available(registry: &Registry) -> bool {
    registry.availability("flaky").unwrap().available
}

#[test]
fn check_results_are_cached_for_30_seconds() {
    let (ws, registry, clock) = flaky_registry();
    set_check(&ws, "false");
    assert!(!available(&registry));
    set_check(&ws, "true");
    clock.advance(Duration::from_secs(29));
    assert!(!available(&registry), "cached false must hold for 30 s");
    clock.advance(Duration::from_secs(2));
    assert!(available(&registry), "after 30 s the check runs again");
    set_check(&ws, "false");
    clock.advance(Duration::from_secs(29));
    assert!(available(&registry), "cached true must hold for 30 s");
}

#[test]
fn a_false_within_60_seconds_of_a_true_is_a_flake_and_not_cached() {
    let (ws, registry, clock) = flaky_registry();
    set_check(&ws, "true");
    assert!(available(&registry));
    set_check(&ws, "false");
    clock.advance(Duration::from_secs(31));
    assert!(available(&registry), "false 31 s after true is a flake");
    clock.advance(Duration::from_secs(1));
    assert!(
        available(&registry),
        "the flake was not cached, and is still within grace"
    );
    clock.advance(Duration::from_secs(29));
    let a = registry.availability("flaky").unwrap();
    assert!(!a.available, "61 s after the last true, false counts");
    assert_eq!(a.reason.as_deref(), Some("check() returned false"));
}

#[test]
fn a_check_that_traps_counts_as_unavailable() {
    let (ws, registry, _clock) = flaky_registry();
    set_check(&ws, "trap");
    let a = registry.availability("flaky").unwrap();
    assert!(!a.available);
    assert!(
        a.reason
            .unwrap()
            .starts_with("check() failed: the tool crashed")
    );
    // The host carries on, and a call by name is refused like the listing says (a
    // failed check gates calls, it does not only hide the tool).
    let out = call(&registry, "flaky", json!({}));
    let err = out["error"].as_str().unwrap();
    assert!(
        err.starts_with("Tool flaky is unavailable: check() failed"),
        "{out}"
    );
    set_check(&ws, "true");
    registry.invalidate_checks();
    assert_eq!(call(&registry, "flaky", json!({})), json!({"ok": true}));
}

#[test]
fn invalidation_clears_the_cache() {
    let (ws, registry, _clock) = flaky_registry();
    set_check(&ws, "false");
    assert!(!available(&registry));
    set_check(&ws, "true");
    assert!(!available(&registry));
    registry.invalidate_checks();
    assert!(available(&registry));
}

#[test]
fn definitions_are_openai_functions_sorted_by_name() {
    let f = fixture(true, &["echo", "spin"]);
    let defs = f.registry.definitions(&Selection::default());
    let names: Vec<&str> = defs
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            assert_eq!(d["type"], "function");
            assert!(d["function"]["parameters"].is_object());
            d["function"]["name"].as_str().unwrap()
        })
        .collect();
    assert_eq!(
        names,
        [
            "echo",
            "memory",
            "patch",
            "process",
            "read_file",
            "search_files",
            "spin",
            "terminal",
            "todo",
            "write_file"
        ]
    );
    let echo = &defs[0]["function"];
    assert_eq!(echo["description"], "Echo a message back");
    assert_eq!(echo["parameters"]["required"], json!(["message"]));
}

#[test]
fn definitions_follow_toolset_selection_enabled_first_then_disabled() {
    let f = fixture(true, &["echo"]);
    let names = |enabled: Option<&[&str]>, disabled: &[&str]| -> Vec<String> {
        let selection = Selection {
            enabled: enabled.map(|e| e.iter().map(|s| s.to_string()).collect()),
            disabled: disabled.iter().map(|s| s.to_string()).collect(),
        };
        f.registry
            .definitions(&selection)
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["function"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(Some(&["test"]), &[]), ["echo"]);
    assert_eq!(
        names(Some(&["file_tools"]), &[]),
        ["patch", "read_file", "search_files", "write_file"]
    );
    // The bundled terminal tools are available without a policy file.
    assert_eq!(
        names(Some(&["all"]), &["file"]),
        ["echo", "memory", "process", "terminal", "todo"]
    );
    assert_eq!(
        names(Some(&["*"]), &["test"]),
        [
            "memory",
            "patch",
            "process",
            "read_file",
            "search_files",
            "terminal",
            "todo",
            "write_file"
        ]
    );
    assert_eq!(
        names(None, &["file", "test", "terminal", "todo", "memory"]),
        Vec::<String>::new()
    );
    assert_eq!(names(Some(&["no_such_toolset"]), &[]), Vec::<String>::new());
    let (_, warnings) = f.registry.select(&Selection {
        enabled: Some(vec!["no_such_toolset".into()]),
        disabled: vec![],
    });
    assert_eq!(warnings.len(), 1, "{warnings:?}");
}

#[test]
fn toolset_includes_resolve_through_cycles_and_diamonds() {
    let (_ws, mut options) = options();
    let def = |tools: &[&str], includes: &[&str]| ToolsetDef {
        description: String::new(),
        tools: tools.iter().map(|s| s.to_string()).collect(),
        includes: includes.iter().map(|s| s.to_string()).collect(),
    };
    options
        .toolsets
        .insert("cycle_a", def(&["echo"], &["cycle_b"]));
    options
        .toolsets
        .insert("cycle_b", def(&[], &["cycle_a", "file"]));
    options.toolsets.insert("top", def(&[], &["left", "right"]));
    options.toolsets.insert("left", def(&[], &["bottom"]));
    options.toolsets.insert("right", def(&[], &["bottom"]));
    options.toolsets.insert("bottom", def(&["echo"], &[]));
    let registry = Registry::new(options).unwrap();
    assert_eq!(registry.add_bundled(), vec![]);
    let dir = tools_dir(&["echo"]);
    registry.add_dir(dir.path()).unwrap();
    let resolved = |name: &str| {
        registry
            .toolsets()
            .into_iter()
            .find(|t| t.name == name)
            .unwrap()
            .tools
    };
    assert_eq!(
        resolved("cycle_a"),
        ["echo", "patch", "read_file", "search_files", "write_file"]
    );
    assert_eq!(resolved("top"), ["echo"]);
    let (tools, warnings) = registry.select(&Selection {
        enabled: Some(vec!["top".into(), "cycle_b".into()]),
        disabled: vec![],
    });
    assert!(warnings.is_empty());
    assert_eq!(tools.len(), 5);
}

#[test]
fn a_second_start_loads_compiled_code_from_the_cache() {
    let cache = tempfile::TempDir::new().unwrap();
    let start = || {
        let (ws, mut options) = options();
        options.engine = engine_config();
        options.engine.cache_dir = Some(cache.path().to_path_buf());
        let registry = Registry::new(options).unwrap();
        let dir = tools_dir(&["echo"]);
        registry.add_dir(dir.path()).unwrap();
        (ws, registry)
    };
    let (_ws1, first) = start();
    assert_eq!(first.runtime().compile_stats().compiled, 1);
    assert_eq!(first.runtime().compile_stats().cache_hits, 0);
    let (_ws2, second) = start();
    assert_eq!(second.runtime().compile_stats().compiled, 0);
    assert_eq!(second.runtime().compile_stats().cache_hits, 1);
    assert_eq!(
        call(&second, "echo", json!({"message": "cached"}))["echo"],
        "cached"
    );
}

#[test]
fn a_corrupt_cache_entry_is_ignored_and_recompiled() {
    let cache = tempfile::TempDir::new().unwrap();
    let (_ws, mut options) = options();
    options.engine = engine_config();
    options.engine.cache_dir = Some(cache.path().to_path_buf());
    let registry = Registry::new(options).unwrap();
    let bytes = std::fs::read(guest("echo")).unwrap();
    registry
        .add(&bytes, ToolSource::File(guest("echo")))
        .unwrap();
    for entry in std::fs::read_dir(cache.path()).unwrap() {
        std::fs::write(entry.unwrap().path(), b"garbage").unwrap();
    }
    registry
        .add(&bytes, ToolSource::File(guest("echo")))
        .unwrap();
    assert_eq!(registry.runtime().compile_stats().compiled, 2);
    assert_eq!(
        call(&registry, "echo", json!({"message": "ok"}))["echo"],
        "ok"
    );
}

/// The cache entries (not the key, tags or temporaries) in `dir`.
fn cache_entries(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
        .collect();
    entries.sort();
    entries
}

/// Issue 39: the host mapped and ran whatever code a cache file held. Code the host
/// itself wrote, for another tool, copied under this tool's name (with that tool's
/// tag), is refused: the tag covers the entry's name, and the tool is compiled again.
#[test]
fn a_cache_entry_planted_under_another_name_is_compiled_again_not_run() {
    let cache = tempfile::TempDir::new().unwrap();
    let start = |tool: &str| {
        let (ws, mut options) = options();
        options.engine = engine_config();
        options.engine.cache_dir = Some(cache.path().to_path_buf());
        let registry = Registry::new(options).unwrap();
        let dir = tools_dir(&[tool]);
        assert_eq!(registry.add_dir(dir.path()).unwrap(), vec![]);
        (ws, registry)
    };
    let (_ws, _echo) = start("echo");
    let echo_entry = cache_entries(cache.path()).pop().unwrap();
    let (_ws, first) = start("fail");
    assert_eq!(first.runtime().compile_stats().compiled, 1);
    let fail_entry = cache_entries(cache.path())
        .into_iter()
        .find(|p| *p != echo_entry)
        .unwrap();
    let tag = |entry: &std::path::Path| entry.with_extension("cwasm.tag");
    std::fs::copy(&echo_entry, &fail_entry).unwrap();
    std::fs::copy(tag(&echo_entry), tag(&fail_entry)).unwrap();

    let (_ws, second) = start("fail");
    let stats = second.runtime().compile_stats();
    assert_eq!((stats.compiled, stats.cache_hits), (1, 0));
    let out = call(&second, "fail", json!({"mode": "error"}));
    assert!(out["error"].is_string(), "{out}");
    // Compiled again, the entry is the tool's own once more, and the next start maps it.
    let (_ws, third) = start("fail");
    let stats = third.runtime().compile_stats();
    assert_eq!((stats.compiled, stats.cache_hits), (0, 1));
}

/// Issue 39: a cache directory a tool can write (here: inside the workspace mount)
/// would let that tool plant native code the host maps; it is not used at all.
#[test]
fn a_cache_directory_inside_a_mount_is_not_used() {
    let (ws, mut options) = options();
    options.engine = engine_config();
    let cache = ws.path().join("cache");
    options.engine.cache_dir = Some(cache.clone());
    let registry = Registry::new(options).unwrap();
    assert_eq!(registry.runtime().config().cache_dir, None);
    let dir = tools_dir(&["echo"]);
    assert_eq!(registry.add_dir(dir.path()).unwrap(), vec![]);
    assert_eq!(registry.runtime().compile_stats().compiled, 1);
    assert!(!cache.exists());
}

/// Issue 39: an approval allowlist a tool can write lets a tenant approve its own next
/// dangerous command; a registry over such a policy is refused, naming the file.
#[test]
fn an_approval_allowlist_inside_a_mount_is_refused() {
    let (ws, mut options) = options();
    let allowlist = ws.path().join("approvals.json");
    options.policy.terminal.default.approval.allowlist_file = Some(allowlist.clone());
    match Registry::new(options) {
        Err(RegistryError::StatePath(e)) => {
            assert_eq!(e.path, allowlist);
            assert_eq!(e.place, "mount `workspace`");
        }
        other => panic!("accepted: {:?}", other.map(|_| ())),
    }
}

/// A registry over the bundled tools, fuel metering on if `fuel`, no disk cache.
fn bundled_without_cache(fuel: bool) -> (tempfile::TempDir, Registry) {
    let (ws, mut options) = options();
    options.engine.cache_dir = None;
    options.engine.fuel = fuel;
    let registry = Registry::new(options).unwrap();
    assert_eq!(registry.add_bundled(), vec![]);
    (ws, registry)
}

#[test]
fn bundled_tools_load_from_the_code_the_build_compiled() {
    let (ws, registry) = bundled_without_cache(false);
    let stats = registry.runtime().compile_stats();
    assert_eq!(stats.precompiled, hermetic::bundled_tools().len() as u64);
    assert_eq!((stats.compiled, stats.cache_hits), (0, 0));
    std::fs::write(ws.path().join("a.txt"), "precompiled\n").unwrap();
    let read = call(&registry, "read_file", json!({"path": "a.txt"}));
    assert!(
        read["content"].as_str().unwrap().contains("precompiled"),
        "{read}"
    );
}

#[test]
fn bundled_code_built_for_other_settings_is_refused_and_the_tool_compiled() {
    // Fuel metering changes the code; the build's code is for the default engine.
    let (_ws, registry) = bundled_without_cache(true);
    let stats = registry.runtime().compile_stats();
    assert_eq!(stats.precompiled, 0);
    assert_eq!(stats.compiled, hermetic::bundled_tools().len() as u64);
}

#[test]
fn other_bytes_under_a_bundled_name_do_not_get_the_bundled_code() {
    let (_ws, mut options) = options();
    options.engine.cache_dir = None;
    let registry = Registry::new(options).unwrap();
    let echo = std::fs::read(guest("echo")).unwrap();
    registry
        .add(&echo, ToolSource::Bundled("read_file".into()))
        .unwrap();
    let stats = registry.runtime().compile_stats();
    assert_eq!((stats.precompiled, stats.compiled), (0, 1));
    assert_eq!(
        call(&registry, "echo", json!({"message": "mine"}))["echo"],
        "mine"
    );
}

/// Bundled code the engine accepts is loaded from the binary on every start, never
/// written to (or read from) the cache: authenticating an entry costs more than copying
/// the embedded code.
#[test]
fn the_build_code_of_bundled_tools_is_loaded_from_the_binary_and_not_cached() {
    let cache = tempfile::TempDir::new().unwrap();
    let start = || {
        let (ws, mut options) = options();
        options.engine.cache_dir = Some(cache.path().to_path_buf());
        let registry = Registry::new(options).unwrap();
        assert_eq!(registry.add_bundled(), vec![]);
        (ws, registry)
    };
    let bundled = hermetic::bundled_tools().len() as u64;
    let (_ws1, first) = start();
    let stats = first.runtime().compile_stats();
    assert_eq!(
        (stats.precompiled, stats.cache_hits, stats.compiled),
        (bundled, 0, 0)
    );
    assert_eq!(
        cache_entries(cache.path()),
        Vec::<std::path::PathBuf>::new()
    );
    let (ws2, second) = start();
    let stats = second.runtime().compile_stats();
    assert_eq!(
        (stats.precompiled, stats.cache_hits, stats.compiled),
        (bundled, 0, 0)
    );
    std::fs::write(ws2.path().join("a.txt"), "embedded\n").unwrap();
    let read = call(&second, "read_file", json!({"path": "a.txt"}));
    assert!(
        read["content"].as_str().unwrap().contains("embedded"),
        "{read}"
    );
}
