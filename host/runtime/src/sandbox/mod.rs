//! Enforcement of grants for one call: a fresh [`Store`] whose WASI context holds only
//! the granted mounts and env vars, with memory, deadline and host-call limits.
//!
//! This module knows nothing of how grants were decided (see [`crate::policy`]).

pub mod capability;
mod deadline_io;
mod output;

pub use crate::call::{CancelToken, Progress, ProgressSink};
pub use capability::http::egress;
pub(crate) use capability::terminal;
pub use capability::{Caller, LinkedCapabilities, Services};
pub use output::CappedOutput;

use crate::bindings::{self, Level};
use crate::declaration::Declaration;
use crate::engine::Runtime;
use crate::policy::EffectiveGrants;
use crate::secrets::{Scrubber, Secrets};
use crate::wasm_error::{Cause, WasmtimeError};
use capability::{CallInputs, Granted};
use deadline_io::{CallStop, DeadlineIo, HasDeadlineIo};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::{HasData, HasSelf, Linker, ResourceTable};
use wasmtime::{ResourceLimiter, Store, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// Log records a single call may send before further ones are dropped.
const MAX_LOG_RECORDS: u32 = 1_000;
/// Longest log or progress message kept, in bytes.
const MAX_LOG_BYTES: usize = 4_096;
/// Elements any guest table may grow to.
const MAX_TABLE_ELEMENTS: usize = 100_000;

/// Errors setting up a sandbox.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// A granted mount's host directory cannot be opened.
    #[error("mount `{mount}` ({path}) cannot be opened: {source}")]
    Mount {
        /// Logical mount name.
        mount: String,
        /// Host path.
        path: String,
        /// Why: an OS error, or the symlink walk's refusal.
        #[source]
        source: Cause,
    },
    /// Linking the host interfaces failed (a bug, not a guest problem).
    #[error("linking host interfaces: {0}")]
    Link(#[source] WasmtimeError),
    /// A call whose tool or grants need the blocking host interfaces was sent to a
    /// fiber (a bug, not a guest problem).
    #[error(
        "{0} does not run on a fiber: a call with mounts, network or the terminal needs a thread"
    )]
    NotForFiber(String),
    /// The store refused the fuel budget (fuel metering misconfigured; not a guest
    /// problem).
    #[error("setting the fuel budget: {0}")]
    Fuel(#[source] WasmtimeError),
    /// Every sandbox kept for `schema()` and `check()` runs
    /// ([`crate::EngineConfig::metadata_sandboxes`]) stayed in use for as long as the
    /// run could wait.
    #[error(
        "no sandbox free: the host already runs {sandboxes} schema() and check() calls; waited {waited_ms} ms"
    )]
    Busy {
        /// Sandboxes kept for such runs.
        sandboxes: u32,
        /// How long the run waited.
        waited_ms: u128,
    },
}

/// Per-call state held by the [`Store`].
pub struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    /// Memory limiter; records a denied growth so the error can name the limit.
    pub limiter: MemoryLimiter,
    tool: Arc<str>,
    call_id: String,
    progress: Option<ProgressSink>,
    progress_gate: ProgressGate,
    /// When the call must stop, for host calls that block (see deadline_io).
    stop: CallStop,
    log_records: u32,
    /// Captured guest stdout (capped; a write past the cap traps the guest).
    pub stdout: CappedOutput,
    /// Captured guest stderr (capped likewise).
    pub stderr: CappedOutput,
    /// Set when the epoch callback stopped the guest because its token was cancelled.
    pub cancelled: bool,
    /// What the call holds of each linked capability (each `None` unless granted: no
    /// cost on the common path).
    granted: Granted,
    /// The call's place in the CPU turns, asked at each epoch tick it computes past.
    turn: Option<crate::slots::Turn>,
    /// What the guest's log and progress lines and output are scrubbed of: the secrets
    /// the host adds to its requests (`None`, the common path: nothing to scrub).
    redact: Option<Scrubber>,
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Caps the call's linear memory — every memory of every core instance in the store,
/// together — at a byte count, and remembers the first denied growth. (wasmtime asks
/// about each memory on its own: a cap checked per memory would give a component with
/// two memories twice the limit.)
#[derive(Debug)]
pub struct MemoryLimiter {
    cap: usize,
    /// Core instances the call's sandbox may create (wasmtime refuses the next one).
    core_instances: usize,
    /// Bytes the call's memories hold together, as this limiter allowed them.
    used: usize,
    /// The total a guest tried to reach past the cap, if it did.
    pub denied: Option<usize>,
}

