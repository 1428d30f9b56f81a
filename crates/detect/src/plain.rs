//! The plain-command shortcut: a command line made only of bytes that brush-parser's
//! tokenizer reads as word characters or blanks is one simple command whose words are
//! the blank-separated pieces of the line, so its program is built here instead of by
//! the parser (parsing and dropping the tree were two thirds of the detector's time).
//!
//! Only the tokenizing is skipped. The program built is the one the parser builds
//! (without source locations, which the walk never reads), and it is walked, folded
//! and checked by the same code as any other: every rule runs on it.

use brush_parser::ast::{
    AndOrList, Command, CommandPrefixOrSuffixItem, CommandSuffix, CompoundList, CompoundListItem,
    Pipeline, Program, SeparatorOperator, SimpleCommand, Word,
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
/// Left to the parser: `| & ; < > ( )` and newline (operators and separators), `' " \`
/// (quoting), `$` and the backtick (expansions and substitutions), `#` (a comment when
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

/// The program brush-parser would build for `text` when `text` is a plain command
/// (see [`PLAIN`]); `None` for anything else, which goes to the parser.
///
/// The first word must also be the command name: not a reserved word, and without `=`
/// (a leading `NAME=value` is an assignment, not the command). It must not hold `~`
/// either, so that it is folded to itself, one field, like a word without any special
/// byte: the command then always has a name, and a later `NAME=value` word, which the
/// parser tags as an assignment word, is folded as an ordinary argument by the walk
/// (which does so for assignment words after the name) just like the plain word built
/// here. (Its context differs from a word's only in stdin, which folding a word
/// without `$`, backtick or `(` never reads.)
pub(crate) fn program(text: &str) -> Option<Program> {
    if !text.bytes().all(|b| PLAIN[usize::from(b)]) {
        return None;
    }
    let mut words = text.split([' ', '\t']).filter(|w| !w.is_empty());
    let name = words.next()?;
    if name.contains(['=', '~']) || RESERVED.contains(&name) {
        return None;
    }
    let suffix: Vec<CommandPrefixOrSuffixItem> = words
        .map(|w| CommandPrefixOrSuffixItem::Word(word(w)))
        .collect();
    let simple = SimpleCommand {
        prefix: None,
        word_or_name: Some(word(name)),
        suffix: (!suffix.is_empty()).then_some(CommandSuffix(suffix)),
    };
    let pipeline = Pipeline {
        timed: None,
        bang: false,
        seq: vec![Command::Simple(simple)],
    };
    let and_or = AndOrList {
        first: pipeline,
        additional: Vec::new(),
    };
    // Without a separator the parser records the command as run in sequence.
    let list = CompoundList(vec![CompoundListItem(and_or, SeparatorOperator::Sequence)]);
    Some(Program {
        complete_commands: vec![list],
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
                for command in &mut item.0.first.seq {
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
            "ls | sh",
            "ls; rm",
            "ls && rm",
            "ls &",
            "ls > x",
            "ls 2>x",
            "ls (x)",
            "echo 'x'",
            "echo \"x\"",
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

    proptest::proptest! {
        /// Any text of plain bytes that the shortcut accepts, including reserved words,
        /// assignments and tildes anywhere, is the parser's program.
        #[test]
        fn any_plain_text_is_built_as_the_parser_parses_it(
            words in proptest::collection::vec(
                proptest::prop_oneof![
                    "[-a-zA-Z0-9_./,:@+%^=~*?\\[\\]]{1,8}",
                    proptest::sample::select(RESERVED.to_vec()).prop_map(str::to_owned),
                    proptest::sample::select(vec!["X=1", "a+=b", "x[1]=y", "=", "~", "~/x"])
                        .prop_map(str::to_owned),
                ],
                1..8,
            ),
            blanks in proptest::collection::vec("[ \t]{1,3}", 8),
        ) {
            let mut text = String::new();
            for (w, b) in words.iter().zip(&blanks) {
                text.push_str(w);
                text.push_str(b);
            }
            if let Some(built) = built(&text) {
                proptest::prop_assert_eq!(Some(built), parsed(&text), "{:?}", text);
            }
        }
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
