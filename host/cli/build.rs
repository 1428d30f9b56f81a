//! Link settings of the `hermetic` binary that shrink what a running server holds.
//!
//! **Packed relative relocations (DT_RELR)** on glibc Linux. A position-independent
//! Rust binary of this size carries ~1.5 MiB of relocation entries that the dynamic
//! loader reads at every start; packed, they are a few KiB (idle RSS of `hermetic
//! serve` down ~1.7 MiB, `cargo bench -p hermetic-cli --bench start`). GNU ld ≥ 2.38
//! and lld pack them, and GNU ld packs only when the glibc linked against supports it
//! (≥ 2.36); an older ld ignores the option with a warning. `HERMETIC_NO_RELR=1`
//! leaves it out, e.g. to build on a new system a binary for an older one.
//!
//! **Start-up code first** (`startup-order.txt`, lld's `--symbol-ordering-file`). The
//! kernel maps a binary's code 64 KiB around each page a process touches, and the few
//! thousand functions a server runs to start are spread over all 27 MiB of it, so an
//! idle server held 11 MiB of code. Laid out together they take 2.5 MiB; idle RSS
//! 26.7 -> 17 MiB, and starts are quicker (fewer page faults). Names the file lists
//! that the binary lacks (after a dependency changed, say) are skipped; refresh the
//! list with `startup-order.py`. The workspace's crates build in one codegen unit
//! (root `Cargo.toml`) so that their names do not change with each edit. Used only
//! where the linker is rustc's own lld (the default on x86_64 Linux since Rust 1.90)
//! and no other linker is configured: GNU ld has no such option.
//! Release-based profiles only (debug builds name their symbols differently).
//! `HERMETIC_NO_SYMBOL_ORDER=1` leaves it out.
fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=startup-order.txt");
    for var in [
        "HERMETIC_NO_RELR",
        "HERMETIC_NO_SYMBOL_ORDER",
        "RUSTC_LINKER",
        "CARGO_ENCODED_RUSTFLAGS",
    ] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    let env = |key: &str| std::env::var(key).unwrap_or_default();
    let linux_gnu = env("CARGO_CFG_TARGET_OS") == "linux" && env("CARGO_CFG_TARGET_ENV") == "gnu";
    if linux_gnu && std::env::var_os("HERMETIC_NO_RELR").is_none() {
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    // rustc links x86_64-unknown-linux-gnu with its bundled lld unless told otherwise:
    // by a configured linker, or by flags that change the linker or its flavour.
    let flags = env("CARGO_ENCODED_RUSTFLAGS");
    let default_lld = env("TARGET") == "x86_64-unknown-linux-gnu"
        && std::env::var_os("RUSTC_LINKER").is_none()
        && ![
            "linker=",
            "linker-flavor",
            "linker-features",
            "link-self-contained",
            "fuse-ld",
        ]
        .iter()
        .any(|option| flags.contains(option));
    // The list names the symbols of an optimised build; a debug build's are others.
    let release = env("PROFILE") == "release";
    if default_lld && release && std::env::var_os("HERMETIC_NO_SYMBOL_ORDER").is_none() {
        let manifest = std::path::PathBuf::from(env("CARGO_MANIFEST_DIR"));
        let order = manifest.join("startup-order.txt");
        // `-Wl,` splits its argument at commas.
        if order.is_file() && !order.to_string_lossy().contains(',') {
            println!(
                "cargo::rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
                order.display()
            );
            println!("cargo::rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
        }
    }
}
