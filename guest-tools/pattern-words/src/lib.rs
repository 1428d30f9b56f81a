//! The words a regular expression needs to match, for guests that run in a fresh
//! sandbox on every call: there a compiled regex is never reused, compiling costs
//! milliseconds, and most texts hold none of a pattern's words. Reading the words with
//! regex's own parser costs microseconds; a pattern whose words a text lacks cannot
//! match it and need not be compiled.
//!
//! The reading is conservative: what it cannot read (a large class, an optional part, a
//! look-around) needs nothing, so [`Words::may_match`] is `false` only when the pattern
//! cannot match. (Hand-written because regex-syntax's literal extractor gives prefixes
//! and suffixes, not the inner words, and gives up on bounded repetitions like these.)

use regex_syntax::hir::{Class, Hir, HirKind};

/// A class of at most this many characters is read as a choice of words.
const MAX_CLASS_CHARS: usize = 10;
/// At most this many words stand for one run of literals and small classes.
const MAX_CHOICES: usize = 64;

/// What a pattern needs: every group has one of its words in any match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Words {
    groups: Vec<Vec<String>>,
}

impl Words {
    /// The words `pattern` needs, as written (for a pattern matched case-sensitively).
    /// A pattern that does not parse needs nothing (its compile will refuse it).
    pub fn of(pattern: &str) -> Self {
        let groups = regex_syntax::Parser::new()
            .parse(pattern)
            .map(|hir| needed(&hir))
            .unwrap_or_default();
        Self { groups }
    }

    /// The same words lowercased, for a pattern matched case-insensitively: then
    /// [`Words::may_match`] wants a lowercased text. Exact when no character of the text
    /// case-folds to a word's letter without lowercasing to it: true of ASCII words
    /// in NFKC text (the two exceptions, U+212A KELVIN SIGN and U+017F LONG S, NFKC
    /// turns into `K` and `s`).
    pub fn folded(mut self) -> Self {
        for group in &mut self.groups {
            for word in group.iter_mut() {
                *word = word.to_lowercase();
            }
        }
        self
    }

    /// `false` when `text` lacks a word the pattern needs, so the pattern cannot match
    /// it (lowercase `text` first for [`Words::folded`] words).
    pub fn may_match(&self, text: &str) -> bool {
        self.groups
            .iter()
            .all(|any_of| any_of.iter().any(|word| text.contains(word.as_str())))
    }
}

/// Every group `hir` needs (one of its words each).
fn needed(hir: &Hir) -> Vec<Vec<String>> {
    match hir.kind() {
        HirKind::Literal(lit) => vec![vec![text(&lit.0)]],
        HirKind::Capture(capture) => needed(&capture.sub),
        HirKind::Repetition(rep) if rep.min >= 1 => needed(&rep.sub),
        HirKind::Concat(parts) => concat(parts),
        HirKind::Alternation(branches) => {
            // Whichever branch matched, one of its needed words is there: one group a
            // branch (its most selective), or nothing when a branch needs nothing.
            let mut any_of = Vec::new();
            for branch in branches {
                match most_selective(needed(branch)) {
                    Some(group) => any_of.extend(group),
                    None => return Vec::new(),
                }
            }
            vec![any_of]
        }
        _ => Vec::new(),
    }
}

/// A concatenation: runs of literals and small classes are one choice of words
/// (`gh[pousr]_` needs one of `ghp_`, `gho_`, …), each other part adds its own groups.
fn concat(parts: &[Hir]) -> Vec<Vec<String>> {
    let mut groups = Vec::new();
    let mut run: Vec<Vec<u8>> = vec![Vec::new()];
    let flush = |run: &mut Vec<Vec<u8>>, groups: &mut Vec<Vec<String>>| {
        if run.iter().all(|w| !w.is_empty()) {
            groups.push(run.iter().map(|w| text(w)).collect());
        }
        *run = vec![Vec::new()];
    };
    for part in parts {
        match part.kind() {
            HirKind::Literal(lit) => {
                for word in &mut run {
                    word.extend_from_slice(&lit.0);
                }
            }
            HirKind::Class(class) => match small_class(class) {
                Some(choices) if run.len() * choices.len() <= MAX_CHOICES => {
                    run = run
                        .iter()
                        .flat_map(|word| choices.iter().map(move |c| [word.as_slice(), c].concat()))
                        .collect();
                }
                _ => flush(&mut run, &mut groups),
            },
            _ => {
                flush(&mut run, &mut groups);
                groups.extend(needed(part));
            }
        }
    }
    flush(&mut run, &mut groups);
    groups
}

/// The characters of a class of at most [`MAX_CLASS_CHARS`], each as UTF-8.
fn small_class(class: &Class) -> Option<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    match class {
        Class::Unicode(class) => {
            for range in class.ranges() {
                for c in range.start()..=range.end() {
                    if out.len() == MAX_CLASS_CHARS {
                        return None;
                    }
                    out.push(c.to_string().into_bytes());
                }
            }
        }
        Class::Bytes(class) => {
            for range in class.ranges() {
                for b in range.start()..=range.end() {
                    // A byte of a multi-byte character is not a word of its own.
                    if out.len() == MAX_CLASS_CHARS || !b.is_ascii() {
                        return None;
                    }
                    out.push(vec![b]);
                }
            }
        }
    }
    Some(out)
}

