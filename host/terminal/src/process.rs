//! Background processes: a registry per (tenant, session), a rolling output buffer per
//! process, and the `process` tool's actions, answered in the host's typed replies.

use super::backend::TerminalBackend;
use super::exec::{self, Spawned, StreamText, TICK};
use super::input_gate::InputGate;
use hermetic::{
    KillOutcome, LogLines, ProcessInfo, ProcessReply, ProcessStatus, TerminalCallError, WaitOutcome,
};
use hermetic_approval::SessionKey;
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Characters of output kept per process (the newest ones).
pub const BUFFER_CHARS: usize = 200_000;
/// Processes one session may hold, running and finished together.
pub const MAX_PER_SESSION: usize = 64;
/// How long a finished process stays listed (its output readable).
pub const KEEP_FINISHED: Duration = Duration::from_secs(30 * 60);
/// Characters of output in `poll`'s preview.
const PREVIEW_CHARS: usize = 1_000;
/// Characters of output `wait` returns.
const WAIT_OUTPUT_CHARS: usize = 2_000;
/// Lines `log` returns when the agent gives no limit.
const DEFAULT_LOG_LINES: u64 = 200;
/// Longest a `write` waits for a process to take its data: one that does not read its
/// stdin must not hold the call (nor the process's stdin lock) past its deadline.
pub(crate) const STDIN_WAIT: Duration = Duration::from_secs(5);

static PROC_SEQ: AtomicU64 = AtomicU64::new(0);

#[derive(Default)]
struct State {
    buffer: String,
    buffer_chars: usize,
    exit_code: Option<i32>,
    finished: Option<Instant>,
    /// The far side said it started the command (`MARKER started`): a kill by marker
    /// finds it now.
    started: bool,
}

/// One background process.
pub(crate) struct Proc {
    id: String,
    command: String,
    pid: u32,
    started: Instant,
    state: Mutex<State>,
    changed: Condvar,
    /// `None` when closed, or while a writer thread holds the pipe.
    stdin: Mutex<Option<Box<dyn Write + Send>>>,
    /// `close` was asked for: a writer thread drops the pipe instead of returning it.
    stdin_closed: std::sync::atomic::AtomicBool,
    /// What reads its stdin, and the input held back from it (`input_gate.rs`).
    input: Mutex<InputGate>,
    backend: Arc<dyn TerminalBackend>,
    session: SessionKey,
    /// The marker its wrapped script carries: how a remote backend finds its processes.
    marker: String,
    /// The backend process, until the watcher has reaped it.
    child: Mutex<Option<exec::ChildHandle>>,
}

