//! What a script run is (the data [`Judged::scripts`](super::Judged::scripts) reports
//! and the walk records) and what reading a file's first line says runs it: a leaf the
//! walk, the carriers and the input judgement use, apart from `scripts.rs`, which adds
//! the analysis's recording and the detector's judgement of a file's text (and so
//! depends on them).

use super::code::{self, Lang};
use super::reader::CodeLang;
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
    /// The directory it starts in (as [`Frame::cwd`](crate::input::Frame::cwd)): its own relative paths are
    /// read from there.
    pub cwd: String,
    /// The word that names the file, as the shell hands it to the kernel (relative
    /// to `cwd` unless absolute): [`path`](Self::path) removes `..` as text, the
    /// kernel only after following the symlinks before it, so the file the command
    /// runs is the one this word opens from `cwd`.
    pub word: String,
    /// A program run by its path ([`ScriptForm::Path`]) that a compiler earlier in the
    /// same input writes (`cc -o m m.c && ./m`, `gcc m.c && ./a.out`), in the same
    /// directory: missing when the command is judged, it is a program the command
    /// builds, not a script.
    pub built: bool,
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
    pub(crate) operand: String,
    pub(crate) path: String,
    pub(crate) lang: ScriptLang,
    pub(crate) form: ScriptForm,
    /// Character offsets in the text the detector was given.
    pub(crate) span: Option<(usize, usize)>,
    pub(crate) cwd: String,
    /// A compiler earlier in the input writes it (see [`ScriptRun::built`]).
    pub(crate) built: bool,
    /// It was found where a span could be known (the judged text itself, a word that
    /// may be replaced), but its word came without a location (the plain-command
    /// shortcut builds words without them).
    pub(crate) wants_span: bool,
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
                word: s.operand,
                built: s.built,
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
    (plain && raw == value) || super::fold::quoted_literal(raw) == Some(value)
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
