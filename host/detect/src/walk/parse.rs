//! Calls into the shell parser, which is third-party code: built once, and a panic
//! inside it is caught rather than taking the host down.

use brush_parser::ast;
use std::sync::LazyLock;

/// Parser options, built once: bash mode with extended globbing, as agents' shells are.
pub(super) static PARSER_OPTIONS: LazyLock<brush_parser::ParserOptions> =
    LazyLock::new(brush_parser::ParserOptions::default);

/// Runs a parser call, turning a panic inside the parser crate into `None`: the
/// parser is third-party code and agent input must never take the host down.
pub(super) fn catch<T>(f: impl FnOnce() -> T) -> Option<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok()
}

/// True when `text` is shell input cut short: the parser ran out of input inside a
/// construct (an open quote, `for` without `done`, a here-document without its end
/// line, a trailing `|` or `&&`), where a shell reading it would wait for more.
pub(crate) fn is_incomplete(text: &str) -> bool {
    catch(|| {
        let mut parser = brush_parser::Parser::new(text.as_bytes(), &PARSER_OPTIONS);
        match parser.parse_program() {
            Ok(_) => false,
            Err(brush_parser::ParseError::ParsingAtEndOfInput) => true,
            Err(brush_parser::ParseError::Tokenizing { inner, .. }) => inner.is_incomplete(),
            Err(_) => false,
        }
    })
    .unwrap_or(false)
}

/// The program in `text`; `None` when it does not parse (or the parser panicked).
pub(super) fn parse_program(text: &str) -> Option<ast::Program> {
    catch(|| {
        let mut parser =
            // A byte slice is already a `BufRead`: no per-call 8 KiB buffer.
            brush_parser::Parser::new(text.as_bytes(), &PARSER_OPTIONS);
        parser.parse_program().ok()
    })
    .flatten()
}
