//! The wasmtime [`Engine`]: pooling allocator tuned for one fresh instance per call,
//! epoch interruption driven by a ticker thread, and an on-disk cache of compiled code
//! (`code_cache`: each entry authenticated before the host maps and runs it).

mod code_cache;

use crate::wasm_error::WasmtimeError;
use code_cache::CodeCache;
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use wasmtime::component::Component;
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// Engine settings: `EngineConfig::default()`, then set the public fields (new ones may
/// be added).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EngineConfig {
    /// Use the pooling allocator (default `true`). Off, every call mmaps fresh memory:
    /// slower, but useful to compare.
    pub pooling: bool,
    /// Largest linear memory any instance may have, in bytes (default 512 MiB). Must be
    /// at least the operator's `max_memory_mb`.
    pub max_memory_bytes: usize,
    /// Most core wasm instances one sandbox may hold (default 64, the operator's
    /// default `max_core_instances`): the pool's per-component ceiling, which each
    /// call's own limit (`EffectiveLimits::core_instances`) stays under. A count, not
    /// reserved memory.
    pub max_core_instances: u32,
    /// Tool calls whose sandboxes may exist at once, across all tenants (default
    /// 1000). A call past it waits for one to end, as long as its tool's queue timeout,
    /// then fails with a concurrency limit. `schema()` and `check()` runs have
    /// [`EngineConfig::metadata_sandboxes`] more of their own, so a host full of calls
    /// still loads and checks tools.
    pub max_instances: u32,
    /// Sandboxes kept for `schema()` (loading) and `check()` runs beside the calls'
    /// (default [`METADATA_SANDBOXES`]; at least 1). A run that finds none free within
    /// its deadline fails to load, or leaves the tool's last `check()` answer standing.
    pub metadata_sandboxes: u32,
    /// Epoch tick: the granularity of deadlines (default 5 ms).
    pub epoch_tick: Duration,
    /// Where compiled code is cached (`None` = no cache). The directory must be the
    /// host user's own (not writable by group or others) and, in a
    /// [`crate::Registry`], outside every mount and terminal workspace; otherwise it
    /// is not used. Each entry is authenticated (HMAC-SHA256 under a key the host keeps
    /// in the directory, `hmac.key`, mode 0600) before its code is mapped: an entry
    /// whose tag does not verify is compiled again and rewritten.
    pub cache_dir: Option<PathBuf>,
    /// Meter fuel (needed for per-call fuel limits; costs some speed on every call, so
    /// it is on only when a policy sets a fuel limit).
    pub fuel: bool,
    /// Calls that may run on a wasmtime fiber at once (default 128): the calls of plain
    /// tools, which start on the caller's async task with no thread hand-off (see
    /// `dispatch`). Each holds one pooled fiber stack; past this many, calls run on a
    /// blocking thread as every other call does. 0 turns the fiber path off.
    pub async_calls: u32,
    /// Calls that may run guest code at once past their first epoch tick, shared
    /// fairly between tenants and time-sliced at the tick (default: the host's cores,
    /// [`std::thread::available_parallelism`]; at least 1). Calls that end within a
    /// tick (nearly all) or that wait in a host call (a command, a download) do not
    /// count: this bounds how much of the CPU one tenant's computing calls take from
    /// another's, not how many calls run. See `slots::Turns`.
    pub compute_turns: u32,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            pooling: true,
            max_memory_bytes: 512 << 20,
            max_core_instances: CORE_INSTANCES_PER_COMPONENT,
            max_instances: 1000,
            metadata_sandboxes: METADATA_SANDBOXES,
            epoch_tick: Duration::from_millis(5),
            cache_dir: default_cache_dir(),
            fuel: false,
            async_calls: 128,
            compute_turns: default_compute_turns(),
        }
    }
}

/// Default of [`EngineConfig::compute_turns`]: one turn per core the process may use
/// (1 when that cannot be read). More turns than cores would only let the kernel
/// time-slice what the turns already do, without their fairness between tenants.
pub fn default_compute_turns() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX))
}

/// `$HERMETIC_CACHE_DIR`, else `$XDG_CACHE_HOME/hermetic`, else `~/.cache/hermetic`.
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("HERMETIC_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(dir).join("hermetic"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("hermetic"))
}

