//! The host's own paths as the detector sees them: the agent host's state (its policy,
//! secrets, allowlist, audit log, stores, caches, program), which no command may name,
//! and the host user's credentials, which a command may read only with approval.
//!
//! A word of a command is read as a path the way the shell would find the file: after
//! folding, from the working directory the analysis tracks, with `~` and `$HOME` as the
//! home directory the terminal gave, `..` resolved lexically, `/proc/PID/root` as `/`.
//! Globs are matched a component at a time (bash's `*` never crosses a `/`; a leading
//! dot is matched too, as `shopt -s dotglob` would), `**` and anything only known at run
//! time (`$X`, `$(…)`) stand for any number of components. How the word relates to a
//! protected path decides: naming it or something inside it is what the rule is about;
//! naming a directory that holds it matters only when the command does more than list
//! (a copy, an archive, a recursive search, a delete, a move reads or changes what is
//! inside).

use super::code::language;
use super::fold::{Field, glob_matches};
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

/// The host user's credentials, relative to a home directory: directories whose every
/// file is a credential (except `.ssh`'s public parts), and single files.
const CREDENTIALS: &[&[&str]] = &[
    &[".ssh"],
    &[".aws"],
    &[".gnupg"],
    &[".kube"],
    &[".azure"],
    &[".password-store"],
    &[".config", "gcloud"],
    &[".config", "gh", "hosts.yml"],
    &[".docker", "config.json"],
    &[".netrc"],
    &[".git-credentials"],
    &[".pgpass"],
    &[".pypirc"],
    &[".npmrc"],
    &[".vault-token"],
];

/// Files in `~/.ssh` that hold no secret.
const SSH_PUBLIC: &[&str] = &[
    "config",
    "known_hosts",
    "known_hosts.old",
    "authorized_keys",
    "environment",
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

/// Where the agent host keeps its own files by default, for each of its names.
const BUILT_IN_DIRS: &[&str] = &[
    "~/.config/",
    "~/.local/share/",
    "~/.cache/",
    "/etc/",
    "/var/lib/",
];

/// How a path a command names relates to a protected one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Relation {
    /// The protected path itself.
    Equal,
    /// Something inside it; the index is the first pattern part past it.
    Inside(usize),
    /// A directory that holds it; `direct`: its own directory.
    Holds { direct: bool },
}

/// One component of a path a command names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part<'a> {
    /// Text as it is.
    Lit(Cow<'a, str>),
    /// A glob matching one component.
    Glob(Cow<'a, str>),
    /// `**` (globstar): any number of components.
    Any,
    /// Known only at run time (`$X`, `$(…)`, `..` above an unknown directory): any
    /// number of components, and no more than the text after it is known.
    Unknown,
    /// First of a path whose text is a guess (`${X:-/a}/b`, folded from a default):
    /// unknown, and so may be any number of the components written after it.
    Guess,
}

impl Part<'_> {
    /// The part with its text owned.
    fn into_owned(self) -> Part<'static> {
        match self {
            Part::Lit(t) => Part::Lit(Cow::Owned(t.into_owned())),
            Part::Glob(g) => Part::Glob(Cow::Owned(g.into_owned())),
            Part::Any => Part::Any,
            Part::Unknown => Part::Unknown,
            Part::Guess => Part::Guess,
        }
    }

    /// True when the part holds text of its own (not only glob characters).
    fn is_specific(&self) -> bool {
        match self {
            Part::Lit(t) => !t.is_empty(),
            Part::Glob(g) => g
                .chars()
                .any(|c| !matches!(c, '*' | '?' | '[' | ']' | '!' | '^')),
            Part::Any | Part::Unknown | Part::Guess => false,
        }
    }
}

/// The host's own paths, compiled from the detector's configuration.
#[derive(Debug, Clone, Default)]
pub(crate) struct HostPaths {
    /// The host's state, as components (`/` or `~` first): naming one, something
    /// inside one, or (beyond listing) a directory holding one is hardline.
    state: Vec<Vec<String>>,
    /// The host's programs: naming one is hardline; their directories are not
    /// protected (a build tree may hold one).
    programs: Vec<Vec<String>>,
    /// File names of the programs: running one by name is running the host.
    program_names: Vec<String>,
    /// How state and programs are written inside a word (`--file=/etc/x/p.toml`,
    /// code): searched as text.
    spellings: Vec<String>,
    /// The home directory `~` stands for, as components; `None`: unknown (`~` is then
    /// only itself).
    home: Option<Vec<String>>,
    /// Reading the host user's credentials is dangerous.
    credentials: bool,
}

