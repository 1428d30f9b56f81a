//! Scripts a command runs (`sh x.sh`, `. ./env.sh`, `sh < x.sh`, `./x`, `python3
//! x.py`): read as the command will see them, judged with it, and pinned.
//!
//! The detector reports every script file a command (or a line written to a
//! background shell) runs ([`Judged::scripts`]). For each, before anything runs:
//!
//! - it is **read as the command will see it**: inside the tenant's directory through
//!   the directory the host opened, without following a symlink out of it; elsewhere
//!   on `local` as this host has it, and on every other backend through the backend
//!   itself ([`TerminalBackend::read_file`](crate::TerminalBackend::read_file): bwrap's
//!   view, the container's, the remote host's). At most [`MAX_SCRIPT_BYTES`];
//! - it is **judged** in its language ([`Detector::judge_script`]): a shell script as
//!   a command line, other languages by the capabilities their code names; the
//!   scripts it runs in turn likewise, [`MAX_DEPTH`] deep;
//! - it is **pinned**: the command the backend runs names the judged text instead of
//!   the file — `sh x.sh` becomes `sh -c '<judged text>' x.sh` (`$0` stays `x.sh`),
//!   `python3 x.py` a small bootstrap that runs the judged text as `__main__` with
//!   `__file__`, `sys.argv` and `sys.path[0]` as for the file, `./x` the interpreter
//!   of its `#!` line given the text; where bash runs the command, `. x.sh`,
//!   `sh < x.sh` and other interpreters read `<(printf %s '<judged text>')`. The text
//!   travels in the command, on every backend, so a file changed after the check (a
//!   concurrent writer) changes nothing. How the text is handed over is
//!   `handing.rs`.
//!
//! The file is the one the kernel opens for the word as written, from the directory
//! the command is in: `..` comes after the symlinks before it (`link/../x` is the `x`
//! beside the link's target, not beside the link).
//!
//! Whatever cannot be read (missing, not a regular file, binary, too long), judged (an
//! interpreter the detector does not read, a `#!` program outside the system's
//! directories or given a file, nested too deep) or pinned (named inside `bash -c
//! '…'` or a substitution, after `--`, by a glob, in a form the backend's `sh` lacks,
//! an ES module, more text than a command carries, text an interactive shell would
//! read as keys, an input that redefines what the text is handed with) is
//! [`RuleId::UnjudgedScript`]: a human is asked, the file and the reason named. A
//! program run by its path (an ELF binary, anything in the system directories, a
//! file without an execute bit, one a compiler earlier in the same command writes,
//! such as `cc -o m m.c && ./m`) is a program, not a script: it runs as before,
//! unjudged.

mod handing;
mod reading;

use crate::backend::{FileRead, Job, OpenedDir};
use crate::{TenantTerminal, TerminalCall};
use hermetic::TerminalCallError;
use hermetic_approval::SessionKey;
use hermetic_detect::{
    Detector, Frame, Hit, Interpreter, Judged, Reader, RuleId, ScriptForm, ScriptLang, ScriptRun,
    Tier, interpreter_of,
};
use reading::{Escapes, read_host};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Longest script file judged: the detector's input cap (a longer one is not read
/// whole, so it asks).
pub(crate) const MAX_SCRIPT_BYTES: usize = hermetic_detect::limits::MAX_INPUT_BYTES;
/// Deepest chain of scripts run by scripts that is judged (`build.sh` sourcing
/// `lib.sh` sourcing `env.sh`); a deeper one asks.
pub(crate) const MAX_DEPTH: usize = 3;
/// Most script text read for one input, all files together: each byte is judged and
/// carried in the command.
const MAX_READ_TOTAL: usize = 4 * MAX_SCRIPT_BYTES;
/// Most files read for one input, all depths together: on `docker` and `ssh` each is a
/// round trip, and scripts that each run 16 empty scripts, 3 deep, would cost no text
/// but thousands of them.
const MAX_FILES_READ: usize = 32;
/// Longest command once its scripts are pinned in it. The whole job travels as one
/// argument (`bash -c`, `sh -c "$1"` over ssh or docker), and Linux caps one argument
/// at 128 KiB; the rest is room for the job's own wrapping.
pub(crate) const MAX_PINNED_BYTES: usize = 112 * 1024;
/// Most bytes of one script shown in an approval prompt.
const SHOWN_BYTES: usize = 2048;
/// Where installed programs live: run by their path, they are programs, not scripts
/// a session wrote (as programs found on PATH are).
const SYSTEM_DIRS: &[&str] = &[
    "/usr/", "/bin/", "/sbin/", "/lib/", "/lib32/", "/lib64/", "/libx32/", "/etc/",
];
/// File systems whose files are not scripts on disk (`/proc/self/fd/N` is one of the
/// host's own descriptors).
const SPECIAL_DIRS: &[&str] = &["/proc/", "/dev/", "/sys/"];

