//! Inline code of other languages: interpreter payloads, SQL, PowerShell.
//!
//! We do not parse these languages. Inline code is judged by capabilities: names of the
//! APIs that mutate files, spawn processes, load code or reach the network. Code
//! without any of them (`print(sum(range(10)))`) runs freely; code with one needs
//! approval. A capability name inside a string literal is a false positive we accept.

use super::fold::Field;

/// Language of an inline program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lang {
    Python,
    Node,
    Perl,
    Ruby,
    Php,
    Awk,
    Generic,
}

pub(crate) const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "ksh93", "mksh", "ash", "yash", "rbash", "fish", "tcsh",
    "csh", "posh",
];

/// True when `argv` is a shell given only options (`sh`, `/bin/bash -i`): one that
/// reads commands from its terminal.
pub(crate) fn is_bare_shell(argv: &[Field]) -> bool {
    let Some((first, rest)) = argv.split_first() else {
        return false;
    };
    let name = first.text.rsplit('/').next().unwrap_or(&first.text);
    SHELLS.contains(&name)
        && rest
            .iter()
            .all(|w| w.text.starts_with('-') && !w.text.contains('c'))
}

/// Names of interpreters and the language of their inline code.
pub(crate) fn language(name: &str) -> Option<Lang> {
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    Some(match base {
        "python" | "pypy" => Lang::Python,
        "node" | "nodejs" | "bun" | "deno" => Lang::Node,
        "perl" => Lang::Perl,
        "ruby" | "jruby" => Lang::Ruby,
        "php" => Lang::Php,
        "awk" | "gawk" | "mawk" | "nawk" => Lang::Awk,
        "lua" | "luajit" | "tclsh" | "wish" | "Rscript" | "osascript" | "julia" | "groovy" => {
            Lang::Generic
        }
        _ => return None,
    })
}

const PYTHON: &[&str] = &[
    "import os",
    "from os",
    "os.",
    "subprocess",
    "shutil",
    "socket",
    "urllib",
    "requests",
    "http.client",
    "httpx",
    "ctypes",
    "pty",
    "__import__",
    "exec(",
    "eval(",
    "compile(",
    "system(",
    "popen",
    "remove(",
    "unlink",
    "rmtree",
    "rmdir",
    "getattr(",
    "importlib",
    "base64",
    "pickle",
    "marshal",
    "write_text",
    "write_bytes",
    ".write(",
    "sys.modules",
    "__builtins__",
    "builtins",
    "globals(",
    "setattr(",
    "signal",
    "kill",
    // Running a file's code: it was never judged.
    "runpy",
    "run_path",
    "run_module",
    "exec_module",
    "load_module",
    "SourceFileLoader",
    "execfile",
];
const NODE: &[&str] = &[
    "child_process",
    "require('fs",
    "require(\"fs",
    "require(`fs",
    "'node:",
    "\"node:",
    "fs.",
    "fs/promises",
    "'net'",
    "\"net\"",
    "'http",
    "\"http",
    "'dgram'",
    "eval(",
    "Function(",
    "process.binding",
    "process.kill",
    "fetch(",
    "rmSync",
    "unlink",
    "writeFile",
    "execSync",
    "spawn",
    "exec(",
    "Deno.",
    "Bun.",
    "import(",
    // Loading a file's code by its path: it was never judged.
    "require('.",
    "require(\".",
    "require(`.",
    "require('/",
    "require(\"/",
    "require(`/",
    "createRequire",
    "module.require",
];
const PERL: &[&str] = &[
    "system",
    "exec",
    "`",
    "qx",
    "unlink",
    "rmtree",
    "remove_tree",
    "open",
    "eval",
    "socket",
    "Socket",
    "LWP",
    "HTTP::",
    "Net::",
    "rename",
    "mkdir",
    "chmod",
    "chown",
    "kill",
    "fork",
    "pipe",
    "truncate",
    "File::",
    "require",
    "syscall",
    "do ",
];
const RUBY: &[&str] = &[
    "system",
    "exec",
    "`",
    "%x",
    "spawn",
    "FileUtils",
    "File.",
    "IO.",
    "Open3",
    "eval",
    "Socket",
    "Net::",
    "open-uri",
    "URI",
    "Kernel",
    "send(",
    "instance_eval",
    "Process",
    "Dir.",
    "rm_rf",
    "require",
    "fork",
    "open(",
    "syscall",
];
const PHP: &[&str] = &[
    "system",
    "exec",
    "shell_exec",
    "passthru",
    "popen",
    "proc_open",
    "`",
    "unlink",
    "rmdir",
    "file_put_contents",
    "fopen",
    "eval",
    "assert",
    "fsockopen",
    "curl_",
    "include",
    "require",
    "rename",
    "chmod",
    "mail(",
];
const AWK: &[&str] = &[
    "system", "getline", "|&", "| \"", "|\"", "> \"", ">\"", ">> \"", "print >", "printf >",
];
const GENERIC: &[&str] = &[
    "os.execute",
    "io.popen",
    "os.remove",
    "os.rename",
    "system",
    "exec",
    "do shell script",
    "file delete",
    "unlink",
    "socket",
    "open(",
    "eval",
    "run(",
    "`",
];

