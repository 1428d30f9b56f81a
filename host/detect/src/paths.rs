//! Classification of path arguments: system directories, home directories, protected
//! files, credentials, devices.
//!
//! Paths are classified by their text after folding, made lexical (`//` and `/./`
//! collapsed, `..` resolved, `$HOME` read as `~`, Windows `C:\x` read as `C:/x`). A path
//! that is only partly known keeps its variable names (`$HERMES_HOME/.env`), which the
//! protected-directory list may name.

use std::borrow::Cow;

/// True when `text` is already in the form `canonical` gives: no blanks around it,
/// no drive letter, `$HOME` or `$PWD` to rewrite, no empty, `.` or `..` component.
/// Most arguments are; they skip the rewriting (this runs for every operand).
fn is_canonical(text: &str) -> bool {
    let b = text.as_bytes();
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return false;
    };
    let rest = text.strip_prefix('/').unwrap_or(text);
    let rewritten = first.is_ascii_whitespace()
        || last.is_ascii_whitespace()
        || (b.len() >= 2 && b[1] == b':' && first.is_ascii_alphabetic())
        || ["$HOME", "${HOME}", "$PWD", "${PWD}"]
            .iter()
            .any(|v| text.starts_with(v));
    !rewritten && rest.split('/').all(|p| !matches!(p, "" | "." | ".."))
}

/// A path argument in a canonical lexical form (borrowed when it already is one).
pub(crate) fn canonical(text: &str) -> Cow<'_, str> {
    if is_canonical(text) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(rewrite(text))
}

/// The rewriting `canonical` does.
fn rewrite(text: &str) -> String {
    let mut s = text.trim().to_owned();
    if s.len() >= 2 && s.as_bytes()[1] == b':' && s.as_bytes()[0].is_ascii_alphabetic() {
        s = s.replace('\\', "/");
    }
    for home in ["${HOME}", "$HOME"] {
        if let Some(rest) = s.strip_prefix(home) {
            s = format!("~{rest}");
        }
    }
    // `$PWD` is the working directory: `$PWD/../x` leaves it.
    for cwd in ["${PWD}", "$PWD"] {
        if let Some(rest) = s.strip_prefix(cwd)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            s = format!(".{rest}");
        }
    }
    let absolute = s.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    // Components `..` may not remove: a magic link (`/proc/self/cwd`, `/dev/fd/3`) and
    // what climbs above it, which are only known at run time.
    let mut floor = 0;
    for part in s.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                // `~` and `$DIR` are not one plain component: `~/..` is the parent of
                // home, not the working directory.
                if parts.len() > floor
                    && parts
                        .last()
                        .is_some_and(|p| *p != ".." && !p.starts_with(['~', '$']))
                {
                    parts.pop();
                } else if !absolute || parts.len() <= floor && floor > 0 {
                    parts.push("..");
                    floor = parts.len();
                }
            }
            p => {
                parts.push(p);
                if absolute && is_magic_link(&parts) {
                    floor = parts.len();
                }
            }
        }
    }
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else if joined.is_empty() {
        ".".to_owned()
    } else {
        joined
    }
}

/// True when `parts` (the components of an absolute path, `/` left out) end at a link
/// the kernel resolves per process, to a place no text names: `/proc/PID/cwd`,
/// `/proc/PID/root`, `/proc/PID/fd/N` (also under `task/TID`), `/dev/fd/N` and
/// `/dev/std{in,out,err}`. The kernel follows the link before it reads a `..` after
/// it, so `/proc/self/cwd/..` is the working directory's parent, not `/proc/self`.
pub(crate) fn is_magic_link(parts: &[&str]) -> bool {
    matches!(
        parts,
        ["dev", "fd", _]
            | ["dev", "stdin" | "stdout" | "stderr"]
            | ["proc", _, "cwd" | "root"]
            | ["proc", _, "fd", _]
            | ["proc", _, "task", _, "cwd" | "root"]
            | ["proc", _, "task", _, "fd", _]
    )
}

/// Top-level directories whose recursive deletion breaks the machine.
const SYSTEM_DIRS: &[&str] = &[
    "bin",
    "boot",
    "dev",
    "etc",
    "home",
    "lib",
    "lib32",
    "lib64",
    "libx32",
    "opt",
    "proc",
    "root",
    "run",
    "sbin",
    "srv",
    "sys",
    "usr",
    "var",
    "snap",
    "mnt",
    "media",
    // macOS
    "Applications",
    "Library",
    "System",
    "Users",
    "Volumes",
    "private",
    "cores",
];

