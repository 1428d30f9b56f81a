//! The community-tool tests' tools: the real `hermetic` binary in a home directory of
//! its own, a policy naming tools by source, components with another declaration or
//! another schema, and the registry as an attacker who controls tags reaches it.

use hermetic_test_support::guests::test_cache;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The binary, with the suites' shared compiled-code cache and no registry settings
/// or store from the environment.
pub fn hermetic(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hermetic"));
    cmd.current_dir(home)
        .env("HERMETIC_CACHE_DIR", test_cache())
        .env("HOME", home)
        .env_remove("HERMETIC_STORE_DIR")
        .env_remove("XDG_DATA_HOME")
        .env_remove("DOCKER_CONFIG")
        .env_remove("REGISTRY_AUTH_FILE")
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("HERMETIC_REGISTRY_USERNAME")
        .env_remove("HERMETIC_REGISTRY_PASSWORD")
        .env_remove("HERMETIC_REGISTRY_AUTH")
        .env_remove("HERMETIC_REGISTRY_TOKEN_HOSTS")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    cmd
}

/// Runs `hermetic ARGS` in `home`.
pub fn run(home: &Path, args: &[&str]) -> Output {
    hermetic(home).args(args).output().unwrap()
}

/// Stdout and stderr together.
pub fn said(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Stdout of a command that must succeed.
pub fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Everything a failing command said, which must contain `says`.
pub fn refused(out: &Output, says: &str) -> String {
    let all = said(out);
    assert!(
        !out.status.success(),
        "expected a refusal saying {says:?}:\n{all}"
    );
    assert!(all.contains(says), "expected {says:?} in:\n{all}");
    all
}

/// A policy in `home` that trusts `key.pub` (when there), requires signatures or not,
/// keeps the store in `store/`, and names tools by source; `extra` is appended
/// (tenants, hooks, `[tools.NAME]` keys after the source).
pub fn write_policy(home: &Path, require: bool, sources: &[(&str, &str)], extra: &str) -> PathBuf {
    std::fs::create_dir_all(home.join("ws")).unwrap();
    let mut text = format!(
        "[mounts.workspace]\npath = \"ws\"\naccess = \"rw\"\n\n[trust]\nrequire_signature = {require}\nstore = \"store\"\n"
    );
    if home.join("key.pub").exists() {
        text.push_str("keys = [\"key.pub\"]\n");
    }
    for (name, source) in sources {
        text.push_str(&format!("\n[tools.{name}]\nsource = \"{source}\"\n"));
    }
    text.push_str(extra);
    let path = home.join("policy.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Adds `reviewed = "DIGEST"` to `[tools.NAME]` of the policy at `path` (replacing
/// one there).
pub fn set_reviewed(path: &Path, name: &str, digest: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = String::new();
    let mut in_tool = false;
    for line in text.lines() {
        if line.starts_with('[') {
            in_tool = line == format!("[tools.{name}]");
        }
        if in_tool && line.starts_with("reviewed = ") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
        if line.starts_with("source = ") && in_tool {
            out.push_str(&format!("reviewed = \"{digest}\"\n"));
        }
    }
    std::fs::write(path, out).unwrap();
}

fn leb(bytes: &[u8], at: &mut usize) -> usize {
    let (mut value, mut shift) = (0usize, 0);
    loop {
        let b = bytes[*at];
        *at += 1;
        value |= usize::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return value;
        }
        shift += 7;
    }
}

fn put_leb(out: &mut Vec<u8>, mut v: usize) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// `component` with its `hermetic:declaration` custom section (wherever it is: the
/// SDK's lands in the nested core module) replaced by `toml`: a new version of the
/// same tool that declares something else.
pub fn with_declaration(component: &[u8], toml: &str) -> Vec<u8> {
    fn rewrite(bytes: &[u8], toml: &str, replaced: &mut bool) -> Vec<u8> {
        let is_component = bytes[4..8] == [0x0d, 0x00, 0x01, 0x00];
        let mut out = bytes[..8].to_vec();
        let mut at = 8;
        while at < bytes.len() {
            let id = bytes[at];
            at += 1;
            let size = leb(bytes, &mut at);
            let payload = &bytes[at..at + size];
            at += size;
            let mut p = 0;
            let name = (id == 0).then(|| {
                let n = leb(payload, &mut p);
                &payload[p..p + n]
            });
            let new_payload = if name == Some(b"hermetic:declaration".as_slice()) {
                *replaced = true;
                let mut section = Vec::new();
                put_leb(&mut section, b"hermetic:declaration".len());
                section.extend_from_slice(b"hermetic:declaration");
                section.extend_from_slice(toml.as_bytes());
                section
            } else if is_component && (id == 1 || id == 4) {
                rewrite(payload, toml, replaced)
            } else {
                payload.to_vec()
            };
            out.push(id);
            put_leb(&mut out, new_payload.len());
            out.extend_from_slice(&new_payload);
        }
        out
    }
    let mut replaced = false;
    let out = rewrite(component, toml, &mut replaced);
    assert!(replaced, "the component has a declaration section");
    out
}

/// `component` with a custom section `name` added at its end: new bytes (a new
/// digest), the same declaration and code — a release that changes nothing the
/// operator reviewed.
pub fn with_custom_section(component: &[u8], name: &str, payload: &[u8]) -> Vec<u8> {
    let mut section = Vec::new();
    put_leb(&mut section, name.len());
    section.extend_from_slice(name.as_bytes());
    section.extend_from_slice(payload);
    let mut out = component.to_vec();
    out.push(0);
    put_leb(&mut out, section.len());
    out.extend_from_slice(&section);
    out
}

/// `component` with every occurrence of `from` replaced by `to` (the same length, so
/// every offset stays): a string the code returns — e.g. its schema's description —
/// changed, the rest of the component as it was.
pub fn with_string(component: &[u8], from: &str, to: &str) -> Vec<u8> {
    assert_eq!(from.len(), to.len(), "a same-length replacement");
    let (from, to) = (from.as_bytes(), to.as_bytes());
    let mut out = component.to_vec();
    let mut found = 0;
    let mut at = 0;
    while let Some(i) = out[at..].windows(from.len()).position(|w| w == from) {
        out[at + i..at + i + from.len()].copy_from_slice(to);
        at += i + from.len();
        found += 1;
    }
    assert!(
        found > 0,
        "the component holds {:?}",
        String::from_utf8_lossy(from)
    );
    out
}

/// The JSON a successful command printed.
pub fn json(out: &Output) -> Value {
    serde_json::from_str(&ok(out)).unwrap()
}