impl Proc {
    fn lock(&self) -> parking_lot::MutexGuard<'_, State> {
        self.state.lock()
    }

    /// Its input gate.
    pub(crate) fn input(&self) -> parking_lot::MutexGuard<'_, InputGate> {
        self.input.lock()
    }

    /// Its stdin is open (not closed by `close`).
    pub(crate) fn stdin_open(&self) -> bool {
        !self.stdin_closed.load(Ordering::SeqCst)
    }

    /// Closes its stdin (a write still under way drops the pipe when it is done).
    pub(crate) fn close_stdin(&self) {
        let mut stdin = self.stdin.lock();
        self.stdin_closed.store(true, Ordering::SeqCst);
        stdin.take();
    }

    /// Kills it, on a backend that announces its start only once the far side has
    /// (or the local process ended, or [`exec::START_WAIT`] passed): a kill before it
    /// would find nothing there, and the command would start after it and run on.
    fn kill(&self) {
        self.kill_by(Instant::now() + exec::START_WAIT);
    }

    /// [`kill`](Self::kill), waiting for the start until `deadline` at most: the
    /// processes of a session start on the far side at the same time, so the kills at
    /// its end wait for them together, up to one [`exec::START_WAIT`] in all (not one
    /// each, one after another).
    fn kill_by(&self, deadline: Instant) {
        if self.backend.announces_start() {
            let mut s = self.lock();
            while !s.started && s.finished.is_none() && Instant::now() < deadline {
                self.changed.wait_for(&mut s, TICK * 4);
            }
            if !s.started && s.finished.is_none() {
                tracing::warn!(
                    id = %self.id,
                    "the far side did not say it started the command; killing it anyway"
                );
            }
        }
        self.kill_now();
    }

    /// Kills it without waiting for its start.
    fn kill_now(&self) {
        if self.backend.is_remote()
            && let Err(e) = self.backend.kill_remote(&self.session, &self.marker)
        {
            tracing::warn!(error = %e, "could not kill a remote background process");
        }
        exec::kill_group(self.pid);
        if let Some(child) = self.child.lock().as_mut() {
            child.kill();
        }
    }

    /// Forgetting the process: kill its group even when the leader has finished (what
    /// it left running, `nohup srv &`, must not outlive its session), then reap the
    /// leader. The watcher leaves it unreaped, so the group id cannot have been reused.
    fn release(&self) {
        self.release_by(Instant::now() + exec::START_WAIT);
    }

    /// [`release`](Self::release), waiting for an unannounced start until `deadline`
    /// at most (see [`kill_by`](Self::kill_by)).
    fn release_by(&self, deadline: Instant) {
        // On the far side the local client's end says little (a dropped connection
        // ends it while the remote command runs on): a remote one is always killed.
        if self.lock().finished.is_none() || self.backend.is_remote() {
            self.kill_by(deadline);
        } else {
            exec::kill_group(self.pid);
        }
        if let Some(mut child) = self.child.lock().take() {
            child.kill();
            child.wait();
        }
    }

    /// Writes `bytes` to its stdin from a helper thread (a process that never reads
    /// would block the writer for ever); waits at most `wait` (and while `cancelled`
    /// is false) for the write to finish. The pipe is back in place for the next
    /// write once the thread is done.
    pub(crate) fn write_stdin(
        self: &Arc<Self>,
        bytes: Vec<u8>,
        wait: Duration,
        cancelled: &dyn Fn() -> bool,
    ) -> StdinWrite {
        let Some(mut pipe) = self.stdin.lock().take() else {
            return StdinWrite::Unavailable;
        };
        let (done_tx, done) = std::sync::mpsc::sync_channel(1);
        let me = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name("hermetic-terminal-stdin".into())
            .spawn(move || {
                let result = pipe.write_all(&bytes).and_then(|()| pipe.flush());
                let mut slot = me.stdin.lock();
                if result.is_ok() && !me.stdin_closed.load(Ordering::SeqCst) {
                    *slot = Some(pipe);
                }
                drop(slot);
                let _ = done_tx.send(result);
            });
        if let Err(e) = spawned {
            return StdinWrite::Failed(e);
        }
        let deadline = Instant::now() + wait;
        loop {
            match done.recv_timeout(TICK) {
                Ok(Ok(())) => return StdinWrite::Written,
                Ok(Err(e)) => return StdinWrite::Failed(e),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return StdinWrite::Failed(std::io::Error::other("the writer stopped"));
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            }
            if Instant::now() >= deadline || cancelled() {
                return StdinWrite::Pending;
            }
        }
    }
}

/// A new process's stdin: its gate, and the approved text it is sent first (the
/// `stdin` of the command that started it).
pub(crate) struct StartingInput {
    /// What reads it, and what is held back.
    pub gate: InputGate,
    /// Judged and approved: written as soon as the process is registered.
    pub first: Option<String>,
}

/// How a write to a background process's stdin went.
pub(crate) enum StdinWrite {
    Written,
    /// The process has not taken it all yet; the rest is written as it reads.
    Pending,
    /// Closed, or a previous write is still pending.
    Unavailable,
    Failed(std::io::Error),
}