/// Second-level system directories (under /usr and /var).
const SYSTEM_SUBDIRS: &[&str] = &[
    "/usr/bin",
    "/usr/sbin",
    "/usr/lib",
    "/usr/lib64",
    "/usr/local",
    "/usr/share",
    "/usr/include",
    "/usr/libexec",
    "/var/lib",
    "/var/log",
    "/var/spool",
    "/var/mail",
    "/var/db",
    "/private/etc",
    "/private/var",
    "/System/Library",
];

/// True when recursively deleting `path` (canonical) removes the root, a system
/// directory, a home directory, or all of the entries of one of them.
pub(crate) fn is_critical_dir(path: &str) -> bool {
    let path = path.strip_suffix("/*").unwrap_or(path);
    let path = if path == "*" || path.is_empty() {
        "/"
    } else {
        path
    };
    if path == "/" || path == "~" || path == "/*" {
        return true;
    }
    // ~user and a direct child of /home or /Users are home directories; so is what
    // is beside home (`~/..`, `~/../bob`).
    if path.starts_with('~') && !path.contains('/') {
        return true;
    }
    if let Some(beside) = path.strip_prefix("~/..")
        && (beside.is_empty() || (beside.starts_with('/') && !beside[1..].contains('/')))
    {
        return true;
    }
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    if path.starts_with('/') {
        if parts.len() == 1 && SYSTEM_DIRS.contains(&parts[0]) {
            return true;
        }
        if parts.len() == 2 && matches!(parts[0], "home" | "Users") {
            return true;
        }
        if SYSTEM_SUBDIRS.contains(&path) {
            return true;
        }
    }
    // Windows drive roots and system folders.
    let lower = path.to_ascii_lowercase();
    matches!(
        lower.as_str(),
        "c:" | "c:/windows" | "c:/users" | "c:/program files"
    )
}

/// File names of shell start-up files: writing one runs code in every new shell.
const RC_FILES: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".mkshrc",
    ".cshrc",
    ".tcshrc",
    ".login",
    ".inputrc",
    ".xinitrc",
    ".xprofile",
    // History: rewriting or shredding it hides what was done.
    ".bash_history",
    ".zsh_history",
    ".history",
];

/// Path components that hold credentials.
const CREDENTIAL_DIRS: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".kube",
    ".azure",
    ".docker",
    ".gcloud",
    ".password-store",
];

/// File names that are credentials wherever they are.
const CREDENTIAL_FILES: &[&str] = &[
    ".netrc",
    ".git-credentials",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    "id_rsa",
    "id_ed25519",
    "id_ecdsa",
    "id_dsa",
    "authorized_keys",
    "credentials",
    "shadow",
    "gshadow",
    "master.key",
    "credentials.json",
    "service-account.json",
];

/// True for a `.env` file or a variant (`.env.local`, `.env.production`); not for
/// look-alike names such as `.env#backup` or `.envrc` (an rc file, listed separately),
/// nor for templates that hold no secrets (`.env.example`, `.env.sample`).
fn is_env_file(name: &str) -> bool {
    const TEMPLATES: &[&str] = &["example", "sample", "template", "dist", "defaults", "tpl"];
    name == ".env"
        || name
            .strip_prefix(".env.")
            .is_some_and(|rest| !rest.is_empty() && !TEMPLATES.contains(&rest))
}

/// True when `path` (canonical) holds credentials: reading it and sending it off the
/// machine leaks secrets.
pub(crate) fn is_credential(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    is_env_file(name)
        || CREDENTIAL_FILES.contains(&name)
        || name.starts_with("id_rsa")
        || name.ends_with(".pem")
        || name.ends_with(".key")
        || path.split('/').any(|c| CREDENTIAL_DIRS.contains(&c))
        || path == "/etc/shadow"
}

/// Configuration file names that an agent overwriting wholesale would most likely
/// break (the agent's own config is usually one of these).
const CONFIG_FILES: &[&str] = &[
    "config.yaml",
    "config.yml",
    "config.toml",
    "config.json",
    "settings.json",
    "settings.yaml",
    "settings.toml",
    "policy.toml",
    "hermetic.toml",
];

/// True when `path` names a configuration file by its name.
pub(crate) fn is_config_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    CONFIG_FILES.contains(&name)
}

