//! The host-path rules applied to a command (`self.host_state`, `fs.credential_read`):
//! how each program treats the paths it names — listing, copying, wrapping another
//! command — decides whether naming a directory that holds a protected path matters.
//! What is protected and how a word relates to it is [`super::host_paths`], a leaf the
//! walk's configuration holds; this adds the analysis's checks (and so depends on the
//! walk and the wrapper table).

use super::code::language;
use super::fold::Field;
use super::host_paths::{Relation, contains_path, relation};
use super::paths::canonical;
use super::rules::RuleId;
use super::walk::{Analyzer, Invocation};
use super::wrappers::{Runs, wrapper};
use std::borrow::Cow;

/// Programs that only list what a directory holds (names, sizes, modes), never its
/// files' contents: naming a directory that holds a protected path is fine for them.
const LISTERS: &[&str] = &[
    "ls", "dir", "vdir", "tree", "du", "df", "stat", "file", "cd", "pushd", "popd", "dirs", "test",
    "[", "realpath", "readlink", "dirname", "basename", "pwd", "echo", "printf", "mkdir", "which",
    "type", "whereis", "namei", "lsattr", "getfacl", "exa", "eza", "lsd", "true", "false", ":",
];

/// find's actions that write, delete or run something for each file found.
const FIND_ACTIONS: &[&str] = &[
    "-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls",
];

/// Programs whose last operand (or `-t DIR`) is where they put their sources: a
/// directory holding protected paths is a fine destination unless what lands there is
/// one of them.
const COPIERS: &[&str] = &["cp", "mv", "ln", "install", "rsync", "scp"];

/// Short options of the copiers that take a value (`-S SUFFIX`, `-m MODE`, rsync's
/// `-e CMD`): the value is no operand.
const COPIER_VALUES: &[&str] = &["-S", "-m", "-o", "-g", "-e", "-f", "-T"];

/// Programs that use a credential without printing it (`ssh -i ~/.ssh/id_rsa host`)
/// or change only its metadata or existence (`chmod 600 ~/.ssh/id_ed25519`; deleting
/// or overwriting one is `fs.protected_write`).
const KEY_USERS: &[&str] = &[
    "ssh",
    "scp",
    "sftp",
    "ssh-add",
    "ssh-keygen",
    "ssh-copy-id",
    "autossh",
    "mosh",
    "chmod",
    "chown",
    "chgrp",
    "chattr",
    "setfacl",
    "touch",
    "rm",
    "unlink",
    "shred",
    "rmdir",
];

/// Text in an interpreter's inline code that names a credential (`open('/root/.ssh/
/// id_rsa')`): the code is not shell words, so the paths are looked for as text.
const CREDENTIAL_NEEDLES: &[&str] = &[
    ".ssh/id_",
    ".aws/credentials",
    ".netrc",
    ".git-credentials",
    ".docker/config.json",
    ".kube/config",
    ".config/gcloud",
    ".config/gh/hosts.yml",
    ".gnupg",
    ".pgpass",
    ".password-store",
    ".vault-token",
];

/// The words of `text` that may be paths: itself, what follows its first `=`
/// (`--file=PATH`, `of=PATH`), and its `:`-separated parts that start like a path
/// (`-v SRC:DST`, `PATH`-style lists).
/// `eq`, `colon`: it holds a `=`, a `:`.
fn candidates(text: &str, eq: bool, colon: bool) -> impl Iterator<Item = &str> {
    let whole = (!text.starts_with('-')).then_some(text);
    let value = eq
        .then(|| text.split_once('=').map(|(_, v)| v))
        .flatten()
        .filter(|v| !v.is_empty());
    let listed = colon
        .then(|| text.split(':').filter(|p| p.starts_with(['/', '~', '$'])))
        .into_iter()
        .flatten();
    whole.into_iter().chain(value).chain(listed)
}

/// True when `word` starts like a path that does not depend on the working directory,
/// or climbs out of it.
fn starts_like_a_path(word: &str) -> bool {
    word.starts_with(['/', '~', '$']) || word.starts_with("..") || word.contains(['$', '`'])
}

