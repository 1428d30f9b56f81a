//! Folding a word to the fields bash would give it, statically: quotes, escapes,
//! tildes, braces, expansions (a dynamic part marks the field), and locating each
//! field in the text given.

use super::parse::{PARSER_OPTIONS, catch};
use super::{Analyzer, Cx};
use crate::fold::{self, Field, Producer, quoted_literal};
use brush_parser::ast;
use brush_parser::word::{self as bword, WordPiece};

impl Analyzer<'_> {
    /// Folds a word that is not field-split (assignment values, redirection targets),
    /// as one field.
    pub(crate) fn fold_single(&mut self, raw: &str, cx: &Cx) -> Field {
        let fields = self.fold_word(raw, false, cx);
        let mut out = Field::literal("");
        for (i, f) in fields.into_iter().enumerate() {
            if i > 0 {
                out.text.push(' ');
            }
            out.text.push_str(&f.text);
            out.dynamic |= f.dynamic;
            if f.origin != Producer::None {
                out.origin = f.origin;
            }
        }
        out
    }

    /// Folds one shell word into the fields it expands to. `split`: the word is in
    /// argument position (brace expansion and field splitting apply).
    pub(crate) fn fold_word(&mut self, raw: &str, split: bool, cx: &Cx) -> Vec<Field> {
        let mut out = Vec::new();
        self.fold_word_into(raw, split, cx, &mut out);
        out
    }

    /// `fold_word`, appending the fields to `out` (argv is built without a vector per
    /// word).
    pub(super) fn fold_word_into(&mut self, raw: &str, split: bool, cx: &Cx, out: &mut Vec<Field>) {
        // Only `{a,b}` lists change words; `{1..9}` sequences yield numbers and letters
        // (and the parser crate panics on out-of-range numbers), so they are not expanded.
        if split
            && raw.contains('{')
            && raw.contains(',')
            && !has_long_digit_run(raw)
            && let Some(Ok(Some(pieces))) =
                catch(|| bword::parse_brace_expansions(raw, &PARSER_OPTIONS))
            && pieces
                .iter()
                .any(|p| matches!(p, bword::BraceExpressionOrText::Expr(_)))
        {
            for alternative in fold::expand_braces(&pieces) {
                self.fold_word_pieces(&alternative, split, cx, out);
            }
            return;
        }
        self.fold_word_pieces(raw, split, cx, out);
    }

    fn fold_word_pieces(&mut self, raw: &str, split: bool, cx: &Cx, out: &mut Vec<Field>) {
        // A drive-letter path (`C:\Users\x`) is a Windows path: its backslashes are
        // separators that agents type for Windows hosts, not shell escapes.
        let windows = raw.len() > 3
            && raw.as_bytes()[0].is_ascii_alphabetic()
            && raw[1..].starts_with(":\\")
            && !raw.contains(['$', '`', '\'', '"']);
        // `~` and `~/rest`: the parser reads a tilde prefix and the rest as text, which
        // folds back to the same characters.
        let tilde = raw == "~" || raw.starts_with("~/");
        let plain = |s: &str| !s.bytes().any(|b| SPECIAL[usize::from(b)]);
        if windows || plain(raw) || (tilde && plain(&raw[1..])) {
            let mut field = Field::literal(raw);
            field.glob = !windows && raw.bytes().any(|b| matches!(b, b'*' | b'?' | b'['));
            out.push(field);
            return;
        }
        if let Some(text) = quoted_literal(raw) {
            out.push(Field::literal(text));
            return;
        }
        let pieces = match catch(|| bword::parse(raw, &PARSER_OPTIONS)) {
            Some(Ok(p)) => p,
            _ => {
                out.push(Field {
                    text: raw.to_owned(),
                    dynamic: true,
                    origin: Producer::None,
                    glob: false,
                    span: None,
                });
                return;
            }
        };
        let mut b = FieldBuilder {
            split,
            ..FieldBuilder::default()
        };
        for p in &pieces {
            self.fold_piece(&p.piece, false, &mut b, cx);
        }
        out.extend(b.finish());
    }

    fn fold_piece(&mut self, piece: &WordPiece, quoted: bool, b: &mut FieldBuilder, cx: &Cx) {
        match piece {
            WordPiece::Text(t) => {
                if !quoted && t.contains(['*', '?', '[']) {
                    b.cur().glob = true;
                }
                b.push(t);
            }
            WordPiece::SingleQuotedText(t) => {
                b.started = true;
                b.push(t);
            }
            WordPiece::AnsiCQuotedText(t) => {
                b.started = true;
                b.push(&fold::decode_ansi_c(t));
            }
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => {
                b.started = true;
                for p in inner {
                    self.fold_piece(&p.piece, true, b, cx);
                }
            }
            WordPiece::TildeExpansion(t) => match t {
                bword::TildeExpr::Home => b.push("~"),
                bword::TildeExpr::UserHome(u) => b.push(&format!("~{u}")),
                _ => b.push_dynamic("~+", Producer::None),
            },
            WordPiece::ParameterExpansion(expr) => {
                let (text, known) = self.parameter_value(expr, cx);
                if known {
                    let ifs = self.ifs();
                    b.push_expanded(&text, quoted, &ifs);
                } else {
                    b.push_dynamic(&text, Producer::None);
                }
            }
            WordPiece::CommandSubstitution(code)
            | WordPiece::BackquotedCommandSubstitution(code) => {
                let code = if matches!(piece, WordPiece::BackquotedCommandSubstitution(_)) {
                    code.replace("\\`", "`")
                        .replace("\\$", "$")
                        .replace("\\\\", "\\")
                } else {
                    code.clone()
                };
                // It reads the shell's stdin: a file there is what it reads too.
                let nested = Cx {
                    depth: cx.depth + 1,
                    stdin: Producer::None,
                    bulk: false,
                    function: cx.function.clone(),
                    stdin_file: cx.stdin_file.clone(),
                };
                let summary = self.analyze_code(&code, &nested);
                match summary.producer {
                    Producer::Literal(text) if summary.commands == 1 => {
                        let ifs = self.ifs();
                        b.push_expanded(text.trim_end_matches('\n'), quoted, &ifs);
                    }
                    origin => {
                        let origin = match origin {
                            Producer::None | Producer::Literal(_) => Producer::Other,
                            o => o,
                        };
                        b.push_dynamic("$(...)", origin);
                    }
                }
            }
            WordPiece::EscapeSequence(s) => {
                let escaped = s.strip_prefix('\\').unwrap_or(s);
                if escaped == "\n" {
                    return;
                }
                if quoted && !matches!(escaped, "$" | "`" | "\"" | "\\") {
                    b.push(s);
                } else {
                    b.started = true;
                    b.push(escaped);
                }
            }
            WordPiece::ArithmeticExpression(e) => {
                self.scan_arithmetic(&e.value, cx);
                b.push_dynamic("$((...))", Producer::None);
            }
        }
    }

    /// Gives the field `word` folded to (the last of `fields`, when it is the only one
    /// `word` gave: `before` fields were there before) its span in the text given,
    /// when `word` is one literal word of it.
    pub(super) fn locate_word(&self, word: &ast::Word, fields: &mut [Field], before: usize) {
        if !self.locating() || fields.len() != before + 1 {
            return;
        }
        let (Some(field), Some(loc)) = (fields.last_mut(), &word.loc) else {
            return;
        };
        let raw = word.value.as_str();
        let literal =
            !raw.bytes().any(|b| SPECIAL[usize::from(b)]) || quoted_literal(raw).is_some();
        if literal && !field.dynamic && !field.glob {
            field.span = Some((loc.start.index, loc.end.index));
        }
    }

    pub(super) fn fold_heredoc(&mut self, body: &str, cx: &Cx) -> String {
        match catch(|| bword::parse_heredoc(body, &PARSER_OPTIONS)) {
            Some(Ok(pieces)) => {
                let mut b = FieldBuilder::default();
                for p in &pieces {
                    self.fold_piece(&p.piece, true, &mut b, cx);
                }
                b.finish()
                    .into_iter()
                    .map(|f| f.text)
                    .collect::<Vec<_>>()
                    .join(" ")
            }
            _ => body.to_owned(),
        }
    }

    fn ifs(&self) -> String {
        match self.vars.get("IFS") {
            Some(Some(v)) => v.clone(),
            Some(None) => " \t\n".to_owned(),
            None => " \t\n".to_owned(),
        }
    }
}

