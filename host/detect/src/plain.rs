//! The plain-command shortcut: a command line made only of bytes that brush-parser's
//! tokenizer reads as word characters or blanks, of single- or double-quoted texts
//! without expansions, and of the operators `| && || ;` is simple commands whose words
//! are the blank-separated pieces of the line, in pipelines and lists, so its program is
//! built here instead of by the parser (parsing and dropping the tree were two thirds
//! of the detector's time).
//!
//! Only the tokenizing is skipped. The program built is the one the parser builds
//! (without source locations, which the walk never reads), and it is walked, folded
//! and checked by the same code as any other: every rule runs on it.

use brush_parser::ast::{
    AndOr, AndOrList, Command, CommandPrefixOrSuffixItem, CommandSuffix, CompoundList,
    CompoundListItem, Pipeline, Program, SeparatorOperator, SimpleCommand, Word,
};

/// The bytes a plain command may hold (a table: asked of every byte of most commands).
///
/// Kept: ASCII letters and digits, the blanks space and tab, and `-_./,:@+%^=~*?[]`.
/// In brush-parser's tokenizer (and in bash) none of these starts an operator, a quote,
/// an escape, an expansion or a comment, so the tokens are exactly the blank-separated
/// pieces. The ones with a meaning have it inside one word, never between words: `~`
/// (tilde prefix), `* ? [ ]` (globs) and `=` (assignment words) are read by the word
/// folder, which sees the same word text on both paths; `@ + * ?` open an extended
/// glob only before `(`, which is not kept.
///
/// Left to the parser: `< > ( )`, newline and the `| & ;` that `program` does not read
/// (operators and separators), `\` and the quotes `program` does not read (quoting),
/// `$` and the backtick (expansions and substitutions), `#` (a comment when
/// it starts a word), `{ }` (brace groups and brace expansion), `!` (pipeline negation),
/// and every other byte: other controls, CR, and all non-ASCII text, so that what
/// `normalize` left of look-alikes is parsed like before.
const PLAIN: [bool; 256] = {
    let mut t = [false; 256];
    let bytes = b" \t-_./,:@+%^=~*?[]";
    let mut k = 0;
    while k < bytes.len() {
        t[bytes[k] as usize] = true;
        k += 1;
    }
    let mut b = 0;
    while b < 128 {
        t[b] = (b as u8).is_ascii_alphanumeric() || t[b];
        b += 1;
    }
    t
};

/// First words the parser does not read as a command name: brush-parser's reserved
/// words (the POSIX ones and bash's `[[ ]] function select coproc`) and `time`, which
/// starts a timed pipeline. Those made of bytes outside [`PLAIN`] (`! { }`) never get
/// here; they are listed so the table can be checked against brush-parser's grammar.
const RESERVED: &[&str] = &[
    "!", "{", "}", "case", "do", "done", "elif", "else", "esac", "fi", "for", "if", "in", "then",
    "until", "while", "[[", "]]", "function", "select", "coproc", "time",
];

/// The bytes a quoted text may hold besides [`PLAIN`]'s: printable ASCII and tab, less
/// the closing quote (and, inside double quotes, what is still special there). Inside
/// single quotes every byte is literal for the parser, so any of these only lengthens
/// the word; newline and non-ASCII stay with the parser like outside quotes (a word's
/// text is then still made only of bytes `normalize` cannot have left as look-alikes).
fn quoted(b: u8, quote: u8) -> bool {
    let printable = b == b'\t' || (b' '..=b'~').contains(&b);
    // In double quotes `$`, the backtick and `\` still expand or escape, and `!` may
    // be a history expansion to a shell: those words are the parser's.
    printable && b != quote && (quote == b'\'' || !matches!(b, b'$' | b'`' | b'\\' | b'!'))
}

/// How a simple command is joined to the one before it.
#[derive(Clone, Copy)]
enum Join {
    /// The first command of the line or after `;`.
    Start,
    /// After `|`: the next command of the same pipeline.
    Pipe,
    /// After `&&`: the first command of a pipeline run if the one before succeeds.
    And,
    /// After `||`: the first command of a pipeline run if the one before fails.
    Or,
}

