//! Input to a running program: what reads a command's standard input, and text written
//! to it judged in the language its reader reads.
//!
//! A background `bash`, `python3` or `sqlite3 app.db` runs what it is sent; `cat` or
//! `sort` never does. When a command is judged, each of its simple commands says how
//! it uses the stdin it inherits ([`Reader`], recorded by `note_stdin` in
//! `stdin_readers.rs`); the host keeps
//! that per process and judges what the process is sent ([`Detector::judge_input`]):
//! a shell's input as shell (whole statements, with the files the session wrote
//! known), an interpreter's as its `-c`/`-e` code is judged (by the capabilities it
//! names), a database client's by its statements and client commands
//! (`sql_input.rs`), and an unknown
//! program's line by line as shell commands. Whatever a judge cannot read is
//! dangerous.
//!
//! [`Detector::judge`] is [`Detector::detect`] with a session's [`Frame`]: the files
//! earlier commands wrote (running one is [`RuleId::FreshFile`], as within one line)
//! and the directory the command starts in.

use super::code::{self, Lang};
use super::detector::{Detection, Detector, analyze, detection, finding_rule};
use super::limits::{MAX_INPUT_BYTES, MAX_NESTING, exceeds_nesting};
use super::normalize::normalize;
use super::reader::{CodeLang, Reader};
use super::rules::RuleId;
use super::script_run::{self, ScriptRun};
use super::sql_input::sql_line_rule;
use super::walk::{self, Analyzer, RawHit};

/// What earlier inputs of one session left that judging the next one needs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Frame<'a> {
    /// Files earlier inputs wrote, downloaded or made executable, as their
    /// [`Judged::wrote`] gave them.
    pub fresh: &'a [String],
    /// The directory the input starts in: absolute, or empty when unknown. Relative
    /// paths are read from it, and [`Judged::wrote`] gives paths from it.
    pub cwd: &'a str,
}

/// A judgement, with what a session carries to its later inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    /// The verdict on this input.
    pub detection: Detection,
    /// Files this input writes, downloads or makes executable (absolute when the
    /// frame's `cwd` is; `DIR/*` for every file under DIR, `*` for any file once more
    /// than the detector tracks were written). Running one later is running a fresh
    /// file.
    pub wrote: Vec<String>,
    /// The working directory after its `cd`s, as [`Frame::cwd`].
    pub cwd: String,
    /// What reads its standard input (none: data only).
    pub readers: Vec<Reader>,
    /// The script files it runs (`sh x.sh`, `. ./env.sh`, `./x`, `python3 x.py`):
    /// what runs is their contents, which the detector cannot see; the host reads and
    /// judges them ([`Detector::judge_script`]).
    pub scripts: Vec<ScriptRun>,
}

/// The languages a program the detector does not know may read its input in.
const UNKNOWN_LANGUAGES: [CodeLang; 6] = [
    CodeLang::Python,
    CodeLang::Node,
    CodeLang::Perl,
    CodeLang::Ruby,
    CodeLang::Php,
    CodeLang::Other,
];
/// Most `!` in one line whose text after it is judged as a shell escape.
const MAX_ESCAPES: usize = 4;

/// Needles for interpreter input typed at a REPL, on top of [`code::is_risky`]'s: ways
/// into a pager, debugger or nested REPL (whose own commands run shell commands), and
/// the reflection that reaches the `os` module without naming it.
fn repl_needles(lang: CodeLang) -> &'static [&'static str] {
    match lang {
        CodeLang::Python => &[
            "help(",
            "license(",
            "breakpoint(",
            "pdb",
            "interact(",
            "runpy",
            "__class__",
            "__subclasses__",
            "__globals__",
            "__mro__",
            "__base",
            "__loader__",
            "__spec__",
            // File changes through objects whose module names nothing risky
            // (`pathlib.Path('x').rename(…)`), archives unpacked anywhere, SQL.
            ".rename(",
            ".unlink(",
            ".rmdir(",
            ".write_text(",
            ".write_bytes(",
            ".chmod(",
            ".symlink_to(",
            ".hardlink_to(",
            ".touch(",
            "extractall",
            "sqlite3",
        ],
        CodeLang::Node => &[
            "require(",
            "process.mainModule",
            "constructor",
            "globalThis",
            "global.",
            ".editor",
            ".load",
            "dlopen",
        ],
        CodeLang::Ruby => &["load", "binding", "instance_variable", "const_get"],
        CodeLang::Perl => &["rmdir", "symlink", "link(", "utime", "do "],
        CodeLang::Php | CodeLang::Other | CodeLang::Unread => &[],
    }
}

