//! What every tenant's gate knows of the host it runs in: the host's own files and
//! programs (a command naming one is hardline, `self.host_state`), the home directory
//! `~` stands for, and whether commands see the host user's credentials.

use crate::config::TerminalSettings;
use hermetic_approval::DetectorConfig;
use hermetic_detect::{PathView, RealPaths};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Backends whose commands do not see the host user's home (a private `/home` and
/// `/root`, an image's, a sandbox kernel's view): reading `~/.ssh` there reads nothing
/// of the host's, so it need not ask.
const ISOLATED_HOMES: &[&str] = &["bwrap", "docker", "gvisor"];

/// The host's paths as the gate reads them, computed once.
#[derive(Debug, Clone, Default)]
pub(crate) struct HostState {
    state: Vec<String>,
    programs: Vec<String>,
    home: Option<String>,
}

/// `path` absolute, then also with its symlinks resolved as far as it exists: a
/// command may name either.
fn spellings(path: &Path) -> Vec<String> {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = vec![absolute.display().to_string()];
    let mut existing: &Path = &absolute;
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut real: PathBuf = real;
            real.extend(rest.iter().rev());
            let real = real.display().to_string();
            if !out.contains(&real) {
                out.push(real);
            }
            break;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name);
                existing = parent;
            }
            _ => break,
        }
    }
    out
}

impl HostState {
    /// From the settings' protected files and programs, and `home` (the `HOME`
    /// commands get).
    pub(crate) fn new(settings: &TerminalSettings, home: Option<String>) -> Self {
        let all = |paths: &[PathBuf]| -> Vec<String> {
            let mut out: Vec<String> = Vec::new();
            for p in paths.iter().flat_map(|p| spellings(p)) {
                if !out.contains(&p) {
                    out.push(p);
                }
            }
            out
        };
        Self {
            state: all(&settings.protected),
            programs: all(&settings.programs),
            home: home.filter(|h| h.starts_with('/')),
        }
    }

    /// `detector` (a tenant's, as its policy wrote it) knowing the host: its files,
    /// programs and home; credentials asked for only where `backend` sees them; and,
    /// where `backend`'s commands see the host's own files (`local`; `bwrap` in
    /// `place`, its writable directory, bound at the same path), the file system to
    /// read their words on, symlinks followed.
    pub(crate) fn apply(&self, detector: &mut DetectorConfig, backend: &str, place: Option<&Path>) {
        detector.host_state.extend(self.state.iter().cloned());
        detector.host_programs.extend(self.programs.iter().cloned());
        detector.home.clone_from(&self.home);
        if ISOLATED_HOMES.contains(&backend) {
            detector.credential_reads = false;
        }
        let below = match backend {
            "local" => Some(None),
            "bwrap" => place.map(|p| Some(p.to_path_buf())),
            _ => None,
        };
        if let Some(below) = below {
            detector.view = PathView::new(Arc::new(HostView { below }));
        }
    }
}

/// Most symlinks followed for one word, as the kernel's own limit (`ELOOP`): past it
/// the rest is only known at run time.
const MAX_LINKS: usize = 40;

/// The host's file system, as the gate reads a command's words on it: a command on
/// `local` sees all of it; one in bubblewrap sees its writable directory (`below`) at
/// the same path, so only paths there are read. A symlink there — planted by an
/// earlier command, or out of an archive — takes a harmless-looking word to the
/// host's state; the text alone cannot tell.
///
/// Read-only and without opening anything: `lstat` and `readlink` per component, so a
/// FIFO or device on the way is never opened by the host.
#[derive(Debug)]
struct HostView {
    below: Option<PathBuf>,
}

impl RealPaths for HostView {
    fn real(&self, path: &str) -> Option<String> {
        if !path.starts_with('/') || path.starts_with("/proc/") || path.starts_with("/dev/") {
            // `/proc/self` would be this process, not the command's: the text rules
            // read those.
            return None;
        }
        if let Some(below) = &self.below
            && !Path::new(path).starts_with(below)
        {
            return None;
        }
        resolve(path)
    }
}

