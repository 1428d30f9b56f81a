//! Concurrency caps shared fairly: a counting semaphore whose waiters give up after a
//! bounded time and are served by fair share ([`Slots`]), and the CPU turns that
//! computing guests take in turns ([`Turns`]).
//!
//! **Fair share.** Every waiter belongs to a *share* (the dispatcher's shares are
//! tenants). A freed slot goes to the waiting share that holds the fewest slots now,
//! and within a share to its longest waiting call: max-min fairness, work-conserving
//! (a share alone may use every slot; nothing is reserved for shares that are idle).
//! So a tenant whose calls queue by the thousand for a tool's slots or the host's
//! sandboxes never stands between another tenant's call and the next slot that frees:
//! that call takes it, however many were queued before it. (A first-come queue served
//! the flood first; with the host's 1,000 sandboxes one frees every few milliseconds
//! even when each call runs for seconds, so the next one is a short wait.)
//!
//! Hand-written because it serves two kinds of waiter over one count: plain threads
//! (the sync API) block on a condvar, and async callers wait on a [`Notify`] without
//! holding any thread — so thousands of queued calls of one tenant cost memory, not
//! the blocking-pool threads every other tenant's calls need — and it hands a freed
//! slot to the waiter it chose, which neither `tokio::sync::Semaphore` (first come,
//! first served) nor std (no semaphore) can do.

use parking_lot::{Condvar, Mutex, MutexGuard};
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Which share a waiter or holder belongs to: a small index the owner of the slots
/// hands out (the dispatcher: 0 for the operator, then one per tenant of the policy).
pub type Share = usize;

/// A fixed number of slots.
#[derive(Debug)]
pub struct Slots {
    capacity: usize,
    state: Mutex<State>,
    waits: Waits,
}

/// The acquisitions that had to queue, counted as they end (an acquisition that finds
/// a slot free costs nothing here).
#[derive(Debug, Default)]
struct Waits {
    queued: AtomicU64,
    nanos: AtomicU64,
    gave_up: AtomicU64,
}

