//! A small getopt: enough of GNU option syntax to tell options from operands the way
//! the commands we inspect do (clusters `-rf`, attached values `-oL`, long options with
//! `=` and with unambiguous abbreviations `--recurs`, `--` ending options).

use super::fold::Field;

/// How a command's options are shaped.
pub(crate) struct Spec {
    /// Short options that take a value (`-u root`, `-uroot`).
    pub short_values: &'static str,
    /// Long option names; a trailing `=` marks one that takes a value.
    pub longs: &'static [&'static str],
    /// Options end at the first operand (wrappers: the rest is the wrapped command).
    pub stop_at_operand: bool,
}

/// The parsed options of one command.
#[derive(Default)]
pub(crate) struct Opts<'a> {
    pub shorts: Vec<char>,
    pub values: Vec<(char, &'a str)>,
    pub longs: Vec<(&'a str, Option<&'a str>)>,
    pub operands: Vec<&'a Field>,
    /// With `stop_at_operand`: index (in the arguments) of the first operand.
    pub rest: Option<usize>,
}

impl Opts<'_> {
    pub(crate) fn short(&self, c: char) -> bool {
        self.shorts.contains(&c) || self.values.iter().any(|(k, _)| *k == c)
    }

    pub(crate) fn long(&self, name: &str) -> bool {
        self.longs.iter().any(|(n, _)| *n == name)
    }

    pub(crate) fn value(&self, short: char, long: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(k, _)| *k == short)
            .map(|(_, v)| *v)
            .or_else(|| {
                self.longs
                    .iter()
                    .find(|(n, v)| *n == long && v.is_some())
                    .and_then(|(_, v)| *v)
            })
    }

    pub(crate) fn has(&self, short: char, long: &str) -> bool {
        self.short(short) || self.long(long)
    }
}

/// Resolves a long option name the way `getopt_long` does: an exact name, or an
/// unambiguous prefix of one. Returns the full name and whether it takes a value.
fn resolve_long(name: &str, longs: &[&'static str]) -> Option<(&'static str, bool)> {
    let strip = |l: &'static str| (l.trim_end_matches('='), l.ends_with('='));
    if let Some(l) = longs.iter().find(|l| strip(l).0 == name) {
        return Some(strip(l));
    }
    let mut found = longs.iter().filter(|l| strip(l).0.starts_with(name));
    match (found.next(), found.next()) {
        (Some(l), None) => Some(strip(l)),
        _ => None,
    }
}

/// Parses `args` (the arguments after the command name) with `spec`.
pub(crate) fn parse<'a>(args: &'a [Field], spec: &Spec) -> Opts<'a> {
    let mut out = Opts::default();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].text.as_str();
        if a == "--" {
            if spec.stop_at_operand {
                out.rest = Some(i + 1);
                out.operands.extend(args[i + 1..].iter());
                return out;
            }
            out.operands.extend(args[i + 1..].iter());
            return out;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            match resolve_long(name, spec.longs) {
                Some((full, takes)) => {
                    let value = if takes && inline.is_none() {
                        i += 1;
                        args.get(i).map(|f| f.text.as_str())
                    } else {
                        inline
                    };
                    out.longs.push((full, value));
                }
                None => out.longs.push((name, inline)),
            }
            i += 1;
            continue;
        }
        if a.len() > 1 && a.starts_with('-') {
            for (k, c) in a.char_indices().skip(1) {
                if spec.short_values.contains(c) {
                    let attached = &a[k + c.len_utf8()..];
                    let value = if attached.is_empty() {
                        i += 1;
                        args.get(i).map_or("", |f| f.text.as_str())
                    } else {
                        attached
                    };
                    out.values.push((c, value));
                    break;
                }
                out.shorts.push(c);
            }
            i += 1;
            continue;
        }
        if spec.stop_at_operand {
            out.rest = Some(i);
            out.operands.extend(args[i..].iter());
            return out;
        }
        out.operands.push(&args[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(v: &[&str]) -> Vec<Field> {
        v.iter().map(|s| Field::literal(*s)).collect()
    }

    #[test]
    fn clusters_values_and_abbreviations_parse_like_getopt() {
        let spec = Spec {
            short_values: "u",
            longs: &["recursive", "user=", "stdin", "shell"],
            stop_at_operand: false,
        };
        let args = fields(&[
            "-rf", "--recurs", "-uroot", "--user", "bob", "x", "--", "-y",
        ]);
        let o = parse(&args, &spec);
        assert_eq!(o.shorts, vec!['r', 'f']);
        assert!(o.long("recursive"));
        assert_eq!(o.values, vec![('u', "root")]);
        assert_eq!(o.value('x', "user"), Some("bob"));
        let ops: Vec<&str> = o.operands.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(ops, vec!["x", "-y"]);
        // "--s" is ambiguous between stdin and shell: left unresolved.
        let args = fields(&["--s"]);
        assert!(!parse(&args, &spec).long("stdin"));
    }

    #[test]
    fn wrappers_stop_at_the_first_operand() {
        let spec = Spec {
            short_values: "n",
            longs: &[],
            stop_at_operand: true,
        };
        let args = fields(&["-n", "10", "rm", "-rf", "x"]);
        let o = parse(&args, &spec);
        assert_eq!(o.rest, Some(2));
    }
}
