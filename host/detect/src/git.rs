//! git: destructive subcommands and configuration values that git runs as commands.

use super::fold::Field;
use super::opts::{self, Spec};
use super::rules::RuleId;
use super::walk::Analyzer;
use super::walk::Invocation;

impl Analyzer<'_> {
    /// git: destructive subcommands, and options and configuration whose value is a
    /// command git runs.
    pub(crate) fn check_git(&mut self, args: &[Field], inv: &Invocation<'_>) {
        let i = self.check_git_globals(args, inv);
        let Some(sub) = args.get(i) else { return };
        let rest = &args[i + 1..];
        self.check_git_hooks(rest, inv);
        if is_destructive(&sub.text, rest) {
            self.hit(RuleId::GitDestructive, inv.rendered);
        }
        self.check_git_effects(&sub.text, rest, inv);
    }

    /// Reads git's global options (checking `-c key=value`); returns the index of the
    /// subcommand.
    fn check_git_globals(&mut self, args: &[Field], inv: &Invocation<'_>) -> usize {
        let mut i = 0;
        while i < args.len() {
            let t = args[i].text.as_str();
            if t == "-c" {
                if let Some(kv) = args.get(i + 1) {
                    self.check_git_config(&kv.text, inv);
                }
                i += 2;
            } else if let Some(kv) = t.strip_prefix("-c") {
                self.check_git_config(kv, inv);
                i += 1;
            } else if matches!(
                t,
                "-C" | "--git-dir"
                    | "--work-tree"
                    | "--namespace"
                    | "--exec-path"
                    | "--config-env"
                    | "--super-prefix"
                    | "--list-cmds"
            ) {
                i += 2;
            } else if t.starts_with('-') {
                i += 1;
            } else {
                break;
            }
        }
        i
    }

    /// What a subcommand writes or records besides destroying: clones (downloaded
    /// code), configuration, output files.
    fn check_git_effects(&mut self, sub: &str, rest: &[Field], inv: &Invocation<'_>) {
        let r = inv.rendered;
        match sub {
            "clone" => {
                // What was cloned is downloaded code: running a file of it is
                // running a download (`git clone URL && ./repo/install.sh`).
                let o = opts::parse(rest, &CLONE);
                let dir = match (o.operands.first(), o.operands.get(1)) {
                    (_, Some(dir)) => Some(dir.text.clone()),
                    (Some(url), None) => Some(clone_dir(&url.text).to_owned()),
                    (None, None) => None,
                };
                if let Some(dir) = dir {
                    self.mark_fresh_dir(&dir);
                }
            }
            "config" => {
                let words: Vec<&str> = rest
                    .iter()
                    .map(|a| a.text.as_str())
                    .filter(|w| !w.starts_with('-'))
                    .collect();
                if let [key, value, ..] = words[..] {
                    self.check_git_config(&format!("{key}={value}"), inv);
                }
            }
            "diff" | "log" | "show" | "whatchanged" | "diff-tree" | "diff-index" | "diff-files"
            | "range-diff" | "format-patch" => {
                let o = opts::parse(rest, &DIFF);
                if long_could_be(&o, &DIFF, &["output"]) {
                    self.hit(RuleId::GitFileWrite, r);
                }
                if sub == "format-patch"
                    && let Some(dir) = o.value('o', "output-directory")
                {
                    self.check_write(&Field::literal(dir), false, r);
                }
            }
            "archive" => {
                let o = opts::parse(rest, &ARCHIVE);
                if let Some(file) = o.value('o', "output") {
                    self.check_write(&Field::literal(file), true, r);
                }
            }
            _ => {}
        }
    }

    /// Options of any subcommand whose value is a command git runs (`clone -u`,
    /// `--upload-pack`, `push --receive-pack`, `archive --exec`) or configuration
    /// (`clone -c key=value`).
    fn check_git_hooks(&mut self, rest: &[Field], inv: &Invocation<'_>) {
        const COMMANDS: &[&str] = &["upload-pack", "receive-pack", "exec"];
        let mut i = 0;
        while i < rest.len() {
            let t = rest[i].text.as_str();
            if t == "--" {
                break;
            }
            let (name, inline) = match t.strip_prefix("--") {
                Some(long) => match long.split_once('=') {
                    Some((n, v)) => (n, Some(v)),
                    None => (long, None),
                },
                None => ("", None),
            };
            let value = || {
                inline
                    .map(str::to_owned)
                    .or_else(|| rest.get(i + 1).map(|f| f.text.clone()))
            };
            if !name.is_empty()
                && COMMANDS
                    .iter()
                    .any(|c| c.starts_with(name) && name.len() >= 3)
            {
                if let Some(v) = value() {
                    self.run_payload_text(&v, inv);
                }
            } else if (name == "config" || t == "-c")
                && let Some(v) = value()
            {
                self.check_git_config(&v, inv);
            }
            i += 1;
        }
    }

    /// `git -c key=value`: some keys hold commands that git runs.
    pub(crate) fn check_git_config(&mut self, kv: &str, inv: &Invocation<'_>) {
        let Some((key, value)) = kv.split_once('=') else {
            return;
        };
        let key = key.to_ascii_lowercase();
        let code_key = matches!(
            key.as_str(),
            "core.pager"
                | "core.editor"
                | "core.sshcommand"
                | "core.fsmonitor"
                | "diff.external"
                | "sequence.editor"
                | "gpg.program"
                | "core.askpass"
                | "credential.helper"
                | "uploadpack.packobjectshook"
                | "core.gitproxy"
        ) || key.starts_with("pager.")
            || (key.starts_with("alias.") && value.starts_with('!'))
            || (key.starts_with("filter.")
                && (key.ends_with(".clean")
                    || key.ends_with(".smudge")
                    || key.ends_with(".process")))
            || (key.starts_with("diff.")
                && (key.ends_with(".textconv") || key.ends_with(".command")))
            || (key.starts_with("merge.") && key.ends_with(".driver"));
        if key == "core.hookspath" {
            self.hit(RuleId::Hijack, inv.rendered);
        } else if code_key {
            self.run_payload_text(value.strip_prefix('!').unwrap_or(value), inv);
        }
    }
}

