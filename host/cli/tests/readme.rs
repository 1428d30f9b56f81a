//! The README's tour, run as written: every line of its `sh` block, from the repository
//! root, in order, with the exit code the line's comment promises (0 unless it says
//! `exit 1`). Servers are started and stopped once they say they serve; the line that
//! needs the internet may fail (exit 1, in words) but never with a usage or set-up error.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests"
)]

use hermetic_test_support::guests::test_cache;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The lines of the first `sh` block after "## A 5-minute tour".
fn tour_lines(readme: &str) -> Vec<String> {
    let tour = readme
        .split_once("## A 5-minute tour")
        .expect("the README has a tour")
        .1;
    let block = tour
        .split_once("```sh\n")
        .expect("the tour has an sh block")
        .1
        .split_once("```")
        .expect("the block ends")
        .0;
    block
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

/// `line` through bash from the repository root, with `H` set to the binary under test.
fn shell(line: &str) -> Command {
    let mut cmd = Command::new("bash");
    cmd.args(["-c", &format!("set -o pipefail; {line}")])
        .current_dir(repo_root())
        .env("H", env!("CARGO_BIN_EXE_hermetic"))
        .env("HERMETIC_CACHE_DIR", test_cache())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    cmd
}

/// Starts a serving line, waits until it says where it serves, then stops it.
fn serves(line: &str) {
    let mut child = shell(line)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in stderr.lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let started = Instant::now();
    let mut seen = Vec::new();
    let serving = loop {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(l) if l.contains("serving MCP at ") => break true,
            Ok(l) => seen.push(l),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break false,
            Err(_) if started.elapsed() > Duration::from_secs(120) => break false,
            Err(_) => {}
        }
    };
    // The whole group: bash and the server it started.
    let _ = Command::new("kill")
        .args(["-s", "TERM", "--", &format!("-{}", child.id())])
        .status();
    let _ = child.wait();
    assert!(serving, "{line}: did not serve:\n{}", seen.join("\n"));
}

/// The project's rule for its front door: the title, then exactly two commands — the
/// one that serves the bundled tools and the one that runs the whole suite (`.ci/run`).
#[test]
fn the_readme_opens_with_its_title_then_exactly_two_commands() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let mut lines = readme.lines().filter(|l| !l.trim().is_empty());
    assert_eq!(
        lines.next(),
        Some("# hermetic"),
        "the README opens with its title"
    );
    assert_eq!(lines.next(), Some("```sh"), "then a shell block");
    let commands: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
    assert_eq!(commands.len(), 2, "exactly two commands: {commands:?}");
    assert!(
        commands[0].contains("-- serve"),
        "the first serves: {}",
        commands[0]
    );
    assert_eq!(commands[1], ".ci/run", "the second runs the suite");
    let ci = std::fs::read_to_string(repo_root().join(".ci/run")).unwrap();
    assert!(ci.starts_with("#!"), ".ci/run is a script");
}

#[test]
fn every_line_of_the_readme_tour_works_as_written() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let lines = tour_lines(&readme);
    assert!(lines.len() > 20, "{lines:?}");
    for line in &lines {
        // The binary under test is `H` already: building a release binary here would
        // take most of the suite's time for what CI's own build proves.
        if line.starts_with("cargo build --release") || line.starts_with("H=") {
            continue;
        }
        let line = line.replace(
            "target/guest-tools/wasm32-wasip2/release",
            hermetic::GUEST_BUILD_DIR,
        );
        let command = line.split(" # ").next().unwrap_or(&line).trim();
        if command.contains("$H serve") && !command.contains("--stdio") {
            serves(command);
            continue;
        }
        let out = shell(command).output().unwrap();
        let code = out.status.code().unwrap_or(-1);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let expected = if line.contains("exit 1") { 1 } else { 0 };
        if line.contains("needs internet") && code == 1 {
            // Offline: a failed fetch, said in words.
            assert!(stdout.contains("\"error\""), "{line}\n{stdout}\n{stderr}");
            continue;
        }
        assert_eq!(code, expected, "{line}\nstdout: {stdout}\nstderr: {stderr}");
        assert!(!stderr.contains("panicked"), "{line}\n{stderr}");
    }
}

/// The `sh` block of "## Installing a community tool", run as one script (its lines
/// share variables) in an empty directory, against a real registry started here.
#[test]
fn the_readme_community_tool_block_works_as_written() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let block = readme
        .split_once("## Installing a community tool")
        .expect("the README has the section")
        .1
        .split_once("```sh\n")
        .expect("the section has an sh block")
        .1
        .split_once("```")
        .expect("the block ends")
        .0;
    assert!(block.lines().count() > 5, "{block}");
    let registry = hermetic_test_support::oci_registry::Registry::start(false);
    let dir = tempfile::TempDir::new().unwrap();
    let out = Command::new("bash")
        .args(["-c", &format!("set -euo pipefail\n{block}")])
        .current_dir(dir.path())
        .env("H", env!("CARGO_BIN_EXE_hermetic"))
        .env("REGISTRY", &registry.addr)
        .env("TOOLS", hermetic::GUEST_BUILD_DIR)
        .env("HOME", dir.path())
        .env_remove("HERMETIC_STORE_DIR")
        .env_remove("XDG_DATA_HOME")
        .env("HERMETIC_CACHE_DIR", test_cache())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("\"echo\":\"from the store\""), "{stdout}");
    assert!(stdout.contains("verified: sha256:"), "{stdout}");
    assert!(stdout.contains("\"new_against_granted\": []"), "{stdout}");
    assert!(stderr.contains("signed by trusted key"), "{stderr}");
}
