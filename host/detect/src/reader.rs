//! What reads a command's standard input (a leaf: the walk records readers, `input`
//! judges text for them).

use serde::Serialize;

/// A program that reads a command's standard input as something other than data: what
/// is written to that stdin is code it runs, and must be judged as such.
///
/// A command whose simple commands are all known filters (`cat`, `sort`, `grep`, …) or
/// read no input has no reader: what it is sent is data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Reader {
    /// A shell reading commands: `bash`, `sh -s`, `bash -i`, `ssh HOST` (a remote
    /// login shell), `sudo -s`.
    Shell {
        /// It is bash, whose syntax the detector parses. Any other shell (`sh` is dash
        /// on Debian, busybox ash in containers) reads `$'…'` and `$"…"` differently.
        bash: bool,
        /// It is interactive (`-i`): history expansion (`!!`, `!rm`) is on.
        interactive: bool,
    },
    /// An interpreter reading its program or REPL lines: `python3`, `node`, `perl`,
    /// `irb`, `python3 -i app.py`, `python3 -`.
    Code(CodeLang),
    /// A database client reading SQL and its own client commands (`sqlite3 app.db`,
    /// `psql`, `mysql`, `redis-cli`).
    Sql,
    /// A program the detector does not know that may read its stdin (`./tool`,
    /// `python3 app.py`, `make`): it may hand what it reads to a shell, so each line it
    /// is sent is judged as a shell command of its own.
    Unknown,
}

/// The language of an interpreter's input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CodeLang {
    /// Python (`python3`, `ipython`).
    Python,
    /// JavaScript (`node`, `deno`, `mongosh`).
    Node,
    /// Perl.
    Perl,
    /// Ruby (`ruby`, `irb`, `pry`).
    Ruby,
    /// PHP (`php -a`, `psysh`).
    Php,
    /// Another language the detector knows only by its risky API names (Lua, R,
    /// Julia, …), as it judges their `-e` code.
    Other,
    /// A language whose ways to run a program or touch files the detector does not
    /// list (a debugger's `shell`, ghci's `:!`, Erlang's `os:cmd`, Tcl's `open |`,
    /// expect's `spawn`): it cannot judge a line, so every line is unparseable.
    Unread,
}
