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
//! `env`, `nice`, `timeout`, …) are unwrapped. Each finding names a [`RuleId`] from
//! the table in [`rules`], with a [`Tier`]: hardline (never runs) or dangerous (needs
//! approval).
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
pub mod limits;
mod net;
mod normalize;
mod opts;
mod paths;
pub mod rules;
mod sed;
mod walk;
mod windows;
mod wrappers;

pub use detector::{Detection, Detector, DetectorConfig, Hit};
pub use rules::{RULES, Rule, RuleId, Tier};
