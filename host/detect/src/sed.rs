//! sed: scripts are parsed, not grepped, because GNU sed runs shell commands (the `e`
//! command, the `e` flag of `s`) and writes files (`w`, `W`, the `w` flag) from inside
//! its script, where an `e` in a pattern or in appended text means nothing.

use super::fold::Field;
use super::paths::{self, canonical};
use super::rules::RuleId;
use super::walk::Analyzer;
use super::walk::Invocation;

/// What a sed script does beyond editing text.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Effects {
    /// Commands run by `e command`.
    pub commands: Vec<String>,
    /// Lines run as commands: `e` without a command, or `s///e`.
    pub runs_input: bool,
    /// Files written by `w`, `W` or the `w` flag of `s`.
    pub writes: Vec<String>,
    /// The script could not be parsed: what it does is unknown.
    pub unparsed: bool,
}

/// Parses a sed script (GNU syntax, a superset of POSIX) for what it runs and writes.
pub(crate) fn effects(script: &str) -> Effects {
    let mut out = Effects::default();
    let b = script.as_bytes();
    let mut i = 0;
    while i < b.len() {
        // Separators and whitespace between commands.
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b';') {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        if !skip_address(b, &mut i) || !skip_address_tail(b, &mut i) {
            out.unparsed = true;
            return out;
        }
        while i < b.len() && (b[i] == b' ' || b[i] == b'\t' || b[i] == b'!') {
            i += 1;
        }
        let Some(&c) = b.get(i) else {
            out.unparsed = true;
            return out;
        };
        i += 1;
        if !read_command(script, c, &mut i, &mut out) {
            out.unparsed = true;
            return out;
        }
    }
    out
}

/// The text from `i` up to the end of the line, trimmed (file names, `e` commands
/// and labels end there); `i` is left at the newline.
fn to_eol(script: &str, i: &mut usize) -> String {
    let b = script.as_bytes();
    let start = *i;
    while *i < b.len() && b[*i] != b'\n' {
        *i += 1;
    }
    script[start..*i].trim().to_owned()
}

/// Reads the arguments of command `c` from `i`, noting what it runs and writes;
/// false when malformed.
fn read_command(script: &str, c: u8, i: &mut usize, out: &mut Effects) -> bool {
    let b = script.as_bytes();
    match c {
        b'#' | b'r' | b'R' => {
            to_eol(script, i);
        }
        b'{' | b'}' | b'=' | b'd' | b'D' | b'g' | b'G' | b'h' | b'H' | b'n' | b'N' | b'p'
        | b'P' | b'x' | b'z' | b'F' => {}
        b'q' | b'Q' | b'l' | b'L' => {
            while *i < b.len() && (b[*i].is_ascii_digit() || b[*i] == b' ') {
                *i += 1;
            }
        }
        // Text commands: the rest of the line (and continuation lines) is text.
        b'a' | b'i' | b'c' => {
            while *i < b.len() {
                if b[*i] == b'\\' && *i + 1 < b.len() {
                    *i += 2;
                    continue;
                }
                if b[*i] == b'\n' {
                    break;
                }
                *i += 1;
            }
        }
        // Labels end at a newline or a semicolon (GNU).
        b':' | b'b' | b't' | b'T' | b'v' => {
            while *i < b.len() && b[*i] != b'\n' && b[*i] != b';' {
                *i += 1;
            }
        }
        b'w' | b'W' => {
            let file = to_eol(script, i);
            out.writes.push(file);
        }
        b'e' => {
            let command = to_eol(script, i);
            if command.is_empty() {
                out.runs_input = true;
            } else {
                out.commands.push(command);
            }
        }
        b's' | b'y' => return read_substitution(script, c == b's', i, out),
        _ => return false,
    }
    true
}

