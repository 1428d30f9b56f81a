//! Python and JavaScript project files, compiled in from guest-tools/python and
//! guest-tools/js (the SDKs' own sources, so a project gets what the repository tests).
use super::File;

/// Python project files: the tool, its build script and the `hermetic_tool` package.
pub(super) const PYTHON: &[File] = &[
    (
        "app.py",
        include_str!("../../../../guest-tools/python/template/app.py"),
    ),
    (
        "declaration.toml",
        include_str!("../../../../guest-tools/python/template/declaration.toml"),
    ),
    ("build.sh", include_str!("python/build.sh.in")),
    ("README.md", include_str!("python/README.md.in")),
    (".gitignore", ".venv/\n__pycache__/\n/*.wasm\n"),
    (
        "requirements.txt",
        include_str!("../../../../guest-tools/python/requirements.txt"),
    ),
    (
        "hermetic_tool/__init__.py",
        include_str!("../../../../guest-tools/python/hermetic_tool/__init__.py"),
    ),
    (
        "hermetic_tool/_adapter.py",
        include_str!("../../../../guest-tools/python/hermetic_tool/_adapter.py"),
    ),
    (
        "hermetic_tool/build.py",
        include_str!("../../../../guest-tools/python/hermetic_tool/build.py"),
    ),
    (
        "hermetic_tool/http.py",
        include_str!("../../../../guest-tools/python/hermetic_tool/http.py"),
    ),
    (
        "hermetic_tool/terminal.py",
        include_str!("../../../../guest-tools/python/hermetic_tool/terminal.py"),
    ),
];

/// JavaScript project files: the tool, its build script and the SDK module.
pub(super) const JS: &[File] = &[
    (
        "app.js",
        include_str!("../../../../guest-tools/js/template/app.js"),
    ),
    (
        "declaration.toml",
        include_str!("../../../../guest-tools/js/template/declaration.toml"),
    ),
    (
        "package.json",
        include_str!("../../../../guest-tools/js/template/package.json"),
    ),
    (
        "package-lock.json",
        include_str!("../../../../guest-tools/js/template/package-lock.json"),
    ),
    (
        ".gitignore",
        include_str!("../../../../guest-tools/js/template/.gitignore"),
    ),
    ("build.sh", include_str!("js/build.sh.in")),
    (
        "hermetic-tool.js",
        include_str!("../../../../guest-tools/js/hermetic-tool.js"),
    ),
    (
        "hermetic-tool.d.ts",
        include_str!("../../../../guest-tools/js/hermetic-tool.d.ts"),
    ),
    (
        "build.mjs",
        include_str!("../../../../guest-tools/js/build.mjs"),
    ),
];

/// The WASI WIT (wasmtime-wasi-http 48's `wasi:*@0.2.12`) that `hermetic tool world`
/// writes beside a world importing wasi:http.
pub(crate) const WASI_WIT: &[File] = &[
    (
        "wit-wasi/cli.wit",
        include_str!("../../../../guest-tools/wit-wasi/cli.wit"),
    ),
    (
        "wit-wasi/clocks.wit",
        include_str!("../../../../guest-tools/wit-wasi/clocks.wit"),
    ),
    (
        "wit-wasi/filesystem.wit",
        include_str!("../../../../guest-tools/wit-wasi/filesystem.wit"),
    ),
    (
        "wit-wasi/http.wit",
        include_str!("../../../../guest-tools/wit-wasi/http.wit"),
    ),
    (
        "wit-wasi/io.wit",
        include_str!("../../../../guest-tools/wit-wasi/io.wit"),
    ),
    (
        "wit-wasi/random.wit",
        include_str!("../../../../guest-tools/wit-wasi/random.wit"),
    ),
    (
        "wit-wasi/sockets.wit",
        include_str!("../../../../guest-tools/wit-wasi/sockets.wit"),
    ),
];