impl MemoryLimiter {
    fn new(cap: usize, core_instances: u32) -> Self {
        Self {
            cap,
            core_instances: usize::try_from(core_instances).unwrap_or(usize::MAX),
            used: 0,
            denied: None,
        }
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn instances(&self) -> usize {
        self.core_instances
    }

    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // `current` is this memory's size, already counted (0 for a new memory).
        let total = self.used.saturating_sub(current).saturating_add(desired);
        if total > self.cap {
            self.denied.get_or_insert(total);
            return Ok(false);
        }
        // A growth allowed here that then fails in wasmtime stays counted: the limiter
        // errs towards less memory, never more.
        self.used = total;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }
}

impl bindings::hermetic::tool::types::Host for CallState {}

impl bindings::hermetic::tool::host::Host for CallState {
    fn log(&mut self, level: Level, message: String) {
        if self.log_records >= MAX_LOG_RECORDS {
            return;
        }
        self.log_records += 1;
        let message = redact_text(message, self.redact.as_ref());
        let message = truncate(&message, MAX_LOG_BYTES);
        let tool = &*self.tool;
        match level {
            Level::Trace => tracing::trace!(target: "hermetic::guest", tool, "{message}"),
            Level::Debug => tracing::debug!(target: "hermetic::guest", tool, "{message}"),
            Level::Info => tracing::info!(target: "hermetic::guest", tool, "{message}"),
            Level::Warn => tracing::warn!(target: "hermetic::guest", tool, "{message}"),
            Level::Error => tracing::error!(target: "hermetic::guest", tool, "{message}"),
        }
    }

    fn progress(&mut self, done: u64, total: Option<u64>, message: String) {
        if let Some(sink) = &self.progress {
            let message = redact_text(message, self.redact.as_ref());
            let report = Progress {
                tool: self.tool.clone(),
                call_id: self.call_id.clone(),
                done,
                total,
                message: truncate(&message, MAX_LOG_BYTES).to_owned(),
            };
            self.progress_gate.offer(report, Coalesce::Replace, sink);
        }
    }
}

/// What this call's log, progress, output and result are scrubbed of: every form of
/// the secrets the host adds to its requests; `None` when there are none.
pub(crate) fn redact_values(grants: &EffectiveGrants, secrets: &Secrets) -> Option<Scrubber> {
    secrets.scrubber(&grants.inject)
}

/// `text` scrubbed by `scrubber` (as it came without one).
pub(crate) fn redact_text(text: String, scrubber: Option<&Scrubber>) -> String {
    match scrubber {
        Some(scrubber) => scrubber.scrub_string(text),
        None => text,
    }
}

impl CallState {
    /// `text` scrubbed of the secrets the host adds to this call's requests (for what
    /// the guest wrote elsewhere: its stdout and stderr).
    pub(crate) fn scrubbed(&self, text: String) -> String {
        redact_text(text, self.redact.as_ref())
    }
}

impl CallState {
    /// The filesystem view with the call's stop, borrowed apart (see capability/fs/guard.rs).
    fn filesystem_and_stop(
        &mut self,
    ) -> (
        wasmtime_wasi::filesystem::WasiFilesystemCtxView<'_>,
        &CallStop,
        &mut bool,
    ) {
        let fs = wasmtime_wasi::filesystem::WasiFilesystemCtxView {
            ctx: self.wasi.filesystem(),
            table: &mut self.table,
        };
        (fs, &self.stop, &mut self.cancelled)
    }

