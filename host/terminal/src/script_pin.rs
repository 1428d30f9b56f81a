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
//!   concurrent writer) changes nothing.
//!
//! Whatever cannot be read (missing, not a regular file, binary, too long), judged (an
//! interpreter the detector does not read, nested too deep) or pinned (named inside
//! `bash -c '…'` or a substitution, after `--`, by a glob, in a form the backend's
//! `sh` lacks, more text than a command carries) is [`RuleId::UnjudgedScript`]: a
//! human is asked, the file and the reason named. A program run by its path (an ELF
//! binary, anything in the system directories, a file without an execute bit, one
//! missing when the command is judged, such as what `cc -o m m.c && ./m` builds) is a
//! program, not a script: it runs as before, unjudged — and so does whatever a
//! concurrent writer puts in its place before it runs (a script pinned at the check
//! cannot be swapped; a program never was judged).

use crate::backend::{FileRead, Job, OpenedDir, shell_quote};
use crate::{TenantTerminal, TerminalCall};
use hermetic::TerminalCallError;
use hermetic_approval::SessionKey;
use hermetic_detect::{
    CodeLang, Detector, Frame, Hit, Interpreter, Judged, RuleId, ScriptForm, ScriptLang, ScriptRun,
    Tier, interpreter_of,
};
use std::ops::Range;
use std::os::fd::BorrowedFd;
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

/// Python's side of a pinned `python3 x.py`: run as `python3 -c BOOT TEXT x.py ARGS`,
/// it runs TEXT as the `__main__` module of file `x.py`, with `sys.argv`, `__file__`
/// and (when Python put the script's directory there) `sys.path[0]` as for the file.
const PYTHON_BOOT: &str = "import sys,os,types
c=sys.argv.pop(1);del sys.argv[0];f=sys.argv[0]
if sys.path and sys.path[0]=='':sys.path[0]=os.path.dirname(os.path.abspath(f))
m=types.ModuleType('__main__');m.__file__=f;m.__builtins__=__builtins__;sys.modules['__main__']=m
exec(compile(c,f,'exec'),m.__dict__)";

/// Node's side of a pinned `node x.js`: run as `node -e BOOT -- TEXT x.js ARGS`, it
/// compiles TEXT as the CommonJS main module of file `x.js` (its `require`,
/// `__filename`, `__dirname` and `process.argv` as for the file).
const NODE_BOOT: &str = "const M=require('module'),P=require('path');const c=process.argv.splice(1,1)[0];const f=P.resolve(process.argv[1]);process.argv[1]=f;const m=new M(f,null);m.filename=f;m.paths=M._nodeModulePaths(P.dirname(f));process.mainModule=m;m._compile(c,f);";

/// The shell that reads a text: what it can be handed a script's text with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Runner {
    /// It is bash (process substitution `<(…)` is there).
    pub bash: bool,
}