/// `text` (canonical) as components, `/` first when absolute.
fn components(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    if text.starts_with('/') {
        out.push("/".to_owned());
    }
    out.extend(text.split('/').filter(|c| !c.is_empty()).map(str::to_owned));
    out
}

impl HostPaths {
    /// Compiles the host's paths: `state` and `programs` absolute (or `~/…`), the
    /// built-in directories of each of `self_names`, and `home` (absolute) for `~`.
    pub(crate) fn new(
        state: &[String],
        programs: &[String],
        home: Option<&str>,
        credentials: bool,
        self_names: &[String],
    ) -> Self {
        let home = home
            .map(|h| canonical(h).into_owned())
            .filter(|h| h.starts_with('/'))
            .map(|h| components(&h));
        let expand = |p: &str| -> Option<Vec<String>> {
            let p = canonical(p);
            if !p.starts_with('/') && p != "~" && !p.starts_with("~/") {
                return None;
            }
            let mut parts = components(&p);
            if parts.first().is_some_and(|f| f == "~")
                && let Some(home) = &home
            {
                parts.splice(0..1, home.iter().cloned());
            }
            (parts.len() > 1).then_some(parts)
        };
        let built_in = self_names
            .iter()
            .flat_map(|n| BUILT_IN_DIRS.iter().map(move |d| format!("{d}{n}")));
        let mut compiled = Self {
            home: home.clone(),
            credentials,
            ..Self::default()
        };
        for p in state.iter().cloned().chain(built_in) {
            if let Some(parts) = expand(&p)
                && !compiled.state.contains(&parts)
            {
                compiled.state.push(parts);
            }
        }
        for p in programs {
            if let Some(parts) = expand(p) {
                if let Some(name) = parts.last()
                    && !compiled.program_names.contains(name)
                {
                    compiled.program_names.push(name.clone());
                }
                compiled.programs.push(parts);
            }
        }
        let spellings: Vec<String> = compiled
            .state
            .iter()
            .chain(&compiled.programs)
            .flat_map(|p| compiled.spell(p))
            .collect();
        compiled.spellings = spellings;
        compiled
    }

    /// The ways `path` is written as text: absolute, and from home as `~/…`,
    /// `$HOME/…`, `${HOME}/…`.
    fn spell(&self, path: &[String]) -> Vec<String> {
        let join = |parts: &[String]| parts.join("/");
        let mut out = Vec::new();
        match path.first().map(String::as_str) {
            Some("/") => out.push(format!("/{}", join(&path[1..]))),
            Some("~") => {}
            _ => return out,
        }
        let from_home = match &self.home {
            Some(home) if path.len() > home.len() && path.starts_with(home) => {
                Some(&path[home.len()..])
            }
            _ if path.first().is_some_and(|f| f == "~") => Some(&path[1..]),
            _ => None,
        };
        if let Some(rest) = from_home {
            let rest = join(rest);
            for home in ["~", "$HOME", "${HOME}"] {
                out.push(format!("{home}/{rest}"));
            }
        }
        out
    }

    /// True when nothing is protected.
    fn is_empty(&self) -> bool {
        self.state.is_empty() && self.programs.is_empty() && !self.credentials
    }

