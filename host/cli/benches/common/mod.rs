//! What only the MCP benches share: the server under test (or another build of it),
//! its CPU time, the floor a bench becomes, the machine line. The harnesses tests use
//! too are in hermetic-test-support (host/test-support).
#![allow(dead_code, reason = "each bench uses a part of it")]

use hermetic_test_support::guests::{guest, test_cache};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Calls to make (`HERMETIC_BENCH_CALLS`, else `default`).
pub fn calls(default: usize) -> usize {
    std::env::var("HERMETIC_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A tools directory holding only the `echo` test tool (this build's, or the file
/// `HERMETIC_BENCH_ECHO` names).
pub fn echo_tools() -> tempfile::TempDir {
    let tools = tempfile::TempDir::new().unwrap();
    // Another build (HERMETIC_BENCH_BIN) may need its own: HERMETIC_BENCH_ECHO.
    let echo = std::env::var_os("HERMETIC_BENCH_ECHO")
        .map_or_else(|| guest("echo"), std::path::PathBuf::from);
    std::fs::copy(echo, tools.path().join("echo.wasm")).unwrap();
    tools
}

/// `hermetic serve TRANSPORT… --no-bundled --tools-dir TOOLS` with the suites' compiled-code
/// cache; `HERMETIC_BENCH_BIN` names another build to run (e.g. to compare two).
pub fn hermetic_serve(transport: &[&str], tools: &Path) -> Command {
    let mut server = hermetic();
    server
        .arg("serve")
        .args(transport)
        .args(["--no-bundled", "--tools-dir"])
        .arg(tools)
        .current_dir(tools)
        .env("HERMETIC_CACHE_DIR", test_cache());
    server
}

/// The hermetic binary under test: this package's, or `HERMETIC_BENCH_BIN`.
pub fn hermetic() -> Command {
    let bin = std::env::var_os("HERMETIC_BENCH_BIN")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_hermetic").into());
    Command::new(bin)
}

/// This bench re-executed with `env` set (how each bench becomes its floor server).
pub fn floor_command(env: &str) -> Command {
    let mut floor = Command::new(std::env::current_exe().unwrap());
    floor.env(env, "1");
    floor
}

/// `N cores, load A B C`, for the figures' heading.
pub fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load.split(' ').take(3).collect::<Vec<_>>().join(" ");
    format!("{cores} cores, load {load}")
}

/// CPU time process `pid` has used so far (user + system), to the nanosecond: the
/// process's CPU-time clock, not `/proc/PID/stat`, whose ticks are 10 ms samples that
/// a short run's few hundred ticks make noisy.
#[allow(unsafe_code, reason = "two libc calls with out-pointers to locals")]
pub fn cpu(pid: u32) -> Duration {
    let pid = libc::pid_t::try_from(pid).unwrap();
    let mut clock: libc::clockid_t = 0;
    // SAFETY: `clock` is a valid out-pointer for the call's duration.
    assert_eq!(unsafe { libc::clock_getcpuclockid(pid, &raw mut clock) }, 0);
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid out-pointer for the call's duration.
    assert_eq!(unsafe { libc::clock_gettime(clock, &raw mut now) }, 0);
    Duration::new(
        u64::try_from(now.tv_sec).unwrap(),
        u32::try_from(now.tv_nsec).unwrap(),
    )
}
