//! The components built from guest-tools/ and the compiled-code cache every suite
//! shares, so that no suite compiles the same component again.
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// Path of a component built from guest-tools/ (bundled and test tools alike).
pub fn guest(name: &str) -> PathBuf {
    let path = Path::new(hermetic::GUEST_BUILD_DIR).join(format!("{name}.wasm"));
    assert!(path.is_file(), "{} was not built", path.display());
    path
}

/// A temporary directory holding copies of the named components.
pub fn tools_dir(names: &[&str]) -> TempDir {
    let dir = TempDir::new().unwrap();
    for name in names {
        std::fs::copy(guest(name), dir.path().join(format!("{name}.wasm"))).unwrap();
    }
    dir
}

/// The suites' shared compiled-code cache under target/: an engine's `cache_dir`, the
/// binary's `HERMETIC_CACHE_DIR`.
pub fn test_cache() -> PathBuf {
    Path::new(hermetic::GUEST_BUILD_DIR).join("../../test-cache")
}
