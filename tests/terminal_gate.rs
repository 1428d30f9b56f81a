//! No way around the approval gate through a process's stdin (issue 32, item 1), driven
//! through the real bundled `terminal` and `process` components on real backends
//! (local; the reproduced attack on bubblewrap too), with nobody to ask (so a dangerous
//! input is refused, as over MCP with the embedded defaults).
//!
//! Each attack is followed by a harmless command the same process runs after it: once
//! that one has run, anything delivered before it has too, so "the victim survives" is
//! a fact, not a race.
use hermetic::approval::{Answer, Approver, ScriptedApprover};
use hermetic::{CallOptions, OperatorPolicy, Registry, RegistryOptions};
use hermetic_terminal::TerminalConfig;
use hermetic_test_support::backends::{
    eventually, podman_conf, podman_terminal, require, start_sshd,
};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tempfile::TempDir;

/// The bundled tools over `workspace`, the terminal on `backend` in it, embedded
/// approval defaults (manual mode; no approver unless a call brings one).
fn registry(workspace: &Path, backend: &str) -> Registry {
    let mut config = TerminalConfig {
        backend: backend.to_owned(),
        ..TerminalConfig::default()
    };
    config.cwd = Some(workspace.to_path_buf());
    registry_with(workspace, config)
}

/// [`registry`] with the terminal `config` given.
fn registry_with(workspace: &Path, config: TerminalConfig) -> Registry {
    let mut policy = OperatorPolicy::with_workspace(workspace.to_path_buf());
    policy.terminal.default = config;
    let mut options = hermetic_terminal::attach(RegistryOptions::new(policy)).unwrap();
    options.engine = hermetic_test_support::registry::engine_config();
    let registry = Registry::new(options).unwrap();
    assert_eq!(registry.add_bundled(), vec![]);
    registry
}

fn opts(session: &str, approver: Option<Arc<dyn Approver>>) -> CallOptions {
    let mut options = CallOptions::default().with_session(session);
    options.approver = approver;
    options
}

/// One session's calls of the bundled tools.
struct Session<'r> {
    registry: &'r Registry,
    options: CallOptions,
}