impl Waits {
    fn record(&self, since: Instant, served: bool) {
        let nanos = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.queued.fetch_add(1, Ordering::Relaxed);
        self.nanos.fetch_add(nanos, Ordering::Relaxed);
        if !served {
            self.gave_up.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// What a set of slots holds now and how its queue has done so far.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlotStats {
    /// The number of slots.
    pub capacity: usize,
    /// Slots held now.
    pub in_use: usize,
    /// Calls waiting for one now.
    pub waiting: usize,
    /// Acquisitions that had to wait, since the start.
    pub queued: u64,
    /// Their waits, summed.
    pub queued_seconds: f64,
    /// Those of them that got no slot in time.
    pub gave_up: u64,
}

/// The count, what each share holds, and who waits.
#[derive(Debug, Default)]
struct State {
    used: usize,
    queue: FairQueue,
}

/// Waiters by share, and what each share holds: the part [`Slots`] and [`Turns`]
/// share.
#[derive(Debug, Default)]
struct FairQueue {
    /// Slots (or turns) held, by share.
    held: Vec<usize>,
    /// Waiters by share, first come first; abandoned ones are skipped as they come up.
    queues: Vec<VecDeque<Arc<Waiter>>>,
    /// Waiters neither served nor abandoned.
    waiting: usize,
    /// Arrivals so far: orders waiters of different shares.
    arrivals: u64,
}

/// A waiter's state.
const WAITING: u8 = 0;
const GRANTED: u8 = 1;
const ABANDONED: u8 = 2;

/// One waiting call.
#[derive(Debug)]
pub struct Waiter {
    share: Share,
    /// Arrival order.
    seq: u64,
    /// The [`Turn`] waiting (0 for slots).
    ticket: u64,
    /// [`WAITING`], [`GRANTED`] or [`ABANDONED`]; changed only under the state lock.
    state: AtomicU8,
    /// Wakes a waiting thread (always used with its owner's state lock).
    thread: Condvar,
    /// Wakes a waiting task; a wake before it waits is kept for it.
    task: Notify,
}

impl Waiter {
    fn state(&self) -> u8 {
        self.state.load(Ordering::Acquire)
    }
}

impl FairQueue {
    fn held_mut(&mut self, share: Share) -> &mut usize {
        if self.held.len() <= share {
            self.held.resize(share + 1, 0);
        }
        &mut self.held[share]
    }

    /// Queues a waiter of `share` (for [`Turn`] `ticket`).
    fn push(&mut self, share: Share, ticket: u64) -> Arc<Waiter> {
        if self.queues.len() <= share {
            self.queues.resize_with(share + 1, VecDeque::new);
        }
        self.arrivals += 1;
        let waiter = Arc::new(Waiter {
            share,
            seq: self.arrivals,
            ticket,
            state: AtomicU8::new(WAITING),
            thread: Condvar::new(),
            task: Notify::new(),
        });
        self.queues[share].push_back(Arc::clone(&waiter));
        self.waiting += 1;
        waiter
    }

    /// Takes the waiter to serve next, by fair share: of the shares with a live
    /// waiter, the one holding fewest, ties to the longest waiting. Scans the shares
    /// (tenants, a handful to a few hundred), and only when someone waits.
    fn pop(&mut self) -> Option<Arc<Waiter>> {
        if self.waiting == 0 {
            return None;
        }
        let mut best: Option<(usize, u64, Share)> = None;
        for (share, queue) in self.queues.iter_mut().enumerate() {
            while queue.front().is_some_and(|w| w.state() != WAITING) {
                queue.pop_front();
            }
            if let Some(head) = queue.front() {
                let rank = (self.held.get(share).copied().unwrap_or(0), head.seq, share);
                if best.is_none_or(|b| rank < b) {
                    best = Some(rank);
                }
            }
        }
        let (_, _, share) = best?;
        let waiter = self.queues[share].pop_front()?;
        self.waiting -= 1;
        Some(waiter)
    }

    /// Marks `waiter` served and wakes it.
    fn grant(&mut self, waiter: &Waiter) {
        *self.held_mut(waiter.share) += 1;
        waiter.state.store(GRANTED, Ordering::Release);
        waiter.thread.notify_one();
        waiter.task.notify_one();
    }

    /// A waiter gives up: whether it had been served meanwhile (then what it was given
    /// is the caller's to hand back).
    fn abandon(&mut self, waiter: &Waiter) -> bool {
        match waiter.state() {
            GRANTED => true,
            WAITING => {
                waiter.state.store(ABANDONED, Ordering::Release);
                self.waiting -= 1;
                false
            }
            _ => false,
        }
    }
}

/// A held slot; released on drop.
#[derive(Debug)]
pub struct Slot {
    slots: Arc<Slots>,
    share: Share,
}

impl Slots {
    /// `capacity` slots (at least one).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            state: Mutex::new(State::default()),
            waits: Waits::default(),
        }
    }

