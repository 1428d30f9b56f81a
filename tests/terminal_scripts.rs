//! Scripts a command runs are judged and pinned soundly (review r3 of issue 52,
//! findings 1, 4, 5, 6, 7 and 14), driven through the real bundled `terminal`,
//! `process` and `write_file` components on real backends, with nobody to ask (so what
//! needs approval is refused, as over MCP with the embedded defaults).
//!
//! Each attack ends with a harmless command run after it: once that one has run,
//! anything delivered before it has too, so "the victim survives" is a fact.
use hermetic::approval::{Answer, Approver, ScriptedApprover};
use hermetic::{CallOptions, OperatorPolicy, Registry, RegistryOptions};
use hermetic_terminal::TerminalConfig;
use hermetic_test_support::backends::{
    eventually, podman_conf, podman_terminal, require, start_sshd,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tempfile::TempDir;

/// The bundled tools over `workspace`, the terminal as `config` says.
fn registry_with(workspace: &Path, config: TerminalConfig) -> Registry {
    let mut policy = OperatorPolicy::with_workspace(workspace.to_path_buf());
    policy.terminal.default = config;
    let mut options = hermetic_terminal::attach(RegistryOptions::new(policy)).unwrap();
    options.engine = hermetic_test_support::registry::engine_config();
    let registry = Registry::new(options).unwrap();
    assert_eq!(registry.add_bundled(), vec![]);
    registry
}

/// The bundled tools, the terminal on `backend` (local, bwrap) in `workspace`.
fn registry(workspace: &Path, backend: &str) -> Registry {
    if backend == "bwrap" {
        require("bwrap", "bubblewrap");
    }
    let mut config = TerminalConfig {
        backend: backend.to_owned(),
        ..TerminalConfig::default()
    };
    config.cwd = Some(workspace.to_path_buf());
    registry_with(workspace, config)
}

/// One session's calls of the bundled tools.
struct Session<'r> {
    registry: &'r Registry,
    options: CallOptions,
}

impl<'r> Session<'r> {
    fn new(registry: &'r Registry, name: &str, approver: Option<Arc<dyn Approver>>) -> Self {
        let mut options = CallOptions::default().with_session(name);
        options.approver = approver;
        Self { registry, options }
    }

    fn call(&self, tool: &str, args: Value) -> Value {
        let out = self.registry.call(tool, &args.to_string(), &self.options);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
    }

    fn terminal(&self, command: &str) -> Value {
        self.call("terminal", json!({"command": command}))
    }

    /// Starts `command` in the background; its process id.
    fn start(&self, command: &str, pty: bool) -> String {
        let r = self.call(
            "terminal",
            json!({"command": command, "background": true, "pty": pty}),
        );
        r["session_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{command}: {r}"))
            .to_owned()
    }

    fn process(&self, action: &str, id: &str, data: Option<&str>) -> Value {
        let mut args = json!({"action": action, "session_id": id});
        if let Some(data) = data {
            args["data"] = json!(data);
        }
        self.call("process", args)
    }

    fn write(&self, id: &str, data: &str) -> Value {
        self.process("write", id, Some(data))
    }

    fn write_file(&self, path: &str, content: &str) {
        let r = self.call("write_file", json!({"path": path, "content": content}));
        assert_eq!(r["bytes_written"], content.len(), "{path}: {r}");
    }
}

/// A workspace with a `victim` directory (and a file in it).
fn workspace() -> (TempDir, PathBuf) {
    let ws = TempDir::new().unwrap();
    let root = ws.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("victim")).unwrap();
    std::fs::write(root.join("victim/precious"), "keep me").unwrap();
    (ws, root)
}

/// Makes the workspace file `path` (written by the test) executable.
fn executable(root: &Path, path: &str, content: &str) {
    use std::os::unix::fs::PermissionsExt;
    let file = root.join(path);
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&file, content).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn refused(r: &Value, what: &str) {
    assert_eq!(r["status"], "pending_approval", "{what}: {r}");
}

fn survives(root: &Path, what: &str) {
    assert!(
        root.join("victim/precious").exists(),
        "{what}: the victim survives"
    );
}

// ---- Finding 1: a pinned script typed into a shell on a terminal.

/// The reviewer's reproduction: a tab in `x.sh`, pinned into the line typed at a
/// background `bash -i` on a pty, completed to a file name and closed the quote, so
/// the gate's reading of the next line was the inverse of bash's.
fn a_tab_in_a_script_typed_at_a_terminal_is_not_pinned(registry: &Registry, root: &Path) {
    let s = Session::new(registry, "tab", None);
    s.write_file("x.sh", "echo fo\t");
    s.write_file("echo foo", "hi");
    let id = s.start("bash --norc --noprofile -i", true);
    let r = s.write(&id, "sh x.sh\n");
    refused(&r, "a script with a tab, typed at a terminal");
    assert_eq!(r["pattern_key"], "exec.unjudged_script", "{r}");
    let r = s.write(&id, "echo a'; rm -rf victim #'\n");
    assert_eq!(r["status"], "ok", "harmless as bash reads it too: {r}");
    let r = s.write(&id, "touch after\n");
    assert_eq!(r["status"], "ok", "{r}");
    eventually("the shell ran the lines", Duration::from_secs(20), || {
        root.join("after").exists()
    });
    survives(root, "tab");
    // A script that reads as typed is pinned and runs as judged.
    s.write_file("plain.sh", "echo \"plain $0\" > plain.out\n");
    let r = s.write(&id, "sh plain.sh\n");
    assert_eq!(r["status"], "ok", "{r}");
    eventually("the plain script ran", Duration::from_secs(20), || {
        std::fs::read_to_string(root.join("plain.out")).is_ok_and(|o| o == "plain plain.sh\n")
    });
    s.process("kill", &id, None);
}

