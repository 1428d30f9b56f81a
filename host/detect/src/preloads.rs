//! What an interpreter runs besides its program: the files its options load first
//! (`node -r ./x.js`, `--import`, `perl -I. -Mx`, `ruby -I. -rx`, `php -d
//! auto_prepend_file=x.php`), the standard modules that run a file their arguments
//! name (`python3 -m cProfile x.py`, `-m trace --count x.py`, `-m doctest x.py`) or
//! code (`-m timeit STATEMENT`), and the modules the session wrote that `-m` or `-c
//! "import x"` runs. Each such file is a script run the host reads and judges;
//! named in an option or another program's arguments, it cannot be handed the judged
//! text, so the host asks.

use super::carriers::Inline;
use super::code::{self, Lang};
use super::fold::Field;
use super::opts::{self, Spec};
use super::reader::CodeLang;
use super::rules::RuleId;
use super::script_run::{ScriptForm, ScriptLang};
use super::walk::{Analyzer, Invocation};

/// Modules of Python's standard library (and two common tools) that run a file or a
/// module their arguments name (`python3 -m cProfile x.py`), with their short
/// options that take a value: the first operand after those is the file.
const PYTHON_RUNNERS: &[(&str, &str)] = &[
    ("cProfile", "os"),
    ("profile", "os"),
    ("trace", "fC"),
    ("pdb", "c"),
    ("pyinstrument", "orpi"),
    ("coverage", ""),
    ("idlelib", "ct"),
    ("idlelib.idle", "ct"),
];

/// Long options of those runners that take a value.
const RUNNER_LONGS: &[&str] = &[
    "file=",
    "coverdir=",
    "ignore-module=",
    "ignore-dir=",
    "outfile=",
    "sort=",
    "rcfile=",
    "source=",
    "omit=",
    "include=",
    "context=",
    "concurrency=",
    "data-file=",
    "renderer=",
    "interval=",
];

