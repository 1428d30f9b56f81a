//! `hermetic new --lang rust|python|js NAME`: a tool project that builds with one
//! command (`./build.sh`) into `NAME.wasm`, which `hermetic inspect` reads.
//!
//! Every file the project needs is written into it, the SDK included (compiled into
//! this binary from the repository's own files), so a project does not depend on
//! where, or whether, the hermetic sources are checked out: only on the language's
//! pinned toolchain, which its `build.sh` installs where it can (a venv for Python,
//! `npm ci` for JavaScript, the wasm32-wasip2 target for Rust), and, for Python and
//! JavaScript, on a `hermetic` binary (`$HERMETIC`, else on PATH), which writes the WIT
//! world and embeds the declaration (`hermetic tool world`, `hermetic tool finish`). A
//! Rust project carries the WIT its SDK binds to.

use anyhow::{Context, bail};
use std::path::{Path, PathBuf};

/// The languages a project can be made in.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    /// Rust, with the hermetic SDK (vendored into the project).
    Rust,
    /// Python, built by componentize-py.
    Python,
    /// JavaScript, built by componentize-js.
    Js,
}

/// One file of a project: where it goes and what it holds (`{{name}}` is the tool's
/// name).
pub(crate) type File = (&'static str, &'static str);

/// The hermetic:tool WIT and its key-value dependency: what a Rust project's SDK binds
/// to, and what `hermetic tool world` writes for a Python or JavaScript build.
pub(crate) const WIT: &[File] = &[
    ("wit/tool.wit", include_str!("../../../wit/tool.wit")),
    (
        "wit/deps/keyvalue/atomic.wit",
        include_str!("../../../wit/deps/keyvalue/atomic.wit"),
    ),
    (
        "wit/deps/keyvalue/batch.wit",
        include_str!("../../../wit/deps/keyvalue/batch.wit"),
    ),
    (
        "wit/deps/keyvalue/store.wit",
        include_str!("../../../wit/deps/keyvalue/store.wit"),
    ),
    (
        "wit/deps/keyvalue/world.wit",
        include_str!("../../../wit/deps/keyvalue/world.wit"),
    ),
];

const RUST: &[File] = &[
    ("Cargo.toml", include_str!("new/rust/Cargo.toml.in")),
    ("src/lib.rs", include_str!("new/rust/lib.rs.in")),
    ("build.sh", include_str!("new/rust/build.sh.in")),
    (".gitignore", "/target\n/*.wasm\n"),
    (
        "vendor/hermetic-sdk/Cargo.toml",
        include_str!("new/rust/sdk-Cargo.toml.in"),
    ),
    (
        "vendor/hermetic-sdk/src/lib.rs",
        include_str!("../../../guest-tools/sdk/src/lib.rs"),
    ),
    (
        "vendor/hermetic-sdk/src/fs.rs",
        include_str!("../../../guest-tools/sdk/src/fs.rs"),
    ),
    (
        "vendor/hermetic-sdk/src/hook.rs",
        include_str!("../../../guest-tools/sdk/src/hook.rs"),
    ),
    (
        "vendor/hermetic-sdk/src/http.rs",
        include_str!("../../../guest-tools/sdk/src/http.rs"),
    ),
    (
        "vendor/hermetic-sdk/src/kv.rs",
        include_str!("../../../guest-tools/sdk/src/kv.rs"),
    ),
    (
        "vendor/hermetic-sdk/src/terminal.rs",
        include_str!("../../../guest-tools/sdk/src/terminal.rs"),
    ),
];

/// Python and JavaScript project files (see `new/polyglot.rs`).
mod polyglot;
pub(crate) use polyglot::WASI_WIT;

/// The files of a `lang` project. A Python or JavaScript build asks `hermetic tool
/// world` for its WIT, so only a Rust project carries the WIT (its SDK binds to it).
fn files(lang: Lang) -> Vec<File> {
    match lang {
        Lang::Rust => WIT.iter().chain(RUST).copied().collect(),
        Lang::Python => polyglot::PYTHON.to_vec(),
        Lang::Js => polyglot::JS.to_vec(),
    }
}

/// Whether `name` can be a tool's name: what the host accepts (1–64 of
/// `[A-Za-z0-9_-]`) and, starting with a letter, a valid crate, module and file name.
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Writes a new `lang` project for tool `name` into `dir` (default `./NAME`), which
/// must not exist or be empty. Returns the directory.
///
/// # Errors
/// A bad name, a non-empty directory, or a failed write.
pub fn create(lang: Lang, name: &str, dir: Option<&Path>) -> anyhow::Result<PathBuf> {
    if !valid_name(name) {
        bail!(
            "{name:?} is not a tool name: use 1-64 letters, digits, `_` or `-`, starting with a letter"
        );
    }
    let dir = dir.map_or_else(|| PathBuf::from(name), Path::to_path_buf);
    if dir.exists() {
        let mut entries = std::fs::read_dir(&dir)
            .with_context(|| format!("{} exists and is not a readable directory", dir.display()))?;
        if entries.next().is_some() {
            bail!(
                "{} exists and is not empty: choose another name or --dir",
                dir.display()
            );
        }
    }
    let made = !dir.exists();
    let written = write_files(lang, name, &dir);
    // A project half written would be refused as "not empty" by the next try.
    if written.is_err() && made {
        let _ = std::fs::remove_dir_all(&dir);
    }
    written.map(|()| dir)
}

