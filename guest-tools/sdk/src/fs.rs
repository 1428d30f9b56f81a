//! Paths inside the mounts a tool declared.
//!
//! The host preopens each granted mount at `/<mount-name>` (the `workspace` mount at
//! `/workspace`). The sandbox itself refuses anything outside a mount, including
//! symlinks that point out; these helpers only turn an agent's path into a path under
//! the mount and give a clear message for the obvious escapes before the sandbox would.

use crate::{Result, ToolError};
use std::path::{Component, Path, PathBuf};

/// Guest path of the `workspace` mount.
pub const WORKSPACE: &str = "/workspace";

/// Resolves an agent-supplied path against the `workspace` mount.
///
/// Relative paths are taken from the workspace root; absolute paths must already lie
/// under `/workspace`. `.` and `..` are folded lexically and a path that would leave the
/// workspace is refused.
pub fn workspace_path(path: &str) -> Result<PathBuf> {
    resolve_in(WORKSPACE, path)
}

/// Resolves `path` against the mount rooted at `root` (see [`workspace_path`]).
pub fn resolve_in(root: &str, path: &str) -> Result<PathBuf> {
    if path.is_empty() {
        return Err(ToolError::new("path is empty"));
    }
    if path.contains('\0') {
        return Err(ToolError::new("path contains a NUL byte"));
    }
    let root = Path::new(root);
    let given = Path::new(path);
    let relative = if given.is_absolute() {
        given.strip_prefix(root).map_err(|_| {
            ToolError::new(format!(
                "access denied: {path} is outside the workspace (paths are relative to the workspace, or start with {})",
                root.display()
            ))
        })?
    } else {
        given
    };
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for component in relative.components() {
        match component {
            Component::Normal(part) => parts.push(part),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            Component::ParentDir => {
                if parts.pop().is_none() {
                    return Err(ToolError::new(format!(
                        "access denied: {path} escapes the workspace"
                    )));
                }
            }
        }
    }
    let mut out = root.to_path_buf();
    out.extend(parts);
    Ok(out)
}

/// The path as the agent should see it: relative to the mount root.
pub fn display_path(root: &str, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// A clearer message for I/O errors on a path (the sandbox's refusals read as
/// "access denied", not as a bare errno).
pub fn io_error(path: &str, e: &std::io::Error) -> ToolError {
    use std::io::ErrorKind;
    let msg = match e.kind() {
        ErrorKind::NotFound => format!("File not found: {path}"),
        ErrorKind::PermissionDenied => {
            format!("access denied: {path} (outside the granted mount or not writable)")
        }
        ErrorKind::IsADirectory => format!("{path} is a directory"),
        ErrorKind::NotADirectory => format!("{path}: a parent is not a directory"),
        _ => format!("{path}: {e}"),
    };
    ToolError::new(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_land_in_the_workspace() {
        assert_eq!(
            workspace_path("a/b.txt").unwrap(),
            PathBuf::from("/workspace/a/b.txt")
        );
        assert_eq!(
            workspace_path("./a/../b").unwrap(),
            PathBuf::from("/workspace/b")
        );
        assert_eq!(
            workspace_path("/workspace/x").unwrap(),
            PathBuf::from("/workspace/x")
        );
    }

    #[test]
    fn escapes_are_refused() {
        assert!(workspace_path("../etc/passwd").is_err());
        assert!(workspace_path("a/../../x").is_err());
        assert!(workspace_path("/etc/passwd").is_err());
        assert!(workspace_path("/workspacex/y").is_err());
        assert!(workspace_path("").is_err());
    }
}
