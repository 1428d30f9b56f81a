//! The `hermetic` command line: a thin layer over the library.
//!
//! Exit codes: 0 success; 1 the tool call returned `{"error": ...}` (or `inspect` of a file
//! that does not load); 2 bad usage; 3 set-up failure (unreadable tools directory, engine
//! error, unknown tool to inspect).

/// `println!` that returns a closed stdout as an error instead of panicking, so that
/// `hermetic tools --json | head -1` ends quietly (see `cli::main`).
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)?
    }};
}

mod approval;
mod args;
mod audit;
mod cli;
mod community;
mod host;
mod inspect;
mod new;
mod serve;
mod state;
mod token;
mod tool_build;

fn main() -> std::process::ExitCode {
    cli::main()
}
