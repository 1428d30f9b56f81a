//! Review r3, finding 3, end to end on the real `local` backend (the gate is the only
//! wall there): the host's state — here an allowlist file beside the workspace, as
//! `~/.config/hermetic/approvals.json` is beside `~/proj` — cannot be reached through
//! `/proc/self/cwd/..`, a relative `ln -s` target, or a symlink planted earlier (by
//! the test, as an archive would, or by `tar x`). Each refused command is followed by
//! a check that the file is unchanged and nothing it would have made exists.
use hermetic::{CallOptions, OperatorPolicy, Registry, RegistryOptions};
use hermetic_terminal::TerminalConfig;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// The allowlist's contents, which no command may change.
const ALLOWLIST: &str = "{\"version\": 1, \"rules\": []}\n";

/// A home with the host's allowlist in `.config/hermetic`, the workspace `proj` in it,
/// and the bundled tools with the terminal on `local` there (the allowlist protected,
/// as the host protects its files).
struct Home {
    _dir: TempDir,
    root: PathBuf,
    registry: Registry,
}

impl Home {
    fn new() -> Self {
        let dir = TempDir::new().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".config/hermetic")).unwrap();
        std::fs::write(Self::allowlist_in(&root), ALLOWLIST).unwrap();
        let ws = root.join("proj");
        std::fs::create_dir_all(ws.join("d")).unwrap();
        std::fs::write(ws.join("notes.txt"), "notes\n").unwrap();
        let mut config = TerminalConfig {
            backend: "local".to_owned(),
            ..TerminalConfig::default()
        };
        config.cwd = Some(ws.clone());
        let mut policy = OperatorPolicy::with_workspace(ws);
        policy.terminal.default = config;
        policy.terminal.protected = vec![Self::allowlist_in(&root)];
        let mut options = hermetic_terminal::attach(RegistryOptions::new(policy)).unwrap();
        options.engine = hermetic_test_support::registry::engine_config();
        let registry = Registry::new(options).unwrap();
        assert_eq!(registry.add_bundled(), vec![]);
        Self {
            _dir: dir,
            root,
            registry,
        }
    }

    fn allowlist_in(root: &Path) -> PathBuf {
        root.join(".config/hermetic/approvals.json")
    }

    fn ws(&self) -> PathBuf {
        self.root.join("proj")
    }

    /// `terminal` with `command`, nobody to ask.
    fn terminal(&self, command: &str) -> Value {
        let options = CallOptions::default().with_session("host-state");
        let args = json!({ "command": command }).to_string();
        let out = self.registry.call("terminal", &args, &options);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
    }

    /// Runs `command` and checks it was blocked as host state, and the allowlist is as
    /// it was.
    fn assert_blocked(&self, command: &str) {
        let result = self.terminal(command);
        assert_eq!(result["status"], "blocked", "{command}: {result}");
        assert!(
            result["error"]
                .as_str()
                .unwrap_or_default()
                .contains("self.host_state"),
            "{command}: {result}"
        );
        assert_eq!(
            std::fs::read_to_string(Self::allowlist_in(&self.root)).unwrap(),
            ALLOWLIST,
            "{command} changed the allowlist"
        );
    }
}

#[test]
fn the_reviewer_s_reproductions_are_blocked_on_local() {
    let home = Home::new();
    for command in [
        "cd /proc/self/cwd/../.config/hermetic && echo x > approvals.json",
        "cat /proc/self/cwd/../.config/hermetic/approvals.json",
        "ln -s .config ../c && echo x > ../c/hermetic/approvals.json",
        "mkdir -p e; ln -s ../../.config e/c",
        "ln -s /proc/self/cwd/.. up",
    ] {
        home.assert_blocked(command);
    }
    assert!(!home.root.join("c").exists());
    assert!(!home.ws().join("e").exists());
    assert!(std::fs::symlink_metadata(home.ws().join("up")).is_err());
}

/// Symlinks already in the workspace (an archive's, an earlier command's): the words
/// are read where the kernel would open them, at judge time. Fails without the file
/// system view (checked: each command ran, or would have).
#[test]
fn symlinks_planted_earlier_do_not_reach_host_state_on_local() {
    let home = Home::new();
    let ws = home.ws();
    std::os::unix::fs::symlink("../../.config", ws.join("d/c")).unwrap();
    std::os::unix::fs::symlink("/proc/self/cwd/..", ws.join("up")).unwrap();
    std::os::unix::fs::symlink(Home::allowlist_in(&home.root), ws.join("list.json")).unwrap();
    for command in [
        "echo x > d/c/hermetic/approvals.json",
        "cat d/c/hermetic/approvals.json",
        "cd d/c/hermetic && cp /dev/null approvals.json",
        "echo x > up/.config/hermetic/approvals.json",
        "cp /dev/null list.json",
        "sed -i s/rules/x/ list.json",
    ] {
        home.assert_blocked(command);
    }
    // An archive's symlink, extracted by one command, is there for the next.
    let src = home.root.join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::os::unix::fs::symlink("../.config", src.join("cfg")).unwrap();
    let made = std::process::Command::new("tar")
        .arg("cf")
        .arg(ws.join("links.tar"))
        .arg("-C")
        .arg(&src)
        .arg("cfg")
        .status()
        .unwrap();
    assert!(made.success());
    let extracted = home.terminal("tar xf links.tar");
    assert_eq!(extracted["exit_code"], 0, "{extracted}");
    home.assert_blocked("echo x > cfg/hermetic/approvals.json");
    // The twins: links to what is not the host's, and plain files, work.
    let fine = home.terminal("ln -s notes.txt latest && cat latest d/../notes.txt");
    assert_eq!(fine["exit_code"], 0, "{fine}");
    assert_eq!(fine["output"], "notes\nnotes", "{fine}");
}
