//! Enforcement of grants for one call: a fresh [`Store`] whose WASI context holds only
//! the granted mounts and env vars, with memory, deadline and host-call limits.
//!
//! This module knows nothing of how grants were decided (see [`crate::policy`]).

pub mod egress;
mod output;
pub mod terminal;

pub use egress::HttpState;
pub use output::CappedOutput;

use crate::bindings::{self, Level};
use crate::declaration::{Access, Declaration};
use crate::engine::Runtime;
use crate::policy::{ClockPolicy, EffectiveGrants};
use crate::policy_file::Secrets;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wasmtime::component::{HasData, HasSelf, Linker, ResourceTable};
use wasmtime::{ResourceLimiter, Store, UpdateDeadline};
use wasmtime_wasi::{
    FsPerms, HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView,
};

/// Log records a single call may send before further ones are dropped.
const MAX_LOG_RECORDS: u32 = 1_000;
/// Longest log or progress message kept, in bytes.
const MAX_LOG_BYTES: usize = 4_096;
/// Elements any guest table may grow to.
const MAX_TABLE_ELEMENTS: usize = 100_000;

/// A progress report from a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Tool that reported.
    pub tool: Arc<str>,
    /// Call id it belongs to.
    pub call_id: String,
    /// Units done.
    pub done: u64,
    /// Units in all, when known.
    pub total: Option<u64>,
    /// Short message (capped).
    pub message: String,
}

/// Receives progress reports during a call.
pub type ProgressSink = Arc<dyn Fn(Progress) + Send + Sync>;