/// Appends to a rolling buffer, keeping the newest [`BUFFER_CHARS`] characters.
fn push_rolling(state: &mut State, text: &str) {
    state.buffer.push_str(text);
    state.buffer_chars += text.chars().count();
    // Trim in batches (at 125%) so appending stays linear.
    if state.buffer_chars > BUFFER_CHARS + BUFFER_CHARS / 4 {
        let drop = state.buffer_chars - BUFFER_CHARS;
        let cut = state
            .buffer
            .char_indices()
            .nth(drop)
            .map_or(state.buffer.len(), |(i, _)| i);
        state.buffer.drain(..cut);
        state.buffer_chars = BUFFER_CHARS;
    }
}

fn last_chars(s: &str, n: usize) -> &str {
    let count = s.chars().count();
    if count <= n {
        return s;
    }
    let cut = s.char_indices().nth(count - n).map_or(0, |(i, _)| i);
    &s[cut..]
}

/// All background processes of this host, by session.
#[derive(Default)]
pub struct ProcessRegistry {
    sessions: Mutex<HashMap<SessionKey, Vec<Arc<Proc>>>>,
}

/// Why a background process could not be registered.
#[derive(Debug, thiserror::Error)]
#[error(
    "this session already has {MAX_PER_SESSION} background processes running; kill or wait for one first"
)]
pub struct TooMany;

impl ProcessRegistry {
    /// Makes room for one more process in `session`: forgets finished ones older than
    /// [`KEEP_FINISHED`], then the oldest finished one if the session is full.
    ///
    /// # Errors
    /// [`TooMany`] when every slot holds a running process.
    pub(crate) fn reserve(&self, session: &SessionKey) -> Result<(), TooMany> {
        let mut sessions = self.sessions.lock();
        let procs = sessions.entry(session.clone()).or_default();
        let (expired, kept): (Vec<_>, Vec<_>) = std::mem::take(procs).into_iter().partition(|p| {
            p.lock()
                .finished
                .is_some_and(|f| f.elapsed() >= KEEP_FINISHED)
        });
        *procs = kept;
        let mut forgotten = expired;
        let full = procs.len() >= MAX_PER_SESSION;
        if full {
            match procs.iter().position(|p| p.lock().finished.is_some()) {
                Some(i) => forgotten.push(procs.remove(i)),
                None => return Err(TooMany),
            }
        }
        drop(sessions);
        for p in forgotten {
            p.release();
        }
        Ok(())
    }

    /// Registers a started process and its watcher; returns its id and local pid.
    pub(crate) fn add(
        &self,
        session: &SessionKey,
        command: &str,
        backend: Arc<dyn TerminalBackend>,
        spawned: Spawned,
        marker: String,
        input: StartingInput,
    ) -> (String, u32) {
        let seq = PROC_SEQ.fetch_add(1, Ordering::Relaxed);
        let id = format!("proc_{:x}{:06x}", std::process::id(), seq);
        let Spawned {
            child,
            stdin,
            output,
        } = spawned;
        let pid = child.id();
        let proc = Arc::new(Proc {
            id: id.clone(),
            command: command.to_owned(),
            pid,
            started: Instant::now(),
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            stdin: Mutex::new(stdin),
            stdin_closed: std::sync::atomic::AtomicBool::new(false),
            input: Mutex::new(input.gate),
            backend,
            session: session.clone(),
            marker: marker.clone(),
            child: Mutex::new(Some(child)),
        });
        self.sessions
            .lock()
            .entry(session.clone())
            .or_default()
            .push(Arc::clone(&proc));
        let watched = Arc::clone(&proc);
        let spawn = std::thread::Builder::new()
            .name("hermetic-terminal-bg".into())
            .spawn(move || watch(&watched, output, marker));
        if spawn.is_err() {
            // Nothing reads its output, so no `started` line would ever be seen.
            proc.kill_now();
        }
        // Registered first, so it can be killed even if it never reads its stdin; the
        // write itself is not waited for (the agent can poll or write more later).
        if let Some(text) = input.first {
            let _ = proc.write_stdin(text.into_bytes(), Duration::ZERO, &|| true);
        }
        (id, pid)
    }

