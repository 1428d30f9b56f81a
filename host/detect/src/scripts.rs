//! Scripts a command runs from files: `sh x.sh`, `. ./env.sh`, `sh < x.sh`, `./x`,
//! `python3 x.py`. The command line names the file; what runs is its contents, which
//! only the host can read (as the command will see it). So [`Detector::judge`]
//! reports every such run ([`Judged::scripts`](super::Judged::scripts)): where the
//! file is, in which language it is read, how it is run, and where its name stands in
//! the judged text, so that the host can read it, judge it
//! ([`Detector::judge_script`]) and hand the command the judged bytes in place of the
//! file.
//!
//! A run is reported where the command names its file with a word whose value is
//! known (a dynamic name is `exec.dynamic_code` already, and nothing to read); a file
//! the same input writes first is `exec.fresh_file` already, and not reported (its
//! contents are not written yet).

use super::code::{self, Lang};
use super::detector::{Detector, detection, finding_rule};
use super::fold::Field;
use super::input::{Frame, Judged};
use super::limits::MAX_SCRIPTS;
use super::normalize::normalize;
use super::reader::{CodeLang, Reader};
use super::rules::RuleId;
use super::walk::Analyzer;
use serde::Serialize;
use std::ops::Range;

/// A script file a command runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScriptRun {
    /// The file, resolved like the files a command writes: absolute from the frame's
    /// `cwd` across the command's `cd`s (or starting with `~` or `$` when only known
    /// at run time).
    pub path: String,
    /// The language it is read in.
    pub lang: ScriptLang,
    /// How it is run.
    pub form: ScriptForm,
    /// The bytes of the judged text that name the file: a literal word of that text
    /// itself (not of a carrier's payload such as `bash -c '…'`, nor of a command
    /// substitution), standing where other words may replace it (not after `--`).
    /// `None`: the run cannot be pinned to the judged bytes where it is written.
    pub span: Option<Range<usize>>,
    /// The directory it starts in (as [`Frame::cwd`]): its own relative paths are
    /// read from there.
    pub cwd: String,
}

/// The language a script file is read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ScriptLang {
    /// A shell reads it (`sh x.sh`, `. x.sh`, a `#!/bin/sh` line).
    Shell {
        /// The shell is bash (whose syntax the detector parses).
        bash: bool,
    },
    /// An interpreter reads it (`python3 x.py`, `node x.js`).
    Code {
        /// Its language.
        lang: CodeLang,
    },
    /// It is run by its path (`./x`, `/ws/x`, `exec ./x`): its `#!` line says what
    /// reads it ([`interpreter_of`]), or it is a program.
    Shebang,
}

/// How a script file is run: where the command names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptForm {
    /// An operand of the shell or interpreter that reads it, which is the word before
    /// it or a few words before (`bash -e x.sh a b`, `python3 -u x.py`).
    Operand,
    /// The command's program itself (`./x a b`, `exec ./x`, `xargs ./x`).
    Path,
    /// Read by the shell running the command (`. x.sh`, `source x.sh`).
    Source,
    /// A redirection of the standard input of the shell or interpreter that reads it
    /// (`sh < x.sh`, `bash -s < x.sh`).
    Stdin,
}

/// What a script's first line says runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Interpreter {
    /// A `#!` line: the program and its one argument (Linux passes everything after
    /// the program as one word), and the language that program reads (`None`: one
    /// the detector cannot judge, such as `make -f` or `awk -f`).
    Shebang {
        /// The program.
        program: String,
        /// Its argument.
        arg: Option<String>,
        /// What it reads.
        lang: Option<ScriptLang>,
    },
    /// No `#!` line: the shell that runs it reads it.
    Shell,
}

/// A run as the walk finds it (character offsets, before the command text is known).
#[derive(Debug, Clone)]
pub(crate) struct RawScript {
    /// The word as folded (what the span must spell).
    operand: String,
    path: String,
    lang: ScriptLang,
    form: ScriptForm,
    /// Character offsets in the text the detector was given.
    span: Option<(usize, usize)>,
    cwd: String,
    /// It was found where a span could be known (the judged text itself, a word that
    /// may be replaced), but its word came without a location (the plain-command
    /// shortcut builds words without them).
    wants_span: bool,
}