fn is_risky_in(lang: CodeLang, text: &str) -> bool {
    let inner = match lang {
        CodeLang::Python => Lang::Python,
        CodeLang::Node => Lang::Node,
        CodeLang::Perl => Lang::Perl,
        CodeLang::Ruby => Lang::Ruby,
        CodeLang::Php => Lang::Php,
        CodeLang::Other | CodeLang::Unread => Lang::Generic,
    };
    code::is_risky(inner, text) || repl_needles(lang).iter().any(|n| text.contains(n))
}

/// The top-level module names a line of Python imports (`import a.b, c as d`,
/// `from e.f import g`): a module the session wrote runs when imported.
pub(crate) fn python_imports(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for statement in text.split([';', '\n']) {
        let s = statement.trim();
        if let Some(rest) = s.strip_prefix("import ") {
            for item in rest.split(',') {
                if let Some(m) = item.split_whitespace().next() {
                    out.push(m.split('.').next().unwrap_or(m));
                }
            }
        } else if let Some(rest) = s.strip_prefix("from ")
            && let Some(m) = rest.split_whitespace().next()
        {
            out.push(m.split('.').next().unwrap_or(m));
        }
    }
    out
}

/// True when `text` uses bash's history (on in interactive shells): `!!`, `!rm`,
/// `!-2`, `^old^new`. What runs is then an earlier command, not this text.
fn uses_history(text: &str) -> bool {
    let bytes = text.as_bytes();
    let event = bytes.iter().enumerate().any(|(i, &b)| {
        b == b'!'
            && !matches!(i.checked_sub(1).map(|p| bytes[p]), Some(b'$' | b'\\'))
            && !matches!(
                bytes.get(i + 1),
                None | Some(b' ' | b'\t' | b'\n' | b'\r' | b'=' | b'(' | b'"')
            )
    });
    event || text.lines().any(|l| l.trim_start().starts_with('^'))
}

/// True when the simple command `rendered` changes what the shell's later input
/// means, beyond what judging that input alone can see: an alias (`alias q=rm`, then
/// `q -rf ~`: aliases expand in interactive shells, and after `shopt -s
/// expand_aliases`), a readline key binding (a key typed later runs a macro or a
/// command), or `exec <FILE` (the shell reads its commands from FILE from then on).
fn rewires_the_shell(rendered: &str) -> bool {
    let mut words = rendered
        .split_whitespace()
        .skip_while(|w| matches!(*w, "builtin" | "command" | "-p" | "--"));
    match words.next() {
        Some("alias") => words.any(|w| w.contains('=')),
        Some("bind") => words.next().is_some(),
        Some("exec") => words.any(|w| {
            let w = w.trim_start_matches(|c: char| c.is_ascii_digit());
            w.starts_with('<') && !w.starts_with("<<")
        }),
        _ => false,
    }
}

/// Hits collected across the judges of one input.
#[derive(Default)]
struct Verdicts {
    hits: Vec<RawHit>,
    commands: Vec<String>,
}

impl Verdicts {
    fn hit(&mut self, rule: RuleId, command: &str) {
        if !self
            .hits
            .iter()
            .any(|h| h.rule == rule && h.command == command)
        {
            self.hits.push(RawHit {
                rule,
                command: command.to_owned(),
            });
        }
    }