impl Session<'_> {
    fn call(&self, tool: &str, args: Value) -> Value {
        let out = self.registry.call(tool, &args.to_string(), &self.options);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
    }

    fn terminal(&self, args: Value) -> Value {
        self.call("terminal", args)
    }

    /// Starts `command` in the background; its process id.
    fn start(&self, command: &str, pty: bool) -> String {
        let r = self.terminal(json!({"command": command, "background": true, "pty": pty}));
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

    fn submit(&self, id: &str, data: &str) -> Value {
        self.process("submit", id, Some(data))
    }

    fn output(&self, id: &str) -> String {
        self.process("log", id, None)["output"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

fn is_refused(out: &Value) -> bool {
    matches!(out["status"].as_str(), Some("pending_approval" | "blocked"))
}

/// A workspace with a `victim` directory (and a file in it).
fn workspace() -> (TempDir, std::path::PathBuf) {
    let ws = TempDir::new().unwrap();
    let root = ws.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("victim")).unwrap();
    std::fs::write(root.join("victim/precious"), "keep me").unwrap();
    (ws, root)
}

/// The attack of the issue, as reproduced over MCP stdio: each piece alone is
/// harmless, whitespace was never judged, and bash reads `rm -rf victim`.
fn the_reproduced_attack_is_refused_on(backend: &str) {
    let (_ws, root) = workspace();
    let registry = registry(&root, backend);
    let s = Session {
        registry: &registry,
        options: opts("attack", None),
    };
    // The direct command is refused, as before.
    let direct = s.terminal(json!({"command": "rm -rf victim"}));
    assert_eq!(direct["status"], "pending_approval", "{direct}");
    let id = s.start("bash", false);
    let r = s.write(&id, "r");
    assert_eq!(r["status"], "held", "a partial line is held: {r}");
    assert_eq!(r["bytes_held"], 1, "{r}");
    let r = s.write(&id, "m -rf victim");
    assert_eq!(r["status"], "held", "{r}");
    let r = s.submit(&id, " ");
    assert_eq!(
        r["status"], "pending_approval",
        "the completed line is judged: {r}"
    );
    assert_eq!(r["command"], "rm -rf victim \n", "what was discarded: {r}");
    assert!(
        r["error"].as_str().unwrap().contains("discarded"),
        "the reply says the input is gone: {r}"
    );
    // Discarded: the next line does not finish it.
    let r = s.submit(&id, "touch after");
    assert_eq!(r["status"], "ok", "{r}");
    eventually(
        "the shell ran the next line",
        Duration::from_secs(20),
        || root.join("after").exists(),
    );
    assert!(root.join("victim/precious").exists(), "the victim survives");
    s.process("kill", &id, None);
}

#[test]
fn a_background_shell_cannot_be_fed_a_command_in_pieces() {
    the_reproduced_attack_is_refused_on("local");
}

#[test]
fn a_background_shell_cannot_be_fed_a_command_in_pieces_in_bubblewrap() {
    assert!(
        Path::new("/usr/bin/bwrap").is_file(),
        "bubblewrap is not installed: apt-get install -y bubblewrap (.ci/run does)"
    );
    the_reproduced_attack_is_refused_on("bwrap");
}

#[test]
fn a_shell_statement_is_judged_whole_across_writes() {
    let (_ws, root) = workspace();
    let registry = registry(&root, "local");
    let s = Session {
        registry: &registry,
        options: opts("loop", None),
    };
    let id = s.start("bash", false);
    // Line by line each piece parses as nothing dangerous, or not at all; the shell
    // runs the loop once `done` arrives, and that is when it is judged.
    for line in ["for d in victim; do", "rm -rf \"$d\""] {
        let r = s.submit(&id, line);
        assert_eq!(r["status"], "held", "{line}: {r}");
    }
    let r = s.submit(&id, "done");
    assert_eq!(r["status"], "pending_approval", "{r}");
    assert_eq!(r["command"], "for d in victim; do\nrm -rf \"$d\"\ndone\n");
    // A continuation line and an open quote are no way around it either.
    let r = s.write(&id, "r\\\n");
    assert_eq!(r["status"], "held", "{r}");
    let r = s.submit(&id, "m -rf victim");
    assert_eq!(r["status"], "pending_approval", "{r}");
    let r = s.submit(&id, "echo 'x");
    assert_eq!(r["status"], "held", "{r}");
    let r = s.submit(&id, "'; rm -rf victim");
    assert_eq!(r["status"], "pending_approval", "{r}");
    // A harmless loop runs, once complete.
    for line in ["for f in a b; do", "echo item-$f"] {
        assert_eq!(s.submit(&id, line)["status"], "held");
    }
    let r = s.submit(&id, "done; touch after");
    assert_eq!(r["status"], "ok", "{r}");
    eventually("the loop ran", Duration::from_secs(20), || {
        root.join("after").exists()
    });
    let out = s.output(&id);
    assert!(out.contains("item-a") && out.contains("item-b"), "{out}");
    assert!(root.join("victim/precious").exists(), "the victim survives");
    s.process("kill", &id, None);
}

#[test]
fn what_is_held_at_close_is_judged_before_eof() {
    let (_ws, root) = workspace();
    let registry = registry(&root, "local");
    let s = Session {
        registry: &registry,
        options: opts("close", None),
    };
    // A shell runs a last line without a newline at EOF.
    let id = s.start("bash", false);
    assert_eq!(
        s.write(&id, "touch before\nrm -rf victim")["status"],
        "held"
    );
    let r = s.process("close", &id, None);
    assert_eq!(r["status"], "pending_approval", "{r}");
    assert_eq!(r["command"], "rm -rf victim");
    assert!(
        r["error"].as_str().unwrap().contains("stdin is closed"),
        "{r}"
    );
    let w = s.process("wait", &id, None);
    assert_eq!(w["status"], "exited", "EOF reached the shell: {w}");
    assert!(root.join("before").exists());
    assert!(root.join("victim/precious").exists(), "the victim survives");
    // A harmless remainder is delivered, then stdin closes.
    let id = s.start("bash", false);
    assert_eq!(s.write(&id, "touch at_close")["status"], "held");
    let r = s.process("close", &id, None);
    assert_eq!(r["status"], "ok", "{r}");
    let w = s.process("wait", &id, None);
    assert_eq!(w["status"], "exited", "{w}");
    assert!(root.join("at_close").exists());
}

#[test]
fn python_reads_python_and_is_judged_as_python() {
    let (_ws, root) = workspace();
    let registry = registry(&root, "local");
    let s = Session {
        registry: &registry,
        options: opts("python", None),
    };
    // python3 reading its program from a pipe runs it at EOF.
    let id = s.start("python3", false);
    let r = s.submit(&id, "import shutil; shutil.rmtree('victim')");
    assert_eq!(r["status"], "pending_approval", "{r}");
    // A name split over writes, or over a continued line, is judged whole.
    assert_eq!(s.write(&id, "__imp")["status"], "held");
    let r = s.submit(&id, "ort__('shutil').rmtree('victim')");
    assert_eq!(r["status"], "pending_approval", "{r}");
    let r = s.submit(&id, "x = __imp\\");
    assert_eq!(
        r["status"], "held",
        "a continued line waits for its end: {r}"
    );
    let r = s.submit(&id, "ort__('os')");
    assert!(is_refused(&r), "{r}");
    let r = s.submit(&id, "print('ran-' + 'ok')");
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(s.process("close", &id, None)["status"], "ok");
    let w = s.process("wait", &id, None);
    assert_eq!(w["status"], "exited", "{w}");
    assert!(w["output"].as_str().unwrap().contains("ran-ok"), "{w}");
    assert!(root.join("victim/precious").exists(), "the victim survives");
}

#[test]
fn a_shell_on_a_pseudo_terminal_is_judged_as_typed() {
    let (_ws, root) = workspace();
    let registry = registry(&root, "local");
    let s = Session {
        registry: &registry,
        options: opts("pty", None),
    };
    let id = s.start("bash --norc --noprofile", true);
    assert_eq!(s.write(&id, "r")["status"], "held");
    let r = s.write(&id, "m -rf victim\r");
    assert_eq!(
        r["status"], "pending_approval",
        "CR is Enter on a terminal: {r}"
    );
    // Line editing and completion are keys too: a tab, ^H, history.
    for typed in ["ls\t-la\r", "rn\u{7f}m -rf victim\r", "!!\r"] {
        let r = s.write(&id, typed);
        assert!(is_refused(&r), "{typed:?}: {r}");
    }
    let r = s.submit(&id, "touch after");
    assert_eq!(r["status"], "ok", "{r}");
    eventually("the terminal's shell ran", Duration::from_secs(20), || {
        root.join("after").exists()
    });
    assert!(root.join("victim/precious").exists(), "the victim survives");
    s.process("kill", &id, None);
}

#[test]
fn a_script_one_call_wrote_is_fresh_when_a_later_call_runs_it() {
    let (_ws, root) = workspace();
    let registry = registry(&root, "local");
    let s = Session {
        registry: &registry,
        options: opts("fresh", None),
    };
    let r = s.terminal(json!({"command": "printf 'rm -rf victim\\n' > x.sh"}));
    assert_eq!(r["exit_code"], 0, "writing a file is harmless: {r}");
    assert!(root.join("x.sh").exists());
    for run in [
        "bash x.sh",
        "sh ./x.sh",
        "chmod +x x.sh && ./x.sh",
        ". x.sh",
    ] {
        let r = s.terminal(json!({"command": run}));
        assert_eq!(r["status"], "pending_approval", "{run}: {r}");
        assert_eq!(r["pattern_key"], "exec.fresh_file", "{run}: {r}");
    }
    // Written through a background shell's input, run by a later call: the same.
    let id = s.start("bash", false);
    let r = s.submit(&id, "printf 'rm -rf victim\\n' > y.sh; touch wrote");
    assert_eq!(r["status"], "ok", "{r}");
    eventually("the shell wrote y.sh", Duration::from_secs(20), || {
        root.join("wrote").exists()
    });
    let r = s.terminal(json!({"command": "sh y.sh"}));
    assert_eq!(r["pattern_key"], "exec.fresh_file", "{r}");
    let r = s.submit(&id, "bash y.sh");
    assert_eq!(r["status"], "pending_approval", "{r}");
    s.process("kill", &id, None);
    assert!(root.join("victim/precious").exists(), "the victim survives");
    // Fresh for the session that wrote it: in another one it is a file like any.
    let r = s.terminal(json!({"command": "printf 'touch ran-elsewhere\\n' > ok.sh"}));
    assert_eq!(r["exit_code"], 0, "{r}");
    let other = Session {
        registry: &registry,
        options: opts("other", None),
    };
    let r = other.terminal(json!({"command": "bash ok.sh"}));
    assert_eq!(r["exit_code"], 0, "{r}");
    assert!(root.join("ran-elsewhere").exists());
}

#[test]
fn a_human_can_still_approve_input_and_a_no_discards_it() {
    let (_ws, root) = workspace();
    let registry = registry(&root, "local");
    let no: Arc<dyn Approver> = Arc::new(ScriptedApprover::new([Answer::Deny]));
    let s = Session {
        registry: &registry,
        options: opts("human", Some(no)),
    };
    let id = s.start("bash", false);
    let r = s.submit(&id, "rm -rf victim");
    assert_eq!(r["status"], "blocked", "{r}");
    let yes: Arc<dyn Approver> = Arc::new(ScriptedApprover::new([Answer::Once]));
    let s = Session {
        registry: &registry,
        options: opts("human", Some(yes)),
    };
    let r = s.submit(&id, "rm -rf victim; touch after");
    assert_eq!(r["status"], "ok", "{r}");
    eventually("the approved line ran", Duration::from_secs(20), || {
        root.join("after").exists()
    });
    assert!(!root.join("victim").exists(), "approved: it ran");
    s.process("kill", &id, None);
}

#[test]
fn ordinary_use_still_works() {
    let (_ws, root) = workspace();
    std::fs::write(root.join("listed-file"), "").unwrap();
    let registry = registry(&root, "local");
    let s = Session {
        registry: &registry,
        options: opts("ordinary", None),
    };
    // A filter's input is data: quotes and words that look like commands included.
    let id = s.start("cat", false);
    let r = s.write(&id, "it's data; rm -rf is only text\n");
    assert_eq!(r["status"], "ok", "{r}");
    let r = s.write(&id, "no newline yet");
    assert_eq!(r["status"], "ok", "data is not held: {r}");
    eventually("cat echoes", Duration::from_secs(20), || {
        s.output(&id).contains("it's data; rm -rf is only text")
    });
    s.process("close", &id, None);
    // A Python REPL.
    let id = s.start("python3 -u -i -q", false);
    let r = s.submit(&id, "print(1+1)");
    assert_eq!(r["status"], "ok", "{r}");
    let r = s.submit(&id, "print(sum(range(5)))");
    assert_eq!(r["status"], "ok", "{r}");
    eventually("python answers", Duration::from_secs(20), || {
        let out = s.output(&id);
        out.contains('2') && out.contains("10")
    });
    s.process("kill", &id, None);
    // A shell listing its directory.
    let id = s.start("bash", false);
    let r = s.submit(&id, "ls");
    assert_eq!(r["status"], "ok", "{r}");
    eventually("ls lists", Duration::from_secs(20), || {
        s.output(&id).contains("listed-file")
    });
    // A here-document, held until its end line, then run.
    for line in ["cat > notes.txt <<'EOF'", "it's fine"] {
        assert_eq!(s.submit(&id, line)["status"], "held", "{line}");
    }
    assert_eq!(s.submit(&id, "EOF")["status"], "ok");
    eventually(
        "the here-document was written",
        Duration::from_secs(20),
        || std::fs::read_to_string(root.join("notes.txt")).is_ok_and(|t| t == "it's fine\n"),
    );
    s.process("kill", &id, None);
}

/// Starts `command`, sends each of `refused` (each must be refused) and then `good`,
/// closes stdin and waits: the process exits having printed `expect`, and the victim
/// survives.
fn judged_in_its_language(command: &str, refused: &[&str], good: &str, expect: &str) {
    let (_ws, root) = workspace();
    let registry = registry(&root, "local");
    let s = Session {
        registry: &registry,
        options: opts("language", None),
    };
    let id = s.start(command, false);
    for line in refused {
        let r = s.submit(&id, line);
        assert!(is_refused(&r), "{command}: {line}: {r}");
    }
    let r = s.submit(&id, good);
    assert_eq!(r["status"], "ok", "{command}: {good}: {r}");
    assert_eq!(s.process("close", &id, None)["status"], "ok");
    let w = s.process("wait", &id, None);
    assert_eq!(w["status"], "exited", "{command}: {w}");
    assert!(
        w["output"].as_str().unwrap().contains(expect),
        "{command}: {w}"
    );
    assert!(
        root.join("victim/precious").exists(),
        "{command}: the victim survives"
    );
}

#[test]
fn node_reads_javascript_and_is_judged_as_javascript() {
    judged_in_its_language(
        "node",
        &[
            "require('child_process').execSync('rm -rf victim')",
            "require('fs').rmSync('victim', {recursive: true})",
            "process.mainModule.require('child_'+'process')",
        ],
        "console.log('node-' + 'ok')",
        "node-ok",
    );
}

#[test]
fn perl_reads_perl_and_is_judged_as_perl() {
    judged_in_its_language(
        "perl",
        &[
            "system('rm -rf victim');",
            "`rm -rf victim`;",
            "unlink glob('victim/*');",
        ],
        "print 'perl-' . \"ok\\n\";",
        "perl-ok",
    );
}

#[test]
fn sqlite3_reads_sql_and_its_dot_commands_are_judged() {
    judged_in_its_language(
        "sqlite3 app.db",
        &[
            ".shell rm -rf victim",
            ".system rm -rf victim",
            "DROP TABLE users;",
            ".output |sh",
        ],
        "SELECT 40 + 2;",
        "42",
    );
}

#[test]
fn sh_s_reads_shell_that_is_not_bash() {
    // dash reads `$'…'` as `$` and a quoted string: what the detector (which parses
    // bash) would see is not what runs, so it is unparseable.
    judged_in_its_language(
        "sh -s",
        &["rm -rf victim", "echo $'a\\' ; rm -rf victim ; echo \\''"],
        "echo sh-ok",
        "sh-ok",
    );
}

#[test]
fn a_dangerous_command_a_human_approved_has_its_input_judged_as_commands() {
    let (_ws, root) = workspace();
    let registry = registry(&root, "local");
    // awk runs every line it reads as a shell command: dangerous, and approved here.
    let once: Arc<dyn Approver> = Arc::new(ScriptedApprover::new([Answer::Once]));
    let s = Session {
        registry: &registry,
        options: opts("approved", Some(once)),
    };
    let id = s.start("awk '{system($0)}'", false);
    let s = Session {
        registry: &registry,
        options: opts("approved", None),
    };
    let r = s.submit(&id, "rm -rf victim");
    assert_eq!(r["status"], "pending_approval", "{r}");
    let r = s.submit(&id, "touch after");
    assert_eq!(r["status"], "ok", "{r}");
    // awk may read its input in blocks: at EOF it has read (and run) all of it.
    assert_eq!(s.process("close", &id, None)["status"], "ok");
    let w = s.process("wait", &id, None);
    assert_eq!(w["status"], "exited", "{w}");
    assert!(
        root.join("after").exists(),
        "awk ran the harmless line: {w}"
    );
    assert!(root.join("victim/precious").exists(), "the victim survives");
}

#[test]
fn xargs_is_no_way_to_hand_a_shell_its_input_as_code() {
    let (_ws, root) = workspace();
    let registry = registry(&root, "local");
    let s = Session {
        registry: &registry,
        options: opts("xargs", None),
    };
    // `'rm -rf victim'` sent to it would be `sh -c 'rm -rf victim'`.
    for command in ["xargs sh -c", "xargs -0 bash -c", "cat | xargs -L1 sh -c"] {
        let r = s.terminal(json!({"command": command, "background": true}));
        assert_eq!(r["status"], "pending_approval", "{command}: {r}");
    }
    // A debugger's, an editor's or expect's commands are not read: each line asks.
    let id = s.start("ed", false);
    let r = s.submit(&id, "!rm -rf victim");
    assert_eq!(r["status"], "pending_approval", "{r}");
    let r = s.submit(&id, "q");
    assert_eq!(r["status"], "pending_approval", "{r}");
    s.process("kill", &id, None);
    assert!(root.join("victim/precious").exists(), "the victim survives");
}

#[test]
fn an_alias_is_no_way_to_rename_a_refused_command() {
    let (_ws, root) = workspace();
    let registry = registry(&root, "local");
    let s = Session {
        registry: &registry,
        options: opts("alias", None),
    };
    // An interactive shell on a terminal expands aliases: `q -rf victim` alone would
    // look like an unknown program.
    let id = s.start("bash --norc --noprofile", true);
    for line in [
        "alias q=rm",
        "shopt -s expand_aliases; alias q=rm",
        "bind '\"q\":\"rm -rf victim\\C-m\"'",
    ] {
        let r = s.submit(&id, line);
        assert_eq!(r["status"], "pending_approval", "{line}: {r}");
    }
    let r = s.submit(&id, "q -rf victim; touch after");
    assert_eq!(r["status"], "ok", "{r}");
    eventually("the shell ran the line", Duration::from_secs(20), || {
        root.join("after").exists()
    });
    assert!(root.join("victim/precious").exists(), "the victim survives");
    s.process("kill", &id, None);
}

#[test]
fn a_command_cannot_write_into_a_background_shell_through_proc() {
    let (_ws, root) = workspace();
    let registry = registry(&root, "local");
    let s = Session {
        registry: &registry,
        options: opts("proc", None),
    };
    let r = s.terminal(json!({"command": "bash", "background": true}));
    let id = r["session_id"].as_str().unwrap().to_owned();
    let pid = r["pid"].as_u64().unwrap();
    // The shell's stdin is a pipe: opened again through /proc, it is the same pipe, and
    // what is written there never passes the stdin gate.
    let inject = |line: &str| format!("echo '{line}' > /proc/{pid}/fd/0");
    let r = s.terminal(json!({"command": inject("rm -rf victim")}));
    assert_eq!(r["status"], "pending_approval", "{r}");
    assert_eq!(r["pattern_key"], "proc.write_into", "{r}");
    // The way is real: approved, a harmless line goes through it.
    let once: Arc<dyn Approver> = Arc::new(ScriptedApprover::new([Answer::Once]));
    let approved = Session {
        registry: &registry,
        options: opts("proc", Some(once)),
    };
    let r = approved.terminal(json!({"command": inject("touch injected")}));
    assert_eq!(r["exit_code"], 0, "{r}");
    eventually(
        "the shell read the injected line",
        Duration::from_secs(20),
        || root.join("injected").exists(),
    );
    assert!(root.join("victim/precious").exists(), "the victim survives");
    s.process("kill", &id, None);
}

#[test]
fn a_shell_reading_a_named_pipe_the_session_made_asks_first() {
    let (_ws, root) = workspace();
    let registry = registry(&root, "local");
    let s = Session {
        registry: &registry,
        options: opts("fifo", None),
    };
    let r = s.terminal(json!({"command": "mkfifo cmds"}));
    assert_eq!(r["exit_code"], 0, "{r}");
    // What a later call wrote into the pipe would reach the shell unjudged.
    for command in ["bash < cmds", "python3 < cmds", "tail -f cmds | sh"] {
        let r = s.terminal(json!({"command": command, "background": true}));
        assert_eq!(r["status"], "pending_approval", "{command}: {r}");
    }
}

// ---- Issue 52, item 1: scripts are judged before they run, and what runs is what
// was judged. The files are written by the `write_file` tool or by the test itself
// (never through the terminal, so nothing makes them fresh to the session): only
// their contents can tell what they do.

/// Writes `content` to `path` in the workspace with the `write_file` tool.
fn write_file(s: &Session<'_>, path: &str, content: &str) {
    let r = s.call("write_file", json!({"path": path, "content": content}));
    assert_eq!(r["bytes_written"], content.len(), "{path}: {r}");
}

/// Makes the workspace file `path` (written by the test) executable.
fn executable(root: &Path, path: &str, content: &[u8]) {
    use std::os::unix::fs::PermissionsExt;
    let file = root.join(path);
    std::fs::write(&file, content).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Asserts `r` is a refusal of `run` for a finding of `rule` in a script: pending
/// approval, the finding first and named with the file it is in, the refused input
/// the command as written.
fn refused_for_script(r: &Value, rule: &str, file: &str, run: &str) {
    assert_eq!(r["status"], "pending_approval", "{run}: {r}");
    assert_eq!(r["pattern_key"], rule, "{run}: {r}");
    assert!(
        r["description"].as_str().unwrap_or_default().contains(file),
        "{run}: the description names {file}: {r}"
    );
    assert_eq!(r["command"], run, "{run}: {r}");
}

/// The issue's attack on one backend: `write_file` then each way of running the file,
/// with nobody to ask. `runs`: the forms the backend's shell runs; each is refused and
/// the victim survives. Then a harmless script runs, with the output its text gives.
fn a_written_script_is_judged_before_it_runs(
    registry: &Registry,
    root: &Path,
    ws_in_backend: &str,
    runs: &[&str],
) {
    let s = Session {
        registry,
        options: opts("scripts", None),
    };
    write_file(&s, "cleanup.sh", "rm -rf victim\n");
    let file = format!("{ws_in_backend}/cleanup.sh");
    for run in runs {
        let r = s.terminal(json!({"command": run}));
        assert_eq!(r["status"], "pending_approval", "{run}: {r}");
        assert!(
            r["description"]
                .as_str()
                .unwrap_or_default()
                .contains(&file),
            "{run}: the refusal names the file: {r}"
        );
        assert_eq!(r["command"], *run, "{run}: {r}");
        assert!(
            root.join("victim/precious").exists(),
            "{run}: the victim survives"
        );
    }
    write_file(&s, "hello.sh", "echo \"hello from $0 $1\"\n");
    let r = s.terminal(json!({"command": "sh hello.sh there"}));
    assert_eq!(r["output"], "hello from hello.sh there", "{r}");
    assert_eq!(r["exit_code"], 0, "{r}");
    // Approved by a human, the dangerous script runs (it is what was judged).
    let once: Arc<dyn Approver> = Arc::new(ScriptedApprover::new([Answer::Once]));
    let approved = Session {
        registry,
        options: opts("scripts", Some(once)),
    };
    let r = approved.terminal(json!({"command": "sh cleanup.sh && echo cleaned"}));
    assert_eq!(r["output"], "cleaned", "{r}");
    assert!(!root.join("victim").exists(), "approved: it ran");
}

const BASH_FORMS: &[&str] = &[
    "sh cleanup.sh",
    "bash cleanup.sh",
    "dash ./cleanup.sh",
    ". ./cleanup.sh",
    "source cleanup.sh",
    "sh < cleanup.sh",
    "bash -s < cleanup.sh",
    "echo x | xargs sh cleanup.sh",
    "sudo -n sh cleanup.sh",
    "for i in 1; do timeout 5 env A=1 sh cleanup.sh; done",
    "cd . && bash cleanup.sh",
];

#[test]
fn a_script_written_with_write_file_is_judged_before_it_runs_locally() {
    let (_ws, root) = workspace();
    let registry = registry(&root, "local");
    a_written_script_is_judged_before_it_runs(&registry, &root, root.to_str().unwrap(), BASH_FORMS);
}

#[test]
fn a_script_written_with_write_file_is_judged_before_it_runs_in_bubblewrap() {
    require("bwrap", "bubblewrap");
    let (_ws, root) = workspace();
    let registry = registry(&root, "bwrap");
    a_written_script_is_judged_before_it_runs(&registry, &root, root.to_str().unwrap(), BASH_FORMS);
}

#[test]
fn a_script_written_with_write_file_is_judged_before_it_runs_under_gvisor() {
    let state = TempDir::new().unwrap();
    let (_ws, root) = workspace();
    let mut config = hermetic_test_support::backends::gvisor_config(state.path());
    config.cwd = Some(root.clone());
    let registry = registry_with(&root, config);
    a_written_script_is_judged_before_it_runs(&registry, &root, root.to_str().unwrap(), BASH_FORMS);
}

/// docker and ssh run commands under `sh`: `sh FILE` is pinned as everywhere; sourcing
/// and `sh < FILE` have no way to be handed the judged text there, so they ask.
const SH_FORMS: &[&str] = &[
    "sh cleanup.sh",
    "sh ./cleanup.sh a b",
    ". ./cleanup.sh",
    "sh < cleanup.sh",
    "echo x | xargs sh cleanup.sh",
];

#[test]
fn a_script_written_with_write_file_is_judged_before_it_runs_in_a_container() {
    require("podman", "podman");
    require("runc", "runc");
    require("/bin/busybox", "busybox-static");
    let conf_dir = TempDir::new().unwrap();
    let conf = podman_conf(conf_dir.path());
    let (_ws, root) = workspace();
    let config = podman_terminal(&conf, &root);
    let registry = registry_with(&root, config);
    a_written_script_is_judged_before_it_runs(&registry, &root, "/workspace", SH_FORMS);
}

#[test]
fn a_script_written_with_write_file_is_judged_before_it_runs_over_ssh() {
    require("ssh", "openssh-client");
    let sshd = start_sshd();
    let (_ws, root) = workspace();
    let registry = registry_with(&root, sshd.terminal_config(&root));
    a_written_script_is_judged_before_it_runs(&registry, &root, root.to_str().unwrap(), SH_FORMS);
}

#[test]
fn scripts_of_every_kind_are_judged_in_their_language() {
    let (_ws, root) = workspace();
    let registry = registry(&root, "local");
    let s = Session {
        registry: &registry,
        options: opts("kinds", None),
    };
    let r#in = |file: &str| format!("{}/{file}", root.display());
    // Python, read as Python.
    write_file(&s, "clean.py", "import shutil\nshutil.rmtree('victim')\n");
    let r = s.terminal(json!({"command": "python3 clean.py"}));
    refused_for_script(
        &r,
        "exec.interpreter_code",
        &r#in("clean.py"),
        "python3 clean.py",
    );
    write_file(&s, "helper.py", "ANSWER = 42\n");
    write_file(
        &s,
        "main.py",
        "import sys, helper\nprint(helper.ANSWER, sys.argv[1:], __file__)\n",
    );
    let r = s.terminal(json!({"command": "python3 main.py a"}));
    assert_eq!(
        r["output"], "42 ['a'] main.py",
        "siblings import as from the file: {r}"
    );
    // A #! line says what reads a file run by its path.
    executable(&root, "run.sh", b"#!/bin/sh\necho \"shebang-ok $0\"\n");
    let r = s.terminal(json!({"command": "./run.sh"}));
    assert_eq!(r["output"], "shebang-ok ./run.sh", "{r}");
    executable(
        &root,
        "evil",
        b"#!/usr/bin/env python3\nimport shutil; shutil.rmtree('victim')\n",
    );
    let r = s.terminal(json!({"command": "./evil"}));
    refused_for_script(&r, "exec.interpreter_code", &r#in("evil"), "./evil");
    let r = s.terminal(json!({"command": "exec ./evil"}));
    assert_eq!(r["status"], "pending_approval", "{r}");
    executable(&root, "odd", b"#!/usr/bin/make -f\nall:\n\trm -rf victim\n");
    let r = s.terminal(json!({"command": "./odd"}));
    refused_for_script(&r, "exec.unjudged_script", &r#in("odd"), "./odd");
    // A script sourcing a dangerous one: judged through it, named.
    write_file(&s, "build.sh", "#!/bin/bash\n. ./lib.sh\necho built\n");
    write_file(&s, "lib.sh", "rm -rf victim\n");
    let r = s.terminal(json!({"command": "bash build.sh"}));
    refused_for_script(&r, "fs.rm_recursive", &r#in("lib.sh"), "bash build.sh");
    write_file(&s, "lib.sh", "echo lib-loaded\n");
    let r = s.terminal(json!({"command": "bash build.sh"}));
    assert_eq!(r["output"], "lib-loaded\nbuilt", "{r}");
    // Binary, too long, missing: nothing the gate could judge, so a human is asked.
    std::fs::write(root.join("bin.sh"), b"echo a\0rm -rf victim\n").unwrap();
    let long = "echo padding\n".repeat(6000);
    std::fs::write(root.join("long.sh"), format!("{long}rm -rf victim\n")).unwrap();
    for (run, file) in [
        ("sh bin.sh", "bin.sh"),
        ("sh long.sh", "long.sh"),
        ("sh missing.sh", "missing.sh"),
    ] {
        let r = s.terminal(json!({"command": run}));
        refused_for_script(&r, "exec.unjudged_script", &r#in(file), run);
    }
    // Named where the judged text cannot replace it: asked, even when harmless.
    write_file(&s, "ok.sh", "echo ok\n");
    let r = s.terminal(json!({"command": "bash -c 'sh ok.sh'"}));
    refused_for_script(
        &r,
        "exec.unjudged_script",
        &r#in("ok.sh"),
        "bash -c 'sh ok.sh'",
    );
    assert!(root.join("victim/precious").exists(), "the victim survives");
}

#[test]
fn a_script_changed_between_the_check_and_the_run_runs_as_judged() {
    let (_ws, root) = workspace();
    let registry = registry(&root, "local");
    let s = Session {
        registry: &registry,
        options: opts("flip", None),
    };
    // Someone else (another tenant's tool, a process outside the session) flips the
    // file between a harmless and a dangerous text while the agent runs it.
    let file = root.join("flip.sh");
    std::fs::write(&file, "echo benign\n").unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let stop = Arc::clone(&stop);
        let file = file.clone();
        std::thread::spawn(move || {
            // Whole files swapped in (rename), so each read sees one text or the
            // other, every few hundred microseconds: many times within the time a
            // command takes from its check to its shell reading the file.
            let texts = ["echo benign\n", "rm -rf victim\n"];
            let next = file.with_extension("next");
            let mut n = 0usize;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::fs::write(&next, texts[n % 2]);
                let _ = std::fs::rename(&next, &file);
                n += 1;
                std::thread::sleep(Duration::from_micros(300));
            }
        })
    };
    let (mut ran, mut refused) = (0, 0);
    for _ in 0..40 {
        let r = s.terminal(json!({"command": "sh flip.sh"}));
        if r["status"] == "pending_approval" {
            refused += 1;
        } else {
            assert_eq!(r["exit_code"], 0, "{r}");
            ran += 1;
        }
        assert!(
            root.join("victim/precious").exists(),
            "the dangerous text never runs: {r}"
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    assert!(
        ran > 0,
        "the harmless text ran ({ran} ran, {refused} refused)"
    );
}

#[test]
fn a_background_shell_sent_a_script_run_judges_the_script() {
    let (_ws, root) = workspace();
    let registry = registry(&root, "local");
    let s = Session {
        registry: &registry,
        options: opts("stdin-scripts", None),
    };
    write_file(&s, "cleanup.sh", "rm -rf victim\n");
    write_file(&s, "hello.sh", "echo \"hello $1\"\n");
    let id = s.start("bash", false);
    for line in ["sh cleanup.sh", ". ./cleanup.sh", "bash < cleanup.sh"] {
        let r = s.submit(&id, line);
        assert_eq!(r["status"], "pending_approval", "{line}: {r}");
    }
    // What the shell is given for a harmless one is the judged text.
    let r = s.submit(&id, "sh hello.sh stdin; touch after");
    assert_eq!(r["status"], "ok", "{r}");
    eventually("the shell ran the line", Duration::from_secs(20), || {
        root.join("after").exists()
    });
    assert!(s.output(&id).contains("hello stdin"), "{}", s.output(&id));
    s.process("kill", &id, None);
    assert!(root.join("victim/precious").exists(), "the victim survives");
}
