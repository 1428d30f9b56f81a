//! Where the host's own files may live: never inside a directory a tool or a terminal
//! command can reach.
//!
//! The approval allowlist is read on every check, the policy and the secrets at start,
//! the compiled-code cache is mapped and run, and the audit log is the record of what
//! happened: a tool with a mount over one of them, or a terminal command in a workspace
//! holding one, could approve its own next command, grant itself more, read the
//! secrets, plant native code or rewrite history. [`ToolReach::check`] is the one test
//! every such path passes, at load.

use crate::policy::OperatorPolicy;
use crate::policy::terminal::TerminalConfig;
use std::path::{Component, Path, PathBuf};

/// A host file (or directory) found inside a place tools or terminal commands reach.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{what} {} is inside {place} ({}): a tool or terminal command there could read or \
     rewrite it; move it outside every mount and terminal workspace (or the mount away \
     from it)",
    .path.display(),
    .reached.display()
)]
pub struct StatePathError {
    /// What the file is, e.g. "the approval allowlist".
    pub what: String,
    /// The file, as given.
    pub path: PathBuf,
    /// Where it is reached from, e.g. "mount `workspace`".
    pub place: String,
    /// That place's directory (canonical).
    pub reached: PathBuf,
}

/// A host file the policy names, and what it is (for [`ToolReach::check`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateFile {
    /// What the file is, e.g. "the secrets file".
    pub what: String,
    /// Its path (absolute once the policy file resolved it).
    pub path: PathBuf,
}

/// The directories tools and terminal commands of one policy can reach: every mount
/// (read-only ones too: a tool could read what it must not), and, when any tool may
/// get the terminal, what each terminal's backend says its commands reach on this
/// machine ([`TerminalConfig::reach`]: `local` and `bwrap` working directories,
/// `bwrap` and `docker` workspaces; `docker`'s and `ssh`'s working directories are the
/// far side's). The terminal host fills that in when it reads the backends' options
/// (`hermetic_terminal::attach`), so a policy file's load checks its mounts and the
/// registry built after it checks both.
///
/// A `local` terminal is no sandbox: its commands can write wherever the host's user
/// can, so for it this is the least that holds, not a boundary.
#[derive(Debug, Clone, Default)]
pub struct ToolReach {
    places: Vec<(String, PathBuf)>,
}

impl ToolReach {
    /// What `policy` lets tools and terminal commands reach.
    pub fn of(policy: &OperatorPolicy) -> Self {
        let mut places = Vec::new();
        for (name, mount) in &policy.mounts {
            places.push((format!("mount `{name}`"), resolved(&mount.host_path)));
        }
        let terminal_granted = policy.terminal.grant_bundled
            || policy.defaults.terminal
            || policy.tools.values().any(|t| t.terminal == Some(true));
        if terminal_granted {
            let settings = &policy.terminal;
            let configs = std::iter::once(("the terminal".to_owned(), &settings.default)).chain(
                settings
                    .tenants
                    .iter()
                    .map(|(id, c)| (format!("tenant {id}'s terminal"), c)),
            );
            for (whose, config) in configs {
                terminal_places(&whose, config, &mut places);
            }
        }
        Self { places }
    }

    /// Refuses `path` when it is, or is inside, a place tools or terminal commands
    /// reach. Paths are compared canonical (symlinks resolved; for a file that does
    /// not exist yet, its nearest existing ancestor is).
    ///
    /// # Errors
    /// [`StatePathError`] naming the path, the place and what to do.
    pub fn check(&self, what: &str, path: &Path) -> Result<(), StatePathError> {
        let canonical = resolved(path);
        match self
            .places
            .iter()
            .find(|(_, dir)| canonical.starts_with(dir))
        {
            Some((place, dir)) => Err(StatePathError {
                what: what.to_owned(),
                path: path.to_path_buf(),
                place: place.clone(),
                reached: dir.clone(),
            }),
            None => Ok(()),
        }
    }
}

/// Every approval allowlist file of `policy`'s terminal settings (the default's and
/// each tenant's): host files the registry checks, and the policy file's loader
/// (`hermetic-config`) lists among those it checks at load.
pub fn allowlist_files(policy: &OperatorPolicy) -> impl Iterator<Item = &Path> {
    std::iter::once(&policy.terminal.default)
        .chain(policy.terminal.tenants.values())
        .filter_map(|c| c.approval.allowlist_file.as_deref())
}

fn terminal_places(whose: &str, config: &TerminalConfig, places: &mut Vec<(String, PathBuf)>) {
    for (what, dir) in &config.reach {
        places.push((format!("{whose}'s {what}"), resolved(dir)));
    }
}