/// Reads `s/re/text/flags` (or `y/a/b/`, `substitute` false) from its delimiter at
/// `i`; false when malformed.
fn read_substitution(script: &str, substitute: bool, i: &mut usize, out: &mut Effects) -> bool {
    let b = script.as_bytes();
    let Some(&delim) = b.get(*i) else {
        return false;
    };
    if delim == b'\n' || delim == b'\\' {
        return false;
    }
    *i += 1;
    for _ in 0..2 {
        if !skip_delimited(b, i, delim) {
            return false;
        }
    }
    if !substitute {
        return true;
    }
    // Flags: g p i I m M e, a number, and `w file` (last, to the line end).
    while *i < b.len() {
        match b[*i] {
            b'g' | b'p' | b'i' | b'I' | b'm' | b'M' | b'0'..=b'9' => *i += 1,
            b'e' => {
                out.runs_input = true;
                *i += 1;
            }
            b'w' => {
                *i += 1;
                let file = to_eol(script, i);
                out.writes.push(file);
            }
            _ => break,
        }
    }
    true
}

/// Skips one address (`12`, `$`, `/re/I`, `\%re%`, `first~step`); true unless
/// malformed. No address at all is fine.
fn skip_address(b: &[u8], i: &mut usize) -> bool {
    match b.get(*i) {
        Some(c) if c.is_ascii_digit() => {
            while *i < b.len() && (b[*i].is_ascii_digit() || b[*i] == b'~') {
                *i += 1;
            }
            true
        }
        Some(b'$') => {
            *i += 1;
            true
        }
        Some(b'/') => {
            *i += 1;
            skip_delimited(b, i, b'/') && skip_regex_flags(b, i)
        }
        Some(b'\\') => match b.get(*i + 1) {
            Some(&d) if d != b'\n' => {
                *i += 2;
                skip_delimited(b, i, d) && skip_regex_flags(b, i)
            }
            _ => false,
        },
        _ => true,
    }
}

/// Skips `,addr`, `,+N` or `,~N` after a first address.
fn skip_address_tail(b: &[u8], i: &mut usize) -> bool {
    while *i < b.len() && b[*i] == b' ' {
        *i += 1;
    }
    if b.get(*i) != Some(&b',') {
        return true;
    }
    *i += 1;
    while *i < b.len() && b[*i] == b' ' {
        *i += 1;
    }
    if matches!(b.get(*i), Some(b'+' | b'~')) {
        *i += 1;
    }
    skip_address(b, i)
}

fn skip_regex_flags(b: &[u8], i: &mut usize) -> bool {
    while *i < b.len() && matches!(b[*i], b'I' | b'M') {
        *i += 1;
    }
    true
}

/// Skips text up to and past an unescaped `delim`; false when it never comes.
fn skip_delimited(b: &[u8], i: &mut usize, delim: u8) -> bool {
    while *i < b.len() {
        if b[*i] == b'\\' {
            *i += 2;
            continue;
        }
        if b[*i] == delim {
            *i += 1;
            return true;
        }
        *i += 1;
    }
    false
}

