//! `[mounts.NAME]`: the host directories tools may be granted, each canonical and a
//! directory at load (relative to the directory hermetic starts in); every other
//! section that names a mount names one of these.

use crate::error::PolicyFileError;
use hermetic_policy::MountGrant;
use hermetic_policy::declaration::Access;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// `[mounts.NAME]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MountToml {
    path: PathBuf,
    access: Access,
}

/// `[mounts.NAME]`: each path, relative to `base_dir`, must be a directory now.
pub(crate) fn operator_mounts(
    raw: BTreeMap<String, MountToml>,
    base_dir: &Path,
    invalid: &impl Fn(String) -> PolicyFileError,
) -> Result<BTreeMap<String, MountGrant>, PolicyFileError> {
    let mut mounts = BTreeMap::new();
    for (name, m) in raw {
        let joined = base_dir.join(&m.path);
        let host_path = joined.canonicalize().map_err(|e| {
            invalid(format!(
                "mount `{name}`: {} cannot be used: {e}",
                joined.display()
            ))
        })?;
        if !host_path.is_dir() {
            return Err(invalid(format!(
                "mount `{name}`: {} is not a directory",
                host_path.display()
            )));
        }
        mounts.insert(
            name,
            MountGrant {
                host_path,
                ceiling: m.access,
            },
        );
    }
    Ok(mounts)
}

/// Every mount `names` (at key `at`) is one of the operator's `[mounts]`.
pub(crate) fn check_mounts_exist(
    names: &BTreeSet<String>,
    mounts: &BTreeMap<String, MountGrant>,
    at: &str,
    invalid: &impl Fn(String) -> PolicyFileError,
) -> Result<(), PolicyFileError> {
    match names.iter().find(|n| !mounts.contains_key(*n)) {
        Some(n) => Err(invalid(format!(
            "{at}.mounts: no mount named `{n}` (define it under [mounts.{n}])"
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use crate::load::parse_in;
    use std::collections::BTreeSet;

    #[test]
    fn mount_paths_are_canonical() {
        let dir = tempfile::TempDir::new().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        let loaded = parse_in(
            dir.path(),
            "[mounts.w]\npath = \"a/./b/..\"\naccess = \"ro\"",
        )
        .unwrap();
        assert_eq!(
            loaded.policy.mounts["w"].host_path,
            dir.path().canonicalize().unwrap().join("a")
        );
        assert_eq!(
            loaded.policy.defaults.mounts,
            BTreeSet::from(["w".to_owned()])
        );
    }
}
