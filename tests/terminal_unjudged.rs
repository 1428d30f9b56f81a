//! Forms that ran a workspace file with nobody asked (review r3, finding 8), driven
//! through the real bundled `terminal` tool on real backends (local and bubblewrap),
//! with nobody to ask: each is refused (`pending_approval`) and the victim survives;
//! the same files run as asked for through the forms the gate judges, and a human's
//! "once" still runs a refused one.
//!
//! The files are written by the test (never through the terminal, so nothing makes
//! them fresh to the session): only reading them can tell what they do.
use hermetic::approval::{Answer, Approver, ScriptedApprover};
use hermetic::{CallOptions, OperatorPolicy, Registry, RegistryOptions};
use hermetic_terminal::TerminalConfig;
use hermetic_test_support::backends::require;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use tempfile::TempDir;

/// The bundled tools over `workspace`, the terminal on `backend` in it, embedded
/// approval defaults (manual mode; no approver unless a call brings one).
fn registry(workspace: &Path, backend: &str) -> Registry {
    let mut config = TerminalConfig {
        backend: backend.to_owned(),
        ..TerminalConfig::default()
    };
    config.cwd = Some(workspace.to_path_buf());
    let mut policy = OperatorPolicy::with_workspace(workspace.to_path_buf());
    policy.terminal.default = config;
    let mut options = hermetic_terminal::attach(RegistryOptions::new(policy)).unwrap();
    options.engine = hermetic_test_support::registry::engine_config();
    let registry = Registry::new(options).unwrap();
    assert_eq!(registry.add_bundled(), vec![]);
    registry
}

fn terminal(registry: &Registry, approver: Option<Arc<dyn Approver>>, command: &str) -> Value {
    let mut options = CallOptions::default().with_session("unjudged");
    options.approver = approver;
    let out = registry.call(
        "terminal",
        &json!({"command": command}).to_string(),
        &options,
    );
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

/// A workspace with a `victim` directory (a file in it) and the test's files.
fn workspace(files: &[(&str, &str, bool)]) -> (TempDir, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let ws = TempDir::new().unwrap();
    let root = ws.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("victim")).unwrap();
    std::fs::write(root.join("victim/precious"), "keep me").unwrap();
    for (path, text, executable) in files {
        let file = root.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, text).unwrap();
        if *executable {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    (ws, root)
}

const SHELL_RM: &str = "rm -rf victim\n";
const PYTHON_RM: &str = "import shutil\nshutil.rmtree('victim')\n";

/// Every file the forms below run deletes the victim.
const FILES: &[(&str, &str, bool)] = &[
    ("x.sh", SHELL_RM, false),
    ("x.py", PYTHON_RM, false),
    ("runme", "#!/bin/sh\nrm -rf victim\n", true),
    ("sitecustomize.py", PYTHON_RM, false),
    (".profile", SHELL_RM, false),
    ("x.pm", "package x; system('rm -rf victim'); 1;\n", false),
    (
        "x.js",
        "require('fs').rmSync('victim', {recursive: true});\n",
        false,
    ),
    ("hello.sh", "echo hello from the script\n", false),
];

/// Each way of running a file the gate did not see before; nobody to ask.
const FORMS: &[&str] = &[
    // Descriptors (finding 8: `walk.rs` skipped them).
    "sh 3<x.sh 0<&3",
    "exec 3<x.sh; sh <&3",
    "exec 0<x.sh; sh",
    "python3 3<x.py 0<&3",
    "{ sh; } < x.sh",
    "f() { sh; }; f < x.sh",
    "sh -c sh < x.sh",
    // bash sources an rc file first.
    "bash --rcfile x.sh -i < /dev/null",
    "bash --init-file x.sh -i < /dev/null",
    // Search paths and homes in the workspace.
    "PATH=$PWD:$PATH runme",
    "HOME=$PWD bash -l -c true",
    "PYTHONPATH=. python3 -c 1",
    // Files an interpreter loads by option, or a runner module runs.
    "python3 -m cProfile x.py",
    "python3 -m trace --count x.py",
    "perl -I. -Mx -e 1",
    "node -r ./x.js -e 1",
    // Wrappers the gate did not know.
    "prlimit --nofile=64 sh x.sh",
    "setpriv --reuid=0 sh x.sh",
    "ssh-agent sh x.sh",
    "setarch x86_64 sh x.sh",
    // An interpreter under another name.
    "cp /bin/dash d",
];

fn every_form_asks_on(backend: &str) {
    let (_ws, root) = workspace(FILES);
    let registry = registry(&root, backend);
    for command in FORMS {
        let r = terminal(&registry, None, command);
        assert_eq!(r["status"], "pending_approval", "{backend}: {command}: {r}");
        assert!(
            root.join("victim/precious").exists(),
            "{backend}: {command}: the victim survives"
        );
    }
    // A copy of a shell the session has (made here by the test: as if by a tool the
    // gate could not see) runs a script operand only once a human said so.
    std::fs::copy("/bin/dash", root.join("d")).unwrap();
    let r = terminal(&registry, None, "./d x.sh");
    assert_eq!(r["status"], "pending_approval", "{backend}: ./d x.sh: {r}");
    assert!(root.join("victim/precious").exists(), "{backend}: ./d x.sh");
    // The forms the gate judges still run what they are given.
    for (command, output) in [
        ("sh < hello.sh", "hello from the script"),
        ("prlimit --nofile=64 sh hello.sh", "hello from the script"),
        ("exec 3>log; echo logged >&3; cat log", "logged"),
        (
            "PATH=$PATH:/usr/local/bin NODE_OPTIONS=--max-old-space-size=64 node -e 'console.log(2)'",
            "2",
        ),
    ] {
        let r = terminal(&registry, None, command);
        assert_eq!(r["output"], output, "{backend}: {command}: {r}");
    }
    // A human's "once" runs a refused form.
    let once: Arc<dyn Approver> = Arc::new(ScriptedApprover::new([Answer::Once]));
    let r = terminal(&registry, Some(once), "sh 3<x.sh 0<&3; echo ran");
    assert_eq!(r["output"], "ran", "{backend}: {r}");
    assert!(!root.join("victim").exists(), "{backend}: approved, it ran");
}

#[test]
fn forms_that_ran_a_file_unjudged_ask_locally() {
    every_form_asks_on("local");
}

#[test]
fn forms_that_ran_a_file_unjudged_ask_in_bubblewrap() {
    require("bwrap", "bubblewrap");
    every_form_asks_on("bwrap");
}