    /// The number of slots.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Use now and waits so far (for metrics; takes the lock once).
    pub fn stats(&self) -> SlotStats {
        let (in_use, waiting) = {
            let state = self.lock();
            (state.used, state.queue.waiting)
        };
        #[allow(
            clippy::cast_precision_loss,
            reason = "seconds for a metric: 2^52 ns is 52 days of waiting, exact enough beyond"
        )]
        let queued_seconds = self.waits.nanos.load(Ordering::Relaxed) as f64 / 1e9;
        SlotStats {
            capacity: self.capacity,
            in_use,
            waiting,
            queued: self.waits.queued.load(Ordering::Relaxed),
            queued_seconds,
            gave_up: self.waits.gave_up.load(Ordering::Relaxed),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }

    /// A free slot for `share`, taken under the lock: none while others wait (they
    /// are served first, fairly).
    fn take(self: &Arc<Self>, state: &mut State, share: Share) -> Option<Slot> {
        if state.used >= self.capacity || state.queue.waiting > 0 {
            return None;
        }
        state.used += 1;
        *state.queue.held_mut(share) += 1;
        Some(self.slot(share))
    }

    fn slot(self: &Arc<Self>, share: Share) -> Slot {
        Slot {
            slots: Arc::clone(self),
            share,
        }
    }

    /// Takes a slot for `share` if one is free and nobody waits.
    pub fn try_acquire(self: &Arc<Self>, share: Share) -> Option<Slot> {
        let mut state = self.lock();
        self.take(&mut state, share)
    }

    /// Takes a slot for `share`, waiting until `deadline` at most for one to free up,
    /// without blocking a thread (a deadline, not a wait: a call that queues for
    /// several slots in turn spends one budget across them). `None` if none did.
    /// Dropping the future gives up its place (or, if it had just been handed a slot,
    /// passes the slot on).
    pub async fn acquire_async_by(
        self: &Arc<Self>,
        share: Share,
        deadline: Instant,
    ) -> Option<Slot> {
        let waiter = {
            let mut state = self.lock();
            if let Some(slot) = self.take(&mut state, share) {
                return Some(slot);
            }
            if Instant::now() >= deadline {
                return None;
            }
            state.queue.push(share, 0)
        };
        let since = Instant::now();
        let deadline = tokio::time::Instant::from_std(deadline);
        let mut pending = PendingSlot {
            slots: self,
            waiter: Some(waiter),
        };
        let notified = pending.waiter.as_ref().map(Arc::clone);
        if let Some(waiter) = notified {
            let _ = tokio::time::timeout_at(deadline, waiter.task.notified()).await;
        }
        let slot = pending.finish();
        self.waits.record(since, slot.is_some());
        slot
    }

    /// Takes a slot for `share`, waiting at most `wait` for one to free up. `None` if
    /// none did.
    pub fn acquire(self: &Arc<Self>, share: Share, wait: Duration) -> Option<Slot> {
        self.acquire_by(share, Instant::now() + wait)
    }

    /// [`Slots::acquire`] waiting until `deadline` at most: a call that queues for
    /// several slots in turn spends one budget across them.
    pub fn acquire_by(self: &Arc<Self>, share: Share, deadline: Instant) -> Option<Slot> {
        let mut state = self.lock();
        if let Some(slot) = self.take(&mut state, share) {
            return Some(slot);
        }
        if Instant::now() >= deadline {
            return None;
        }
        let waiter = state.queue.push(share, 0);
        let since = Instant::now();
        let slot = loop {
            if waiter.state() == GRANTED {
                break Some(self.slot(share));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break state.queue.abandon(&waiter).then(|| self.slot(share));
            }
            waiter.thread.wait_for(&mut state, left);
        };
        drop(state);
        self.waits.record(since, slot.is_some());
        slot
    }

    /// Gives a slot of `share` back: to the next waiter by fair share, if any.
    fn release(&self, share: Share) {
        let mut state = self.lock();
        let held = state.queue.held_mut(share);
        *held = held.saturating_sub(1);
        match state.queue.pop() {
            Some(next) => state.queue.grant(&next),
            None => state.used = state.used.saturating_sub(1),
        }
    }
}

/// An async wait for a slot: gives up its place when dropped unfinished.
struct PendingSlot<'a> {
    slots: &'a Arc<Slots>,
    waiter: Option<Arc<Waiter>>,
}

impl PendingSlot<'_> {
    /// The slot, if the waiter was served (by now: a timeout may race the grant).
    fn finish(&mut self) -> Option<Slot> {
        let waiter = self.waiter.take()?;
        let mut state = self.slots.lock();
        state
            .queue
            .abandon(&waiter)
            .then(|| self.slots.slot(waiter.share))
    }
}

impl Drop for PendingSlot<'_> {
    fn drop(&mut self) {
        // Dropped while waiting: a slot handed over meanwhile goes on to the next.
        drop(self.finish());
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.release(self.share);
    }
}

/// CPU turns: how many calls may run guest code at once, shared fairly between
/// tenants, time-sliced at the engine's epoch tick.
///
/// Why: wall-clock limits bound how long a call runs, not how much of the CPU its
/// tenant takes meanwhile. Thirty-two spinning calls of one tenant were thirty-two
/// runnable threads, and another tenant's call got one thirty-third of the machine
/// (its median latency went from 1 ms to 137 ms over HTTP). A sandbox cap or a
/// per-tenant call cap cannot fix that without also capping calls that merely wait
/// (a shell command, a download), which cost no CPU. A turn is taken only by a call
/// still computing at an epoch tick (a call that ends within its first tick, nearly
/// every call, never asks for one): then it needs one of [`Turns::capacity`] turns
/// (one per core by default) to go on. While others wait, a holder gives its turn up
/// at each tick and queues again, and the next turn goes by fair share — to the
/// tenant computing least — so each tenant that computes gets an equal part of the
/// cores, and the rest wait in the kernel without using any.
///
/// A call that stopped computing (it waits in a host call: a command, a sleep, I/O)
/// stops ticking; a turn not renewed for two ticks is taken back when someone needs
/// it, and its holder queues again at its next tick.
#[derive(Debug)]
pub struct Turns {
    capacity: usize,
    /// Epoch ticks so far ([`Turns::advance`]).
    epoch: AtomicU64,
    state: Mutex<TurnState>,
    /// Hands out [`Turn`] ids.
    tickets: AtomicU64,
    /// Every turn is held or someone waits for one ([`Turns::saturated`]); kept up to
    /// date under the state lock, read without it.
    saturated: std::sync::atomic::AtomicBool,
}

