//! No crate of the workspace has a module cycle: a module may use its own descendants
//! and its ancestors' items, never a sibling that uses it back (at any depth: `a::x`
//! and `a::y` may not use each other, nor may `a` and `b` at the top).
//!
//! The files are parsed (`syn`), not grepped, so every import form counts: `crate::`,
//! `super::`, `self::`, grouped `use crate::{a, b::c}`, paths written inline in code
//! and inside macro calls, and names an ancestor re-exports (`super::Detector` is an
//! edge to the module that defines `Detector`, not to the parent). Unit tests
//! (`#[cfg(test)]` items) are not code that shapes the design and are skipped.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers: a failed unwrap is a failed test"
)]

use quote::ToTokens;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::{Item, UseTree};

/// A module's path inside its crate (`[]` is the crate root).
type ModPath = Vec<String>;
/// Edges between siblings, grouped by their parent: parent → (module → modules it uses).
type Graph = BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>>;

/// The host crates, by folder under `host/`.
const CRATES: &[&str] = &[
    "detect",
    "policy",
    "approval",
    "runtime",
    "config",
    "terminal",
    "server",
    "distribution",
    "cli",
    "test-support",
];

/// One parsed crate: every module's use-map (name → absolute path it names) and every
/// path its code mentions.
#[derive(Default)]
struct Crate {
    modules: BTreeSet<ModPath>,
    /// Names a module brings into scope with `use` (re-exports included).
    imports: BTreeMap<ModPath, BTreeMap<String, Vec<String>>>,
    /// (module, absolute path) for every crate-relative path in the module's code.
    uses: Vec<(ModPath, Vec<String>)>,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/a/b.rs` → `[a, b]`; `src/a/mod.rs` → `[a]`; `src/lib.rs` → `[]`.
fn module_of(src: &Path, file: &Path) -> ModPath {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: ModPath = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
        parts.clear();
    } else if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta.to_token_stream().to_string().replace(' ', "") == "cfg(test)"
    })
}

fn item_attrs(item: &Item) -> &[syn::Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        _ => &[],
    }
}

impl Crate {
    fn is_module(&self, path: &[String]) -> bool {
        self.modules.contains(path)
    }

    /// `path` as written in `module`, made absolute; `None` for another crate's path.
    fn absolute(&self, module: &[String], path: &[String]) -> Option<Vec<String>> {
        let mut base: Vec<String> = module.to_vec();
        let mut rest = path;
        match rest.first().map(String::as_str) {
            Some("crate") => {
                base.clear();
                rest = &rest[1..];
            }
            Some("self") => rest = &rest[1..],
            Some("super") => {
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
            }
            Some(first) => {
                // A plain path names a child module or a name this module imported.
                let mut child = module.to_vec();
                child.push(first.to_owned());
                if !self.is_module(&child)
                    && !self
                        .imports
                        .get(module)
                        .is_some_and(|m| m.contains_key(first))
                {
                    return None;
                }
            }
            None => return None,
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The module that defines what absolute `path` names, following re-exports.
    fn defining_module(&self, path: &[String]) -> ModPath {
        let mut path = path.to_vec();
        for _ in 0..16 {
            let split = (0..=path.len())
                .rev()
                .find(|&n| self.is_module(&path[..n]))
                .unwrap_or(0);
            let (module, rest) = path.split_at(split);
            let Some(name) = rest.first() else {
                return module.to_vec();
            };
            match self.imports.get(module).and_then(|m| m.get(name)) {
                Some(target) if target.as_slice() != path.as_slice() => {
                    let mut next = target.clone();
                    next.extend(rest[1..].iter().cloned());
                    path = next;
                }
                _ => return module.to_vec(),
            }
        }
        Vec::new()
    }

    fn collect_use(
        &mut self,
        module: &[String],
        prefix: Vec<String>,
        tree: &UseTree,
        record: bool,
    ) {
        match tree {
            UseTree::Path(p) => {
                let mut prefix = prefix;
                prefix.push(p.ident.to_string());
                self.collect_use(module, prefix, &p.tree, record);
            }
            UseTree::Name(n) => {
                let name = n.ident.to_string();
                let (alias, full) = if name == "self" {
                    (prefix.last().cloned(), prefix)
                } else {
                    let mut full = prefix;
                    full.push(name.clone());
                    (Some(name), full)
                };
                self.import(module, alias, full, record);
            }
            UseTree::Rename(r) => {
                let mut full = prefix;
                if r.ident != "self" {
                    full.push(r.ident.to_string());
                }
                self.import(module, Some(r.rename.to_string()), full, record);
            }
            UseTree::Glob(_) => self.import(module, None, prefix, record),
            UseTree::Group(g) => {
                for tree in &g.items {
                    self.collect_use(module, prefix.clone(), tree, record);
                }
            }
        }
    }

    fn import(
        &mut self,
        module: &[String],
        alias: Option<String>,
        written: Vec<String>,
        record: bool,
    ) {
        let Some(full) = self.absolute(module, &written) else {
            return;
        };
        if let Some(alias) = alias {
            self.imports
                .entry(module.to_vec())
                .or_default()
                .insert(alias, full.clone());
        }
        if record {
            self.uses.push((module.to_vec(), full));
        }
    }

    /// Every `crate::…`, `super::…` and `self::…` path in `tokens`, macro bodies
    /// included.
    fn collect_paths(&mut self, module: &[String], tokens: proc_macro2::TokenStream) {
        let mut flat = Vec::new();
        flatten(tokens, &mut flat);
        let mut i = 0;
        while i < flat.len() {
            let starts = matches!(&flat[i], Tok::Ident(s) if s == "crate" || s == "super" || s == "self")
                && matches!(flat.get(i + 1), Some(Tok::PathSep))
                && !matches!(
                    i.checked_sub(1).and_then(|p| flat.get(p)),
                    Some(Tok::PathSep)
                );
            if !starts {
                i += 1;
                continue;
            }
            let mut path = Vec::new();
            while let Some(Tok::Ident(s)) = flat.get(i) {
                path.push(s.clone());
                if matches!(flat.get(i + 1), Some(Tok::PathSep)) {
                    i += 2;
                } else {
                    i += 1;
                    break;
                }
            }
            if let Some(full) = self.absolute(module, &path) {
                self.uses.push((module.to_vec(), full));
            }
        }
    }
}

enum Tok {
    Ident(String),
    PathSep,
    Other,
}

fn flatten(tokens: proc_macro2::TokenStream, out: &mut Vec<Tok>) {
    let mut iter = tokens.into_iter().peekable();
    while let Some(tree) = iter.next() {
        match tree {
            proc_macro2::TokenTree::Group(g) => {
                out.push(Tok::Other);
                flatten(g.stream(), out);
                out.push(Tok::Other);
            }
            proc_macro2::TokenTree::Ident(i) => out.push(Tok::Ident(i.to_string())),
            proc_macro2::TokenTree::Punct(p) => {
                let joint_colon = p.as_char() == ':'
                    && p.spacing() == proc_macro2::Spacing::Joint
                    && matches!(iter.peek(), Some(proc_macro2::TokenTree::Punct(q)) if q.as_char() == ':');
                if joint_colon {
                    iter.next();
                    out.push(Tok::PathSep);
                } else {
                    out.push(Tok::Other);
                }
            }
            proc_macro2::TokenTree::Literal(_) => out.push(Tok::Other),
        }
    }
}

/// The crate whose sources are under `src`.
fn parse_crate(src: &Path) -> Crate {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut krate = Crate::default();
    let mut parsed = Vec::new();
    for file in files {
        let module = module_of(src, &file);
        let text = std::fs::read_to_string(&file).unwrap();
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        // A file that is a test module (`#[cfg(test)] mod tests;` + tests.rs) shapes
        // nothing either.
        parsed.push((module.clone(), ast));
        for n in 0..=module.len() {
            krate.modules.insert(module[..n].to_vec());
        }
    }
    let test_files: BTreeSet<ModPath> = parsed
        .iter()
        .flat_map(|(module, ast)| {
            ast.items.iter().filter_map(move |item| match item {
                Item::Mod(m) if is_cfg_test(&m.attrs) && m.content.is_none() => {
                    let mut child = module.clone();
                    child.push(m.ident.to_string());
                    Some(child)
                }
                _ => None,
            })
        })
        .collect();
    let live: Vec<_> = parsed
        .into_iter()
        .filter(|(module, _)| !test_files.iter().any(|t| module.starts_with(t)))
        .collect();
    // Imports first (two rounds: a re-export may name another module's import), then
    // the paths the code uses.
    for _ in 0..2 {
        for (module, ast) in &live {
            for item in &ast.items {
                if let Item::Use(u) = item
                    && !is_cfg_test(&u.attrs)
                {
                    krate.collect_use(module, Vec::new(), &u.tree, false);
                }
            }
        }
    }
    for (module, ast) in &live {
        for item in &ast.items {
            if is_cfg_test(item_attrs(item)) {
                continue;
            }
            match item {
                Item::Use(u) => krate.collect_use(module, Vec::new(), &u.tree, true),
                Item::Mod(m) if m.content.is_none() => {}
                other => krate.collect_paths(module, other.to_token_stream()),
            }
        }
    }
    krate
}