/// The shell that reads a text: what it can be handed a script's text with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Runner {
    /// It is bash (process substitution `<(…)` is there).
    pub bash: bool,
    /// An interactive shell reads the text as typed: `!` and `^` recall history.
    typed: bool,
    /// ... at a terminal, where control characters (a tab) edit the line.
    pty: bool,
    /// The shell ran input a human approved though dangerous: what its functions and
    /// aliases are is not known, so no text is handed to it through them.
    unsure: bool,
}

impl Runner {
    /// The shell a command line runs in (bash or the backend's `sh`).
    pub(crate) fn command(bash: bool) -> Self {
        Self {
            bash,
            typed: false,
            pty: false,
            unsure: false,
        }
    }

    /// The shell among a process's input `readers` (`sh` when none is bash), typed at
    /// a terminal when `pty`. A process whose input is also judged as an unknown
    /// program's (after an approved dangerous piece) is unsure.
    pub(crate) fn of(readers: &[Reader], pty: bool) -> Self {
        Self {
            bash: readers
                .iter()
                .any(|r| matches!(r, Reader::Shell { bash: true, .. })),
            typed: pty
                || readers.iter().any(|r| {
                    matches!(
                        r,
                        Reader::Shell {
                            interactive: true,
                            ..
                        }
                    )
                }),
            pty,
            unsure: readers.contains(&Reader::Unknown),
        }
    }

    /// The shell that reads the scripts a script runs: `bash` for a shell script's
    /// own, this one for a sourced one; never typed (the shell reads them from a
    /// file, not from its terminal).
    fn inner(self, bash: Option<bool>) -> Self {
        Self {
            bash: bash.unwrap_or(self.bash),
            typed: false,
            pty: false,
            unsure: self.unsure,
        }
    }
}

/// A script file that was read, for the prompt and the refusal.
#[derive(Debug, Clone)]
pub(crate) struct Note {
    path: String,
    /// What was judged, as shown (the first [`SHOWN_BYTES`]).
    shown: String,
    /// Its length.
    len: usize,
    /// The rules its text (or reading it) matched.
    rules: Vec<RuleId>,
}

/// What the scripts of an input added.
#[derive(Debug, Default)]
pub(crate) struct Found {
    hits: Vec<Hit>,
    /// Which file each finding of `hits` is in.
    origins: Vec<(RuleId, String)>,
    /// Why each script that was not judged or pinned was not (`FILE: why`).
    unjudged: Vec<String>,
    commands: Vec<String>,
    /// Files the scripts write.
    pub(crate) wrote: Vec<String>,
    /// What reads the command's standard input inside the scripts (`bash`, `python3`
    /// a script starts): what a background process is sent is judged for them too.
    readers: Vec<hermetic_detect::Reader>,
    notes: Vec<Note>,
}

/// Reads, judges and pins the scripts of one input.
pub(crate) struct Pinner<'a> {
    detector: &'a Detector,
    read: &'a mut dyn FnMut(&str) -> FileRead,
    /// What the session and the input wrote: fresh to the scripts' judgement.
    fresh: Vec<String>,
    /// What the scripts read so far write: a later script run naming one runs what
    /// is not written yet.
    written: Vec<String>,
    budget: usize,
    /// Files that may still be read.
    reads: usize,
    found: Found,
}

