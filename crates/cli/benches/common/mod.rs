//! What the MCP benches share: the server under test, its CPU time, the machine line.
#![allow(dead_code, reason = "each bench uses a part of it")]

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

/// A tools directory holding only the `echo` test tool.
pub fn echo_tools() -> tempfile::TempDir {
    let tools = tempfile::TempDir::new().unwrap();
    std::fs::copy(
        Path::new(hermetic::GUEST_BUILD_DIR).join("echo.wasm"),
        tools.path().join("echo.wasm"),
    )
    .unwrap();
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
        .env(
            "HERMETIC_CACHE_DIR",
            Path::new(hermetic::GUEST_BUILD_DIR).join("../../test-cache"),
        );
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

/// User + system CPU time process `pid` has used so far.
pub fn cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the parenthesised command name; utime and stime are 14 and 15.
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // USER_HZ is 100 on Linux.
    Duration::from_millis(ticks * 10)
}
