//! Code carriers: shells, interpreters, PowerShell and tar hooks whose payload is code,
//! and what a command's output is made of (for `… | sh` and `$(…)`).

use super::code::{self, Lang};
use super::fold::{self, Field, Producer};
use super::paths::{self, canonical};
use super::rules::RuleId;
use super::script_run::{ScriptForm, ScriptLang};
use super::walk::{Analyzer, Cx, Invocation};

/// The language of the shell `inv` runs (its program's name).
fn shell_lang(inv: &Invocation<'_>) -> ScriptLang {
    let program = inv.argv.first().map_or("", |f| f.text.as_str());
    let name = program.rsplit('/').next().unwrap_or(program);
    ScriptLang::Shell {
        bash: matches!(name, "bash" | "rbash"),
    }
}

impl Analyzer<'_> {
    /// tar options whose value is a command tar runs.
    pub(crate) fn check_tar_payloads(&mut self, args: &[Field], inv: &Invocation<'_>) {
        let mut iter = args.iter();
        while let Some(a) = iter.next() {
            let t = a.text.as_str();
            let payload = if let Some(v) = t.strip_prefix("--checkpoint-action=") {
                v.strip_prefix("exec=").map(str::to_owned)
            } else if let Some(v) = [
                "--to-command=",
                "--use-compress-program=",
                "--info-script=",
                "--new-volume-script=",
                "--rsh-command=",
            ]
            .iter()
            .find_map(|p| t.strip_prefix(p))
            {
                Some(v.to_owned())
            } else if t == "-I" || t == "-F" || t == "--to-command" || t == "--use-compress-program"
            {
                iter.next().map(|f| f.text.clone())
            } else {
                None
            };
            if let Some(p) = payload {
                self.run_payload_text(&p, inv);
            }
        }
    }

    /// Runs a carrier payload given as text.
    ///
    /// Such payloads are options of another program (tar, vim, git): they do not read
    /// the command's stdin.
    pub(crate) fn run_payload_text(&mut self, text: &str, inv: &Invocation<'_>) {
        self.analyze_payload(text, (Producer::None, None), inv);
    }

    /// Analyzes carrier code one level deeper, with `stdin` as its input (and the file
    /// that is, when it is one).
    pub(crate) fn analyze_payload(
        &mut self,
        text: &str,
        (stdin, stdin_file): (Producer, Option<Field>),
        inv: &Invocation<'_>,
    ) {
        let cx = Cx {
            depth: inv.depth + 1,
            stdin,
            bulk: inv.bulk,
            function: None,
            stdin_file,
        };
        let first = self.commands_seen() + 1;
        let summary = self.analyze_code(text, &cx);
        // A payload that is only a shell (`sh`, `/bin/bash -i`): the carrier hands
        // over an interactive shell, the classic escape through tar, vim, git or ssh
        // options. The parser says what the payload's commands are; no second
        // tokenizer splits it.
        if summary.commands == 1 && self.bare_shell_at == first {
            self.hit(RuleId::ShellEscape, inv.rendered);
        }
    }

    pub(crate) fn check_shell(&mut self, args: &[Field], inv: &Invocation<'_>) {
        let mut command_mode = false;
        let mut stdin_mode = false;
        // Options ended by `--` or `-`: nothing may stand before the script's name.
        let mut ended = false;
        let mut i = 0;
        while i < args.len() {
            let a = args[i].text.as_str();
            if a == "--" || a == "-" {
                ended = true;
                i += 1;
                break;
            }
            if matches!(a, "--rcfile" | "--init-file") {
                // bash sources it before it reads a command (when interactive, as a
                // background shell on a terminal is): a script run, named where the
                // judged text cannot be handed to it.
                if let Some(rc) = args.get(i + 1) {
                    self.check_script(rc, inv);
                    self.note_script(
                        rc,
                        ScriptLang::Shell { bash: true },
                        ScriptForm::Source,
                        false,
                    );
                }
                i += 2;
                continue;
            }
            if a.starts_with("--") {
                i += 1;
                continue;
            }
            if (a.starts_with('-') || a.starts_with('+')) && a.len() > 1 {
                let cluster = &a[1..];
                command_mode |= cluster.contains('c');
                stdin_mode |= cluster.contains('s');
                if cluster.contains('o') || cluster.contains('O') {
                    i += 1;
                }
                i += 1;
                continue;
            }
            break;
        }
        let operands = args.get(i..).unwrap_or(&[]);
        if command_mode {
            if let Some(code) = operands.first() {
                // `xargs -I{} sh -c {}`, `find -exec sh -c {}`: each item becomes
                // the code.
                if inv.bulk && code.text.contains("{}") {
                    self.hit(RuleId::DynamicCode, inv.rendered);
                }
                self.run_payload(code, inv);
            }
            return;
        }
        let lang = shell_lang(inv);
        if !stdin_mode && let Some(script) = operands.first() {
            self.check_script(script, inv);
            self.note_script(script, lang, ScriptForm::Operand, !ended);
            return;
        }
        if let (Producer::None, Some(file)) = (inv.stdin, inv.stdin_file) {
            self.note_script(file, lang, ScriptForm::Stdin, file.span.is_some());
        }
        self.check_stdin_code(None, inv);
    }

    /// A shell (`lang` None) or interpreter reading its program from stdin.
    pub(crate) fn check_stdin_code(&mut self, lang: Option<Lang>, inv: &Invocation<'_>) {
        let r = inv.rendered;
        match inv.stdin {
            Producer::None => {}
            Producer::Network => self.hit(RuleId::RemoteCode, r),
            Producer::Decoder => self.hit(RuleId::DecodedCode, r),
            Producer::Literal(text) => match lang {
                None => {
                    self.hit(RuleId::ShellStdin, r);
                    let text = text.clone();
                    self.run_payload_text(&text, inv);
                }
                Some(lang) => {
                    if code::is_risky(lang, text) {
                        self.hit(RuleId::InterpreterCode, r);
                    }
                }
            },
            Producer::Credentials | Producer::Other => match lang {
                None => self.hit(RuleId::ShellStdin, r),
                Some(_) => self.hit(RuleId::DynamicCode, r),
            },
        }
    }

    /// An interpreter: its inline code (`-c`, `-e`, `--eval`) is scanned for risky
    /// capabilities; a script operand or stdin is code we cannot see.
    pub(crate) fn check_interpreter(
        &mut self,
        name: &str,
        lang: Lang,
        args: &[Field],
        inv: &Invocation<'_>,
    ) {
        let r = inv.rendered;
        // deno/bun subcommands: `deno eval CODE`, `deno run URL`.
        let read = match (name, args.first().map(|a| a.text.as_str())) {
            ("deno" | "bun", Some("eval")) => Inline {
                code: args.get(1).cloned(),
                start: args.len(),
                ..Inline::default()
            },
            ("deno" | "bun", Some("run" | "x")) => {
                if args
                    .iter()
                    .skip(1)
                    .any(|a| a.text.starts_with("http://") || a.text.starts_with("https://"))
                {
                    self.hit(RuleId::RemoteCode, r);
                }
                return;
            }
            _ => read_options(lang, args),
        };
        self.check_preloads(lang, &read, inv);
        if read.module {
            // `python3 -m MODULE args`: the module's own arguments follow it.
            let rest = args.get(read.start..).unwrap_or(&[]);
            self.check_python_module(read.module_name.as_ref(), rest, inv);
            return;
        }
        let operands = args.get(read.start..).unwrap_or(&[]);
        match &read.code {
            Some(code) => {
                if code.dynamic {
                    self.hit(Self::unseen_code_rule(&code.origin), r);
                } else if code::is_risky(lang, &code.text) {
                    self.hit(RuleId::InterpreterCode, r);
                }
                // `python3 -c "import x"`: a module the session wrote runs.
                if lang == Lang::Python && !code.dynamic {
                    let imports = super::input::python_imports(&code.text);
                    self.check_fresh_modules(imports, inv);
                }
            }
            None if lang == Lang::Awk => {
                // awk's program is its first operand (unless -f gave a file).
                if !args
                    .iter()
                    .any(|a| a.text == "-f" || a.text.starts_with("--file"))
                    && let Some(program) = operands.first()
                    && (program.dynamic || code::is_risky(lang, &program.text))
                {
                    self.hit(RuleId::InterpreterCode, r);
                }
            }
            None => {
                let script_lang = super::script_run::lang_of_program(name);
                // `python3 < x.py`: the file on its stdin is its program.
                let stdin_script = match (inv.stdin, inv.stdin_file, script_lang) {
                    (Producer::None, Some(file), Some(l)) => Some((file, l)),
                    _ => None,
                };
                match operands.first() {
                    Some(stdin)
                        if matches!(stdin.text.as_str(), "-" | "/dev/stdin" | "/dev/fd/0") =>
                    {
                        if let Some((file, l)) = stdin_script {
                            self.note_script(file, l, ScriptForm::Stdin, file.span.is_some());
                        }
                        self.check_stdin_code(Some(lang), inv);
                    }
                    Some(script) => {
                        self.check_script(script, inv);
                        if let Some(l) = script_lang {
                            let ended = read.start > 0
                                && args.get(read.start - 1).is_some_and(|a| a.text == "--");
                            self.note_script(script, l, ScriptForm::Operand, !ended);
                        }
                    }
                    None => {
                        if let Some((file, l)) = stdin_script {
                            self.note_script(file, l, ScriptForm::Stdin, file.span.is_some());
                        }
                        self.check_stdin_code(Some(lang), inv);
                    }
                }
            }
        }
        if read.in_place {
            // `perl -i -e CODE files…` edits the files; without -e the first is code.
            let files = if read.code.is_some() {
                operands
            } else {
                operands.get(1..).unwrap_or(&[])
            };
            for f in files {
                if paths::is_protected(&canonical(&f.text), &self.own.agent_dirs) {
                    self.hit(RuleId::ProtectedWrite, r);
                }
            }
        }
    }

    pub(crate) fn check_powershell(&mut self, args: &[Field], inv: &Invocation<'_>) {
        let r = inv.rendered;
        let mut i = 0;
        while i < args.len() {
            let lower = args[i].text.to_ascii_lowercase();
            if !lower.starts_with('-') {
                break;
            }
            match lower.as_str() {
                "-encodedcommand" | "-enc" | "-e" | "-ec" => {
                    self.hit(RuleId::DecodedCode, r);
                    return;
                }
                "-command" | "-c" => {
                    i += 1;
                    break;
                }
                "-executionpolicy" | "-ep" | "-file" | "-f" | "-windowstyle" | "-w"
                | "-configurationname" | "-workingdirectory" | "-wd" => {
                    i += 2;
                }
                _ => i += 1,
            }
        }
        let text = args
            .get(i..)
            .unwrap_or(&[])
            .iter()
            .map(|a| a.text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        if let Some(rule) = code::powershell_rule(&text) {
            self.hit(rule, r);
        }
        // PowerShell runs cmd.exe like any program: `cmd /c rd /s /q C:\x`.
        let words: Vec<&str> = text.split_whitespace().collect();
        for (i, w) in words.iter().enumerate() {
            let w = w.trim_start_matches(['&', '(', '{', ';']);
            if super::windows::is_cmd(w)
                && words
                    .get(i + 1)
                    .is_some_and(|s| s.eq_ignore_ascii_case("/c") || s.eq_ignore_ascii_case("/k"))
            {
                let line = words[i + 2..].join(" ");
                self.check_cmd_line(&line, inv, 1);
            }
        }
    }

    /// What a command's output is made of (for `… | sh` and `$(…)`).
    pub(crate) fn producer_of(&self, name: &str, args: &[Field], inv: &Invocation<'_>) -> Producer {
        let has = |w: &str| args.iter().any(|a| a.text == w);
        let operands = || args.iter().filter(|a| !a.text.starts_with('-'));
        match name {
            "curl" | "wget" | "fetch" | "http" | "https" | "xh" | "nc" | "ncat" | "netcat"
            | "socat" | "ssh" | "aria2c" | "lwp-request" | "GET" | "telnet" => Producer::Network,
            "echo" => {
                if args.iter().any(|a| a.dynamic) {
                    Producer::Other
                } else {
                    let strings: Vec<String> = args.iter().map(|a| a.text.clone()).collect();
                    Producer::Literal(fold::eval_echo(&strings))
                }
            }
            "printf" => {
                if args.iter().any(|a| a.dynamic) {
                    return Producer::Other;
                }
                let strings: Vec<String> = args.iter().map(|a| a.text.clone()).collect();
                fold::eval_printf(&strings).map_or(Producer::Other, Producer::Literal)
            }
            "base64" | "base32" | "basenc" if has("-d") || has("--decode") || has("-D") => {
                Producer::Decoder
            }
            "xxd" if args.iter().any(|w| w.text.starts_with("-r")) => Producer::Decoder,
            "openssl" if has("-d") || has("-base64") || has("-a") || has("base64") => {
                Producer::Decoder
            }
            "tr" | "rev" | "gunzip" | "zcat" | "bzcat" | "xzcat" | "zstdcat" | "uudecode"
            | "unxz" | "bunzip2" => Producer::Decoder,
            "gzip" | "bzip2" | "xz" | "zstd" if has("-d") || has("--decompress") || has("-dc") => {
                Producer::Decoder
            }
            "cat" | "tee" | "head" | "tail" | "stdbuf" | "sort" | "uniq"
                if operands().count() == 0 =>
            {
                inv.stdin.clone()
            }
            // Commands that print nothing unless asked to: `$(touch x)` is empty.
            "touch" | "mkdir" | "true" | "false" | ":" | "cd" | "chmod" | "chown" | "ln" | "cp"
            | "mv" | "rm" | "sleep" | "rmdir"
                if !args
                    .iter()
                    .any(|w| w.text == "-v" || w.text.starts_with("--verbose")) =>
            {
                Producer::Literal(String::new())
            }
            _ => {
                if operands().any(|a| self.is_secret(&canonical(&a.text))) {
                    Producer::Credentials
                } else {
                    Producer::Other
                }
            }
        }
    }
}