impl Analyzer<'_> {
    /// A file `script` names is run as `lang`, `form`; `pinnable`: its word may be
    /// replaced by others where it stands. Recorded when the analysis collects
    /// scripts (see [`Detector::judge`]).
    pub(crate) fn note_script(
        &mut self,
        script: &Field,
        lang: ScriptLang,
        form: ScriptForm,
        pinnable: bool,
    ) {
        // A name ending in `/` is a directory: nothing runs it.
        if !self.collect_scripts
            || script.dynamic
            || script.text.is_empty()
            || script.text.ends_with('/')
        {
            return;
        }
        let canonical = super::paths::canonical(&script.text);
        // Written by this same input before it runs: its contents are not there yet
        // (and running it is `exec.fresh_file`).
        if self.is_fresh_here(&canonical) {
            return;
        }
        if self.scripts.len() >= MAX_SCRIPTS {
            self.hit(RuleId::TooLarge, "(more scripts than the gate reads)");
            return;
        }
        let pinnable = pinnable && !script.glob;
        let span = if pinnable { script.span } else { None };
        let raw = RawScript {
            operand: script.text.clone(),
            path: self.resolve(&canonical),
            lang,
            form,
            span,
            cwd: self.cwd().to_owned(),
            wants_span: pinnable && span.is_none() && self.locating(),
        };
        let known = self.scripts.iter().any(|s| {
            s.span == raw.span && s.path == raw.path && s.form == raw.form && s.lang == raw.lang
        });
        if !known {
            self.scripts.push(raw);
        }
    }

    /// True when `path` was written earlier in this same input (not by an earlier
    /// input of the session).
    fn is_fresh_here(&self, path: &str) -> bool {
        self.is_fresh_in(path, false)
    }
}

/// True when some script of `scripts` wanted a location it did not get: the text is
/// analyzed again without the plain-command shortcut, whose words have none.
pub(crate) fn want_locations(scripts: &[RawScript]) -> bool {
    scripts.iter().any(|s| s.wants_span)
}

/// The runs of `scripts` with byte spans in `text` (the text the detector was
/// given, unchanged by normalization): a span is kept only where `text` spells the
/// word the walk folded there, plainly or as one quoted string.
pub(crate) fn located(text: &str, scripts: Vec<RawScript>) -> Vec<ScriptRun> {
    // Character offsets to byte offsets, for the few offsets asked (one pass).
    let mut wanted: Vec<usize> = scripts
        .iter()
        .filter_map(|s| s.span)
        .flat_map(|(a, b)| [a, b])
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut bytes_at: Vec<(usize, usize)> = Vec::with_capacity(wanted.len());
    let mut next = wanted.iter().peekable();
    for (chars, (byte, _)) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
        .enumerate()
    {
        while next.peek().is_some_and(|w| **w == chars) {
            bytes_at.push((chars, byte));
            next.next();
        }
        if next.peek().is_none() {
            break;
        }
    }
    let byte = |c: usize| bytes_at.iter().find(|(k, _)| *k == c).map(|(_, b)| *b);
    scripts
        .into_iter()
        .map(|s| {
            let span = s
                .span
                .and_then(|(a, b)| Some(byte(a)?..byte(b)?))
                .filter(|r| text.get(r.clone()).is_some_and(|w| spells(w, &s.operand)));
            ScriptRun {
                path: s.path,
                lang: s.lang,
                form: s.form,
                span,
                cwd: s.cwd,
            }
        })
        .collect()
}

/// True when the shell word `raw` is `value` written plainly (nothing in it a shell
/// expands or unquotes) or as one quoted string.
fn spells(raw: &str, value: &str) -> bool {
    let plain = !raw.is_empty()
        && !raw.bytes().any(|b| {
            b.is_ascii_whitespace()
                || matches!(
                    b,
                    b'$' | b'`'
                        | b'\''
                        | b'"'
                        | b'\\'
                        | b'~'
                        | b'*'
                        | b'?'
                        | b'['
                        | b'{'
                        | b'|'
                        | b'&'
                        | b';'
                        | b'<'
                        | b'>'
                        | b'('
                        | b')'
                        | b'#'
                        | b'!'
                )
        });
    (plain && raw == value) || super::walk::quoted_literal(raw) == Some(value)
}