/// What a command does with the directories it names.
struct Role {
    /// It only lists them ([`lists_only`]).
    lists: bool,
    /// It is a wrapper keeping this many arguments for itself; the rest it passes on.
    own_args: Option<usize>,
    /// It copies: its destination and sources.
    copies: Option<(usize, Vec<usize>)>,
}

impl Role {
    fn of(name: &str, args: &[Field]) -> Self {
        Self {
            lists: lists_only(name, args),
            own_args: wrapper_own_args(name, args),
            copies: COPIERS
                .contains(&name)
                .then(|| copy_destination(args))
                .flatten(),
        }
    }

    /// True when argv word `i` is passed on by a wrapper, judged with the command
    /// that gets it.
    fn passes_on(&self, i: usize) -> bool {
        i > 0 && self.own_args.is_some_and(|n| i > n)
    }
}

/// The operand a copier puts its sources into (index in `args`), and its sources.
fn copy_destination(args: &[Field]) -> Option<(usize, Vec<usize>)> {
    let mut operands = Vec::new();
    let mut target = None;
    let mut i = 0;
    let mut options = true;
    while i < args.len() {
        let t = args[i].text.as_str();
        if options && t == "--" {
            options = false;
        } else if options && (t == "-t" || t == "--target-directory") {
            target = Some(i + 1);
            i += 1;
        } else if options && COPIER_VALUES.contains(&t) {
            i += 1;
        } else if !(options && t.starts_with('-') && t.len() > 1) {
            operands.push(i);
        }
        i += 1;
    }
    match target {
        Some(t) if t < args.len() => Some((t, operands)),
        Some(_) => None,
        None => {
            let dest = operands.pop()?;
            Some((dest, operands))
        }
    }
}

/// True when `name` with `args` only lists directories (see [`LISTERS`]).
fn lists_only(name: &str, args: &[Field]) -> bool {
    match name {
        "find" => !args.iter().any(|a| FIND_ACTIONS.contains(&a.text.as_str())),
        "fd" | "fdfind" => !args
            .iter()
            .any(|a| matches!(a.text.as_str(), "-x" | "-X") || a.text.starts_with("--exec")),
        _ => LISTERS.contains(&name),
    }
}

/// How many of `args` a wrapper (`sudo`, `env`, `timeout 5`, `nice -n 5`) keeps for
/// itself; the rest is the command it runs, checked on its own. `None`: not such a
/// wrapper (find, docker, ssh … read their arguments themselves).
fn wrapper_own_args(name: &str, args: &[Field]) -> Option<usize> {
    let spec = wrapper(name)?;
    if let Runs::Custom(_) = spec.runs {
        return matches!(name, "builtin" | "busybox" | "toybox").then_some(0);
    }
    let o = super::opts::parse(args, &spec.opts);
    Some(
        o.rest
            .map_or(args.len(), |r| (r + spec.skip).min(args.len())),
    )
}

