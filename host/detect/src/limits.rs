//! Size and nesting limits, checked before the parser runs.
//!
//! The parser is recursive: a few kilobytes of `$($($(…)))` or `( ( ( … ) ) )` would
//! otherwise exhaust a thread's stack, and every extra level multiplies the work of the
//! carriers we re-parse. A cheap, quote-aware scan bounds the nesting first; anything
//! over a limit is dangerous by itself (an agent has no need for it).

/// Longest command accepted, in bytes. Agents write files with heredocs, so this is
/// generous; past it a human should look.
pub const MAX_INPUT_BYTES: usize = 64 * 1024;

/// Deepest syntactic nesting accepted (subshells, groups, substitutions, quotes,
/// compound commands). Real commands rarely pass 6.
pub const MAX_NESTING: usize = 24;

/// Deepest chain of carriers (`bash -c "sh -c '…'"`, `eval`, `ssh host …`) followed.
pub const MAX_CARRIER_DEPTH: usize = 8;

/// Most simple commands analyzed for one input, all carriers and substitutions
/// included; bounds the total work on adversarial input.
pub const MAX_COMMANDS: usize = 2048;

/// Most variable values evaluated for one arithmetic expression (`$((x))` evaluates
/// `x`'s value, and the variables that value names, as arithmetic). bash allows deep
/// chains; commands agents write have one or two.
pub const MAX_ARITHMETIC_VALUES: usize = 32;

/// Most glob arguments of one command read as the options they could expand to, and
/// most option-like file names (`./-delete`) made earlier that a glob may expand to.
/// Each costs a re-check of the command per match; a real command has one or two.
pub const MAX_GLOB_ARGS: usize = 4;

/// Longest working directory followed through `cd`s, in bytes; past it the directory
/// is read as unknown (`$CWD`). Every file recorded as fresh carries it as a prefix,
/// so it bounds their size; real directories are far shorter.
pub const MAX_CWD_BYTES: usize = 256;

/// Most files recorded as written, downloaded or made executable in one input. Past
/// it every file counts as fresh (running any file is then flagged): dropping entries
/// would let padding hide a download, and more entries cost memory and a longer scan
/// per command. A real command line records a handful.
pub const MAX_FRESH_FILES: usize = 256;

/// Most script files one input is reported to run ([`crate::ScriptRun`]). Past it the
/// input is too large to judge: each one is a file the host reads and judges before
/// the input runs, and a real command line runs one or two.
pub const MAX_SCRIPTS: usize = 16;

/// True when `text` nests deeper than `limit`. Short text without brackets cannot
/// (every level needs a bracket or a keyword of at least three characters with its
/// separator), so the common case skips the scan.
pub(crate) fn exceeds_nesting(text: &str, limit: usize) -> bool {
    if text.len() < 3 * limit && !text.bytes().any(|b| matches!(b, b'(' | b'{' | b'`')) {
        return false;
    }
    nesting_depth(text, limit).is_none()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Top,
    Paren,
    Brace,
    DQuote,
    Backtick,
}

/// Maximum nesting depth of `text` as the shell would see it, or `None` once it passes
/// `limit` (the scan stops there, so it is linear in the input).
///
/// Heredoc bodies are skipped (their content is data unless it is expanded, and then
/// its substitutions are scanned when they are parsed). Keywords that open compound
/// commands (`if`, `while`, `until`, `for`, `case`, `select`) count like brackets and
/// their closers (`fi`, `done`, `esac`) close them.
pub(crate) fn nesting_depth(text: &str, limit: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut stack: Vec<Ctx> = Vec::new();
    let mut keywords: usize = 0;
    let mut max = 0usize;
    let mut pending_heredocs: Vec<String> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let top = stack.last().copied().unwrap_or(Ctx::Top);
        let in_dquote = top == Ctx::DQuote;
        match c {
            b'\\' => {
                i += 2;
                continue;
            }
            b'\'' if !in_dquote => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'\'' {
                    i += 1;
                }
            }
            b'"' => {
                if in_dquote {
                    stack.pop();
                } else {
                    stack.push(Ctx::DQuote);
                }
            }
            b'`' => {
                if top == Ctx::Backtick {
                    stack.pop();
                } else {
                    stack.push(Ctx::Backtick);
                }
            }
            b'$' if bytes.get(i + 1) == Some(&b'\'') && !in_dquote => {
                i += 2;
                while i < bytes.len() && bytes[i] != b'\'' {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            // Inside double quotes only `$(` and `${` open anything.
            b'(' if !in_dquote || (i > 0 && bytes[i - 1] == b'$') => stack.push(Ctx::Paren),
            b'{' if !in_dquote || (i > 0 && bytes[i - 1] == b'$') => stack.push(Ctx::Brace),
            b')' if !in_dquote && top == Ctx::Paren => {
                stack.pop();
            }
            b'}' if !in_dquote && top == Ctx::Brace => {
                stack.pop();
            }
            b'#' if !in_dquote && (i == 0 || bytes[i - 1].is_ascii_whitespace()) => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'<' if !in_dquote
                && bytes.get(i + 1) == Some(&b'<')
                && bytes.get(i + 2) != Some(&b'<') =>
            {
                i = heredoc_delimiter(text, i + 2, &mut pending_heredocs);
                continue;
            }
            b'\n' if !pending_heredocs.is_empty() => {
                // Skip the bodies of the heredocs opened on the line that just ended.
                i = skip_heredoc_bodies(text, i + 1, &mut pending_heredocs);
                continue;
            }
            c if c.is_ascii_alphabetic() && !in_dquote => {
                let start = i;
                i = word_end(bytes, i);
                match keyword(text, start, i) {
                    Some(true) => keywords += 1,
                    Some(false) => keywords = keywords.saturating_sub(1),
                    None => {}
                }
                max = max.max(stack.len() + keywords);
                if max > limit {
                    return None;
                }
                continue;
            }
            _ => {}
        }
        max = max.max(stack.len() + keywords);
        if max > limit {
            return None;
        }
        i += 1;
    }
    Some(max)
}