impl Runner {
    /// The shell among a process's input `readers` (`sh` when none is bash).
    pub(crate) fn of(readers: &[hermetic_detect::Reader]) -> Self {
        Self {
            bash: readers
                .iter()
                .any(|r| matches!(r, hermetic_detect::Reader::Shell { bash: true, .. })),
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
        let path = run.path.as_str();
        if run.form == ScriptForm::Path && SYSTEM_DIRS.iter().any(|d| path.starts_with(d)) {
            return None;
        }
        if self.written.iter().any(|w| covers(w, path)) {
            self.finding(
                path,
                RuleId::FreshFile,
                format!("{path}: written by a script the same command runs first"),
            );
            return None;
        }
        if !path.starts_with('/') {
            self.unjudged(path, "where it is is only known when the command runs");
            return None;
        }
        if SPECIAL_DIRS.iter().any(|d| path.starts_with(d)) {
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
        let (bytes, executable) = match (self.read)(path) {
            // Not there to run by its path yet: a program the command builds first
            // (`cc -o m m.c && ./m`), run as it is then, as any program is.
            FileRead::Missing if run.form == ScriptForm::Path => return None,
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
                } => (lang, Some((program, arg))),
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
                (ScriptForm::Source, _) => runner,
                (_, ScriptLang::Shell { bash }) => Runner { bash },
                _ => runner,
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
        let edit = replacement(run.form, lang, interpreter, runner, word, &pinned, path);
        if edit.is_none() {
            self.unjudged(
                path,
                "the sh that runs it here has no way to be handed the judged text in this form (bash's <(…)); run it with sh FILE or bash FILE",
            );
        }
        self.note(path, &code, first);
        edit.map(|e| (span, e))
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

/// True when the fresh-file entry `entry` (a path, `DIR/*` or `*`) covers `path`.
fn covers(entry: &str, path: &str) -> bool {
    entry == path
        || entry == "*"
        || entry
            .strip_suffix('*')
            .is_some_and(|dir| dir.ends_with('/') && path.starts_with(dir))
}

/// True when JavaScript `code` (file `path`) is an ES module.
fn is_esm(path: &str, code: &str) -> bool {
    path.ends_with(".mjs")
        || code.lines().any(|l| {
            let l = l.trim_start();
            l.starts_with("import ") || l.starts_with("import{") || l.starts_with("export ")
        })
}

/// The words that run `code` (a script of `lang`, file `path`, named by `word`) in
/// the place of `word`, for a command that `runner` reads; `None` when that shell has
/// no way to.
fn replacement(
    form: ScriptForm,
    lang: ScriptLang,
    interpreter: Option<(String, Option<String>)>,
    runner: Runner,
    word: &str,
    code: &str,
    path: &str,
) -> Option<String> {
    let q = shell_quote;
    let text = q(code);
    // A path naming the text, where bash runs the command.
    let substituted = runner.bash.then(|| format!("<(printf %s {text})"));
    let given = |lead: &str| -> Option<String> {
        match lang {
            ScriptLang::Shell { .. } => Some(format!("{lead}-c {text} {word}")),
            ScriptLang::Code {
                lang: CodeLang::Python,
            } => Some(format!("{lead}-c {} {text} {word}", q(PYTHON_BOOT))),
            ScriptLang::Code {
                lang: CodeLang::Node,
            } if is_esm(path, code) => {
                Some(format!("{lead}--input-type=module -e {text} -- {word}"))
            }
            ScriptLang::Code {
                lang: CodeLang::Node,
            } => Some(format!("{lead}-e {} -- {text} {word}", q(NODE_BOOT))),
            _ => substituted.as_ref().map(|s| format!("{lead}{s}")),
        }
    };
    match form {
        ScriptForm::Operand => given(""),
        ScriptForm::Path => {
            let lead = match interpreter {
                Some((program, arg)) => {
                    let arg = arg.map(|a| format!("{} ", q(&a))).unwrap_or_default();
                    format!("{} {arg}", q(&program))
                }
                None if runner.bash => "bash ".to_owned(),
                None => "sh ".to_owned(),
            };
            given(&lead)
        }
        ScriptForm::Source => substituted,
        // `sh <x.sh` would read `sh <<(…)`: the blank keeps `<` and `<(` apart.
        ScriptForm::Stdin => substituted.map(|s| format!(" {s}")),
    }
}

/// A file read on this host: opened beneath `dir` (the tenant's directory, without
/// following a symlink out of it) or, without `dir`, as this host has it. `Err`: the
/// path leads out of `dir`.
fn read_host(
    dir: Option<BorrowedFd<'_>>,
    path: &Path,
    cap: usize,
) -> Result<(FileRead, PathBuf), Escapes> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    use rustix::io::Errno;
    use std::io::Read;
    let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY;
    let opened = match dir {
        Some(dir) => rustix::fs::openat2(
            dir,
            path,
            flags,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        ),
        None => rustix::fs::openat(rustix::fs::CWD, path, flags, Mode::empty()),
    };
    let unreadable = |why: String| Ok((FileRead::Unreadable(why), PathBuf::new()));
    let fd = match opened {
        Ok(fd) => fd,
        Err(Errno::NOENT | Errno::NOTDIR) => return Ok((FileRead::Missing, PathBuf::new())),
        Err(Errno::XDEV | Errno::LOOP) if dir.is_some() => return Err(Escapes),
        Err(e) => return unreadable(format!("it cannot be opened: {e}")),
    };
    let real = std::fs::read_link(format!(
        "/proc/self/fd/{}",
        std::os::fd::AsRawFd::as_raw_fd(&fd)
    ))
    .unwrap_or_default();
    let stat = match rustix::fs::fstat(&fd) {
        Ok(stat) => stat,
        Err(e) => return unreadable(format!("it cannot be examined: {e}")),
    };
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return unreadable("it is not a regular file".to_owned());
    }
    let mut bytes = Vec::new();
    let limit = u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1);
    if let Err(e) = std::fs::File::from(fd).take(limit).read_to_end(&mut bytes) {
        return unreadable(format!("reading it failed: {e}"));
    }
    let executable = stat.st_mode & 0o111 != 0;
    Ok((FileRead::Read { bytes, executable }, real))
}

/// A path that leads out of the directory it was opened beneath.
#[derive(Debug)]
struct Escapes;

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
        let mut pinner = Pinner::new(t.gate.detector(), &mut read, fresh);
        let mut run = pinner.pin(text, &judged.scripts, runner, 1);
        let mut found = pinner.into_found();
        if run.len() > MAX_PINNED_BYTES {
            let reason = "(the command): its scripts' text is more than a command carries";
            let rule = RuleId::UnjudgedScript;
            found.hits.push(Hit {
                rule,
                tier: rule.tier(),
                description: rule.description(),
                command: reason.to_owned(),
            });
            found.origins.push((rule, "(the command)".to_owned()));
            found.unjudged.push(reason.to_owned());
            text.clone_into(&mut run);
        }
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
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic, reason = "tests")]
    use super::*;
    use std::collections::HashMap;

    const BASH: Runner = Runner { bash: true };
    const SH: Runner = Runner { bash: false };

    /// Pins `command` (judged in /ws, run by `runner`) with `files` as the file
    /// system: the text to run, and the rules found.
    fn pin(command: &str, runner: Runner, files: &[(&str, &str)]) -> (String, Vec<String>) {
        let d = Detector::default();
        let files: HashMap<String, Vec<u8>> = files
            .iter()
            .map(|(p, t)| ((*p).to_owned(), t.as_bytes().to_vec()))
            .collect();
        let mut read = |path: &str| match files.get(path) {
            Some(b) => FileRead::Read {
                bytes: b.clone(),
                executable: true,
            },
            None => FileRead::Missing,
        };
        let judged = d.judge(
            command,
            &Frame {
                fresh: &[],
                cwd: "/ws",
            },
        );
        let mut pinner = Pinner::new(&d, &mut read, Vec::new());
        let run = pinner.pin(command, &judged.scripts, runner, 1);
        let found = pinner.into_found();
        let mut rules: Vec<String> = judged
            .detection
            .hits
            .iter()
            .chain(&found.hits)
            .map(|h| h.rule.as_str().to_owned())
            .collect();
        rules.dedup();
        (run, rules)
    }

    /// Runs `text` with bash in `dir` and returns its output.
    fn bash_in(dir: &Path, text: &str) -> String {
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(text)
            .current_dir(dir)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    }

    #[test]
    fn each_form_is_given_the_judged_text_in_the_files_place() {
        let ls = "echo judged \"$0\" \"$@\"\n";
        let cases: &[(&str, Runner, &str)] = &[
            (
                "sh x.sh a",
                BASH,
                "sh -c 'echo judged \"$0\" \"$@\"\n' x.sh a",
            ),
            (
                "bash -e ./x.sh",
                SH,
                "bash -e -c 'echo judged \"$0\" \"$@\"\n' ./x.sh",
            ),
            (
                ". ./x.sh",
                BASH,
                ". <(printf %s 'echo judged \"$0\" \"$@\"\n')",
            ),
            (
                "sh <x.sh",
                BASH,
                "sh < <(printf %s 'echo judged \"$0\" \"$@\"\n')",
            ),
            (
                "./x.sh a",
                BASH,
                "bash -c 'echo judged \"$0\" \"$@\"\n' ./x.sh a",
            ),
            (
                "exec ./x.sh",
                SH,
                "exec sh -c 'echo judged \"$0\" \"$@\"\n' ./x.sh",
            ),
            (
                "xargs sh x.sh",
                SH,
                "xargs sh -c 'echo judged \"$0\" \"$@\"\n' x.sh",
            ),
        ];
        for (command, runner, expected) in cases {
            let (run, rules) = pin(command, *runner, &[("/ws/x.sh", ls)]);
            assert_eq!(run, *expected, "{command}");
            assert!(rules.is_empty(), "{command}: {rules:?}");
        }
    }

    #[test]
    fn what_sh_cannot_be_handed_asks() {
        for command in [
            ". ./x.sh",
            "sh < x.sh",
            "perl x.pl",
            "bash -c 'sh x.sh'",
            "sh -- x.sh",
        ] {
            let (run, rules) = pin(
                command,
                SH,
                &[("/ws/x.sh", "echo hi\n"), ("/ws/x.pl", "print 1;\n")],
            );
            assert_eq!(run, command, "{command}: left as written");
            assert_eq!(rules, ["exec.unjudged_script"], "{command}");
        }
    }

    #[test]
    fn a_dangerous_script_is_found_and_what_cannot_be_read_asks() {
        let (_, rules) = pin(
            "sh cleanup.sh",
            BASH,
            &[("/ws/cleanup.sh", "rm -rf victim\n")],
        );
        assert_eq!(rules, ["fs.rm_recursive"]);
        for (files, why) in [
            (&[][..], "missing"),
            (&[("/ws/x.sh", "echo \0 bin")][..], "binary"),
        ] {
            let (_, rules) = pin("bash x.sh", BASH, files);
            assert_eq!(rules, ["exec.unjudged_script"], "{why}");
        }
        let long = "echo x\n".repeat(MAX_SCRIPT_BYTES / 7 + 1);
        let (_, rules) = pin("bash x.sh", BASH, &[("/ws/x.sh", &long)]);
        assert_eq!(rules, ["exec.unjudged_script"], "too long");
        // A program run by its path is not judged; an unknown #! asks.
        let (run, rules) = pin("./tool", BASH, &[("/ws/tool", "\x7fELF\x02\x01")]);
        assert_eq!((run.as_str(), rules.len()), ("./tool", 0));
        let (run, rules) = pin("cc -o m m.c && ./m", BASH, &[]);
        assert_eq!(
            (run.as_str(), rules.len()),
            ("cc -o m m.c && ./m", 0),
            "built first"
        );
        let (_, rules) = pin("./x", BASH, &[("/ws/x", "#!/usr/bin/make -f\nall:\n")]);
        assert_eq!(rules, ["exec.unjudged_script"]);
        let (run, _) = pin("/usr/bin/env ls", BASH, &[]);
        assert_eq!(run, "/usr/bin/env ls", "a system program");
    }

    #[test]
    fn scripts_run_by_scripts_are_judged_and_pinned_inside_theirs() {
        let files = [
            ("/ws/build.sh", "#!/bin/bash\n. ./lib.sh\necho built\n"),
            ("/ws/lib.sh", "rm -rf victim\n"),
        ];
        let (run, rules) = pin("./build.sh", BASH, &files);
        assert_eq!(rules, ["fs.rm_recursive"]);
        assert!(
            run.starts_with("'/bin/bash' -c '#!/bin/bash\n. <(printf %s '\\''rm -rf victim"),
            "{run}"
        );
        // Deeper than the limit asks.
        let files = [
            ("/ws/a.sh", "sh b.sh\n"),
            ("/ws/b.sh", "sh c.sh\n"),
            ("/ws/c.sh", "sh d.sh\n"),
            ("/ws/d.sh", "echo deep\n"),
        ];
        let (_, rules) = pin("sh a.sh", BASH, &files);
        assert_eq!(rules, ["exec.unjudged_script"]);
    }

    #[test]
    fn pinned_commands_run_the_judged_text_with_the_files_names() {
        let dir = tempfile::TempDir::new().unwrap();
        let ws = dir.path();
        std::fs::write(ws.join("helper.py"), "X = 42\n").unwrap();
        let script = "echo \"$0:$1\"; echo \"it's\"\n";
        let py =
            "import sys, helper\nprint(sys.argv, __file__.endswith('x.py'), __name__, helper.X)\n";
        let js = "const h = require('path');\nconsole.log(process.argv.slice(1).map(a => h.basename(a)), h.basename(__filename), require.main === module)\n";
        let cases: &[(&str, &str, &str, &str)] = &[
            ("sh x.sh one", "x.sh", script, "x.sh:one\nit's\n"),
            (
                ". ./x.sh two",
                "x.sh",
                "echo \"sourced $1\"\n",
                "sourced two\n",
            ),
            ("bash < x.sh", "x.sh", "echo from stdin\n", "from stdin\n"),
            (
                "for i in 1 2; do bash x.sh $i; done",
                "x.sh",
                script,
                "x.sh:1\nit's\nx.sh:2\nit's\n",
            ),
            (
                "printf 'a\\nb\\n' | xargs -n1 sh x.sh",
                "x.sh",
                script,
                "x.sh:a\nit's\nx.sh:b\nit's\n",
            ),
            (
                "python3 x.py a",
                "x.py",
                py,
                "['x.py', 'a'] True __main__ 42\n",
            ),
            ("node x.js a", "x.js", js, "[ 'x.js', 'a' ] x.js true\n"),
            (
                "perl x.pl a",
                "x.pl",
                "print \"perl @ARGV\\n\";\n",
                "perl a\n",
            ),
        ];
        for (command, file, text, expected) in cases {
            let path = ws.join(file);
            std::fs::write(&path, text).unwrap();
            let d = Detector::default();
            let cwd = ws.to_str().unwrap();
            let judged = d.judge(command, &Frame { fresh: &[], cwd });
            let mut read = |p: &str| FileRead::Read {
                bytes: std::fs::read(p).unwrap(),
                executable: true,
            };
            let mut pinner = Pinner::new(&d, &mut read, Vec::new());
            let run = pinner.pin(command, &judged.scripts, BASH, 1);
            assert_ne!(&run, command, "{command}: pinned");
            // The file changes after the check: the judged text runs.
            std::fs::write(&path, "echo CHANGED\n").unwrap();
            assert_eq!(bash_in(ws, &run), *expected, "{command}: {run}");
        }
    }

    #[test]
    fn a_foreground_shells_stdin_runs_its_scripts_as_judged() {
        let dir = tempfile::TempDir::new().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir(ws.join("victim")).unwrap();
        std::fs::write(ws.join("cleanup.sh"), "rm -rf victim\n").unwrap();
        std::fs::write(ws.join("hello.sh"), "echo \"hello $1\"\n").unwrap();
        let mut settings = crate::TerminalSettings::default();
        settings.default.cwd = Some(ws.clone());
        let host = crate::TerminalHost::new(settings).unwrap();
        let call = TerminalCall {
            host: &host,
            tenant: String::new(),
            session: "stdin".into(),
            approver: None,
            cancel: None,
            env: Vec::new(),
            deadline: None,
        };
        let request = |stdin: &str| hermetic::CommandRequest {
            command: "bash".into(),
            stdin: Some(stdin.into()),
            ..hermetic::CommandRequest::default()
        };
        let r = call.run(&request("sh cleanup.sh\n"), &mut |_| {});
        let named = |r: &hermetic::GateRefusal| {
            r.descriptions.iter().any(|d| d.contains("cleanup.sh")) && r.input == "sh cleanup.sh\n"
        };
        assert!(
            matches!(&r, Err(TerminalCallError::PendingApproval(x)) if named(x)),
            "{r:?}"
        );
        assert!(ws.join("victim").exists());
        let r = call.run(&request("sh hello.sh fg\n"), &mut |_| {}).unwrap();
        assert_eq!(r.output, "hello fg");
    }

    #[test]
    fn a_file_is_read_beneath_the_tenants_directory_or_not_at_all() {
        use std::os::fd::AsFd;
        let dir = tempfile::TempDir::new().unwrap();
        let ws = dir.path();
        std::fs::write(ws.join("x.sh"), "echo hi\n").unwrap();
        std::fs::create_dir(ws.join("sub")).unwrap();
        std::os::unix::fs::symlink("../x.sh", ws.join("sub/inside.sh")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", ws.join("out.sh")).unwrap();
        std::os::unix::fs::symlink("../../../../../etc/hostname", ws.join("up.sh")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            ws.join("fifo"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let opened = std::fs::File::open(ws).unwrap();
        let read = |p: &str| read_host(Some(opened.as_fd()), Path::new(p), 4).map(|(r, _)| r);
        let text = |b: &[u8]| FileRead::Read {
            bytes: b.to_vec(),
            executable: false,
        };
        assert_eq!(
            read("x.sh").unwrap(),
            text(b"echo "),
            "at most cap + 1 bytes"
        );
        assert_eq!(
            read("sub/inside.sh").unwrap(),
            text(b"echo "),
            "a link inside"
        );
        assert!(read("out.sh").is_err(), "an absolute link leads out");
        assert!(read("up.sh").is_err(), "so does one up and out");
        assert_eq!(read("missing.sh").unwrap(), FileRead::Missing);
        assert!(
            matches!(read("fifo").unwrap(), FileRead::Unreadable(_)),
            "a FIFO is not read (nor waited on)"
        );
        assert!(matches!(read("sub").unwrap(), FileRead::Unreadable(_)));
    }

    #[test]
    fn scripts_that_run_many_scripts_are_read_up_to_a_count() {
        // 6 scripts each running 6 empty ones: 43 files, more than are read.
        let six = |p: &str| {
            (0..6)
                .map(|i| format!("sh {p}{i}.sh\n"))
                .collect::<String>()
        };
        let mut files: Vec<(String, String)> = vec![("/ws/top.sh".into(), six("a"))];
        for i in 0..6 {
            files.push((format!("/ws/a{i}.sh"), six(&format!("b{i}"))));
            for j in 0..6 {
                files.push((format!("/ws/b{i}{j}.sh"), String::new()));
            }
        }
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, t)| (p.as_str(), t.as_str()))
            .collect();
        let (_, rules) = pin("sh top.sh", BASH, &refs);
        assert_eq!(rules, ["exec.unjudged_script"]);
        // 4 scripts of 6 empty ones (29 files) are read.
        let four = |p: &str| {
            (0..4)
                .map(|i| format!("sh {p}{i}.sh\n"))
                .collect::<String>()
        };
        let mut files: Vec<(String, String)> = vec![("/ws/top.sh".into(), four("a"))];
        for i in 0..4 {
            files.push((format!("/ws/a{i}.sh"), six(&format!("b{i}"))));
            for j in 0..6 {
                files.push((format!("/ws/b{i}{j}.sh"), String::new()));
            }
        }
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, t)| (p.as_str(), t.as_str()))
            .collect();
        let (_, rules) = pin("sh top.sh", BASH, &refs);
        assert!(rules.is_empty(), "{rules:?}");
    }

    #[test]
    fn what_reads_stdin_inside_a_script_is_a_reader_of_the_command() {
        let d = Detector::default();
        let mut read = |_: &str| FileRead::Read {
            bytes: b"echo start\npython3\n".to_vec(),
            executable: true,
        };
        let judged = d.judge(
            "sh x.sh",
            &Frame {
                fresh: &[],
                cwd: "/ws",
            },
        );
        let mut pinner = Pinner::new(&d, &mut read, Vec::new());
        pinner.pin("sh x.sh", &judged.scripts, BASH, 1);
        assert_eq!(
            pinner.into_found().readers,
            [hermetic_detect::Reader::Code(CodeLang::Python)]
        );
    }
}
