//! Input to a running program: what reads a command's standard input, and text written
//! to it judged in the language its reader reads.
//!
//! A background `bash`, `python3` or `sqlite3 app.db` runs what it is sent; `cat` or
//! `sort` never does. When a command is judged, each of its simple commands says how
//! it uses the stdin it inherits ([`Reader`], recorded by `note_stdin`); the host keeps
//! that per process and judges what the process is sent ([`Detector::judge_input`]):
//! a shell's input as shell (whole statements, with the files the session wrote
//! known), an interpreter's as its `-c`/`-e` code is judged (by the capabilities it
//! names), a database client's by its statements and client commands, and an unknown
//! program's line by line as shell commands. Whatever a judge cannot read is
//! dangerous.
//!
//! [`Detector::judge`] is [`Detector::detect`] with a session's [`Frame`]: the files
//! earlier commands wrote (running one is [`RuleId::FreshFile`], as within one line)
//! and the directory the command starts in.

use super::code::{self, Lang, SHELLS, language};
use super::detector::{Detection, Detector, analyze, detection, finding_rule};
use super::fold::{Field, Producer};
use super::limits::{MAX_INPUT_BYTES, MAX_NESTING, exceeds_nesting};
use super::normalize::normalize;
use super::opts::{self, Spec};
use super::reader::{CodeLang, Reader};
use super::rules::RuleId;
use super::walk::{self, Analyzer, Invocation, RawHit};

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
}

/// Most readers recorded for one input (each is a judge of later input).
const MAX_READERS: usize = 8;
/// Most `!` in one line whose text after it is judged as a shell escape.
const MAX_ESCAPES: usize = 4;

/// Programs that read their stdin only as data, or read none: what they are sent is
/// never run. (`sed` and `awk` are here: their program is an argument, judged with
/// the command, unless `-f` reads it from stdin.)
const DATA: &[&str] = &[
    "cat",
    "tac",
    "tee",
    "head",
    "tail",
    "sort",
    "uniq",
    "wc",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "cut",
    "paste",
    "tr",
    "nl",
    "fold",
    "fmt",
    "column",
    "rev",
    "od",
    "xxd",
    "hexdump",
    "base64",
    "base32",
    "basenc",
    "md5sum",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "sum",
    "gzip",
    "gunzip",
    "zcat",
    "bzip2",
    "bunzip2",
    "xz",
    "unxz",
    "zstd",
    "jq",
    "iconv",
    "comm",
    "join",
    "expand",
    "unexpand",
    "strings",
    "dd",
    "sed",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "read",
    "echo",
    "printf",
    "true",
    "false",
    ":",
    "sleep",
    "cd",
    "pwd",
    "ls",
    "date",
    "mkdir",
    "touch",
    "test",
    "[",
    "export",
    "declare",
    "typeset",
    "local",
    "readonly",
    "alias",
    "trap",
    "unset",
    "set",
    "shift",
    "wait",
    "exit",
    "return",
    // Wrappers that, running no command, read nothing (`env` prints, `exec 3<f`
    // redirects).
    "exec",
    "command",
    "builtin",
    "env",
    "nice",
    "nohup",
    "time",
    "timeout",
    "stdbuf",
    "ionice",
];

/// Programs that start a shell when given no command (`ssh host`, `sudo -s`, `su`).
const LOGIN_SHELLS: &[&str] = &[
    "ssh",
    "su",
    "sudo",
    "doas",
    "runuser",
    "unshare",
    "nsenter",
    "chroot",
    "script",
    "machinectl",
    "sg",
    "newgrp",
    "login",
    "pkexec",
];

/// Database clients (as `checks` knows them): they read SQL and client commands.
const SQL_CLIENTS: &[&str] = &[
    "psql",
    "mysql",
    "mariadb",
    "sqlite3",
    "sqlcmd",
    "clickhouse-client",
    "clickhouse",
    "duckdb",
    "cockroach",
    "cqlsh",
    "mongosh",
    "mongo",
    "redis-cli",
    "snowsql",
    "usql",
    "pgcli",
    "mycli",
    "litecli",
];