impl<'a> Pinner<'a> {
    /// A pinner reading files with `read`; `fresh`: what the session and the input
    /// wrote.
    pub(crate) fn new(
        detector: &'a Detector,
        read: &'a mut dyn FnMut(&str) -> FileRead,
        fresh: Vec<String>,
    ) -> Self {
        Self {
            detector,
            read,
            fresh,
            written: Vec::new(),
            budget: MAX_READ_TOTAL,
            reads: MAX_FILES_READ,
            found: Found::default(),
        }
    }

    /// What the scripts read so far added.
    pub(crate) fn into_found(self) -> Found {
        self.found
    }

    /// `text` (run by `runner`) with each of its script `runs` read, judged and
    /// pinned where it is named; what cannot be is left as written, and a finding.
    pub(crate) fn pin(
        &mut self,
        text: &str,
        runs: &[ScriptRun],
        runner: Runner,
        depth: usize,
    ) -> String {
        let mut edits: Vec<(Range<usize>, String)> = Vec::new();
        for run in runs {
            if let Some(edit) = self.script(text, run, runner, depth) {
                edits.push(edit);
            }
        }
        edits.sort_by_key(|(span, _)| std::cmp::Reverse(span.start));
        // Each word is one run; two edits of one word (two readings of it) cannot
        // both be made.
        let overlapping = edits.windows(2).any(|w| w[1].0.end > w[0].0.start);
        if overlapping {
            self.unjudged("(the command)", "it names one script in two ways");
            return text.to_owned();
        }
        let mut out = text.to_owned();
        for (span, replacement) in edits {
            out.replace_range(span, &replacement);
        }
        out
    }

    fn unjudged(&mut self, path: &str, why: &str) {
        let reason = format!("{path}: {why}");
        self.found.unjudged.push(reason.clone());
        self.finding(path, RuleId::UnjudgedScript, reason);
    }

    /// A finding of `rule` in the script at `path`.
    fn finding(&mut self, path: &str, rule: RuleId, command: String) {
        self.found.hits.push(Hit {
            rule,
            tier: rule.tier(),
            description: rule.description(),
            command,
        });
        if !self
            .found
            .origins
            .iter()
            .any(|(r, p)| *r == rule && p == path)
        {
            self.found.origins.push((rule, path.to_owned()));
        }
    }

