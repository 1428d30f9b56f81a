//! Test tool `spin_long`: never returns; its declared deadline is 60 s.
use hermetic_sdk::{Context, Tool, Value, json};

struct Spin;

impl Tool for Spin {
    type Args = Value;

    fn schema() -> Value {
        json!({"name": "spin_long", "description": "Loop forever", "parameters": {"type": "object", "properties": {}}})
    }

    fn handle(_args: Value, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }
}

hermetic_sdk::export_tool!(
    Spin,
    "name = \"spin_long\"\ntoolset = \"test\"\ntimeout_ms = 60000\n"
);