/// REPLs not named like their language's interpreter.
fn repl_language(name: &str) -> Option<CodeLang> {
    Some(match name {
        "ipython" | "ipython3" | "bpython" | "ptpython" | "ptipython" => CodeLang::Python,
        "irb" | "pry" => CodeLang::Ruby,
        "psysh" => CodeLang::Php,
        "ts-node" | "tsx" => CodeLang::Node,
        "R" => CodeLang::Other,
        "ghci" | "erl" | "iex" | "guile" | "racket" | "sbcl" | "clojure" | "scala" | "jshell"
        | "gdb" | "lldb" | "pdb" | "expect" | "tclsh" | "wish" | "jdb" | "dc" | "ed" | "ex"
        | "vim" | "vi" | "nvim" | "emacs" | "nano" | "mail" | "mailx" | "ftp" | "sftp" | "lftp"
        | "telnet" | "nc" | "ncat" | "socat" | "tmux" | "screen" => CodeLang::Unread,
        _ => return None,
    })
}

fn code_lang(lang: Lang) -> CodeLang {
    match lang {
        Lang::Python => CodeLang::Python,
        Lang::Node => CodeLang::Node,
        Lang::Perl => CodeLang::Perl,
        Lang::Ruby => CodeLang::Ruby,
        Lang::Php => CodeLang::Php,
        Lang::Awk | Lang::Generic => CodeLang::Other,
    }
}

impl Analyzer<'_> {
    /// Records how the simple command `name args` uses the stdin it inherits.
    /// (And what a filter writes to a file of its own: `sort -o`, `uniq IN OUT` write
    /// what they read, which later commands may run.)
    pub(crate) fn note_stdin(&mut self, name: &str, args: &[Field], inv: &Invocation<'_>) {
        if let Some(out) = filter_output(name, args) {
            self.check_write(&out, true, inv.rendered);
        }
        // A heredoc, here-string or `echo … |` feeds it: not the input's own stdin.
        if matches!(inv.stdin, Producer::Literal(_)) {
            return;
        }
        if SHELLS.contains(&name) {
            if let Some(r) = shell_reader(name, args) {
                self.note_reader(r);
            }
            return;
        }
        if let Some(lang) = repl_language(name) {
            self.note_reader(Reader::Code(lang));
            return;
        }
        if let Some(lang) = language(name) {
            self.note_interpreter(name, lang, args);
            return;
        }
        if SQL_CLIENTS.contains(&name) {
            self.note_reader(Reader::Sql);
            if matches!(name, "mongosh" | "mongo") {
                self.note_reader(Reader::Code(CodeLang::Node));
            }
            return;
        }
        if LOGIN_SHELLS.contains(&name) {
            // Not unwrapped as a wrapper (`su`, `script`): a shell, or a command we did
            // not read; a shell is the stricter reading of what follows.
            self.note_reader(Reader::Shell {
                bash: false,
                interactive: false,
            });
            return;
        }
        if DATA.contains(&name) {
            // sed -f -, awk -f /dev/stdin: the program comes from stdin.
            let program_from_stdin = args.windows(2).any(|w| {
                matches!(w[0].text.as_str(), "-f" | "--file")
                    && matches!(w[1].text.as_str(), "-" | "/dev/stdin" | "/dev/fd/0")
            });
            if program_from_stdin {
                self.note_reader(Reader::Unknown);
            }
            return;
        }
        self.note_reader(Reader::Unknown);
    }

    /// A wrapper was checked; `ran_nothing`: no command it runs was seen (`ssh host`,
    /// `sudo -s`, `docker run -i img`), so it is what reads stdin.
    pub(crate) fn note_wrapper_stdin(
        &mut self,
        name: &str,
        ran_nothing: bool,
        inv: &Invocation<'_>,
    ) {
        if !ran_nothing || matches!(inv.stdin, Producer::Literal(_)) || DATA.contains(&name) {
            return;
        }
        if LOGIN_SHELLS.contains(&name) {
            self.note_reader(Reader::Shell {
                bash: false,
                interactive: true,
            });
        } else {
            self.note_reader(Reader::Unknown);
        }
    }

    fn note_interpreter(&mut self, name: &str, lang: Lang, args: &[Field]) {
        let reader = Reader::Code(code_lang(lang));
        if lang == Lang::Awk {
            // awk's program is an argument; only `-f -` reads it from stdin.
            self.note_stdin_program_of_awk(args);
            return;
        }
        if matches!(name, "deno" | "bun") {
            match args.first().map(|a| a.text.as_str()) {
                None | Some("repl") => self.note_reader(reader),
                _ => self.note_reader(Reader::Unknown),
            }
            return;
        }
        let read = super::carriers::read_options(lang, args);
        let options = args.get(..read.start.min(args.len())).unwrap_or(&[]);
        let flag = |short: char, long: &str| {
            options.iter().any(|a| {
                a.text == long
                    || (a.text.starts_with('-')
                        && !a.text.starts_with("--")
                        && a.text[1..].contains(short))
            })
        };
        // Interactive after the script or inline code: `python3 -i app.py`,
        // `node -i -e …`, `php -a`, `perl -d` (the debugger reads commands).
        let interactive = match lang {
            Lang::Python | Lang::Node => flag('i', "--interactive"),
            Lang::Php => flag('a', "--interactive"),
            Lang::Perl => flag('d', "--debug"),
            _ => false,
        };
        if read.module {
            // `python3 -m code`, `-m pdb`, `-m asyncio` are REPLs; other modules are
            // programs we cannot see.
            self.note_reader(reader);
            self.note_reader(Reader::Unknown);
            return;
        }
        if read.code.is_some() {
            if interactive {
                self.note_reader(reader);
            }
            return;
        }
        match args.get(read.start..).and_then(<[Field]>::first) {
            None => self.note_reader(reader),
            Some(s) if matches!(s.text.as_str(), "-" | "/dev/stdin" | "/dev/fd/0") => {
                self.note_reader(reader);
            }
            Some(_) => {
                if interactive {
                    self.note_reader(reader);
                }
                self.note_reader(Reader::Unknown);
            }
        }
    }

    fn note_stdin_program_of_awk(&mut self, args: &[Field]) {
        let from_stdin = args.windows(2).any(|w| {
            matches!(w[0].text.as_str(), "-f" | "--file")
                && matches!(w[1].text.as_str(), "-" | "/dev/stdin" | "/dev/fd/0")
        });
        if from_stdin {
            self.note_reader(Reader::Code(CodeLang::Other));
        }
    }

    fn note_reader(&mut self, reader: Reader) {
        if !self.readers.contains(&reader) && self.readers.len() < MAX_READERS {
            self.readers.push(reader);
        }
    }
}

