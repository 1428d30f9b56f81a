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

use super::fold::glob_matches;
use super::paths::canonical;
use std::borrow::Cow;

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

/// [`CREDENTIALS`] as components from `~`.
static CREDENTIAL_PATHS: std::sync::LazyLock<Vec<Vec<String>>> = std::sync::LazyLock::new(|| {
    CREDENTIALS
        .iter()
        .map(|entry| {
            std::iter::once("~")
                .chain(entry.iter().copied())
                .map(str::to_owned)
                .collect()
        })
        .collect()
});

/// Files in `~/.ssh` that hold no secret.
const SSH_PUBLIC: &[&str] = &[
    "config",
    "known_hosts",
    "known_hosts.old",
    "authorized_keys",
    "environment",
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
pub(crate) enum Relation {
    /// The protected path itself.
    Equal,
    /// Something inside it; the index is the first pattern part past it.
    Inside(usize),
    /// A directory that holds it; `direct`: its own directory.
    Holds { direct: bool },
}

/// One component of a path a command names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part<'a> {
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

/// How paths resolve where the commands judged run, for a backend whose view is the
/// host's own file system (`local`; `bwrap` inside its workspace): what the text of a
/// word cannot tell — a symlink planted by an earlier command or an extracted archive —
/// the file system can, at judge time. The detector does no I/O itself; the terminal
/// gives it this.
pub trait RealPaths: Send + Sync + std::fmt::Debug {
    /// `path` (absolute, as written: `..` not yet removed, since the kernel reads it
    /// after the symlinks before it) with the symlinks of its longest existing prefix
    /// resolved as the kernel would, the rest appended; a component only known at run
    /// time (a link into `/proc/PID/…` or `/dev/fd/…`) written as `$LINK`. `None` when
    /// the file system does not change what the text says (nothing on the way is a
    /// symlink), or when `path` is outside what this view resolves.
    fn real(&self, path: &str) -> Option<String>;
}

/// The [`RealPaths`] a detector consults, if any (none by default: words are judged by
/// their text alone). Two views are equal when they are the same object.
#[derive(Clone, Default)]
pub struct PathView(pub Option<std::sync::Arc<dyn RealPaths>>);

impl PathView {
    /// A view through `real`.
    pub fn new(real: std::sync::Arc<dyn RealPaths>) -> Self {
        Self(Some(real))
    }
}

impl std::fmt::Debug for PathView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(real) => write!(f, "PathView({real:?})"),
            None => f.write_str("PathView(text only)"),
        }
    }
}

impl PartialEq for PathView {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => std::sync::Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

impl Eq for PathView {}

/// The host's own paths, compiled from the detector's configuration.
#[derive(Debug, Clone, Default)]
pub(crate) struct HostPaths {
    /// The host's state, as components (`/` or `~` first): naming one, something
    /// inside one, or (beyond listing) a directory holding one is hardline.
    pub(crate) state: Vec<Vec<String>>,
    /// The host's programs: naming one is hardline; their directories are not
    /// protected (a build tree may hold one).
    pub(crate) programs: Vec<Vec<String>>,
    /// File names of the programs: running one by name is running the host.
    pub(crate) program_names: Vec<String>,
    /// How state and programs are written inside a word (`--file=/etc/x/p.toml`,
    /// code): searched as text.
    pub(crate) spellings: Vec<String>,
    /// The last components of state and programs: every spelling holds one, so a word
    /// without any is not searched for spellings.
    pub(crate) tails: Vec<String>,
    /// The first components below `/` of every protected path (and of every home,
    /// with credentials): an absolute path starting elsewhere names none of them.
    pub(crate) roots: Vec<String>,
    /// The home directory `~` stands for, as components; `None`: unknown (`~` is then
    /// only itself).
    pub(crate) home: Option<Vec<String>>,
    /// Reading the host user's credentials is dangerous.
    pub(crate) credentials: bool,
    /// Where words are also resolved on the file system.
    pub(crate) view: PathView,
}

/// `text` (canonical) as components, `/` first when absolute.
pub(crate) fn components(text: &str) -> Vec<String> {
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
        for p in compiled.state.iter().chain(&compiled.programs) {
            if let Some(tail) = p.last()
                && !compiled.tails.contains(tail)
            {
                compiled.tails.push(tail.clone());
            }
            if p.first().is_some_and(|f| f == "/")
                && let Some(root) = p.get(1)
                && !compiled.roots.contains(root)
            {
                compiled.roots.push(root.clone());
            }
        }
        if credentials {
            for root in ["home", "root", "Users"] {
                if !compiled.roots.iter().any(|r| r == root) {
                    compiled.roots.push(root.to_owned());
                }
            }
        }
        if let Some(home) = &compiled.home
            && let Some(root) = home.get(1)
            && !compiled.roots.contains(root)
        {
            compiled.roots.push(root.clone());
        }
        compiled
    }

