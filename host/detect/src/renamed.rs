//! Shells, interpreters and wrappers under another name. The gate knows what reads a
//! script, and what a wrapper runs, by the program's name (`python3 x.py`, `env sh
//! x`): a copy or link named otherwise (`ln -s /usr/bin/python3 py`, `cp /bin/dash
//! d`) runs a script the host never reads (`./py x.py` runs an ELF program, as it
//! is). Making one is `exec.hijack`. And a program run from outside the system's
//! directories with a script file as its first operand (`./py x.py`, `bin/d x.sh`)
//! has that file read and asks: it may be such a copy made earlier, or by a tool.

use super::code::{SHELLS, language};
use super::fold::Field;
use super::opts::{self, Spec};
use super::rules::RuleId;
use super::script_run::{ScriptForm, ScriptLang};
use super::walk::{Analyzer, Invocation, unlocated};

/// Programs that copy, link or move a file under a name their last operand gives.
const COPIERS: &[&str] = &["cp", "ln", "install", "mv", "rsync", "link"];

/// Where installed programs live (as the host's script reader has them): a program
/// run from there is the system's.
const SYSTEM_DIRS: &[&str] = &[
    "/usr/", "/bin/", "/sbin/", "/lib/", "/lib32/", "/lib64/", "/libx32/", "/etc/",
];

/// Endings of script files an interpreter runs.
const SCRIPT_ENDINGS: &[&str] = &[
    ".sh", ".bash", ".zsh", ".ksh", ".dash", ".py", ".pyw", ".pyc", ".pl", ".pm", ".rb", ".php",
    ".js", ".mjs", ".cjs", ".ts", ".lua", ".tcl", ".r", ".R", ".awk",
];

/// True when the program called `name` is read by the gate for what it is: a shell,
/// an interpreter, a wrapper or carrier (`env`, `xargs`, `find`), a multi-call binary.
fn is_read_by_name(name: &str) -> bool {
    SHELLS.contains(&name)
        || language(name).is_some()
        || super::wrappers::wrapper(name).is_some()
        || matches!(name, "busybox" | "toybox")
}

fn base_name(path: &str) -> &str {
    let path = path.trim_end_matches('/');
    path.rsplit('/').next().unwrap_or(path)
}

impl Analyzer<'_> {
    /// `cp`, `ln`, `install`, `mv`, `rsync` of a program the gate reads by name (a
    /// shell, an interpreter, a wrapper) to a name it does not: `exec.hijack`.
    pub(crate) fn check_renamed_interpreter(
        &mut self,
        name: &str,
        args: &[Field],
        inv: &Invocation<'_>,
    ) {
        if !COPIERS.contains(&name) {
            return;
        }
        const SPEC: Spec = Spec {
            short_values: "tSmogZ",
            longs: &["target-directory=", "suffix=", "mode=", "owner=", "group="],
            stop_at_operand: false,
        };
        let o = opts::parse(args, &SPEC);
        let Some((dest, sources)) = o.operands.split_last() else {
            return;
        };
        // Into a directory the names stay (`cp /bin/sh bin/`, several sources, `-t`).
        let into_dir = dest.text.ends_with('/')
            || dest.text == "."
            || sources.len() > 1
            || o.has('t', "target-directory");
        let renames = sources.iter().any(|s| {
            let kept = base_name(&s.text);
            is_read_by_name(kept) && !(into_dir || is_read_by_name(base_name(&dest.text)))
        });
        if renames {
            self.hit(RuleId::Hijack, inv.rendered);
        }
    }

    /// A program run by its path (`path`, called `name`) from outside the system's
    /// directories, whose first operand is a script file: that file may be what runs
    /// (the program a renamed interpreter), where the command cannot be handed the
    /// judged text, so the host reads it and asks.
    pub(crate) fn check_own_program_script(
        &mut self,
        path: &str,
        name: &str,
        args: &[Field],
        inv: &Invocation<'_>,
    ) {
        if !path.contains('/')
            || SYSTEM_DIRS.iter().any(|d| path.starts_with(d))
            || is_read_by_name(name)
            // npm's links to its packages' commands.
            || path.contains("node_modules/.bin/")
        {
            return;
        }
        let Some(first) = args.iter().find(|a| !a.text.starts_with('-')) else {
            return;
        };
        if first.dynamic || !SCRIPT_ENDINGS.iter().any(|e| first.text.ends_with(e)) {
            return;
        }
        self.check_script(first, inv);
        self.note_script(
            &unlocated(first),
            ScriptLang::Shebang,
            ScriptForm::Operand,
            false,
        );
    }
}