    fn absorb(&mut self, d: Detection) {
        for h in d.hits {
            self.hit(h.rule, &h.command);
        }
        self.commands.extend(d.commands);
    }
}

impl Detector {
    /// [`detect`](Self::detect) in a session: `frame` gives the files earlier commands
    /// of the session wrote (running one is [`RuleId::FreshFile`]) and the directory
    /// this command starts in. The result says what the command writes and where it
    /// leaves the working directory (to carry to the next command) and what reads its
    /// standard input ([`Reader`]).
    ///
    /// ```
    /// use hermetic_detect::{Detector, Frame, RuleId};
    /// let detector = Detector::default();
    /// let first = detector.judge("printf 'id\n' > x.sh", &Frame { fresh: &[], cwd: "/ws" });
    /// assert!(first.detection.is_safe());
    /// assert_eq!(first.wrote, ["/ws/x.sh"]);
    /// let later = detector.judge("bash x.sh", &Frame { fresh: &first.wrote, cwd: "/ws" });
    /// assert_eq!(later.detection.rule_ids(), [RuleId::FreshFile]);
    /// ```
    pub fn judge(&self, command: &str, frame: &Frame<'_>) -> Judged {
        let run = |plain_shortcut: bool| {
            let mut analyzer = Analyzer::new(&self.protection);
            analyzer.prior_fresh = frame.fresh;
            analyzer.start_in(frame.cwd);
            analyzer.collect_scripts = true;
            analyzer.locate = true;
            analyzer.plain_shortcut = plain_shortcut;
            analyze(&mut analyzer, command);
            analyzer
        };
        let mut analyzer = run(true);
        // The plain-command shortcut builds words without their places in the text:
        // a script run found in one is found again by the parser, with its place.
        if script_run::want_locations(&analyzer.scripts) {
            analyzer = run(false);
        }
        let cwd = analyzer.cwd().to_owned();
        Judged {
            wrote: std::mem::take(&mut analyzer.fresh_files),
            readers: std::mem::take(&mut analyzer.readers),
            scripts: script_run::located(command, std::mem::take(&mut analyzer.scripts)),
            cwd,
            detection: detection(analyzer.hits, analyzer.commands),
        }
    }

    /// The rule `text` breaks when an interactive shell reads it as typed, though the
    /// text was judged as written: at a terminal (`pty`) any control character but
    /// LF and CR (a tab completes, ^V quotes the next key, ESC starts a key sequence)
    /// or non-ASCII byte (a meta key where the locale is not UTF-8) edits the line;
    /// in any interactive shell `!` and `^` can recall history. `None`: it reads as
    /// written. The host checks text it puts into such input itself (a pinned
    /// script's text).
    ///
    /// ```
    /// use hermetic_detect::{Detector, RuleId};
    /// let detector = Detector::default();
    /// assert_eq!(detector.typed_text_rule("sh -c 'ls' x\n", true), None);
    /// assert_eq!(detector.typed_text_rule("sh -c 'echo \t' x\n", true), Some(RuleId::ControlChars));
    /// assert_eq!(detector.typed_text_rule("sh -c 'echo \t' x\n", false), None);
    /// assert_eq!(detector.typed_text_rule("sh -c '#!/bin/sh' x\n", false), Some(RuleId::Unparseable));
    /// ```
    pub fn typed_text_rule(&self, text: &str, pty: bool) -> Option<RuleId> {
        if pty
            && text
                .chars()
                .any(|c| !(c.is_ascii() && (!c.is_control() || c == '\n' || c == '\r')))
        {
            return Some(RuleId::ControlChars);
        }
        uses_history(text).then_some(RuleId::Unparseable)
    }

