//! Test tool `kvprobe`: the key-value store of tenant scope, operated by its arguments.
const NAME: &str = "kvprobe";
include!("probe.rs");

hermetic_sdk::export_tool!(
    Probe,
    r#"
name = "kvprobe"
toolset = "test"
[capabilities]
keyvalue = "tenant"
"#
);
