//! The lines a child process writes to one pipe, collected by a thread so the child
//! never blocks on a full pipe, and waited for with a bound.
use std::io::{BufRead, BufReader, Read};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// What a pipe delivered so far.
#[derive(Default)]
struct Collected {
    lines: Vec<String>,
    closed: bool,
}

/// Lines a child writes to one pipe, collected by a thread.
#[derive(Clone)]
pub struct Lines {
    inner: Arc<(Mutex<Collected>, Condvar)>,
    hang_guard: Duration,
}

impl Lines {
    /// Collects `pipe`'s lines from now on; a wait for one gives up after `hang_guard`
    /// (a broken child fails the test instead of hanging it).
    pub fn collect(pipe: impl Read + Send + 'static, hang_guard: Duration) -> Self {
        let lines = Self {
            inner: Arc::new((Mutex::new(Collected::default()), Condvar::new())),
            hang_guard,
        };
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                let (lock, cvar) = &*sink.inner;
                lock.lock().unwrap().lines.push(line);
                cvar.notify_all();
            }
            let (lock, cvar) = &*sink.inner;
            lock.lock().unwrap().closed = true;
            cvar.notify_all();
        });
        lines
    }

    /// The first line matching `pred`, waiting for it (or `None` at end of stream).
    pub fn wait_for(&self, pred: impl Fn(&str) -> bool) -> Option<String> {
        let (lock, cvar) = &*self.inner;
        let start = Instant::now();
        let mut state = lock.lock().unwrap();
        loop {
            if let Some(line) = state.lines.iter().find(|l| pred(l)) {
                return Some(line.clone());
            }
            if state.closed {
                return None;
            }
            let left = self
                .hang_guard
                .checked_sub(start.elapsed())
                .unwrap_or_else(|| {
                    panic!(
                        "hang guard: gave up waiting; output so far:\n{}",
                        state.lines.join("\n")
                    )
                });
            state = cvar.wait_timeout(state, left).unwrap().0;
        }
    }

    /// Waits for the end of the stream.
    pub fn wait_closed(&self) {
        let _ = self.wait_for(|_| false);
    }

    /// How long a wait may take.
    pub fn hang_guard(&self) -> Duration {
        self.hang_guard
    }

    /// Every line so far, joined by newlines.
    pub fn text(&self) -> String {
        self.inner.0.lock().unwrap().lines.join("\n")
    }
}