/// Asks a running call to stop: [`CancelToken::cancel`] from any thread interrupts the
/// guest at its next epoch tick (within one [`crate::EngineConfig::epoch_tick`]), and
/// the call ends with a `cancelled` error. Clones share one flag.
///
/// Cancelling never affects other calls, and a call that already returned is unaffected.
///
/// ```
/// let token = hermetic::CancelToken::new();
/// let handle = token.clone();
/// assert!(!token.is_cancelled());
/// handle.cancel();
/// assert!(token.is_cancelled());
/// ```
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels every call holding this token (idempotent).
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether [`CancelToken::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Errors setting up a sandbox.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// A granted mount's host directory cannot be opened.
    #[error("mount `{mount}` ({path}) cannot be opened: {reason}")]
    Mount {
        /// Logical mount name.
        mount: String,
        /// Host path.
        path: String,
        /// OS error.
        reason: String,
    },
    /// Linking the host interfaces failed (a bug, not a guest problem).
    #[error("linking host interfaces: {0}")]
    Link(String),
    /// The store refused the fuel budget (fuel metering misconfigured; not a guest
    /// problem).
    #[error("setting the fuel budget: {0}")]
    Fuel(String),
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
    log_records: u32,
    /// Captured guest stdout (capped; a write past the cap traps the guest).
    pub stdout: CappedOutput,
    /// Captured guest stderr (capped likewise).
    pub stderr: CappedOutput,
    /// Set when the epoch callback stopped the guest because its token was cancelled.
    pub cancelled: bool,
    /// The terminal, when this call's grants include it (`None` for every other tool:
    /// no cost on the ordinary path).
    terminal: Option<Arc<crate::terminal::TerminalCall>>,
    /// wasi:http state, for tools granted network destinations (`None` otherwise: no
    /// cost on the common path).
    http: Option<Box<HttpState>>,
}

impl wasmtime_wasi_http::WasiHttpView for CallState {
    fn http(&mut self) -> wasmtime_wasi_http::WasiHttpCtxView<'_> {
        // Only tools linked with wasi:http get here; one whose call was granted no
        // destination gets a state that refuses every request.
        let tool = &self.tool;
        let state = self
            .http
            .get_or_insert_with(|| Box::new(HttpState::deny_all(tool.clone())));
        wasmtime_wasi_http::WasiHttpCtxView {
            ctx: &mut state.ctx,
            table: &mut self.table,
            hooks: &mut state.hooks,
        }
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Caps linear memory at a byte count and remembers the first denied growth.
#[derive(Debug)]
pub struct MemoryLimiter {
    cap: usize,
    /// The size a guest tried to grow to past the cap, if it did.
    pub denied: Option<usize>,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.cap {
            self.denied.get_or_insert(desired);
            return Ok(false);
        }
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
            sink(Progress {
                tool: self.tool.clone(),
                call_id: self.call_id.clone(),
                done,
                total,
                message: truncate(&message, MAX_LOG_BYTES).to_owned(),
            });
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

/// The linkers tools are instantiated with, built once per engine: which one a tool
/// gets depends on what it *declares*, so an interface is only ever linked into tools
/// that asked for it (and each call's grants still decide what it may do).
pub struct Linkers {
    plain: Linker<CallState>,
    http: Linker<CallState>,
    /// Plain + the host `terminal` interface (tools that declare the terminal).
    terminal: Linker<CallState>,
    /// wasi:http + `terminal` (tools that declare both).
    http_terminal: Linker<CallState>,
}

impl Linkers {
    /// Builds every linker.
    ///
    /// # Errors
    /// [`SandboxError::Link`] on a wasmtime linking failure.
    pub fn new(runtime: &Runtime) -> Result<Self, SandboxError> {
        let link = |e: wasmtime::Error| SandboxError::Link(format!("{e:#}"));
        let plain = linker(runtime)?;
        let mut http = linker(runtime)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_sync(&mut http).map_err(link)?;
        let terminal = terminal::linker(runtime)?;
        let mut http_terminal = terminal::linker(runtime)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_sync(&mut http_terminal).map_err(link)?;
        Ok(Self {
            plain,
            http,
            terminal,
            http_terminal,
        })
    }

    /// The linker for a tool with this declaration: wasi:http only when it declares
    /// network destinations. A component that imports wasi:http without declaring any
    /// fails to load.
    ///
    /// Likewise the host `terminal` interface is linked only when the tool declares the
    /// terminal: a component importing it without declaring it fails to load.
    pub fn for_declaration(&self, declaration: &Declaration) -> &Linker<CallState> {
        let network = !declaration.capabilities.network.is_empty();
        match (network, declaration.capabilities.terminal) {
            (false, false) => &self.plain,
            (true, false) => &self.http,
            (false, true) => &self.terminal,
            (true, true) => &self.http_terminal,
        }
    }
}

/// Builds the linker every tool gets: the WASI interfaces (each deny-by-default through
/// the per-call [`WasiCtx`]) and the host interface.
///
/// # Errors
/// [`SandboxError::Link`] on a wasmtime linking failure.
pub fn linker(runtime: &Runtime) -> Result<Linker<CallState>, SandboxError> {
    let mut linker = Linker::new(runtime.engine());
    link_wasi(&mut linker).map_err(|e| SandboxError::Link(format!("{e:#}")))?;
    bindings::ToolComponent::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s)
        .map_err(|e| SandboxError::Link(format!("{e:#}")))?;
    Ok(linker)
}

/// `HasData` projection to the resource table, for the wasi:io interfaces.
struct HasIo;

impl HasData for HasIo {
    type Data<'a> = &'a mut ResourceTable;
}

/// Links the WASI interfaces a tool may use — io, clocks, random, filesystem, cli —
/// and deliberately *not* wasi:sockets: a component that imports sockets fails to load
/// ("… matching implementation was not found in the linker"), so no HTTP grant can ever
/// be turned into raw sockets (wasi:http, linked only for tools that declare network
/// destinations, sends requests through [`egress`] and nothing else). What each linked interface may reach is decided
/// per call by the [`WasiCtx`] (no preopens, no env unless granted).
fn link_wasi(l: &mut Linker<CallState>) -> wasmtime::Result<()> {
    use wasmtime_wasi::cli::{WasiCli, WasiCliView};
    use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
    use wasmtime_wasi::filesystem::{WasiFilesystem, WasiFilesystemView};
    use wasmtime_wasi::p2::bindings::{cli, clocks, filesystem, random, sync};
    use wasmtime_wasi::random::WasiRandom;

    sync::io::error::add_to_linker::<CallState, HasIo>(l, |t| &mut t.table)?;
    sync::io::poll::add_to_linker::<CallState, HasIo>(l, |t| &mut t.table)?;
    sync::io::streams::add_to_linker::<CallState, HasIo>(l, |t| &mut t.table)?;
    clocks::wall_clock::add_to_linker::<CallState, WasiClocks>(l, CallState::clocks)?;
    clocks::monotonic_clock::add_to_linker::<CallState, WasiClocks>(l, CallState::clocks)?;
    random::random::add_to_linker::<CallState, WasiRandom>(l, |t| t.wasi.random())?;
    random::insecure::add_to_linker::<CallState, WasiRandom>(l, |t| t.wasi.random())?;
    random::insecure_seed::add_to_linker::<CallState, WasiRandom>(l, |t| t.wasi.random())?;
    filesystem::preopens::add_to_linker::<CallState, WasiFilesystem>(l, CallState::filesystem)?;
    sync::filesystem::types::add_to_linker::<CallState, WasiFilesystem>(l, CallState::filesystem)?;
    cli::exit::add_to_linker::<CallState, WasiCli>(l, CallState::cli)?;
    cli::environment::add_to_linker::<CallState, WasiCli>(l, CallState::cli)?;
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
#[derive(Clone, Default)]
pub struct CallSetup {
    /// Call id (for logs and progress).
    pub call_id: String,
    /// Progress receiver, if the caller wants progress.
    pub progress: Option<ProgressSink>,
    /// Deadline override (shorter than the grant's), e.g. for `check()`.
    pub timeout: Option<Duration>,
    /// Stops the call early when cancelled.
    pub cancel: Option<CancelToken>,
    /// The terminal for this call, built only when the grants include it.
    pub terminal: Option<Arc<crate::terminal::TerminalCall>>,
}

/// Builds a fresh store for one call of `tool` with exactly `grants`: the granted
/// mounts as preopens, the granted env vars (values from `secrets`, else the host
/// environment), the clock policy, capped stdout/stderr, memory and time limits, and
/// fuel when the engine meters it. Nothing else: no sockets, no other files, no env.
///
/// # Errors
/// [`SandboxError::Mount`] if a granted mount cannot be opened.
pub fn store(
    runtime: &Runtime,
    tool: &Arc<str>,
    grants: &EffectiveGrants,
    secrets: &Secrets,
    setup: CallSetup,
) -> Result<Store<CallState>, SandboxError> {
    let mut wasi = WasiCtxBuilder::new();
    // Calls already run on a worker thread of their own; hopping to another thread for
    // every file operation would only add latency. Must precede `preopened_dir`.
    wasi.allow_blocking_current_thread(true);
    for mount in &grants.mounts {
        let perms = match mount.access {
            Access::Ro => FsPerms::ReadOnly,
            Access::Rw => FsPerms::ReadWrite,
        };
        wasi.preopened_dir(&mount.host_path, format!("/{}", mount.name), perms)
            .map_err(|e| SandboxError::Mount {
                mount: mount.name.clone(),
                path: mount.host_path.display().to_string(),
                reason: format!("{e:#}"),
            })?;
    }
    for var in &grants.env {
        if let Some(value) = secrets.env_value(var) {
            wasi.env(var, value);
        }
    }
    match grants.clock {
        ClockPolicy::Real => {}
        ClockPolicy::Frozen => {
            wasi.wall_clock(FrozenClock).monotonic_clock(FrozenClock);
        }
        ClockPolicy::Coarse(ms) => {
            let step = Duration::from_millis(ms.max(1));
            wasi.wall_clock(CoarseWallClock(step))
                .monotonic_clock(CoarseMonotonicClock::new(step));
        }
    }
    let timeout = setup
        .timeout
        .unwrap_or(Duration::from_millis(grants.limits.timeout_ms));
    let deadline = Instant::now() + timeout;
    let output = grants.limits.output_bytes;
    let stdout = CappedOutput::new(output);
    let stderr = CappedOutput::new(output);
    wasi.stdout(stdout.clone()).stderr(stderr.clone());
    let state = CallState {
        wasi: wasi.build(),
        table: ResourceTable::new(),
        limiter: MemoryLimiter {
            cap: usize::try_from(grants.limits.memory_bytes).unwrap_or(usize::MAX),
            denied: None,
        },
        tool: tool.clone(),
        call_id: setup.call_id,
        progress: setup.progress,
        log_records: 0,
        stdout,
        stderr,
        cancelled: false,
        terminal: setup.terminal,
        http: (!grants.network.is_empty()).then(|| {
            Box::new(HttpState::new(
                tool.clone(),
                grants.network.clone(),
                grants.limits.http,
                deadline,
                setup.cancel.clone(),
            ))
        }),
    };
    let mut store = Store::new(runtime.engine(), state);
    if runtime.meters_fuel() {
        store
            .set_fuel(grants.limits.fuel.unwrap_or(u64::MAX))
            .map_err(|e| SandboxError::Fuel(format!("{e:#}")))?;
    }
    store.limiter(|s| &mut s.limiter);
    match setup.cancel {
        // Not cancellable: one deadline, no callback — the cheapest path.
        None => {
            store.set_epoch_deadline(runtime.ticks_for(timeout));
            store.epoch_deadline_trap();
        }
        // Cancellable: wake every tick to look at the token. The wall-clock deadline is
        // checked on the same wake-up, so the time limit (and its `Interrupt` trap,
        // reported as "time limit exceeded") is the same as on the path above.
        Some(token) => {
            store.set_epoch_deadline(1);
            store.epoch_deadline_callback(move |mut ctx| {
                if token.is_cancelled() {
                    ctx.data_mut().cancelled = true;
                    return Err(wasmtime::Trap::Interrupt.into());
                }
                if Instant::now() >= deadline {
                    return Err(wasmtime::Trap::Interrupt.into());
                }
                Ok(UpdateDeadline::Continue(1))
            });
        }
    }
    Ok(store)
}

/// A clock stopped at the Unix epoch (and a monotonic clock stopped at zero).
struct FrozenClock;

impl HostWallClock for FrozenClock {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn now(&self) -> Duration {
        Duration::ZERO
    }
}

impl HostMonotonicClock for FrozenClock {
    fn resolution(&self) -> u64 {
        1_000_000_000
    }
    fn now(&self) -> u64 {
        0
    }
}

/// The host's wall clock rounded down to a step.
struct CoarseWallClock(Duration);

impl HostWallClock for CoarseWallClock {
    fn resolution(&self) -> Duration {
        self.0
    }
    fn now(&self) -> Duration {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        round_down(now, self.0)
    }
}

/// A monotonic clock (from the call's start) rounded down to a step.
struct CoarseMonotonicClock {
    start: std::time::Instant,
    step: Duration,
}

impl CoarseMonotonicClock {
    fn new(step: Duration) -> Self {
        Self {
            start: std::time::Instant::now(),
            step,
        }
    }
}

impl HostMonotonicClock for CoarseMonotonicClock {
    fn resolution(&self) -> u64 {
        u64::try_from(self.step.as_nanos()).unwrap_or(u64::MAX)
    }
    fn now(&self) -> u64 {
        u64::try_from(round_down(self.start.elapsed(), self.step).as_nanos()).unwrap_or(u64::MAX)
    }
}

fn round_down(t: Duration, step: Duration) -> Duration {
    let step_ns = step.as_nanos().max(1);
    let ns = t.as_nanos() / step_ns * step_ns;
    Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
}