    /// One run: the edit that pins it, if it is a script that can be.
    fn script(
        &mut self,
        text: &str,
        run: &ScriptRun,
        runner: Runner,
        depth: usize,
    ) -> Option<(Range<usize>, String)> {
        // The file as the kernel opens it: the word from the directory, `..` after
        // the symlinks before it. `run.path` (`..` removed as text) is where the
        // session's fresh files are looked up; it is the file when no `..` is in
        // the word.
        let up = run.word.split('/').any(|c| c == "..");
        let opened = as_opened(&run.cwd, &run.word);
        let path = if up {
            opened.as_str()
        } else {
            run.path.as_str()
        };
        if run.form == ScriptForm::Path && !up && SYSTEM_DIRS.iter().any(|d| path.starts_with(d)) {
            return None;
        }
        if self.written.iter().any(|w| covers(w, &run.path)) {
            self.finding(
                path,
                RuleId::FreshFile,
                format!("{path}: written by a script the same command runs first"),
            );
            return None;
        }
        if !run.path.starts_with('/') || !opened.starts_with('/') {
            self.unjudged(path, "where it is is only known when the command runs");
            return None;
        }
        if runner.unsure {
            self.unjudged(
                path,
                "the shell it is sent to ran input a human approved though dangerous, which may have redefined what the judged text is handed with; it runs as written once approved",
            );
            return None;
        }
        if [run.path.as_str(), opened.as_str()]
            .iter()
            .any(|p| SPECIAL_DIRS.iter().any(|d| p.starts_with(d)))
        {
            self.unjudged(path, "it is a special file, not a script on disk");
            return None;
        }
        if self.budget == 0 || self.reads == 0 {
            self.unjudged(
                path,
                "the command runs more scripts than the gate reads at once",
            );
            return None;
        }
        self.reads -= 1;
        let (bytes, executable) = match (self.read)(&opened) {
            // Not there to run by its path yet: a program a compiler earlier in the
            // command builds (`cc -o m m.c && ./m`), run as it is then.
            FileRead::Missing if run.form == ScriptForm::Path && run.built => return None,
            FileRead::Missing if run.form == ScriptForm::Path => {
                self.unjudged(
                    path,
                    "it does not exist when the command is judged, and no compiler before it in the command writes it (cc -o FILE): whatever is there when it runs would run unjudged",
                );
                return None;
            }
            FileRead::Missing => {
                self.unjudged(path, "it does not exist, so there is nothing to judge");
                return None;
            }
            FileRead::Unreadable(why) => {
                self.unjudged(path, &why);
                return None;
            }
            FileRead::Read { bytes, executable } => (bytes, executable),
        };
        // Run by its path, a binary program or a file that cannot be executed (it
        // fails as it did) is not a script.
        if run.form == ScriptForm::Path && (bytes.starts_with(b"\x7fELF") || !executable) {
            return None;
        }
        if bytes.len() > MAX_SCRIPT_BYTES {
            self.unjudged(path, "it is longer than 64 KiB");
            return None;
        }
        let code = match String::from_utf8(bytes) {
            Ok(code) if !code.contains('\0') => code,
            _ => {
                self.unjudged(path, "it is binary (not UTF-8 text)");
                return None;
            }
        };
        if code.len() > self.budget {
            self.budget = 0;
            self.unjudged(
                path,
                "the command runs more script text than the gate reads at once",
            );
            return None;
        }
        self.budget -= code.len();
        let (lang, interpreter) = match run.lang {
            ScriptLang::Shebang => match interpreter_of(&code) {
                Interpreter::Shebang {
                    lang: Some(lang),
                    program,
                    arg,
                } => {
                    if let Some(why) = handing::shebang_refusal(&program, arg.as_deref(), lang) {
                        let first = self.found.hits.len();
                        self.unjudged(path, &why);
                        self.note(path, &code, first);
                        return None;
                    }
                    (lang, Some((program, arg)))
                }
                Interpreter::Shebang { program, .. } => {
                    let first = self.found.hits.len();
                    self.unjudged(
                        path,
                        &format!("its #! line runs {program}, which the gate cannot judge"),
                    );
                    self.note(path, &code, first);
                    return None;
                }
                Interpreter::Shell => (ScriptLang::Shell { bash: runner.bash }, None),
            },
            lang => (lang, None),
        };
        let first = self.found.hits.len();
        let judged = self.detector.judge_script(
            &code,
            lang,
            &Frame {
                fresh: &self.fresh,
                cwd: &run.cwd,
            },
        );
        for h in judged.detection.hits {
            self.finding(path, h.rule, format!("{path}: {}", h.command));
        }
        self.found.commands.extend(judged.detection.commands);
        // A script fed on stdin reads no process input; the others pass theirs on.
        if run.form != ScriptForm::Stdin {
            self.found.readers.extend(judged.readers);
        }
        self.fresh.extend(judged.wrote.iter().cloned());
        self.written.extend(judged.wrote.iter().cloned());
        self.found.wrote.extend(judged.wrote);
        let pinned = if judged.scripts.is_empty() {
            code.clone()
        } else if depth >= MAX_DEPTH {
            self.unjudged(path, "it runs scripts nested more than 3 deep");
            code.clone()
        } else {
            let inner = match (run.form, lang) {
                // Sourced: read by the shell that runs the command.
                (ScriptForm::Source, _) => runner.inner(None),
                (_, ScriptLang::Shell { bash }) => runner.inner(Some(bash)),
                _ => runner.inner(None),
            };
            self.pin(&code, &judged.scripts, inner, depth + 1)
        };
        let Some(span) = run.span.clone() else {
            self.unjudged(
                path,
                "it is named where the command cannot be handed the judged text (inside bash -c '…' or a substitution, after --, or by a glob)",
            );
            self.note(path, &code, first);
            return None;
        };
        let word = text.get(span.clone()).unwrap_or_default();
        let edit = handing::replacement(
            run.form,
            lang,
            interpreter,
            runner.bash,
            word,
            &pinned,
            path,
        )
        .and_then(|edit| {
            // Typed into an interactive shell, the text must read as written: a
            // tab in it would complete (and close a quote early), `!` recall
            // history.
            let keys = runner.typed
                && ((runner.pty && edit.contains('\r'))
                    || self.detector.typed_text_rule(&edit, runner.pty).is_some());
            if keys {
                Err("it is typed into an interactive shell, which would read a tab, control character, non-ASCII byte, CR, ! or ^ in its text as keys or history, not as the text judged; it runs as written once approved".to_owned())
            } else {
                Ok(edit)
            }
        });
        self.note(path, &code, first);
        match edit {
            Ok(edit) => Some((span, edit)),
            Err(why) => {
                self.unjudged(path, &why);
                None
            }
        }
    }