/// Accumulates fields while folding one word.
#[derive(Default)]
struct FieldBuilder {
    split: bool,
    fields: Vec<Field>,
    cur: Option<Field>,
    /// A quote was seen: the word yields a field even if empty (`""`).
    started: bool,
}

impl FieldBuilder {
    fn cur(&mut self) -> &mut Field {
        self.cur.get_or_insert_with(|| Field::literal(""))
    }

    fn push(&mut self, text: &str) {
        self.cur().text.push_str(text);
    }

    fn push_dynamic(&mut self, text: &str, origin: Producer) {
        let cur = self.cur();
        cur.text.push_str(text);
        cur.dynamic = true;
        if origin != Producer::None {
            cur.origin = origin;
        }
    }

    /// Appends an expansion's value; unquoted values are split on IFS characters.
    fn push_expanded(&mut self, value: &str, quoted: bool, ifs: &str) {
        if quoted || !self.split || ifs.is_empty() {
            self.push(value);
            return;
        }
        let mut first = true;
        for segment in value.split(|c| ifs.contains(c)) {
            if !first {
                self.end_field();
            }
            first = false;
            self.push(segment);
        }
    }

    fn end_field(&mut self) {
        if let Some(f) = self.cur.take()
            && (!f.text.is_empty() || self.started)
        {
            self.fields.push(f);
        }
        self.started = false;
    }

