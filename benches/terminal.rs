//! What one shell command costs on each terminal backend: `echo` through the bundled
//! `terminal` tool, end to end (the guest, the approval gate, the backend starting
//! and reaping its process), so the backends can be compared where an agent feels
//! them. The real backends, as the suites run them: `local`; `bwrap`; `docker` as
//! podman + runc with a busybox image built here (one container per session, an
//! `exec` per command); `ssh` to an sshd on loopback (one master connection, a channel
//! per command); `gvisor` (runsc, ptrace platform: a sandbox per command).
//!
//! `cargo bench -p hermetic-benches --bench terminal`; a backend whose program is not
//! installed fails the bench with what to install (`.ci/run` installs them all).
#![allow(
    missing_docs,
    reason = "criterion_group! generates an undocumented public fn"
)]
use criterion::{Criterion, criterion_group, criterion_main};
use hermetic::{CallOptions, OperatorPolicy, Registry, RegistryOptions};
use hermetic_terminal::{BwrapConfig, DockerConfig, TerminalConfig};
use hermetic_test_support::backends::{
    busybox_image, gvisor_config, podman_conf, require, start_sshd,
};
use std::path::Path;
use std::time::Duration;
use tempfile::TempDir;

/// The bundled tools over `workspace`, the terminal on `config`.
fn registry(workspace: &Path, config: TerminalConfig) -> Registry {
    let mut policy = OperatorPolicy::with_workspace(workspace.to_path_buf());
    policy.terminal.default = config;
    let mut options = hermetic_terminal::attach(RegistryOptions::new(policy)).unwrap();
    options.engine = hermetic_test_support::registry::engine_config();
    let registry = Registry::new(options).unwrap();
    assert_eq!(registry.add_bundled(), vec![]);
    registry
}

fn echo(registry: &Registry) {
    let out = registry.call(
        "terminal",
        r#"{"command": "echo hi"}"#,
        &CallOptions::default().with_session("bench"),
    );
    let out: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(out["output"], "hi", "{out}");
}

fn bench_terminal(c: &mut Criterion) {
    let ws = TempDir::new().unwrap();
    let ws_path = ws.path().canonicalize().unwrap();
    let conf_dir = TempDir::new().unwrap();
    let state = TempDir::new().unwrap();
    let sshd = start_sshd();
    require("bwrap", "bubblewrap");
    require("podman", "podman");
    let conf = podman_conf(conf_dir.path());
    let backends: Vec<(&str, TerminalConfig)> = vec![
        ("local", TerminalConfig::default()),
        (
            "bwrap",
            TerminalConfig::default()
                .using("bwrap", &BwrapConfig::default())
                .unwrap(),
        ),
        (
            "docker",
            TerminalConfig::default()
                .using(
                    "docker",
                    &DockerConfig {
                        program: "podman".into(),
                        global_args: vec!["--runtime".into(), "runc".into()],
                        cli_env: [("CONTAINERS_CONF".to_owned(), conf.display().to_string())]
                            .into(),
                        image: busybox_image(&conf).into(),
                        workspace: Some(ws_path.clone()),
                        ..DockerConfig::default()
                    },
                )
                .unwrap(),
        ),
        ("ssh", sshd.terminal_config(&ws_path)),
        ("gvisor", gvisor_config(state.path())),
    ];
    let mut group = c.benchmark_group("terminal_echo");
    // A command costs milliseconds to a quarter of a second: few samples suffice.
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    for (name, config) in backends {
        let registry = registry(&ws_path, config);
        echo(&registry); // the session's container or connection, made once
        group.bench_function(name, |b| b.iter(|| echo(&registry)));
        registry.terminal().unwrap().end_session("", "bench");
    }
    group.finish();
}

criterion_group!(benches, bench_terminal);
criterion_main!(benches);
