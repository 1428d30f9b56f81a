//! `hermetic tool world` and `hermetic tool finish`, the build steps the Python and
//! JavaScript SDKs call: the world names exactly what the host links for a declaration
//! (asked of the host's own linkers), and a finished component is one the host loads —
//! or the command refuses it with the host's reason. The components are real ones built
//! from guest-tools/.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

use hermetic_test_support::guests::{guest, test_cache};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};
use tempfile::TempDir;

/// `hermetic tool finish COMPONENT DECLARATION -o OUT`, run in `dir`.
fn finish(dir: &Path, component: &str, declaration: &str, out: &Path) -> Output {
    hermetic(
        dir,
        &[
            "tool",
            "finish",
            component,
            declaration,
            "-o",
            out.to_str().unwrap(),
        ],
    )
}

/// `hermetic ARGS` in `dir`, with the CLI suites' shared compiled-code cache.
fn hermetic(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hermetic"))
        .current_dir(dir)
        .env("HERMETIC_CACHE_DIR", test_cache())
        .args(args)
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Writes `text` as DIR/NAME and returns the path as a string.
fn file(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

/// The `import X;` lines of a world.
fn imports(world: &str) -> Vec<String> {
    world
        .lines()
        .filter_map(|l| l.trim().strip_prefix("import "))
        .map(|l| l.trim_end_matches(';').to_owned())
        .collect()
}

#[test]
fn the_world_names_exactly_the_imports_each_declared_capability_links() {
    let dir = TempDir::new().unwrap();
    let cases: &[(&str, &str, &[&str])] = &[
        ("nothing", "", &[]),
        // Mounts and env vars are WASI's, in every tool's linker, decided per call.
        (
            "fs and env",
            "fs = [{ mount = \"workspace\", access = \"rw\" }]\nenv = [\"LANG\"]\n",
            &[],
        ),
        (
            "http",
            "network = [\"https://api.example.com\"]\n",
            &[
                "wasi:http/outgoing-handler@0.2.12",
                "wasi:http/types@0.2.12",
            ],
        ),
        (
            "keyvalue",
            "keyvalue = \"session\"\n",
            &[
                "hermetic:tool/keyvalue-swap@0.3.0",
                "wasi:keyvalue/atomics@0.2.0-draft",
                "wasi:keyvalue/batch@0.2.0-draft",
                "wasi:keyvalue/store@0.2.0-draft",
            ],
        ),
        (
            "terminal",
            "terminal = true\n",
            &["hermetic:tool/terminal@0.3.0"],
        ),
    ];
    for (what, capabilities, expected) in cases {
        let decl = file(
            dir.path(),
            "declaration.toml",
            &format!("name = \"t\"\ntoolset = \"t\"\n[capabilities]\n{capabilities}"),
        );
        let out = hermetic(dir.path(), &["tool", "world", &decl]);
        assert!(out.status.success(), "{what}: {}", stderr(&out));
        let world = String::from_utf8(out.stdout).unwrap();
        assert!(
            world.contains("world tool {\n    include hermetic:tool/tool-component@0.3.0;\n"),
            "{what}: {world}"
        );
        assert_eq!(imports(&world), *expected, "{what}: {world}");
    }
}

#[test]
fn the_world_written_out_is_a_package_the_bindings_generators_resolve() {
    let dir = TempDir::new().unwrap();
    let decl = file(
        dir.path(),
        "declaration.toml",
        "name = \"t\"\ntoolset = \"t\"\n[capabilities]\nnetwork = [\"https://api.example.com\"]\n",
    );
    let wit = dir.path().join("wit");
    let out = hermetic(
        dir.path(),
        &["tool", "world", &decl, "--out", wit.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    // What componentize-py (`-d`) and componentize-js (`witPath`) do with it.
    let mut resolve = wit_parser::Resolve::new();
    let (package, _) = resolve.push_dir(&wit).unwrap();
    let world = resolve.select_world(&[package], Some("tool")).unwrap();
    let mut names: Vec<String> = resolve.worlds[world]
        .imports
        .keys()
        .map(|k| resolve.name_world_key(k))
        .collect();
    names.sort();
    for needed in [
        "hermetic:tool/host@0.3.0",
        "wasi:http/outgoing-handler@0.2.12",
        "wasi:http/types@0.2.12",
    ] {
        assert!(names.iter().any(|n| n == needed), "{needed}: {names:?}");
    }
    let exports: Vec<String> = resolve.worlds[world]
        .exports
        .keys()
        .map(|k| resolve.name_world_key(k))
        .collect();
    assert_eq!(exports, ["hermetic:tool/tool@0.3.0"]);
    // Not over an earlier run's files.
    let again = hermetic(
        dir.path(),
        &["tool", "world", &decl, "--out", wit.to_str().unwrap()],
    );
    assert!(!again.status.success());
    assert!(
        stderr(&again).contains("is not empty"),
        "{}",
        stderr(&again)
    );
    // Without wasi:http, none of the WASI packages is needed.
    let plain = file(dir.path(), "plain.toml", "name = \"t\"\ntoolset = \"t\"\n");
    let wit = dir.path().join("plain");
    let out = hermetic(
        dir.path(),
        &["tool", "world", &plain, "--out", wit.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let mut deps: Vec<String> = std::fs::read_dir(wit.join("deps"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    deps.sort();
    assert_eq!(deps, ["hermetic-tool", "keyvalue"]);
}

#[test]
fn a_declaration_the_host_would_refuse_is_refused_by_both_commands() {
    let dir = TempDir::new().unwrap();
    let cases = [
        (
            "name = \"t\"\ntoolset = \"t\"\ngrant_all = true\n",
            "unknown field `grant_all`",
        ),
        (
            "name = \"a b\"\ntoolset = \"t\"\n",
            "must be 1-64 of [A-Za-z0-9_-]",
        ),
        (
            "name = \"t\"\ntoolset = \"t\"\n[capabilities]\nnetwork = [\"ftp://x.example.com\"]\n",
            "capabilities.network: invalid network destination",
        ),
        ("name = \n", "declaration is not valid"),
        (
            "name = \"h\"\n[hook]\ntools = [\"t\"]\n",
            "a hook's declaration ([hook]): these commands build tools",
        ),
    ];
    for (text, said) in cases {
        let decl = file(dir.path(), "declaration.toml", text);
        let out_file = dir.path().join("out.wasm");
        for args in [
            vec!["tool", "world", &decl],
            vec![
                "tool",
                "finish",
                guest("echo").to_str().unwrap(),
                &decl,
                "-o",
                out_file.to_str().unwrap(),
            ],
        ] {
            let out = hermetic(dir.path(), &args);
            assert_eq!(out.status.code(), Some(3), "{args:?} {text}");
            assert!(stderr(&out).contains(said), "{text}: {}", stderr(&out));
            assert!(
                stderr(&out).contains("declaration.toml"),
                "{}",
                stderr(&out)
            );
            assert!(!out_file.exists());
        }
    }
}

#[test]
fn a_finished_component_carries_its_new_declaration_and_loads() {
    let dir = TempDir::new().unwrap();
    let decl = file(
        dir.path(),
        "declaration.toml",
        "name = \"echo\"\ntoolset = \"test\"\ndescription = \"finished by hermetic tool finish\"\n",
    );
    // A Rust tool's declaration is in its core module: replaced, not doubled.
    let original = std::fs::read(guest("echo")).unwrap();
    let copy = dir.path().join("echo.wasm");
    std::fs::write(&copy, &original).unwrap();
    let out = hermetic(
        dir.path(),
        &[
            "tool",
            "finish",
            copy.to_str().unwrap(),
            &decl,
            "--core-instances",
            "12",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["name"], "echo");
    assert_eq!(summary["core_instances"], 12);
    assert!(
        summary["imports"]
            .as_array()
            .unwrap()
            .contains(&"hermetic:tool/types@0.3.0".into()),
        "{summary}"
    );
    let finished = std::fs::read(&copy).unwrap();
    assert_ne!(finished, original);
    assert_eq!(summary["bytes"], finished.len());
    // The host's loader reads it back.
    let inspect = hermetic(
        dir.path(),
        &["--no-bundled", "inspect", copy.to_str().unwrap()],
    );
    let report: Value = serde_json::from_slice(&inspect.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", stderr(&inspect)));
    assert_eq!(report["loads"], true, "{report}");
    assert_eq!(
        report["declaration"]["description"],
        "finished by hermetic tool finish"
    );
    assert_eq!(report["declaration"]["core_instances"], 12);
    assert_eq!(report["component"], summary["component"]);
    // Finishing again with -o: the author's core_instances stands, the input stays.
    let own = file(
        dir.path(),
        "own.toml",
        "core_instances = 4\nname = \"echo\"\ntoolset = \"test\"\n",
    );
    let out_file = dir.path().join("again.wasm");
    let out = hermetic(
        dir.path(),
        &[
            "tool",
            "finish",
            copy.to_str().unwrap(),
            &own,
            "-o",
            out_file.to_str().unwrap(),
            "--core-instances",
            "16",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read(&copy).unwrap(), finished);
    let inspect = hermetic(
        dir.path(),
        &["--no-bundled", "inspect", out_file.to_str().unwrap()],
    );
    let report: Value = serde_json::from_slice(&inspect.stdout).unwrap();
    assert_eq!(report["declaration"]["core_instances"], 4, "{report}");
    assert_eq!(report["declaration"]["description"], "");
    // No temporary file is left beside the output.
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(
        left,
        ["again.wasm", "declaration.toml", "echo.wasm", "own.toml"]
    );
}

#[test]
fn a_component_importing_what_its_declaration_does_not_link_is_refused() {
    let dir = TempDir::new().unwrap();
    let out_file = dir.path().join("out.wasm");
    let finish_guest = |component: &str, decl: &str| {
        finish(
            dir.path(),
            guest(component).to_str().unwrap(),
            decl,
            &out_file,
        )
    };
    // http_undeclared imports wasi:http, kv_undeclared wasi:keyvalue.
    let cases = [
        (
            "http_undeclared",
            "network = [\"https://api.example.com\"]",
            "wasi:http/",
        ),
        ("kv_undeclared", "keyvalue = \"tenant\"", "wasi:keyvalue/"),
    ];
    for (component, capability, import) in cases {
        let without = file(
            dir.path(),
            "without.toml",
            &format!("name = \"{component}\"\ntoolset = \"test\"\n"),
        );
        let out = finish_guest(component, &without);
        assert_eq!(out.status.code(), Some(3), "{component}");
        let said = stderr(&out);
        assert!(
            said.contains("the host would refuse it: does not fit the hermetic:tool world")
                && said.contains(import)
                && said.contains("`hermetic tool world DECLARATION`"),
            "{component}: {said}"
        );
        assert!(!out_file.exists(), "{component}: written though refused");
        // The twin: the same component, declaring the capability, is finished.
        let with = file(
            dir.path(),
            "with.toml",
            &format!("name = \"{component}\"\ntoolset = \"test\"\n[capabilities]\n{capability}\n"),
        );
        let out = finish_guest(component, &with);
        assert!(out.status.success(), "{component}: {}", stderr(&out));
        std::fs::remove_file(&out_file).unwrap();
    }
}

#[test]
fn more_core_instances_than_the_declaration_allows_are_refused() {
    let dir = TempDir::new().unwrap();
    let out_file = dir.path().join("out.wasm");
    // A Rust tool creates 3; the host allows what the declaration says.
    let decl = file(
        dir.path(),
        "declaration.toml",
        "name = \"echo\"\ntoolset = \"test\"\ncore_instances = 2\n",
    );
    let out = finish(
        dir.path(),
        guest("echo").to_str().unwrap(),
        &decl,
        &out_file,
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("it creates 3 core wasm instances, over 2")
            && stderr(&out).contains("declare `core_instances = N`"),
        "{}",
        stderr(&out)
    );
    assert!(!out_file.exists());
    // A schema naming another tool is what load refuses too.
    let other = file(
        dir.path(),
        "other.toml",
        "name = \"other\"\ntoolset = \"test\"\n",
    );
    let out = finish(
        dir.path(),
        guest("echo").to_str().unwrap(),
        &other,
        &out_file,
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("schema name \"echo\" differs from the declared name \"other\""),
        "{}",
        stderr(&out)
    );
    // Not a component at all.
    let junk = file(dir.path(), "junk.wasm", "not wasm");
    let out = finish(dir.path(), &junk, &decl, &out_file);
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("not WebAssembly"), "{}", stderr(&out));
}

#[test]
fn help_explains_both_commands() {
    let dir = TempDir::new().unwrap();
    let out = hermetic(dir.path(), &["tool", "--help"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("world") && text.contains("finish"), "{text}");
    let out = hermetic(dir.path(), &["tool", "finish", "--help"]);
    let text = String::from_utf8(out.stdout).unwrap();
    for said in ["hermetic:declaration", "core_instances", "atomically"] {
        assert!(text.contains(said), "{said}: {text}");
    }
}