    /// Process `id` of `session`.
    pub(crate) fn get(&self, session: &SessionKey, id: &str) -> Option<Arc<Proc>> {
        let sessions = self.sessions.lock();
        sessions.get(session)?.iter().find(|p| p.id == id).cloned()
    }

    /// Kills every process of `session` and forgets them. Those whose far side has
    /// not said it started are waited for together: at most [`exec::START_WAIT`] in
    /// all.
    pub fn end_session(&self, session: &SessionKey) {
        self.end_session_by(session, Instant::now() + exec::START_WAIT);
    }

    /// [`end_session`](Self::end_session), waiting for unannounced starts until
    /// `deadline` at most.
    fn end_session_by(&self, session: &SessionKey, deadline: Instant) {
        let procs = self.sessions.lock().remove(session).unwrap_or_default();
        for p in procs {
            p.release_by(deadline);
        }
    }

    /// Kills every process of every session, waiting for unannounced starts at most
    /// [`exec::START_WAIT`] in all.
    pub fn kill_all(&self) {
        let deadline = Instant::now() + exec::START_WAIT;
        let sessions: Vec<SessionKey> = self.sessions.lock().keys().cloned().collect();
        for s in sessions {
            self.end_session_by(&s, deadline);
        }
    }

    /// Running processes across all sessions (for tests and status pages).
    pub fn running(&self) -> usize {
        let sessions = self.sessions.lock();
        sessions
            .values()
            .flatten()
            .filter(|p| p.lock().finished.is_none())
            .count()
    }

