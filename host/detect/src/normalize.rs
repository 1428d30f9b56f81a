//! Normalization of a command before it is parsed, and detection of characters that
//! make a command look like something it is not.
//!
//! What an operator reads in a prompt and what the shell runs must be the same text.
//! ANSI escapes can hide text on a terminal, NUL bytes and zero-width characters split
//! words invisibly, bidi overrides reorder what is shown, and compatibility characters
//! (fullwidth `ｌｓ`) or foreign look-alikes (Cyrillic `ѕ`) imitate ASCII. Each of these
//! is reported as a finding (dangerous by itself) and removed or folded so that the
//! parser sees what the shell would run.

use std::borrow::Cow;
use unicode_normalization::UnicodeNormalization;

/// Something suspicious found while normalizing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finding {
    /// ANSI escape sequences, NUL or other C0/C1 control characters.
    ControlChars,
    /// Zero-width, bidi-override or other invisible formatting characters.
    InvisibleChars,
    /// Non-ASCII characters that normalize (NFKC) to ASCII, such as fullwidth letters.
    Lookalike,
}

/// The normalized text (borrowed when nothing changed) and what was found on the way.
#[derive(Debug, Clone, Default)]
pub(crate) struct Normalized<'a> {
    pub text: Cow<'a, str>,
    pub findings: Vec<Finding>,
    /// The text before its backslash-newlines were folded, when it had any: inside a
    /// comment one is no continuation (`# note \` ends at its newline, and the next
    /// line runs), so the parser, which follows continuations itself, reads this too.
    pub unfolded: Option<Cow<'a, str>>,
}

/// The text being rebuilt by the full normalization, and its findings.
#[derive(Default)]
struct Rebuilt {
    text: String,
    findings: Vec<Finding>,
    unfolded: Option<String>,
}

impl Rebuilt {
    fn note(&mut self, finding: Finding) {
        if !self.findings.contains(&finding) {
            self.findings.push(finding);
        }
    }
}

/// True for characters that render as nothing or reorder text: zero-width spaces and
/// joiners, bidi embeddings/overrides/isolates, word joiners, invisible operators, the
/// BOM, soft hyphen, Hangul fillers, variation selectors and tag characters.
fn is_invisible(c: char) -> bool {
    matches!(c as u32,
        0x00AD | 0x034F | 0x061C | 0x115F | 0x1160 | 0x17B4 | 0x17B5 | 0x180B..=0x180F
        | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x206F | 0x3164 | 0xFE00..=0xFE0F
        | 0xFEFF | 0xFFA0 | 0xFFF9..=0xFFFB | 0x1D173..=0x1D17A | 0xE0000..=0xE0FFF)
}

/// Normalizes `input`: removes ANSI escape sequences and control characters, folds CRLF
/// and line continuations, removes invisible characters and applies NFKC, noting every
/// kind of change that hides or disguises text.
pub(crate) fn normalize(input: &str) -> Normalized<'_> {
    // Printable ASCII with newlines and tabs (nearly every command) has nothing to
    // remove or fold but line continuations.
    if input
        .bytes()
        .all(|b| (0x20..0x7f).contains(&b) || b == b'\n' || b == b'\t')
    {
        let (text, unfolded) = if input.contains("\\\n") {
            (
                Cow::Owned(input.replace("\\\n", "")),
                Some(Cow::Borrowed(input)),
            )
        } else {
            (Cow::Borrowed(input), None)
        };
        return Normalized {
            text,
            findings: Vec::new(),
            unfolded,
        };
    }
    let out = rebuild(input);
    Normalized {
        text: Cow::Owned(out.text),
        findings: out.findings,
        unfolded: out.unfolded.map(Cow::Owned),
    }
}