/// node's long options whose value is a module it loads before the program.
const PRELOADS: &[&str] = &["require", "import", "loader", "experimental-loader"];

/// Each language's short options that give inline code, those that take a value
/// (attached, or the next word), and those whose value can only be attached (`perl
/// -Mstrict`, `-l`, `-0777`: the next word is not theirs).
fn flags_of(lang: Lang) -> (&'static str, &'static str, &'static str) {
    match lang {
        Lang::Python => ("c", "WXQ", ""),
        Lang::Node => ("ep", "r", ""),
        Lang::Perl => ("eE", "I", "MmxFlCdD0i"),
        Lang::Ruby => ("e", "IrEC", "xFKTW0i"),
        Lang::Php => ("rBRE", "fdcz", ""),
        Lang::Awk => ("e", "fFvi", ""),
        Lang::Generic => ("ec", "", ""),
    }
}

/// What an interpreter's options say.
#[derive(Default)]
pub(crate) struct Inline {
    /// The inline code (several `-e` are joined by newlines).
    pub code: Option<Field>,
    /// `perl -i`, `ruby -i`: files are edited in place.
    pub in_place: bool,
    /// `python -m MODULE`: a module runs (judged by name elsewhere).
    pub module: bool,
    /// The module `-m` names.
    pub module_name: Option<Field>,
    /// What the interpreter loads before its program, by option: node's `-r`,
    /// `--require`, `--import`, `--loader`; perl's `-M`/`-m`, ruby's `-r`; php's `-d
    /// auto_prepend_file=`, `-c`.
    pub preloads: Vec<Field>,
    /// Directories `-I` puts first on the module path (perl, ruby).
    pub include_dirs: Vec<Field>,
    /// Index of the first operand.
    pub start: usize,
}

