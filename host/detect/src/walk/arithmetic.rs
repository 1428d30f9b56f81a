//! Arithmetic (`$((…))`, `((…))`, subscripts, `for ((…))`): the command
//! substitutions it hides, and those in the values of the variables it names.

use super::{Analyzer, Cx};
use crate::fold::{Field, Producer};
use crate::limits::{MAX_ARITHMETIC_VALUES, MAX_CARRIER_DEPTH};
use crate::rules::RuleId;

impl Analyzer<'_> {
    /// Scans a folded word that bash evaluates as arithmetic. Dynamic parts were
    /// analyzed while folding and stand as placeholders (`$(...)`), which are not code.
    pub(crate) fn scan_arithmetic_field(&mut self, field: &Field, cx: &Cx) {
        if !field.dynamic {
            self.scan_arithmetic(&field.text, cx);
        }
    }

    /// Arithmetic text can hide command substitutions (`$(…)`, backticks, and array
    /// subscripts that bash evaluates); analyze each one found. bash evaluates the
    /// value of every variable named in arithmetic as arithmetic again
    /// (`x='a[$(id)]'; echo $((x))` runs `id`), so known values are scanned as well.
    pub(crate) fn scan_arithmetic(&mut self, text: &str, cx: &Cx) {
        if cx.depth > MAX_CARRIER_DEPTH {
            self.hit(RuleId::TooLarge, text);
            return;
        }
        // The values of the variables named, and of the variables those name, each
        // once (a cycle is bash's own error), up to MAX_ARITHMETIC_VALUES.
        let mut values: Vec<String> = Vec::new();
        if !self.vars.is_empty() {
            let mut k = 0;
            let mut source = text.to_owned();
            loop {
                for name in identifiers(&source) {
                    if values.len() >= MAX_ARITHMETIC_VALUES {
                        break;
                    }
                    if let Some(Some(v)) = self.vars.get(name)
                        && !values.contains(v)
                    {
                        values.push(v.clone());
                    }
                }
                match values.get(k) {
                    Some(v) => source.clone_from(v),
                    None => break,
                }
                k += 1;
            }
        }
        for v in &values {
            self.scan_substitutions(v, cx);
        }
        self.scan_substitutions(text, cx);
    }

    /// Analyzes the command substitutions in arithmetic text.
    fn scan_substitutions(&mut self, text: &str, cx: &Cx) {
        let mut rest = text;
        while let Some(start) = rest.find("$(") {
            let body = &rest[start + 2..];
            let mut depth = 1usize;
            let mut end = body.len();
            for (i, c) in body.char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            end = i;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let inner = &body[..end];
            let nested = Cx {
                depth: cx.depth + 1,
                stdin: Producer::None,
                ..cx.clone()
            };
            // `$((…))` inside arithmetic is arithmetic again; `$(…)` is code.
            match inner.strip_prefix('(').and_then(|i| i.strip_suffix(')')) {
                Some(arithmetic) => self.scan_arithmetic(arithmetic, &nested),
                None => {
                    self.analyze_code(inner, &nested);
                }
            }
            rest = &body[end.min(body.len())..];
        }
        if let Some(start) = text.find('`')
            && let Some(len) = text[start + 1..].find('`')
        {
            let nested = Cx {
                depth: cx.depth + 1,
                stdin: Producer::None,
                ..cx.clone()
            };
            self.analyze_code(&text[start + 1..start + 1 + len], &nested);
        }
    }
}

/// The names in arithmetic text (`a`, `x` in `a[x+1] + $y`), each once per occurrence.
fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            let start = i;
            let c = bytes[i];
            if c.is_ascii_alphabetic() || c == b'_' {
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                return text.get(start..i);
            }
            if c.is_ascii_digit() {
                // A number (`0x1f`, `16#ff`) is not a name.
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'#') {
                    i += 1;
                }
                continue;
            }
            i += 1;
        }
        None
    })
}