/// True when inline `code` in `lang` uses a capability that needs approval.
pub(crate) fn is_risky(lang: Lang, code: &str) -> bool {
    let needles = match lang {
        Lang::Python => PYTHON,
        Lang::Node => NODE,
        Lang::Perl => PERL,
        Lang::Ruby => RUBY,
        Lang::Php => PHP,
        Lang::Awk => AWK,
        Lang::Generic => GENERIC,
    };
    if needles.iter().any(|n| code.contains(n)) {
        return true;
    }
    // Python's open() is fine for reading; writing or appending mutates files.
    lang == Lang::Python
        && code.contains("open(")
        && [
            "'w'", "\"w\"", "'wb'", "\"wb\"", "'a'", "\"a\"", "'ab'", "\"ab\"", "'w+'", "\"w+\"",
            "'r+'", "\"r+\"", "mode=",
        ]
        .iter()
        .any(|m| code.contains(m))
}

/// True when `text` holds a destructive SQL (or SQL-like) statement: DROP, TRUNCATE,
/// DELETE without WHERE, MongoDB drops and empty-filter deletes, Redis FLUSHALL/FLUSHDB.
pub(crate) fn is_destructive_sql(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    let compact: String = lower.chars().filter(|c| !c.is_whitespace()).collect();
    if [
        "dropdatabase(",
        ".drop(",
        "deletemany({})",
        "remove({})",
        "flushall",
        "flushdb",
    ]
    .iter()
    .any(|n| compact.contains(n))
    {
        return true;
    }
    for statement in lower.split(';') {
        let words: Vec<&str> = statement
            .split(|c: char| c.is_whitespace() || c == '(' || c == '\'' || c == '"')
            .filter(|w| !w.is_empty())
            .collect();
        let Some(first) = words.first() else {
            continue;
        };
        match *first {
            "drop" | "truncate" => return true,
            "delete" if !words.contains(&"where") => return true,
            _ => {}
        }
    }
    false
}

/// PowerShell text: `Some(rule)` for a recursive delete, download-and-run, disk
/// formatting or shutdown.
pub(crate) fn powershell_rule(text: &str) -> Option<super::rules::RuleId> {
    use super::rules::RuleId;
    let lower = text.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || matches!(c, ';' | '|' | '(' | ')' | '{' | '}'))
        .filter(|w| !w.is_empty())
        .collect();
    let has = |w: &str| words.contains(&w);
    if ["format-volume", "clear-disk", "initialize-disk"]
        .iter()
        .any(|w| has(w))
    {
        return Some(RuleId::DiskFormat);
    }
    if ["stop-computer", "restart-computer"].iter().any(|w| has(w)) {
        return Some(RuleId::Shutdown);
    }
    let remove = ["remove-item", "rm", "ri", "del", "erase", "rd", "rmdir"]
        .iter()
        .any(|w| has(w));
    if remove && words.iter().any(|w| w.starts_with("-r")) {
        return Some(RuleId::PowerShellDestructive);
    }
    let runs = ["invoke-expression", "iex"].iter().any(|w| has(w));
    let fetches = [
        "downloadstring",
        "invoke-webrequest",
        "iwr",
        "irm",
        "invoke-restmethod",
        "net.webclient",
    ]
    .iter()
    .any(|w| lower.contains(w));
    if runs && fetches {
        return Some(RuleId::RemoteCode);
    }
    None
}

/// Database clients: they read SQL and client commands (on their stdin, and as
/// `checks` judges their arguments).
pub(crate) const SQL_CLIENTS: &[&str] = &[
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_make_inline_code_risky() {
        assert!(is_risky(Lang::Python, "import os; os.system('id')"));
        assert!(is_risky(Lang::Python, "open('x', 'w').write('y')"));
        assert!(!is_risky(Lang::Python, "print(sum(range(10)))"));
        assert!(!is_risky(Lang::Python, "print(open('x').read())"));
        assert!(!is_risky(Lang::Awk, "{print $1}"));
        assert!(!is_risky(Lang::Perl, "print if /TODO/"));
    }

    #[test]
    fn destructive_sql_is_recognised() {
        assert!(is_destructive_sql("DROP TABLE users"));
        assert!(is_destructive_sql("select 1; truncate orders"));
        assert!(is_destructive_sql("DELETE FROM users"));
        assert!(!is_destructive_sql("DELETE FROM users WHERE id = 1"));
        assert!(!is_destructive_sql("SELECT count(*) FROM users"));
        assert!(is_destructive_sql("db.dropDatabase()"));
    }
}