/// The full normalization, character by character.
fn rebuild(input: &str) -> Rebuilt {
    let mut out = Rebuilt {
        text: String::with_capacity(input.len()),
        findings: Vec::new(),
        unfolded: None,
    };
    let mut chars = input.chars().peekable();
    let mut non_ascii = false;
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => {
                out.note(Finding::ControlChars);
                skip_escape(&mut chars);
            }
            '\u{9b}' => {
                // C1 CSI: the one-character form of ESC [.
                out.note(Finding::ControlChars);
                skip_csi(&mut chars);
            }
            '\r' => {
                // CRLF is a line ending from another platform, not a disguise; a lone CR
                // can overwrite what a terminal shows.
                if chars.peek() != Some(&'\n') {
                    out.note(Finding::ControlChars);
                    out.text.push('\n');
                }
            }
            '\n' | '\t' => out.text.push(c),
            c if c.is_control() => out.note(Finding::ControlChars),
            c if is_invisible(c) => out.note(Finding::InvisibleChars),
            c => {
                non_ascii |= !c.is_ascii();
                out.text.push(c);
            }
        }
    }
    if non_ascii {
        let mut lookalike = false;
        for c in out.text.chars().filter(|c| !c.is_ascii()) {
            let mut folded = std::iter::once(c).nfkc();
            if folded.any(|f| f.is_ascii()) {
                lookalike = true;
                break;
            }
        }
        if lookalike {
            out.note(Finding::Lookalike);
        }
        out.text = out.text.nfkc().collect();
    }
    // A backslash-newline is a line continuation: the shell joins the lines, so the
    // parser and every rule see them joined.
    if out.text.contains("\\\n") {
        let folded = out.text.replace("\\\n", "");
        out.unfolded = Some(std::mem::replace(&mut out.text, folded));
    }
    out
}

/// Skips the rest of an escape sequence after ESC: CSI (`ESC [ … final`), OSC
/// (`ESC ] … BEL` or `ESC ] … ESC \`), or a two-character escape.
fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.peek() {
        Some('[') => {
            chars.next();
            skip_csi(chars);
        }
        Some(']') | Some('P') | Some('_') | Some('^') => {
            chars.next();
            while let Some(c) = chars.next() {
                if c == '\u{7}' {
                    break;
                }
                if c == '\u{1b}' {
                    if chars.peek() == Some(&'\\') {
                        chars.next();
                    }
                    break;
                }
            }
        }
        Some(_) => {
            chars.next();
        }
        None => {}
    }
}

/// Skips CSI parameters and intermediates up to and including the final byte.
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            break;
        }
        if !('\u{20}'..='\u{3f}').contains(&c) {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_sequences_are_removed_and_reported() {
        let n = normalize("\u{1b}[31mrm\u{1b}[0m -rf /");
        assert_eq!(n.text, "rm -rf /");
        assert_eq!(n.findings, vec![Finding::ControlChars]);
        let n = normalize("\u{1b}]0;title\u{7}rm -rf /");
        assert_eq!(n.text, "rm -rf /");
    }

    #[test]
    fn crlf_and_line_continuations_are_folded_without_findings() {
        let n = normalize("rm -rf \\\r\n/");
        assert_eq!(n.text, "rm -rf /");
        assert!(n.findings.is_empty());
    }

    #[test]
    fn the_text_before_folding_continuations_is_kept() {
        let n = normalize("# note \\\nrm -rf /");
        assert_eq!(n.text, "# note rm -rf /");
        assert_eq!(n.unfolded.as_deref(), Some("# note \\\nrm -rf /"));
        assert_eq!(normalize("ls").unfolded, None);
    }

    #[test]
    fn invisible_and_fullwidth_characters_are_reported() {
        assert_eq!(
            normalize("r\u{200b}m").findings,
            vec![Finding::InvisibleChars]
        );
        let n = normalize("ｌｓ -ｌａ");
        assert_eq!(n.text, "ls -la");
        assert_eq!(n.findings, vec![Finding::Lookalike]);
    }

    #[test]
    fn ordinary_non_ascii_text_is_not_a_finding() {
        for text in ["echo café", "grep 日本 docs/", "echo naïve façade"] {
            assert!(normalize(text).findings.is_empty(), "{text}");
        }
    }
}
