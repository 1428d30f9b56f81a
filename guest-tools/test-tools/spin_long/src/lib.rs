//! Test tool `spin_long`: reports one progress event (so a client knows the call is
//! running), then never returns; only cancellation or its 60 s deadline stops it.
use hermetic_sdk::{Context, Tool, Value, json};

struct SpinLong;

impl Tool for SpinLong {
    type Args = Value;

    fn schema() -> Value {
        json!({"name": "spin_long", "description": "Report progress once, then loop forever",
               "parameters": {"type": "object", "properties": {}}})
    }

    fn handle(_args: Value, ctx: &Context) -> hermetic_sdk::Result<Value> {
        ctx.progress(0, None, "spinning");
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }
}

hermetic_sdk::export_tool!(
    SpinLong,
    "name = \"spin_long\"\ntoolset = \"test\"\ntimeout_ms = 60000\n"
);
