//! How a judged script's text is handed to what runs it in the file's place: the words
//! that replace the file's name in the command, and what may stand in them (a `#!`
//! line's program and argument, an ES module).

use crate::backend::shell_quote;
use hermetic_detect::{CodeLang, ScriptForm, ScriptLang};

/// Python's side of a pinned `python3 x.py`: run as `python3 -c BOOT TEXT x.py ARGS`,
/// it runs TEXT as the `__main__` module of file `x.py`, with `sys.argv`, `__file__`
/// and (when Python put the working directory there) `sys.path[0]` as for the file.
/// `sys.path[0]` is set before anything is imported and nothing is imported from a
/// path (`sys` and `posix` are built in; the module is `type(sys)`), so no file in
/// the working directory (a `types.py`, an `os.py` under `-S`) runs first.
pub(super) const PYTHON_BOOT: &str = "import sys
c=sys.argv.pop(1);del sys.argv[0];f=sys.argv[0]
if sys.path and sys.path[0]=='':
 import posix;d=f.rpartition('/')[0]
 sys.path[0]=(d or '/') if f.startswith('/') else posix.getcwd()+('/'+d if d else '')
m=type(sys)('__main__');m.__file__=f;m.__builtins__=__builtins__;sys.modules['__main__']=m
exec(compile(c,f,'exec'),m.__dict__)";

/// Node's side of a pinned `node x.js`: run as `node -e BOOT -- TEXT x.js ARGS`, it
/// compiles TEXT as the CommonJS main module of file `x.js` (its `require`,
/// `__filename`, `__dirname` and `process.argv` as for the file).
pub(super) const NODE_BOOT: &str = "const M=require('module'),P=require('path');const c=process.argv.splice(1,1)[0];const f=P.resolve(process.argv[1]);process.argv[1]=f;const m=new M(f,null);m.filename=f;m.paths=M._nodeModulePaths(P.dirname(f));process.mainModule=m;m._compile(c,f);";

/// Where a `#!` line's program may be: the system's own programs. A program anywhere
/// else (the workspace, `/tmp`) is a file a session may have written, which would
/// read the judged text its own way.
const SHEBANG_DIRS: &[&str] = &[
    "/usr/bin/",
    "/bin/",
    "/usr/local/bin/",
    "/usr/sbin/",
    "/sbin/",
];

/// Why the `#!` line `program arg` (which reads `lang`) cannot be run as judged, or
/// `None` when it can: the program is in a system directory, `env` names a bare
/// interpreter, and the argument is one cluster of options that name no file, module
/// or code (`-eu`, `-u`, `-w`). Anything else (`#!/bin/bash x.sh`, `#!/usr/bin/env -S
/// python3 -m mod`, `#!$PWD/bin/python3`) would run something the gate did not judge.
pub(super) fn shebang_refusal(
    program: &str,
    arg: Option<&str>,
    lang: ScriptLang,
) -> Option<String> {
    let name = SHEBANG_DIRS
        .iter()
        .find_map(|d| program.strip_prefix(d))
        .filter(|n| !n.is_empty() && !n.contains('/') && *n != "." && *n != "..");
    let Some(name) = name else {
        return Some(format!(
            "its #! line runs {program}, which is not one of the system's programs (/usr/bin, /bin, /usr/local/bin, /usr/sbin, /sbin)"
        ));
    };
    let fine = match (name, arg) {
        (_, None) => name != "env",
        ("env", Some(a)) => {
            !a.starts_with('-')
                && a.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'+' | b'-'))
        }
        (_, Some(a)) => safe_options(lang, a),
    };
    (!fine).then(|| {
        format!(
            "its #! line gives {program} the argument {:?}: only a bare interpreter name after env, or options that name no file, module or code, are run as judged",
            arg.unwrap_or_default()
        )
    })
}