    /// True when a shell reading `text` would wait for more before running it: an
    /// open quote, a compound command without its end (`for … do` without `done`), a
    /// here-document without its end line, a trailing `|`, `&&` or `\`. Text over the
    /// detector's size or nesting caps is not incomplete (it is judged, and dangerous).
    pub fn shell_needs_more(&self, text: &str) -> bool {
        if text.len() > MAX_INPUT_BYTES || exceeds_nesting(text, MAX_NESTING) {
            return false;
        }
        let body = text.strip_suffix('\n').unwrap_or(text);
        let slashes = body.len() - body.trim_end_matches('\\').len();
        slashes % 2 == 1 || walk::parse::is_incomplete(text)
    }

    /// Judges `text`, input a running program reads, for each of its `readers` (the
    /// verdict is the worst of theirs): a shell's input as shell code in `frame` (the
    /// result carries what it writes, its `cd`s and the readers it starts, as
    /// [`judge`](Self::judge)); an interpreter's as its inline code is judged, by the
    /// capabilities it names (and a Python import of a module the session wrote is a
    /// fresh file); a database client's line by line; an unknown program's line by line
    /// as shell commands, each complete by itself, and what follows a `!` (an editor's
    /// or pager's shell escape) too. `pty`: it is typed at a terminal, where CR ends a
    /// line and every control character (tab included) edits or signals.
    ///
    /// Whatever a judge cannot read is dangerous; readers given none (data) make
    /// nothing dangerous.
    ///
    /// ```
    /// use hermetic_detect::{CodeLang, Detector, Frame, Reader};
    /// let detector = Detector::default();
    /// let python = [Reader::Code(CodeLang::Python)];
    /// let frame = Frame::default();
    /// assert!(detector.judge_input("print(1+1)\n", &python, false, &frame).detection.is_safe());
    /// assert!(!detector.judge_input("import shutil\n", &python, false, &frame).detection.is_safe());
    /// ```
    pub fn judge_input(
        &self,
        text: &str,
        readers: &[Reader],
        pty: bool,
        frame: &Frame<'_>,
    ) -> Judged {
        let mut v = Verdicts::default();
        let mut out = Judged {
            detection: detection(Vec::new(), Vec::new()),
            wrote: Vec::new(),
            cwd: frame.cwd.to_owned(),
            readers: Vec::new(),
            scripts: Vec::new(),
        };
        // Spans of the scripts a shell reader runs are in `text` as given.
        let as_given = !pty || !text.contains('\r');
        if readers.is_empty() {
            return out;
        }
        // On a terminal CR ends a line like LF; a lone CR elsewhere is a control
        // character (normalize's finding).
        let text: std::borrow::Cow<'_, str> = if pty {
            text.replace("\r\n", "\n").replace('\r', "\n").into()
        } else {
            text.into()
        };
        if pty && text.contains(|c: char| c.is_control() && c != '\n') {
            v.hit(RuleId::ControlChars, &text);
        }
        if text.len() > MAX_INPUT_BYTES {
            v.hit(RuleId::TooLarge, "(input too long)");
        }
        for reader in readers {
            match *reader {
                Reader::Shell { bash, interactive } => {
                    let judged = self.judge(&text, frame);
                    if (interactive || pty) && uses_history(&text) {
                        v.hit(RuleId::Unparseable, &text);
                    }
                    if (interactive || pty)
                        && judged
                            .detection
                            .commands
                            .iter()
                            .any(|c| c == "fc" || c.starts_with("fc "))
                    {
                        v.hit(RuleId::Unparseable, &text);
                    }
                    if judged
                        .detection
                        .commands
                        .iter()
                        .any(|c| rewires_the_shell(c))
                    {
                        v.hit(RuleId::Unparseable, &text);
                    }
                    // Any other shell reads `$'…'`/`$"…"` differently from the bash
                    // the detector parses.
                    if !bash && (text.contains("$'") || text.contains("$\"")) {
                        v.hit(RuleId::Unparseable, &text);
                    }
                    v.absorb(judged.detection);
                    out.wrote.extend(judged.wrote);
                    out.cwd = judged.cwd;
                    out.readers.extend(judged.readers);
                    out.scripts.extend(judged.scripts.into_iter().map(|mut s| {
                        if !as_given {
                            s.span = None;
                        }
                        s
                    }));
                }
                Reader::Unknown => {
                    for line in text.lines().filter(|l| !l.trim().is_empty()) {
                        let judged = self.judge(line, frame);
                        if line.trim_end().ends_with('\\')
                            || self.shell_needs_more(line)
                            || judged
                                .detection
                                .commands
                                .iter()
                                .any(|c| rewires_the_shell(c))
                        {
                            v.hit(RuleId::Unparseable, line);
                        }
                        v.absorb(judged.detection);
                        out.wrote.extend(judged.wrote);
                        // What it runs of a line it reads is not where the line
                        // stands in the input.
                        out.scripts.extend(judged.scripts.into_iter().map(|mut s| {
                            s.span = None;
                            s
                        }));
                        // It may `eval` what it reads in its own language: a line that
                        // names a risky capability of any language the detector knows
                        // (`system "rm -rf x"` is harmless shell, and Perl).
                        if UNKNOWN_LANGUAGES.iter().any(|l| is_risky_in(*l, line)) {
                            v.hit(RuleId::InterpreterCode, line);
                        }
                        // An editor's, pager's or debugger's shell escape (`:!cmd`,
                        // `!cmd`): what follows runs in a shell.
                        for (i, _) in line.match_indices('!').take(MAX_ESCAPES) {
                            let escape = line[i + 1..].trim();
                            if !escape.is_empty() {
                                v.absorb(self.judge(escape, frame).detection);
                            }
                        }
                    }
                }
                Reader::Code(lang) => self.judge_code(lang, &text, frame, &mut v),
                Reader::Sql => {
                    let normalized = normalize(&text);
                    for finding in &normalized.findings {
                        v.hit(finding_rule(*finding), &text);
                    }
                    for line in normalized.text.lines() {
                        if let Some(rule) = sql_line_rule(line) {
                            v.hit(rule, line);
                        }
                    }
                }
            }
        }
        out.readers.dedup();
        out.detection = detection(v.hits, v.commands);
        out
    }

    /// An interpreter's input: judged like its `-c`/`-e` code, line continuations
    /// joined (Python and JavaScript continue a string or line after `\`).
    fn judge_code(&self, lang: CodeLang, text: &str, frame: &Frame<'_>, v: &mut Verdicts) {
        let normalized = normalize(text);
        for finding in &normalized.findings {
            v.hit(finding_rule(*finding), text);
        }
        let code = normalized.text.as_ref();
        if lang == CodeLang::Unread {
            for line in code.lines().filter(|l| !l.trim().is_empty()) {
                v.hit(RuleId::Unparseable, line);
            }
            return;
        }
        let joined = code.replace("\\\n", "");
        if is_risky_in(lang, code) || is_risky_in(lang, &joined) {
            v.hit(RuleId::InterpreterCode, code);
        }
        if lang == CodeLang::Python {
            // IPython's shell escapes and magics (`!rm …`, `%run x.py`).
            for line in joined.lines() {
                let l = line.trim_start();
                if l.starts_with('!') {
                    v.hit(RuleId::ShellEscape, line);
                } else if l.starts_with('%') {
                    v.hit(RuleId::Unparseable, line);
                }
            }
            if imports_fresh_module(self, &joined, frame) {
                v.hit(RuleId::FreshFile, code);
            }
        }
    }
}

