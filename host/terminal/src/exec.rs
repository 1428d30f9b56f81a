//! Running a backend's process: merged stdout+stderr through one pipe, its own process
//! group, a reader thread, timeouts and cancellation that kill the whole tree (locally
//! with `killpg`, on the far side through the backend), and the marker lines the
//! wrapped script prints (the final working directory) taken out of the output.

mod spawner;

use super::backend::{BackendError, TerminalBackend};
use hermetic_approval::SessionKey;
use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How often a waiting loop looks at the clock, the child and the cancel token.
pub(crate) const TICK: Duration = Duration::from_millis(50);
/// Longest a kill waits for a far side's `started` line
/// ([`TerminalBackend::announces_start`]) before it kills anyway: a launcher that has
/// not started by then is stuck (an overloaded container engine, a dead link), and a
/// timeout or cancellation must still end.
pub(crate) const START_WAIT: Duration = Duration::from_secs(10);
/// After the shell exits, how long output from processes it left behind (holding the
/// pipe open) is still collected.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(300);
/// Chunks of output (up to 16 KiB each) the reader thread may queue ahead of the
/// consumer: a command that prints faster than we handle it is slowed down by the pipe
/// (back-pressure) instead of filling the host's memory.
const CHANNEL_CHUNKS: usize = 64;
/// Longest line held back because it contains the marker (waiting for its newline to
/// decide whether it is a marker line). Real marker lines are the marker plus a pid or
/// a working directory (at most 4096 bytes); a longer one is a command printing the
/// marker itself (it can learn it from `trap -p` or /proc), and is shown as output
/// rather than held without bound.
const MAX_HELD_LINE: usize = 8 * 1024;

/// A started backend process.
pub(crate) struct Spawned {
    pub child: ChildHandle,
    pub stdin: Option<Box<dyn Write + Send>>,
    pub output: Receiver<Vec<u8>>,
}

/// A backend process: a plain child, or one running on a pseudo-terminal.
pub(crate) enum ChildHandle {
    /// Pipes for stdio.
    Process(Child),
    /// A pseudo-terminal for stdio (the master end is kept open while it runs).
    Pty {
        child: Box<dyn portable_pty::Child + Send + Sync>,
        _master: Box<dyn portable_pty::MasterPty + Send>,
    },
}

impl ChildHandle {
    /// The local pid (also its process group: both kinds start a new group).
    pub(crate) fn id(&self) -> u32 {
        match self {
            ChildHandle::Process(c) => c.id(),
            ChildHandle::Pty { child, .. } => child.process_id().unwrap_or(0),
        }
    }

    /// Its exit code once it has exited, leaving it unreaped: while the leader is a
    /// zombie its pid (and so its process group id) cannot be reused, so the group can
    /// still be killed after the leader exited without hitting an unrelated group.
    /// [`ChildHandle::wait`] reaps it.
    pub(crate) fn exited(&mut self) -> Option<i32> {
        use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};
        let pid = i32::try_from(self.id()).ok().and_then(Pid::from_raw)?;
        let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
        match waitid(WaitId::Pid(pid), options) {
            Ok(Some(status)) => Some(
                status
                    .exit_status()
                    .or_else(|| status.terminating_signal().map(|s| 128 + s))
                    .unwrap_or(-1),
            ),
            Ok(None) => None,
            // Already reaped (not ours to wait for): ask the handle.
            Err(_) => self.try_wait(),
        }
    }

    /// Its exit code, once it has exited.
    pub(crate) fn try_wait(&mut self) -> Option<i32> {
        match self {
            ChildHandle::Process(c) => c.try_wait().ok().flatten().map(exit_code),
            ChildHandle::Pty { child, .. } => child.try_wait().ok().flatten().map(|s| {
                match s.signal() {
                    // portable-pty names the signal but not its number: a killed child.
                    Some(_) => 128 + 9,
                    None => i32::try_from(s.exit_code()).unwrap_or(-1),
                }
            }),
        }
    }

    pub(crate) fn kill(&mut self) {
        match self {
            ChildHandle::Process(c) => {
                let _ = c.kill();
            }
            ChildHandle::Pty { child, .. } => {
                let _ = child.kill();
            }
        }
    }

    pub(crate) fn wait(&mut self) {
        match self {
            ChildHandle::Process(c) => {
                let _ = c.wait();
            }
            ChildHandle::Pty { child, .. } => {
                let _ = child.wait();
            }
        }
    }
}

