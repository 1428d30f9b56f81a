//! Parameter expansions (`${x:-…}`, `${x/…/…}`, `${!x}`, …): their static value
//! when it is known, and the code inside their parts.

use super::{Analyzer, Cx};
use crate::fold::Field;
use brush_parser::word::{Parameter, ParameterExpr, ParameterTestType};

impl Analyzer<'_> {
    /// The value of a parameter expansion: `(text, known)`. Unknown values keep a
    /// readable stand-in (`$NAME`) so path rules can still see the variable name.
    pub(super) fn parameter_value(&mut self, expr: &ParameterExpr, cx: &Cx) -> (String, bool) {
        self.analyze_expansion_parts(expr, cx);
        let named = |p: &Parameter| match p {
            Parameter::Named(n) => Some(n.clone()),
            _ => None,
        };
        match expr {
            ParameterExpr::Parameter {
                parameter,
                indirect: false,
            } => match named(parameter) {
                Some(n) => self.lookup(&n),
                None => (format!("${parameter}"), false),
            },
            ParameterExpr::UseDefaultValues {
                parameter,
                indirect: false,
                test_type,
                default_value,
            } => {
                let default = default_value
                    .as_deref()
                    .map(|d| self.fold_single(d, cx))
                    .unwrap_or_else(|| Field::literal(""));
                match named(parameter).map(|n| (self.vars.contains_key(&n), self.lookup(&n))) {
                    Some((true, (v, true))) => {
                        let empty_uses_default =
                            matches!(test_type, ParameterTestType::UnsetOrNull);
                        if v.is_empty() && empty_uses_default {
                            (default.text, !default.dynamic)
                        } else {
                            (v, true)
                        }
                    }
                    // Not assigned in this command: it may come from the environment,
                    // so the default is a guess, not a fact.
                    _ => (default.text, false),
                }
            }
            ParameterExpr::Substring {
                parameter,
                indirect: false,
                offset,
                length,
            } => {
                let Some(n) = named(parameter) else {
                    return (format!("${{{parameter}:...}}"), false);
                };
                let (v, known) = self.lookup(&n);
                let off = offset.value.trim().parse::<usize>().ok();
                let len = match length {
                    Some(l) => l.value.trim().parse::<usize>().ok().map(Some),
                    None => Some(None),
                };
                match (known, off, len) {
                    (true, Some(off), Some(len)) => {
                        let chars = v.chars().skip(off);
                        let s: String = match len {
                            Some(l) => chars.take(l).collect(),
                            None => chars.collect(),
                        };
                        (s, true)
                    }
                    _ => (format!("${{{n}:...}}"), false),
                }
            }
            _ => ("${...}".to_owned(), false),
        }
    }

    fn lookup(&self, name: &str) -> (String, bool) {
        match self.vars.get(name) {
            Some(Some(v)) => (v.clone(), true),
            Some(None) => (format!("${name}"), false),
            None => match name {
                "HOME" => ("~".to_owned(), true),
                "IFS" => (" \t\n".to_owned(), true),
                _ => (format!("${name}"), false),
            },
        }
    }

    /// Analyzes the code bash runs while expanding `${…}`: a subscript (arithmetic for
    /// indexed arrays), substring offsets (arithmetic), and the words of patterns,
    /// replacements, alternatives and messages, which are expanded like any word.
    /// (Defaults of `${x:-…}` are folded where their value is needed.)
    fn analyze_expansion_parts(&mut self, expr: &ParameterExpr, cx: &Cx) {
        use ParameterExpr as E;
        let (parameter, words): (Option<&Parameter>, [Option<&String>; 2]) = match expr {
            E::Parameter { parameter, .. }
            | E::UseDefaultValues { parameter, .. }
            | E::ParameterLength { parameter, .. }
            | E::Transform { parameter, .. } => (Some(parameter), [None, None]),
            E::AssignDefaultValues {
                parameter,
                default_value: w,
                ..
            }
            | E::IndicateErrorIfNullOrUnset {
                parameter,
                error_message: w,
                ..
            }
            | E::UseAlternativeValue {
                parameter,
                alternative_value: w,
                ..
            }
            | E::RemoveSmallestSuffixPattern {
                parameter,
                pattern: w,
                ..
            }
            | E::RemoveLargestSuffixPattern {
                parameter,
                pattern: w,
                ..
            }
            | E::RemoveSmallestPrefixPattern {
                parameter,
                pattern: w,
                ..
            }
            | E::RemoveLargestPrefixPattern {
                parameter,
                pattern: w,
                ..
            }
            | E::UppercaseFirstChar {
                parameter,
                pattern: w,
                ..
            }
            | E::UppercasePattern {
                parameter,
                pattern: w,
                ..
            }
            | E::LowercaseFirstChar {
                parameter,
                pattern: w,
                ..
            }
            | E::LowercasePattern {
                parameter,
                pattern: w,
                ..
            } => (Some(parameter), [w.as_ref(), None]),
            E::ReplaceSubstring {
                parameter,
                pattern,
                replacement,
                ..
            } => (Some(parameter), [Some(pattern), replacement.as_ref()]),
            E::Substring {
                parameter,
                offset,
                length,
                ..
            } => {
                self.scan_arithmetic(&offset.value, cx);
                if let Some(l) = length {
                    self.scan_arithmetic(&l.value, cx);
                }
                (Some(parameter), [None, None])
            }
            E::VariableNames { .. } | E::MemberKeys { .. } => (None, [None, None]),
        };
        if let Some(Parameter::NamedWithIndex { index, .. }) = parameter {
            self.scan_arithmetic(index, cx);
        }
        for w in words.into_iter().flatten() {
            self.fold_word(w, false, cx);
        }
    }
}
