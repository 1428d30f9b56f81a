//! The WIT a tool is built against, from the files compiled into this binary (the
//! repository's `wit/` and `guest-tools/wit-wasi/`, the same ones `hermetic new`
//! writes): resolved with `wit-parser`, so a world this module writes is one the
//! bindings generators read.

use anyhow::{Context, Result, anyhow, bail};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use wit_parser::{PackageId, Resolve, SourceMap, UnresolvedPackageGroup, WorldId, WorldItem};

/// The package the generated world is in.
const PACKAGE: &str = "hermetic:tool-build";
/// The generated world's name (componentize-py's `-w`, componentize-js's `worldName`).
pub(super) const WORLD: &str = "tool";

/// The world every tool targets, whatever it declares: the `tool` export and the
/// `host` import.
fn tool_world() -> String {
    let version = hermetic::component::WIT_PACKAGE
        .rsplit_once('@')
        .map_or("", |(_, v)| v);
    format!("hermetic:tool/tool-component@{version}")
}

/// One WIT package compiled into the binary: its files, by where they go in a written
/// package directory (`deps/…`).
struct Embedded {
    files: Vec<(String, &'static str)>,
}

/// Every embedded package, each file placed where `wit-parser` finds a dependency:
/// `deps/NAME/*.wit` for a package of several files, `deps/NAME.wit` for one.
fn embedded() -> Vec<Embedded> {
    let mut by_dir: BTreeMap<String, Vec<(String, &'static str)>> = BTreeMap::new();
    for (path, text) in crate::new::WIT.iter().chain(crate::new::WASI_WIT) {
        let (group, target) = if let Some(rest) = path.strip_prefix("wit/deps/") {
            let dir = rest.split('/').next().unwrap_or(rest);
            (format!("deps/{dir}"), format!("deps/{rest}"))
        } else if let Some(name) = path.strip_prefix("wit-wasi/") {
            let target = format!("deps/wasi-{name}");
            (target.clone(), target)
        } else {
            // wit/tool.wit: the hermetic:tool package.
            let name = path.rsplit('/').next().unwrap_or(path);
            (
                "deps/hermetic-tool".to_owned(),
                format!("deps/hermetic-tool/{name}"),
            )
        };
        by_dir.entry(group).or_default().push((target, text));
    }
    by_dir
        .into_values()
        .map(|files| Embedded { files })
        .collect()
}

fn parse(files: &[(String, &str)]) -> Result<UnresolvedPackageGroup> {
    let mut map = SourceMap::new();
    for (path, text) in files {
        map.push_str(path, *text);
    }
    map.parse()
        .map_err(|(_, e)| anyhow!("{e}"))
        .context("parsing the WIT compiled into hermetic (a build bug)")
}

/// A `Resolve` of the embedded packages and one of our own (`main`, WIT text).
pub(super) struct Resolved {
    /// Every package, resolved.
    pub resolve: Resolve,
    /// `main`'s package.
    pub main: PackageId,
    /// Which embedded package (index into [`embedded`]) each package id is.
    embedded: BTreeMap<PackageId, usize>,
}

impl Resolved {
    /// The embedded packages and `main`, resolved together.
    pub fn with(main: &str) -> Result<Self> {
        let packages = embedded();
        let mut resolve = Resolve::new();
        let mut names = BTreeMap::new();
        let mut deps = Vec::new();
        for (i, package) in packages.iter().enumerate() {
            let group = parse(&package.files)?;
            names.insert(group.main.name.clone(), i);
            deps.push(group);
        }
        let main_group = parse(&[("world.wit".to_owned(), main)])?;
        let main = resolve
            .push_groups(main_group, deps)
            .map_err(|e| anyhow!("{e}"))
            .context("resolving the generated WIT world")?;
        let embedded = resolve
            .packages
            .iter()
            .filter_map(|(id, p)| names.get(&p.name).map(|i| (id, *i)))
            .collect();
        Ok(Self {
            resolve,
            main,
            embedded,
        })
    }

    /// The world `name` of the main package.
    pub fn world(&self, name: &str) -> Result<WorldId> {
        self.resolve.packages[self.main]
            .worlds
            .get(name)
            .copied()
            .ok_or_else(|| anyhow!("no world `{name}` in the generated WIT (a build bug)"))
    }

    /// Every interface of the embedded packages that a tool world does not already
    /// have (its `host` import, its `tool` export and what they use), by id
    /// (`wasi:http/types@0.2.12`): what a tool might import beyond the tool world.
    pub fn candidates(&self, tool: WorldId) -> Vec<String> {
        let world = &self.resolve.worlds[tool];
        let own: BTreeSet<_> = world
            .imports
            .values()
            .chain(world.exports.values())
            .filter_map(|item| match item {
                WorldItem::Interface { id, .. } => Some(*id),
                _ => None,
            })
            .collect();
        self.resolve
            .interfaces
            .iter()
            .filter(|(id, i)| {
                !own.contains(id) && i.package.is_some_and(|p| self.embedded.contains_key(&p))
            })
            .filter_map(|(id, _)| self.resolve.id_of(id))
            .collect()
    }

    /// Writes the main package as `DIR/world.wit` and the embedded packages it needs
    /// (directly or through another) under `DIR/deps/`: a directory componentize-py
    /// (`-d`) and componentize-js (`witPath`) read.
    pub fn write(&self, main_text: &str, dir: &Path) -> Result<Vec<PathBuf>> {
        let packages = embedded();
        let mut needed = BTreeSet::new();
        let mut queue = vec![self.main];
        while let Some(id) = queue.pop() {
            for dep in self.resolve.package_direct_deps(id) {
                if needed.insert(dep) {
                    queue.push(dep);
                }
            }
        }
        let mut written = vec![dir.join("world.wit")];
        write_new(&written[0], main_text)?;
        for i in needed.iter().filter_map(|id| self.embedded.get(id)) {
            for (path, text) in &packages[*i].files {
                let target = dir.join(path);
                write_new(&target, text)?;
                written.push(target);
            }
        }
        Ok(written)
    }
}

fn write_new(path: &Path, text: &str) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// The text of the world a tool importing `imports` (interface ids) targets.
pub(super) fn world_text(name: &str, imports: &[String]) -> String {
    let mut text = format!(
        "// The world of the hermetic tool `{name}`, written by `hermetic tool world` from its\n\
         // declaration: the tool export and exactly the imports its declared capabilities\n\
         // link. Do not edit; run the command again when the declaration changes.\n\
         package {PACKAGE};\n\nworld {WORLD} {{\n    include {};\n",
        tool_world()
    );
    for import in imports {
        text.push_str(&format!("    import {import};\n"));
    }
    text.push_str("}\n");
    text
}

/// A package of probe worlds: `p0` is the tool world alone, `pN` (N ≥ 1) adds the
/// import of `candidates[N-1]`.
pub(super) fn probe_text(candidates: &[String]) -> String {
    let tool = tool_world();
    let mut text = format!("package hermetic:probe;\n\nworld p0 {{\n    include {tool};\n}}\n");
    for (i, candidate) in candidates.iter().enumerate() {
        text.push_str(&format!(
            "world p{} {{\n    include {tool};\n    import {candidate};\n}}\n",
            i + 1
        ));
    }
    text
}

/// A directory to write a WIT package into: absent or empty.
pub(super) fn check_out_dir(dir: &Path) -> Result<()> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                bail!(
                    "{} is not empty: give a new or empty directory (the world and its deps are written there)",
                    dir.display()
                );
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("{} is not a readable directory", dir.display())),
    }
}
