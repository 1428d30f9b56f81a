//! Hot reload: keeps the registry in step with the `*.wasm` files of the tools
//! directories, so tools can be added, removed or replaced without a restart.
//!
//! [`Reloader::rescan`] is the whole logic (synchronous, testable without timing);
//! [`spawn`] runs it whenever the directories change. Calls in flight are unaffected:
//! they hold their tool entry, so they finish on the version they started with.

use hermetic::component::ToolSource;
use hermetic::{LoadProblem, Registry};
use parking_lot::Mutex;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Quiet time after the last file event before rescanning: copying a component
/// produces several events, and loading a half-written file would only fail.
pub const DEBOUNCE: Duration = Duration::from_millis(200);

/// Rescan interval when the OS cannot watch the directories (e.g. out of inotify
/// watches): slow enough to cost nothing, quick enough for a human dropping a file.
pub const POLL_INTERVAL: Duration = Duration::from_secs(2);

/// What one rescan changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReloadReport {
    /// Tools that appeared.
    pub added: Vec<String>,
    /// Tools whose component changed.
    pub replaced: Vec<String>,
    /// Tools whose file disappeared.
    pub removed: Vec<String>,
    /// Files that could not be loaded (the tool they held before, if any, stays).
    pub problems: Vec<LoadProblem>,
}

impl ReloadReport {
    /// Whether the tool list changed.
    pub fn changed(&self) -> bool {
        !(self.added.is_empty() && self.replaced.is_empty() && self.removed.is_empty())
    }
}

/// What we last saw of one file.
#[derive(Debug, Clone)]
struct Seen {
    len: u64,
    modified: Option<SystemTime>,
    /// SHA-256 of the bytes last loaded (`None`: never read).
    digest: Option<String>,
    /// Tool the file registered, if it loaded.
    tool: Option<String>,
}

/// Tracks the `*.wasm` files of some directories and applies their changes to a
/// registry.
#[derive(Debug)]
pub struct Reloader {
    registry: Arc<Registry>,
    dirs: Vec<PathBuf>,
    files: BTreeMap<PathBuf, Seen>,
}

impl Reloader {
    /// A reloader for `dirs`, adopting what the registry already loaded from them
    /// (e.g. by [`Registry::add_dir`]): files present now count as seen, so the first
    /// [`Reloader::rescan`] only reports later changes. Files that failed to load are
    /// retried when they change.
    pub fn new(registry: Arc<Registry>, dirs: Vec<PathBuf>) -> Self {
        // Read the entries directly: `Registry::tools` would run every `check()`.
        let sources: BTreeMap<PathBuf, String> = registry
            .sources()
            .into_iter()
            .filter_map(|(name, source)| match source {
                ToolSource::File(path) => Some((path, name)),
                ToolSource::Bundled(_) | ToolSource::Oci(_) => None,
            })
            .collect();
        let mut files = BTreeMap::new();
        for dir in &dirs {
            for (path, len, modified) in list(dir).unwrap_or_default() {
                let tool = sources.get(&path).cloned();
                files.insert(
                    path,
                    Seen {
                        len,
                        modified,
                        digest: None,
                        tool,
                    },
                );
            }
        }
        Self {
            registry,
            dirs,
            files,
        }
    }

    /// The directories watched.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Applies every change since the last scan: new files are loaded and registered,
    /// changed files replace their tool, deleted files deregister theirs. A file that
    /// does not load is reported and leaves the tool it held (if any) in place, so a
    /// half-written copy never takes a working tool away. A directory that cannot be
    /// read is skipped (its tools stay) and retried next time.
    pub fn rescan(&mut self) -> ReloadReport {
        let mut report = ReloadReport::default();
        let mut present: Vec<(PathBuf, u64, Option<SystemTime>)> = Vec::new();
        let mut readable: Vec<&Path> = Vec::new();
        for dir in &self.dirs {
            match list(dir) {
                Ok(files) => {
                    present.extend(files);
                    readable.push(dir);
                }
                Err(e) => tracing::warn!(dir = %dir.display(), "cannot read tools directory: {e}"),
            }
        }

        let gone: Vec<PathBuf> = self
            .files
            .keys()
            .filter(|p| {
                p.parent().is_some_and(|d| readable.contains(&d))
                    && !present.iter().any(|(q, ..)| q == *p)
            })
            .cloned()
            .collect();
        for path in gone {
            if let Some(seen) = self.files.remove(&path)
                && let Some(name) = seen.tool
                && self.holds(&name, &path)
                && self.registry.deregister(&name)
            {
                tracing::info!(tool = %name, file = %path.display(), "tool removed");
                report.removed.push(name);
            }
        }

        for (path, len, modified) in present {
            let previous = self.files.get(&path).cloned();
            if previous
                .as_ref()
                .is_some_and(|s| s.len == len && s.modified == modified)
            {
                continue;
            }
            let tool = self.load(&path, previous.as_ref(), &mut report);
            let digest = tool.as_ref().map(|(_, d)| d.clone());
            let tool = match tool {
                Some((name, _)) => Some(name),
                None => previous.as_ref().and_then(|s| s.tool.clone()),
            };
            self.files.insert(
                path,
                Seen {
                    len,
                    modified,
                    digest: digest.or_else(|| previous.and_then(|s| s.digest)),
                    tool,
                },
            );
        }
        report
    }