    fn deadline_io(&mut self) -> DeadlineIo<'_> {
        DeadlineIo {
            table: &mut self.table,
            stop: &self.stop,
            cancelled: &mut self.cancelled,
        }
    }

    /// When the call must stop.
    pub(crate) fn stop(&self) -> &CallStop {
        &self.stop
    }

    /// Sends the last progress report held back by the rate limit (call end).
    pub fn flush_progress(&mut self) {
        if let Some(sink) = &self.progress {
            self.progress_gate.flush(sink);
        }
    }
}

/// Progress reports one call may send: a guest looping on `progress()` would
/// otherwise flood its client (99k notifications, 420 MB, were seen).
pub const MAX_PROGRESS_REPORTS: u32 = 1_000;
/// Reports a call may send at once; past them, one more per
/// [`PROGRESS_REFILL`] (at most 100 a second), and reports in between are coalesced
/// into the next one sent. A tool's handful of steps all arrive; a loop does not flood.
pub const PROGRESS_BURST: u32 = 32;
/// How often one more report may be sent once the burst is spent.
pub const PROGRESS_REFILL: Duration = Duration::from_millis(10);

/// How a held-back report merges with the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Coalesce {
    /// The newer report replaces the held one (a guest's "step 5 of 10").
    Replace,
    /// Messages are joined, keeping the newest [`MAX_LOG_BYTES`] (streamed output).
    Append,
}

/// Caps and rate-limits one call's progress reports.
#[derive(Debug, Default)]
pub(crate) struct ProgressGate {
    sent: u32,
    /// Reports that may go out now (a token bucket of [`PROGRESS_BURST`]).
    tokens: u32,
    refilled: Option<Instant>,
    held: Option<Progress>,
}

impl ProgressGate {
    pub(crate) fn offer(&mut self, report: Progress, how: Coalesce, sink: &ProgressSink) {
        let report = match (self.held.take(), how) {
            (Some(mut held), Coalesce::Append) => {
                held.message.push_str(&report.message);
                if held.message.len() > MAX_LOG_BYTES {
                    let mut cut = held.message.len() - MAX_LOG_BYTES;
                    while !held.message.is_char_boundary(cut) {
                        cut += 1;
                    }
                    held.message.drain(..cut);
                }
                Progress {
                    message: held.message,
                    ..report
                }
            }
            _ => report,
        };
        let now = Instant::now();
        match self.refilled {
            None => {
                self.tokens = PROGRESS_BURST;
                self.refilled = Some(now);
            }
            Some(at) => {
                let gained =
                    now.saturating_duration_since(at).as_nanos() / PROGRESS_REFILL.as_nanos();
                if gained > 0 {
                    let gained = u32::try_from(gained).unwrap_or(u32::MAX);
                    self.tokens = self.tokens.saturating_add(gained).min(PROGRESS_BURST);
                    self.refilled = Some(now);
                }
            }
        }
        if self.tokens == 0 || self.sent >= MAX_PROGRESS_REPORTS {
            self.held = Some(report);
            return;
        }
        self.tokens -= 1;
        self.sent += 1;
        sink(report);
    }