/// The file a filter writes besides stdout: `sort -o FILE`, `uniq IN OUT`. (Their
/// redirections are checked with every command's.)
fn filter_output(name: &str, args: &[Field]) -> Option<Field> {
    const SORT: Spec = Spec {
        short_values: "koStT",
        longs: &[
            "key=",
            "output=",
            "field-separator=",
            "buffer-size=",
            "temporary-directory=",
            "parallel=",
            "batch-size=",
            "compress-program=",
            "files0-from=",
            "random-source=",
            "sort=",
        ],
        stop_at_operand: false,
    };
    const UNIQ: Spec = Spec {
        short_values: "fsw",
        longs: &["skip-fields=", "skip-chars=", "check-chars=", "group="],
        stop_at_operand: false,
    };
    match name {
        "sort" => opts::parse(args, &SORT)
            .value('o', "output")
            .map(Field::literal),
        "uniq" => opts::parse(args, &UNIQ)
            .operands
            .get(1)
            .map(|f| (*f).clone()),
        _ => None,
    }
}

/// How a shell invoked as `name args` uses its stdin, read as `check_shell` reads its
/// options: `-c` runs its argument (whose commands are judged in their own right), a
/// script operand is a program we cannot see, otherwise (or with `-s`) it reads
/// commands.
fn shell_reader(name: &str, args: &[Field]) -> Option<Reader> {
    let mut command_mode = false;
    let mut stdin_mode = false;
    let mut interactive = false;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].text.as_str();
        if a == "--" || a == "-" {
            i += 1;
            break;
        }
        if matches!(a, "--rcfile" | "--init-file") {
            i += 2;
            continue;
        }
        if a.starts_with("--") {
            interactive |= a == "--interactive";
            i += 1;
            continue;
        }
        if (a.starts_with('-') || a.starts_with('+')) && a.len() > 1 {
            let cluster = &a[1..];
            command_mode |= cluster.contains('c');
            stdin_mode |= cluster.contains('s');
            interactive |= a.starts_with('-') && cluster.contains('i');
            if cluster.contains('o') || cluster.contains('O') {
                i += 1;
            }
            i += 1;
            continue;
        }
        break;
    }
    if command_mode {
        return None;
    }
    if !stdin_mode && args.get(i).is_some() {
        return Some(if interactive {
            Reader::Shell {
                bash: name == "bash",
                interactive,
            }
        } else {
            Reader::Unknown
        });
    }
    Some(Reader::Shell {
        bash: name == "bash",
        interactive,
    })
}

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
        ],
        CodeLang::Node => &[
            "require(",
            "process.mainModule",
            "constructor",
            "globalThis",
            "global.",
            ".editor",
            ".load",
        ],
        CodeLang::Ruby => &["load", "binding", "instance_variable", "const_get"],
        CodeLang::Perl | CodeLang::Php | CodeLang::Other | CodeLang::Unread => &[],
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
fn python_imports(text: &str) -> Vec<&str> {
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

/// sqlite3 dot-commands that only show or format.
const SAFE_DOT: &[&str] = &[
    "tables",
    "table",
    "schema",
    "indexes",
    "indices",
    "headers",
    "header",
    "mode",
    "width",
    "nullvalue",
    "separator",
    "quit",
    "exit",
    "help",
    "databases",
    "show",
    "timer",
    "changes",
    "eqp",
    "explain",
    "print",
    "bail",
    "echo",
    "stats",
    "dbinfo",
    "fullschema",
    "dump",
    "version",
    "limit",
    "timeout",
];

/// psql and mysql backslash commands that only show, format or quit.
const SAFE_BACKSLASH: &[&str] = &[
    "l", "q", "x", "timing", "conninfo", "?", "h", "encoding", "echo", "qecho", "pset", "a", "t",
    "H", "f", "C", "T", "z", "s", "G", "c", "connect", "sf", "sv", "dp",
];

/// The rule one line sent to a database client breaks, if any: destructive SQL, a
/// client command that runs a shell, loads code or reads or writes files on its host,
/// or a client command we do not know.
fn sql_line_rule(line: &str) -> Option<RuleId> {
    let t = line.trim_start();
    if let Some(rest) = t.strip_prefix('.') {
        let word: String = rest
            .chars()
            .take_while(char::is_ascii_alphanumeric)
            .collect();
        if word.is_empty() {
            return Some(RuleId::Unparseable);
        }
        return match word.as_str() {
            _ if t.contains('|') => Some(RuleId::ShellEscape),
            "shell" | "system" | "excel" | "edit" => Some(RuleId::ShellEscape),
            "load" => Some(RuleId::InterpreterCode),
            w if SAFE_DOT.contains(&w) => None,
            _ => Some(RuleId::Unparseable),
        };
    }
    if let Some(rest) = t.strip_prefix('\\') {
        let word = rest.split_whitespace().next().unwrap_or("");
        return match word {
            _ if t.contains('|') => Some(RuleId::ShellEscape),
            w if w.starts_with('!') => Some(RuleId::ShellEscape),
            w if w.starts_with('d') || SAFE_BACKSLASH.contains(&w) => None,
            _ => Some(RuleId::Unparseable),
        };
    }
    let lower = t.to_ascii_lowercase();
    let first = lower.split_whitespace().next().unwrap_or("");
    // mysql's client commands, typed as words; redis's server-side code and files.
    match first {
        "system" | "pager" | "!" => return Some(RuleId::ShellEscape),
        "edit" | "tee" | "source" | "config" | "debug" | "slaveof" | "replicaof" | "migrate" => {
            return Some(RuleId::Unparseable);
        }
        "module" | "eval" | "evalsha" | "fcall" | "function" | "script" => {
            return Some(RuleId::InterpreterCode);
        }
        _ => {}
    }
    if t.starts_with('!') {
        return Some(RuleId::ShellEscape);
    }
    if ["program", "xp_cmdshell", "sys_exec", "sys_eval", "edit("]
        .iter()
        .any(|n| lower.contains(n))
    {
        return Some(RuleId::ShellEscape);
    }
    if [
        "load_extension",
        "plpython",
        "plperlu",
        "pltclu",
        "language c",
        "create extension",
    ]
    .iter()
    .any(|n| lower.contains(n))
    {
        return Some(RuleId::InterpreterCode);
    }
    // Reading and writing files on the database's host.
    if [
        "outfile",
        "dumpfile",
        "lo_export",
        "lo_import",
        "pg_read",
        "pg_ls_dir",
        "writefile(",
        "readfile(",
        "load data",
        "vacuum into",
    ]
    .iter()
    .any(|n| lower.contains(n))
        || lower.split(';').any(|s| {
            matches!(
                s.split_whitespace().next(),
                Some("copy" | "attach" | "\\copy")
            )
        })
    {
        return Some(RuleId::Unparseable);
    }
    code::is_destructive_sql(t).then_some(RuleId::SqlDestructive)
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
        let mut analyzer = Analyzer::new(&self.protection);
        analyzer.prior_fresh = frame.fresh;
        analyzer.start_in(frame.cwd);
        analyze(&mut analyzer, command);
        let cwd = analyzer.cwd().to_owned();
        Judged {
            wrote: std::mem::take(&mut analyzer.fresh_files),
            readers: std::mem::take(&mut analyzer.readers),
            cwd,
            detection: detection(analyzer.hits, analyzer.commands),
        }
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
        slashes % 2 == 1 || walk::is_incomplete(text)
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
        };
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
            let mut analyzer = Analyzer::new(&self.protection);
            analyzer.prior_fresh = frame.fresh;
            analyzer.start_in(frame.cwd);
            for module in python_imports(&joined) {
                if module.is_empty() {
                    continue;
                }
                let fresh = [
                    format!("{module}.py"),
                    format!("{module}/__init__.py"),
                    module.to_owned(),
                ]
                .iter()
                .any(|p| analyzer.is_fresh(p));
                if fresh {
                    v.hit(RuleId::FreshFile, code);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::Tier;

    fn readers(command: &str) -> Vec<Reader> {
        Detector::default()
            .judge(command, &Frame::default())
            .readers
    }

    const BASH: Reader = Reader::Shell {
        bash: true,
        interactive: false,
    };

    #[test]
    fn what_reads_a_commands_stdin_is_named() {
        let sh = Reader::Shell {
            bash: false,
            interactive: false,
        };
        let cases: &[(&str, &[Reader], &str)] = &[
            ("bash", &[BASH], "a bare shell reads commands"),
            ("sh -s", &[sh], "-s: commands from stdin"),
            (
                "bash -i",
                &[Reader::Shell {
                    bash: true,
                    interactive: true,
                }],
                "interactive",
            ),
            ("cd /tmp && exec bash", &[BASH], "exec is a wrapper"),
            ("nohup sudo bash", &[BASH], "wrappers are seen through"),
            ("python3", &[Reader::Code(CodeLang::Python)], "a REPL"),
            ("python3 -", &[Reader::Code(CodeLang::Python)], "- is stdin"),
            (
                "python3 -i app.py",
                &[Reader::Code(CodeLang::Python), Reader::Unknown],
                "-i: a REPL after the script",
            ),
            ("python3 app.py", &[Reader::Unknown], "a script: unknown"),
            ("python3 -c 'print(input())'", &[], "inline code reads data"),
            ("node", &[Reader::Code(CodeLang::Node)], "node REPL"),
            ("irb", &[Reader::Code(CodeLang::Ruby)], "irb is Ruby"),
            ("sqlite3 app.db", &[Reader::Sql], "a SQL client"),
            (
                "ssh example.org",
                &[Reader::Shell {
                    bash: false,
                    interactive: true,
                }],
                "a remote login shell",
            ),
            ("ssh example.org ls", &[], "a remote command"),
            ("bash -c 'cat'", &[], "-c runs its argument: cat"),
            (
                "bash -c 'python3'",
                &[Reader::Code(CodeLang::Python)],
                "inside -c",
            ),
            ("cat | bash", &[BASH], "a pipe into a shell"),
            ("cat", &[], "a filter"),
            ("cat > notes.txt", &[], "a filter into a file"),
            ("sort | uniq -c | head", &[], "filters"),
            ("read line; echo got:$line", &[], "read takes data"),
            ("bash <<'EOF'\nls\nEOF", &[], "a heredoc feeds the shell"),
            ("echo ls | bash", &[], "echo feeds the shell"),
            (
                "./server --port 8080",
                &[Reader::Unknown],
                "an unknown program",
            ),
            (
                "sed -f - data.txt",
                &[Reader::Unknown],
                "sed's program from stdin",
            ),
            ("sleep 100", &[], "reads nothing"),
            (
                "gdb ./app",
                &[Reader::Code(CodeLang::Unread)],
                "a debugger's commands",
            ),
            (
                "expect",
                &[Reader::Code(CodeLang::Unread)],
                "Tcl with spawn",
            ),
            ("xargs -n1 echo", &[], "echo's arguments are data"),
        ];
        for (command, expected, why) in cases {
            assert_eq!(&readers(command), expected, "{command}: {why}");
        }
    }

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