    /// Notes the script at `path` (text `code`), whose findings are those from
    /// `first` on.
    fn note(&mut self, path: &str, code: &str, first: usize) {
        let mut rules: Vec<RuleId> = Vec::new();
        for h in &self.found.hits[first..] {
            if !rules.contains(&h.rule) {
                rules.push(h.rule);
            }
        }
        let mut end = code.len().min(SHOWN_BYTES);
        while !code.is_char_boundary(end) {
            end -= 1;
        }
        self.found.notes.push(Note {
            path: path.to_owned(),
            shown: code[..end].to_owned(),
            len: code.len(),
            rules,
        });
    }
}

/// The path the kernel opens for `word` in directory `cwd`: `word` from `cwd` unless
/// absolute, without its `.` and empty components (no-ops wherever they stand) and
/// with its `..` left for the kernel.
fn as_opened(cwd: &str, word: &str) -> String {
    let mut out = if word.starts_with('/') {
        String::new()
    } else {
        cwd.trim_end_matches('/').to_owned()
    };
    for c in word.split('/').filter(|c| !c.is_empty() && *c != ".") {
        out.push('/');
        out.push_str(c);
    }
    out
}

/// True when the fresh-file entry `entry` (a path, `DIR/*` or `*`) covers `path`.
fn covers(entry: &str, path: &str) -> bool {
    entry == path
        || entry == "*"
        || entry
            .strip_suffix('*')
            .is_some_and(|dir| dir.ends_with('/') && path.starts_with(dir))
}

/// `text` (judged as `judged`, read by `runner`) with its scripts pinned, read with
/// `read` (`fresh`: what the session and the input wrote), and what they added. The
/// input runs as written, its scripts unpinned and a human asked, when the pinned
/// text is more than a command carries; when the input or a script of it defines a
/// function or alias named after what the text is handed with
/// ([`RuleId::ShadowCommand`]: the judged text would go to it); or when an
/// interactive shell would not read the pinned text as written.
pub(crate) fn pin_input(
    detector: &Detector,
    read: &mut dyn FnMut(&str) -> FileRead,
    fresh: Vec<String>,
    text: &str,
    judged: &Judged,
    runner: Runner,
) -> (String, Found) {
    let mut pinner = Pinner::new(detector, read, fresh);
    let run = pinner.pin(text, &judged.scripts, runner, 1);
    let mut found = pinner.into_found();
    if run == text {
        return (run, found);
    }
    let shadowed = judged
        .detection
        .hits
        .iter()
        .chain(&found.hits)
        .any(|h| h.rule == RuleId::ShadowCommand);
    let why = if shadowed {
        "it defines a function or alias named after what a judged script is handed with (exec.shadow_command), so its scripts run as written once approved"
    } else if run.len() > MAX_PINNED_BYTES {
        "its scripts' text is more than a command carries"
    } else if runner.typed && detector.typed_text_rule(&run, runner.pty).is_some() {
        "an interactive shell would not read its scripts' pinned text as written (keys, history)"
    } else {
        return (run, found);
    };
    let reason = format!("(the command): {why}");
    let rule = RuleId::UnjudgedScript;
    found.hits.push(Hit {
        rule,
        tier: rule.tier(),
        description: rule.description(),
        command: reason.clone(),
    });
    found.origins.push((rule, "(the command)".to_owned()));
    found.unjudged.push(reason);
    (text.to_owned(), found)
}

