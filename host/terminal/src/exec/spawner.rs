//! Where the host starts its command processes: one thread that lives as long as the
//! process.
//!
//! A parent-death signal (`PR_SET_PDEATHSIG`, which bubblewrap's `--die-with-parent`
//! sets) fires when the *thread* that forked the process exits, not the process
//! (prctl(2)). Calls run on threads that come and go: tokio's blocking threads end
//! after 10 s idle, a library caller's threads whenever it likes. A background
//! `bwrap` command started on one was SIGKILLed, silently, once that thread ended.
//! Started from this thread, it dies with the host (as `--die-with-parent` means) and
//! not before.
//!
//! Why not drop `--die-with-parent` for background commands instead: the host ends
//! them when their session ends or it shuts down, but a host that crashes or is
//! SIGKILLed would leave their sandboxes running with nobody to end them.
//!
//! Foreground commands start here too (their thread waits for them, so only
//! background ones need it, but one path is simpler to keep right; a helper its
//! caller waits for, such as the reader `backend::read_through` runs, need not).
//! Starts are serialised, each holding the thread for one fork-and-exec (about a
//! millisecond), against a command's tens.

use parking_lot::Mutex;
use std::sync::mpsc;

type Job = Box<dyn FnOnce() + Send>;

/// The spawner thread's queue (`None` until the first start).
static QUEUE: Mutex<Option<mpsc::Sender<Job>>> = Mutex::new(None);

/// Runs `start` (which starts a process) on the spawner thread and returns its result.
///
/// # Errors
/// When the spawner thread cannot be started, or `start` panicked.
pub(crate) fn run<T: Send + 'static>(
    start: impl FnOnce() -> T + Send + 'static,
) -> std::io::Result<T> {
    let (done_tx, done) = mpsc::sync_channel(1);
    let job: Job = Box::new(move || {
        let _ = done_tx.send(start());
    });
    {
        let mut queue = QUEUE.lock();
        let unsent = match queue.as_ref() {
            Some(tx) => tx.send(job).err().map(|mpsc::SendError(job)| job),
            None => Some(job),
        };
        // First use, or the thread is gone (it does not end by itself).
        if let Some(job) = unsent {
            let tx = start_thread()?;
            tx.send(job)
                .map_err(|_| std::io::Error::other("the process spawner thread stopped"))?;
            *queue = Some(tx);
        }
    }
    done.recv()
        .map_err(|_| std::io::Error::other("starting the process failed in the spawner thread"))
}

fn start_thread() -> std::io::Result<mpsc::Sender<Job>> {
    let (tx, rx) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("hermetic-terminal-spawner".into())
        .spawn(move || {
            for job in rx {
                // A start that panics (a bug) fails that start (its result channel
                // is dropped), not every later one.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            }
        })?;
    Ok(tx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_run_on_one_thread_that_outlives_their_callers() {
        let first = std::thread::spawn(|| run(|| std::thread::current().id()).unwrap())
            .join()
            .unwrap();
        let second = run(|| std::thread::current().id()).unwrap();
        assert_eq!(first, second);
        assert_ne!(second, std::thread::current().id());
    }

    #[test]
    fn a_start_that_panics_fails_alone() {
        let failed = run(|| panic!("a bug"));
        assert!(failed.is_err());
        assert_eq!(run(|| 7).unwrap(), 7);
    }
}
