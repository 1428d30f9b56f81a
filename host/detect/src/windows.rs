//! Windows `cmd.exe` command lines passed through (`cmd /c …`, also from PowerShell):
//! agents on Windows hosts, or with a Windows-built toolchain on the PATH, reach the
//! same destructive acts through cmd's own built-ins (`del /s`, `rd /s`, `format`).

use super::fold::Field;
use super::limits::MAX_CARRIER_DEPTH;
use super::rules::RuleId;
use super::walk::Analyzer;
use super::walk::Invocation;

/// True when `name` (a command name as typed) is cmd.exe, in any case and with or
/// without a Windows directory (`C:\Windows\System32\cmd.exe`).
pub(crate) fn is_cmd(name: &str) -> bool {
    let base = name.rsplit(['\\', '/']).next().unwrap_or(name);
    let base = match base.len().checked_sub(4).and_then(|n| base.get(n..)) {
        Some(ext) if ext.eq_ignore_ascii_case(".exe") => &base[..base.len() - 4],
        _ => base,
    };
    base.eq_ignore_ascii_case("cmd")
}

/// cmd's built-in commands: they are not programs, so a segment that starts with one
/// is not checked as a Unix command line.
const BUILTINS: &[&str] = &[
    "assoc", "break", "call", "cd", "chdir", "cls", "color", "copy", "date", "dir", "echo",
    "endlocal", "exit", "for", "ftype", "goto", "if", "md", "mkdir", "mklink", "move", "path",
    "pause", "popd", "prompt", "pushd", "rem", "ren", "rename", "set", "setlocal", "shift", "time",
    "title", "type", "ver", "verify", "vol",
];

/// True when one of `words` is a switch cluster holding `/letter` (`/s`, `/S`,
/// `/q/s`).
fn has_switch(words: &[&str], letter: char) -> bool {
    words.iter().any(|w| {
        w.starts_with('/')
            && w.split('/')
                .any(|s| s.len() == 1 && s.starts_with(|c: char| c.eq_ignore_ascii_case(&letter)))
    })
}

impl Analyzer<'_> {
    /// `cmd [switches] /c|/k command line`.
    pub(crate) fn check_cmd(&mut self, args: &[Field], inv: &Invocation<'_>) {
        // `/r` is the old spelling of `/c`.
        let start = args.iter().position(|a| {
            a.text.eq_ignore_ascii_case("/c")
                || a.text.eq_ignore_ascii_case("/k")
                || a.text.eq_ignore_ascii_case("/r")
        });
        let Some(start) = start else { return };
        let line: Vec<&str> = args[start + 1..].iter().map(|a| a.text.as_str()).collect();
        self.check_cmd_line(&line.join(" "), inv, 0);
    }

    /// Checks a cmd command line: `&&`, `||`, `&` and `|` separate commands.
    pub(crate) fn check_cmd_line(&mut self, line: &str, inv: &Invocation<'_>, depth: usize) {
        let r = inv.rendered;
        if depth > MAX_CARRIER_DEPTH {
            self.hit(RuleId::TooLarge, r);
            return;
        }
        let line = line.trim().trim_matches('"');
        for segment in line.split(['&', '|']) {
            let words: Vec<&str> = segment.split_whitespace().collect();
            let Some(first) = words.first() else { continue };
            let verb = first.trim_start_matches('@').to_ascii_lowercase();
            let rest = &words[1..];
            let operands = || rest.iter().filter(|w| !w.starts_with('/'));
            match verb.as_str() {
                "del" | "erase" => {
                    // Every file of a directory, like `rm *`; one named file is safe.
                    let every = operands().any(|w| {
                        let last = w.rsplit(['\\', '/']).next().unwrap_or(w);
                        last == "*" || last == "*.*"
                    });
                    if has_switch(rest, 's') || every {
                        self.hit(RuleId::WindowsDestructive, r);
                    }
                }
                "rd" | "rmdir" if has_switch(rest, 's') => {
                    self.hit(RuleId::WindowsDestructive, r);
                }
                "format" if operands().next().is_some() => self.hit(RuleId::DiskFormat, r),
                "start" => {
                    let program: Vec<&str> = rest
                        .iter()
                        .copied()
                        .skip_while(|w| w.starts_with('/') || w.starts_with('"'))
                        .collect();
                    self.check_cmd_line(&program.join(" "), inv, depth + 1);
                }
                v if is_cmd(v) => {
                    if let Some(i) = rest
                        .iter()
                        .position(|w| w.eq_ignore_ascii_case("/c") || w.eq_ignore_ascii_case("/k"))
                    {
                        self.check_cmd_line(&rest[i + 1..].join(" "), inv, depth + 1);
                    }
                }
                v if BUILTINS.contains(&v) || v.is_empty() => {}
                _ => {
                    // A program (git, rm.exe from a Unix toolchain, powershell):
                    // checked as the argv it is.
                    let argv: Vec<Field> = words.iter().map(|w| Field::literal(*w)).collect();
                    self.run_argv(&argv, inv, false, false);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmd_is_recognised_in_any_spelling() {
        for name in [
            "cmd",
            "CMD",
            "cmd.exe",
            "Cmd.Exe",
            "C:\\Windows\\System32\\cmd.exe",
        ] {
            assert!(is_cmd(name), "{name}");
        }
        for name in ["cmdx", "cm", "mycmd.exe", "é"] {
            assert!(!is_cmd(name), "{name}");
        }
    }

    #[test]
    fn switch_clusters_are_read_in_any_case() {
        assert!(has_switch(&["/S"], 's'));
        assert!(has_switch(&["/q/s"], 's'));
        assert!(!has_switch(&["/q"], 's'));
        assert!(!has_switch(&["s"], 's'));
    }
}
