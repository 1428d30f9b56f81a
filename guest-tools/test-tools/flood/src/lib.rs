//! Hostile test tool `flood`: writes `mb` MiB to stdout (and a line to stderr).
use hermetic_sdk::{Context, Tool, Value, json};
use std::io::Write;

#[derive(serde::Deserialize)]
struct Args {
    mb: u64,
}

struct Flood;

impl Tool for Flood {
    type Args = Args;
    fn schema() -> Value {
        json!({"name": "flood", "description": "Flood stdout", "parameters": {"type": "object", "properties": {"mb": {"type": "integer"}}, "required": ["mb"]}})
    }
    fn handle(args: Args, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        let chunk = vec![b'x'; 1 << 16];
        let mut out = std::io::stdout().lock();
        for _ in 0..args.mb * 16 {
            out.write_all(&chunk)?;
        }
        out.flush()?;
        Ok(json!({"wrote_mb": args.mb}))
    }
}

hermetic_sdk::export_tool!(Flood, "name = \"flood\"\ntoolset = \"hostile\"\n");