fn read_into_channel(
    mut reader: impl Read + Send + 'static,
    backend: &'static str,
    program: &str,
) -> Result<Receiver<Vec<u8>>, BackendError> {
    let (tx, rx) = std::sync::mpsc::sync_channel(CHANNEL_CHUNKS);
    std::thread::Builder::new()
        .name("hermetic-terminal-read".into())
        .spawn(move || {
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                // A pseudo-terminal reports EIO once the child side is closed: the end.
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if tx.send(buf[..n].to_vec()).is_err() {
                            break;
                        }
                    }
                }
            }
        })
        .map_err(|e| BackendError::Spawn {
            backend,
            program: program.to_owned(),
            reason: e.to_string(),
        })?;
    Ok(rx)
}

/// Size of the pseudo-terminal: wide, so tools do not wrap their lines.
const PTY_SIZE: portable_pty::PtySize = portable_pty::PtySize {
    rows: 50,
    cols: 200,
    pixel_width: 0,
    pixel_height: 0,
};

/// Starts `cmd` on a new pseudo-terminal (its own session and process group), with
/// exactly the environment `cmd` sets.
pub(crate) fn spawn_pty(cmd: Command, backend: &'static str) -> Result<Spawned, BackendError> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let err = |reason: String| BackendError::Spawn {
        backend,
        program: program.clone(),
        reason,
    };
    let pair = portable_pty::native_pty_system()
        .openpty(PTY_SIZE)
        .map_err(|e| err(format!("cannot open a pseudo-terminal: {e}")))?;
    let mut builder = portable_pty::CommandBuilder::new(cmd.get_program());
    builder.args(cmd.get_args());
    builder.env_clear();
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            builder.env(k, v);
        }
    }
    if let Some(dir) = cmd.get_current_dir() {
        builder.cwd(dir);
    }
    let slave = pair.slave;
    // On the spawner thread (see `spawner`), where our copy of the child's side is
    // dropped too: without dropping it the reader never sees the end.
    let child = spawner::run(move || slave.spawn_command(builder), abandon_pty)
        .map_err(|e| err(e.to_string()))?
        .map_err(|e| err(e.to_string()))?;
    let reader = pair
        .master
        .try_clone_reader()
        .map_err(|e| err(e.to_string()))?;
    let writer = pair.master.take_writer().map_err(|e| err(e.to_string()))?;
    let output = read_into_channel(reader, backend, &program)?;
    Ok(Spawned {
        child: ChildHandle::Pty {
            child,
            _master: pair.master,
        },
        stdin: Some(writer),
        output,
    })
}