/// Errors building the engine or compiling a component.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// wasmtime rejected the configuration.
    #[error("engine configuration: {0}")]
    Config(#[source] WasmtimeError),
    /// The thread that advances the epochs (the call deadlines' clock) did not start.
    #[error("starting the epoch ticker: {0}")]
    Ticker(#[source] std::io::Error),
    /// The bytes are not a valid component, or compilation failed.
    #[error("compiling component: {0}")]
    Compile(#[source] WasmtimeError),
}

/// Whether the pagemap-based reset of pooled memory is safe on this host.
///
/// wasmtime 48's pagemap scan misses dirty pages that were swapped out (fixed upstream
/// after 48), so a reused slot could show one instance's data to the next. We only
/// enable it when `/proc/swaps` lists no swap device.
pub fn pagemap_scan_is_safe() -> bool {
    match std::fs::read_to_string("/proc/swaps") {
        Ok(text) => text.lines().skip(1).all(|l| l.trim().is_empty()),
        Err(_) => false,
    }
}

/// Sandboxes kept by default ([`EngineConfig::metadata_sandboxes`]) for `schema()`
/// (loading) and `check()` runs beside [`EngineConfig::max_instances`] calls: a host
/// whose calls use every sandbox must not hide tools because their checks could not
/// run.
pub const METADATA_SANDBOXES: u32 = 64;

/// Default of [`EngineConfig::max_core_instances`] (the operator's default
/// `max_core_instances`). The pool counts [`EngineConfig::max_core_instances`] core
/// instances and reserves [`MEMORIES_PER_COMPONENT`] memories and
/// [`TABLES_PER_COMPONENT`] tables for each sandbox, so
/// [`EngineConfig::max_instances`] sandboxes always fit. A Rust `wasm32-wasip2` tool
/// has 3 core instances (its module and the two that wire its imports), 1 memory and 2
/// tables; a componentize-py one 14 instances, a componentize-js one 7; every one of
/// them fits 2 memories and 4 tables. Core instances are only counted (raising them
/// reserves nothing), so each tool's sandbox gets its own limit under this ceiling
/// (its declaration's `core_instances`, default 8); memories and tables are reserved
/// address space, the same for every sandbox. A component over any of them is refused
/// at load, with the limit named.
const CORE_INSTANCES_PER_COMPONENT: u32 = 64;
/// See [`CORE_INSTANCES_PER_COMPONENT`].
const MEMORIES_PER_COMPONENT: u32 = 2;
/// See [`CORE_INSTANCES_PER_COMPONENT`].
const TABLES_PER_COMPONENT: u32 = 4;

/// A configured engine plus its epoch ticker and compiled-code cache.
pub struct Runtime {
    engine: Engine,
    config: EngineConfig,
    /// Fiber calls running now (at most [`EngineConfig::async_calls`]).
    fiber_calls: Arc<crate::slots::Slots>,
    /// Sandboxes of tool calls ([`EngineConfig::max_instances`]).
    call_sandboxes: Arc<crate::slots::Slots>,
    /// Sandboxes of `schema()` and `check()` runs
    /// ([`EngineConfig::metadata_sandboxes`]).
    metadata_sandboxes: Arc<crate::slots::Slots>,
    /// CPU turns of calls computing past an epoch tick
    /// ([`EngineConfig::compute_turns`]).
    turns: Arc<crate::slots::Turns>,
    /// Woken at every epoch tick: what a call on a fiber waits on to look at its
    /// deadline and cancel token, so it needs no timer of the caller's runtime.
    ticks: Arc<tokio::sync::Notify>,
    engine_digest: String,
    /// The compiled-code cache, when there is a usable one.
    cache: Option<CodeCache>,
    ticker_stop: Arc<AtomicBool>,
    compiled: AtomicU64,
    cache_hits: AtomicU64,
    precompiled: AtomicU64,
}

/// How many components were compiled, loaded from the cache, or loaded from the code
/// the build compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompileStats {
    /// Compiled by Cranelift.
    pub compiled: u64,
    /// Loaded from the on-disk cache.
    pub cache_hits: u64,
    /// Bundled tools loaded from the code the build compiled.
    pub precompiled: u64,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("config", &self.config)
            .finish()
    }
}

