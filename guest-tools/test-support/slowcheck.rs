// Shared body of the `slowcheck_*` test tools: `check()` spins forever (so only the
// host's check deadline ends it); `handle` answers at once. Three copies with their own
// names let a test list several hostile checks at once.
use hermetic_sdk::{Context, Tool, Value, json};

struct SlowCheck;

impl Tool for SlowCheck {
    type Args = Value;
    fn schema() -> Value {
        json!({"name": NAME, "description": "check() never ends", "parameters": {"type": "object", "properties": {}}})
    }
    fn check() -> bool {
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }
    fn handle(_args: Value, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        Ok(json!({"ran": NAME}))
    }
}