/// Kills a process whose start finished after its caller stopped waiting (see
/// `spawner`): nobody would end it.
fn abandon_child(started: std::io::Result<Child>) {
    if let Ok(mut child) = started {
        kill_group(child.id());
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// [`abandon_child`] for a process on a pseudo-terminal.
fn abandon_pty<E>(started: Result<Box<dyn portable_pty::Child + Send + Sync>, E>) {
    if let Ok(mut child) = started {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Starts `cmd` in a new process group with stdout and stderr merged into one pipe.
pub(crate) fn spawn(mut cmd: Command, backend: &'static str) -> Result<Spawned, BackendError> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let err = |reason: String| BackendError::Spawn {
        backend,
        program: program.clone(),
        reason,
    };
    let (reader, writer) = std::io::pipe().map_err(|e| err(e.to_string()))?;
    let writer2 = writer.try_clone().map_err(|e| err(e.to_string()))?;
    use std::os::unix::process::CommandExt;
    cmd.stdout(writer)
        .stderr(writer2)
        .stdin(Stdio::piped())
        // Its own group, so a timeout can kill everything the command started.
        .process_group(0);
    // On the spawner thread (see `spawner`), where `cmd` is dropped too: it holds our
    // copies of the pipe's write end, and EOF never comes while they are open.
    let mut child = spawner::run(move || cmd.spawn(), abandon_child)
        .and_then(|spawned| spawned)
        .map_err(|e| err(e.to_string()))?;
    let stdin = child
        .stdin
        .take()
        .map(|s| Box::new(s) as Box<dyn Write + Send>);
    let output = read_into_channel(reader, backend, &program)?;
    Ok(Spawned {
        child: ChildHandle::Process(child),
        stdin,
        output,
    })
}

/// Something the wrapped script reported on a marker line. (No pid: the host's kill
/// must not be steered by anything the command can print, see `remote_kill_script`.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MarkerEvent {
    /// The working directory when the script exited.
    Cwd(String),
    /// The far side's launcher is running: a kill by marker finds the command now
    /// (see `pid_namespace_launcher`).
    Started,
}

/// Turns the byte stream into text: UTF-8 decoded across chunk boundaries, marker
/// lines taken out and reported as events. A marker may follow the command's own
/// unterminated last line ("no newline at end"), so it is looked for anywhere in a
/// line, and text that could be the start of a marker is held back until it is known.
pub(crate) struct StreamText {
    marker: String,
    pending: Vec<u8>,
    line: String,
}

impl StreamText {
    pub(crate) fn new(marker: String) -> Self {
        Self {
            marker,
            pending: Vec::new(),
            line: String::new(),
        }
    }

    /// Feeds bytes; appends visible text to `out` and reports marker lines.
    pub(crate) fn feed(&mut self, bytes: &[u8], out: &mut String, events: &mut Vec<MarkerEvent>) {
        self.pending.extend_from_slice(bytes);
        let valid = match std::str::from_utf8(&self.pending) {
            Ok(s) => s.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => self.pending.len(),
        };
        let text = String::from_utf8_lossy(&self.pending[..valid]).into_owned();
        self.pending.drain(..valid);
        for c in text.chars() {
            self.line.push(c);
            if c == '\n' {
                self.flush_line(out, events);
            }
        }
        // Show the partial line now, except what may be the start of a marker. A line
        // held past MAX_HELD_LINE is no marker line of ours: showing it keeps the held
        // text (and the `find` over it on every chunk) bounded.
        let keep_from = match self.line.find(self.marker.as_str()) {
            Some(pos) if self.line.len() - pos <= MAX_HELD_LINE => pos,
            Some(_) => self.line.len(),
            None => self.line.len() - self.marker_prefix_suffix(),
        };
        out.push_str(&self.line[..keep_from]);
        self.line.drain(..keep_from);
    }

    /// The end of the stream.
    pub(crate) fn finish(&mut self, out: &mut String, events: &mut Vec<MarkerEvent>) {
        if !self.pending.is_empty() {
            let rest = String::from_utf8_lossy(&self.pending).into_owned();
            self.pending.clear();
            self.line.push_str(&rest);
        }
        self.flush_line(out, events);
    }

    /// Length of the longest end of the current line that is a start of the marker.
    fn marker_prefix_suffix(&self) -> usize {
        let max = self.marker.len().min(self.line.len());
        (1..=max)
            .rev()
            .find(|&k| {
                self.line.is_char_boundary(self.line.len() - k)
                    && self.marker.is_char_boundary(k)
                    && self.line.ends_with(&self.marker[..k])
            })
            .unwrap_or(0)
    }

    fn flush_line(&mut self, out: &mut String, events: &mut Vec<MarkerEvent>) {
        let line = std::mem::take(&mut self.line);
        let Some(pos) = line.find(self.marker.as_str()) else {
            out.push_str(&line);
            return;
        };
        out.push_str(&line[..pos]);
        let rest = line[pos + self.marker.len()..].trim_end_matches(['\n', '\r']);
        if let Some(cwd) = rest.strip_prefix(" cwd ") {
            events.push(MarkerEvent::Cwd(cwd.to_owned()));
        } else if rest == " started" {
            events.push(MarkerEvent::Started);
        }
    }
}

/// Kills everything a command started: on the far side through the backend (the
/// processes carrying the command's marker), then the local process group.
pub(crate) fn kill_tree(
    backend: &dyn TerminalBackend,
    session: &SessionKey,
    child: &mut ChildHandle,
    marker: &str,
) {
    if backend.is_remote()
        && let Err(e) = backend.kill_remote(session, marker)
    {
        tracing::warn!(error = %e, "could not kill the remote process tree");
    }
    kill_group(child.id());
    child.kill();
}

/// SIGKILL to a local process group (its leader's pid).
pub(crate) fn kill_group(pgid: u32) {
    if let Some(pid) = i32::try_from(pgid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        && let Err(e) = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL)
        && e != rustix::io::Errno::SRCH
    {
        tracing::warn!(error = %e, pgid, "could not kill the process group");
    }
}

/// An exit status as a shell reports it: the code, or 128 + the signal.
pub(crate) fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(-1)
}

/// How a foreground command ended.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ending {
    Exited(i32),
    TimedOut,
    Cancelled,
}

