//! Static word folding: what a shell word evaluates to when that can be known without
//! running anything (quotes, escapes, `$'…'`, brace expansion, `echo`/`printf` output).
//!
//! Everything here is pure string work; the walker decides what is known.

use brush_parser::word::{BraceExpressionMember, BraceExpressionOrText};

/// One argument after folding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Field {
    /// The folded text. Parts that could not be folded appear as written (`$NAME`,
    /// `$(…)`), so path rules still see `$HERMES_HOME/.env`.
    pub text: String,
    /// Part of the text is only known at run time.
    pub dynamic: bool,
    /// Where the dynamic part comes from, when it is a command substitution or a
    /// process substitution whose producer we could classify.
    pub origin: Producer,
    /// The word holds an unquoted glob (`*`, `?`, `[`): the shell may replace it with
    /// the names of files, which can be any text, options included.
    pub glob: bool,
    /// Where the word stands in the text the detector was given (character indices,
    /// end exclusive): set only for a literal word of that text itself (not of a
    /// carrier's payload or a substitution), which a script run may be pinned at.
    pub span: Option<(usize, usize)>,
}

impl Field {
    pub(crate) fn literal(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            dynamic: false,
            origin: Producer::None,
            glob: false,
            span: None,
        }
    }
}

/// True when the glob `pattern` matches all of `text` (`*`, `?`, `[…]` with ranges and
/// `!`/`^` negation; a backslash quotes the next character).
pub(crate) fn glob_matches(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    // Iterative matching with one backtrack point for the last `*`: no recursion on
    // agent input, and O(pattern × text) steps at worst — not linear, but the text is
    // always one of the short option names of GLOB_OPTIONS (≤ 12 bytes) while the
    // pattern is the agent's, so the cost is linear in what the agent sent.
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        let step = match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, ti));
                pi += 1;
                continue;
            }
            Some(b'?') => Some(pi + 1),
            Some(b'[') => match_class(p, pi, t[ti]),
            Some(b'\\') if pi + 1 < p.len() => (p[pi + 1] == t[ti]).then_some(pi + 2),
            Some(&c) => (c == t[ti]).then_some(pi + 1),
            None => None,
        };
        match step {
            Some(next) => {
                pi = next;
                ti += 1;
            }
            None => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p[pi.min(p.len())..].iter().all(|&c| c == b'*')
}

/// Matches `c` against the bracket expression at `p[start]`; the index after it.
fn match_class(p: &[u8], start: usize, c: u8) -> Option<usize> {
    let mut i = start + 1;
    let negate = matches!(p.get(i), Some(b'!' | b'^'));
    if negate {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    while i < p.len() && (first || p[i] != b']') {
        first = false;
        let lo = p[i];
        if p.get(i + 1) == Some(&b'-') && p.get(i + 2).is_some_and(|&h| h != b']') {
            matched |= (lo..=p[i + 2]).contains(&c);
            i += 3;
        } else {
            matched |= lo == c;
            i += 1;
        }
    }
    // An unclosed `[` is an ordinary character.
    if i >= p.len() {
        return (c == b'[').then_some(start + 1);
    }
    (matched != negate).then_some(i + 1)
}

/// What feeds data into a command: used to tell `curl … | sh` from `cat <<EOF | sh`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum Producer {
    /// Nothing classified (a terminal, a plain file, or not a substitution).
    #[default]
    None,
    /// Text that is fully known (an `echo`/`printf` of literals, a heredoc).
    Literal(String),
    /// Content fetched over the network (`curl`, `wget`, `nc`, `ssh`).
    Network,
    /// Content decoded or transformed (`base64 -d`, `xxd -r`, `openssl enc -d`, `tr`).
    Decoder,
    /// Content read from credential files (`~/.ssh`, `~/.aws`, `.env`).
    Credentials,
    /// Output of some other command: unknown at analysis time.
    Other,
}