#[derive(Debug, Default)]
struct TurnState {
    /// Who holds a turn: (ticket, share, epoch it last ticked at).
    running: Vec<Running>,
    queue: FairQueue,
}

#[derive(Debug)]
struct Running {
    ticket: u64,
    share: Share,
    last: u64,
}

/// What a call computing at an epoch tick does next ([`Turn::at_tick`]).
#[derive(Debug)]
pub enum AtTick {
    /// Go on computing: it holds a turn.
    Run,
    /// Wait for a turn ([`Turn::wait_blocking`], [`Turn::wait_async`]).
    Wait,
}

/// One call's place in the CPU turns: holds a turn while it computes, queues for one
/// when it must wait. Dropping it gives up both.
#[derive(Debug)]
pub struct Turn {
    turns: Arc<Turns>,
    share: Share,
    ticket: u64,
    /// Queued for a turn.
    waiter: Option<Arc<Waiter>>,
}

impl Turns {
    /// `capacity` turns (at least one).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            epoch: AtomicU64::new(0),
            state: Mutex::new(TurnState::default()),
            tickets: AtomicU64::new(1),
            saturated: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Whether every turn is held or a call waits for one: a call starting now may
    /// have to wait for the CPU. A hint (read without the lock).
    pub fn saturated(&self) -> bool {
        self.saturated.load(Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, TurnState> {
        self.state.lock()
    }

    /// Records whether `state` (just changed, its lock held) is saturated.
    fn note(&self, state: &TurnState) {
        let saturated = state.running.len() >= self.capacity || state.queue.waiting > 0;
        self.saturated.store(saturated, Ordering::Relaxed);
    }

    /// A place in the turns for a call of `share`; it takes no turn until
    /// [`Turn::at_tick`].
    pub fn turn(self: &Arc<Self>, share: Share) -> Turn {
        Turn {
            turns: Arc::clone(self),
            share,
            ticket: self.tickets.fetch_add(1, Ordering::Relaxed),
            waiter: None,
        }
    }

    /// One epoch tick passed (the engine's ticker calls this): turns not renewed for
    /// two ticks go to those waiting.
    pub fn advance(&self) {
        let epoch = self.epoch.fetch_add(1, Ordering::Relaxed) + 1;
        let mut state = self.lock();
        if state.queue.waiting > 0 {
            state.reclaim(epoch);
            state.fill(self.capacity, epoch);
        }
        self.note(&state);
    }

    /// Turns held now.
    #[cfg(test)]
    pub fn running(&self) -> usize {
        self.lock().running.len()
    }
}

impl TurnState {
    /// Takes back the turns of holders that have not ticked for two ticks: they wait
    /// in a host call, computing nothing.
    fn reclaim(&mut self, epoch: u64) {
        let queue = &mut self.queue;
        self.running.retain(|r| {
            let live = r.last.saturating_add(2) > epoch;
            if !live {
                let held = queue.held_mut(r.share);
                *held = held.saturating_sub(1);
            }
            live
        });
    }

    /// Hands free turns to waiters, by fair share.
    fn fill(&mut self, capacity: usize, epoch: u64) {
        while self.running.len() < capacity {
            let Some(next) = self.queue.pop() else {
                return;
            };
            self.running.push(Running {
                ticket: next.ticket,
                share: next.share,
                last: epoch,
            });
            self.queue.grant(&next);
        }
    }

    /// Gives up `ticket`'s turn, if it holds one.
    fn leave(&mut self, ticket: u64) -> bool {
        let Some(at) = self.running.iter().position(|r| r.ticket == ticket) else {
            return false;
        };
        let running = self.running.swap_remove(at);
        let held = self.queue.held_mut(running.share);
        *held = held.saturating_sub(1);
        true
    }
}

impl Turn {
    /// The call is computing at an epoch tick: it goes on if it holds a turn and
    /// nobody waits, or if a turn is free for it by fair share; else it must wait.
    pub fn at_tick(&mut self) -> AtTick {
        let turns = Arc::clone(&self.turns);
        let mut state = turns.lock();
        let next = self.next_at_tick(&turns, &mut state);
        turns.note(&state);
        next
    }

    fn next_at_tick(&mut self, turns: &Turns, state: &mut TurnState) -> AtTick {
        let epoch = turns.epoch.load(Ordering::Relaxed);
        if let Some(waiter) = &self.waiter {
            if waiter.state() != GRANTED {
                return AtTick::Wait;
            }
            self.waiter = None;
        }
        if let Some(running) = state.running.iter_mut().find(|r| r.ticket == self.ticket) {
            running.last = epoch;
            if state.queue.waiting == 0 {
                return AtTick::Run;
            }
            // Others wait: queue again behind them, and let the fair share decide who
            // goes on (this call again, when its tenant computes least).
            state.leave(self.ticket);
        } else {
            state.reclaim(epoch);
            if state.running.len() < turns.capacity && state.queue.waiting == 0 {
                state.running.push(Running {
                    ticket: self.ticket,
                    share: self.share,
                    last: epoch,
                });
                *state.queue.held_mut(self.share) += 1;
                return AtTick::Run;
            }
        }
        let waiter = state.queue.push(self.share, self.ticket);
        state.fill(turns.capacity, epoch);
        if waiter.state() == GRANTED {
            return AtTick::Run;
        }
        self.waiter = Some(waiter);
        AtTick::Wait
    }

    /// Waits on this thread for the turn [`Turn::at_tick`] queued for, until
    /// `deadline` or until `stop` says to give up (asked at least every `poll`).
    /// Whether the turn came.
    pub fn wait_blocking(
        &mut self,
        deadline: Instant,
        poll: Duration,
        stop: impl Fn() -> bool,
    ) -> bool {
        let Some(waiter) = self.waiter.clone() else {
            return true;
        };
        let turns = Arc::clone(&self.turns);
        let mut state = turns.lock();
        loop {
            if waiter.state() == GRANTED {
                self.waiter = None;
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || stop() {
                drop(state);
                self.give_up();
                return false;
            }
            waiter.thread.wait_for(&mut state, left.min(poll));
        }
    }

    /// Resolves when the turn [`Turn::at_tick`] queued for is this call's (at once
    /// when it queued for none). Dropping it early keeps the place in the queue: the
    /// [`Turn`] gives it up when it is dropped.
    pub fn wait_async(&self) -> impl Future<Output = ()> + Send + 'static {
        let waiter = self.waiter.clone();
        async move {
            if let Some(waiter) = waiter {
                while waiter.state() != GRANTED {
                    waiter.task.notified().await;
                }
            }
        }
    }

    /// Leaves the queue, or gives back the turn it was handed meanwhile.
    fn give_up(&mut self) {
        let Some(waiter) = self.waiter.take() else {
            return;
        };
        let turns = Arc::clone(&self.turns);
        let mut state = turns.lock();
        if state.queue.abandon(&waiter) && state.leave(self.ticket) {
            let epoch = turns.epoch.load(Ordering::Relaxed);
            state.fill(turns.capacity, epoch);
        }
        turns.note(&state);
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.give_up();
        let turns = Arc::clone(&self.turns);
        let mut state = turns.lock();
        if state.leave(self.ticket) {
            let epoch = turns.epoch.load(Ordering::Relaxed);
            state.fill(turns.capacity, epoch);
        }
        turns.note(&state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_set_refuses_after_the_wait_and_frees_on_drop() {
        let slots = Arc::new(Slots::new(2));
        let a = slots.acquire(0, Duration::ZERO).unwrap();
        let _b = slots.acquire(0, Duration::ZERO).unwrap();
        assert!(slots.acquire(0, Duration::from_millis(10)).is_none());
        drop(a);
        assert!(slots.acquire(0, Duration::ZERO).is_some());
    }

    #[tokio::test]
    async fn stats_count_only_the_acquisitions_that_waited() {
        let slots = Arc::new(Slots::new(1));
        let held = slots.acquire(0, Duration::ZERO).unwrap();
        let stats = slots.stats();
        assert_eq!((stats.capacity, stats.in_use, stats.queued), (1, 1, 0));
        // One waits and gives up, one waits and is served.
        assert!(slots.acquire(0, Duration::from_millis(20)).is_none());
        let other = Arc::clone(&slots);
        let waiter = tokio::spawn(async move {
            other
                .acquire_async_by(0, Instant::now() + Duration::from_secs(30))
                .await
                .is_some()
        });
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert_eq!(slots.stats().waiting, 1);
        drop(held);
        assert!(waiter.await.unwrap());
        let stats = slots.stats();
        assert_eq!((stats.queued, stats.gave_up, stats.waiting), (2, 1, 0));
        assert!(stats.queued_seconds >= 0.04, "{stats:?}");
    }

    #[test]
    fn a_waiter_gets_the_slot_another_thread_frees() {
        let slots = Arc::new(Slots::new(1));
        let held = slots.acquire(0, Duration::ZERO).unwrap();
        let other = slots.clone();
        let waiter =
            std::thread::spawn(move || other.acquire(0, Duration::from_secs(30)).is_some());
        std::thread::sleep(Duration::from_millis(20));
        drop(held);
        assert!(waiter.join().unwrap());
    }

    #[tokio::test]
    async fn an_async_waiter_holds_no_thread_and_gets_the_freed_slot() {
        let slots = Arc::new(Slots::new(1));
        let held = slots.acquire(0, Duration::ZERO).unwrap();
        // Many waiters on a current-thread runtime: they cannot be holding threads.
        let waiters: Vec<_> = (0..100)
            .map(|_| {
                let s = Arc::clone(&slots);
                tokio::spawn(async move {
                    s.acquire_async_by(0, Instant::now() + Duration::from_secs(30))
                        .await
                        .is_some()
                })
            })
            .collect();
        tokio::task::yield_now().await;
        drop(held);
        for w in waiters {
            assert!(w.await.unwrap());
        }
    }

    #[tokio::test]
    async fn an_async_waiter_gives_up_after_its_wait() {
        let slots = Arc::new(Slots::new(1));
        let _held = slots.acquire(0, Duration::ZERO).unwrap();
        assert!(
            slots
                .acquire_async_by(0, Instant::now() + Duration::from_millis(20))
                .await
                .is_none()
        );
    }

    #[tokio::test]
    async fn a_freed_slot_goes_to_the_waiting_share_that_holds_fewest_not_the_first_come() {
        let slots = Arc::new(Slots::new(2));
        let flood_a = slots.try_acquire(1).unwrap();
        let _flood_b = slots.try_acquire(1).unwrap();
        // Share 1 queues three more, then share 2 one: share 2 holds none, so it is
        // served first, ahead of all three.
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        for share in [1, 1, 1, 2] {
            let (s, order) = (Arc::clone(&slots), Arc::clone(&order));
            waiters.push(tokio::spawn(async move {
                let slot = s
                    .acquire_async_by(share, Instant::now() + Duration::from_secs(30))
                    .await;
                order.lock().push(share);
                slot
            }));
            tokio::task::yield_now().await;
        }
        drop(flood_a);
        let served = waiters.remove(3).await.unwrap();
        assert!(served.is_some());
        assert_eq!(*order.lock(), vec![2]);
        for w in waiters {
            w.abort();
        }
    }

    #[test]
    fn an_abandoned_async_wait_passes_a_slot_it_was_handed_on() {
        let slots = Arc::new(Slots::new(1));
        let held = slots.try_acquire(0).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let s = Arc::clone(&slots);
            let mut first = Box::pin(async move {
                s.acquire_async_by(1, Instant::now() + Duration::from_secs(30))
                    .await
            });
            // Queued, then handed the slot, then dropped before it looked.
            assert!(futures_poll_once(first.as_mut()).await.is_none());
            drop(held);
            drop(first);
            assert!(slots.try_acquire(2).is_some(), "the slot was lost");
        });
    }

    /// Polls `future` once: its output if it was ready.
    async fn futures_poll_once<F: Future + Unpin>(mut future: F) -> Option<F::Output> {
        std::future::poll_fn(|cx| {
            std::task::Poll::Ready(match std::pin::Pin::new(&mut future).poll(cx) {
                std::task::Poll::Ready(out) => Some(out),
                std::task::Poll::Pending => None,
            })
        })
        .await
    }

    #[test]
    fn a_call_that_computes_alone_keeps_its_turn_and_a_short_call_never_asks() {
        let turns = Arc::new(Turns::new(1));
        let mut a = turns.turn(1);
        let _short = turns.turn(2);
        assert!(!turns.saturated());
        for _ in 0..5 {
            assert!(matches!(a.at_tick(), AtTick::Run));
            turns.advance();
        }
        assert_eq!(turns.running(), 1);
        // Its one turn is taken: a call starting now might wait for the CPU.
        assert!(turns.saturated());
        drop(a);
        assert_eq!(turns.running(), 0);
        assert!(!turns.saturated());
    }

    #[test]
    fn while_another_tenant_waits_a_holder_yields_at_its_next_tick_to_it() {
        let turns = Arc::new(Turns::new(2));
        let (mut a1, mut a2, mut a3) = (turns.turn(1), turns.turn(1), turns.turn(1));
        assert!(matches!(a1.at_tick(), AtTick::Run));
        assert!(matches!(a2.at_tick(), AtTick::Run));
        // Tenant 1's third call waits for a turn; then tenant 2's.
        assert!(matches!(a3.at_tick(), AtTick::Wait));
        let mut b = turns.turn(2);
        assert!(matches!(b.at_tick(), AtTick::Wait));
        // a1's next tick gives its turn up; tenant 2 holds none, so it gets it,
        // though a3 waited longer.
        assert!(matches!(a1.at_tick(), AtTick::Wait));
        assert!(matches!(b.at_tick(), AtTick::Run));
        assert!(matches!(a3.at_tick(), AtTick::Wait));
        // From here each computes a tick at a time: tenant 1's three calls take its
        // one turn in rotation; b keeps the other, its tenant computing least.
        let mut ones = [a2, a3, a1];
        for round in 0..6 {
            for one in &mut ones {
                let _ = one.at_tick();
            }
            assert!(matches!(b.at_tick(), AtTick::Run), "round {round}");
            assert_eq!(turns.running(), 2);
        }
    }

    #[test]
    fn a_turn_not_renewed_for_two_ticks_goes_to_a_waiter() {
        let turns = Arc::new(Turns::new(1));
        let mut idle = turns.turn(1);
        assert!(matches!(idle.at_tick(), AtTick::Run));
        let mut other = turns.turn(2);
        assert!(matches!(other.at_tick(), AtTick::Wait));
        turns.advance();
        assert!(
            matches!(other.at_tick(), AtTick::Wait),
            "one tick is not stale"
        );
        turns.advance();
        // `idle` (in a host call) did not tick for two: its turn went to `other`.
        assert!(matches!(other.at_tick(), AtTick::Run));
        assert!(matches!(idle.at_tick(), AtTick::Wait));
        drop(other);
        assert!(matches!(idle.at_tick(), AtTick::Run));
    }

    #[test]
    fn a_blocked_waiter_gets_the_turn_a_finished_call_leaves_or_gives_up_at_its_deadline() {
        let turns = Arc::new(Turns::new(1));
        let mut holder = turns.turn(1);
        assert!(matches!(holder.at_tick(), AtTick::Run));
        let mut late = turns.turn(2);
        assert!(matches!(late.at_tick(), AtTick::Wait));
        assert!(!late.wait_blocking(
            Instant::now() + Duration::from_millis(20),
            Duration::from_millis(5),
            || false
        ));
        assert!(matches!(late.at_tick(), AtTick::Wait));
        let t = Arc::clone(&turns);
        let waiting = std::thread::spawn(move || {
            let granted = late.wait_blocking(
                Instant::now() + Duration::from_secs(30),
                Duration::from_millis(5),
                || false,
            );
            (granted, t.running())
        });
        std::thread::sleep(Duration::from_millis(20));
        drop(holder);
        assert_eq!(waiting.join().unwrap(), (true, 1));
    }

    #[tokio::test]
    async fn an_async_waiter_resolves_when_handed_a_turn() {
        let turns = Arc::new(Turns::new(1));
        let mut holder = turns.turn(1);
        assert!(matches!(holder.at_tick(), AtTick::Run));
        let mut waiting = turns.turn(2);
        assert!(matches!(waiting.at_tick(), AtTick::Wait));
        let wait = tokio::spawn(waiting.wait_async());
        tokio::task::yield_now().await;
        assert!(
            matches!(holder.at_tick(), AtTick::Wait),
            "it yields to share 2"
        );
        wait.await.unwrap();
        // The turn is `waiting`'s now: the former holder waits for it.
        assert!(matches!(holder.at_tick(), AtTick::Wait));
        assert_eq!(turns.running(), 1);
        drop(waiting);
        assert!(matches!(holder.at_tick(), AtTick::Run));
    }
}