/// The interpreter `text`'s first line names, as the kernel reads a `#!` line: the
/// program, then everything after it (trimmed) as one argument. `#!/usr/bin/env
/// python3` reads Python: for `env`, the first word of the argument that is not an
/// option or an assignment is the program that reads the file.
///
/// ```
/// use hermetic_detect::{CodeLang, Interpreter, ScriptLang, interpreter_of};
/// let Interpreter::Shebang { program, lang, .. } = interpreter_of("#!/usr/bin/env python3\nprint(1)\n")
/// else { panic!() };
/// assert_eq!(program, "/usr/bin/env");
/// assert_eq!(lang, Some(ScriptLang::Code { lang: CodeLang::Python }));
/// assert_eq!(interpreter_of("echo hi\n"), Interpreter::Shell);
/// ```
pub fn interpreter_of(text: &str) -> Interpreter {
    let Some(rest) = text.strip_prefix("#!") else {
        return Interpreter::Shell;
    };
    let line = rest.split('\n').next().unwrap_or("").trim();
    let (program, arg) = match line.split_once([' ', '\t']) {
        Some((p, a)) => (p, Some(a.trim()).filter(|a| !a.is_empty())),
        None => (line, None),
    };
    let base = program.rsplit('/').next().unwrap_or(program);
    let reader = if base == "env" {
        arg.and_then(|a| {
            a.split_whitespace()
                .find(|w| !w.starts_with('-') && !w.contains('='))
        })
        .map(|w| w.rsplit('/').next().unwrap_or(w))
    } else {
        Some(base)
    };
    Interpreter::Shebang {
        program: program.to_owned(),
        arg: arg.map(str::to_owned),
        lang: reader.and_then(lang_of_program),
    }
}

/// The language the program called `name` reads a script file in.
pub(crate) fn lang_of_program(name: &str) -> Option<ScriptLang> {
    if code::SHELLS.contains(&name) {
        return Some(ScriptLang::Shell {
            bash: matches!(name, "bash" | "rbash"),
        });
    }
    let lang = match code::language(name)? {
        Lang::Python => CodeLang::Python,
        // bun and deno read JavaScript too, but run it their own way.
        Lang::Node if matches!(name, "node" | "nodejs") => CodeLang::Node,
        Lang::Node => CodeLang::Other,
        Lang::Perl => CodeLang::Perl,
        Lang::Ruby => CodeLang::Ruby,
        Lang::Php => CodeLang::Php,
        Lang::Generic => CodeLang::Other,
        // awk's program operand is its code, not a file (`awk -f` is not read).
        Lang::Awk => return None,
    };
    Some(ScriptLang::Code { lang })
}

impl Detector {
    /// Judges `text`, the contents of a script file, in its language `lang`, in the
    /// session's `frame` (`cwd`: where the script starts): a shell script as a
    /// command line of that shell (the result reports what it writes and the scripts
    /// it runs in turn, as [`judge`](Self::judge) does); a program of another language
    /// as its `-c`/`-e` code is judged, by the capabilities it names (and a Python
    /// import of a module the session wrote is a fresh file). Give
    /// [`ScriptLang::Shebang`] resolved with [`interpreter_of`]: as it is, nothing
    /// says what reads the text, and the text is unparseable.
    ///
    /// ```
    /// use hermetic_detect::{CodeLang, Detector, Frame, ScriptLang};
    /// let detector = Detector::default();
    /// let frame = Frame { fresh: &[], cwd: "/ws" };
    /// let shell = ScriptLang::Shell { bash: true };
    /// assert!(detector.judge_script("make -j4\n", shell, &frame).detection.is_safe());
    /// assert!(!detector.judge_script("rm -rf victim\n", shell, &frame).detection.is_safe());
    /// let python = ScriptLang::Code { lang: CodeLang::Python };
    /// assert!(!detector.judge_script("import shutil\nshutil.rmtree('v')\n", python, &frame).detection.is_safe());
    /// ```
    pub fn judge_script(&self, text: &str, lang: ScriptLang, frame: &Frame<'_>) -> Judged {
        match lang {
            ScriptLang::Shell { bash } => self.judge_input(
                text,
                &[Reader::Shell {
                    bash,
                    interactive: false,
                }],
                false,
                frame,
            ),
            ScriptLang::Code { lang } => self.judge_code_file(text, lang, frame),
            ScriptLang::Shebang => Judged {
                detection: detection(
                    vec![super::walk::RawHit {
                        rule: RuleId::Unparseable,
                        command: "(a script whose interpreter is not known)".to_owned(),
                    }],
                    Vec::new(),
                ),
                wrote: Vec::new(),
                cwd: frame.cwd.to_owned(),
                readers: Vec::new(),
                scripts: Vec::new(),
            },
        }
    }

