//! The `hermetic` command line: a thin layer over the library.
//!
//! Exit codes: 0 success; 1 the tool call returned `{"error": ...}`; 2 bad usage;
//! 3 set-up failure (unreadable tools directory, engine error, unknown tool to inspect).

mod approval;
mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