/// Reads an interpreter's options the way it does: clusters, attached values, long
/// `--eval`/`--print`, `--` ending them.
pub(crate) fn read_options(lang: Lang, args: &[Field]) -> Inline {
    let (code_flags, value_flags, attached_only) = flags_of(lang);
    let mut out = Inline::default();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].text.as_str();
        if a == "--" {
            i += 1;
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            match long.split_once('=') {
                Some(("eval" | "print" | "source", v)) => {
                    out.code = Some(Field {
                        text: v.to_owned(),
                        span: None,
                        ..args[i].clone()
                    })
                }
                None if matches!(long, "eval" | "print" | "source") => {
                    out.code = args.get(i + 1).cloned();
                    i += 1;
                }
                Some((name, v)) if PRELOADS.contains(&name) => out.preloads.push(Field {
                    text: v.to_owned(),
                    span: None,
                    ..args[i].clone()
                }),
                None if PRELOADS.contains(&long) => {
                    out.preloads.extend(args.get(i + 1).cloned());
                    i += 1;
                }
                None if matches!(long, "input-type") => i += 1,
                _ => {}
            }
            i += 1;
            continue;
        }
        if !(a.starts_with('-') && a.len() > 1) {
            break;
        }
        for (k, c) in a.char_indices().skip(1) {
            let attached = &a[k + c.len_utf8()..];
            if code_flags.contains(c) {
                let value = if attached.is_empty() {
                    i += 1;
                    args.get(i).cloned()
                } else {
                    Some(Field::literal(attached))
                };
                if let Some(v) = value {
                    out.code = Some(match out.code.take() {
                        Some(mut prev) => {
                            prev.text.push('\n');
                            prev.text.push_str(&v.text);
                            prev.dynamic |= v.dynamic;
                            prev
                        }
                        None => v,
                    });
                }
                break;
            }
            if c == 'i' && matches!(lang, Lang::Perl | Lang::Ruby) {
                out.in_place = true;
                break;
            }
            if attached_only.contains(c) {
                // `perl -MFoo`, `-mFoo`, `-d:Foo` (the debugger module Devel::Foo).
                let module = match (c, attached.strip_prefix(':')) {
                    ('M' | 'm', _) if lang == Lang::Perl => Some(attached.to_owned()),
                    ('d', Some(m)) if lang == Lang::Perl => Some(format!("Devel::{m}")),
                    _ => None,
                };
                if let Some(m) = module.filter(|m| !m.is_empty()) {
                    out.preloads.push(Field {
                        text: m,
                        span: None,
                        ..args[i].clone()
                    });
                }
                break;
            }
            if c == 'm' && lang == Lang::Python {
                out.module = true;
                out.module_name = if attached.is_empty() {
                    i += 1;
                    args.get(i).cloned()
                } else {
                    Some(Field::literal(attached))
                };
                break;
            }
            if value_flags.contains(c) {
                let value = if attached.is_empty() {
                    i += 1;
                    args.get(i).cloned()
                } else {
                    Some(Field::literal(attached))
                };
                let preload = match lang {
                    Lang::Node | Lang::Ruby => c == 'r',
                    Lang::Php => {
                        c == 'c'
                            || (c == 'd'
                                && value.as_ref().is_some_and(|v| {
                                    v.dynamic
                                        || v.text.contains("auto_prepend")
                                        || v.text.contains("auto_append")
                                }))
                    }
                    _ => false,
                };
                if let Some(v) = value {
                    if preload {
                        out.preloads.push(v);
                    } else if c == 'I' && matches!(lang, Lang::Perl | Lang::Ruby) {
                        out.include_dirs.push(v);
                    }
                }
                break;
            }
        }
        i += 1;
        if out.module {
            break;
        }
    }
    out.start = i;
    out
}