impl Runtime {
    /// Builds the engine and starts the epoch ticker thread.
    ///
    /// # Errors
    /// [`EngineError::Config`] if wasmtime rejects the settings (e.g. the host cannot
    /// reserve the pool's address space).
    pub fn new(mut config: EngineConfig) -> Result<Self, EngineError> {
        // None at all would refuse every load: one is the least that works.
        config.metadata_sandboxes = config.metadata_sandboxes.max(1);
        let cache = match &config.cache_dir {
            None => None,
            Some(dir) => match CodeCache::open(dir) {
                Ok(cache) => Some(cache),
                Err(reason) => {
                    tracing::warn!(
                        dir = %dir.display(),
                        "not using the compiled-code cache: {reason}"
                    );
                    None
                }
            },
        };
        if cache.is_none() {
            config.cache_dir = None;
        }
        let mut wasm = Config::new();
        crate::compile_settings::apply(&mut wasm, config.fuel);
        if config.pooling {
            let mut pool = PoolingAllocationConfig::new();
            // Sized for every sandbox the slots allow, each at the per-component cap:
            // with fewer (the pool once had 2 core instances a sandbox, where a Rust
            // tool needs 3), calls past two thirds of the cap failed as crashes.
            let sandboxes = config
                .max_instances
                .saturating_add(config.metadata_sandboxes);
            pool.total_component_instances(sandboxes)
                .max_core_instances_per_component(config.max_core_instances)
                .max_memories_per_component(MEMORIES_PER_COMPONENT)
                .max_tables_per_component(TABLES_PER_COMPONENT)
                .total_core_instances(sandboxes.saturating_mul(config.max_core_instances))
                .total_memories(sandboxes.saturating_mul(MEMORIES_PER_COMPONENT))
                .total_tables(sandboxes.saturating_mul(TABLES_PER_COMPONENT))
                // Pooled stacks are fiber stacks, for wasmtime's async calls: only the
                // fiber path uses them (other calls run on the calling thread's stack),
                // and setting up 1000 of them, a guard page each, was most of an empty
                // start (~8 ms), so there are only as many as it may use.
                .total_stacks(config.async_calls)
                .max_memory_size(config.max_memory_bytes)
                // Resetting a slot by zeroing resident pages is cheaper than madvise +
                // page faults on the next call (measured: ~23 µs → ~8 µs per call).
                .linear_memory_keep_resident(8 << 20)
                .table_keep_resident(1 << 20);
            if pagemap_scan_is_safe() {
                pool.pagemap_scan(Enabled::Auto);
            } else {
                pool.decommit_batch_size(64);
            }
            wasm.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        }
        let engine = Engine::new(&wasm).map_err(|e| EngineError::Config(e.into()))?;

        let engine_digest = format!(
            "{}-{}",
            env!("CARGO_PKG_VERSION"),
            compatibility_digest(&engine)
        );

        let ticker_stop = Arc::new(AtomicBool::new(false));
        let stop = ticker_stop.clone();
        let ticking = engine.clone();
        let tick = config.epoch_tick;
        let ticks = Arc::new(tokio::sync::Notify::new());
        let ticked = Arc::clone(&ticks);
        let turns = Arc::new(crate::slots::Turns::new(config.compute_turns as usize));
        let turned = Arc::clone(&turns);
        std::thread::Builder::new()
            .name("hermetic-epoch".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(tick);
                    ticking.increment_epoch();
                    ticked.notify_waiters();
                    turned.advance();
                }
            })
            .map_err(EngineError::Ticker)?;

        let fiber_calls = Arc::new(crate::slots::Slots::new(config.async_calls as usize));
        let call_sandboxes = Arc::new(crate::slots::Slots::new(config.max_instances as usize));
        let metadata_sandboxes =
            Arc::new(crate::slots::Slots::new(config.metadata_sandboxes as usize));
        Ok(Self {
            engine,
            config,
            fiber_calls,
            call_sandboxes,
            metadata_sandboxes,
            turns,
            ticks,
            engine_digest,
            cache,
            ticker_stop,
            compiled: AtomicU64::new(0),
            cache_hits: AtomicU64::new(0),
            precompiled: AtomicU64::new(0),
        })
    }

    /// The wasmtime engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// A fiber stack for one call, if one is free ([`EngineConfig::async_calls`]);
    /// held until the returned slot drops.
    pub(crate) fn fiber_slot(&self) -> Option<crate::slots::Slot> {
        self.fiber_calls.try_acquire(0)
    }

    /// The sandboxes of tool calls: a call holds one of these slots from before its
    /// store is made until the store is dropped.
    pub(crate) fn call_sandboxes(&self) -> &Arc<crate::slots::Slots> {
        &self.call_sandboxes
    }

    /// A sandbox for a `schema()` or `check()` run, waiting at most `wait` for one.
    pub(crate) fn metadata_sandbox(&self, wait: Duration) -> Option<crate::slots::Slot> {
        self.metadata_sandboxes.acquire(0, wait)
    }

    /// The CPU turns tool calls take while they compute.
    pub(crate) fn turns(&self) -> &Arc<crate::slots::Turns> {
        &self.turns
    }

    /// Resolves at the next epoch tick (every [`EngineConfig::epoch_tick`]).
    pub(crate) fn ticks(&self) -> &tokio::sync::Notify {
        &self.ticks
    }

    /// Whether stores must be given fuel.
    pub fn meters_fuel(&self) -> bool {
        self.config.fuel
    }

    /// The settings this runtime was built with.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Compilation counters since this runtime started.
    pub fn compile_stats(&self) -> CompileStats {
        CompileStats {
            compiled: self.compiled.load(Ordering::Relaxed),
            cache_hits: self.cache_hits.load(Ordering::Relaxed),
            precompiled: self.precompiled.load(Ordering::Relaxed),
        }
    }

    /// Epoch ticks that cover `timeout` (rounded up, at least one).
    pub fn ticks_for(&self, timeout: Duration) -> u64 {
        let tick = self.config.epoch_tick.as_nanos().max(1);
        u64::try_from(timeout.as_nanos().div_ceil(tick))
            .unwrap_or(u64::MAX)
            .max(1)
    }

    /// Compiles a component, or loads its compiled code from the cache, or, for a
    /// bundled tool, from the code the build compiled.
    ///
    /// The cache key is the SHA-256 of the component bytes plus a digest of the engine's
    /// compilation settings, so a changed engine never loads stale code. An entry is
    /// used only when its tag verifies under the cache's key; a missing or bad tag, or
    /// code wasmtime refuses, means compiling again (and rewriting the entry once the
    /// component is accepted). A bundled tool whose build-compiled code this engine
    /// accepts is not cached: checking an entry reads, hashes and copies all of it,
    /// strictly more work than copying the code embedded in the binary (which needs no
    /// check).
    ///
    /// # Errors
    /// [`EngineError::Compile`] if the bytes do not compile. Cache I/O failures are
    /// logged and fall back to compiling.
    pub fn compile(&self, bytes: &[u8]) -> Result<Compiled, EngineError> {
        let bundled = bundled_code(bytes);
        let key = match bundled {
            Some((_, digest, _)) => digest.to_owned(),
            None => format!("{:x}", Sha256::digest(bytes)),
        };
        if let Some((name, _, code)) = bundled {
            // wasmtime refuses code built with other settings or for another CPU; the
            // tool is then compiled as any other.
            match load_precompiled(&self.engine, code) {
                Ok(component) => {
                    self.precompiled.fetch_add(1, Ordering::Relaxed);
                    return Ok(Compiled {
                        component,
                        digest: key,
                        cache_entry: None,
                    });
                }
                Err(e) => {
                    tracing::debug!(
                        tool = name,
                        "compiling instead of using the build's code: {e:#}"
                    )
                }
            }
        }
        let entry = format!("{key}-{}.cwasm", self.engine_digest);
        if let Some(cache) = &self.cache {
            match cache.load(&self.engine, &entry) {
                Ok(Some(component)) => {
                    self.cache_hits.fetch_add(1, Ordering::Relaxed);
                    return Ok(Compiled {
                        component,
                        digest: key,
                        cache_entry: None,
                    });
                }
                Ok(None) => {}
                // Over the pool's core-instance ceiling: compiling again (seconds of
                // Cranelift for an interpreter's component) would be refused the same.
                Err(e)
                    if e.contains("core module instances") && e.contains("pooling allocator") =>
                {
                    return Err(EngineError::Compile(wasmtime::format_err!("{e}").into()));
                }
                Err(e) => {
                    tracing::warn!(
                        entry,
                        "compiling again instead of using the cache entry: {e}"
                    )
                }
            }
        }
        let cached = self.cache.as_ref().map(|_| entry);
        let component =
            Component::new(&self.engine, bytes).map_err(|e| EngineError::Compile(e.into()))?;
        self.compiled.fetch_add(1, Ordering::Relaxed);
        Ok(Compiled {
            component,
            digest: key,
            cache_entry: cached,
        })
    }

    /// Writes freshly compiled code to the cache, with its tag. Called only once the
    /// component was accepted (it links, and its schema is valid): a refused component
    /// is never cached, so junk cannot fill the disk.
    pub fn commit(&self, compiled: &Compiled) {
        if let (Some(cache), Some(entry)) = (&self.cache, &compiled.cache_entry)
            && let Err(e) = cache.store(&compiled.component, entry)
        {
            tracing::warn!(entry, "could not write compiled-code cache: {e}");
        }
    }
}

