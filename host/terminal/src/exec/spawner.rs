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
//!
//! A start that does not finish within [`SPAWN_WAIT`] (an `exec` of a program on a
//! hung file system) fails its call, and the starts after it go to a new spawner
//! thread: one stuck start no longer holds every terminal start. The stuck thread is
//! kept (never ended, or what it started would get its parent-death signal), and
//! what its start makes when it finishes, nobody waiting, is killed (`abandon`).

use parking_lot::{Condvar, Mutex};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

type Job = Box<dyn FnOnce() + Send>;

/// Longest a call waits for its process to be started: a fork and exec take about a
/// millisecond, a start queued behind a few others a few more; one taking seconds is
/// stuck.
pub(crate) const SPAWN_WAIT: Duration = Duration::from_secs(10);

/// The spawner thread's queue (`None` until the first start), and its generation
/// (which thread it is: a stuck one is replaced once, by whoever finds it first).
static QUEUE: Mutex<Option<(mpsc::Sender<Job>, u64)>> = Mutex::new(None);
/// The queues of spawner threads replaced because a start stuck them: held so those
/// threads never end (their children's parent-death signal would fire).
static RETIRED: Mutex<Vec<mpsc::Sender<Job>>> = Mutex::new(Vec::new());

/// One start's result, handed from the spawner thread to its caller.
struct Slot<T> {
    result: Option<T>,
    /// The job is over (its result is in, or `start` panicked).
    finished: bool,
    /// The caller stopped waiting: a result arriving now is nobody's.
    abandoned: bool,
}

/// The job's hold on its slot: dropped when the job ends, however it ends (a panic
/// in `start` too), it says so and wakes the caller.
struct Done<T>(Arc<(Mutex<Slot<T>>, Condvar)>);

impl<T> Drop for Done<T> {
    fn drop(&mut self) {
        self.0.0.lock().finished = true;
        self.0.1.notify_all();
    }
}

/// Runs `start` (which starts a process) on the spawner thread and returns its result,
/// waiting at most [`SPAWN_WAIT`]. A result that comes later is handed to `abandon`
/// (which kills what it started).
///
/// # Errors
/// When the spawner thread cannot be started, `start` panicked, or it did not finish
/// in time.
pub(crate) fn run<T: Send + 'static>(
    start: impl FnOnce() -> T + Send + 'static,
    abandon: fn(T),
) -> std::io::Result<T> {
    run_within(SPAWN_WAIT, start, abandon)
}

/// [`run`], waiting at most `wait`.
fn run_within<T: Send + 'static>(
    wait: Duration,
    start: impl FnOnce() -> T + Send + 'static,
    abandon: fn(T),
) -> std::io::Result<T> {
    let slot = Arc::new((
        Mutex::new(Slot {
            result: None,
            finished: false,
            abandoned: false,
        }),
        Condvar::new(),
    ));
    let done = Done(Arc::clone(&slot));
    let job: Job = Box::new(move || {
        let result = start();
        let late = {
            let mut s = done.0.0.lock();
            if s.abandoned {
                Some(result)
            } else {
                s.result = Some(result);
                None
            }
        };
        if let Some(result) = late {
            abandon(result);
        }
        drop(done);
    });
    let generation = {
        let mut queue = QUEUE.lock();
        let unsent = match queue.as_ref() {
            Some((tx, _)) => tx.send(job).err().map(|mpsc::SendError(job)| job),
            None => Some(job),
        };
        // First use, or the thread is gone (it does not end by itself).
        if let Some(job) = unsent {
            let next = queue.as_ref().map_or(0, |(_, g)| g + 1);
            let tx = start_thread()?;
            tx.send(job)
                .map_err(|_| std::io::Error::other("the process spawner thread stopped"))?;
            *queue = Some((tx, next));
        }
        queue.as_ref().map_or(0, |(_, g)| *g)
    };
    let (lock, ready) = &*slot;
    let mut s = lock.lock();
    let timed_out = ready
        .wait_while_for(&mut s, |s| !s.finished, wait)
        .timed_out();
    if let Some(result) = s.result.take() {
        return Ok(result);
    }
    if !timed_out {
        return Err(std::io::Error::other(
            "starting the process failed in the spawner thread",
        ));
    }
    s.abandoned = true;
    drop(s);
    retire(generation);
    Err(std::io::Error::other(format!(
        "starting the process took more than {} s (the spawner was stuck); it is killed if it ever starts",
        wait.as_secs()
    )))
}