#[test]
fn a_tab_in_a_script_typed_at_a_terminal_is_not_pinned_locally() {
    let (_ws, root) = workspace();
    a_tab_in_a_script_typed_at_a_terminal_is_not_pinned(&registry(&root, "local"), &root);
}

/// ssh runs a pty command on a remote terminal (`ssh -tt`); bwrap and docker give
/// none (a `pty` request runs without one there, and a tab is only a tab).
#[test]
fn a_tab_in_a_script_typed_at_a_terminal_is_not_pinned_over_ssh() {
    require("ssh", "openssh-client");
    let sshd = start_sshd();
    let (_ws, root) = workspace();
    let registry = registry_with(&root, sshd.terminal_config(&root));
    a_tab_in_a_script_typed_at_a_terminal_is_not_pinned(&registry, &root);
}

// ---- Finding 4: the #! line's program and argument.

fn a_shebang_runs_nothing_the_gate_did_not_judge(backend: &str) {
    let (_ws, root) = workspace();
    let registry = registry(&root, backend);
    let s = Session::new(&registry, "shebang", None);
    s.write_file("x.sh", "rm -rf victim\n");
    s.write_file("xx.py", "import shutil\nshutil.rmtree('victim')\n");
    executable(&root, "bin/python3", "#!/bin/sh\nrm -rf victim\n");
    let root_s = root.display();
    for (file, text) in [
        ("run", "#!/bin/bash x.sh\necho hi\n".to_owned()),
        (
            "runpy",
            "#!/usr/bin/env -S python3 -m xx\nprint(1)\n".to_owned(),
        ),
        ("runlocal", format!("#!{root_s}/bin/python3\nprint(1)\n")),
    ] {
        executable(&root, file, &text);
        let run = format!("./{file}");
        let r = s.terminal(&run);
        refused(&r, &run);
        assert_eq!(r["pattern_key"], "exec.unjudged_script", "{run}: {r}");
        survives(&root, &run);
    }
    executable(&root, "good", "#!/bin/sh -e\necho \"good $0\"\n");
    let r = s.terminal("./good");
    assert_eq!(r["output"], "good ./good", "{r}");
}

#[test]
fn a_shebang_runs_nothing_the_gate_did_not_judge_locally() {
    a_shebang_runs_nothing_the_gate_did_not_judge("local");
}

#[test]
fn a_shebang_runs_nothing_the_gate_did_not_judge_in_bubblewrap() {
    a_shebang_runs_nothing_the_gate_did_not_judge("bwrap");
}

// ---- Finding 5: what the judged text is handed with cannot be redefined.

fn what_hands_the_text_cannot_be_redefined(backend: &str) {
    let (_ws, root) = workspace();
    let registry = registry(&root, backend);
    let s = Session::new(&registry, "shadow", None);
    s.write_file("ok.sh", "echo ok\n");
    s.write_file("x", "rm -rf victim\n");
    for command in [
        "printf() { cat x; }; . ./ok.sh",
        "printf() { cat x; }; bash < ok.sh",
        "builtin() { cat x; }; . ./ok.sh",
        "shopt -s expand_aliases\nalias printf='cat x #'\n. ./ok.sh",
        "bash() { sh x; }; ./ok.sh",
    ] {
        let r = s.terminal(command);
        refused(&r, command);
        survives(&root, command);
    }
    // Across the lines of a background bash: the definition is refused; approved by
    // a human, the shell's later script runs are not pinned (they ask).
    let id = s.start("bash", false);
    let r = s.write(&id, "printf() { cat x; }\n");
    refused(&r, "a definition sent to a shell");
    let once: Arc<dyn Approver> = Arc::new(ScriptedApprover::new([Answer::Once]));
    let approved = Session::new(&registry, "shadow", Some(once));
    let r = approved.write(&id, "printf() { cat x; }\n");
    assert_eq!(r["status"], "ok", "approved by a human: {r}");
    let r = s.write(&id, ". ./ok.sh\n");
    refused(
        &r,
        "a script run in a shell whose printf a human let be redefined",
    );
    let r = s.write(&id, "touch after\n");
    assert_eq!(r["status"], "ok", "{r}");
    eventually("the shell ran the lines", Duration::from_secs(20), || {
        root.join("after").exists()
    });
    survives(&root, "background");
    s.process("kill", &id, None);
    // Without any of that, sourcing runs the judged text.
    let r = s.terminal(". ./ok.sh");
    assert_eq!(r["output"], "ok", "{r}");
}

