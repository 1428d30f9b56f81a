//! The README's tour, run as written: every line of its `sh` block, from the repository
//! root, in order, with the exit code the line's comment promises (0 unless it says
//! `exit 1`). Servers are started and stopped once they say they serve; the line that
//! needs the internet may fail (exit 1, in words) but never with a usage or set-up error.
//! The book's community-tool block is run the same way, and every relative link of the
//! README and the book (`docs/src/`) must lead to a file and, with `#anchor`, a heading.
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

/// The `sh` block of the book's "Installing a community tool" page, run as one script
/// (its lines share variables) in an empty directory, against a real registry started here.
#[test]
fn the_book_community_tool_block_works_as_written() {
    let page = std::fs::read_to_string(repo_root().join("docs/src/community-tools.md")).unwrap();
    let block = page
        .split_once("# Installing a community tool")
        .expect("the page has its title")
        .1
        .split_once("```sh\n")
        .expect("the page has an sh block")
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

/// The README and every page of the book (`docs/src/**/*.md`).
fn documents() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut docs = vec![repo_root().join("README.md")];
    walk(&repo_root().join("docs/src"), &mut docs);
    docs.sort();
    docs
}

/// `text` without its fenced blocks and code spans: what they hold is not a link.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    // Code spans may wrap lines; a span is a backtick run to the next run of one length.
    let mut plain = String::new();
    let mut rest = out.as_str();
    while let Some(start) = rest.find('`') {
        plain.push_str(&rest[..start]);
        let ticks = rest[start..].len() - rest[start..].trim_start_matches('`').len();
        let after = &rest[start + ticks..];
        let fence = &rest[start..start + ticks];
        match after.find(fence) {
            Some(end) => rest = &after[end + ticks..],
            None => {
                rest = after;
            }
        }
    }
    plain.push_str(rest);
    plain
}

/// The targets of `[text](target)` and `![alt](target)` links in `text`'s prose.
fn link_targets(text: &str) -> Vec<String> {
    let prose = prose(text);
    let mut targets = Vec::new();
    let mut rest = prose.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let end = after.find(')').unwrap_or(after.len());
        let target = after[..end].split_whitespace().next().unwrap_or("");
        targets.push(target.to_owned());
        rest = &after[end..];
    }
    targets
}

/// A heading's anchor as GitHub and mdBook make it: lower case, spaces to `-`, every
/// character but letters, digits, `-` and `_` dropped (code-span backticks included).
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown file's headings (outside fenced blocks).
fn anchors(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            let title = line.trim_start_matches('#');
            if title.starts_with(' ') {
                out.push(slug(title));
            }
        }
    }
    out
}

#[test]
fn heading_anchors_are_made_as_github_and_mdbook_make_them() {
    assert_eq!(
        slug(" How tenants share the host under load"),
        "how-tenants-share-the-host-under-load"
    );
    assert_eq!(
        slug(" State: a key-value store, `todo` and `memory`"),
        "state-a-key-value-store-todo-and-memory"
    );
    assert_eq!(
        link_targets("[a](b.md#c) `[x](y)` ![i](img/p.png \"t\")\n```\n[no](z)\n```"),
        ["b.md#c", "img/p.png"]
    );
}

/// Every relative link of the README and the book leads to a file that exists, and its
/// `#anchor` (if any) to a heading of that file — what `mdbook build` checks only for
/// the pages it renders, and GitHub not at all.
#[test]
fn every_relative_link_of_the_readme_and_the_book_resolves() {
    let mut broken = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let dir = doc.parent().unwrap();
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                doc.clone()
            } else {
                dir.join(path)
            };
            if !file.exists() {
                broken.push(format!("{}: {target} (no such file)", doc.display()));
                continue;
            }
            if let Some(anchor) = anchor {
                let heads = anchors(&std::fs::read_to_string(&file).unwrap_or_default());
                if !heads.iter().any(|h| h == anchor) {
                    broken.push(format!("{}: {target} (no such heading)", doc.display()));
                }
            }
        }
        // The book's includes (`{{#include FILE:ANCHOR}}`) name a file and its anchor.
        for include in text.split("{{#include ").skip(1) {
            let spec = include.split("}}").next().unwrap_or("").trim();
            let (path, anchor) = match spec.split_once(':') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (spec, None),
            };
            let included = std::fs::read_to_string(dir.join(path)).unwrap_or_default();
            let marker = anchor.map(|a| format!("ANCHOR: {a}"));
            if included.is_empty() || marker.is_some_and(|m| !included.contains(&m)) {
                broken.push(format!("{}: include {spec}", doc.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// Every page under `docs/src/` is in the book's table of contents, and every entry of it
/// is a page: a page left out would not be built, so its links would go unchecked.
#[test]
fn every_page_of_the_book_is_in_its_summary() {
    let src = repo_root().join("docs/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    let listed: Vec<String> = link_targets(&summary);
    assert!(listed.len() > 10, "{listed:?}");
    for page in documents().into_iter().filter(|d| d.starts_with(&src)) {
        let rel = page
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if rel == "SUMMARY.md" {
            continue;
        }
        assert!(listed.contains(&rel), "{rel} is not in SUMMARY.md");
    }
    for entry in &listed {
        assert!(
            src.join(entry).is_file(),
            "SUMMARY.md lists {entry}, not a page"
        );
    }
}