/// Sibling edges: for each use of `to` by `from`, the edge between the two modules
/// that sit side by side under their nearest common ancestor (none when one is the
/// other's ancestor).
fn graph(krate: &Crate) -> Graph {
    let mut graph = Graph::new();
    for (from, path) in &krate.uses {
        let to = krate.defining_module(path);
        let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
        if common == from.len() || common == to.len() {
            continue;
        }
        graph
            .entry(from[..common].to_vec())
            .or_default()
            .entry(from[common].clone())
            .or_default()
            .insert(to[common].clone());
    }
    graph
}

/// A cycle through `start`, if there is one.
fn cycle_from(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
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

/// Every cycle of the crate under `src`, as `parent: a -> b -> a`.
fn cycles(src: &Path) -> Vec<String> {
    let graph = graph(&parse_crate(src));
    let mut out = Vec::new();
    for (parent, siblings) in &graph {
        let mut reported = BTreeSet::new();
        for module in siblings.keys() {
            if let Some(cycle) = cycle_from(siblings, module) {
                let mut key = cycle[..cycle.len() - 1].to_vec();
                key.sort();
                if reported.insert(key) {
                    let at = if parent.is_empty() {
                        "crate".to_owned()
                    } else {
                        parent.join("::")
                    };
                    out.push(format!("{at}: {}", cycle.join(" -> ")));
                }
            }
        }
    }
    out
}

fn host_src(krate: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../host")
        .join(krate)
        .join("src")
}

#[test]
fn no_crate_has_a_module_cycle() {
    let runtime = graph(&parse_crate(&host_src("runtime")));
    assert!(
        runtime
            .get(&Vec::new())
            .is_some_and(|top| top.contains_key("catalog")),
        "the module walk found nothing: {runtime:?}"
    );
    // Every crate under host/ is checked: a new one cannot be forgotten here.
    let host = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../host");
    let mut on_disk: Vec<String> = std::fs::read_dir(&host)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| host.join(n).join("Cargo.toml").is_file())
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = CRATES.iter().map(|c| (*c).to_owned()).collect();
    listed.sort();
    assert_eq!(on_disk, listed, "CRATES lists every crate under host/");
    let found: Vec<String> = CRATES
        .iter()
        .flat_map(|krate| {
            cycles(&host_src(krate))
                .into_iter()
                .map(move |c| format!("{krate}: {c}"))
        })
        .collect();
    assert!(found.is_empty(), "module cycles: {found:#?}");
}