impl Analyzer<'_> {
    /// The host-path rules for one simple command (after its wrappers, each level
    /// checked on its own): `self.host_state` for a word naming the host's state or
    /// program, or a directory holding its state that the command does more than
    /// list; `fs.credential_read` likewise for the host user's credentials.
    pub(crate) fn check_host_paths(&mut self, inv: &Invocation<'_>) {
        let own = self.own;
        let host = &own.host;
        let Some(first) = inv.argv.first() else {
            return;
        };
        if host.is_empty() {
            return;
        }
        let name = first.text.rsplit('/').next().unwrap_or(&first.text);
        let args = &inv.argv[1..];
        if !first.text.contains('/') && host.program_names.iter().any(|n| n == name) {
            self.hit(RuleId::HostState, inv.rendered);
        }
        // A relative word is the working directory's: it can only name a protected path
        // when that directory is related to one (this runs for every word) — by its
        // text; with a view of the file system, any word may be a symlink.
        let cwd_related = self.cwd_related();
        let viewed = host.view.0.is_some();
        // What the command does with a directory holding protected paths: read once,
        // when one is named.
        let mut role: Option<Role> = None;
        for (i, field) in inv.argv.iter().enumerate() {
            let text = field.text.as_str();
            // One pass over the bytes: a word with none of these names no path outside
            // the working directory (most words: options, names, plain operands).
            let (mut pathy, mut eq, mut colon) = (false, false, false);
            for b in text.bytes() {
                match b {
                    b'/' | b'~' | b'$' | b'`' | b'.' => pathy = true,
                    b'=' => eq = true,
                    b':' => colon = true,
                    _ => {}
                }
            }
            if text.is_empty() || !(pathy || cwd_related || field.dynamic || viewed) {
                continue;
            }
            // A path inside other text (`open('/etc/x')`, `-f/etc/x`, `@/etc/x`).
            if text.contains('/')
                && (text.starts_with('-') || text.contains(['\'', '"', '(', ' ', ',', ';', '@']))
            {
                if host.tails.iter().any(|t| text.contains(t.as_str()))
                    && host
                        .spellings
                        .iter()
                        .any(|s| text.len() >= s.len() && contains_path(text, s))
                {
                    self.hit(RuleId::HostState, inv.rendered);
                }
                if host.credentials
                    && CREDENTIAL_NEEDLES.iter().any(|n| text.contains(n))
                    && language(name).is_some()
                {
                    self.hit(RuleId::CredentialRead, inv.rendered);
                }
            }
            for candidate in candidates(text, eq, colon) {
                // Where the file system takes the word (a symlink on the way): judged as
                // the path the kernel would open, besides its text.
                if let Some(real) = self.real_path(candidate)
                    && let Some(pattern) = host.pattern(&real, field.glob, field.dynamic)
                {
                    self.judge_host_path(&pattern, i, name, args, &mut role, inv.rendered);
                }
                if !(cwd_related || field.dynamic || starts_like_a_path(candidate)) {
                    continue;
                }
                // `resolve` without its copy when the working directory plays no part.
                let resolved = if self.cwd().is_empty() || candidate.starts_with(['/', '~', '$']) {
                    canonical(candidate)
                } else {
                    Cow::Owned(self.resolve(candidate))
                };
                if !(field.dynamic || host.may_relate(&resolved)) {
                    continue;
                }
                let Some(pattern) = host.pattern(&resolved, field.glob, field.dynamic) else {
                    continue;
                };
                self.judge_host_path(&pattern, i, name, args, &mut role, inv.rendered);
            }
        }
        if name == "ln" && is_symbolic(args) {
            self.check_link_targets(args, &mut role, inv.rendered);
        }
        // A copy into a directory lands as DIR/NAME: onto the program too
        // (`cp ./hermetic /usr/local/bin/`), whose directory is not protected itself.
        if COPIERS.contains(&name) && !host.programs.is_empty() {
            let role = role.get_or_insert_with(|| Role::of(name, args));
            if let Some((dest, sources)) = &role.copies
                && sources
                    .iter()
                    .any(|&s| self.lands_on_a_program(&args[*dest], &args[s]))
            {
                self.hit(RuleId::HostState, inv.rendered);
            }
        }
    }

    /// The host-path rules for argv word `i` of `name`, read as `pattern`:
    /// `self.host_state` for naming the host's state or program, or a directory holding
    /// its state that the command does more than list; `fs.credential_read` likewise.
    fn judge_host_path(
        &mut self,
        pattern: &[super::host_paths::Part<'_>],
        i: usize,
        name: &str,
        args: &[Field],
        role: &mut Option<Role>,
        rendered: &str,
    ) {
        let own = self.own;
        let host = &own.host;
        match host.state_relation(pattern) {
            Some(Relation::Equal | Relation::Inside(_)) => {
                self.hit(RuleId::HostState, rendered);
            }
            Some(Relation::Holds { direct }) => {
                let role = role.get_or_insert_with(|| Role::of(name, args));
                if !role.lists
                    && !role.passes_on(i)
                    && !self.lands_safely(role.copies.as_ref(), i, direct, args)
                {
                    self.hit(RuleId::HostState, rendered);
                }
            }
            None => {}
        }
        if !host.credentials || i == 0 || KEY_USERS.contains(&name) {
            return;
        }
        let Some(names_one) = host.credential_relation(pattern) else {
            return;
        };
        let role = role.get_or_insert_with(|| Role::of(name, args));
        if !role.lists
            && !role.passes_on(i)
            && (names_one || !self.lands_safely(role.copies.as_ref(), i, false, args))
        {
            self.hit(RuleId::CredentialRead, rendered);
        }
    }

    /// `word` as the file system of the terminal's view resolves it (symlinks
    /// followed), when that differs from its text; `None` without a view, for a word
    /// only known at run time, or a relative one from an unknown directory.
    fn real_path(&self, word: &str) -> Option<String> {
        let host = &self.own.host;
        let view = host.view.0.as_ref()?;
        if word.is_empty() || word.contains(['$', '`']) {
            return None;
        }
        let absolute = if word.starts_with('/') {
            word.to_owned()
        } else if word == "~" || word.starts_with("~/") {
            let home = host.home.as_ref()?;
            format!("/{}{}", home[1..].join("/"), &word[1..])
        } else if word.starts_with('~') {
            return None;
        } else {
            let cwd = self.cwd();
            if !cwd.starts_with('/') {
                return None;
            }
            format!("{cwd}/{word}")
        };
        view.real(&absolute)
    }

    /// `ln -s TARGET… LINK`: a relative target is read from the link's directory, not
    /// from the working directory (`ln -s ../../.config d/c` links to the working
    /// directory's grandparent's `.config`); a link to the host's state, to a directory
    /// holding it, or to a place only known at run time (`/proc/self/cwd/..`) is a way
    /// to name it later under another name.
    fn check_link_targets(&mut self, args: &[Field], role: &mut Option<Role>, rendered: &str) {
        let role = role.get_or_insert_with(|| Role::of("ln", args));
        let Some((dest, sources)) = role.copies.clone() else {
            return;
        };
        let host = &self.own.host;
        let link = &args[dest].text;
        // The link is DEST itself, or DEST/NAME when DEST is a directory.
        let link_dir = link.rsplit_once('/').map_or(".", |(d, _)| d);
        let bases = [
            if link_dir.is_empty() { "/" } else { link_dir },
            link.as_str(),
        ];
        for &s in &sources {
            let target = &args[s];
            let text = canonical(&target.text);
            if to_unknown_place(&text) {
                self.hit(RuleId::HostState, rendered);
                continue;
            }
            if text.starts_with(['/', '~', '$']) {
                continue; // read as it is by the main check
            }
            for base in bases {
                let resolved = self.resolve(&format!("{base}/{}", target.text));
                let glob = target.glob || args[dest].glob;
                let dynamic = target.dynamic || args[dest].dynamic;
                let Some(pattern) = host.pattern(&resolved, glob, dynamic) else {
                    continue;
                };
                if host.state_relation(&pattern).is_some() {
                    self.hit(RuleId::HostState, rendered);
                }
                if host.credentials && host.credential_relation(&pattern).is_some() {
                    self.hit(RuleId::CredentialRead, rendered);
                }
            }
        }
    }

    /// True when `source` copied into the directory `dest` would be a program of the
    /// host's.
    fn lands_on_a_program(&self, dest: &Field, source: &Field) -> bool {
        let host = &self.own.host;
        let source = canonical(&source.text);
        let base = source.rsplit('/').next().unwrap_or(&source);
        if base.is_empty() || base == "." || base == ".." {
            return false;
        }
        let landed = self.resolve(&format!("{}/{base}", dest.text));
        host.pattern(
            &landed,
            dest.glob || source.contains(['*', '?', '[']),
            dest.dynamic,
        )
        .is_some_and(|p| {
            host.programs
                .iter()
                .any(|program| matches!(relation(&p, program), Some(Relation::Equal)))
        })
    }

    /// True when the tracked working directory is a protected path, inside one or
    /// holds one (or a credential): relative words may then name one.
    fn cwd_related(&self) -> bool {
        let host = &self.own.host;
        let cwd = self.cwd();
        if cwd.is_empty() {
            return false;
        }
        host.pattern(cwd, false, false).is_some_and(|p| {
            host.state_relation(&p).is_some()
                || (host.credentials && host.credential_relation(&p).is_some())
        })
    }

    /// True when argv word `i`, a directory holding protected paths, is a copier's
    /// destination and what lands there is none of them (`cp notes.txt ~/`); `direct`:
    /// it is a protected file's own directory, where nothing may land.
    fn lands_safely(
        &self,
        copies: Option<&(usize, Vec<usize>)>,
        i: usize,
        direct: bool,
        args: &[Field],
    ) -> bool {
        let Some(&(dest, ref sources)) = copies else {
            return false;
        };
        if direct || i != dest + 1 {
            return false;
        }
        let host = &self.own.host;
        sources.iter().all(|&s| {
            let source = canonical(&args[s].text);
            let base = source.rsplit('/').next().unwrap_or(&source);
            if base.is_empty() || base == "." || base == ".." {
                return false;
            }
            let landed = self.resolve(&format!("{}/{base}", args[dest].text));
            let glob = args[dest].glob || args[s].glob;
            let dynamic = args[dest].dynamic || args[s].dynamic;
            host.pattern(&landed, glob, dynamic).is_none_or(|p| {
                host.state_relation(&p).is_none()
                    && (!host.credentials || host.credential_relation(&p).is_none())
            })
        })
    }

    /// The host-path rules for a redirection's target: naming the host's state is
    /// hardline, a credential dangerous (by its text, and where the file system of the
    /// terminal's view takes it).
    pub(crate) fn check_host_redirect(&mut self, target: &Field, rendered: &str) {
        let own = self.own;
        let host = &own.host;
        if host.is_empty() || target.text.is_empty() {
            return;
        }
        let resolved = self.resolve(&target.text);
        let real = self.real_path(&target.text);
        for path in std::iter::once(resolved).chain(real) {
            let Some(pattern) = host.pattern(&path, target.glob, target.dynamic) else {
                continue;
            };
            if matches!(
                host.state_relation(&pattern),
                Some(Relation::Equal | Relation::Inside(_))
            ) {
                self.hit(RuleId::HostState, rendered);
            }
            if host.credentials && host.credential_relation(&pattern) == Some(true) {
                self.hit(RuleId::CredentialRead, rendered);
            }
        }
    }
}

/// True when `ln`'s `args` make symbolic links (`-s`, `--symbolic`, a cluster with `s`).
fn is_symbolic(args: &[Field]) -> bool {
    args.iter()
        .map(|a| a.text.as_str())
        .take_while(|t| *t != "--")
        .any(|t| {
            t == "--symbolic"
                || (t.starts_with('-') && !t.starts_with("--") && t[1..].contains('s'))
        })
}

/// True when `path` (canonical) goes through a link the kernel resolves per process to
/// a directory no text names: `/proc/PID/cwd` or `/proc/PID/root` followed by `..`,
/// `/proc/PID/cwd` itself, or any magic link with more after it (`/dev/fd/3/..`).
/// `/dev/stdout` alone (a log file linked to the output) is not such a place.
fn to_unknown_place(path: &str) -> bool {
    let Some(rest) = path.strip_prefix('/') else {
        return false;
    };
    let parts: Vec<&str> = rest.split('/').collect();
    (1..=parts.len()).any(|n| {
        super::paths::is_magic_link(&parts[..n])
            && (n < parts.len() || parts[n - 1] == "cwd" && parts.first() == Some(&"proc"))
    })
}