/// `path` absolute and canonical as far as it exists: its nearest existing ancestor
/// canonicalized, the rest appended with `.` and `..` folded (what does not exist yet
/// holds no symlink).
fn resolved(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut existing = absolute.as_path();
    let mut rest: Vec<Component<'_>> = Vec::new();
    loop {
        if let Ok(canonical) = existing.canonicalize() {
            let mut out = canonical;
            for part in rest.iter().rev() {
                match part {
                    Component::ParentDir => {
                        out.pop();
                    }
                    Component::CurDir => {}
                    other => out.push(other.as_os_str()),
                }
            }
            return out;
        }
        match (existing.parent(), existing.components().next_back()) {
            (Some(parent), Some(last)) => {
                rest.push(last);
                existing = parent;
            }
            _ => return absolute,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::terminal::TerminalConfig;

    fn policy(workspace: &Path) -> OperatorPolicy {
        OperatorPolicy::with_workspace(workspace.canonicalize().unwrap())
    }

    #[test]
    fn a_file_in_or_under_a_mount_is_refused_with_the_mount_named() {
        let root = tempfile::TempDir::new().unwrap();
        let ws = root.path().join("ws");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        let reach = ToolReach::of(&policy(&ws));
        let err = reach
            .check("the approval allowlist", &ws.join("sub/approvals.json"))
            .unwrap_err();
        assert_eq!(err.place, "mount `workspace`");
        assert_eq!(err.reached, ws.canonicalize().unwrap());
        let text = err.to_string();
        assert!(
            text.starts_with("the approval allowlist ")
                && text.contains("is inside mount `workspace`")
                && text.contains("move it outside every mount and terminal workspace"),
            "{text}"
        );
        // The mount itself, a file that does not exist yet, a `..` that comes back in.
        assert!(reach.check("x", &ws).is_err());
        assert!(reach.check("x", &ws.join("new/dir/file")).is_err());
        assert!(reach.check("x", &ws.join("../ws/a")).is_err());
        // Beside the mount, a name that only starts like it, and a `..` that leaves.
        assert!(reach.check("x", &root.path().join("state.json")).is_ok());
        assert!(reach.check("x", &root.path().join("ws2/a")).is_ok());
        assert!(reach.check("x", &ws.join("sub/../../a")).is_ok());
    }

    #[test]
    fn a_symlink_does_not_hide_a_file_inside_a_mount() {
        let root = tempfile::TempDir::new().unwrap();
        let ws = root.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::os::unix::fs::symlink(&ws, root.path().join("link")).unwrap();
        let reach = ToolReach::of(&policy(&ws));
        assert!(
            reach
                .check("x", &root.path().join("link/audit.jsonl"))
                .is_err()
        );
        // Relative paths are taken from the current directory.
        let cwd = std::env::current_dir().unwrap();
        let reach = ToolReach::of(&policy(&cwd));
        assert!(reach.check("x", Path::new("some/file")).is_err());
    }

    #[test]
    fn terminal_reach_counts_only_when_a_tool_may_get_the_terminal() {
        // What a backend reaches is its own to say (hermetic-terminal fills in
        // `reach`; its tests check each backend's); here: that it is counted, and when.
        let root = tempfile::TempDir::new().unwrap();
        let (ws, box_dir) = (root.path().join("ws"), root.path().join("box"));
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&box_dir).unwrap();
        let mut p = policy(&ws);
        // As a policy file has it: no terminal unless a grant says so.
        p.terminal.grant_bundled = false;
        p.terminal.default.reach = vec![("bwrap workspace".into(), box_dir.clone())];
        let file = box_dir.join("approvals.json");
        assert!(ToolReach::of(&p).check("x", &file).is_ok());
        p.defaults.terminal = true;
        let err = ToolReach::of(&p).check("x", &file).unwrap_err();
        assert_eq!(err.place, "the terminal's bwrap workspace");
        // The embedded defaults give the bundled terminal tools the terminal.
        p.defaults.terminal = false;
        p.terminal.grant_bundled = true;
        assert!(ToolReach::of(&p).check("x", &file).is_err());
        // A tenant's own terminal.
        let tenant = TerminalConfig {
            reach: vec![("working directory".into(), root.path().join("acme"))],
            ..TerminalConfig::default()
        };
        p.terminal.tenants.insert("acme".into(), tenant);
        let err = ToolReach::of(&p)
            .check("x", &root.path().join("acme/x"))
            .unwrap_err();
        assert_eq!(err.place, "tenant acme's terminal's working directory");
    }
}
