//! `hermetic.lock`: for each tool whose policy source is a tag, the digest `hermetic
//! pull` resolved it to. Start-up reads digests only (no network); a tag that moved
//! changes nothing until the operator pulls again and the lock file changes — a diff
//! they can review and commit.

use crate::reference::Reference;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A lock file error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Not a lock file.
    #[error("{path}: not a hermetic lock file: {reason}")]
    Invalid {
        /// The lock file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// One locked tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Locked {
    /// The policy's source, as written (`oci://host/repo:tag`).
    pub source: String,
    /// What it resolved to (`oci://host/repo@sha256:…`).
    pub pinned: String,
}

/// The lock file's contents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    /// Tool name → its locked source.
    #[serde(default)]
    pub tools: BTreeMap<String, Locked>,
}

impl Lock {
    /// The lock file beside `policy` (`hermetic.lock` in its directory).
    pub fn path_beside(policy: &Path) -> PathBuf {
        policy
            .parent()
            .unwrap_or(Path::new("."))
            .join("hermetic.lock")
    }

    /// Reads a lock file; a missing one is empty.
    ///
    /// # Errors
    /// [`LockError`] for an unreadable or invalid file.
    pub fn load(path: &Path) -> Result<Self, LockError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => {
                return Err(LockError::Io {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        let lock: Self = toml::from_str(&text).map_err(|e| LockError::Invalid {
            path: path.to_path_buf(),
            reason: e.message().to_owned(),
        })?;
        for (name, l) in &lock.tools {
            let invalid = |reason: String| LockError::Invalid {
                path: path.to_path_buf(),
                reason,
            };
            // Parsed as `pinned` reads it (one `oci://` at most), so what passes here
            // is what start-up uses.
            let pinned = Reference::parse(&l.pinned)
                .ok()
                .filter(|r| r.digest.is_some())
                .ok_or_else(|| {
                    invalid(format!(
                        "tools.{name}.pinned is not a reference with a digest"
                    ))
                })?;
            let source = Reference::parse(&l.source)
                .map_err(|e| invalid(format!("tools.{name}.source: {e}")))?;
            if !pins(&source, &pinned) {
                return Err(invalid(format!(
                    "tools.{name}.pinned {} is not in the registry and repository of its source {} (a lock file names a digest of the source's own repository; `hermetic pull --policy FILE` writes it)",
                    l.pinned, l.source
                )));
            }
        }
        Ok(lock)
    }

    /// The pinned reference for `name` when its locked source is `source` (and the
    /// pin is in the source's registry and repository).
    pub fn pinned(&self, name: &str, source: &str) -> Option<Reference> {
        let l = self.tools.get(name).filter(|l| l.source == source)?;
        let pinned = Reference::parse(&l.pinned).ok()?;
        let source = Reference::parse(source).ok()?;
        pins(&source, &pinned).then_some(pinned)
    }

    /// Writes the lock file (atomically: a temporary file renamed over it).
    ///
    /// # Errors
    /// [`LockError::Io`].
    pub fn save(&self, path: &Path) -> Result<(), LockError> {
        let io = |source| LockError::Io {
            path: path.to_path_buf(),
            source,
        };
        let text = format!(
            "# Written by `hermetic pull`: the digest each tool's tag resolved to.\n# Review changes to it as you would a dependency update.\n{}",
            toml::to_string(self).unwrap_or_default()
        );
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        // A save killed before its rename left its temporary file beside the policy:
        // named for the lock file, so it is found and removed here.
        let prefix = format!(
            ".{}.",
            path.file_name().unwrap_or_default().to_string_lossy()
        );
        remove_leftovers(dir, &prefix);
        let mut tmp = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(".tmp")
            .tempfile_in(dir)
            .map_err(io)?;
        std::io::Write::write_all(&mut tmp, text.as_bytes()).map_err(io)?;
        tmp.as_file().sync_all().map_err(io)?;
        tmp.persist(path).map_err(|e| io(e.error))?;
        Ok(())
    }
}

/// Removes the files in `dir` named `PREFIX….tmp` (what earlier saves left when they
/// were killed). Best effort: one that cannot be removed is tried again next time.
fn remove_leftovers(dir: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(prefix)
            && name.ends_with(".tmp")
            && entry.file_type().is_ok_and(|t| t.is_file())
        {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Whether `pinned` is a digest in `source`'s registry and repository: a lock entry
/// pinning another repository's digest (signed by the same key for that repository,
/// so every signature check passes) would load another tool under this one's grants,
/// and be compared with statements of a repository it is not from.
pub fn pins(source: &Reference, pinned: &Reference) -> bool {
    pinned.digest.is_some()
        && pinned.registry == source.registry
        && pinned.repository == source.repository
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_save_removes_what_a_killed_save_left_beside_the_lock_file() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("hermetic.lock");
        // What a save killed before its rename leaves, and files that are not that.
        std::fs::write(dir.path().join(".hermetic.lock.aB3xYz.tmp"), "half").unwrap();
        std::fs::write(dir.path().join("policy.toml"), "").unwrap();
        std::fs::write(dir.path().join(".other.tmp"), "").unwrap();
        Lock::default().save(&path).unwrap();
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, [".other.tmp", "hermetic.lock", "policy.toml"]);
        assert_eq!(Lock::load(&path).unwrap(), Lock::default());
    }

    #[test]
    fn a_pinned_reference_start_up_could_not_use_is_refused_at_load() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("hermetic.lock");
        let digest = format!("sha256:{}", "a".repeat(64));
        let write = |pinned: &str| {
            std::fs::write(
                &path,
                format!(
                    "[tools.echo]\nsource = \"oci://r.example.com/echo:1\"\npinned = \"{pinned}\"\n"
                ),
            )
            .unwrap();
        };
        write(&format!("oci://r.example.com/echo@{digest}"));
        let lock = Lock::load(&path).unwrap();
        assert!(lock.pinned("echo", "oci://r.example.com/echo:1").is_some());
        // What `pinned` could not parse must not load as if it could: start-up would
        // then say the tag is not locked at all. Nor may it pin a digest of another
        // repository or registry than its source's.
        for bad in [
            format!("oci://oci://r.example.com/echo@{digest}"),
            "oci://r.example.com/echo:1".to_owned(),
            format!("oci://r.example.com/echo-legacy@{digest}"),
            format!("oci://r.example.com/tools/echo@{digest}"),
            format!("oci://mirror.example.com/echo@{digest}"),
        ] {
            write(&bad);
            assert!(
                matches!(Lock::load(&path), Err(LockError::Invalid { .. })),
                "{bad}"
            );
        }
    }
}