/// What pinning an input's scripts gives its caller.
#[derive(Debug)]
pub(crate) struct Scripts {
    /// The input to run: its scripts pinned.
    pub(crate) run: String,
    /// The input to ask about: itself, then the text of each script that was read
    /// and matched a rule (capped), so a human sees what runs.
    pub(crate) shown: String,
    /// The input as written.
    input: String,
    /// The rules the input itself matched (before its scripts).
    own_rules: Vec<RuleId>,
    /// Which file each finding of the scripts is in.
    origins: Vec<(RuleId, String)>,
    /// Why scripts were not judged or pinned.
    unjudged: Vec<String>,
    /// The scripts read.
    notes: Vec<Note>,
}

impl Scripts {
    /// An input without scripts.
    pub(crate) fn none(text: &str) -> Self {
        Self {
            run: text.to_owned(),
            shown: text.to_owned(),
            input: text.to_owned(),
            own_rules: Vec::new(),
            origins: Vec::new(),
            unjudged: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// A refusal of [`shown`](Self::shown), told as a refusal of the input: the
    /// input as written, each finding of a script naming its file, and the message
    /// naming the scripts judged with it.
    pub(crate) fn explain(&self, error: TerminalCallError) -> TerminalCallError {
        if self.origins.is_empty() && self.notes.is_empty() {
            return error;
        }
        let fix = |mut r: hermetic::GateRefusal| {
            r.input.clone_from(&self.input);
            for (rule, description) in r.rules.iter().zip(r.descriptions.iter_mut()) {
                if self.own_rules.iter().any(|o| o.as_str() == rule) {
                    continue;
                }
                let files: Vec<&str> = self
                    .origins
                    .iter()
                    .filter(|(r, _)| r.as_str() == rule)
                    .map(|(_, p)| p.as_str())
                    .collect();
                if !files.is_empty() {
                    description.push_str(&format!(" (in {})", files.join(", ")));
                }
            }
            let read: Vec<&str> = self.notes.iter().map(|n| n.path.as_str()).collect();
            if !read.is_empty() {
                r.message.push_str(&format!(
                    " The command runs {}: read and judged with it.",
                    read.join(", ")
                ));
            }
            if !self.unjudged.is_empty() {
                r.message
                    .push_str(&format!(" Not judged: {}.", self.unjudged.join("; ")));
            }
            r
        };
        match error {
            TerminalCallError::Blocked(r) => TerminalCallError::Blocked(fix(r)),
            TerminalCallError::PendingApproval(r) => TerminalCallError::PendingApproval(fix(r)),
            other => other,
        }
    }
}

impl TerminalCall<'_> {
    /// Reads, judges and pins the scripts `judged` (the judgement of `text`, read by
    /// `runner`, starting in `cwd`) reports: their findings join `judged`'s detection,
    /// what they write its `wrote`. A hardline input is refused as it is, unread.
    pub(crate) fn pin_scripts(
        &self,
        t: &TenantTerminal,
        text: &str,
        judged: &mut Judged,
        runner: Runner,
        cwd: &str,
    ) -> Scripts {
        if judged.scripts.is_empty() || judged.detection.tier == Tier::Hardline {
            return Scripts::none(text);
        }
        let key = self.key();
        let mut fresh = self.host.files.of(&key);
        fresh.extend(judged.wrote.iter().cloned());
        let job = Job {
            script: String::new(),
            env: self.command_env(&t.config),
            cwd: cwd.to_owned(),
            pty: false,
            dir: None,
        };
        let mut opened: Option<Result<OpenedDir, String>> = None;
        let mut read = |path: &str| self.read_script(t, &key, &job, &mut opened, path);
        let (run, found) = pin_input(t.gate.detector(), &mut read, fresh, text, judged, runner);
        let own_rules = judged.detection.rule_ids();
        let detection = &mut judged.detection;
        detection.hits.extend(found.hits);
        detection.hits.sort_by_key(|h| std::cmp::Reverse(h.tier));
        detection.tier = detection
            .hits
            .iter()
            .map(|h| h.tier)
            .max()
            .unwrap_or(Tier::Safe);
        detection.commands.extend(found.commands);
        judged.wrote.extend(found.wrote);
        for r in found.readers {
            if !judged.readers.contains(&r) {
                judged.readers.push(r);
            }
        }
        Scripts {
            shown: shown(text, &found.notes),
            run,
            input: text.to_owned(),
            own_rules,
            origins: found.origins,
            unjudged: found.unjudged,
            notes: found.notes,
        }
    }

    /// `path` (absolute) as a command of this session sees it: through the tenant's
    /// opened directory when it is inside it, else as this host has it (`local`), else
    /// through the backend. `opened`: the directory, once opened.
    fn read_script(
        &self,
        t: &TenantTerminal,
        key: &SessionKey,
        job: &Job,
        opened: &mut Option<Result<OpenedDir, String>>,
        path: &str,
    ) -> FileRead {
        let protected = &self.host.settings.protected;
        let mine = |(read, real): (FileRead, PathBuf)| {
            if protected.iter().any(|p| real.starts_with(p)) {
                FileRead::Unreadable("it is one of the host's own files".to_owned())
            } else {
                read
            }
        };
        let dir = t.place.as_ref().map(|place| {
            opened
                .get_or_insert_with(|| place.open().map_err(|e| e.to_string()))
                .clone()
        });
        if let (Some(place), Some(dir)) = (&t.place, &dir)
            && let Ok(inside) = Path::new(path).strip_prefix(place.path())
        {
            let dir = match dir {
                Ok(dir) => dir,
                Err(e) => return FileRead::Unreadable(e.clone()),
            };
            // `Err`: a symlink out of the directory; the command follows it in its
            // own view of the file system, where it is read next.
            if let Ok(read) = read_host(Some(dir.as_fd()), inside, MAX_SCRIPT_BYTES) {
                return mine(read);
            }
        }
        if t.backend.host_view() {
            return match read_host(None, Path::new(path), MAX_SCRIPT_BYTES) {
                Ok(read) => mine(read),
                Err(Escapes) => FileRead::Unreadable("it leads out of reach".to_owned()),
            };
        }
        let job = Job {
            dir: dir.and_then(Result::ok),
            ..job.clone()
        };
        t.backend
            .read_file(key, &job, path, MAX_SCRIPT_BYTES)
            .unwrap_or_else(|e| FileRead::Unreadable(format!("the backend could not read it: {e}")))
    }
}

/// The text a human is asked about: the input, then each script that was read and
/// matched a rule (the first [`SHOWN_BYTES`] of it).
fn shown(input: &str, notes: &[Note]) -> String {
    let mut out = input.to_owned();
    for n in notes.iter().filter(|n| !n.rules.is_empty()) {
        out.push_str(&format!(
            "\n\n# {} ({} bytes, judged with the command):\n{}",
            n.path, n.len, n.shown
        ));
        if n.shown.len() < n.len {
            out.push_str(&format!("\n# … ({} more bytes)", n.len - n.shown.len()));
        }
    }
    out
}

#[cfg(test)]
mod tests;