    /// The ways `path` is written as text: absolute, and from home as `~/…`,
    /// `$HOME/…`, `${HOME}/…`.
    pub(crate) fn spell(&self, path: &[String]) -> Vec<String> {
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

    /// False when `word`, an absolute path, surely relates to nothing protected: its
    /// first component is none of theirs (and no glob or variable could make it one).
    pub(crate) fn may_relate(&self, word: &str) -> bool {
        let Some(rest) = word.strip_prefix('/') else {
            return true;
        };
        let rest = rest.trim_start_matches(['/', '.']);
        let first = rest.get(..rest.find('/').unwrap_or(rest.len()));
        match first.filter(|c| !c.is_empty()) {
            None => true,
            // `/proc/PID/root/…` and `/dev/fd/N/…` lead anywhere.
            Some(c) if c == ".." || c == "proc" || c == "dev" => true,
            Some(c) if c.contains(['*', '?', '[', '$', '`', '(', '{', '~']) => true,
            Some(c) => self.roots.iter().any(|r| r == c),
        }
    }

    /// True when nothing is protected.
    pub(crate) fn is_empty(&self) -> bool {
        self.state.is_empty() && self.programs.is_empty() && !self.credentials
    }

    /// `text` (canonical, resolved against the tracked working directory) as the
    /// parts of a path pattern; `None` when it is a relative path from an unknown
    /// directory (the start of a command, which is never a place holding host state:
    /// the host refuses to start with its files in a terminal's working directory).
    /// `glob`: the word has unquoted glob characters; `dynamic`: part of it is only
    /// known at run time.
    pub(crate) fn pattern<'a>(
        &self,
        text: &'a str,
        glob: bool,
        dynamic: bool,
    ) -> Option<Vec<Part<'a>>> {
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
    pub(crate) fn expand_home(&self, text: &str) -> Option<String> {
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
    pub(crate) fn state_relation(&self, pattern: &[Part<'_>]) -> Option<Relation> {
        let state = self
            .state
            .iter()
            .filter(|p| may_match(pattern, p))
            .filter_map(|p| relation(pattern, p));
        let programs = self
            .programs
            .iter()
            .filter(|p| may_match(pattern, p))
            .filter_map(|p| relation(pattern, p))
            .filter(|r| !matches!(r, Relation::Holds { .. }));
        state.chain(programs).min_by_key(|r| rank(*r))
    }

    /// How `pattern` relates to the host user's credentials: `Some(true)` names one (a
    /// file, a directory of them, something inside), `Some(false)` names a directory
    /// holding some.
    pub(crate) fn credential_relation(&self, pattern: &[Part<'_>]) -> Option<bool> {
        if holds_homes(pattern) {
            return Some(false);
        }
        let from_home = self.read_from_home(pattern)?;
        if matches!(from_home.as_slice(), [Part::Lit(t)] if t == "~") {
            // A home itself holds them.
            return Some(false);
        }
        let mut holds = false;
        for (entry, concrete) in CREDENTIALS.iter().zip(CREDENTIAL_PATHS.iter()) {
            if !may_match(&from_home, concrete) {
                continue;
            }
            match relation(&from_home, concrete) {
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
    pub(crate) fn read_from_home<'a>(&self, pattern: &[Part<'a>]) -> Option<Vec<Part<'a>>> {
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
    let mut parts = magic_proc(parts);
    // Text folded from a default (`${X:-/a}/b`) is a guess: only some tail is known.
    if dynamic && !parts.contains(&Part::Unknown) && parts.len() > 1 {
        parts[0] = Part::Guess;
    }
    Some(parts)
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

/// `/proc/PID/root/…` is `/…`; `/proc/PID/cwd/…`, `/proc/PID/fd/N/…`,
/// `/dev/fd/N/…` and `/dev/stdin/…` are somewhere only known at run time.
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
    } else if is(parts.first(), "/")
        && is(parts.get(1), "dev")
        && ["stdin", "stdout", "stderr"]
            .iter()
            .any(|s| is(parts.get(2), s))
        && parts.len() > 3
    {
        // `/dev/stdin` is `/proc/self/fd/0`: with more after it, a directory.
        let rest = parts.split_off(3);
        parts = std::iter::once(Part::Unknown).chain(rest).collect();
    }
    parts
}

/// False when `pattern` and `path` surely differ in their first two components (both
/// named plainly): the cheap test before [`relation`].
pub(crate) fn may_match(pattern: &[Part<'_>], path: &[String]) -> bool {
    // Position i is the path's i-th component only while every part before it is one.
    for i in 0..2 {
        match (pattern.get(i), path.get(i)) {
            (Some(Part::Lit(a)), Some(b)) if a != b => return false,
            (Some(Part::Lit(_)), _) => {}
            _ => return true,
        }
    }
    true
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
pub(crate) fn relation(pattern: &[Part<'_>], path: &[String]) -> Option<Relation> {
    if pattern.first() == Some(&Part::Guess) {
        // Any of the written components may be part of the guess: each tail after
        // one, behind an unknown part.
        let mut tail = pattern.to_vec();
        return (1..pattern.len())
            .filter_map(|k| {
                tail[k - 1] = Part::Unknown;
                relation(&tail[k - 1..], path)
            })
            .min_by_key(|r| rank(*r));
    }
    let (p, c) = (pattern.len(), path.len());
    if p == 0 || c == 0 || p > 256 {
        return None;
    }
    if pattern.iter().all(|x| matches!(x, Part::Lit(_))) {
        // Most words: compared component by component, no table.
        let common = pattern
            .iter()
            .zip(path)
            .take_while(|(x, y)| matches!(x, Part::Lit(t) if t == *y))
            .count();
        return match (common == p, common == c) {
            (true, true) => Some(Relation::Equal),
            (false, true) => Some(Relation::Inside(c)),
            (true, false) => Some(Relation::Holds { direct: p == c - 1 }),
            (false, false) => None,
        };
    }
    // dp[i][j]: pattern[..i] matches path[..j]; on the stack for the usual sizes.
    let width = c + 1;
    let mut stack = [false; 256];
    let mut heap = Vec::new();
    let dp: &mut [bool] = if (p + 1) * width <= stack.len() {
        &mut stack[..(p + 1) * width]
    } else {
        heap.resize((p + 1) * width, false);
        &mut heap
    };
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
pub(crate) fn contains_path(text: &str, needle: &str) -> bool {
    let name_byte = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-');
    text.match_indices(needle).any(|(at, _)| {
        let before = text[..at].bytes().next_back();
        let after = text[at + needle.len()..].bytes().next();
        before.is_none_or(|b| !name_byte(b) && b != b'/' && b != b'~')
            && after.is_none_or(|b| !name_byte(b))
    })
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
