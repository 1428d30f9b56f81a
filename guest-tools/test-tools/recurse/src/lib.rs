//! Hostile test tool `recurse`: recurses until the stack runs out.
use hermetic_sdk::{Context, Tool, Value, json};

struct Recurse;

/// Recurses until `limit` (the tests pass u64::MAX: the stack runs out first).
#[inline(never)]
fn deeper(n: u64, limit: u64, pad: [u64; 16]) -> u64 {
    let pad = std::hint::black_box(pad);
    if n >= limit {
        return n;
    }
    deeper(n + 1, limit, pad).wrapping_add(pad[(n % 16) as usize])
}

impl Tool for Recurse {
    type Args = Value;
    fn schema() -> Value {
        json!({"name": "recurse", "description": "Recurse forever", "parameters": {"type": "object"}})
    }
    fn handle(_args: Value, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        Ok(json!({"depth": deeper(0, std::hint::black_box(u64::MAX), [1; 16])}))
    }
}

hermetic_sdk::export_tool!(Recurse, "name = \"recurse\"\ntoolset = \"hostile\"\n");