/// True when `arg` (one word, as the kernel passes a `#!` argument) is a cluster of
/// options of `lang`'s interpreter that take no value and name nothing to read.
fn safe_options(lang: ScriptLang, arg: &str) -> bool {
    let (letters, long): (&str, &[&str]) = match lang {
        // No -c (code), -s/-i (stdin, interactive), -o (takes a name), -O, -D, -r.
        ScriptLang::Shell { .. } => ("aefhklnuvxBCEHPT", &["--posix", "--norc", "--noprofile"]),
        // No -c, -m, -W, -X (take values), -x (skips the first line), -i.
        ScriptLang::Code {
            lang: CodeLang::Python,
        } => ("bBdEhIOPqsSuv", &[]),
        ScriptLang::Code {
            lang: CodeLang::Perl,
        } => ("wWXTtl", &[]),
        ScriptLang::Code {
            lang: CodeLang::Ruby,
        } => ("wWv", &[]),
        _ => ("", &[]),
    };
    if long.contains(&arg) {
        return true;
    }
    let cluster = arg.strip_prefix('-').or_else(|| {
        arg.strip_prefix('+')
            .filter(|_| matches!(lang, ScriptLang::Shell { .. }))
    });
    cluster.is_some_and(|c| !c.is_empty() && c.chars().all(|ch| letters.contains(ch)))
}

/// How node reads a JavaScript file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum JsKind {
    /// CommonJS: handed to node as the main module of its file ([`NODE_BOOT`]).
    CommonJs,
    /// An ES module (`.mjs`), or a `.js` file naming `import` or `export` (node may
    /// read it as one: by its syntax, or its package's `"type": "module"`). Node has
    /// no way to be given a module's text with its own file's location (relative
    /// imports would resolve from the working directory), so it asks.
    Module,
}

/// How node reads `code`, the text of file `path`.
pub(super) fn js_kind(path: &str, code: &str) -> JsKind {
    if path.ends_with(".cjs") {
        return JsKind::CommonJs;
    }
    if path.ends_with(".mjs") || has_word(code, "import") || has_word(code, "export") {
        return JsKind::Module;
    }
    JsKind::CommonJs
}

/// True when `word` stands in `code` as a whole identifier (not inside `exports` or
/// `reimport`), in code, a string or a comment alike.
fn has_word(code: &str, word: &str) -> bool {
    let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$');
    code.match_indices(word).any(|(i, _)| {
        !ident(code[..i].chars().next_back()) && !ident(code[i + word.len()..].chars().next())
    })
}

/// What a pinned run names besides the text: the program of a `#!` line and its one
/// argument.
pub(super) type Shebang = Option<(String, Option<String>)>;