    pub(crate) fn flush(&mut self, sink: &ProgressSink) {
        if let Some(report) = self.held.take() {
            self.sent += 1;
            sink(report);
        }
    }
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The linkers tools are instantiated with, one per [`LinkedCapabilities`] set, each
/// built once per engine: an interface is only ever linked into tools that asked for
/// it (and each call's grants still decide what it may do), so a component importing
/// wasi:http or the terminal without declaring it fails to load.
pub struct Linkers {
    engine: wasmtime::Engine,
    built:
        parking_lot::Mutex<std::collections::BTreeMap<LinkedCapabilities, Arc<Linker<CallState>>>>,
    /// The linker of tools whose calls run on a fiber ([`fiber_store`]), built on
    /// first use.
    fiber: std::sync::OnceLock<Arc<Linker<CallState>>>,
}

impl Linkers {
    /// An empty set of linkers for `runtime`'s engine; the plain one is built now, so
    /// a linking bug shows at start-up rather than at the first load.
    ///
    /// # Errors
    /// [`SandboxError::Link`] on a wasmtime linking failure.
    pub fn new(runtime: &Runtime) -> Result<Self, SandboxError> {
        let linkers = Self {
            engine: runtime.engine().clone(),
            built: parking_lot::Mutex::new(std::collections::BTreeMap::new()),
            fiber: std::sync::OnceLock::new(),
        };
        linkers.get(LinkedCapabilities::default())?;
        Ok(linkers)
    }

    /// The linker for `set`, built on first use.
    ///
    /// # Errors
    /// [`SandboxError::Link`] on a wasmtime linking failure.
    pub fn get(&self, set: LinkedCapabilities) -> Result<Arc<Linker<CallState>>, SandboxError> {
        let mut built = self.built.lock();
        if let Some(linker) = built.get(&set) {
            return Ok(Arc::clone(linker));
        }
        let mut linker = base_linker(&self.engine, link_wasi)?;
        set.link(&mut linker)?;
        let linker = Arc::new(linker);
        built.insert(set, Arc::clone(&linker));
        Ok(linker)
    }

    /// The linker for calls on a fiber: WASI with its async io and filesystem (so a
    /// wait suspends the fiber instead of blocking the thread) and the tool world's
    /// own imports; nothing beyond WASI (see [`runs_on_fiber`]).
    ///
    /// # Errors
    /// [`SandboxError::Link`] on a wasmtime linking failure.
    pub fn fiber(&self) -> Result<Arc<Linker<CallState>>, SandboxError> {
        if let Some(linker) = self.fiber.get() {
            return Ok(Arc::clone(linker));
        }
        let linker = base_linker(&self.engine, link_wasi_fiber)?;
        Ok(Arc::clone(self.fiber.get_or_init(|| Arc::new(linker))))
    }

    /// The linker for a tool with this declaration (see [`LinkedCapabilities::of`]).
    ///
    /// # Errors
    /// [`SandboxError::Link`] on a wasmtime linking failure.
    pub fn for_declaration(
        &self,
        declaration: &Declaration,
    ) -> Result<Arc<Linker<CallState>>, SandboxError> {
        self.get(LinkedCapabilities::of(declaration))
    }
}

/// WASI (linked by `link_wasi`: [`link_wasi`] or [`link_wasi_fiber`]) and the tool
/// world's own imports (`host`), nothing else.
fn base_linker(
    engine: &wasmtime::Engine,
    link_wasi: fn(&mut Linker<CallState>) -> wasmtime::Result<()>,
) -> Result<Linker<CallState>, SandboxError> {
    let mut linker = Linker::new(engine);
    link_wasi(&mut linker).map_err(capability::link_error)?;
    bindings::ToolComponent::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)
        .map_err(capability::link_error)?;
    Ok(linker)
}

/// `HasData` projection to the resource table, for the wasi:io interfaces.
struct HasIo;

impl HasData for HasIo {
    type Data<'a> = &'a mut ResourceTable;
}