    fn finish(mut self) -> Vec<Field> {
        if self.cur.is_none() && self.started {
            self.cur = Some(Field::literal(""));
        }
        self.end_field();
        self.fields
    }
}

/// Bytes after which a word needs the word parser: quotes, escapes, expansions and
/// the tilde (a table: this is asked of every word).
const SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let bytes = b"$`'\"\\~";
    let mut k = 0;
    while k < bytes.len() {
        t[bytes[k] as usize] = true;
        k += 1;
    }
    t
};

/// True when `s` holds more than 18 consecutive digits (more than an `i64` holds).
fn has_long_digit_run(s: &str) -> bool {
    let mut run = 0;
    for b in s.bytes() {
        run = if b.is_ascii_digit() { run + 1 } else { 0 };
        if run > 18 {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain-word shortcut folds tilde words exactly as the parser's pieces do.
    #[test]
    fn tilde_words_fold_as_the_parser_reads_them() {
        let det = crate::Detector::default();
        for raw in ["~", "~/x", "~/src/*.rs", "~/.ssh/id_rsa", "~/a[12]"] {
            let mut a = Analyzer::new(&det.protection);
            let fast = a.fold_word(raw, true, &Cx::default());
            let pieces = bword::parse(raw, &PARSER_OPTIONS).unwrap();
            let mut b = FieldBuilder {
                split: true,
                ..FieldBuilder::default()
            };
            for p in &pieces {
                a.fold_piece(&p.piece, false, &mut b, &Cx::default());
            }
            assert_eq!(fast, b.finish(), "{raw}");
        }
    }

    /// The quoted-literal shortcut folds words exactly as the parser's pieces do.
    #[test]
    fn quoted_literals_fold_as_the_parser_reads_them() {
        for raw in [
            "'a b'", "''", "\"\"", "\"a b\"", "'a\"b'", "\"it's\"", "'*'", "\"~/x\"", "'\n'",
            "\"a\nb\"", "\"!x\"",
        ] {
            let text = quoted_literal(raw).unwrap_or_else(|| panic!("{raw}: no shortcut"));
            let pieces = bword::parse(raw, &PARSER_OPTIONS).unwrap();
            let parsed = match &pieces[..] {
                [p] => match &p.piece {
                    WordPiece::SingleQuotedText(t) => t.clone(),
                    WordPiece::DoubleQuotedSequence(inner) => inner
                        .iter()
                        .map(|p| match &p.piece {
                            WordPiece::Text(t) => t.clone(),
                            other => panic!("{raw}: {other:?}"),
                        })
                        .collect(),
                    other => panic!("{raw}: {other:?}"),
                },
                other => panic!("{raw}: {other:?}"),
            };
            assert_eq!(text, parsed, "{raw}");
        }
        for raw in [
            "'a'b'",
            "\"$x\"",
            "\"a\\\"b\"",
            "'a'\"b\"",
            "\"`id`\"",
            "'a",
            "\"",
        ] {
            assert_eq!(quoted_literal(raw), None, "{raw}");
        }
    }
}
