//! What the detector's suites share: the labelled command files and their reader.
//! The approval bench (`benches/approval.rs`) reads the corpus with this file too.

use std::path::{Path, PathBuf};

/// The shared corpus, relative to the repository root (`shared/` sits next to it).
pub const CORPUS: &str = "../shared/corpus/approval.jsonl";

/// Every labelled file, relative to the repository root: the shared corpus and our own
/// two.
pub const LABELLED: [&str; 3] = [
    CORPUS,
    "host/detect/tests/approval_extra.jsonl",
    "host/detect/tests/unseen.jsonl",
];

/// The repository root: the nearest directory above the including package that holds
/// `Cargo.lock` (the detect crate and the benches package sit at different depths).
fn repo_root() -> PathBuf {
    let package = Path::new(env!("CARGO_MANIFEST_DIR"));
    package
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").is_file())
        .unwrap_or_else(|| panic!("no Cargo.lock above {}", package.display()))
        .to_path_buf()
}

/// The `command` of every row of a labelled JSONL file (`relative` to the repository
/// root).
pub fn commands(relative: &str) -> Vec<String> {
    let path = repo_root().join(relative);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e} (shared/ must sit next to the repository)",
            path.display()
        )
    });
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["command"].as_str().unwrap().to_owned()
        })
        .collect()
}
