//! The clock capability: what time a guest sees (grant: `EffectiveGrants::clock`).
//! The real clocks, clocks stopped at zero, or clocks rounded down to a step (so a
//! guest cannot time other tenants' work finely).

use super::{CallInputs, Capability};
use crate::declaration::Declaration;
use crate::policy::{ClockPolicy, EffectiveGrants};
use crate::sandbox::{CallState, SandboxError};
use std::time::Duration;
use wasmtime::component::Linker;
use wasmtime_wasi::{HostMonotonicClock, HostWallClock, WasiCtxBuilder};

/// The clock unit (a WASI one: linked into every tool, telling the time the call's
/// grant names).
pub(crate) struct Unit;

impl Capability for Unit {
    type Ctx = ();

    /// Reading a clock never blocks; a sleep suspends the fiber.
    const ON_FIBER: bool = true;

    /// No declaration asks for a clock: every tool has one, the operator's policy
    /// decides which.
    fn declared(_declaration: &Declaration) -> bool {
        false
    }

    /// Every call has clocks (real ones unless the grant names others).
    fn granted(_grants: &EffectiveGrants) -> bool {
        true
    }

    /// Links wasi:clocks (wall and monotonic).
    fn link(l: &mut Linker<CallState>) -> wasmtime::Result<()> {
        use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
        use wasmtime_wasi::p2::bindings::clocks;
        clocks::wall_clock::add_to_linker::<CallState, WasiClocks>(l, CallState::clocks)?;
        clocks::monotonic_clock::add_to_linker::<CallState, WasiClocks>(l, CallState::clocks)
    }

    /// Gives the call the clocks its grant names.
    fn configure(wasi: &mut WasiCtxBuilder, call: &CallInputs<'_>) -> Result<(), SandboxError> {
        match call.grants.clock {
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
        Ok(())
    }
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
