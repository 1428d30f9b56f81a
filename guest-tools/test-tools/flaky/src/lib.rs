//! Test tool `flaky`: `check()` reads `/workspace/check.txt` — `true`, `false`, or
//! `trap` (panics) — so tests can drive availability.
use hermetic_sdk::{Context, Tool, Value, json};

struct Flaky;

impl Tool for Flaky {
    type Args = Value;

    fn schema() -> Value {
        json!({"name": "flaky", "description": "Availability driven by a file", "parameters": {"type": "object", "properties": {}}})
    }

    fn check() -> bool {
        match std::fs::read_to_string("/workspace/check.txt")
            .as_deref()
            .map(str::trim)
        {
            Ok("true") => true,
            Ok("trap") => panic!("check asked to trap"),
            _ => false,
        }
    }

    fn handle(_args: Value, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        Ok(json!({"ok": true}))
    }
}

hermetic_sdk::export_tool!(
    Flaky,
    "name = \"flaky\"\ntoolset = \"test\"\n[capabilities]\nfs = [{ mount = \"workspace\", access = \"ro\" }]\n"
);
