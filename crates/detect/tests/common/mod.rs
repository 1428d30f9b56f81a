//! What the detector's suites share: the labelled command files and their reader.

use std::path::PathBuf;

/// Every labelled file, relative to the crate: the shared corpus (next to the
/// repository) and our own two.
pub const LABELLED: [&str; 3] = [
    "../../../shared/corpus/approval.jsonl",
    "tests/approval_extra.jsonl",
    "tests/unseen.jsonl",
];

/// The `command` of every row of a labelled JSONL file (`relative` to the crate).
pub fn commands(relative: &str) -> Vec<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(relative);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["command"].as_str().unwrap().to_owned()
        })
        .collect()
}
