//! Input to a database client (`sqlite3`, `psql`, `mysql`, `redis-cli`, …), judged a
//! line at a time: its SQL and its own client commands.

use super::code;
use super::rules::RuleId;

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
pub(crate) fn sql_line_rule(line: &str) -> Option<RuleId> {
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