/// True when the git subcommand `sub` with arguments `rest` discards work or history.
fn is_destructive(sub: &str, rest: &[Field]) -> bool {
    match sub {
        "reset" => {
            let o = opts::parse(rest, &RESET);
            long_could_be(&o, &RESET, &["hard", "merge"])
        }
        "push" => {
            let o = opts::parse(rest, &PUSH);
            let force = o.short('f')
                || o.short('d')
                || long_could_be(
                    &o,
                    &PUSH,
                    &[
                        "force",
                        "force-with-lease",
                        "force-if-includes",
                        "delete",
                        "mirror",
                        "prune",
                    ],
                );
            let refspec = o
                .operands
                .iter()
                .skip(1)
                .any(|f| f.text.starts_with('+') || f.text.starts_with(':'));
            force || refspec
        }
        "clean" => {
            let o = opts::parse(rest, &CLEAN);
            let force = o.short('f') || long_could_be(&o, &CLEAN, &["force"]);
            let dry = o.short('n') || long_is_prefix_of(&o, "dry-run");
            force && !dry
        }
        "branch" => {
            let o = opts::parse(rest, &BRANCH);
            let force = o.short('f') || long_could_be(&o, &BRANCH, &["force"]);
            let delete = o.short('d') || long_could_be(&o, &BRANCH, &["delete"]);
            o.short('D') || (delete && force)
        }
        "checkout" => {
            let o = opts::parse(rest, &CHECKOUT);
            // After `--` every operand is a path, and one only known at run time
            // (`$(git diff --name-only)`) may be many; before it, a branch.
            let paths = rest.iter().skip_while(|f| f.text != "--").skip(1);
            o.short('f')
                || long_could_be(&o, &CHECKOUT, &["force"])
                || o.operands.iter().any(|f| is_broad_pathspec(&f.text))
                || paths
                    .clone()
                    .any(|f| f.dynamic || names_a_directory(&f.text))
        }
        "restore" => {
            let o = opts::parse(rest, &RESTORE);
            let worktree = o.short('W')
                || long_could_be(&o, &RESTORE, &["worktree"])
                || !(o.short('S') || long_could_be(&o, &RESTORE, &["staged"]));
            // restore takes only paths: a bare directory name (`src`) is a tree.
            worktree
                && o.operands
                    .iter()
                    .any(|f| f.dynamic || is_broad_pathspec(&f.text) || names_a_directory(&f.text))
        }
        // `git rm -r .` deletes the tracked files of a tree from the work tree too
        // (`--cached` leaves them).
        "rm" => {
            let o = opts::parse(rest, &RM);
            let recursive = o.short('r') || o.short('R');
            !long_could_be(&o, &RM, &["cached"])
                && recursive
                && o.operands
                    .iter()
                    .any(|f| f.dynamic || is_broad_pathspec(&f.text))
        }
        "switch" => {
            let o = opts::parse(rest, &SWITCH);
            o.short('f') || long_could_be(&o, &SWITCH, &["force", "discard-changes"])
        }
        "stash" => rest.first().is_some_and(|f| f.text == "clear"),
        "filter-branch" | "filter-repo" => true,
        _ => false,
    }
}