/// Decodes the body of an ANSI-C quoted string (`$'…'`).
pub(crate) fn decode_ansi_c(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        match e {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            'e' | 'E' => out.push('\u{1b}'),
            'f' => out.push('\u{c}'),
            'v' => out.push('\u{b}'),
            '\\' | '\'' | '"' | '?' => out.push(e),
            'x' => push_code(&mut out, take_digits(&mut chars, 16, 2), 16),
            'u' => push_code(&mut out, take_digits(&mut chars, 16, 4), 16),
            'U' => push_code(&mut out, take_digits(&mut chars, 16, 8), 16),
            'c' => {
                if let Some(x) = chars.next() {
                    out.push(char::from((x as u32 & 0x1f) as u8));
                }
            }
            '0'..='7' => {
                let mut digits = String::from(e);
                digits.push_str(&take_digits(&mut chars, 8, 2));
                push_code(&mut out, digits, 8);
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    out
}

fn take_digits(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    radix: u32,
    max: usize,
) -> String {
    let mut digits = String::new();
    while digits.len() < max {
        match chars.peek() {
            Some(c) if c.is_digit(radix) => {
                digits.push(*c);
                chars.next();
            }
            _ => break,
        }
    }
    digits
}

fn push_code(out: &mut String, digits: String, radix: u32) {
    if let Some(c) = u32::from_str_radix(&digits, radix)
        .ok()
        .and_then(char::from_u32)
    {
        out.push(c);
    }
}

/// Output of `echo ARGS` (bash builtin: `-n`, `-e`, `-E` flags), without the trailing
/// newline that command substitution strips anyway.
pub(crate) fn eval_echo(args: &[String]) -> String {
    let mut escapes = false;
    let mut rest = args;
    while let Some(first) = rest.first() {
        let flag = first.len() > 1
            && first.starts_with('-')
            && first[1..].chars().all(|c| matches!(c, 'n' | 'e' | 'E'));
        if !flag {
            break;
        }
        if first.contains('e') {
            escapes = true;
        }
        if first.contains('E') {
            escapes = false;
        }
        rest = &rest[1..];
    }
    let joined = rest.join(" ");
    if escapes {
        decode_ansi_c(&joined)
    } else {
        joined
    }
}

/// Output of `printf FORMAT ARGS` when the format uses only `%s`, `%b`, `%%` and
/// escapes; `None` for anything else (numbers, widths), which stays dynamic.
pub(crate) fn eval_printf(args: &[String]) -> Option<String> {
    let (format, mut rest) = match args.split_first() {
        Some((f, r)) if f == "--" => r.split_first()?,
        Some(split) => split,
        None => return None,
    };
    let mut out = String::new();
    // printf reuses the format while arguments remain; cap the rounds.
    for _ in 0..16 {
        let mut chars = format.chars().peekable();
        let mut consumed = false;
        let mut literal = String::new();
        while let Some(c) = chars.next() {
            if c == '%' {
                match chars.next() {
                    Some('%') => literal.push('%'),
                    Some('s') | Some('b') => {
                        out.push_str(&decode_ansi_c(&std::mem::take(&mut literal)));
                        if let Some((arg, tail)) = rest.split_first() {
                            out.push_str(arg);
                            rest = tail;
                            consumed = true;
                        }
                    }
                    _ => return None,
                }
            } else {
                literal.push(c);
            }
        }
        out.push_str(&decode_ansi_c(&literal));
        if rest.is_empty() || !consumed {
            break;
        }
    }
    Some(out)
}

/// Most alternatives a brace expansion may produce before we stop expanding (the rest
/// is still analyzed as the unexpanded word).
const MAX_BRACE_ALTERNATIVES: usize = 32;

/// Expands `{a,b}` alternatives in raw word text (before quote removal). Sequences
/// (`{1..9}`) produce only their first element: numbers and letters do not change
/// what a command does, and a huge range must not cost time.
pub(crate) fn expand_braces(pieces: &[BraceExpressionOrText]) -> Vec<String> {
    let mut acc = vec![String::new()];
    for piece in pieces {
        match piece {
            BraceExpressionOrText::Text(t) => {
                for a in &mut acc {
                    a.push_str(t);
                }
            }
            BraceExpressionOrText::Expr(members) => {
                let mut alternatives = Vec::new();
                for member in members {
                    match member {
                        BraceExpressionMember::Child(children) => {
                            alternatives.extend(expand_braces(children));
                        }
                        BraceExpressionMember::NumberSequence { start, .. } => {
                            alternatives.push(start.to_string());
                        }
                        BraceExpressionMember::CharSequence { start, .. } => {
                            alternatives.push(start.to_string());
                        }
                    }
                }
                let mut next = Vec::new();
                'outer: for a in &acc {
                    for alt in &alternatives {
                        if next.len() >= MAX_BRACE_ALTERNATIVES {
                            break 'outer;
                        }
                        next.push(format!("{a}{alt}"));
                    }
                }
                acc = next;
            }
        }
    }
    acc
}

/// Appends `text` to `out`, quoted for display when it holds characters the shell
/// would split on.
pub(crate) fn push_display_word(out: &mut String, text: &str) {
    /// The bytes shown unquoted, as a table (this runs for every word).
    const PLAIN: [bool; 256] = {
        let mut t = [false; 256];
        let mut c = 0;
        while c < 256 {
            t[c] = (c as u8).is_ascii_alphanumeric();
            c += 1;
        }
        let extra = b"-_./=:,+@%~^*?[]{}$!#";
        let mut k = 0;
        while k < extra.len() {
            t[extra[k] as usize] = true;
            k += 1;
        }
        t
    };
    if !text.is_empty() && text.bytes().all(|c| PLAIN[usize::from(c)]) {
        out.push_str(text);
    } else {
        out.push('\'');
        for (i, part) in text.split('\'').enumerate() {
            if i > 0 {
                out.push_str("'\\''");
            }
            out.push_str(part);
        }
        out.push('\'');
    }
}

/// The text of a word that is one quoted string with nothing in it to expand
/// (`'a b'`, `"a b"`): what the parser would fold it to, without parsing it (a fifth
/// of the words agents write are such strings). Anything else is `None`.
pub(crate) fn quoted_literal(raw: &str) -> Option<&str> {
    if let Some(inner) = raw.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')) {
        return (!inner.contains('\'')).then_some(inner);
    }
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.contains(['"', '$', '`', '\\'])).then_some(inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_like_the_shell() {
        for (pattern, text) in [
            ("-del*", "-delete"),
            ("-del?te", "-delete"),
            ("-[d]elete", "-delete"),
            ("-[a-e]elete", "-delete"),
            ("*", "-rf"),
            ("-*f", "-rf"),
            ("-[!x]f", "-rf"),
            ("\\-rf", "-rf"),
            ("--forc*", "--force"),
        ] {
            assert!(glob_matches(pattern, text), "{pattern} {text}");
        }
        for (pattern, text) in [
            ("-del*", "-exec"),
            ("*.log", "-delete"),
            ("-[!d]elete", "-delete"),
            ("-d?", "-delete"),
            ("[", "x"),
        ] {
            assert!(!glob_matches(pattern, text), "{pattern} {text}");
        }
    }

    proptest::proptest! {
        #[test]
        fn glob_matching_never_panics(pattern in "[-a-z*?\\[\\]!^\\\\]{0,16}", text in "[-a-z]{0,12}") {
            let _ = glob_matches(&pattern, &text);
        }
    }

    #[test]
    fn ansi_c_escapes_decode() {
        assert_eq!(decode_ansi_c("\\x72\\x6d"), "rm");
        assert_eq!(decode_ansi_c("\\162\\155"), "rm");
        assert_eq!(decode_ansi_c("r\\155"), "rm");
        assert_eq!(decode_ansi_c("\\t"), "\t");
        assert_eq!(decode_ansi_c("\\u0072m"), "rm");
    }

    #[test]
    fn echo_and_printf_fold_literals() {
        let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        assert_eq!(eval_echo(&s(&["-n", "rm"])), "rm");
        assert_eq!(eval_echo(&s(&["rm", "-rf"])), "rm -rf");
        assert_eq!(eval_printf(&s(&["\\162m"])).as_deref(), Some("rm"));
        assert_eq!(eval_printf(&s(&["%s", "rm"])).as_deref(), Some("rm"));
        assert_eq!(eval_printf(&s(&["%d", "1"])), None);
    }
}