/// The program brush-parser would build for `text` when `text` is a plain command
/// line (see [`PLAIN`]); `None` for anything else, which goes to the parser.
///
/// A plain command line is one or more plain simple commands joined by `|` (a
/// pipeline), `&&` and `||` (an and-or list) and `;` (a list, with an optional `;` at
/// the end). Each is a run of blank-separated words, and a word is plain bytes and
/// quoted texts: `'...'` holding any printable ASCII but `'`, and `"..."` holding any
/// printable ASCII but `" $ \ !` and the backtick. A word's text is kept as written,
/// quotes included, as the parser keeps it, and folded by the walk like the parser's.
/// `&` alone (background), `|&`, `;;`, an empty command and an unterminated quote are
/// the parser's.
///
/// The first word of each command must also be the command name: not a reserved word,
/// without quotes (a quoted reserved word is a name to bash; kept to the parser rather
/// than relied on), and without `=` (a leading `NAME=value` is an assignment, not the
/// command). It must not hold `~` either, so that it is folded to itself, one field,
/// like a word without any special byte: the command then always has a name, and a
/// later `NAME=value` word, which the parser tags as an assignment word, is folded as
/// an ordinary argument by the walk (which does so for assignment words after the
/// name) just like the plain word built here. (Its context differs from a word's only
/// in stdin, which only a substitution reads, and a word built here holds none: `$`
/// and the backtick occur only inside single quotes, and `(` only inside quotes.)
pub(crate) fn program(text: &str) -> Option<Program> {
    let bytes = text.as_bytes();
    let mut items: Vec<CompoundListItem> = Vec::new();
    // The and-or list and the pipeline being built, and the words of the command.
    let mut and_or: Option<AndOrList> = None;
    let mut seq: Vec<Command> = Vec::new();
    let mut words: Vec<&str> = Vec::new();
    let mut join = Join::Start;
    let mut i = 0;
    loop {
        let b = bytes.get(i).copied();
        match b {
            Some(b' ' | b'\t') => i += 1,
            None | Some(b'|' | b'&' | b';') => {
                let next = bytes.get(i + 1).copied();
                let (step, then) = match (b, next) {
                    (None, _) => (0, Join::Start),
                    (Some(b'|'), Some(b'|')) => (2, Join::Or),
                    (Some(b'|'), Some(b'&')) => return None,
                    (Some(b'|'), _) => (1, Join::Pipe),
                    (Some(b'&'), Some(b'&')) => (2, Join::And),
                    (Some(b';'), Some(b';')) => return None,
                    (Some(b';'), _) => (1, Join::Start),
                    _ => return None,
                };
                if words.is_empty() {
                    // Only the end may follow a `;` without a command (`ls;`); it
                    // follows nothing else (`| x`, `ls &&`, `ls ; ;`, ``).
                    let after_list =
                        matches!(join, Join::Start) && !items.is_empty() && seq.is_empty();
                    if b.is_none() && after_list && and_or.is_none() {
                        break;
                    }
                    return None;
                }
                seq.push(Command::Simple(simple(&words)?));
                words.clear();
                if !matches!(then, Join::Pipe) {
                    let pipeline = Pipeline {
                        timed: None,
                        bang: false,
                        seq: std::mem::take(&mut seq),
                    };
                    let list = match (and_or.take(), join) {
                        (None, _) => AndOrList {
                            first: pipeline,
                            additional: Vec::new(),
                        },
                        (Some(mut list), Join::Or) => {
                            list.additional.push(AndOr::Or(pipeline));
                            list
                        }
                        (Some(mut list), _) => {
                            list.additional.push(AndOr::And(pipeline));
                            list
                        }
                    };
                    if matches!(then, Join::Start) {
                        // `;` and the end: the parser records the list as run in
                        // sequence.
                        items.push(CompoundListItem(list, SeparatorOperator::Sequence));
                    } else {
                        and_or = Some(list);
                    }
                }
                if b.is_none() {
                    break;
                }
                // Within a pipeline `join` says how the pipeline is joined, not the
                // command.
                if !matches!(then, Join::Pipe) {
                    join = then;
                }
                i += step;
            }
            Some(_) => {
                let start = i;
                while let Some(&b) = bytes.get(i) {
                    if b == b'\'' || b == b'"' {
                        // To the first byte a quoted text cannot hold, which must be
                        // its closing quote.
                        let inner = bytes.get(i + 1..)?;
                        let close = inner.iter().position(|&c| !quoted(c, b))?;
                        if inner.get(close) != Some(&b) {
                            return None;
                        }
                        i += close + 2;
                    } else if matches!(b, b' ' | b'\t' | b'|' | b'&' | b';') {
                        break;
                    } else if PLAIN[usize::from(b)] {
                        i += 1;
                    } else {
                        return None;
                    }
                }
                words.push(text.get(start..i)?);
            }
        }
    }
    Some(Program {
        complete_commands: vec![CompoundList(items)],
    })
}

/// The simple command of `words` (at least one), or `None` when the first is not
/// plainly its name (see [`program`]).
fn simple(words: &[&str]) -> Option<SimpleCommand> {
    let (name, rest) = words.split_first()?;
    if name.contains(['=', '~', '\'', '"']) || RESERVED.contains(name) {
        return None;
    }
    let suffix: Vec<CommandPrefixOrSuffixItem> = rest
        .iter()
        .map(|w| CommandPrefixOrSuffixItem::Word(word(w)))
        .collect();
    Some(SimpleCommand {
        prefix: None,
        word_or_name: Some(word(name)),
        suffix: (!suffix.is_empty()).then_some(CommandSuffix(suffix)),
    })
}