/// Writes `files` (path under src/, text) as a crate and returns its cycles.
fn cycles_of(files: &[(&str, &str)]) -> Vec<String> {
    let dir = tempfile::TempDir::new().unwrap();
    let src = dir.path().join("src");
    for (path, text) in files {
        let file = src.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    cycles(&src)
}

#[test]
fn a_planted_cycle_is_found_in_every_import_form() {
    let lib = "mod a; mod b; mod c; pub use c::Thing;";
    let forms = [
        ("crate::", "use crate::b::X;"),
        ("grouped", "use crate::{b::X, c::Y};"),
        ("super::", "use super::b;"),
        ("inline path", "fn f() { super::b::x(); }"),
        (
            "inside a macro",
            "fn f() { let _ = format!(\"{}\", crate::b::x()); }",
        ),
    ];
    for (form, a) in forms {
        let found = cycles_of(&[("lib.rs", lib), ("a.rs", a), ("b.rs", "use super::a::Z;")]);
        assert_eq!(found, ["crate: a -> b -> a"], "{form}");
    }
    // A name re-exported by the parent counts as its defining module.
    let found = cycles_of(&[
        ("lib.rs", lib),
        ("a.rs", "use super::Thing;"),
        ("b.rs", ""),
        ("c.rs", "pub struct Thing; fn f() { crate::a::g(); }"),
    ]);
    assert_eq!(found, ["crate: a -> c -> a"]);
    // Siblings deeper down count too; a child using its parent and a parent its child
    // do not; unit tests do not.
    let found = cycles_of(&[
        ("lib.rs", "mod p;"),
        (
            "p/mod.rs",
            "mod x; mod y; use x::X; fn f() { self::y::g(); }",
        ),
        ("p/x.rs", "use super::y::Y; use super::X;"),
        (
            "p/y.rs",
            "fn g() { super::x::h(); }\n#[cfg(test)]\nmod tests { use crate::p; }",
        ),
    ]);
    assert_eq!(found, ["p: x -> y -> x"]);
    let clean = cycles_of(&[
        ("lib.rs", "mod a; mod b;"),
        (
            "a.rs",
            "use crate::b::X;\n#[cfg(test)]\nmod tests { use crate::a; }",
        ),
        (
            "b.rs",
            "pub struct X;\n#[cfg(test)]\nmod tests { use crate::a::thing; }",
        ),
    ]);
    assert!(clean.is_empty(), "{clean:?}");
}