    /// Loads a new or changed file and registers its tool. Returns the tool's name and
    /// the file's digest when the file now holds a registered tool.
    fn load(
        &self,
        path: &Path,
        previous: Option<&Seen>,
        report: &mut ReloadReport,
    ) -> Option<(String, String)> {
        let problem = |reason: String| LoadProblem {
            source: path.display().to_string(),
            reason,
        };
        let bytes = match hermetic::component::read_file(path) {
            Ok(bytes) => bytes,
            Err(e) => {
                report.problems.push(problem(e.to_string()));
                return None;
            }
        };
        let digest = format!("{:x}", Sha256::digest(&bytes));
        if let Some(seen) = previous
            && seen.digest.as_deref() == Some(digest.as_str())
            && let Some(name) = &seen.tool
        {
            // Touched, or rewritten with the same bytes: nothing to reload.
            return Some((name.clone(), digest));
        }
        let tool = match self
            .registry
            .load(&bytes, ToolSource::File(path.to_path_buf()))
        {
            Ok(tool) => tool,
            Err(e) => {
                tracing::warn!(file = %path.display(), "not reloaded: {e}");
                report.problems.push(problem(e.to_string()));
                return None;
            }
        };
        let name = tool.declaration.name.clone();
        if let Err(e) = self.registry.register(tool) {
            report.problems.push(problem(e.to_string()));
            return None;
        }
        let old = previous.and_then(|s| s.tool.as_deref());
        match old {
            Some(old) if old == name => {
                tracing::info!(tool = %name, file = %path.display(), "tool replaced");
                report.replaced.push(name.clone());
            }
            _ => {
                // The file now declares another name: its old tool is gone.
                if let Some(old) = old
                    && self.registry.deregister(old)
                {
                    report.removed.push(old.to_owned());
                }
                tracing::info!(tool = %name, file = %path.display(), "tool added");
                report.added.push(name.clone());
            }
        }
        Some((name, digest))
    }

    /// Whether the registry's `name` still comes from `path` (and not from a file or
    /// bundle that took the name over since).
    fn holds(&self, name: &str, path: &Path) -> bool {
        self.registry
            .source_of(name)
            .is_some_and(|source| matches!(&source, ToolSource::File(p) if p == path))
    }
}

/// `*.wasm` files of a directory with their size and modification time.
fn list(dir: &Path) -> std::io::Result<Vec<(PathBuf, u64, Option<SystemTime>)>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let Ok(entry) = entry else { continue };
        let path = entry.path();
        if path.extension().is_none_or(|x| x != "wasm") {
            continue;
        }
        // Follows symlinks, like `Registry::add_dir`.
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if meta.is_file() {
            files.push((path, meta.len(), meta.modified().ok()));
        }
    }
    files.sort();
    Ok(files)
}

/// A running watcher; dropping it stops watching.
#[derive(Debug)]
pub struct WatchHandle {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for WatchHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Watches the reloader's directories (inotify, or polling every [`POLL_INTERVAL`]
/// where the OS cannot watch) and rescans after each burst of changes;
/// `on_change` runs after every rescan that changed the tool list.
///
/// Must run inside a Tokio runtime.
pub fn spawn(
    reloader: Reloader,
    on_change: impl Fn(&ReloadReport) + Send + Sync + 'static,
) -> WatchHandle {
    let (wake, mut woken) = tokio::sync::mpsc::channel::<()>(1);
    let watcher = watch_dirs(reloader.dirs(), wake);
    let reloader = Arc::new(Mutex::new(reloader));
    let task = tokio::spawn(async move {
        // Held for as long as the task runs: dropping it stops the OS watches.
        let watcher = watcher;
        loop {
            if watcher.is_some() {
                if woken.recv().await.is_none() {
                    return;
                }
                // Debounce: wait until the directory has been quiet for a while.
                while let Ok(Some(())) = tokio::time::timeout(DEBOUNCE, woken.recv()).await {}
            } else {
                tokio::time::sleep(POLL_INTERVAL).await;
            }
            let reloader = reloader.clone();
            // Loading compiles components: keep it off the async workers.
            let report = tokio::task::spawn_blocking(move || reloader.lock().rescan()).await;
            match report {
                Ok(report) if report.changed() => on_change(&report),
                Ok(_) => {}
                Err(e) => tracing::error!("tools directory rescan failed: {e}"),
            }
        }
    });
    WatchHandle { task }
}

/// An OS watcher on `dirs` that wakes the rescan loop, or `None` (poll instead).
fn watch_dirs(
    dirs: &[PathBuf],
    wake: tokio::sync::mpsc::Sender<()>,
) -> Option<notify::RecommendedWatcher> {
    use notify::{EventKind, RecursiveMode, Watcher, event::AccessKind, event::AccessMode};
    let handler = move |event: notify::Result<notify::Event>| {
        let relevant = match &event {
            // Reads (including our own rescans) change nothing; a closed writer does.
            Ok(e) => match e.kind {
                EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
                EventKind::Access(_) => false,
                _ => true,
            },
            // An error may mean missed events: rescan to be sure.
            Err(_) => true,
        };
        if relevant {
            // Full: a wake-up is already pending, which covers this event too.
            let _ = wake.try_send(());
        }
    };
    let mut watcher = match notify::recommended_watcher(handler) {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!("cannot watch tools directories ({e}); polling instead");
            return None;
        }
    };
    for dir in dirs {
        if let Err(e) = watcher.watch(dir, RecursiveMode::NonRecursive) {
            tracing::warn!(dir = %dir.display(), "cannot watch ({e}); polling instead");
            return None;
        }
    }
    Some(watcher)
}