    /// `text` (canonical, resolved against the tracked working directory) as the
    /// parts of a path pattern; `None` when it is a relative path from an unknown
    /// directory (the start of a command, which is never a place holding host state:
    /// the host refuses to start with its files in a terminal's working directory).
    /// `glob`: the word has unquoted glob characters; `dynamic`: part of it is only
    /// known at run time.
    fn pattern<'a>(&self, text: &'a str, glob: bool, dynamic: bool) -> Option<Vec<Part<'a>>> {
        match self.expand_home(text) {
            Some(expanded) => Some(
                parse(&expanded, glob, dynamic)?
                    .into_iter()
                    .map(Part::into_owned)
                    .collect(),
            ),
            None => parse(text, glob, dynamic),
        }
    }

    /// `text` with a leading `~` (or `~NAME` naming the same home) replaced by the
    /// home directory, when it is known.
    fn expand_home(&self, text: &str) -> Option<String> {
        let home = self.home.as_ref()?;
        let rest = text.strip_prefix('~')?;
        let (user, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        if !user.is_empty() && home.last().is_none_or(|h| h != user) {
            return None;
        }
        let joined = format!("/{}{tail}", home[1..].join("/"));
        Some(canonical(&joined).into_owned())
    }

    /// How `pattern` relates to the host's state and programs, the closest first.
    fn state_relation(&self, pattern: &[Part<'_>]) -> Option<Relation> {
        let state = self.state.iter().filter_map(|p| relation(pattern, p));
        let programs = self
            .programs
            .iter()
            .filter_map(|p| relation(pattern, p))
            .filter(|r| !matches!(r, Relation::Holds { .. }));
        state.chain(programs).min_by_key(|r| rank(*r))
    }

    /// How `pattern` relates to the host user's credentials: `Some(true)` names one (a
    /// file, a directory of them, something inside), `Some(false)` names a directory
    /// holding some.
    fn credential_relation(&self, pattern: &[Part<'_>]) -> Option<bool> {
        if holds_homes(pattern) {
            return Some(false);
        }
        let from_home = self.read_from_home(pattern)?;
        let mut holds = false;
        for entry in CREDENTIALS {
            let concrete: Vec<String> = std::iter::once("~")
                .chain(entry.iter().copied())
                .map(str::to_owned)
                .collect();
            match relation(&from_home, &concrete) {
                Some(Relation::Equal) => return Some(true),
                Some(Relation::Inside(next)) => {
                    let public = entry == &[".ssh"]
                        && match from_home.get(next) {
                            Some(Part::Lit(name)) => {
                                SSH_PUBLIC.contains(&name.as_ref()) || name.ends_with(".pub")
                            }
                            Some(Part::Glob(g)) => g.ends_with(".pub"),
                            _ => false,
                        };
                    if !public {
                        return Some(true);
                    }
                }
                Some(Relation::Holds { .. }) => holds = true,
                None => {}
            }
        }
        holds.then_some(false)
    }

    /// `pattern` read from a home directory (`~` first): `~`, the known home,
    /// `/root`, `/home/NAME` and `/Users/NAME` are homes; `/`, `/home` and `/Users`
    /// hold homes (`[~, ..]` then stands for "above every home").
    fn read_from_home<'a>(&self, pattern: &[Part<'a>]) -> Option<Vec<Part<'a>>> {
        let lit = |i: usize| match pattern.get(i) {
            Some(Part::Lit(t)) => Some(t.as_ref()),
            _ => None,
        };
        let tilde = || Part::Lit(Cow::Borrowed("~"));
        match lit(0) {
            Some("~") => return Some(pattern.to_vec()),
            Some("/") => {}
            _ => {
                // An unknown start: the tail decides.
                return matches!(pattern.first(), Some(Part::Unknown | Part::Guess))
                    .then(|| pattern.to_vec());
            }
        }
        if let Some(home) = &self.home {
            let same = pattern.len() >= home.len()
                && home
                    .iter()
                    .zip(pattern)
                    .all(|(h, p)| matches!(p, Part::Lit(t) if t == h));
            if same {
                return Some(
                    std::iter::once(tilde())
                        .chain(pattern[home.len()..].iter().cloned())
                        .collect(),
                );
            }
        }
        let skip = match (lit(1), pattern.get(2)) {
            (Some("root"), _) => 2,
            (Some("home" | "Users"), Some(_)) => 3,
            _ => return None,
        };
        Some(
            std::iter::once(tilde())
                .chain(pattern[skip..].iter().cloned())
                .collect(),
        )
    }
}

