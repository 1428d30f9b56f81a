//! Test tool `membomb`: allocates 1 MiB blocks until the host's memory cap stops it.
use hermetic_sdk::{Context, Tool, Value, json};

struct MemBomb;

impl Tool for MemBomb {
    type Args = Value;

    fn schema() -> Value {
        json!({"name": "membomb", "description": "Allocate without end", "parameters": {"type": "object", "properties": {}}})
    }

    fn handle(_args: Value, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        let mut blocks: Vec<Vec<u8>> = Vec::new();
        loop {
            blocks.push(std::hint::black_box(vec![1u8; 1 << 20]));
        }
    }
}

hermetic_sdk::export_tool!(
    MemBomb,
    "name = \"membomb\"\ntoolset = \"test\"\nmemory_mb = 16\n"
);