/// The words that run `code` (a script of `lang`, file `path`, named by `word`) in
/// the place of `word`, for a command that bash reads (`bash`) or another sh. `Err`:
/// why it cannot be.
///
/// Nothing here is looked up by a name the session can take over unseen: `printf` is
/// bash's own (`\builtin`: no alias), `sh` and `bash` are found on the system's
/// default path (`\command -p`), and the detector refuses an input that defines a
/// function or alias of those names (`exec.shadow_command`), which is the one way
/// bash lets a session replace them. `-c --` ends the options before the text, which
/// may begin with `-`.
pub(super) fn replacement(
    form: ScriptForm,
    lang: ScriptLang,
    interpreter: Shebang,
    bash: bool,
    word: &str,
    code: &str,
    path: &str,
) -> Result<String, String> {
    let q = shell_quote;
    let text = q(code);
    let no_substitution = || {
        "the sh that runs it here has no way to be handed the judged text in this form (bash's <(…)); run it with sh FILE or bash FILE".to_owned()
    };
    // A path naming the text, where bash runs the command.
    let substituted = bash.then(|| format!("<(\\builtin printf %s {text})"));
    let given = |lead: &str| -> Result<String, String> {
        match lang {
            ScriptLang::Shell { .. } => Ok(format!("{lead}-c -- {text} {word}")),
            ScriptLang::Code {
                lang: CodeLang::Python,
            } => Ok(format!("{lead}-c {} {text} {word}", q(PYTHON_BOOT))),
            ScriptLang::Code {
                lang: CodeLang::Node,
            } => match js_kind(path, code) {
                JsKind::CommonJs => Ok(format!("{lead}-e {} -- {text} {word}", q(NODE_BOOT))),
                JsKind::Module => Err(
                    "it is (or may be) an ES module, which node cannot be handed as judged text with its own file's location; a human is asked, and it runs as written"
                        .to_owned(),
                ),
            },
            _ => substituted
                .as_ref()
                .map(|s| format!("{lead}{s}"))
                .ok_or_else(no_substitution),
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
                None if bash => "\\command -p bash ".to_owned(),
                None => "\\command -p sh ".to_owned(),
            };
            given(&lead)
        }
        ScriptForm::Source => substituted.ok_or_else(no_substitution),
        // `sh <x.sh` would read `sh <<(…)`: the blank keeps `<` and `<(` apart.
        ScriptForm::Stdin => substituted
            .map(|s| format!(" {s}"))
            .ok_or_else(no_substitution),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASH: ScriptLang = ScriptLang::Shell { bash: true };
    const PY: ScriptLang = ScriptLang::Code {
        lang: CodeLang::Python,
    };

    #[test]
    fn only_system_programs_with_harmless_options_run_a_shebang() {
        for (program, arg, lang) in [
            ("/bin/bash", None, BASH),
            ("/bin/bash", Some("-eu"), BASH),
            ("/usr/bin/env", Some("bash"), BASH),
            ("/usr/bin/env", Some("python3"), PY),
            ("/usr/bin/python3", Some("-u"), PY),
            (
                "/usr/local/bin/node",
                None,
                ScriptLang::Code {
                    lang: CodeLang::Node,
                },
            ),
            (
                "/usr/bin/perl",
                Some("-w"),
                ScriptLang::Code {
                    lang: CodeLang::Perl,
                },
            ),
        ] {
            assert_eq!(
                shebang_refusal(program, arg, lang),
                None,
                "{program} {arg:?}"
            );
        }
        for (program, arg, lang) in [
            ("/bin/bash", Some("x.sh"), BASH),
            ("/bin/bash", Some("--rcfile x"), BASH),
            ("/bin/bash", Some("-c"), BASH),
            ("/bin/bash", Some("-e -u"), BASH),
            ("/usr/bin/env", Some("-S python3 -m xx"), PY),
            ("/usr/bin/env", Some("./py"), PY),
            ("/usr/bin/env", None, PY),
            ("/usr/bin/python3", Some("-m"), PY),
            ("/usr/bin/python3", Some("-mxx"), PY),
            ("/usr/bin/python3", Some("-W"), PY),
            ("/usr/bin/python3", Some("x.py"), PY),
            ("/ws/bin/python3", None, PY),
            ("/usr/bin/../../ws/python3", None, PY),
            ("/usr/bin/sub/python3", None, PY),
            ("python3", None, PY),
            (
                "/usr/bin/node",
                Some("-r"),
                ScriptLang::Code {
                    lang: CodeLang::Node,
                },
            ),
        ] {
            assert!(
                shebang_refusal(program, arg, lang).is_some(),
                "{program} {arg:?}"
            );
        }
    }

    #[test]
    fn a_javascript_file_that_may_be_a_module_is_one() {
        assert_eq!(
            js_kind("/ws/a.js", "module.exports = require('x');\n"),
            JsKind::CommonJs
        );
        assert_eq!(js_kind("/ws/a.mjs", "console.log(1)\n"), JsKind::Module);
        assert_eq!(
            js_kind("/ws/a.js", "// import the thing\nconsole.log(1)\n"),
            JsKind::Module
        );
        assert_eq!(js_kind("/ws/a.js", "export default 1\n"), JsKind::Module);
        assert_eq!(js_kind("/ws/a.cjs", "import('x')\n"), JsKind::CommonJs);
    }
}