    /// A program file of another language: its capabilities, as `-c` code is judged.
    fn judge_code_file(&self, text: &str, lang: CodeLang, frame: &Frame<'_>) -> Judged {
        let normalized = normalize(text);
        let mut hits = Vec::new();
        let mut hit = |rule: RuleId, command: &str| {
            if !hits
                .iter()
                .any(|h: &super::walk::RawHit| h.rule == rule && h.command == command)
            {
                hits.push(super::walk::RawHit {
                    rule,
                    command: command.to_owned(),
                });
            }
        };
        for finding in &normalized.findings {
            hit(finding_rule(*finding), "(the script's text)");
        }
        let code = normalized.text.as_ref();
        if text.len() > super::limits::MAX_INPUT_BYTES {
            hit(RuleId::TooLarge, "(the script's text)");
        }
        let inner = match lang {
            CodeLang::Python => Some(Lang::Python),
            CodeLang::Node => Some(Lang::Node),
            CodeLang::Perl => Some(Lang::Perl),
            CodeLang::Ruby => Some(Lang::Ruby),
            CodeLang::Php => Some(Lang::Php),
            CodeLang::Other => Some(Lang::Generic),
            CodeLang::Unread => None,
        };
        match inner {
            None => hit(RuleId::Unparseable, "(a script in a language not read)"),
            Some(inner) => {
                // Python and JavaScript continue a line after `\`.
                let joined = code.replace("\\\n", "");
                for (needle_text, shown) in [(code, code), (joined.as_str(), code)] {
                    if code::is_risky(inner, needle_text) {
                        hit(RuleId::InterpreterCode, first_line_with_risk(inner, shown));
                        break;
                    }
                }
                if lang == CodeLang::Python
                    && super::input::imports_fresh_module(self, &joined, frame)
                {
                    hit(RuleId::FreshFile, "(imports a module the session wrote)");
                }
            }
        }
        Judged {
            detection: detection(hits, Vec::new()),
            wrote: Vec::new(),
            cwd: frame.cwd.to_owned(),
            readers: Vec::new(),
            scripts: Vec::new(),
        }
    }
}

