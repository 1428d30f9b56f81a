//! The files the host keeps that a policy names — the policy file itself, the secrets
//! file, the audit log, each approval allowlist, the key-value store, the tool store —
//! each checked at load to lie outside every place this policy's tools reach
//! ([`ToolReach`]); and the paths no terminal command may name.

use crate::error::PolicyFileError;
use crate::server::ServerPolicy;
use hermetic::{StateFile, ToolReach, allowlist_files};
use hermetic_policy::OperatorPolicy;
use std::path::{Path, PathBuf};

/// The files the host keeps that a policy's sections name (`None`: the section names
/// none).
pub(crate) struct HostFiles<'a> {
    /// `[secrets] file`.
    pub(crate) secrets: Option<&'a Path>,
    /// `[keyvalue] file`.
    pub(crate) keyvalue: Option<&'a Path>,
    /// `[trust] store`.
    pub(crate) store: Option<&'a Path>,
}

/// The host files `policy`, `server` and `files` name (the policy file's own aside:
/// [`policy_file`]), each refused when a tool of `policy` reaches it. `path` (the
/// policy file) names the error.
pub(crate) fn checked_state_files(
    policy: &OperatorPolicy,
    server: &ServerPolicy,
    files: &HostFiles<'_>,
    path: &Path,
) -> Result<Vec<StateFile>, PolicyFileError> {
    let mut state_files = host_files(policy, files.secrets, server);
    if let Some(file) = files.keyvalue {
        state_files.push(StateFile {
            what: "the key-value store".to_owned(),
            path: file.to_path_buf(),
        });
    }
    if let Some(store) = files.store {
        state_files.push(StateFile {
            what: "the tool store".to_owned(),
            path: store.to_path_buf(),
        });
    }
    let reach = ToolReach::of(policy);
    for file in &state_files {
        reach
            .check(&file.what, &file.path)
            .map_err(|source| PolicyFileError::StatePath {
                path: path.to_path_buf(),
                source,
            })?;
    }
    Ok(state_files)
}

