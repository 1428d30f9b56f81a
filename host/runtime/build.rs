//! Builds the guest tool components (guest-tools/, a separate wasm32-wasip2 workspace)
//! so that a plain `cargo build` of the host embeds the bundled tools.
//!
//! The guests go to `<target>/guest-tools`, shared by every host profile, so debug and
//! release builds of the host do not compile the guests twice.

use sha2::Digest;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "src/compile_settings.rs"]
mod compile_settings;

/// The hooks embedded in the `hermetic` binary (crate names in guest-tools/hooks/).
const BUNDLED_HOOKS: &[&str] = &["secret_scan"];

/// The tools embedded in the `hermetic` binary (crate names in guest-tools/).
const BUNDLED: &[&str] = &[
    "read_file",
    "write_file",
    "patch",
    "search_files",
    "weather",
    "terminal",
    "process",
    "web_extract",
    "todo",
    "memory",
];

fn main() {
    if let Err(message) = run() {
        println!("cargo::error={message}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let manifest_dir = PathBuf::from(env("CARGO_MANIFEST_DIR")?);
    // host/runtime → the workspace root.
    let root = manifest_dir
        .ancestors()
        .nth(2)
        .ok_or("host/runtime has no workspace root above it")?
        .to_path_buf();
    let guests = root.join("guest-tools");
    let target_dir = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => root.join("target"),
    }
    .join("guest-tools");

    watch(&guests)?;
    println!("cargo::rerun-if-changed={}", root.join("wit").display());
    println!("cargo::rerun-if-env-changed=HERMETIC_SKIP_GUEST_BUILD");

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&guests)
        .args([
            "build",
            "--release",
            "--target",
            "wasm32-wasip2",
            "--target-dir",
        ])
        .arg(&target_dir);
    // The outer build's flags and wrappers (clippy, coverage, host RUSTFLAGS) are for the
    // host target, not for the guests.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "CARGO_PROFILE_RELEASE_DEBUG",
    ] {
        cmd.env_remove(var);
    }
    if std::env::var_os("HERMETIC_SKIP_GUEST_BUILD").is_none() {
        let status = cmd
            .status()
            .map_err(|e| format!("could not run cargo to build guest-tools: {e}"))?;
        if !status.success() {
            return Err(
                "building guest-tools for wasm32-wasip2 failed (see the output above). \
                 If the target is missing, run `rustup target add wasm32-wasip2`."
                    .into(),
            );
        }
    }

    let wasm_dir = target_dir.join("wasm32-wasip2").join("release");
    let mut bundled = String::from("/// Bundled tool components: (crate name, component bytes).\n");
    bundled.push_str("pub static BUNDLED: &[(&str, &[u8])] = &[\n");
    for name in BUNDLED {
        let path = wasm_dir.join(format!("{name}.wasm"));
        if !path.is_file() {
            return Err(format!("bundled tool {} was not built", path.display()));
        }
        bundled.push_str(&format!(
            "    ({name:?}, include_bytes!({:?})),\n",
            path.display().to_string()
        ));
    }
    bundled.push_str("];\n");
    bundled.push_str("/// Bundled hook components: (crate name, component bytes).\n");
    bundled.push_str("pub static BUNDLED_HOOKS: &[(&str, &[u8])] = &[\n");
    for name in BUNDLED_HOOKS {
        let path = wasm_dir.join(format!("{name}.wasm"));
        if !path.is_file() {
            return Err(format!("bundled hook {} was not built", path.display()));
        }
        bundled.push_str(&format!(
            "    ({name:?}, include_bytes!({:?})),\n",
            path.display().to_string()
        ));
    }
    bundled.push_str("];\n");
    let out_dir = PathBuf::from(env("OUT_DIR")?);
    bundled.push_str(&precompile(&wasm_dir, &out_dir)?);
    let out = out_dir.join("bundled.rs");
    std::fs::write(&out, bundled).map_err(|e| format!("writing {}: {e}", out.display()))?;
    println!(
        "cargo::rustc-env=HERMETIC_GUEST_BUILD_DIR={}",
        wasm_dir.display()
    );
    Ok(())
}

/// Compiles the bundled tools to native code with the runtime's settings
/// (`src/compile_settings.rs`), so a fresh install never compiles them at start, and
/// returns the `PRECOMPILED` table: (crate name, SHA-256 of the component, code). Empty
/// when building for another target than this machine: the code would be this
/// machine's. (Code built on a CPU with features the running one lacks is refused by
/// wasmtime at start, and the tool compiled there instead.)
fn precompile(wasm_dir: &Path, out_dir: &Path) -> Result<String, String> {
    let mut table = String::from(
        "/// Bundled tools compiled at build time: (crate name, SHA-256 of the component,\n\
         /// code for the default engine).\n\
         pub static PRECOMPILED: &[(&str, &str, &[u8])] = &[\n",
    );
    if env("TARGET")? == env("HOST")? {
        let mut config = wasmtime::Config::new();
        compile_settings::apply(&mut config, false);
        let engine = wasmtime::Engine::new(&config)
            .map_err(|e| format!("building the engine that precompiles the tools: {e:#}"))?;
        for name in BUNDLED {
            let wasm = wasm_dir.join(format!("{name}.wasm"));
            let bytes =
                std::fs::read(&wasm).map_err(|e| format!("reading {}: {e}", wasm.display()))?;
            let code = engine
                .precompile_component(&bytes)
                .map_err(|e| format!("precompiling {}: {e:#}", wasm.display()))?;
            let path = out_dir.join(format!("{name}.cwasm"));
            std::fs::write(&path, code).map_err(|e| format!("writing {}: {e}", path.display()))?;
            let digest = format!("{:x}", sha2::Sha256::digest(&bytes));
            table.push_str(&format!(
                "    ({name:?}, {digest:?}, include_bytes!({:?})),\n",
                path.display().to_string()
            ));
        }
    }
    table.push_str("];\n");
    Ok(table)
}

fn env(name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|_| format!("{name} is not set"))
}

/// Reruns the build when any guest source changes (but not when the guests' own
/// `target/` directories do, which would rebuild on every build).
fn watch(dir: &Path) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        // Not Rust guests: the Python and JavaScript SDKs (built by their own
        // toolchains, their node_modules thousands of files) and build leftovers.
        if matches!(
            name.to_str(),
            Some("target" | "python" | "js" | "node_modules" | "__pycache__")
        ) || name.to_string_lossy().starts_with('.')
        {
            continue;
        }
        if path.is_dir() {
            // Cargo scans a watched directory whole, so a crate added under
            // `test-tools/` or `hooks/` reruns the build (the root is not watched
            // whole: it holds the SDKs skipped above).
            println!("cargo::rerun-if-changed={}", path.display());
            watch(&path)?;
        } else {
            println!("cargo::rerun-if-changed={}", path.display());
        }
    }
    Ok(())
}