/// Links the WASI interfaces a tool may use — io, clocks, random, filesystem, cli —
/// and wasi:sockets with every use refused ([`capability::sockets`]: interpreters
/// import it whether or not a tool uses it), so no HTTP grant can ever be turned into
/// raw sockets (wasi:http, linked only for tools that declare network destinations,
/// sends requests through [`egress`] and nothing else). What each linked interface may
/// reach is decided per call by the [`WasiCtx`] (no preopens, no env unless granted, no
/// socket ever): the WASI capability units (fs, env, clock, sockets) link their own
/// interfaces.
fn link_wasi(l: &mut Linker<CallState>) -> wasmtime::Result<()> {
    use wasmtime_wasi::p2::bindings::sync;

    sync::io::error::add_to_linker::<CallState, HasIo>(l, |t| &mut t.table)?;
    // Blocking waits end at the call's deadline and on cancel (see deadline_io).
    sync::io::poll::add_to_linker::<CallState, HasDeadlineIo>(l, CallState::deadline_io)?;
    sync::io::streams::add_to_linker::<CallState, HasDeadlineIo>(l, CallState::deadline_io)?;
    capability::link_wasi(l)?;
    link_wasi_rest(l)
}

/// [`link_wasi`] for calls on a fiber: wasi:io's async implementation, whose waits
/// suspend the fiber, and the WASI units' fiber linking (wasi:filesystem's and
/// wasi:sockets' async twins). They need no deadline of their own: the whole call races
/// its deadline and cancel token and is dropped when it loses
/// (`LoadedTool::handle_on_fiber`).
fn link_wasi_fiber(l: &mut Linker<CallState>) -> wasmtime::Result<()> {
    use wasmtime_wasi_io::bindings::wasi::io;

    io::error::add_to_linker::<CallState, HasIo>(l, |t| &mut t.table)?;
    io::poll::add_to_linker::<CallState, HasIo>(l, |t| &mut t.table)?;
    io::streams::add_to_linker::<CallState, HasIo>(l, |t| &mut t.table)?;
    capability::link_wasi_fiber(l)?;
    link_wasi_rest(l)
}

/// The WASI interfaces that belong to no capability and never block, the same for
/// both kinds of call: random and cli.
fn link_wasi_rest(l: &mut Linker<CallState>) -> wasmtime::Result<()> {
    use wasmtime_wasi::cli::{WasiCli, WasiCliView};
    use wasmtime_wasi::p2::bindings::{cli, random};
    use wasmtime_wasi::random::WasiRandom;

    random::random::add_to_linker::<CallState, WasiRandom>(l, |t| t.wasi.random())?;
    random::insecure::add_to_linker::<CallState, WasiRandom>(l, |t| t.wasi.random())?;
    random::insecure_seed::add_to_linker::<CallState, WasiRandom>(l, |t| t.wasi.random())?;
    cli::exit::add_to_linker::<CallState, WasiCli>(l, CallState::cli)?;
    cli::stdin::add_to_linker::<CallState, WasiCli>(l, CallState::cli)?;
    cli::stdout::add_to_linker::<CallState, WasiCli>(l, CallState::cli)?;
    cli::stderr::add_to_linker::<CallState, WasiCli>(l, CallState::cli)?;
    cli::terminal_input::add_to_linker::<CallState, WasiCli>(l, CallState::cli)?;
    cli::terminal_output::add_to_linker::<CallState, WasiCli>(l, CallState::cli)?;
    cli::terminal_stdin::add_to_linker::<CallState, WasiCli>(l, CallState::cli)?;
    cli::terminal_stdout::add_to_linker::<CallState, WasiCli>(l, CallState::cli)?;
    cli::terminal_stderr::add_to_linker::<CallState, WasiCli>(l, CallState::cli)?;
    Ok(())
}

/// What a single call needs besides the grants.
#[derive(Default)]
pub struct CallSetup<'a> {
    /// Call id (for logs and progress).
    pub call_id: String,
    /// Progress receiver, if the caller wants progress.
    pub progress: Option<ProgressSink>,
    /// Deadline override (shorter than the grant's), e.g. for `check()`.
    pub timeout: Option<Duration>,
    /// Stops the call early when cancelled.
    pub cancel: Option<CancelToken>,
    /// The call's place in the engine's CPU turns (`None`: it takes none, as
    /// `schema()` and `check()` runs, which have sandboxes of their own).
    pub turn: Option<crate::slots::Turn>,
    /// Who the call is for and the host services its capabilities may reach (a tool
    /// call the dispatcher runs; `None`: none, as `schema()`, `check()` and hooks).
    pub caller: Option<Caller<'a>>,
    /// The held secret values a hook granted `secret_scan` may locate (its runs only).
    pub scanned: Option<&'a Arc<[String]>>,
}