#[test]
fn what_hands_the_text_cannot_be_redefined_locally() {
    what_hands_the_text_cannot_be_redefined("local");
}

#[test]
fn what_hands_the_text_cannot_be_redefined_in_bubblewrap() {
    what_hands_the_text_cannot_be_redefined("bwrap");
}

// ---- Findings 6 and 14: the file is the one the kernel opens.

fn the_file_run_is_the_one_the_kernel_opens(backend: &str) {
    let (_ws, root) = workspace();
    let registry = registry(&root, backend);
    let s = Session::new(&registry, "kernel", None);
    // `./a/../../../../usr/bin/x` reads as /usr/bin/x (a system program) but is the
    // workspace's usr/bin/x.
    std::fs::create_dir_all(root.join("s/d1/d2/d3")).unwrap();
    std::os::unix::fs::symlink("s/d1/d2/d3", root.join("a")).unwrap();
    executable(&root, "usr/bin/x", "rm -rf victim\n");
    let r = s.terminal("./a/../../../../usr/bin/x");
    refused(&r, "a program through a link and ..");
    assert_eq!(r["pattern_key"], "fs.rm_recursive", "judged: {r}");
    survives(&root, "..");
    // `sh link/../x.sh` runs the x.sh beside the link's target, as sh would.
    std::fs::create_dir_all(root.join("sub/d")).unwrap();
    std::os::unix::fs::symlink("sub/d", root.join("link")).unwrap();
    s.write_file("x.sh", "echo top\n");
    s.write_file("sub/x.sh", "echo beside-the-target\n");
    let r = s.terminal("sh link/../x.sh");
    assert_eq!(r["output"], "beside-the-target", "{r}");
    // Missing when judged, made by the command itself: asked, not run unjudged.
    executable(&root, "pack/run", "rm -rf victim\n");
    let tar = std::process::Command::new("tar")
        .args(["cf", "a.tar", "-C", "pack", "run"])
        .current_dir(&root)
        .status()
        .unwrap();
    assert!(tar.success());
    let r = s.terminal("tar xf a.tar && ./run");
    refused(&r, "extracted then run");
    assert_eq!(r["pattern_key"], "exec.unjudged_script", "{r}");
    survives(&root, "tar");
    // What a compiler before it builds is a program, as before.
    s.write_file(
        "m.c",
        "#include <stdio.h>\nint main(void){puts(\"built\");return 0;}\n",
    );
    let r = s.terminal("cc -o m m.c && ./m");
    assert_eq!(r["output"], "built", "{r}");
}

#[test]
fn the_file_run_is_the_one_the_kernel_opens_locally() {
    require("cc", "gcc");
    the_file_run_is_the_one_the_kernel_opens("local");
}

#[test]
fn the_file_run_is_the_one_the_kernel_opens_in_bubblewrap() {
    require("cc", "gcc");
    the_file_run_is_the_one_the_kernel_opens("bwrap");
}

// ---- Finding 7: a text beginning with `-` on every shell that runs it.

fn a_text_beginning_with_a_dash_runs_as_judged(registry: &Registry, root: &Path) {
    let s = Session::new(registry, "dash", None);
    // As options, `-e` would leave sh to run the file from disk, changed since.
    s.write_file("m.sh", "--help 2>/dev/null || echo \"minus $0\"\n");
    let r = s.terminal("sh m.sh");
    assert_eq!(r["output"], "minus m.sh", "{r}");
    s.write_file("n.sh", "-e 2>/dev/null; echo \"minus $0 $1\"\n");
    let r = s.terminal("sh ./n.sh a");
    assert_eq!(r["output"], "minus ./n.sh a", "{r}");
    survives(root, "dash");
}

#[test]
fn a_text_beginning_with_a_dash_runs_as_judged_locally() {
    let (_ws, root) = workspace();
    a_text_beginning_with_a_dash_runs_as_judged(&registry(&root, "local"), &root);
}

#[test]
fn a_text_beginning_with_a_dash_runs_as_judged_in_bubblewrap() {
    let (_ws, root) = workspace();
    a_text_beginning_with_a_dash_runs_as_judged(&registry(&root, "bwrap"), &root);
}

#[test]
fn a_text_beginning_with_a_dash_runs_as_judged_in_a_container() {
    require("podman", "podman");
    require("runc", "runc");
    require("/bin/busybox", "busybox-static");
    let conf_dir = TempDir::new().unwrap();
    let conf = podman_conf(conf_dir.path());
    let (_ws, root) = workspace();
    let config = podman_terminal(&conf, &root);
    a_text_beginning_with_a_dash_runs_as_judged(&registry_with(&root, config), &root);
}

#[test]
fn a_text_beginning_with_a_dash_runs_as_judged_over_ssh() {
    require("ssh", "openssh-client");
    let sshd = start_sshd();
    let (_ws, root) = workspace();
    let registry = registry_with(&root, sshd.terminal_config(&root));
    a_text_beginning_with_a_dash_runs_as_judged(&registry, &root);
}