impl Analyzer<'_> {
    /// The files `read`'s options load before the program (see the module's doc).
    pub(crate) fn check_preloads(&mut self, lang: Lang, read: &Inline, inv: &Invocation<'_>) {
        let script = |lang: CodeLang| ScriptLang::Code { lang };
        let dirs: Vec<String> = read
            .include_dirs
            .iter()
            .filter(|d| d.dynamic || self.is_writable_entry(&d.text, false))
            .map(|d| d.text.trim_end_matches('/').to_owned())
            .collect();
        for p in &read.preloads {
            if p.dynamic {
                self.hit(Self::unseen_code_rule(&p.origin), inv.rendered);
                continue;
            }
            match lang {
                Lang::Node => {
                    if p.text.starts_with("data:") {
                        // The module is the text itself.
                        self.hit(RuleId::InterpreterCode, inv.rendered);
                        continue;
                    }
                    // A path (`./x.js`), or a package found from the working directory
                    // (`node_modules/x`): either is the session's to write.
                    let path = p.text.strip_prefix("file://").unwrap_or(&p.text);
                    self.preload_file(path, script(CodeLang::Node), inv);
                }
                Lang::Perl => {
                    // `-MFoo=a,b`, `-M'Foo qw(a)'`, `-M-Foo` (no Foo: nothing loads).
                    if p.text.starts_with('-') {
                        continue;
                    }
                    let module = p.text.split(['=', ' ']).next().unwrap_or_default();
                    let relative = format!("{}.pm", module.replace("::", "/"));
                    for dir in &dirs {
                        self.preload_file(
                            &format!("{dir}/{relative}"),
                            script(CodeLang::Perl),
                            inv,
                        );
                    }
                }
                Lang::Ruby => {
                    let lib = p.text.as_str();
                    let file = if lib.ends_with(".rb") || lib.ends_with(".so") {
                        lib.to_owned()
                    } else {
                        format!("{lib}.rb")
                    };
                    if lib.starts_with(['.', '/', '~']) {
                        self.preload_file(&file, script(CodeLang::Ruby), inv);
                    } else {
                        for dir in &dirs {
                            self.preload_file(
                                &format!("{dir}/{file}"),
                                script(CodeLang::Ruby),
                                inv,
                            );
                        }
                    }
                }
                Lang::Php => match p.text.split_once('=') {
                    Some((key, file))
                        if key.contains("auto_prepend") || key.contains("auto_append") =>
                    {
                        self.preload_file(file, script(CodeLang::Php), inv);
                    }
                    // `-c FILE`: a configuration whose own settings load files.
                    _ => self.hit(RuleId::Hijack, inv.rendered),
                },
                Lang::Python | Lang::Awk | Lang::Generic => {}
            }
        }
    }

    /// A file an interpreter loads where the command cannot hand it the judged text.
    fn preload_file(&mut self, path: &str, lang: ScriptLang, inv: &Invocation<'_>) {
        let field = Field::literal(path);
        self.check_script(&field, inv);
        self.note_script(&field, lang, ScriptForm::Operand, false);
    }

    /// `python3 -m MODULE ARGS`: a module the session wrote runs; a runner module
    /// runs the file (or code) its arguments name.
    pub(crate) fn check_python_module(
        &mut self,
        module: Option<&Field>,
        args: &[Field],
        inv: &Invocation<'_>,
    ) {
        let Some(module) = module else {
            return;
        };
        if module.dynamic {
            self.hit(Self::unseen_code_rule(&module.origin), inv.rendered);
            return;
        }
        self.check_fresh_modules([module.text.as_str()], inv);
        let name = module.text.as_str();
        if name == "timeit" {
            // Its operands and `-s` values are statements it runs.
            let code = Self::joined(args);
            if code.dynamic {
                self.hit(Self::unseen_code_rule(&code.origin), inv.rendered);
            } else if code::is_risky(Lang::Python, &code.text) {
                self.hit(RuleId::InterpreterCode, inv.rendered);
            }
            return;
        }
        let python = ScriptLang::Code {
            lang: CodeLang::Python,
        };
        if name == "doctest" {
            for f in args.iter().filter(|a| !a.text.starts_with('-')) {
                self.check_script(f, inv);
                self.note_script(f, python, ScriptForm::Operand, false);
            }
            return;
        }
        let Some((_, values)) = PYTHON_RUNNERS.iter().find(|(n, _)| *n == name) else {
            return;
        };
        // `coverage run …` (its other commands report on data).
        let args = match (name, args.split_first()) {
            ("coverage", Some((run, rest))) if run.text == "run" => rest,
            ("coverage", _) => return,
            _ => args,
        };
        let spec = Spec {
            short_values: values,
            longs: RUNNER_LONGS,
            stop_at_operand: true,
        };
        let o = opts::parse(args, &spec);
        // `pdb -c COMMAND`: a debugger command (`!stmt` is Python).
        if name == "pdb"
            && o.values
                .iter()
                .any(|(k, v)| *k == 'c' && code::is_risky(Lang::Python, v))
        {
            self.hit(RuleId::InterpreterCode, inv.rendered);
        }
        let Some(target) = o.rest.and_then(|i| args.get(i)) else {
            return;
        };
        // `-m MODULE` (`trace`'s `-m` is `--missing`: both readings are checked).
        if o.short('m') || o.long("module") {
            self.check_fresh_modules([target.text.as_str()], inv);
        }
        self.check_script(target, inv);
        self.note_script(target, python, ScriptForm::Operand, false);
    }

    /// Python code imports (or `-m` runs) `modules`: one the session wrote (its
    /// `NAME.py`, `NAME/__init__.py` or directory) runs as it is on disk.
    pub(crate) fn check_fresh_modules<'m>(
        &mut self,
        modules: impl IntoIterator<Item = &'m str>,
        inv: &Invocation<'_>,
    ) {
        for module in modules {
            let top = module.split('.').next().unwrap_or(module);
            if top.is_empty() {
                continue;
            }
            let fresh = [
                format!("{top}.py"),
                format!("{top}/__init__.py"),
                top.to_owned(),
            ]
            .iter()
            .any(|p| self.is_fresh(p));
            if fresh {
                self.hit(RuleId::FreshFile, inv.rendered);
                return;
            }
        }
    }
}