    /// The `process` tool's actions. `clean` prepares output for the agent (ANSI,
    /// redaction); `cancelled` stops a `wait` early.
    ///
    /// # Errors
    /// [`TerminalCallError::UnknownProcess`] for an id the session does not hold.
    pub(crate) fn action(
        &self,
        session: &SessionKey,
        action: Action<'_>,
        clean: &dyn Fn(&str) -> String,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<ProcessReply, TerminalCallError> {
        if let Action::List = action {
            let sessions = self.sessions.lock();
            let list = sessions
                .get(session)
                .map(|v| v.as_slice())
                .unwrap_or_default()
                .iter()
                .map(|p| p.info(200, clean))
                .collect();
            return Ok(ProcessReply::List(list));
        }
        let id = action.id();
        let Some(p) = self.get(session, id) else {
            return Err(TerminalCallError::UnknownProcess(id.to_owned()));
        };
        let reply = match action {
            Action::List => ProcessReply::List(Vec::new()),
            Action::Poll(_) => ProcessReply::Poll(p.info(PREVIEW_CHARS, clean)),
            Action::Log { offset, limit, .. } => {
                let s = p.lock();
                let text = clean(&s.buffer);
                let lines: Vec<&str> = text.lines().collect();
                let total = lines.len();
                let limit =
                    usize::try_from(limit.unwrap_or(DEFAULT_LOG_LINES)).unwrap_or(usize::MAX);
                let (from, to) = match offset {
                    // Hermes: no offset means the newest `limit` lines.
                    None | Some(0) => (total.saturating_sub(limit), total),
                    Some(o) => {
                        let o = usize::try_from(o).unwrap_or(usize::MAX).min(total);
                        (o, o.saturating_add(limit).min(total))
                    }
                };
                ProcessReply::Log(LogLines {
                    id: p.id.clone(),
                    status: status(&s),
                    output: lines[from..to].join("\n"),
                    total_lines: total as u64,
                    shown_lines: (to - from) as u64,
                })
            }
            Action::Wait { timeout, .. } => {
                let deadline = Instant::now() + timeout;
                let mut s = p.lock();
                while s.finished.is_none() && Instant::now() < deadline && !cancelled() {
                    let wait = deadline
                        .saturating_duration_since(Instant::now())
                        .min(TICK * 4);
                    p.changed.wait_for(&mut s, wait);
                }
                let output = clean(last_chars(&s.buffer, WAIT_OUTPUT_CHARS));
                // `watch` sets the exit code and `finished` together.
                match (s.finished, s.exit_code) {
                    (Some(_), Some(exit_code)) => {
                        ProcessReply::Wait(WaitOutcome::Exited { exit_code, output })
                    }
                    _ => ProcessReply::Wait(WaitOutcome::TimedOut {
                        waited_secs: timeout.as_secs(),
                        output,
                    }),
                }
            }
            Action::Kill(_) => {
                if let Some(code) = p.lock().exit_code {
                    return Ok(ProcessReply::Kill(KillOutcome::AlreadyExited(code)));
                }
                p.kill();
                ProcessReply::Kill(KillOutcome::Killed)
            }
        };
        Ok(reply)
    }
}

fn status(s: &State) -> ProcessStatus {
    if s.finished.is_some() {
        ProcessStatus::Exited
    } else {
        ProcessStatus::Running
    }
}

impl Proc {
    /// What `list` and `poll` report, with the newest `preview` characters of output.
    fn info(&self, preview: usize, clean: &dyn Fn(&str) -> String) -> ProcessInfo {
        let s = self.lock();
        ProcessInfo {
            id: self.id.clone(),
            command: self.command.clone(),
            pid: self.pid,
            status: status(&s),
            exit_code: s.exit_code,
            uptime_secs: self.started.elapsed().as_secs(),
            output_preview: clean(last_chars(&s.buffer, preview)),
        }
    }
}

/// A `process` tool action.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Action<'a> {
    List,
    Poll(&'a str),
    Log {
        id: &'a str,
        offset: Option<u64>,
        limit: Option<u64>,
    },
    Wait {
        id: &'a str,
        timeout: Duration,
    },
    Kill(&'a str),
}

impl Action<'_> {
    fn id(&self) -> &str {
        match self {
            Action::List => "",
            Action::Poll(id) | Action::Kill(id) => id,
            Action::Log { id, .. } | Action::Wait { id, .. } => id,
        }
    }
}

/// Collects a background process's output until it ends, then records its exit.
fn watch(p: &Proc, output: std::sync::mpsc::Receiver<Vec<u8>>, marker: String) {
    let mut stream = StreamText::new(marker);
    let mut events = Vec::new();
    let mut exited_at: Option<(i32, Instant)> = None;
    let mut eof = false;
    loop {
        let mut text = String::new();
        if eof {
            std::thread::sleep(TICK);
        } else {
            match output.recv_timeout(TICK) {
                Ok(bytes) => stream.feed(&bytes, &mut text, &mut events),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    stream.finish(&mut text, &mut events);
                    eof = true;
                }
            }
        }
        {
            let mut s = p.lock();
            // A background script tracks no working directory: only its start counts.
            let started = events.drain(..).any(|e| e == exec::MarkerEvent::Started);
            if !text.is_empty() {
                push_rolling(&mut s, &text);
            }
            if started {
                s.started = true;
                drop(s);
                p.changed.notify_all();
            }
        }
        if exited_at.is_none() {
            let mut child = p.child.lock();
            // Not reaped: `release` kills its group later, which needs the id unreused.
            // Taken by `release` (the session ended): it was killed.
            if let Some(code) = child
                .as_mut()
                .map_or(Some(128 + 9), exec::ChildHandle::exited)
            {
                exited_at = Some((code, Instant::now()));
            }
        }
        if let Some((code, at)) = exited_at
            && (eof || at.elapsed() >= Duration::from_millis(300))
        {
            let mut s = p.lock();
            s.exit_code = Some(code);
            s.finished = Some(Instant::now());
            drop(s);
            p.changed.notify_all();
            return;
        }
    }
}