/// Replaces spawner thread `generation` (stuck) with a new one for the starts after
/// it, keeping the old one alive; nothing when it was replaced already.
fn retire(generation: u64) {
    let mut queue = QUEUE.lock();
    if queue.as_ref().is_some_and(|(_, g)| *g == generation)
        && let Ok(tx) = start_thread()
        && let Some((old, _)) = queue.replace((tx, generation + 1))
    {
        RETIRED.lock().push(old);
    }
}

fn start_thread() -> std::io::Result<mpsc::Sender<Job>> {
    let (tx, rx) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("hermetic-terminal-spawner".into())
        .spawn(move || {
            for job in rx {
                // A start that panics (a bug) fails that start (its result slot is
                // dropped), not every later one.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            }
        })?;
    Ok(tx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn keep<T>(_: T) {}

    /// The spawner is one per process: a test that replaces its thread must not run
    /// while another checks which thread starts run on.
    static SERIAL: Mutex<()> = Mutex::new(());

    #[test]
    fn starts_run_on_one_thread_that_outlives_their_callers() {
        let _serial = SERIAL.lock();
        let first = std::thread::spawn(|| run(|| std::thread::current().id(), keep).unwrap())
            .join()
            .unwrap();
        let second = run(|| std::thread::current().id(), keep).unwrap();
        assert_eq!(first, second);
        assert_ne!(second, std::thread::current().id());
    }

    #[test]
    fn a_start_that_panics_fails_alone() {
        let _serial = SERIAL.lock();
        let failed = run(|| panic!("a bug"), keep::<()>);
        assert!(failed.is_err());
        assert_eq!(run(|| 7, keep).unwrap(), 7);
    }

    static ABANDONED: AtomicBool = AtomicBool::new(false);

    /// A stuck start fails its caller, the next start runs on another thread while it
    /// is still stuck, and what it makes once unstuck goes to `abandon`.
    #[test]
    fn a_stuck_start_holds_no_other_and_its_late_result_is_abandoned() {
        let _serial = SERIAL.lock();
        let (unstick, stuck) = mpsc::channel::<()>();
        let (entered_tx, entered) = mpsc::channel::<std::thread::ThreadId>();
        let caller = std::thread::spawn(move || {
            run_within(
                Duration::from_millis(200),
                move || {
                    let _ = entered_tx.send(std::thread::current().id());
                    let _ = stuck.recv();
                    "late"
                },
                |r| {
                    assert_eq!(r, "late");
                    ABANDONED.store(true, Ordering::SeqCst);
                },
            )
        });
        let stuck_thread = entered.recv().unwrap();
        // The caller gave up (its wait is over) while the start is still stuck.
        assert!(caller.join().unwrap().is_err());
        // The next start does not queue behind it.
        let next = run(|| std::thread::current().id(), keep).unwrap();
        assert_ne!(next, stuck_thread);
        assert!(!ABANDONED.load(Ordering::SeqCst));
        unstick.send(()).unwrap();
        // The stuck thread lives on: a job sent to it would still run, and the late
        // result is handed to `abandon`.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !ABANDONED.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(
            ABANDONED.load(Ordering::SeqCst),
            "the late result was abandoned"
        );
        assert_eq!(run(|| 8, keep).unwrap(), 8);
    }
}