/// Builds a fresh store for one call of `tool` with exactly `grants`: the granted
/// mounts as preopens, the granted env vars (values from `secrets`, else the host
/// environment), the clock policy, capped stdout/stderr, memory and time limits, and
/// fuel when the engine meters it. Nothing else: no socket, no other files, no env.
///
/// # Errors
/// [`SandboxError::Mount`] if a granted mount cannot be opened.
pub fn store(
    runtime: &Runtime,
    tool: &Arc<str>,
    grants: &EffectiveGrants,
    secrets: &Secrets,
    setup: CallSetup<'_>,
) -> Result<Store<CallState>, SandboxError> {
    build_store(runtime, tool, grants, secrets, setup, false)
}

/// Whether calls of a tool with this declaration run on a fiber: it asks for nothing
/// that blocks or that the fiber's linker lacks (no mounts, no network, no terminal, no
/// key-value store: see [`capability::Capability::ON_FIBER`]), so a call is guest code
/// plus host calls that return at once, or waits (a sleep) that suspend the fiber.
pub fn runs_on_fiber(declaration: &Declaration) -> bool {
    capability::runs_on_fiber(declaration)
}

/// [`store`] for a call on a fiber, instantiated through [`Linkers::fiber`]: the
/// epoch callback also yields at every tick, so a guest that computes gives its thread
/// back (the dispatcher then moves the call to a blocking thread).
///
/// # Errors
/// [`SandboxError::NotForFiber`] for grants with mounts, network, the terminal or a
/// key-value store (a host bug: such tools never run on a fiber, whose filesystem has no
/// guard and whose linker has WASI only).
pub(crate) fn fiber_store(
    runtime: &Runtime,
    tool: &Arc<str>,
    grants: &EffectiveGrants,
    secrets: &Secrets,
    setup: CallSetup<'_>,
) -> Result<Store<CallState>, SandboxError> {
    if capability::needs_thread(grants) {
        return Err(SandboxError::NotForFiber(tool.to_string()));
    }
    build_store(runtime, tool, grants, secrets, setup, true)
}

