//! Test tool `kvprobe_session`: the key-value probe with a store per session.
const NAME: &str = "kvprobe_session";
include!("../../kvprobe/src/probe.rs");

hermetic_sdk::export_tool!(
    Probe,
    r#"
name = "kvprobe_session"
toolset = "test"
[capabilities]
keyvalue = "session"
"#
);
