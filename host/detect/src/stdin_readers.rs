//! What reads a command's standard input: each simple command of a judged command
//! says how it uses the stdin it inherits (`note_stdin`, called by the walk), and the
//! host judges what a process is later sent for those readers (`input.rs`).

use super::code::{Lang, SHELLS, SQL_CLIENTS, language};
use super::fold::{Field, Producer};
use super::opts::{self, Spec};
use super::reader::{CodeLang, Reader};
use super::walk::{Analyzer, Invocation};

/// Most readers recorded for one input (each is a judge of later input).
const MAX_READERS: usize = 8;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Detector, Frame};

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
}
