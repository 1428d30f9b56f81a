//! # hermetic-detect — dangerous shell command detection
//!
//! Pure: a command line in, a [`Detection`] out; no I/O, no clock, no shared state, so
//! it can be unit-tested and fuzzed alone.
//!
//! The command is normalized (ANSI escapes, NUL, NFKC, line continuations; invisible
//! or look-alike characters are dangerous by themselves), parsed as bash (unparseable
//! → dangerous), and every simple command — inside substitutions, subshells,
//! functions, loops, heredocs, arithmetic and `${…}` subscripts, and inside carriers
//! such as `bash -c`, `eval`, `ssh host …`, `find -exec`, `xargs`, sed's `e`,
//! `cmd /c` — is checked after its words are folded statically and wrappers (`sudo`,
//! `env`, `nice`, `timeout`, …) are unwrapped. Files the line writes, downloads,
//! clones, extracts from a download or makes executable are remembered (as paths from
//! the starting directory, across `cd`s), so running one later in the same line is
//! flagged. Each finding names a [`RuleId`] from the table in [`rules`], with a
//! [`Tier`]: hardline (never runs) or dangerous (needs approval).
//!
//! Wrappers and the rules of each command are data tables (`wrappers`, `checks`) read
//! by small interpreters. brush-parser is the only shell tokenizer: the detector never
//! splits shell text itself (the nesting pre-scan in [`limits`] only bounds what the
//! parser is given, and a word the parser delimited that is one quoted string with
//! nothing to expand is unquoted without a second parse), with one exception: a
//! command made only of bytes that no shell reads as anything but word characters and
//! blanks (letters, digits, `-_./,:@+%^=~*?[]`, no keyword or assignment first) is
//! split on blanks, which gives the parser's words; it is then checked like any other.
//!
//! ```
//! use hermetic_detect::{Detector, Tier};
//! let detector = Detector::default();
//! assert_eq!(detector.detect("ls -la").tier, Tier::Safe);
//! assert_eq!(detector.detect("rm -rf build").tier, Tier::Dangerous);
//! ```

mod carriers;
mod checks;
mod code;
mod commands;
mod detector;
mod fold;
mod git;
mod host_checks;
mod host_paths;
mod input;
pub mod limits;
mod net;
mod normalize;
mod opts;
mod paths;
mod plain;
mod preloads;
mod protection;
mod reader;
mod renamed;
pub mod rules;
mod script_run;
mod scripts;
mod sed;
mod sql_input;
mod stdin_readers;
mod walk;
mod windows;
mod wrappers;

pub use detector::{Detection, Detector, DetectorConfig, Hit};
pub use host_paths::{PathView, RealPaths};
pub use input::{Frame, Judged};
pub use reader::{CodeLang, Reader};
pub use rules::{RULES, Rule, RuleId, Tier};
pub use script_run::{Interpreter, ScriptForm, ScriptLang, ScriptRun, interpreter_of};