/// A foreground command's result before redaction and capping.
#[derive(Debug)]
pub(crate) struct Finished {
    pub output: super::output::HeadTail,
    pub ending: Ending,
    pub cwd: Option<String>,
}

/// Where and how long a foreground command runs.
pub(crate) struct Foreground<'a> {
    pub backend: &'a dyn TerminalBackend,
    pub session: &'a SessionKey,
    pub timeout: Duration,
    pub cancelled: &'a dyn Fn() -> bool,
}

/// Runs a spawned foreground command to its end, its timeout or its cancellation,
/// handing every piece of visible output to `on_output` as it arrives.
pub(crate) fn run_to_end(
    ctx: &Foreground<'_>,
    mut spawned: Spawned,
    marker: String,
    stdin: Option<String>,
    on_output: &mut dyn FnMut(&str),
) -> Finished {
    // Feed stdin on its own thread: a command that prints before reading would
    // otherwise deadlock against us.
    if let Some(mut pipe) = spawned.stdin.take()
        && let Some(text) = stdin
    {
        std::thread::spawn(move || {
            let _ = pipe.write_all(text.as_bytes());
        });
    }
    let (backend, session, cancelled) = (ctx.backend, ctx.session, ctx.cancelled);
    let deadline = Instant::now() + ctx.timeout;
    let mut stream = StreamText::new(marker.clone());
    let mut kept = super::output::HeadTail::default();
    let mut events = Vec::new();
    let mut cwd = None;
    let mut exited: Option<(i32, Instant)> = None;
    let mut eof = false;
    // A timeout or cancellation that must wait for the far side to have started the
    // command before its kill can find it: why, and since when.
    let mut stopping: Option<(Ending, Instant)> = None;
    let mut started = false;
    let absorb = |bytes: Option<&[u8]>,
                  stream: &mut StreamText,
                  kept: &mut super::output::HeadTail,
                  events: &mut Vec<MarkerEvent>,
                  on_output: &mut dyn FnMut(&str)| {
        let mut text = String::new();
        match bytes {
            Some(b) => stream.feed(b, &mut text, events),
            None => stream.finish(&mut text, events),
        }
        if !text.is_empty() {
            on_output(&text);
            kept.push(&text);
        }
    };
    let ending = loop {
        if !eof {
            match spawned.output.recv_timeout(TICK) {
                Ok(bytes) => absorb(Some(&bytes), &mut stream, &mut kept, &mut events, on_output),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => eof = true,
            }
        } else {
            std::thread::sleep(TICK);
        }
        for e in events.drain(..) {
            match e {
                MarkerEvent::Cwd(c) => cwd = Some(c),
                MarkerEvent::Started => started = true,
            }
        }
        if exited.is_none()
            && let Some(code) = spawned.child.exited()
        {
            exited = Some((code, Instant::now()));
        }
        if let Some((code, at)) = exited
            && (eof || at.elapsed() >= DRAIN_AFTER_EXIT)
        {
            break Ending::Exited(code);
        }
        if exited.is_none() && stopping.is_none() {
            if Instant::now() >= deadline {
                stopping = Some((Ending::TimedOut, Instant::now()));
            } else if cancelled() {
                stopping = Some((Ending::Cancelled, Instant::now()));
            }
        }
        if exited.is_none()
            && let Some((why, since)) = stopping
            && (started || !backend.announces_start() || since.elapsed() >= START_WAIT)
        {
            kill_tree(backend, session, &mut spawned.child, &marker);
            break why;
        }
    };
    if let Ending::Exited(_) = ending {
        // The leader exited (and is not reaped yet, so its group id is still its own):
        // whatever it left running in its group (`sleep 1000 &`, `nohup srv &`) must not
        // outlive the call. On the far side the command's pid namespace ended with its
        // script (see `pid_namespace_launcher`).
        kill_group(spawned.child.id());
    }
    // Whatever is still buffered in the pipe (bounded: the writers are gone or dead).
    let until = Instant::now() + DRAIN_AFTER_EXIT;
    while !eof && Instant::now() < until {
        match spawned.output.recv_timeout(TICK) {
            Ok(bytes) => absorb(Some(&bytes), &mut stream, &mut kept, &mut events, on_output),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => eof = true,
        }
    }
    absorb(None, &mut stream, &mut kept, &mut events, on_output);
    for e in events.drain(..) {
        if let MarkerEvent::Cwd(c) = e {
            cwd = Some(c);
        }
    }
    spawned.child.wait();
    Finished {
        output: kept,
        ending,
        cwd,
    }
}