/// The first line of `code` that names a risky capability of `lang` (the whole code
/// when none does alone: the capability spans lines), to show in a prompt.
fn first_line_with_risk(lang: Lang, code: &str) -> &str {
    code.lines()
        .find(|l| code::is_risky(lang, l))
        .map_or(code, str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tier;

    fn runs(command: &str, cwd: &str) -> Vec<ScriptRun> {
        Detector::default()
            .judge(command, &Frame { fresh: &[], cwd })
            .scripts
    }

    fn spanned(command: &str) -> Vec<(String, ScriptLang, ScriptForm, Option<&str>)> {
        runs(command, "/ws")
            .into_iter()
            .map(|s| {
                let word = s.span.clone().map(|r| &command[r]);
                (s.path, s.lang, s.form, word)
            })
            .collect()
    }

    const BASH: ScriptLang = ScriptLang::Shell { bash: true };
    const SH: ScriptLang = ScriptLang::Shell { bash: false };
    const PY: ScriptLang = ScriptLang::Code {
        lang: CodeLang::Python,
    };

    #[test]
    fn every_way_to_run_a_script_file_is_reported_where_its_name_stands() {
        use ScriptForm::*;
        type Run<'a> = (&'a str, ScriptLang, ScriptForm, Option<&'a str>);
        let cases: &[(&str, &[Run<'_>])] = &[
            ("sh x.sh", &[("/ws/x.sh", SH, Operand, Some("x.sh"))]),
            (
                "bash -e ./x.sh a b",
                &[("/ws/x.sh", BASH, Operand, Some("./x.sh"))],
            ),
            (
                "dash 'my x.sh'",
                &[("/ws/my x.sh", SH, Operand, Some("'my x.sh'"))],
            ),
            ("zsh x.sh", &[("/ws/x.sh", SH, Operand, Some("x.sh"))]),
            (
                ". ./env.sh",
                &[("/ws/env.sh", BASH, Source, Some("./env.sh"))],
            ),
            (
                "source env.sh && make",
                &[("/ws/env.sh", BASH, Source, Some("env.sh"))],
            ),
            ("sh < x.sh", &[("/ws/x.sh", SH, Stdin, Some("x.sh"))]),
            ("bash -s < x.sh", &[("/ws/x.sh", BASH, Stdin, Some("x.sh"))]),
            ("./x", &[("/ws/x", ScriptLang::Shebang, Path, Some("./x"))]),
            (
                "exec ./x a",
                &[("/ws/x", ScriptLang::Shebang, Path, Some("./x"))],
            ),
            (
                "/tmp/x",
                &[("/tmp/x", ScriptLang::Shebang, Path, Some("/tmp/x"))],
            ),
            ("xargs sh x.sh", &[("/ws/x.sh", SH, Operand, Some("x.sh"))]),
            (
                "sudo -u nobody env A=1 nice timeout 5 bash x.sh",
                &[("/ws/x.sh", BASH, Operand, Some("x.sh"))],
            ),
            (
                "python3 -u x.py a",
                &[("/ws/x.py", PY, Operand, Some("x.py"))],
            ),
            (
                "node app.js",
                &[(
                    "/ws/app.js",
                    ScriptLang::Code {
                        lang: CodeLang::Node,
                    },
                    Operand,
                    Some("app.js"),
                )],
            ),
            (
                "perl x.pl",
                &[(
                    "/ws/x.pl",
                    ScriptLang::Code {
                        lang: CodeLang::Perl,
                    },
                    Operand,
                    Some("x.pl"),
                )],
            ),
            (
                "cd sub && sh x.sh",
                &[("/ws/sub/x.sh", SH, Operand, Some("x.sh"))],
            ),
            (
                "for i in 1 2; do sh x.sh; done",
                &[("/ws/x.sh", SH, Operand, Some("x.sh"))],
            ),
            (
                "f() { sh x.sh; }; f",
                &[("/ws/x.sh", SH, Operand, Some("x.sh"))],
            ),
            // Not pinnable where they stand: in a carrier's payload, after `--`, a glob.
            ("bash -c 'sh x.sh'", &[("/ws/x.sh", SH, Operand, None)]),
            ("echo $(sh x.sh)", &[("/ws/x.sh", SH, Operand, None)]),
            ("bash -- x.sh", &[("/ws/x.sh", BASH, Operand, None)]),
            ("sh *.sh", &[("/ws/*.sh", SH, Operand, None)]),
        ];
        for (command, expected) in cases {
            let expected: Vec<_> = expected
                .iter()
                .map(|(p, l, f, w)| ((*p).to_owned(), *l, *f, *w))
                .collect();
            assert_eq!(spanned(command), expected, "{command}");
        }
    }

    #[test]
    fn no_run_is_reported_for_what_is_not_a_script_file() {
        for command in [
            "ls -la",
            "bash",
            "bash -c 'ls'",
            "sh -s",
            "python3 -c 'print(1)'",
            "python3 -m http.server",
            "echo ./x",
            "make test",
            "sh $F",
            "bash <<'EOF'\nls\nEOF",
            // Written by the same line: exec.fresh_file, not read.
            "printf 'ls' > x.sh; sh x.sh",
        ] {
            assert_eq!(runs(command, "/ws"), vec![], "{command}");
        }
    }

    #[test]
    fn a_span_is_only_given_for_text_the_shell_reads_as_written() {
        // Normalization changed the text (a control character): no span.
        let r = runs("sh x.sh\u{7}", "/ws");
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].span, None);
        // Non-ASCII before the word: the span is in bytes.
        let command = "echo é && sh x.sh";
        let r = runs(command, "/ws");
        assert_eq!(r[0].span.clone().map(|s| &command[s]), Some("x.sh"));
    }

    #[test]
    fn shebang_lines_are_read_as_the_kernel_reads_them() {
        let lang = |t: &str| match interpreter_of(t) {
            Interpreter::Shebang { lang, .. } => lang,
            Interpreter::Shell => Some(ScriptLang::Shebang),
        };
        assert_eq!(lang("#!/bin/sh\n"), Some(SH));
        assert_eq!(lang("#!/bin/bash -eu\n"), Some(BASH));
        assert_eq!(lang("#!/usr/bin/env bash\n"), Some(BASH));
        assert_eq!(lang("#!/usr/bin/env -S python3 -u\n"), Some(PY));
        assert_eq!(lang("#! /usr/bin/python3\n"), Some(PY), "blanks before it");
        assert_eq!(lang("#!/usr/bin/make -f\n"), None);
        assert_eq!(lang("echo hi\n"), Some(ScriptLang::Shebang));
        assert_eq!(
            interpreter_of("#!/bin/bash -e -u\nx"),
            Interpreter::Shebang {
                program: "/bin/bash".into(),
                arg: Some("-e -u".into()),
                lang: Some(BASH),
            }
        );
    }

    #[test]
    fn script_contents_are_judged_in_their_language() {
        let d = Detector::default();
        let frame = Frame {
            fresh: &[],
            cwd: "/ws",
        };
        let tier = |t: &str, l: ScriptLang| d.judge_script(t, l, &frame).detection.tier;
        assert_eq!(tier("echo hi\nmake\n", BASH), Tier::Safe);
        assert_eq!(tier("rm -rf victim\n", SH), Tier::Dangerous);
        assert_eq!(tier("rm -rf /\n", SH), Tier::Hardline);
        assert_eq!(
            tier("echo $'a\\' ; rm -rf v ; echo \\''\n", SH),
            Tier::Dangerous
        );
        assert_eq!(tier("print(sum(range(3)))\n", PY), Tier::Safe);
        assert_eq!(
            tier("import shutil\nshutil.rmtree('victim')\n", PY),
            Tier::Dangerous
        );
        assert_eq!(tier("x = __imp\\\nort__('os')\n", PY), Tier::Dangerous);
        assert_eq!(tier("anything\n", ScriptLang::Shebang), Tier::Dangerous);
        // A script that runs another reports it, from its own directory.
        let j = d.judge_script(
            "cd lib && . ./more.sh\n",
            BASH,
            &Frame {
                fresh: &[],
                cwd: "/ws/sub",
            },
        );
        assert_eq!(j.scripts.len(), 1);
        assert_eq!(j.scripts[0].path, "/ws/sub/lib/more.sh");
        assert_eq!(j.scripts[0].cwd, "/ws/sub/lib");
        assert_eq!(
            j.scripts[0]
                .span
                .clone()
                .map(|r| &"cd lib && . ./more.sh\n"[r]),
            Some("./more.sh")
        );
    }

    /// Generated shell text around script runs: the judgement never panics, and every
    /// span it gives is a word of the text, on character boundaries, that spells the
    /// run's file as the shell reads it (a span is where the host rewrites the command).
    #[test]
    fn spans_on_generated_input_are_words_of_the_text() {
        const FRAGMENTS: &[&str] = &[
            "sh ",
            "bash -e ",
            ". ",
            "source ",
            "./",
            "exec ",
            "xargs ",
            "sudo ",
            "python3 ",
            "x.sh",
            "'a b.sh'",
            "\"c.sh\"",
            "d$x.sh",
            "*.sh",
            " ",
            " ",
            "\t",
            "\n",
            ";",
            "&&",
            "|",
            "<",
            "< ",
            "<<EOF\nsh x.sh\nEOF\n",
            "$(",
            ")",
            "`",
            "'",
            "\"",
            "\\\n",
            "é",
            "\u{200b}",
            "--",
            " -- ",
            "cd d && ",
            "{ ",
            " }",
            "( ",
            " )",
            "for i in 1; do ",
            "; done",
            "#",
            "=",
            "a=",
            "bash -c '",
            "\r",
        ];
        let d = Detector::default();
        let mut state: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..4000 {
            let len = 1 + (next() % 12) as usize;
            let text: String = (0..len)
                .map(|_| FRAGMENTS[(next() % FRAGMENTS.len() as u64) as usize])
                .collect();
            let judged = d.judge(
                &text,
                &Frame {
                    fresh: &[],
                    cwd: "/ws",
                },
            );
            for run in judged.scripts {
                let Some(span) = run.span else { continue };
                let word = text
                    .get(span.clone())
                    .unwrap_or_else(|| panic!("{text:?}: {span:?}"));
                // As the walk resolves a word: canonical, then from the directory.
                let unquoted = crate::paths::canonical(word.trim_matches(['\'', '"']));
                let from = if unquoted.starts_with('/') {
                    unquoted.into_owned()
                } else {
                    format!("{}/{unquoted}", run.cwd)
                };
                assert_eq!(
                    crate::paths::canonical(&from),
                    run.path.as_str(),
                    "{text:?}: {word:?}"
                );
            }
        }
    }
}