/// `path` with its symlinks resolved as the kernel does (`..` after a link is the
/// link target's parent), as far as it exists; the rest appended as written. A link
/// into `/proc` or `/dev/fd` (resolved per process) or past [`MAX_LINKS`] leaves the
/// rest under `$LINK`, a component only known at run time. `None` when no symlink is
/// on the way.
fn resolve(path: &str) -> Option<String> {
    let mut todo: std::collections::VecDeque<String> = parts(path).collect();
    let mut out: Vec<String> = Vec::new();
    let mut links = 0;
    let mut existing = true;
    while let Some(part) = todo.pop_front() {
        if part == ".." {
            out.pop();
            continue;
        }
        if !existing {
            out.push(part);
            continue;
        }
        let here: PathBuf = std::iter::once("/".to_owned())
            .chain(out.iter().cloned())
            .chain(std::iter::once(part.clone()))
            .collect();
        match std::fs::symlink_metadata(&here) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                let target = std::fs::read_link(&here).ok();
                let target = target.as_deref().and_then(Path::to_str);
                match target {
                    Some(t) if links <= MAX_LINKS && !per_process(t) => {
                        if t.starts_with('/') {
                            out.clear();
                        }
                        for p in parts(t).collect::<Vec<_>>().into_iter().rev() {
                            todo.push_front(p);
                        }
                    }
                    // Only known at run time (or not text): the rest from there.
                    _ => {
                        let rest: Vec<String> = todo.drain(..).collect();
                        let mut real = String::from("/$LINK");
                        for p in rest {
                            real.push('/');
                            real.push_str(&p);
                        }
                        return Some(real);
                    }
                }
            }
            Ok(_) => out.push(part),
            Err(_) => {
                existing = false;
                out.push(part);
            }
        }
    }
    if links == 0 {
        return None;
    }
    Some(format!("/{}", out.join("/")))
}

/// The components of `path`, without empty ones and `.`.
fn parts(path: &str) -> impl Iterator<Item = String> + '_ {
    path.split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .map(str::to_owned)
}

/// True for a link target the kernel resolves per process (`/proc/self/cwd`,
/// `/dev/fd/3`, `/dev/stdin`): the host's own reading of it would be its own.
fn per_process(target: &str) -> bool {
    target.starts_with("/proc/") || target == "/proc" || target.starts_with("/dev/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_known_by_its_symlinks_resolved_too() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let names = spellings(&link.join("policy.toml"));
        let real = real.canonicalize().unwrap().join("policy.toml");
        assert!(names.contains(&link.join("policy.toml").display().to_string()));
        assert!(names.contains(&real.display().to_string()), "{names:?}");
    }

    /// Review r3, finding 3: a symlink planted in the workspace (by an earlier command,
    /// or out of an archive) takes a word to the host's state; the view reads words
    /// where the kernel would open them.
    #[test]
    fn words_are_read_where_their_symlinks_lead() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        let conf = home.join(".config/hermetic");
        std::fs::create_dir_all(&conf).unwrap();
        let ws = home.join("proj");
        std::fs::create_dir_all(ws.join("d")).unwrap();
        std::os::unix::fs::symlink("../../.config", ws.join("d/c")).unwrap();
        std::os::unix::fs::symlink("/proc/self/cwd/..", ws.join("up")).unwrap();
        std::os::unix::fs::symlink(ws.join("loop"), ws.join("loop")).unwrap();
        let real = |p: &Path| resolve(p.to_str().unwrap());
        let approvals = conf.join("approvals.json").display().to_string();
        assert_eq!(
            real(&ws.join("d/c/hermetic/approvals.json")),
            Some(approvals.clone())
        );
        // `..` after a link is the target's parent, as the kernel reads it.
        assert_eq!(
            real(&ws.join("d/c/../proj/d/c/hermetic/approvals.json")),
            Some(approvals)
        );
        assert_eq!(
            real(&ws.join("up/.config/hermetic/approvals.json")).as_deref(),
            Some("/$LINK/.config/hermetic/approvals.json")
        );
        assert!(real(&ws.join("loop/x")).unwrap().starts_with("/$LINK"));
        assert_eq!(real(&ws.join("d/plain.txt")), None);
        assert_eq!(real(&ws.join("missing/x")), None);
        // bwrap's view is the host's in its workspace only; /proc is read by text.
        let bwrap = HostView {
            below: Some(ws.join("d")),
        };
        assert!(bwrap.real(&format!("{}/d/c/x", ws.display())).is_some());
        assert!(bwrap.real(&format!("{}/up/x", ws.display())).is_none());
        assert!(HostView { below: None }.real("/proc/self/cwd/x").is_none());
    }

    #[test]
    fn isolated_backends_do_not_ask_for_credentials() {
        let settings = TerminalSettings {
            protected: vec![PathBuf::from("/srv/h/policy.toml")],
            ..TerminalSettings::default()
        };
        let host = HostState::new(&settings, Some("/home/op".into()));
        let mut local = DetectorConfig::default();
        host.apply(&mut local, "local", None);
        assert!(local.credential_reads);
        assert!(local.host_state.contains(&"/srv/h/policy.toml".to_owned()));
        assert_eq!(local.home.as_deref(), Some("/home/op"));
        let mut bwrap = DetectorConfig::default();
        host.apply(&mut bwrap, "bwrap", None);
        assert!(!bwrap.credential_reads);
    }
}