/// True when a long option given (an exact name, or an abbreviation the spec could
/// not resolve to one option) could be one of `dangerous`. git accepts any
/// unambiguous prefix of a long option; which prefixes are unambiguous depends on the
/// git version (each release adds options), so a prefix shared with a harmless option
/// still counts: `--forc` is `--force` on some git.
///
/// A name git does not know but that begins with a dangerous one (`--forced`) is
/// rejected by git; it still counts, as the shared corpus labels it: intent is
/// what the approval is asked about.
fn long_could_be(o: &opts::Opts<'_>, spec: &Spec, dangerous: &[&str]) -> bool {
    o.longs.iter().any(|(name, _)| {
        let known = spec.longs.iter().any(|l| l.trim_end_matches('=') == *name);
        dangerous
            .iter()
            .any(|d| d.starts_with(name) || (!known && name.starts_with(d)))
    })
}

/// True when a long option given is `full` or a prefix of it (`--dry` for `--dry-run`).
fn long_is_prefix_of(o: &opts::Opts<'_>, full: &str) -> bool {
    o.longs
        .iter()
        .any(|(name, _)| !name.is_empty() && full.starts_with(*name))
}

/// A pathspec that names more than one file: the whole tree (`.`, `:/`, `:(top)`), a
/// directory (`src/`), a parent, or a glob. Discarding the changes to one named file
/// is as safe as `rm file.txt`; discarding those of a tree is not.
fn is_broad_pathspec(spec: &str) -> bool {
    let p = super::paths::canonical(spec);
    p == "."
        || p == ".."
        || p.starts_with("../")
        || spec.starts_with(':')
        || spec.ends_with('/')
        || spec.contains(['*', '?', '['])
}

/// True when a path operand most likely names a directory: its last component has no
/// extension and is not one of the extensionless files every project has (`Makefile`,
/// `LICENSE`, `README`). Without the file system this is a guess, made the way a
/// reader of the command would make it: `git restore -- src` discards a tree,
/// `git restore Makefile` one file.
fn names_a_directory(path: &str) -> bool {
    const FILES: &[&str] = &["configure", "gradlew", "mvnw", "go.mod", "CODEOWNERS"];
    let p = super::paths::canonical(path);
    let last = p.rsplit('/').next().unwrap_or(&p);
    let file_like = last.contains('.')
        || FILES.contains(&last)
        // Makefile, Dockerfile, Jenkinsfile, Procfile, Gemfile, Vagrantfile…
        || (last.len() > 4 && last.ends_with("file"))
        // LICENSE, README, CHANGELOG, NOTICE, AUTHORS, COPYING, TODO
        || last.bytes().all(|b| b.is_ascii_uppercase() || b == b'_');
    !last.is_empty() && !file_like
}

/// Option shapes of the git subcommands checked, as `git help <cmd>` lists them: all
/// long names are needed so that abbreviations resolve the way git resolves them.
const RESET: Spec = Spec {
    short_values: "",
    longs: &[
        "hard",
        "soft",
        "mixed",
        "merge",
        "keep",
        "quiet",
        "patch",
        "recurse-submodules",
        "no-recurse-submodules",
        "pathspec-from-file=",
        "pathspec-file-nul",
        "no-refresh",
        "refresh",
        "intent-to-add",
    ],
    stop_at_operand: false,
};

const PUSH: Spec = Spec {
    short_values: "o",
    longs: &[
        "all",
        "branches",
        "prune",
        "mirror",
        "delete",
        "tags",
        "follow-tags",
        "no-follow-tags",
        "signed",
        "no-signed",
        "atomic",
        "no-atomic",
        "dry-run",
        "porcelain",
        "set-upstream",
        "force",
        "force-with-lease",
        "no-force-with-lease",
        "force-if-includes",
        "no-force-if-includes",
        "repo=",
        "push-option=",
        "receive-pack=",
        "exec=",
        "no-verify",
        "verify",
        "verbose",
        "quiet",
        "progress",
        "no-progress",
        "recurse-submodules=",
        "no-recurse-submodules",
        "thin",
        "no-thin",
        "ipv4",
        "ipv6",
    ],
    stop_at_operand: false,
};

const CLEAN: Spec = Spec {
    short_values: "e",
    longs: &["dry-run", "force", "interactive", "quiet", "exclude="],
    stop_at_operand: false,
};

const BRANCH: Spec = Spec {
    short_values: "",
    longs: &[
        "delete",
        "force",
        "move",
        "copy",
        "list",
        "all",
        "remotes",
        "verbose",
        "quiet",
        "track",
        "no-track",
        "set-upstream-to=",
        "unset-upstream",
        "show-current",
        "contains=",
        "no-contains=",
        "merged=",
        "no-merged=",
        "points-at=",
        "sort=",
        "format=",
        "color",
        "no-color",
        "column",
        "no-column",
        "create-reflog",
        "edit-description",
        "ignore-case",
        "omit-empty",
        "recurse-submodules",
        "abbrev=",
        "no-abbrev",
    ],
    stop_at_operand: false,
};

