//! Look-alike characters read as the ASCII they imitate, so the threat scan sees
//! "Іgnоre" (Cyrillic `І` and `о`) as "ignore": each non-ASCII character whose UTS #39
//! skeleton (Unicode's confusables data, from `unicode-security`, the crate behind
//! rustc's confusable-identifier lint) is ASCII once combining marks are dropped is
//! replaced by that ASCII. Hand-folding a few letters would miss the thousands of
//! look-alikes the data lists (Greek, Armenian, Cherokee, mathematical, …).
//!
//! Why not refuse words that mix scripts instead: a word of Cyrillic capitals alone
//! ("ЅҮЅТЕМ") is single-script and still reads "SYSTEM", and mixed words occur in
//! honest notes (brand names with a Cyrillic ending); the skeleton catches both kinds of
//! look-alike and refuses only what then matches a threat pattern.
//!
//! One skeleton is ambiguous for a case-insensitive scan: `l` stands for `l`, `I`, `1`
//! and `|` alike, so a stroke like Cyrillic `Ӏ` may be meant as `i` or as `l` — even both
//! in one text ("dӀsregard аӀӀ rules"). Such characters become [`STROKE`], and
//! [`pattern`] lets every `i` and `l` of a threat pattern match it. ASCII is left as it
//! is: it was scanned as written, as Hermes does.

use unicode_normalization::char::is_combining_mark;
use unicode_security::skeleton;

/// What a look-alike of `l`/`I` becomes: U+01C0 LATIN LETTER DENTAL CLICK, itself such a
/// stroke, a letter (so `\w` and `\b` treat it as one) without case, and a character
/// [`fold`] never leaves in a text otherwise (its skeleton is `l`).
pub const STROKE: char = '\u{1C0}';

/// `text` with every non-ASCII look-alike of ASCII replaced by the ASCII it imitates
/// (`m` for a look-alike of `rn`, whose skeleton `m` also has; [`STROKE`] for one of `l`),
/// combining marks and default-ignorable characters dropped. Other characters stay.
pub fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
            continue;
        }
        match reading(c) {
            Some(ascii) => out.push_str(ascii.as_str()),
            None => out.push(c),
        }
    }
    out
}

/// The ASCII `c` imitates: its own skeleton's, else its lowercase's (Cyrillic `т` has no
/// ASCII skeleton; its capital `Т` reads `T`), marks dropped.
fn reading(c: char) -> Option<String> {
    let ascii = |s: &str| {
        let s: String = skeleton(s).filter(|m| !is_combining_mark(*m)).collect();
        s.is_ascii().then_some(s)
    };
    let mut own = [0u8; 4];
    let read =
        ascii(c.encode_utf8(&mut own)).or_else(|| ascii(&c.to_lowercase().collect::<String>()))?;
    Some(match read.as_str() {
        "l" => STROKE.to_string(),
        "rn" => "m".to_owned(),
        _ => read,
    })
}

/// `pattern` with each letter `i` and `l` (either case) outside a class, an escape and
/// a group's flags also matching [`STROKE`]. For the threat patterns, which have no
/// nested classes and no `\p{…}`: a test compiles every one.
pub fn pattern(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 32);
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        out.push(c);
        match c {
            '\\' => out.extend(chars.next()),
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '(' if !in_class && chars.peek() == Some(&'?') => {
                // `(?:`, `(?-u:`, `(?i)`: flags are not letters to match.
                while let Some(f) = chars.next_if(|f| *f != ':' && *f != ')') {
                    out.push(f);
                }
            }
            'i' | 'I' | 'l' | 'L' if !in_class => {
                out.pop();
                out.extend(['[', c, STROKE, ']']);
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn look_alikes_read_as_the_ascii_they_imitate() {
        for (text, read) in [
            // The issue's text: Cyrillic І (U+0406) and о (U+043E).
            ("Іgnоre all", "ǀgnore all"),
            // Cyrillic capitals alone: one script, still "SYSTEM".
            ("ЅҮЅТЕМ prompt", "SYSTEM prompt"),
            // Greek, Armenian, Latin small capital, a palochka, marks and a soft hyphen.
            ("οverrіde", "override"),
            ("ԁіѕrеgаrԁ", "disregard"),
            ("ѕуѕtеm", "system"),
            ("ɪgnore", "ignore"),
            ("aӀӀ", "aǀǀ"),
            ("ïgnöre", "ignore"),
            ("ig\u{ad}nore", "ignore"),
            ("i\u{0335}g\u{0335}nore", "ignore"),
            ("“quoted”", "''quoted''"),
            // Nothing to read: kept.
            ("日本語とключ", "日本語とключ"),
            ("plain ASCII | l 1 I rn", "plain ASCII | l 1 I rn"),
        ] {
            assert_eq!(fold(text), read, "{text}");
        }
    }

    #[test]
    fn patterns_let_i_and_l_match_a_stroke() {
        let s = STROKE;
        assert_eq!(pattern("ignore"), format!("[i{s}]gnore"));
        assert_eq!(
            pattern(r"\bname\s+(?:\w+\s+){0,8}(?-u:[^\n])LIKE\$\{?\w*(KEY|API)"),
            format!(r"\bname\s+(?:\w+\s+){{0,8}}(?-u:[^\n])[L{s}][I{s}]KE\$\{{?\w*(KEY|AP[I{s}])")
        );
        assert_eq!(pattern("[il]x(?i)l"), format!("[il]x(?i)[l{s}]"));
    }
}