/// A compiled component, and where its code goes in the cache once accepted.
pub struct Compiled {
    /// The component.
    pub component: Component,
    /// SHA-256 of the component's bytes, in hex.
    pub digest: String,
    /// Cache entry (file name) to write on [`Runtime::commit`] (`None`: loaded from
    /// the cache, or no cache).
    cache_entry: Option<String>,
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
    }
}

/// SHA-256 (hex) of everything wasmtime says makes compiled code
/// compatible with `engine`: part of each cache entry's name, so code compiled with
/// other settings is never looked up.
///
/// Not `DefaultHasher`: its algorithm may change between Rust releases (every entry
/// would silently miss), and 64 bits are few for a name that must not collide.
fn compatibility_digest(engine: &Engine) -> String {
    /// A [`Hasher`] that feeds SHA-256: what wasmtime's `Hash` writes, digested.
    struct Sha256Hasher(Sha256);
    impl Hasher for Sha256Hasher {
        fn write(&mut self, bytes: &[u8]) {
            self.0.update(bytes);
        }
        fn finish(&self) -> u64 {
            // Only `compatibility_digest` reads the state, through the full digest.
            let digest = self.0.clone().finalize();
            let mut first = [0u8; 8];
            first.copy_from_slice(&digest[..8]);
            u64::from_le_bytes(first)
        }
    }
    let mut hasher = Sha256Hasher(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut hasher);
    format!("{:x}", hasher.0.finalize())
}