/// True when `pattern` (absolute) names `/`, `/home` or `/Users`, or a glob of one
/// component that matches one of them or `/root`: the directories holding homes.
fn holds_homes(pattern: &[Part<'_>]) -> bool {
    let root = matches!(pattern.first(), Some(Part::Lit(t)) if t == "/");
    root && match pattern.get(1..) {
        Some([]) => true,
        Some([Part::Lit(t)]) => matches!(t.as_ref(), "home" | "Users"),
        Some([Part::Glob(g)]) => ["home", "Users", "root"].iter().any(|d| glob_matches(g, d)),
        Some([Part::Any, ..]) => true,
        _ => false,
    }
}

/// `text` (canonical, home expanded) as the parts of a path pattern (see
/// [`HostPaths::pattern`]).
fn parse(text: &str, glob: bool, dynamic: bool) -> Option<Vec<Part<'_>>> {
    let mut parts: Vec<Part<'_>> = Vec::new();
    let mut pieces = text.split('/').filter(|c| !c.is_empty()).peekable();
    if text.starts_with('/') {
        parts.push(Part::Lit(Cow::Borrowed("/")));
    } else {
        match pieces.peek() {
            Some(&"~") => {
                parts.push(Part::Lit(Cow::Borrowed("~")));
                pieces.next();
            }
            Some(first) if first.starts_with(['~', '$']) || *first == ".." => {}
            _ if dynamic => parts.push(Part::Unknown),
            _ => return None,
        }
    }
    for piece in pieces {
        let part = if piece.contains(['$', '`']) || piece.starts_with('~') || piece == ".." {
            Part::Unknown
        } else if piece == "**" {
            Part::Any
        } else if (glob && piece.contains(['*', '?', '['])) || has_extglob(piece) {
            Part::Glob(plain_glob(piece))
        } else {
            Part::Lit(Cow::Borrowed(piece))
        };
        if !(part == Part::Unknown && parts.last() == Some(&Part::Unknown)) {
            parts.push(part);
        }
    }
    // Text folded from a default (`${X:-/a}/b`) is a guess: only some tail is known.
    if dynamic && !parts.contains(&Part::Unknown) && parts.len() > 1 {
        parts[0] = Part::Guess;
    }
    Some(magic_proc(parts))
}

/// True for a component with an extended glob group (`@(a|b)`, `!(x)`, `+(…)`) or a
/// brace sequence (`{a..c}`), which the folder leaves as written.
fn has_extglob(piece: &str) -> bool {
    let b = piece.as_bytes();
    b.windows(2)
        .any(|w| w[1] == b'(' && matches!(w[0], b'@' | b'!' | b'+' | b'?' | b'*'))
        || (piece.contains('{') && piece.contains("..") && piece.contains('}'))
}

/// A component's glob with extended groups and brace sequences read as `*`.
fn plain_glob(piece: &str) -> Cow<'_, str> {
    if !has_extglob(piece) {
        return Cow::Borrowed(piece);
    }
    let mut out = String::with_capacity(piece.len());
    let mut depth = 0usize;
    let mut chars = piece.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '@' | '!' | '+' | '?' | '*' if depth == 0 && chars.peek() == Some(&'(') => {
                chars.next();
                depth = 1;
                out.push('*');
            }
            '{' if depth == 0 => {
                depth = 1;
                out.push('*');
            }
            '(' | '{' if depth > 0 => depth += 1,
            ')' | '}' if depth > 0 => depth -= 1,
            _ if depth > 0 => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `/proc/PID/root/…` is `/…`; `/proc/PID/cwd/…`, `/proc/PID/fd/N/…` and
