//! In every crate of the workspace the top-level modules form no cycle: a module may
//! use its own children and other modules, never one that uses it back (the
//! architecture issue's "no module cycles", kept by a test rather than by review).
//!
//! Edges are the `crate::MODULE` paths in each module's code (comments and the unit
//! tests at the end of a file are not code that shapes the design).

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers: a failed unwrap is a failed test"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The `crate::NAME` references in `source`, outside comments and unit tests.
fn references(source: &str) -> BTreeSet<String> {
    let code = source
        .split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or(source);
    let mut names = BTreeSet::new();
    for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            if !name.is_empty() {
                names.insert(name);
            }
        }
    }
    names
}

/// The workspace's crates, by folder under `host/`.
const CRATES: &[&str] = &[
    "detect", "policy", "approval", "runtime", "terminal", "server", "cli",
];

fn graph(krate: &str) -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(krate)
        .join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut graph = Graph::new();
    for file in files {
        let relative = file.strip_prefix(&src).unwrap();
        let first = relative.components().next().unwrap();
        let module = first
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_owned();
        let uses = references(&std::fs::read_to_string(&file).unwrap());
        let edges = graph.entry(module.clone()).or_default();
        edges.extend(uses.into_iter().filter(|m| *m != module));
    }
    graph
}

/// A cycle through `start`, if there is one.
fn cycle_from(graph: &Graph, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![(start.to_owned(), vec![start.to_owned()])];
    let mut seen = BTreeSet::new();
    while let Some((node, path)) = stack.pop() {
        for next in graph.get(&node).into_iter().flatten() {
            if next == start {
                let mut cycle = path.clone();
                cycle.push(start.to_owned());
                return Some(cycle);
            }
            if seen.insert(next.clone()) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push((next.clone(), longer));
            }
        }
    }
    None
}

#[test]
fn no_crate_has_a_module_cycle() {
    let runtime = graph("runtime");
    assert!(
        runtime.contains_key("catalog") && runtime.contains_key("dispatch"),
        "the module walk found nothing: {runtime:?}"
    );
    let cycles: Vec<String> = CRATES
        .iter()
        .flat_map(|krate| {
            let graph = graph(krate);
            graph
                .keys()
                .filter_map(|m| cycle_from(&graph, m))
                .map(|c| format!("{krate}: {}", c.join(" -> ")))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(cycles.is_empty(), "module cycles: {cycles:#?}");
}

#[test]
fn the_cycle_finder_finds_a_planted_cycle() {
    let mut graph = Graph::new();
    graph.entry("a".into()).or_default().insert("b".into());
    graph.entry("b".into()).or_default().insert("c".into());
    graph.entry("c".into()).or_default().insert("a".into());
    assert_eq!(
        cycle_from(&graph, "a"),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    graph.get_mut("c").unwrap().clear();
    assert_eq!(cycle_from(&graph, "a"), None);
    let source = "use crate::dispatch::x;\n// crate::catalog in a comment\n#[cfg(test)]\nmod tests { use crate::registry; }";
    assert_eq!(references(source), BTreeSet::from(["dispatch".to_owned()]));
}
