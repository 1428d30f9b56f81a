//! Links the `hermetic` binary with packed relative relocations (DT_RELR) on glibc
//! Linux. A position-independent Rust binary of this size carries ~1.5 MiB of
//! relocation entries that the dynamic loader reads at every start; packed, they are a
//! few KiB (idle RSS of `hermetic serve` down ~1.7 MiB, `cargo bench -p hermetic-cli
//! --bench start`). GNU ld ≥ 2.38 and lld pack them, and GNU ld packs only when the
//! glibc linked against supports it (≥ 2.36); an older ld ignores the option with a
//! warning. `HERMETIC_NO_RELR=1` leaves it out, e.g. to build on a new system a binary
//! for an older one.
fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=HERMETIC_NO_RELR");
    let target = |key: &str, value: &str| std::env::var(key).is_ok_and(|v| v == value);
    if target("CARGO_CFG_TARGET_OS", "linux")
        && target("CARGO_CFG_TARGET_ENV", "gnu")
        && std::env::var_os("HERMETIC_NO_RELR").is_none()
    {
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