fn build_store(
    runtime: &Runtime,
    tool: &Arc<str>,
    grants: &EffectiveGrants,
    secrets: &Secrets,
    setup: CallSetup<'_>,
    fiber: bool,
) -> Result<Store<CallState>, SandboxError> {
    let timeout = setup
        .timeout
        .unwrap_or(Duration::from_millis(grants.limits.timeout_ms));
    let deadline = Instant::now() + timeout;
    let call = CallInputs {
        tool,
        grants,
        secrets,
        deadline,
        cancel: setup.cancel.as_ref(),
        caller: setup.caller,
        scanned: setup.scanned,
    };
    let mut wasi = WasiCtxBuilder::new();
    // Blocking calls already run on a thread of their own; hopping to another thread
    // for every file operation would only add latency. (A fiber's thread is an async
    // worker, which must never block; it has no files anyway.) Must precede
    // `preopened_dir`.
    wasi.allow_blocking_current_thread(!fiber);
    capability::configure(&mut wasi, &call)?;
    let granted = Granted::for_call(&call);
    let output = grants.limits.output_bytes;
    let stdout = CappedOutput::new(output);
    let stderr = CappedOutput::new(output);
    wasi.stdout(stdout.clone()).stderr(stderr.clone());
    let state = CallState {
        wasi: wasi.build(),
        table: ResourceTable::new(),
        limiter: MemoryLimiter::new(
            usize::try_from(grants.limits.memory_bytes).unwrap_or(usize::MAX),
            grants.limits.core_instances,
        ),
        tool: tool.clone(),
        call_id: setup.call_id,
        progress: setup.progress,
        progress_gate: ProgressGate::default(),
        stop: CallStop {
            deadline,
            cancel: setup.cancel.clone(),
        },
        log_records: 0,
        stdout,
        stderr,
        cancelled: false,
        granted,
        redact: redact_values(grants, secrets),
        turn: setup.turn,
    };
    let mut store = Store::new(runtime.engine(), state);
    if runtime.meters_fuel() {
        store
            .set_fuel(grants.limits.fuel.unwrap_or(u64::MAX))
            .map_err(|e| SandboxError::Fuel(e.into()))?;
    }
    store.limiter(|s| &mut s.limiter);
    let cancel = setup.cancel;
    let tick = runtime.config().epoch_tick;
    if cancel.is_none() && !fiber && store.data().turn.is_none() {
        // Neither cancellable nor on a fiber nor taking CPU turns: one deadline, no
        // callback — the cheapest path.
        store.set_epoch_deadline(runtime.ticks_for(timeout));
        store.epoch_deadline_trap();
        return Ok(store);
    }
    // Wake every tick to look at the token. The wall-clock deadline is checked on the
    // same wake-up, so the time limit (and its `Interrupt` trap, reported as "time
    // limit exceeded") is the same as on the path above. A call on a fiber also yields
    // then, so the caller can move a long call off its async worker. A call still
    // computing asks for a CPU turn (`slots::Turns`), and waits for one when other
    // calls have them: a fiber yields until it comes, a thread blocks here.
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |mut ctx| {
        let is_cancelled = || cancel.as_ref().is_some_and(CancelToken::is_cancelled);
        if is_cancelled() {
            ctx.data_mut().cancelled = true;
            return Err(wasmtime::Trap::Interrupt.into());
        }
        if Instant::now() >= deadline {
            return Err(wasmtime::Trap::Interrupt.into());
        }
        let state = ctx.data_mut();
        if let Some(turn) = &mut state.turn
            && let crate::slots::AtTick::Wait = turn.at_tick()
        {
            if fiber {
                // The caller races the deadline and the token while this waits.
                return Ok(UpdateDeadline::YieldCustom(1, Box::pin(turn.wait_async())));
            }
            if !turn.wait_blocking(deadline, tick, is_cancelled) {
                state.cancelled = is_cancelled();
                return Err(wasmtime::Trap::Interrupt.into());
            }
        }
        Ok(if fiber {
            UpdateDeadline::Yield(1)
        } else {
            UpdateDeadline::Continue(1)
        })
    });
    Ok(store)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    #[test]
    fn the_memory_limit_counts_every_memory_of_the_call_together() {
        let mut limiter = MemoryLimiter::new(4 * MIB, 8);
        // Two memories created at 1 MiB each, then each grown to 2 MiB: 4 MiB in all.
        assert!(limiter.memory_growing(0, MIB, None).unwrap());
        assert!(limiter.memory_growing(0, MIB, None).unwrap());
        assert!(limiter.memory_growing(MIB, 2 * MIB, None).unwrap());
        assert!(limiter.memory_growing(MIB, 2 * MIB, None).unwrap());
        assert_eq!(limiter.denied, None);
        // One more byte in either is over the limit, though each alone is half of it.
        assert!(!limiter.memory_growing(2 * MIB, 2 * MIB + 1, None).unwrap());
        assert_eq!(limiter.denied, Some(4 * MIB + 1));
        // The first denial is the one reported.
        assert!(!limiter.memory_growing(2 * MIB, 3 * MIB, None).unwrap());
        assert_eq!(limiter.denied, Some(4 * MIB + 1));
    }
}