/// The build's (name, digest, code) for `bytes` when they are a bundled tool's: the
/// same bytes, not just the same name.
fn bundled_code(bytes: &[u8]) -> Option<(&'static str, &'static str, &'static [u8])> {
    let (name, _) = crate::bundled::BUNDLED
        .iter()
        .find(|(_, wasm)| std::ptr::eq(*wasm, bytes) || *wasm == bytes)?;
    crate::bundled::PRECOMPILED
        .iter()
        .find(|(n, _, _)| n == name)
        .copied()
}

/// Loads code the build script compiled (`build.rs`, `PRECOMPILED`).
#[allow(
    unsafe_code,
    reason = "wasmtime's precompiled-code loading is unsafe by contract; see below"
)]
fn load_precompiled(engine: &Engine, code: &'static [u8]) -> wasmtime::Result<Component> {
    // SAFETY: the bytes are embedded in this binary, produced by `precompile_component`
    // of wasmtime at the version this crate pins, in our own build script; wasmtime
    // still checks their header against this engine's version and settings.
    unsafe { Component::deserialize(engine, code) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine(fuel: bool) -> Engine {
        let mut config = Config::new();
        crate::compile_settings::apply(&mut config, fuel);
        Engine::new(&config).unwrap()
    }

    /// Issue 37: the cache key held a `DefaultHasher` value (an algorithm Rust may
    /// change, 64 bits). It is a SHA-256 of the compatibility settings: the same for
    /// engines built alike, different when a setting that shapes code differs.
    #[test]
    fn the_compatibility_digest_is_a_sha256_of_the_engine_settings() {
        let digest = compatibility_digest(&engine(false));
        assert_eq!(digest.len(), 64, "{digest}");
        assert!(digest.bytes().all(|b| b.is_ascii_hexdigit()), "{digest}");
        assert_eq!(digest, compatibility_digest(&engine(false)));
        assert_ne!(digest, compatibility_digest(&engine(true)));
    }

    #[test]
    fn the_documented_defaults_hold() {
        let config = EngineConfig::default();
        assert!(config.pooling);
        assert_eq!(config.max_memory_bytes, 512 << 20);
        assert_eq!(config.max_instances, 1000);
        assert_eq!(config.metadata_sandboxes, METADATA_SANDBOXES);
        assert_eq!(config.epoch_tick, Duration::from_millis(5));
        assert!(!config.fuel);
        assert_eq!(config.async_calls, 128);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(config.compute_turns as usize, cores);
    }
}