/// Runs a short helper command (container start/stop, remote kill) with a deadline;
/// its output is returned on success.
pub(crate) fn run_helper(
    cmd: Command,
    backend: &'static str,
    timeout: Duration,
) -> Result<String, BackendError> {
    let Spawned {
        mut child,
        stdin,
        output,
    } = spawn(cmd, backend)?;
    drop(stdin);
    let mut out = String::new();
    let deadline = Instant::now() + timeout;
    let mut bytes = Vec::new();
    let mut exited_at = None;
    loop {
        match output.recv_timeout(TICK) {
            Ok(b) => bytes.extend_from_slice(&b),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        // A helper that daemonizes (`ssh -f`) may leave a child holding the pipe.
        if exited_at.is_none() && child.try_wait().is_some() {
            exited_at = Some(Instant::now());
        }
        if exited_at.is_some_and(|at| at.elapsed() >= DRAIN_AFTER_EXIT) {
            break;
        }
        if Instant::now() >= deadline {
            kill_group(child.id());
            child.kill();
            child.wait();
            return Err(BackendError::Setup {
                backend,
                reason: format!("helper command timed out after {}s", timeout.as_secs()),
            });
        }
    }
    out.push_str(&String::from_utf8_lossy(&bytes));
    let code = loop {
        if let Some(code) = child.try_wait() {
            break code;
        }
        if Instant::now() >= deadline {
            kill_group(child.id());
            child.kill();
            child.wait();
            return Err(BackendError::Setup {
                backend,
                reason: format!("helper command timed out after {}s", timeout.as_secs()),
            });
        }
        std::thread::sleep(TICK);
    };
    if code == 0 {
        Ok(out)
    } else {
        Err(BackendError::Setup {
            backend,
            reason: format!(
                "helper command failed with exit code {code}: {}",
                out.trim()
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_lines_become_events_and_leave_the_output() {
        let marker = "__M__".to_owned();
        let mut s = StreamText::new(marker);
        let mut out = String::new();
        let mut ev = Vec::new();
        s.feed(b"__M__ pid 42\nhel", &mut out, &mut ev);
        assert_eq!(
            ev,
            vec![],
            "a pid line is no event: the host learns no pid from output"
        );
        s.feed(b"lo\nno newline at end__M", &mut out, &mut ev);
        assert_eq!(
            out, "hello\nno newline at end",
            "a possible marker start is held"
        );
        s.feed(b"__ cwd /tmp/x\n", &mut out, &mut ev);
        s.finish(&mut out, &mut ev);
        assert_eq!(out, "hello\nno newline at end");
        assert_eq!(ev, vec![MarkerEvent::Cwd("/tmp/x".into())]);
    }

    #[test]
    fn a_started_line_is_an_event_and_no_output() {
        let mut s = StreamText::new("__M__".into());
        let mut out = String::new();
        let mut ev = Vec::new();
        s.feed(b"__M__ started\r\nfirst line\n", &mut out, &mut ev);
        s.finish(&mut out, &mut ev);
        assert_eq!(out, "first line\n");
        assert_eq!(ev, vec![MarkerEvent::Started]);
    }

    #[test]
    fn a_marker_in_the_same_chunk_as_unterminated_output_is_found() {
        let mut s = StreamText::new("__M__".into());
        let mut out = String::new();
        let mut ev = Vec::new();
        s.feed(b"xxx__M__ cwd /y\n", &mut out, &mut ev);
        s.feed(
            b"_ text that only looks like __ a marker\n",
            &mut out,
            &mut ev,
        );
        s.finish(&mut out, &mut ev);
        assert_eq!(out, "xxx_ text that only looks like __ a marker\n");
        assert_eq!(ev, vec![MarkerEvent::Cwd("/y".into())]);
    }

    #[test]
    fn a_line_holding_the_marker_is_held_only_up_to_a_bound() {
        // A command that learned the marker prints it, then an endless line.
        let mut s = StreamText::new("__M__".into());
        let mut out = String::new();
        let mut ev = Vec::new();
        s.feed(b"__M__", &mut out, &mut ev);
        let chunk = vec![b'y'; 16 * 1024];
        for _ in 0..64 {
            s.feed(&chunk, &mut out, &mut ev);
            assert!(
                s.line.len() <= MAX_HELD_LINE + chunk.len(),
                "{}",
                s.line.len()
            );
        }
        assert!(out.len() >= 63 * chunk.len(), "{}", out.len());
        // A real marker line after it is still recognised.
        s.feed(b"\n__M__ cwd /z\n", &mut out, &mut ev);
        s.finish(&mut out, &mut ev);
        assert_eq!(ev, vec![MarkerEvent::Cwd("/z".into())]);
    }

    #[test]
    fn the_reader_is_held_back_when_output_is_not_consumed() {
        struct Endless(std::sync::Arc<std::sync::atomic::AtomicUsize>);
        impl Read for Endless {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                self.0
                    .fetch_add(buf.len(), std::sync::atomic::Ordering::SeqCst);
                buf.fill(b'y');
                Ok(buf.len())
            }
        }
        let read = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let rx = read_into_channel(Endless(read.clone()), "test", "endless").unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let bound = (CHANNEL_CHUNKS + 2) * 16 * 1024;
        let n = read.load(std::sync::atomic::Ordering::SeqCst);
        assert!(n <= bound, "read {n} bytes ahead of the consumer");
        drop(rx);
    }

    #[test]
    fn utf8_split_across_chunks_is_decoded() {
        let mut s = StreamText::new("__M__".into());
        let mut out = String::new();
        let mut ev = Vec::new();
        let bytes = "é".as_bytes();
        s.feed(&bytes[..1], &mut out, &mut ev);
        s.feed(&bytes[1..], &mut out, &mut ev);
        s.finish(&mut out, &mut ev);
        assert_eq!(out, "é");
    }
}
