//! What the walk has learned so far: the working directory, files written (fresh)
//! or holding credentials (secret), variables, and the findings.

use super::{Analyzer, RawHit};
use crate::fold;
use crate::limits::{MAX_CWD_BYTES, MAX_FRESH_FILES};
use crate::protection::SelfProtection;
use crate::rules::RuleId;
use std::collections::HashMap;

impl<'d> Analyzer<'d> {
    pub(crate) fn new(own: &'d SelfProtection) -> Self {
        Self {
            own,
            hits: Vec::new(),
            commands: Vec::new(),
            vars: HashMap::new(),
            fresh_files: Vec::new(),
            cwd: String::new(),
            secret_files: Vec::new(),
            count: 0,
            bare_shell_at: 0,
            stopped: false,
            plain_shortcut: true,
            prior_fresh: &[],
            readers: Vec::new(),
            invocations: 0,
            collect_scripts: false,
            locate: false,
            parse_level: 0,
            scripts: Vec::new(),
            exec_fds: Vec::new(),
            exec_stdin: None,
            stdin_functions: Vec::new(),
        }
    }

    /// True while walking the words of the text given (not a payload's or a
    /// substitution's), when those are located.
    pub(crate) fn locating(&self) -> bool {
        self.locate && self.parse_level == 1
    }

    /// Starts the analysis in `cwd` (as earlier inputs left it) rather than in "the
    /// directory the input starts in": paths it records are then read from there.
    pub(crate) fn start_in(&mut self, cwd: &str) {
        if cwd.len() <= MAX_CWD_BYTES {
            cwd.clone_into(&mut self.cwd);
        } else {
            "$CWD".clone_into(&mut self.cwd);
        }
    }

    /// The working directory after the `cd`s seen so far (see `cwd`).
    pub(crate) fn cwd(&self) -> &str {
        &self.cwd
    }

    /// True when `path` (canonical) holds credentials, by name or because this input
    /// wrote credentials into it.
    pub(crate) fn is_secret(&self, path: &str) -> bool {
        crate::paths::is_credential(path) || self.secret_files.iter().any(|s| s == path)
    }

    /// `path` as seen from the directory the input started in: relative paths are
    /// read against the `cd`s seen so far (`cd build && ./run.sh` runs `build/run.sh`).
    pub(crate) fn resolve(&self, path: &str) -> String {
        let p = crate::paths::canonical(path);
        if self.cwd.is_empty() || p.starts_with(['/', '~', '$']) {
            return p.into_owned();
        }
        crate::paths::canonical(&format!("{}/{p}", self.cwd)).into_owned()
    }

    /// Records that `path` was written, downloaded or made executable.
    pub(crate) fn mark_fresh(&mut self, path: &str) {
        let p = self.resolve(path);
        self.push_fresh(p);
    }

    /// Records that every file under `dir` was downloaded (a clone, an extracted
    /// download).
    pub(crate) fn mark_fresh_dir(&mut self, dir: &str) {
        let d = self.resolve(dir);
        self.push_fresh(format!("{d}/*"));
    }

    /// Adds a fresh entry, up to `MAX_FRESH_FILES`; past it, `*` (every path).
    fn push_fresh(&mut self, entry: String) {
        if self.fresh_files.len() < MAX_FRESH_FILES {
            self.fresh_files.push(entry);
        } else if self.fresh_files.last().is_none_or(|f| f != "*") {
            self.fresh_files.push("*".to_owned());
        }
    }

    /// Follows `cd DIR` (`pushd DIR`; `popd` and `cd -` go somewhere known only at run
    /// time, `cd` alone goes home).
    pub(crate) fn change_dir(&mut self, target: Option<&str>) {
        self.cwd = match target {
            None => "~".to_owned(),
            Some("-") => "$OLDPWD".to_owned(),
            Some(dir) => match self.resolve(dir) {
                d if d == "." => String::new(),
                d if d.len() > MAX_CWD_BYTES => "$CWD".to_owned(),
                d => d,
            },
        };
    }

    /// True when `path` was written, downloaded or made executable earlier in this
    /// input; an entry with a glob (`chmod +x scripts/*.sh`, `repo/*`) covers every
    /// path it matches.
    pub(crate) fn is_fresh(&self, path: &str) -> bool {
        self.is_fresh_in(path, true)
    }

    /// [`is_fresh`](Self::is_fresh), counting what earlier inputs of the session wrote
    /// only with `prior`.
    pub(crate) fn is_fresh_in(&self, path: &str, prior: bool) -> bool {
        let prior: &[String] = if prior { self.prior_fresh } else { &[] };
        if self.fresh_files.is_empty() && prior.is_empty() {
            return false;
        }
        let p = self.resolve(path);
        let inside = !p.starts_with(['/', '~', '$']) && !p.starts_with("..");
        self.fresh_files.iter().chain(prior).any(|f| {
            *f == p
                || (f == "./*" && inside)
                || (f.contains(['*', '?', '[']) && fold::glob_matches(f, &p))
        })
    }

    /// How many simple commands have been analyzed so far.
    pub(crate) fn commands_seen(&self) -> usize {
        self.count
    }

    /// Records a finding.
    pub(crate) fn hit(&mut self, rule: RuleId, command: &str) {
        if !self
            .hits
            .iter()
            .any(|h| h.rule == rule && h.command == command)
        {
            self.hits.push(RawHit {
                rule,
                command: command.to_owned(),
            });
        }
    }

    pub(crate) fn set_var(&mut self, name: &str, value: Option<String>) {
        self.vars.insert(name.to_owned(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::super::Cx;
    use super::*;

    /// A long chain of `cd`s and thousands of created files stay bounded, and the
    /// overflow counts every file as fresh rather than forgetting any.
    #[test]
    fn cds_and_fresh_files_stay_bounded() {
        let det = crate::Detector::default();
        let mut text = String::new();
        for _ in 0..40 {
            text.push_str(&format!("cd {}; ", "d/".repeat(30)));
        }
        text.push_str("touch");
        for i in 0..3000 {
            text.push_str(&format!(" f{i}"));
        }
        text.push_str("; ./anything");
        let mut a = Analyzer::new(&det.protection);
        a.analyze_code(&text, &Cx::default());
        assert!(a.cwd.len() <= MAX_CWD_BYTES, "{}", a.cwd.len());
        assert!(a.fresh_files.len() <= MAX_FRESH_FILES + 1);
        assert!(a.hits.iter().any(|h| h.rule == RuleId::FreshFile));
    }
}