/// True when Python `code` imports a module the session wrote (`frame`'s fresh
/// files): a module runs when it is imported.
pub(crate) fn imports_fresh_module(detector: &Detector, code: &str, frame: &Frame<'_>) -> bool {
    if frame.fresh.is_empty() {
        return false;
    }
    let mut analyzer = Analyzer::new(&detector.protection);
    analyzer.prior_fresh = frame.fresh;
    analyzer.start_in(frame.cwd);
    python_imports(code)
        .into_iter()
        .filter(|m| !m.is_empty())
        .any(|module| {
            [
                format!("{module}.py"),
                format!("{module}/__init__.py"),
                module.to_owned(),
            ]
            .iter()
            .any(|p| analyzer.is_fresh(p))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::Tier;

    const BASH: Reader = Reader::Shell {
        bash: true,
        interactive: false,
    };

    #[test]
    fn xargs_runs_its_command_with_words_only_known_at_run_time() {
        let d = Detector::default();
        let tier = |c: &str| d.judge(c, &Frame::default()).detection.tier;
        // `'rm -rf v'` on its input would be sh's code.
        assert_eq!(tier("xargs sh -c"), Tier::Dangerous);
        assert_eq!(tier("xargs -0 bash -c"), Tier::Dangerous);
        // Known input is judged as the words it is.
        assert_eq!(tier("xargs -n1 echo"), Tier::Safe);
        assert_eq!(tier("echo a b | xargs -n1 echo"), Tier::Safe);
    }

    #[test]
    fn a_file_an_earlier_command_wrote_is_fresh_later() {
        let d = Detector::default();
        let first = d.judge(
            "printf 'rm -rf v\\n' > x.sh",
            &Frame {
                fresh: &[],
                cwd: "/ws",
            },
        );
        assert!(first.detection.is_safe(), "{first:?}");
        assert_eq!(first.wrote, ["/ws/x.sh"]);
        for (later, cwd) in [
            ("bash x.sh", "/ws"),
            ("sh ./x.sh", "/ws"),
            ("/ws/x.sh", "/tmp"),
            ("cd /ws && source x.sh", "/tmp"),
            ("bash ../ws/x.sh", "/tmp"),
        ] {
            let j = d.judge(
                later,
                &Frame {
                    fresh: &first.wrote,
                    cwd,
                },
            );
            assert_eq!(
                j.detection.rule_ids(),
                [RuleId::FreshFile],
                "{later} in {cwd}"
            );
        }
        // A named pipe: what a shell later reads from it is fresh code.
        let fifo = d.judge(
            "mkfifo cmds",
            &Frame {
                fresh: &[],
                cwd: "/ws",
            },
        );
        assert_eq!(fifo.wrote, ["/ws/cmds"]);
        let j = d.judge(
            "bash < cmds",
            &Frame {
                fresh: &fifo.wrote,
                cwd: "/ws",
            },
        );
        assert!(!j.detection.is_safe(), "{j:?}");
        // Filters that write a file of their own.
        for (write, file) in [("sort -o x.sh", "/ws/x.sh"), ("uniq - y.sh", "/ws/y.sh")] {
            assert_eq!(
                d.judge(
                    write,
                    &Frame {
                        fresh: &[],
                        cwd: "/ws"
                    }
                )
                .wrote,
                [file]
            );
        }
        // Another directory's x.sh is not that file.
        let j = d.judge(
            "bash x.sh",
            &Frame {
                fresh: &first.wrote,
                cwd: "/tmp",
            },
        );
        assert!(j.detection.is_safe(), "{j:?}");
        // cd is followed into the next input.
        let j = d.judge(
            "mkdir -p sub && cd sub",
            &Frame {
                fresh: &[],
                cwd: "/ws",
            },
        );
        assert_eq!(j.cwd, "/ws/sub");
    }

    #[test]
    fn incomplete_shell_input_is_recognised() {
        let d = Detector::default();
        for text in [
            "for f in a b; do\n",
            "echo 'open\n",
            "cat <<EOF\nhello\n",
            "ls |\n",
            "ls &&\n",
            "r\\\n",
            "if true; then\n  echo x\n",
        ] {
            assert!(d.shell_needs_more(text), "{text:?}");
        }
        for text in [
            "ls\n",
            "for f in a b; do echo $f; done\n",
            "cat <<EOF\nhello\nEOF\n",
            "echo 'a\\\\'\n",
            "echo x \\\\\n",
            ")\n",
            "",
        ] {
            assert!(!d.shell_needs_more(text), "{text:?}");
        }
    }

    fn tier(text: &str, readers: &[Reader], pty: bool) -> Tier {
        Detector::default()
            .judge_input(text, readers, pty, &Frame::default())
            .detection
            .tier
    }

    #[test]
    fn input_is_judged_in_its_readers_language() {
        let py = [Reader::Code(CodeLang::Python)];
        let node = [Reader::Code(CodeLang::Node)];
        let sql = [Reader::Sql];
        let unknown = [Reader::Unknown];
        let unread = [Reader::Code(CodeLang::Unread)];
        let ish = [Reader::Shell {
            bash: true,
            interactive: true,
        }];
        let dash = [Reader::Shell {
            bash: false,
            interactive: false,
        }];
        let cases: &[(&str, &[Reader], bool, Tier, &str)] = &[
            ("ls -la\n", &[BASH], false, Tier::Safe, "a safe command"),
            ("rm -rf victim\n", &[BASH], false, Tier::Dangerous, "rm -rf"),
            (
                "for f in *; do\nrm -rf \"$f\"\ndone\n",
                &[BASH],
                false,
                Tier::Dangerous,
                "a loop, whole",
            ),
            ("print(1+1)\n", &py, false, Tier::Safe, "plain Python"),
            (
                "import shutil; shutil.rmtree('v')\n",
                &py,
                false,
                Tier::Dangerous,
                "shutil",
            ),
            (
                "x = __imp\\\nort__('os')\n",
                &py,
                false,
                Tier::Dangerous,
                "a continued name",
            ),
            (
                "help()\n",
                &py,
                false,
                Tier::Dangerous,
                "help's pager runs !cmd",
            ),
            (
                "().__class__.__base__.__subclasses__()\n",
                &py,
                false,
                Tier::Dangerous,
                "reflection",
            ),
            (
                "!rm -rf v\n",
                &py,
                false,
                Tier::Dangerous,
                "IPython's shell escape",
            ),
            (
                "import pathlib; pathlib.Path('v').rename('w')\n",
                &py,
                false,
                Tier::Dangerous,
                "a rename",
            ),
            (
                "import tarfile; tarfile.open('a.tgz').extractall('/')\n",
                &py,
                false,
                Tier::Dangerous,
                "unpacked anywhere",
            ),
            (
                "process.dlopen(module, './x.node')\n",
                &node,
                false,
                Tier::Dangerous,
                "native code",
            ),
            (
                "rmdir 'v'\n",
                &[Reader::Code(CodeLang::Perl)],
                false,
                Tier::Dangerous,
                "Perl's rmdir",
            ),
            ("console.log(1+1)\n", &node, false, Tier::Safe, "plain JS"),
            (
                "process.mainModule.require('child_'+'process')\n",
                &node,
                false,
                Tier::Dangerous,
                "require",
            ),
            (
                "SELECT count(*) FROM users;\n",
                &sql,
                false,
                Tier::Safe,
                "a query",
            ),
            (".tables\n", &sql, false, Tier::Safe, "a listing"),
            ("DROP TABLE users;\n", &sql, false, Tier::Dangerous, "DROP"),
            (
                ".shell rm -rf v\n",
                &sql,
                false,
                Tier::Dangerous,
                "sqlite's shell",
            ),
            (
                "\\! rm -rf v\n",
                &sql,
                false,
                Tier::Dangerous,
                "psql's shell",
            ),
            (
                "COPY t FROM PROGRAM 'id';\n",
                &sql,
                false,
                Tier::Dangerous,
                "COPY … PROGRAM",
            ),
            ("hello world\n", &unknown, false, Tier::Safe, "plain words"),
            (
                "it's\n",
                &unknown,
                false,
                Tier::Dangerous,
                "not a complete command",
            ),
            (
                ":!rm -rf v\n",
                &unknown,
                false,
                Tier::Dangerous,
                "a vi shell escape",
            ),
            (
                "system \"rm -rf v\"\n",
                &unknown,
                false,
                Tier::Dangerous,
                "Perl read by an eval: harmless as shell",
            ),
            ("hello world\n", &unknown, false, Tier::Safe, "words"),
            (
                "echo a\n\trm -rf v\n",
                &unknown,
                false,
                Tier::Dangerous,
                "each line alone",
            ),
            (
                "!!\n",
                &ish,
                false,
                Tier::Dangerous,
                "history: an earlier command",
            ),
            (
                "echo done!\n",
                &ish,
                false,
                Tier::Safe,
                "a ! at the end expands nothing",
            ),
            (
                "ls\tx\n",
                &[BASH],
                true,
                Tier::Dangerous,
                "a tab completes on a terminal",
            ),
            (
                "ls\r",
                &[BASH],
                true,
                Tier::Safe,
                "CR ends a line on a terminal",
            ),
            (
                "echo $'a\\' ; rm -rf v ; echo \\''\n",
                &dash,
                false,
                Tier::Dangerous,
                "sh reads $'…' otherwise",
            ),
            ("anything at all\n", &[], false, Tier::Safe, "data"),
            (
                "alias q=rm\n",
                &[BASH],
                false,
                Tier::Dangerous,
                "`q -rf v` later is rm",
            ),
            (
                "echo x; builtin alias q=rm\n",
                &[BASH],
                false,
                Tier::Dangerous,
                "wrapped",
            ),
            ("alias\n", &[BASH], false, Tier::Safe, "a listing"),
            (
                "bind '\"q\":\"rm -rf v\\C-m\"'\n",
                &ish,
                false,
                Tier::Dangerous,
                "a key macro",
            ),
            (
                "exec 0<x.sh\n",
                &[BASH],
                false,
                Tier::Dangerous,
                "reads x.sh from now on",
            ),
            (
                "exec 2>err.log\n",
                &[BASH],
                false,
                Tier::Safe,
                "only stderr moves",
            ),
            (
                "shell rm -rf v\n",
                &unread,
                false,
                Tier::Dangerous,
                "gdb's shell: not read",
            ),
            (
                "info registers\n",
                &unread,
                false,
                Tier::Dangerous,
                "nothing is read",
            ),
            ("\n", &unread, false, Tier::Safe, "an empty line"),
        ];
        for (text, readers, pty, expected, why) in cases {
            assert_eq!(tier(text, readers, *pty), *expected, "{text:?}: {why}");
        }
    }

    #[test]
    fn a_python_import_of_a_module_the_session_wrote_is_fresh() {
        let d = Detector::default();
        let wrote = d.judge(
            "printf 'import os' > evil.py",
            &Frame {
                fresh: &[],
                cwd: "/ws",
            },
        );
        let frame = Frame {
            fresh: &wrote.wrote,
            cwd: "/ws",
        };
        let py = [Reader::Code(CodeLang::Python)];
        let j = d.judge_input("import evil\n", &py, false, &frame);
        assert_eq!(j.detection.rule_ids(), [RuleId::FreshFile]);
        let j = d.judge_input("import json\n", &py, false, &frame);
        assert!(j.detection.is_safe());
    }

    #[test]
    fn a_shell_statement_reports_the_readers_it_starts() {
        let d = Detector::default();
        let j = d.judge_input("python3\n", &[BASH], false, &Frame::default());
        assert!(j.detection.is_safe());
        assert_eq!(j.readers, [Reader::Code(CodeLang::Python)]);
    }
}