/// Reads the delimiter of a heredoc whose operator ends before `i` (after `<<`, an
/// optional `-` and blanks) into `pending`; returns the index after it.
fn heredoc_delimiter(text: &str, mut i: usize, pending: &mut Vec<String>) -> usize {
    let bytes = text.as_bytes();
    if bytes.get(i) == Some(&b'-') {
        i += 1;
    }
    while i < bytes.len() && (bytes[i] == b' ' || bytes[i] == b'\t') {
        i += 1;
    }
    let start = i;
    while i < bytes.len() && !b" \t\n;&|<>()".contains(&bytes[i]) {
        i += 1;
    }
    let delim: String = text[start..i]
        .chars()
        .filter(|c| !matches!(c, '\'' | '"' | '\\'))
        .collect();
    if !delim.is_empty() {
        pending.push(delim);
    }
    i
}

/// Skips, from the start of line `i`, the bodies of the heredocs `pending` opened on
/// the line before; returns the index after the last delimiter line.
fn skip_heredoc_bodies(text: &str, mut i: usize, pending: &mut Vec<String>) -> usize {
    let len = text.len();
    for delim in std::mem::take(pending) {
        while i < len {
            let end = text[i..].find('\n').map_or(len, |n| i + n);
            let line = text[i..end].trim_start_matches('\t');
            i = (end + 1).min(len);
            if line == delim {
                break;
            }
        }
    }
    i
}

/// The end of the name starting at `i`.
fn word_end(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
        i += 1;
    }
    i
}

/// For the name `text[start..end]` standing as a whole word: `Some(true)` when it
/// opens a compound command, `Some(false)` when it closes one.
fn keyword(text: &str, start: usize, end: usize) -> Option<bool> {
    const BREAKS: &[u8] = b" \t\n;&|(){}`";
    let bytes = text.as_bytes();
    let whole = (start == 0 || BREAKS.contains(&bytes[start - 1]))
        && (end == bytes.len() || BREAKS.contains(&bytes[end]));
    match &text[start..end] {
        _ if !whole => None,
        "if" | "while" | "until" | "for" | "case" | "select" => Some(true),
        "fi" | "done" | "esac" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_counts_substitutions_groups_and_keywords() {
        assert_eq!(nesting_depth("ls -la", 24), Some(0));
        assert_eq!(nesting_depth("echo $(echo $(id))", 24), Some(2));
        assert_eq!(
            nesting_depth("if a; then if b; then c; fi; fi", 24),
            Some(2)
        );
        assert_eq!(nesting_depth("echo ')))' \"(\"", 24), Some(1));
    }

    #[test]
    fn heredoc_bodies_do_not_count() {
        let text = "cat <<'EOF' > x.py\nif a:\n  if b:\n    f((((((1))))))\nEOF\nls";
        assert_eq!(nesting_depth(text, 24), Some(0));
    }

    #[test]
    fn the_fast_path_agrees_with_the_scan() {
        assert!(!exceeds_nesting("ls -la && git status", 24));
        assert!(exceeds_nesting(&"$(".repeat(30), 24));
        assert!(exceeds_nesting(&"if a; then ".repeat(30), 24));
    }

    #[test]
    fn nesting_over_the_limit_stops_the_scan() {
        let deep = "$(".repeat(100) + &")".repeat(100);
        assert_eq!(nesting_depth(&deep, 24), None);
        let quoted_closers = "$( ')' ".repeat(30);
        assert_eq!(nesting_depth(&quoted_closers, 24), None);
    }
}
