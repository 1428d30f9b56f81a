//! Files the terminal's commands wrote, per session.
//!
//! The detector marks a file a command line writes (a redirection, `tee`, `curl -o`,
//! `chmod +x`, a clone) as fresh, so running it later in the same line needs approval:
//! `printf 'rm -rf ~' > x.sh; bash x.sh`. Split over two calls the same pair would
//! pass, each half harmless alone. So every command and every line of input the gate
//! approves leaves what it wrote here (as the detector sees it: absolute paths), and
//! the next judgement of the session reads them as fresh.

use hermetic_approval::SessionKey;
use parking_lot::Mutex;
use std::collections::HashMap;

/// Most files remembered per session. Past it every file counts as fresh (`*`):
/// forgetting the oldest would let a burst of harmless writes hide a script written
/// before them, and a session that wrote this many files through the terminal can
/// ask before it runs one. Bounds the memory (and the scan per judgement) a session
/// costs.
pub(crate) const MAX_FILES_PER_SESSION: usize = 1024;

/// The files each session's commands wrote.
#[derive(Debug, Default)]
pub(crate) struct SessionFiles {
    by_session: Mutex<HashMap<SessionKey, Vec<String>>>,
}

impl SessionFiles {
    /// What the session's commands wrote so far.
    pub(crate) fn of(&self, session: &SessionKey) -> Vec<String> {
        self.by_session
            .lock()
            .get(session)
            .cloned()
            .unwrap_or_default()
    }

    /// Adds what an approved command or input wrote.
    pub(crate) fn remember(&self, session: &SessionKey, wrote: &[String]) {
        if wrote.is_empty() {
            return;
        }
        let mut map = self.by_session.lock();
        let files = map.entry(session.clone()).or_default();
        if files.iter().any(|f| f == "*") {
            return;
        }
        for w in wrote {
            if !files.contains(w) {
                files.push(w.clone());
            }
        }
        if files.len() > MAX_FILES_PER_SESSION {
            *files = vec!["*".to_owned()];
        }
    }

    /// The session ended.
    pub(crate) fn forget(&self, session: &SessionKey) {
        self.by_session.lock().remove(session);
    }

    /// The host shuts down.
    pub(crate) fn clear(&self) {
        self.by_session.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_kept_per_session_and_overflow_to_everything() {
        let files = SessionFiles::default();
        let a = SessionKey::new("t", "a");
        let b = SessionKey::new("t", "b");
        files.remember(&a, &["/ws/x.sh".to_owned()]);
        files.remember(&a, &["/ws/x.sh".to_owned()]);
        assert_eq!(files.of(&a), ["/ws/x.sh"]);
        assert!(files.of(&b).is_empty());
        let many: Vec<String> = (0..=MAX_FILES_PER_SESSION)
            .map(|i| format!("/ws/{i}"))
            .collect();
        files.remember(&a, &many);
        assert_eq!(files.of(&a), ["*"]);
        files.remember(&a, &["/ws/y".to_owned()]);
        assert_eq!(files.of(&a), ["*"]);
        files.forget(&a);
        assert!(files.of(&a).is_empty());
    }
}