const CHECKOUT: Spec = Spec {
    short_values: "bB",
    longs: &[
        "quiet",
        "progress",
        "no-progress",
        "force",
        "ours",
        "theirs",
        "track",
        "no-track",
        "guess",
        "no-guess",
        "detach",
        "orphan=",
        "ignore-skip-worktree-bits",
        "merge",
        "conflict=",
        "patch",
        "ignore-other-worktrees",
        "overwrite-ignore",
        "no-overwrite-ignore",
        "recurse-submodules",
        "no-recurse-submodules",
        "overlay",
        "no-overlay",
        "pathspec-from-file=",
        "pathspec-file-nul",
    ],
    stop_at_operand: false,
};

/// The directory `git clone URL` creates: the last path segment without `.git`.
fn clone_dir(url: &str) -> &str {
    let trimmed = url.trim_end_matches('/');
    let last = trimmed.rsplit(['/', ':']).next().unwrap_or(trimmed);
    last.strip_suffix(".git").unwrap_or(last)
}

const CLONE: Spec = Spec {
    short_values: "bocuj",
    longs: &[
        "branch=",
        "origin=",
        "config=",
        "upload-pack=",
        "jobs=",
        "depth=",
        "reference=",
        "reference-if-able=",
        "separate-git-dir=",
        "filter=",
        "template=",
        "shallow-since=",
        "shallow-exclude=",
        "server-option=",
        "bundle-uri=",
        "revision=",
        "ref-format=",
        "bare",
        "mirror",
        "quiet",
        "verbose",
        "progress",
        "no-checkout",
        "single-branch",
        "no-single-branch",
        "no-tags",
        "shallow-submodules",
        "recurse-submodules",
        "local",
        "no-local",
        "shared",
        "dissociate",
        "sparse",
        "also-filter-submodules",
        "remote-submodules",
        "no-hardlinks",
        "reject-shallow",
    ],
    stop_at_operand: false,
};

const RM: Spec = Spec {
    short_values: "",
    longs: &[
        "force",
        "dry-run",
        "cached",
        "ignore-unmatch",
        "sparse",
        "quiet",
        "pathspec-from-file=",
        "pathspec-file-nul",
    ],
    stop_at_operand: false,
};

const RESTORE: Spec = Spec {
    short_values: "s",
    longs: &[
        "source=",
        "patch",
        "worktree",
        "staged",
        "quiet",
        "progress",
        "no-progress",
        "ours",
        "theirs",
        "merge",
        "conflict=",
        "ignore-unmerged",
        "ignore-skip-worktree-bits",
        "recurse-submodules",
        "no-recurse-submodules",
        "overlay",
        "no-overlay",
        "pathspec-from-file=",
        "pathspec-file-nul",
    ],
    stop_at_operand: false,
};

const SWITCH: Spec = Spec {
    short_values: "cC",
    longs: &[
        "create=",
        "force-create=",
        "detach",
        "guess",
        "no-guess",
        "force",
        "discard-changes",
        "merge",
        "conflict=",
        "quiet",
        "progress",
        "no-progress",
        "track",
        "no-track",
        "orphan=",
        "ignore-other-worktrees",
        "recurse-submodules",
        "no-recurse-submodules",
    ],
    stop_at_operand: false,
};

/// The diff-family options that matter here; the others (hundreds) are left
/// unresolved, which is harmless: only `--output` and `-o` are looked for.
const DIFF: Spec = Spec {
    short_values: "o",
    longs: &[
        "output=",
        "output-directory=",
        "output-indicator-new=",
        "output-indicator-old=",
        "output-indicator-context=",
        "oneline",
    ],
    stop_at_operand: false,
};

const ARCHIVE: Spec = Spec {
    short_values: "o",
    longs: &[
        "output=",
        "format=",
        "prefix=",
        "remote=",
        "exec=",
        "list",
        "verbose",
        "worktree-attributes",
        "add-file=",
        "add-virtual-file=",
        "mtime=",
    ],
    stop_at_operand: false,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_names_without_an_extension_are_read_as_directories() {
        for dir in ["src", "crates/detect", "lib/", "app/models", "config"] {
            assert!(names_a_directory(dir), "{dir}");
        }
        for file in [
            "Makefile",
            "Dockerfile",
            "LICENSE",
            "README",
            ".gitignore",
            "src/main.rs",
            "configure",
            ".",
        ] {
            assert!(!names_a_directory(file), "{file}");
        }
    }
}