fn word(text: &str) -> Word {
    Word {
        value: text.to_owned(),
        loc: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The parser's program for `text` with what the walk cannot tell apart removed:
    /// source locations, and the assignment-word tag on words after the command name
    /// (the walk folds those as words; see `program`).
    fn parsed(text: &str) -> Option<String> {
        let options = brush_parser::ParserOptions::default();
        let mut program = brush_parser::Parser::new(text.as_bytes(), &options)
            .parse_program()
            .ok()?;
        for list in &mut program.complete_commands {
            for item in &mut list.0 {
                let later = item.0.additional.iter_mut().map(|next| match next {
                    AndOr::And(p) | AndOr::Or(p) => p,
                });
                for command in std::iter::once(&mut item.0.first)
                    .chain(later)
                    .flat_map(|p| p.seq.iter_mut())
                {
                    let Command::Simple(simple) = command else {
                        continue;
                    };
                    if let Some(w) = &mut simple.word_or_name {
                        w.loc = None;
                    }
                    for item in simple.suffix.iter_mut().flat_map(|s| s.0.iter_mut()) {
                        if let CommandPrefixOrSuffixItem::AssignmentWord(_, w) = item {
                            *item = CommandPrefixOrSuffixItem::Word(w.clone());
                        }
                        if let CommandPrefixOrSuffixItem::Word(w) = item {
                            w.loc = None;
                        }
                    }
                }
            }
        }
        Some(format!("{program:?}"))
    }

    fn built(text: &str) -> Option<String> {
        program(text).map(|p| format!("{p:?}"))
    }

    #[test]
    fn plain_commands_are_built_as_the_parser_parses_them() {
        for text in [
            "ls -la",
            "  rm\t-rf  /  ",
            "git push --force origin main",
            "dd if=/dev/zero of=/dev/sda bs=1M",
            "export PATH=/tmp:~/bin",
            "ls ~ ~/.ssh ~root a=~/x",
            "rm -rf * ./*.log a? [ab] x[",
            "echo if then fi in time [[ ]]",
            "[ -f x ]",
            "cmd /c del /s /q C:",
            "kill %1 ^x @y +z a,b c:d",
            "hermes",
            "echo 'x'",
            "echo 'a b' a'b c'd '' 'x''y' 'a|b;c&&d' '$HOME `id` \\ \" # ! { } ( ) < >'",
            "grep -e 'a\tb' x",
            "echo @'(x)' +\"(y)\" *'(z)' ?\"(w)\" x'{a,b}' '{a,b}' '#x' \"#y\" a'#'",
            "echo 'a'\"b\"'c' ~'x' ~/'x y' X='a b' \"Y\"=1 '[[' \"]]\" 'if' \"time\"",
            "echo \"x\"",
            "echo \"a b\" a\"b c\"d \"\" \"it's | ; && # { } ~ * ( ) < >\" x\"'\"'y'",
            "ls | sh",
            "ls|sh|wc -l",
            "ls; rm",
            "ls;rm;",
            "ls ; ",
            "ls && rm",
            "a&&b||c",
            "a || b | c; d && e;",
            "cd /x && git status | grep 'On branch' || echo \"no repo\"; ls",
        ] {
            let built = built(text).unwrap_or_else(|| panic!("{text:?} is plain"));
            assert_eq!(Some(built), parsed(text), "{text:?}");
        }
    }

    /// Each is a reason to parse: an operator, a quote, an expansion, a comment, a
    /// keyword or assignment first, a byte outside the table, or no command at all.
    #[test]
    fn commands_the_parser_reads_differently_are_not_plain() {
        for text in [
            "ls &",
            "ls & rm",
            "ls && rm &",
            "ls |& sh",
            "ls ;; rm",
            "ls ; ; rm",
            "; ls",
            "| ls",
            "ls |",
            "ls; rm |",
            "ls &&",
            "ls || ",
            "ls && && rm",
            "ls ||| rm",
            "ls &&& rm",
            "ls; X=1 rm",
            "ls | time rm",
            "ls && if x",
            "ls; ~/bin/run",
            "'rm' -rf /",
            "\"rm\" -rf /",
            "echo 'x",
            "echo \"x",
            "echo 'x\ny'",
            "echo 'é'",
            "echo \"$HOME\"",
            "echo \"`id`\"",
            "echo \"a\\b\"",
            "echo \"a!\"",
            "echo 'a'$x",
            "echo \"a\"#",
            "ls > x",
            "ls 2>x",
            "ls (x)",
            "echo \\x",
            "echo $HOME",
            "echo `id`",
            "ls # rm",
            "echo {a,b}",
            "{ ls",
            "! ls",
            "ls\nrm",
            "ls\r",
            "ls é",
            "X=1 ls",
            "a[1]=x",
            "~/bin/run",
            "time ls",
            "if x",
            "for x in a",
            "function f",
            "coproc ls",
            "select x",
            "[[ -f x ]]",
            "",
            " \t ",
        ] {
            assert!(program(text).is_none(), "{text:?}");
        }
    }

    /// The reserved words are brush-parser's, read from its grammar.
    #[test]
    fn reserved_words_match_the_parsers() {
        for w in RESERVED {
            // A reserved word cannot be a command name: the parser rejects it alone or
            // reads it as the start of something else.
            let simple = parsed(&format!("{w} x")).is_some_and(|p| {
                p.contains("Simple(SimpleCommand { prefix: None, word_or_name: Some(Word {")
                    && p.contains(&format!("value: \"{w}\""))
            });
            assert!(!simple, "{w} parses as a command name");
        }
    }

    /// Texts of plain words, quoted texts (some unterminated, some with bytes a quote
    /// may not hold here), reserved words, assignments and tildes, joined by blanks
    /// and by list and pipeline operators (some of them the parser's alone).
    fn any_text() -> impl Strategy<Value = String> {
        let word = proptest::prop_oneof![
            12 => "[a-z][-a-z0-9_./]{0,6}",
            6 => "[-a-zA-Z0-9_./,:@+%^=~*?\\[\\]]{1,8}",
            1 => proptest::sample::select(RESERVED.to_vec()).prop_map(str::to_owned),
            1 => proptest::sample::select(vec!["X=1", "a+=b", "x[1]=y", "=", "~", "~/x"])
                .prop_map(str::to_owned),
            3 => "[a-z=~]{0,2}'[ -&(-~\t]{0,8}'[a-z]{0,2}",
            3 => "[a-z=~]{0,2}\"[ !#-~\t]{0,8}\"[a-z]{0,2}",
            1 => "['\"][ -~é\n]{0,6}",
        ];
        let join = proptest::prop_oneof![
            12 => "[ \t]{1,3}",
            6 => "[ \t]{0,2}(\\||&&|\\|\\||;)[ \t]{0,2}",
            1 => "[ \t]{0,2}(&|\\|&|;;|\\|\\|\\||&&&|; ;)[ \t]{0,2}",
        ];
        let end = proptest::sample::select(vec!["", "", "", " ", "\t", ";", " ; ", "&&", "|"]);
        (
            proptest::collection::vec(word, 1..10),
            proptest::collection::vec(join, 10),
            end,
        )
            .prop_map(|(words, joins, end)| {
                let mut text = String::new();
                for (w, j) in words.iter().zip(&joins) {
                    if !text.is_empty() {
                        text.push_str(j);
                    }
                    text.push_str(w);
                }
                text.push_str(end);
                text
            })
    }

    proptest::proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// Any such text that the shortcut accepts is the parser's program.
        #[test]
        fn any_plain_text_is_built_as_the_parser_parses_it(text in any_text()) {
            if let Some(built) = built(&text) {
                proptest::prop_assert_eq!(Some(built), parsed(&text), "{:?}", text);
            }
        }
    }

    /// The property above compares something: a good share of its texts are built,
    /// lists and quoted words among them.
    #[test]
    fn generated_texts_are_often_built() {
        use proptest::strategy::ValueTree;
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let strategy = any_text();
        let (mut built, mut lists, mut quoted, total) = (0usize, 0usize, 0usize, 1000usize);
        for _ in 0..total {
            let Ok(tree) = strategy.new_tree(&mut runner) else {
                continue;
            };
            let text = tree.current();
            if program(&text).is_some() {
                built += 1;
                lists += usize::from(text.contains(['|', '&', ';']));
                quoted += usize::from(text.contains(['\'', '"']));
            }
        }
        assert!(built * 10 >= total, "{built} of {total}");
        assert!(
            lists * 20 >= total && quoted * 20 >= total,
            "{lists} {quoted}"
        );
    }

    #[test]
    fn the_table_holds_exactly_the_documented_bytes() {
        let kept: String = (0u8..=255)
            .filter(|b| PLAIN[usize::from(*b)] && !b.is_ascii_alphanumeric())
            .map(char::from)
            .collect();
        assert_eq!(kept, "\t %*+,-./:=?@[]^_~");
        assert!(
            (0u8..=255)
                .filter(u8::is_ascii_alphanumeric)
                .all(|b| PLAIN[usize::from(b)])
        );
    }
}