/// `/dev/fd/N/…` are somewhere only known at run time.
fn magic_proc(mut parts: Vec<Part<'_>>) -> Vec<Part<'_>> {
    let is = |p: Option<&Part<'_>>, s: &str| matches!(p, Some(Part::Lit(t)) if t == s);
    if is(parts.first(), "/") && is(parts.get(1), "proc") {
        // `/proc/PID/task/TID/…` is `/proc/PID/…` of one thread.
        let at = if is(parts.get(3), "task") { 5 } else { 3 };
        if is(parts.get(at), "root") {
            parts.drain(1..=at);
        } else if is(parts.get(at), "cwd") || is(parts.get(at), "fd") {
            let skip = if is(parts.get(at), "fd") {
                at + 2
            } else {
                at + 1
            };
            let rest = parts.split_off(skip.min(parts.len()));
            parts = std::iter::once(Part::Unknown).chain(rest).collect();
        }
    } else if is(parts.first(), "/") && is(parts.get(1), "dev") && is(parts.get(2), "fd") {
        let rest = parts.split_off(4.min(parts.len()));
        parts = std::iter::once(Part::Unknown).chain(rest).collect();
    }
    parts
}

/// The closest relation first.
fn rank(r: Relation) -> u8 {
    match r {
        Relation::Equal => 0,
        Relation::Inside(_) => 1,
        Relation::Holds { direct: true } => 2,
        Relation::Holds { direct: false } => 3,
    }
}

/// How the path `pattern` names relates to `path` (components, concrete).
///
/// A pattern with a part only known at run time relates only as the protected path
/// itself or something inside it, and only through the known text after that part,
/// which must be specific (two named components, or one with a dot: `$D/p.toml`):
/// `$D/x` could be anything, so it is not taken for everything.
fn relation(pattern: &[Part<'_>], path: &[String]) -> Option<Relation> {
    if pattern.first() == Some(&Part::Guess) {
        // Any of the written components may be part of the guess.
        return (1..pattern.len())
            .filter_map(|k| {
                let tail: Vec<Part<'_>> = std::iter::once(Part::Unknown)
                    .chain(pattern[k..].iter().cloned())
                    .collect();
                relation(&tail, path)
            })
            .min_by_key(|r| rank(*r));
    }
    let (p, c) = (pattern.len(), path.len());
    if p == 0 || c == 0 || p > 256 {
        return None;
    }
    // dp[i][j]: pattern[..i] matches path[..j].
    let width = c + 1;
    let mut dp = vec![false; (p + 1) * width];
    dp[0] = true;
    for i in 1..=p {
        for j in 0..=c {
            let at = i * width + j;
            dp[at] = match &pattern[i - 1] {
                Part::Any | Part::Unknown | Part::Guess => dp[at - width] || (j > 0 && dp[at - 1]),
                Part::Lit(t) => j > 0 && dp[at - width - 1] && *t == path[j - 1],
                Part::Glob(g) => j > 0 && dp[at - width - 1] && glob_matches(g, &path[j - 1]),
            };
        }
    }
    let row = |i: usize, j: usize| dp[i * width + j];
    match pattern.iter().rposition(|x| *x == Part::Unknown) {
        Some(last) => {
            let specific = |tail: &[Part<'_>]| {
                tail.iter().filter(|x| x.is_specific()).count() >= 2
                    || tail
                        .iter()
                        .any(|x| matches!(x, Part::Lit(t) if t.contains('.') && t != ".."))
            };
            if row(p, c) && specific(&pattern[last + 1..]) {
                return Some(Relation::Equal);
            }
            (last + 2..p)
                .find(|&i| row(i, c) && specific(&pattern[last + 1..i]))
                .map(Relation::Inside)
        }
        None => {
            if row(p, c) {
                return Some(Relation::Equal);
            }
            if let Some(i) =
                (1..p).find(|&i| row(i, c) && !pattern[i..].iter().all(|x| *x == Part::Any))
            {
                return Some(Relation::Inside(i));
            }
            (1..c)
                .rev()
                .find(|&j| row(p, j))
                .map(|j| Relation::Holds { direct: j == c - 1 })
        }
    }
}

/// True when `text` holds `needle` as a whole path (or the start of one): not a part
/// of a longer name on either side.
fn contains_path(text: &str, needle: &str) -> bool {
    let name_byte = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-');
    text.match_indices(needle).any(|(at, _)| {
        let before = text[..at].bytes().next_back();
        let after = text[at + needle.len()..].bytes().next();
        before.is_none_or(|b| !name_byte(b) && b != b'/' && b != b'~')
            && after.is_none_or(|b| !name_byte(b))
    })
}

/// The words of `text` that may be paths: itself, what follows its first `=`
/// (`--file=PATH`, `of=PATH`), and its `:`-separated parts that start like a path
/// (`-v SRC:DST`, `PATH`-style lists).
fn candidates(text: &str) -> impl Iterator<Item = &str> {
    let whole = (!text.starts_with('-')).then_some(text);
    let value = text
        .split_once('=')
        .map(|(_, v)| v)
        .filter(|v| !v.is_empty());
    let listed = text
        .contains(':')
        .then(|| text.split(':').filter(|p| p.starts_with(['/', '~', '$'])))
        .into_iter()
        .flatten();
    whole.into_iter().chain(value).chain(listed)
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
        // Words a wrapper passes on are judged with the command that gets them.
        let own_args = wrapper_own_args(name, args);
        let lists = lists_only(name, args);
        let copies = COPIERS
            .contains(&name)
            .then(|| copy_destination(args))
            .flatten();
        let code = language(name).is_some();
        for (i, field) in inv.argv.iter().enumerate() {
            if field.text.is_empty() {
                continue;
            }
            if host
                .spellings
                .iter()
                .any(|s| field.text.len() >= s.len() && contains_path(&field.text, s))
            {
                self.hit(RuleId::HostState, inv.rendered);
            }
            if host.credentials && code && CREDENTIAL_NEEDLES.iter().any(|n| field.text.contains(n))
            {
                self.hit(RuleId::CredentialRead, inv.rendered);
            }
            let passed_on = i > 0 && own_args.is_some_and(|n| i > n);
            for text in candidates(&field.text) {
                let resolved = self.resolve(text);
                let Some(pattern) = host.pattern(&resolved, field.glob, field.dynamic) else {
                    continue;
                };
                match host.state_relation(&pattern) {
                    Some(Relation::Equal | Relation::Inside(_)) => {
                        self.hit(RuleId::HostState, inv.rendered);
                    }
                    Some(Relation::Holds { direct })
                        if !lists
                            && !passed_on
                            && !self.lands_safely(copies.as_ref(), i, direct, args) =>
                    {
                        self.hit(RuleId::HostState, inv.rendered);
                    }
                    _ => {}
                }
                if host.credentials && i > 0 && !lists && !passed_on && !KEY_USERS.contains(&name) {
                    match host.credential_relation(&pattern) {
                        Some(true) => self.hit(RuleId::CredentialRead, inv.rendered),
                        Some(false) if !self.lands_safely(copies.as_ref(), i, false, args) => {
                            self.hit(RuleId::CredentialRead, inv.rendered);
                        }
                        _ => {}
                    }
                }
            }
        }
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
    /// hardline, a credential dangerous.
    pub(crate) fn check_host_redirect(&mut self, target: &Field, rendered: &str) {
        let own = self.own;
        let host = &own.host;
        if host.is_empty() || target.text.is_empty() {
            return;
        }
        let resolved = self.resolve(&target.text);
        let Some(pattern) = host.pattern(&resolved, target.glob, target.dynamic) else {
            return;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> HostPaths {
        HostPaths::new(
            &[
                "/srv/conf/policy.toml".to_owned(),
                "~/.config/hermetic/approvals.json".to_owned(),
                "/var/store".to_owned(),
            ],
            &["/opt/bin/hermetic".to_owned()],
            Some("/home/op"),
            true,
            &[],
        )
    }

    fn rel(host: &HostPaths, text: &str, glob: bool, dynamic: bool) -> Option<Relation> {
        let c = canonical(text);
        host.pattern(&c, glob, dynamic)
            .and_then(|p| host.state_relation(&p))
    }

    #[test]
    fn words_relate_to_state_as_the_shell_would_find_them() {
        let h = host();
        let eq = Some(Relation::Equal);
        assert_eq!(rel(&h, "/srv/conf/policy.toml", false, false), eq);
        assert_eq!(
            rel(&h, "//srv/./conf/../conf/policy.toml", false, false),
            eq
        );
        assert_eq!(
            rel(&h, "~/.config/hermetic/approvals.json", false, false),
            eq
        );
        assert_eq!(
            rel(&h, "~op/.config/hermetic/approvals.json", false, false),
            eq
        );
        assert_eq!(
            rel(&h, "/home/op/.config/hermetic/approvals.json", false, false),
            eq
        );
        assert_eq!(
            rel(&h, "/proc/self/root/srv/conf/policy.toml", false, false),
            eq
        );
        assert_eq!(rel(&h, "/srv/conf/pol*", true, false), eq);
        assert_eq!(rel(&h, "~/.config/*/approvals.json", true, false), eq);
        assert_eq!(
            rel(&h, "~/.config/@(hermetic)/approvals.json", false, false),
            eq
        );
        assert_eq!(rel(&h, "~/**/approvals.json", true, false), eq);
        assert_eq!(
            rel(&h, "$XDG_CONFIG_HOME/hermetic/approvals.json", false, true),
            eq
        );
        assert_eq!(
            rel(&h, "/nowhere/.config/hermetic/approvals.json", false, true),
            eq
        );
        assert_eq!(rel(&h, "$D/policy.toml", false, true), eq);
        assert_eq!(rel(&h, "../../conf/policy.toml", false, false), eq);
        assert_eq!(rel(&h, "/opt/bin/hermetic", false, false), eq);
        assert!(matches!(
            rel(&h, "/var/store/sha256/ab", false, false),
            Some(Relation::Inside(_))
        ));
        assert_eq!(
            rel(&h, "~/.config/hermetic", false, false),
            Some(Relation::Holds { direct: true })
        );
        assert_eq!(
            rel(&h, "~/.config", false, false),
            Some(Relation::Holds { direct: false })
        );
        assert_eq!(
            rel(&h, "~/.conf*", true, false),
            Some(Relation::Holds { direct: false })
        );
        assert_eq!(
            rel(&h, "/", false, false),
            Some(Relation::Holds { direct: false })
        );
        for (text, glob, dynamic) in [
            ("/srv/conf/policy.toml.bak", false, false),
            ("/srv/conf/pol*", false, false),
            ("~/.cache", false, false),
            ("/opt/bin", false, false),
            ("$D", false, true),
            ("$D/x", false, true),
            ("$D/*", true, true),
            ("$D/hermetic", false, true),
            ("policy.toml", false, false),
            ("~/*.json", true, false),
            ("/tmp/x", false, false),
        ] {
            assert_eq!(rel(&h, text, glob, dynamic), None, "{text}");
        }
    }

    #[test]
    fn credentials_are_read_from_any_home() {
        let h = host();
        let cred = |t: &str, glob: bool| {
            let c = canonical(t);
            h.pattern(&c, glob, false)
                .and_then(|p| h.credential_relation(&p))
        };
        for t in [
            "~/.ssh/id_rsa",
            "/root/.aws/credentials",
            "/home/alice/.kube/config",
            "/home/op/.netrc",
            "~/.config/gcloud/credentials.db",
            "~/.ssh",
            "~/.docker/config.json",
        ] {
            assert_eq!(cred(t, false), Some(true), "{t}");
        }
        assert_eq!(cred("~/.ssh/*", true), Some(true));
        for t in ["~", "/", "/home", "/root", "~/.config"] {
            assert_eq!(cred(t, false), Some(false), "{t}");
        }
        for t in [
            "~/.ssh/config",
            "~/.ssh/id_rsa.pub",
            "~/.ssh/known_hosts",
            "~/project/.env",
            "/tmp/x",
            "~/.docker/daemon.json",
        ] {
            assert_eq!(cred(t, false), None, "{t}");
        }
        assert_eq!(cred("~/.ssh/*.pub", true), None);
    }

    #[test]
    fn spellings_are_found_only_as_whole_paths() {
        assert!(contains_path(
            "--config=/srv/conf/policy.toml",
            "/srv/conf/policy.toml"
        ));
        assert!(contains_path(
            "open('/srv/conf/policy.toml')",
            "/srv/conf/policy.toml"
        ));
        assert!(contains_path(
            "/srv/conf/policy.toml/x",
            "/srv/conf/policy.toml"
        ));
        assert!(!contains_path(
            "/srv/conf/policy.tomlx",
            "/srv/conf/policy.toml"
        ));
        assert!(!contains_path(
            "/x/srv/conf/policy.toml",
            "/srv/conf/policy.toml"
        ));
        assert_eq!(
            host().spell(&components("/home/op/.config/hermetic/approvals.json")),
            [
                "/home/op/.config/hermetic/approvals.json",
                "~/.config/hermetic/approvals.json",
                "$HOME/.config/hermetic/approvals.json",
                "${HOME}/.config/hermetic/approvals.json"
            ]
        );
    }

    #[test]
    fn extended_globs_and_sequences_read_as_stars() {
        assert_eq!(plain_glob("@(hermetic)"), "*");
        assert_eq!(plain_glob("herm{e..e}tic"), "herm*tic");
        assert_eq!(plain_glob("a!(x|y)b"), "a*b");
        assert_eq!(plain_glob("plain*"), "plain*");
    }
}