/// True when writing `path` (canonical) changes the system, a shell's start-up, a
/// credential, an `.env` file, or the agent's own configuration (`agent_dirs`: path
/// components such as `.hermes` or `$HERMES_HOME`).
pub(crate) fn is_protected(path: &str, agent_dirs: &[String]) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    // direnv runs `.envrc` in whatever directory it sits in.
    let startup = (RC_FILES.contains(&name) && in_home_dir(path)) || name == ".envrc";
    if startup || is_credential(path) {
        return true;
    }
    if path.split('/').any(|c| agent_dirs.iter().any(|d| d == c)) {
        return true;
    }
    // A git hook runs on the next git command.
    if path.contains(".git/hooks/") || path.ends_with(".git/config") {
        return true;
    }
    let system = [
        "/etc/",
        "/private/",
        "/boot/",
        "/usr/",
        "/bin/",
        "/sbin/",
        "/lib/",
        "/lib64/",
        "/var/spool/cron",
        "/var/log/",
        "/System/",
        "/Library/",
        "/root/",
    ];
    // `path` + "/" starts with `p`: the directory itself or something in it.
    system
        .iter()
        .any(|p| path.starts_with(p) || p.strip_suffix('/') == Some(path))
        || path
            .get(..10)
            .is_some_and(|p| p.eq_ignore_ascii_case("c:/windows"))
}

/// True when `path` (canonical) names an entry of what may be a home directory: the
/// working directory or its parent (either may be home), `~`, `/root`, `/home/NAME`,
/// `/Users/NAME`, or a directory only known at run time. Shells read their start-up
/// files only from there; a `.bashrc` in a fixture or an image tree is data.
fn in_home_dir(path: &str) -> bool {
    let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
    if dir.is_empty() || dir == ".." || dir.contains('$') || dir == "/root" {
        return true;
    }
    if dir.starts_with('~') {
        return !dir.contains('/');
    }
    let parts: Vec<&str> = dir.trim_start_matches('/').split('/').collect();
    let lower = dir.to_ascii_lowercase();
    (dir.starts_with('/') && parts.len() == 2 && matches!(parts[0], "home" | "Users"))
        || (lower.starts_with("c:/users/") && parts.len() == 3)
}

/// True when a relative `path` (canonical) climbs out of the working directory.
pub(crate) fn leaves_cwd(path: &str) -> bool {
    path == ".." || path.starts_with("../")
}

/// True for a block device (a disk or partition), whose overwriting destroys data.
pub(crate) fn is_block_device(path: &str) -> bool {
    let Some(dev) = path.strip_prefix("/dev/") else {
        return false;
    };
    const PREFIXES: &[&str] = &[
        "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "rdisk", "mapper/", "md", "dm-", "loop",
        "sr", "nbd", "zd", "block/", "disk/",
    ];
    PREFIXES.iter().any(|p| dev.starts_with(p))
}

/// True for kernel tunables and triggers.
pub(crate) fn is_kernel_knob(path: &str) -> bool {
    path.starts_with("/proc/sys") || path.starts_with("/sys/") || path == "/proc/sysrq-trigger"
}

/// True for a path into another process's open files or memory: `/proc/PID/fd/…`,
/// `/proc/PID/task/TID/fd/…`, `/proc/PID/mem` (`PID` anything but `self` or
/// `thread-self`, a number or only known at run time).
pub(crate) fn is_other_process(path: &str) -> bool {
    let Some(rest) = path.strip_prefix("/proc/") else {
        return false;
    };
    let mut parts = rest.split('/');
    let pid = parts.next().unwrap_or("");
    if matches!(pid, "self" | "thread-self")
        || !(pid.bytes().all(|b| b.is_ascii_digit()) || pid.contains('$') || pid.contains('`'))
        || pid.is_empty()
    {
        return false;
    }
    let mut next = parts.next();
    if next == Some("task") {
        parts.next();
        next = parts.next();
    }
    matches!(next, Some("fd" | "mem"))
}