impl Analyzer<'_> {
    /// sed and gsed: the script (first operand, or every `-e`/`--expression`, or a
    /// `-f` file) is parsed for commands it runs and files it writes, and `-i` edits
    /// of protected files are reported.
    ///
    /// A script with a part only known at run time (`"s/x/$NEW/"`) is parsed as far as
    /// it is known: a value could smuggle in an `e` flag, but treating every
    /// substitution of a variable as code would flag the most common use of sed.
    pub(crate) fn check_sed(&mut self, args: &[Field], inv: &Invocation<'_>) {
        let r = inv.rendered;
        let mut scripts: Vec<&str> = Vec::new();
        let mut script_files: Vec<Field> = Vec::new();
        let mut operands: Vec<&Field> = Vec::new();
        let (mut in_place, mut sandbox) = (false, false);
        let mut i = 0;
        while i < args.len() {
            let t = args[i].text.as_str();
            i += 1;
            if t == "--" {
                operands.extend(&args[i..]);
                break;
            }
            if let Some(long) = t.strip_prefix("--") {
                let (name, inline) = match long.split_once('=') {
                    Some((n, v)) => (n, Some(v)),
                    None => (long, None),
                };
                // GNU sed's long options, down to the shortest unambiguous prefix.
                let is = |full: &str, min: usize| name.len() >= min && full.starts_with(name);
                let (expression, file) = (is("expression", 1), is("file", 2));
                let value = if (expression || file || is("line-length", 1)) && inline.is_none() {
                    i += 1;
                    args.get(i - 1).map(|f| f.text.as_str())
                } else {
                    inline
                };
                match value {
                    Some(v) if expression => scripts.push(v),
                    Some(v) if file => script_files.push(Field::literal(v)),
                    _ => {}
                }
                in_place |= is("in-place", 1);
                sandbox |= is("sandbox", 2);
                continue;
            }
            if t.len() > 1 && t.starts_with('-') {
                for (k, c) in t.char_indices().skip(1) {
                    let attached = &t[k + c.len_utf8()..];
                    if c == 'i' {
                        // -i takes an optional attached suffix: the rest of the word.
                        in_place = true;
                        break;
                    }
                    if matches!(c, 'e' | 'f' | 'l') {
                        let value = if attached.is_empty() {
                            i += 1;
                            args.get(i - 1).map(|f| f.text.as_str())
                        } else {
                            Some(attached)
                        };
                        match (c, value) {
                            ('e', Some(v)) => scripts.push(v),
                            ('f', Some(v)) => script_files.push(Field::literal(v)),
                            _ => {}
                        }
                        break;
                    }
                }
                continue;
            }
            operands.push(&args[i - 1]);
        }
        if scripts.is_empty() && script_files.is_empty() && !operands.is_empty() {
            scripts.push(&operands.remove(0).text);
        }
        for f in &script_files {
            if matches!(f.text.as_str(), "-" | "/dev/stdin" | "/dev/fd/0") {
                self.check_stdin_code(None, inv);
            } else {
                self.check_script(f, inv);
            }
        }
        if in_place {
            for f in &operands {
                if paths::is_protected(&canonical(&f.text), &self.own.agent_dirs) {
                    self.hit(RuleId::ProtectedWrite, r);
                }
            }
        }
        if sandbox {
            // --sandbox makes sed reject e, w and r: the script cannot escape.
            return;
        }
        let found = effects(&scripts.join("\n"));
        if found.runs_input || !found.commands.is_empty() || found.unparsed {
            self.hit(RuleId::SedExec, r);
        }
        for command in &found.commands {
            self.run_payload_text(command, inv);
        }
        for file in &found.writes {
            self.check_write(&Field::literal(file.as_str()), true, r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_e_command_and_the_e_flag_are_found_and_e_elsewhere_is_not() {
        assert!(effects("s/.*/id/e").runs_input);
        assert!(effects("s|a|b|pe").runs_input);
        assert!(effects("e").runs_input);
        assert_eq!(effects("1e date").commands, vec!["date".to_owned()]);
        assert_eq!(
            effects("$!e uname -a").commands,
            vec!["uname -a".to_owned()]
        );
        assert_eq!(effects("/x/,/y/ { e ls\n}").commands, vec!["ls".to_owned()]);
        for harmless in [
            "s/e/E/g",
            "/e/p",
            "$a exit; e",
            "1i echo e",
            ":a;N;$!ba;s/\\n/ /g",
            "y/e/f/",
            "s/\\/e/X/",
            "/^version/{s/.*= //;p;q}",
            "\\%e%d",
            "0~2d",
            "1,+3 s/x/y/I",
        ] {
            assert_eq!(effects(harmless), Effects::default(), "{harmless}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_script_parses_without_panicking(script in "(?s).{0,80}") {
            let _ = effects(&script);
        }

        #[test]
        fn scripts_of_sed_syntax_parse_without_panicking(
            script in "[ -~\n\\\\/|;{}!$0-9eswy\u{e9}]{0,60}"
        ) {
            let _ = effects(&script);
        }
    }

    #[test]
    fn writes_are_found_and_malformed_scripts_are_unparsed() {
        assert_eq!(effects("w out.txt").writes, vec!["out.txt".to_owned()]);
        assert_eq!(effects("s/a/b/w /etc/x").writes, vec!["/etc/x".to_owned()]);
        assert!(effects("s/a/b").unparsed);
        assert!(effects("k").unparsed);
    }
}
