//! Walks a parsed shell program: every simple command, wherever it sits (pipelines,
//! lists, subshells, groups, functions, loops, conditionals, command and process
//! substitutions, heredocs, arithmetic), with its words folded statically.
//!
//! This file holds what the walk carries (the [`Analyzer`]'s state, the context
//! nested code inherits, what a simple command is checked with); the walk itself is
//! one `impl Analyzer` per construct it reaches: `program` (a text: lists,
//! pipelines, the command kinds), `compound` (groups, loops, conditionals, `[[ ]]`),
//! `simple` (a simple command: its words, assignments and redirections, then its
//! checks), `redirects`, `words` (folding a word to fields), `parameters`
//! (`${…}` expansions), `arithmetic`; `state` keeps what the walk has learned
//! (the directory, fresh and secret files, variables, findings) and `parse` calls the
//! parser safely.

mod arithmetic;
mod compound;
mod parameters;
pub(crate) mod parse;
mod program;
mod redirects;
mod simple;
mod state;
mod words;

use super::fold::{Field, Producer};
use super::protection::SelfProtection;
use super::rules::RuleId;
use brush_parser::ast::IoFileRedirectKind;
use std::collections::HashMap;

/// One finding: a rule and the simple command it was found in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawHit {
    pub rule: RuleId,
    pub command: String,
}

/// Context inherited by nested code.
#[derive(Debug, Clone, Default)]
pub(crate) struct Cx {
    /// Carrier depth (0 = the command as given).
    pub depth: usize,
    /// What feeds stdin of the first command.
    pub stdin: Producer,
    /// Run once per item by find -exec, xargs and the like.
    pub bulk: bool,
    /// Inside the body of this function.
    pub function: Option<String>,
    /// The file whose contents feed stdin of the first command, when `stdin` is
    /// `None`: the redirection of an enclosing compound command (`{ sh; } < x.sh`), a
    /// carrier's (`sh -c sh < x.sh`) or an earlier `exec 0<x.sh`. Never located: the
    /// word is not where the command reading it stands.
    pub stdin_file: Option<Field>,
}

/// What a file descriptor reads, as far as the redirections show.
#[derive(Debug, Clone)]
pub(crate) struct FdSource {
    /// What its data is.
    pub producer: Producer,
    /// The file it reads, when it was opened on one (`3<x.sh`).
    pub file: Option<Field>,
}

impl FdSource {
    /// A descriptor whose data is not known (inherited, written to, a pipe).
    fn unknown() -> Self {
        Self {
            producer: Producer::Other,
            file: None,
        }
    }
}

/// `field` without its place in the text: a word read where it does not stand.
pub(crate) fn unlocated(field: &Field) -> Field {
    Field {
        span: None,
        ..field.clone()
    }
}

/// What a piece of code produced, as far as it is known.
#[derive(Debug, Clone, Default)]
pub(crate) struct Summary {
    /// The producer of its output (its last command).
    pub producer: Producer,
    /// How many simple commands it ran.
    pub commands: usize,
}

/// A file redirection of a simple command, folded.
#[derive(Debug, Clone)]
pub(crate) struct Redirect {
    pub kind: IoFileRedirectKind,
    pub target: Field,
}

/// A simple command about to be checked, with its context.
pub(crate) struct Invocation<'a> {
    pub argv: &'a [Field],
    pub stdin: &'a Producer,
    /// The file the command's stdin is redirected from (`sh < x.sh`), when `stdin`
    /// is that file's contents.
    pub stdin_file: Option<&'a Field>,
    pub background: bool,
    pub piped: bool,
    /// Run once per item by a multiplier (find -exec, xargs, fd -x, parallel, rg --pre).
    pub bulk: bool,
    /// Detached from the session (nohup, setsid).
    pub detached: bool,
    pub depth: usize,
    pub function: Option<&'a str>,
    pub rendered: &'a str,
}

impl Invocation<'_> {
    pub(crate) fn nested<'b>(
        &'b self,
        argv: &'b [Field],
        bulk: bool,
        detached: bool,
    ) -> Invocation<'b> {
        Invocation {
            argv,
            stdin: self.stdin,
            stdin_file: self.stdin_file,
            background: self.background,
            piped: self.piped,
            bulk: self.bulk || bulk,
            detached: self.detached || detached,
            depth: self.depth + 1,
            function: self.function,
            rendered: self.rendered,
        }
    }
}

/// The state of one analysis.
pub(crate) struct Analyzer<'d> {
    /// The agent host's own names and directories.
    pub own: &'d SelfProtection,
    pub hits: Vec<RawHit>,
    pub commands: Vec<String>,
    /// Variables assigned earlier in the same input; `None` = not statically known.
    vars: HashMap<String, Option<String>>,
    /// Files written, downloaded or made executable earlier in the same input, as
    /// paths from the starting directory (see `resolve`). `DIR/*` stands for every
    /// file under DIR (a clone, an extracted archive); `./*` for every file under the
    /// starting directory.
    pub fresh_files: Vec<String>,
    /// The working directory after the `cd`s seen so far, relative to the one the
    /// input started in (empty: that one), or absolute, or a stand-in (`~`,
    /// `$OLDPWD`, `$DIR`) when only known at run time.
    cwd: String,
    /// Files written earlier in the same input with credentials in them (an archive
    /// of `~/.ssh`, a copy of `.env`): sending them off is sending credentials.
    pub secret_files: Vec<String>,
    /// Simple commands analyzed so far (bounded by `MAX_COMMANDS`).
    count: usize,
    /// The number (by `count`) of the last simple command that was a bare shell
    /// (`sh -i`, no redirections), for the shell-escape rule on carrier payloads.
    pub bare_shell_at: usize,
    /// The analysis stopped early (a limit was hit).
    pub stopped: bool,
    /// Plain commands skip the parser (see `plain`); off only to check that shortcut
    /// against the parser.
    pub plain_shortcut: bool,
    /// Files earlier inputs of the same session wrote (a `Frame` of `input.rs`): fresh
    /// like `fresh_files`, but not this input's to report.
    pub prior_fresh: &'d [String],
    /// What reads the input's standard input, as far as its commands show (recorded by
    /// `note_stdin` in `input.rs`).
    pub readers: Vec<super::reader::Reader>,
    /// Simple commands checked so far, wrapped ones included: a wrapper that checked
    /// none ran nothing we could see (`ssh host`, `sudo -s`).
    pub invocations: usize,
    /// Script files the input runs are recorded (`scripts.rs`; a session's judgement
    /// wants them, a bare detection does not).
    pub collect_scripts: bool,
    /// Words of the text given are located (it reached the parser unchanged by
    /// normalization): their fields carry spans.
    pub locate: bool,
    /// How many texts are being parsed, one inside another (1: the text given; more:
    /// a payload or a substitution, whose words are located in another text).
    parse_level: usize,
    /// The script files run, as found (see `note_script`).
    pub scripts: Vec<super::script_run::RawScript>,
    /// Descriptors other than stdin that an `exec N<FILE` (or `exec N<&M`, a
    /// here-document…) opened earlier in the input: later commands inherit them.
    exec_fds: Vec<(i32, FdSource)>,
    /// What an `exec 0<FILE` (`exec <&3`…) earlier in the input left on stdin.
    exec_stdin: Option<FdSource>,
    /// Functions defined in the input whose body runs its stdin as code (`f() { sh;
    /// }`): called with stdin from a file or a pipe (`f < x.sh`), that is what runs.
    pub stdin_functions: Vec<String>,
}
