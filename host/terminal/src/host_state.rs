//! What every tenant's gate knows of the host it runs in: the host's own files and
//! programs (a command naming one is hardline, `self.host_state`), the home directory
//! `~` stands for, and whether commands see the host user's credentials.

use crate::config::TerminalSettings;
use hermetic_approval::DetectorConfig;
use std::path::{Path, PathBuf};

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
    /// programs and home; credentials asked for only where `backend` sees them.
    pub(crate) fn apply(&self, detector: &mut DetectorConfig, backend: &str) {
        detector.host_state.extend(self.state.iter().cloned());
        detector.host_programs.extend(self.programs.iter().cloned());
        detector.home.clone_from(&self.home);
        if ISOLATED_HOMES.contains(&backend) {
            detector.credential_reads = false;
        }
    }
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

    #[test]
    fn isolated_backends_do_not_ask_for_credentials() {
        let settings = TerminalSettings {
            protected: vec![PathBuf::from("/srv/h/policy.toml")],
            ..TerminalSettings::default()
        };
        let host = HostState::new(&settings, Some("/home/op".into()));
        let mut local = DetectorConfig::default();
        host.apply(&mut local, "local");
        assert!(local.credential_reads);
        assert!(local.host_state.contains(&"/srv/h/policy.toml".to_owned()));
        assert_eq!(local.home.as_deref(), Some("/home/op"));
        let mut bwrap = DetectorConfig::default();
        host.apply(&mut bwrap, "bwrap");
        assert!(!bwrap.credential_reads);
    }
}
