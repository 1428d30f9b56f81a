//! Test tool `kv_undeclared`: imports wasi:keyvalue without declaring it (must not load).
const NAME: &str = "kv_undeclared";
include!("../../kvprobe/src/probe.rs");

hermetic_sdk::export_tool!(
    Probe,
    r#"
name = "kv_undeclared"
toolset = "test"
"#
);
