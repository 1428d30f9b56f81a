//! Test tool `clock`: reports the wall clock (ms since the epoch) and the monotonic
//! clock's progress over a short busy loop.
use hermetic_sdk::{Context, Tool, Value, json};

struct Clock;

impl Tool for Clock {
    type Args = Value;
    fn schema() -> Value {
        json!({"name": "clock", "description": "Read clocks", "parameters": {"type": "object"}})
    }
    fn handle(_args: Value, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let start = std::time::Instant::now();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = std::hint::black_box(x.wrapping_add(i));
        }
        let elapsed_ns = start.elapsed().as_nanos() as u64;
        Ok(json!({"wall_ms": wall, "elapsed_ns": elapsed_ns, "x": x}))
    }
}

hermetic_sdk::export_tool!(Clock, "name = \"clock\"\ntoolset = \"test\"\n");