/// Writes the files of a `lang` project for tool `name` into `dir`.
fn write_files(lang: Lang, name: &str, dir: &Path) -> anyhow::Result<()> {
    // Rust crate names take `_` where the tool's may have `-`; the file cargo writes
    // is named after the crate.
    let crate_name = name.replace('-', "_");
    for (path, text) in files(lang) {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        // npm refuses capitals in a package's name.
        let text = if path.starts_with("package") {
            text.replace("{{name}}", &name.to_ascii_lowercase())
        } else {
            text.replace("{{name}}", name)
                .replace("{{crate_name}}", &crate_name)
        };
        std::fs::write(&target, text).with_context(|| format!("writing {}", target.display()))?;
        if path.ends_with(".sh") {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755))
                .with_context(|| format!("making {} executable", target.display()))?;
        }
    }
    Ok(())
}

/// What to tell the user after [`create`].
pub fn next_steps(lang: Lang, name: &str, dir: &Path) -> String {
    let toolchain = match lang {
        Lang::Rust => "cargo and rustup (it adds the wasm32-wasip2 target)",
        Lang::Python => "python3 with venv (it installs componentize-py into .venv)",
        Lang::Js => "node and npm (it runs npm ci for componentize-js)",
    };
    // `name` is checked to be shell-safe; the directory is whatever the user gave.
    let shown = dir.display().to_string();
    let quoted = shell_word(&shown);
    let wasm = shell_word(&format!("{shown}/{name}.wasm"));
    format!(
        "made {shown}: a {lang:?} tool `{name}`.\n\
         build:   cd {quoted} && ./build.sh        (needs {toolchain})\n\
         inspect: hermetic inspect {wasm}\n\
         try it:  hermetic --tools-dir {quoted} call {name} '{{\"name\": \"world\"}}'\n\
         Edit the declaration (what the tool may reach) in {decl}.",
        decl = match lang {
            Lang::Rust => "src/lib.rs (export_tool!)",
            Lang::Python | Lang::Js => "declaration.toml",
        },
    )
}

/// `s` as one shell word for the commands [`next_steps`] prints, so a directory with a
/// space or a quote can be pasted as shown; quoted only when it needs to be.
fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:,@%=".contains(&b));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_steps_quote_what_the_shell_would_split() {
        let plain = next_steps(Lang::Python, "t", Path::new("/tmp/t"));
        assert!(plain.contains("cd /tmp/t && ./build.sh"), "{plain}");
        assert!(plain.contains("hermetic inspect /tmp/t/t.wasm"), "{plain}");
        let odd = next_steps(Lang::Js, "t", Path::new("/tmp/my tools/it's"));
        assert!(
            odd.contains(r"cd '/tmp/my tools/it'\''s' && ./build.sh"),
            "{odd}"
        );
        assert!(
            odd.contains(r"inspect '/tmp/my tools/it'\''s/t.wasm'"),
            "{odd}"
        );
        assert!(
            odd.contains(r"--tools-dir '/tmp/my tools/it'\''s' call t"),
            "{odd}"
        );
    }

    #[test]
    fn names_are_checked() {
        for good in ["hello", "my-tool", "t_1"] {
            assert!(valid_name(good), "{good}");
        }
        for bad in ["", "1abc", "../x", "a b", "a/b", "é", &"x".repeat(65)] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn a_project_is_never_written_over_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("keep.txt"), "mine").unwrap();
        let err = create(Lang::Rust, "t", Some(dir.path())).unwrap_err();
        assert!(err.to_string().contains("not empty"), "{err}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("keep.txt")).unwrap(),
            "mine"
        );
    }

    #[test]
    fn every_language_fills_in_the_name() {
        for lang in [Lang::Rust, Lang::Python, Lang::Js] {
            let dir = tempfile::tempdir().unwrap();
            let out = create(lang, "my-tool", Some(&dir.path().join("p"))).unwrap();
            let mut found = false;
            for (path, _) in files(lang) {
                let text = std::fs::read_to_string(out.join(path)).unwrap();
                assert!(!text.contains("{{name}}"), "{lang:?} {path}");
                found |= text.contains("my-tool");
            }
            assert!(found, "{lang:?}: the name is nowhere");
        }
    }
}