/// The policy file at `path` as a host file, refused when a tool of `policy` reaches it.
pub(crate) fn policy_file(
    policy: &OperatorPolicy,
    path: &Path,
) -> Result<StateFile, PolicyFileError> {
    let policy_file = StateFile {
        what: "the policy file".to_owned(),
        path: path.to_path_buf(),
    };
    ToolReach::of(policy)
        .check(&policy_file.what, &policy_file.path)
        .map_err(|source| PolicyFileError::StatePath {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(policy_file)
}

/// What no terminal command may name: the host's files, and `trusted` (what the host
/// trusts at its next start), each absolute.
pub(crate) fn protected_paths(
    state_files: &[StateFile],
    trusted: impl Iterator<Item = PathBuf>,
) -> Vec<PathBuf> {
    state_files
        .iter()
        .map(|f| f.path.clone())
        .chain(trusted)
        .map(|p| std::path::absolute(&p).unwrap_or(p))
        .collect()
}

/// The files the host keeps that `policy` names: the secrets file, the audit log and
/// every distinct approval allowlist.
fn host_files(
    policy: &OperatorPolicy,
    secrets_file: Option<&Path>,
    server: &ServerPolicy,
) -> Vec<StateFile> {
    let file = |what: &str, path: &Path| StateFile {
        what: what.to_owned(),
        path: path.to_path_buf(),
    };
    let mut files = Vec::new();
    if let Some(path) = secrets_file {
        files.push(file("the secrets file", path));
    }
    if let Some(path) = &server.audit_file {
        files.push(file("the audit log", path));
    }
    for path in allowlist_files(policy) {
        if !files.iter().any(|f| f.path == path) {
            files.push(file("the approval allowlist", path));
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use crate::error::PolicyFileError;
    use crate::load::load;
    use std::path::PathBuf;

    /// Issue 39: with the workspace at the policy's own directory, a tenant's
    /// `write_file` could rewrite the approval allowlist (re-read on every check) and
    /// its next dangerous command would run with no human; the policy, secrets and
    /// audit log are as exposed. Each is refused at load, naming the file and the mount.
    #[test]
    fn host_files_inside_a_mount_or_terminal_workspace_are_refused_at_load() {
        let root = tempfile::TempDir::new().unwrap();
        let root = root.path();
        std::fs::create_dir_all(root.join("ws")).unwrap();
        std::fs::create_dir_all(root.join("box")).unwrap();
        std::fs::write(root.join("secrets.toml"), "K = \"v\"\n").unwrap();
        std::fs::write(root.join("ws/secrets.toml"), "K = \"v\"\n").unwrap();
        let refused = |policy: &str, what: &str, place: &str| {
            let file = root.join("policy.toml");
            std::fs::write(&file, policy).unwrap();
            match load(&file, root) {
                Err(PolicyFileError::StatePath { source, .. }) => {
                    assert_eq!((source.what.as_str(), source.place.as_str()), (what, place));
                    let text = source.to_string();
                    assert!(text.contains("move it outside every mount"), "{text}");
                }
                other => panic!("{what} in {place} was accepted: {other:?}"),
            }
        };
        let at_root = "[mounts.workspace]\npath = \".\"\naccess = \"rw\"\n";
        refused(at_root, "the policy file", "mount `workspace`");
        let ws = "[mounts.workspace]\npath = \"ws\"\naccess = \"rw\"\n";
        refused(
            &format!("{ws}[terminal.approval]\nallowlist_file = \"ws/approvals.json\"\n"),
            "the approval allowlist",
            "mount `workspace`",
        );
        refused(
            &format!(
                "{ws}[terminal.tenants.acme.approval]\nallowlist_file = \"ws/acme.json\"\n[tenants.acme]\n"
            ),
            "the approval allowlist",
            "mount `workspace`",
        );
        refused(
            &format!("{ws}[server]\naudit_file = \"ws/audit.jsonl\"\n"),
            "the audit log",
            "mount `workspace`",
        );
        refused(
            &format!("{ws}[secrets]\nfile = \"ws/secrets.toml\"\n"),
            "the secrets file",
            "mount `workspace`",
        );
        // A read-only mount is reach enough: a tool could read the secrets.
        refused(
            "[mounts.data]\npath = \"ws\"\naccess = \"ro\"\n[secrets]\nfile = \"ws/secrets.toml\"\n",
            "the secrets file",
            "mount `data`",
        );
        // A terminal's writable workspace is the terminal host's to say (it reads the
        // backends' options): tests/terminal.rs checks that the registry refuses it.
        // The same files beside the mount load.
        let file = root.join("policy.toml");
        std::fs::write(
            &file,
            format!(
                "{ws}[secrets]\nfile = \"secrets.toml\"\n[server]\naudit_file = \"audit.jsonl\"\n[terminal.approval]\nallowlist_file = \"approvals.json\"\n"
            ),
        )
        .unwrap();
        let loaded = load(&file, root).unwrap();
        let files: Vec<(&str, PathBuf)> = loaded
            .state_files
            .iter()
            .map(|f| (f.what.as_str(), f.path.clone()))
            .collect();
        assert_eq!(
            files,
            [
                ("the policy file", file.clone()),
                ("the secrets file", root.join("secrets.toml")),
                ("the audit log", root.join("audit.jsonl")),
                ("the approval allowlist", root.join("approvals.json")),
            ]
        );
    }

    #[test]
    fn host_files_resolve_against_the_policy_file_s_directory() {
        let root = tempfile::TempDir::new().unwrap();
        let (start, conf) = (root.path().join("start"), root.path().join("conf"));
        std::fs::create_dir_all(start.join("ws")).unwrap();
        std::fs::create_dir_all(&conf).unwrap();
        std::fs::write(conf.join("secrets.toml"), "K = \"v\"\n").unwrap();
        let file = conf.join("policy.toml");
        std::fs::write(
            &file,
            "[mounts.workspace]\npath = \"ws\"\naccess = \"rw\"\n\
             [secrets]\nfile = \"secrets.toml\"\n[server]\naudit_file = \"audit.jsonl\"\n\
             [terminal]\ncwd = \"ws\"\n[terminal.approval]\nallowlist_file = \"approvals.json\"\n",
        )
        .unwrap();
        let loaded = load(&file, &start).unwrap();
        // Where tools work: against the start directory.
        assert_eq!(
            loaded.policy.mounts["workspace"].host_path,
            start.join("ws").canonicalize().unwrap()
        );
        // (the terminal's `cwd` is the backend's to resolve: on this host or the far
        // side's; it gets the start directory to resolve against)
        assert_eq!(
            loaded.policy.terminal.default.cwd,
            Some(PathBuf::from("ws"))
        );
        assert_eq!(loaded.policy.terminal.base_dir, Some(start.clone()));
        // What the host keeps: against the policy file's directory.
        assert_eq!(loaded.secrets.get("K"), Some("v"));
        assert_eq!(loaded.server.audit_file, Some(conf.join("audit.jsonl")));
        assert_eq!(
            loaded.policy.terminal.default.approval.allowlist_file,
            Some(conf.join("approvals.json"))
        );
    }
}
