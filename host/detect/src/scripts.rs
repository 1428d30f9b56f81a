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
use super::script_run::{RawScript, ScriptForm, ScriptLang};
use super::walk::Analyzer;

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
            built: form == ScriptForm::Path && self.compiled(&canonical),
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

    /// True when a compiler among the commands analyzed so far writes `path` (a
    /// program's word, `..`-free, as written) in the directory the input started in,
    /// with no `cd` between: `cc -o m m.c && ./m`, `gcc m.c && ./a.out`.
    fn compiled(&self, path: &str) -> bool {
        if path.split('/').any(|c| c == "..") {
            return false;
        }
        let target = self.resolve(path);
        let mut built = false;
        for rendered in &self.commands {
            let mut words = rendered.split_whitespace();
            let Some(program) = words.next() else {
                continue;
            };
            let program = program.rsplit('/').next().unwrap_or(program);
            if matches!(program, "cd" | "pushd" | "popd") {
                return false;
            }
            if let Some(out) = compiler_output(program, words)
                && !out.split('/').any(|c| c == "..")
                && self.resolve(&out) == target
            {
                built = true;
            }
        }
        built
    }

    /// A function called `name` is defined. Named after a program or builtin that a
    /// script's judged text is handed to ([`shadows_a_handler`]), it replaces that
    /// program for the rest of the shell (and in child shells, once exported).
    pub(crate) fn note_function(&mut self, name: &str) {
        if shadows_a_handler(name) {
            self.hit(RuleId::ShadowCommand, &format!("{name}() {{ … }}"));
        }
    }

    /// The simple command `rendered` (as the walk renders it) defines an alias named
    /// after such a program, or binds names through bash's own tables: `BASH_CMDS`
    /// (a name to a program path, as `hash -p`), `BASH_ALIASES`, or an exported
    /// function in the environment (`BASH_FUNC_NAME%%`, which every child bash
    /// imports).
    pub(crate) fn note_shadowing(&mut self, rendered: &str) {
        if ["BASH_CMDS", "BASH_ALIASES", "BASH_FUNC_"]
            .iter()
            .any(|t| rendered.contains(t))
        {
            self.hit(RuleId::ShadowCommand, rendered);
            return;
        }
        let mut words = rendered
            .split_whitespace()
            .skip_while(|w| matches!(*w, "builtin" | "command" | "-p" | "--" | "\\builtin"));
        if words.next() == Some("alias")
            && words.any(|w| {
                w.split_once('=').is_some_and(|(name, _)| {
                    shadows_a_handler(name.trim_matches(['\'', '"', '\\']))
                })
            })
        {
            self.hit(RuleId::ShadowCommand, rendered);
        }
    }
}

/// The file a compiler called `program` with arguments `args` (as rendered) links: its
/// `-o` value, or `a.out` for a C compiler told neither `-o` nor to stop before
/// linking (`-c`, `-S`, `-E`, `-M…`). `None` for anything else.
fn compiler_output<'a>(program: &str, mut args: impl Iterator<Item = &'a str>) -> Option<String> {
    let c = matches!(
        program,
        "cc" | "c++" | "gcc" | "g++" | "clang" | "clang++" | "tcc"
    ) || ["gcc-", "g++-", "clang-", "clang++-"].iter().any(|p| {
        program
            .strip_prefix(p)
            .is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
    });
    let rustc = program == "rustc";
    if !c && !rustc {
        return None;
    }
    let mut linked = true;
    while let Some(arg) = args.next() {
        if arg == "-o" {
            return args.next().map(str::to_owned);
        }
        if let Some(out) = arg.strip_prefix("-o").filter(|o| !o.is_empty() && c) {
            return Some(out.to_owned());
        }
        if c && (matches!(arg, "-c" | "-S" | "-E") || arg.starts_with("-M")) {
            linked = false;
        }
    }
    (c && linked).then(|| "a.out".to_owned())
}

/// Builtins and wrappers a script's judged text is handed through (the terminal's
/// pinner writes `<(\builtin printf %s '…')`, `\command -p sh -c -- '…'`), or that
/// stand before the shell that gets it (`env A=1 sh x.sh`, `xargs sh x.sh`).
const HANDLERS: &[&str] = &[
    "printf", "builtin", "command", "exec", "eval", "source", ".", "enable", "env", "xargs",
    "timeout", "nice", "nohup", "sudo", "doas", "stdbuf", "time", "setsid", "chrt", "ionice",
    "taskset", "unbuffer", "flock", "watch", "strace", "ltrace", "busybox",
];

/// True when a function or alias called `name` would replace something a pinned
/// script run calls: a handler above, a shell or interpreter, or any path (bash
/// looks functions up before the file system even for `/bin/sh`).
pub(crate) fn shadows_a_handler(name: &str) -> bool {
    name.contains('/')
        || HANDLERS.contains(&name)
        || code::SHELLS.contains(&name)
        || code::language(name).is_some()
}

impl Detector {
    /// Judges `text`, the contents of a script file, in its language `lang`, in the
    /// session's `frame` (`cwd`: where the script starts): a shell script as a
    /// command line of that shell (the result reports what it writes and the scripts
    /// it runs in turn, as [`judge`](Self::judge) does); a program of another language
    /// as its `-c`/`-e` code is judged, by the capabilities it names (and a Python
    /// import of a module the session wrote is a fresh file). Give
    /// [`ScriptLang::Shebang`] resolved with [`interpreter_of`](crate::script_run::interpreter_of): as it is, nothing
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
        // perl hands a file whose #! line names neither perl nor indir to that
        // program (`perl x.pl` with `#!/bin/sh` runs sh): not Perl.
        let first_line = text.split('\n').next().unwrap_or_default();
        if lang == CodeLang::Perl
            && first_line.starts_with("#!")
            && !first_line.contains("perl")
            && !first_line.contains("indir")
        {
            hit(
                RuleId::Unparseable,
                "(a Perl script whose #! line names another program, which perl runs on it)",
            );
        }
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
    use super::super::script_run::{Interpreter, ScriptRun, interpreter_of};
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
        // perl hands a file whose #! line names another program to that program.
        let perl = ScriptLang::Code {
            lang: CodeLang::Perl,
        };
        assert_eq!(tier("#!/bin/sh\necho hi\n", perl), Tier::Dangerous);
        assert_eq!(tier("#!/usr/bin/perl -w\nprint 1;\n", perl), Tier::Safe);
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

    #[test]
    fn a_run_keeps_its_word_and_knows_what_a_compiler_built() {
        let r = runs("sh link/../x.sh", "/ws");
        assert_eq!(
            (r[0].path.as_str(), r[0].word.as_str()),
            ("/ws/x.sh", "link/../x.sh")
        );
        let built = |command: &str| {
            runs(command, "/ws")
                .iter()
                .map(|r| r.built)
                .collect::<Vec<_>>()
        };
        assert_eq!(built("cc -o m m.c && ./m"), [true]);
        assert_eq!(built("gcc -O2 m.c && ./a.out"), [true]);
        assert_eq!(built("gcc -c m.c && ./a.out"), [false], "not linked");
        assert_eq!(built("tar xf a.tar && ./m"), [false]);
        assert_eq!(built("cd sub && cc -o m m.c && cd .. && ./m"), [false]);
        assert_eq!(built("./m; cc -o m m.c"), [false], "built after it runs");
        assert_eq!(built("cc -o ../m m.c && ../m"), [false]);
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