/// The group whose shortest word is longest (the rarest to find by chance).
fn most_selective(groups: Vec<Vec<String>>) -> Option<Vec<String>> {
    groups
        .into_iter()
        .max_by_key(|group| group.iter().map(String::len).min().unwrap_or(0))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(pattern: &str) -> Vec<Vec<String>> {
        Words::of(pattern).groups
    }

    #[test]
    fn words_of_patterns() {
        assert_eq!(
            groups(r"ignore\s+(?:\w+\s+){0,8}(previous|all)\s+instructions"),
            [
                vec!["ignore"],
                vec!["previous", "all"],
                vec!["instructions"]
            ]
        );
        assert_eq!(
            groups(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
            [vec!["AKIA", "ASIA"]]
        );
        assert_eq!(
            groups(r"(?-u)\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
            [vec!["gho_", "ghp_", "ghr_", "ghs_", "ghu_", "github_pat_"]]
        );
        assert_eq!(groups(r"check[\s\-]?in"), [vec!["check"], vec!["in"]]);
        assert_eq!(
            groups(r"register\s+(as\s+)?a?\s*node"),
            [vec!["register"], vec!["node"]]
        );
        // A branch needing nothing: the alternation needs nothing.
        assert_eq!(groups(r"(?:x|\d)y"), [vec!["y"]]);
        assert!(groups(r"\w+").is_empty());
        assert!(groups(r"(unclosed").is_empty());
    }

    #[test]
    fn may_match_is_false_only_without_a_needed_word() {
        let words = Words::of(r"system\s+prompt").folded();
        assert!(words.may_match("the system prompt"));
        assert!(words.may_match("system, prompt")); // words there, no match: compiled
        assert!(!words.may_match("the system"));
        let nothing = Words::of(r"\d+");
        assert!(nothing.may_match(""));
    }

    /// Against regex itself: wherever a pattern matches a text, the text has its words.
    /// Texts are random sequences of the patterns' own pieces, so matches are common.
    #[test]
    fn never_false_where_the_pattern_matches() {
        // Each pattern with the pieces its texts are made of: its own words in both
        // cases, separators, and noise.
        let cases: [(&str, &[&str]); 8] = [
            (
                r"ignore\s+(?:\w+\s+){0,8}(previous|all|above|prior)\s+(?:\w+\s+){0,8}instructions",
                &[
                    "ignore ",
                    "IGNORE ",
                    "all ",
                    "Prior ",
                    "instructions",
                    "x ",
                    " ",
                    "ſ",
                ],
            ),
            (
                r"(heartbeat|beacon|check[\s\-]?in)\s+(to|with)\s+",
                &["heartbeat", "check", "-", " ", "in", "to", "WITH", "x"],
            ),
            (
                r"register\s+(as\s+)?a?\s*node",
                &["register", " ", "as", "a", "node", "NODE", "x"],
            ),
            (
                r"\$HOME/\.ssh|~/\.ssh",
                &["$HOME", "$home", "~", "/.ssh", "/.SSH", "x"],
            ),
            (
                r"(?:api[_-]?key|token)\s*[=:]\s*[\x22'][A-Za-z0-9+/=_-]{4,}",
                &[
                    "api", "_", "-", "key", "TOKEN", "=", ":", " ", "\"", "'", "abcd",
                ],
            ),
            (
                r"(?-u)\bxox[abposr]-[A-Za-z0-9-]{4,250}",
                &["xox", "XOX", "b", "p", "-", "abcd", " ", "K"],
            ),
            (
                r"(?-u)\b(?:gh[pousr]_[A-Za-z0-9]{4,255}|github_pat_[A-Za-z0-9_]{4,255})\b",
                &["gh", "GH", "p", "u", "_", "github", "pat", "abcd", " "],
            ),
            (
                r"(?-u)-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----",
                &["-----BEGIN ", "RSA ", "rsa ", "PRIVATE KEY-----", "x"],
            ),
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for (pattern, pieces) in cases {
            for folded in [false, true] {
                let regex = regex::RegexBuilder::new(pattern)
                    .case_insensitive(folded)
                    .build()
                    .unwrap();
                let words = if folded {
                    Words::of(pattern).folded()
                } else {
                    Words::of(pattern)
                };
                let mut matched = 0;
                for _ in 0..20_000 {
                    let len = 1 + (next() % 12) as usize;
                    let text: String = (0..len)
                        .map(|_| pieces[(next() % pieces.len() as u64) as usize])
                        .collect();
                    if regex.is_match(&text) {
                        matched += 1;
                        // What `folded` asks of a text: NFKC (here: the long s) and lowercase.
                        let seen = if folded {
                            text.replace('ſ', "s").to_lowercase()
                        } else {
                            text.clone()
                        };
                        assert!(words.may_match(&seen), "{pattern} matches {text:?}");
                    }
                }
                assert!(
                    matched > 0,
                    "{pattern}: no text matched, the test proves nothing"
                );
            }
        }
    }
}