/// True for `/dev/tcp/…` and `/dev/udp/…`, bash's network redirections.
pub(crate) fn is_dev_net(path: &str) -> bool {
    path.starts_with("/dev/tcp/") || path.starts_with("/dev/udp/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_process_s_files_and_memory_are_told_from_ours() {
        for p in [
            "/proc/42/fd/0",
            "/proc/42/task/43/fd/1",
            "/proc/42/mem",
            "/proc/$(pgrep bash)/fd/0",
            "/proc/$PID/fd/0",
        ] {
            assert!(is_other_process(p), "{p}");
        }
        for p in [
            "/proc/self/fd/1",
            "/proc/thread-self/fd/0",
            "/proc/42/status",
            "/proc/sys/x",
            "/proc/cpuinfo",
            "/dev/fd/0",
            "/proc/42",
        ] {
            assert!(!is_other_process(p), "{p}");
        }
    }

    #[test]
    fn the_canonical_fast_path_agrees_with_the_rewrite() {
        for t in [
            "a",
            "/a/b",
            "a/b/",
            "./a",
            "a//b",
            "/",
            "~/x",
            "$HOME/x",
            "${PWD}/..",
            " a",
            "C:\\x",
            "a/./b",
            "a/..",
            "..",
            "-rf",
            "$X/y",
            "/tmp/a b",
        ] {
            let mut slow = t.trim().to_owned();
            // Force the rewrite by a leading blank the fast path refuses.
            slow.insert(0, ' ');
            assert_eq!(canonical(t), canonical(&slow), "{t:?}");
        }
    }

    #[test]
    fn canonical_paths_are_lexical() {
        assert_eq!(canonical("//bin//rm"), "/bin/rm");
        assert_eq!(canonical("/bin/../bin/rm"), "/bin/rm");
        assert_eq!(canonical("/./"), "/");
        assert_eq!(canonical("/.."), "/");
        assert_eq!(canonical("$HOME/tmp"), "~/tmp");
        assert_eq!(canonical("$PWD/../x"), "../x");
        assert_eq!(canonical("~/../x"), "~/../x");
        assert_eq!(canonical("$DIR/../x"), "$DIR/../x");
        assert_eq!(canonical("${PWD}/a"), "a");
        assert_eq!(canonical("$PWDX/a"), "$PWDX/a");
        assert_eq!(canonical("C:\\Users\\x\\.ssh\\k"), "C:/Users/x/.ssh/k");
    }

    /// Review r3, finding 3: `..` after a magic link is the kernel's, above whatever
    /// the link resolves to; removing it with the link's own name made
    /// `/proc/self/cwd/../.config` read as `/proc/self/.config`.
    #[test]
    fn a_dot_dot_after_a_magic_link_is_kept() {
        for (text, kept) in [
            ("/proc/self/cwd/../.config/x", "/proc/self/cwd/../.config/x"),
            ("/proc/self/cwd/a/../../b", "/proc/self/cwd/../b"),
            ("/proc/self/cwd/../../b", "/proc/self/cwd/../../b"),
            ("/proc/1/root/../etc", "/proc/1/root/../etc"),
            ("/proc/self/task/7/cwd/../x", "/proc/self/task/7/cwd/../x"),
            ("/proc/self/fd/3/../x", "/proc/self/fd/3/../x"),
            ("/dev/fd/3/../x", "/dev/fd/3/../x"),
            ("/dev/stdin/../x", "/dev/stdin/../x"),
            // Not magic: resolved as before.
            ("/proc/self/status/../x", "/proc/self/x"),
            ("/proc/../etc", "/etc"),
            ("/dev/../etc", "/etc"),
        ] {
            assert_eq!(canonical(text), kept, "{text}");
        }
    }

    #[test]
    fn critical_dirs_are_roots_system_dirs_and_homes() {
        for p in [
            "/",
            "/*",
            "~",
            "/etc",
            "/home",
            "/home/alice",
            "/usr/lib",
            "~/*",
            "~/..",
            "~/../bob",
        ] {
            assert!(is_critical_dir(&canonical(p)), "{p}");
        }
        for p in ["/tmp", "/tmp/x", "build", "~/project", "/opt/foo"] {
            assert!(!is_critical_dir(&canonical(p)), "{p}");
        }
    }

    #[test]
    fn env_files_are_protected_but_lookalike_names_are_not() {
        let dirs = vec![".hermes".to_owned()];
        assert!(is_protected(".env", &dirs));
        assert!(is_protected(".env.local", &dirs));
        assert!(is_protected("~/.hermes/config.yaml", &dirs));
        assert!(!is_protected(".env#backup", &dirs));
        assert!(!is_protected("/srv/app/config.yaml", &dirs));
    }

    #[test]
    fn start_up_files_are_protected_only_where_a_home_may_be() {
        let dirs = vec![".hermes".to_owned()];
        for p in [
            ".bashrc",
            "~/.bashrc",
            "~bob/.zshrc",
            "/root/.profile",
            "/home/dev/.zshrc",
            "/Users/dev/.zprofile",
            "../.bashrc",
            "$ZDOTDIR/.zshrc",
            "/etc/skel/.bashrc",
            "project/.envrc",
        ] {
            assert!(is_protected(&canonical(p), &dirs), "{p}");
        }
        for p in [
            "/tmp/proj/.bashrc",
            "fixtures/home/.profile",
            "~/dotfiles/.zshrc",
            "/home/dev/src/.bashrc",
        ] {
            assert!(!is_protected(&canonical(p), &dirs), "{p}");
        }
    }
}
