//! Hostile test tool `sleeper`: sleeps for `secs` seconds (default an hour) with
//! `std::thread::sleep` — a blocking `wasi:io/poll` call into the host, where the epoch
//! deadline cannot reach it — then returns `{"slept": secs}`.
use hermetic_sdk::{Context, Tool, Value, json};

#[derive(serde::Deserialize)]
struct Args {
    #[serde(default)]
    secs: Option<u64>,
}

struct Sleeper;

impl Tool for Sleeper {
    type Args = Args;
    fn schema() -> Value {
        json!({"name": "sleeper", "description": "Sleeps", "parameters": {"type": "object",
            "properties": {"secs": {"type": "integer", "minimum": 0}}}})
    }
    fn handle(args: Args, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        let secs = args.secs.unwrap_or(3600);
        std::thread::sleep(std::time::Duration::from_secs(secs));
        Ok(json!({"slept": secs}))
    }
}

hermetic_sdk::export_tool!(
    Sleeper,
    "name = \"sleeper\"\ntoolset = \"hostile\"\ntimeout_ms = 2000\n"
);
