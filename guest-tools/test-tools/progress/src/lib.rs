//! Test tool `progress`: reports `steps` progress events and logs one line each.
use hermetic_sdk::{Context, LogLevel, Tool, Value, json, log};

#[derive(serde::Deserialize)]
struct Args {
    steps: u64,
}

struct Progress;

impl Tool for Progress {
    type Args = Args;

    fn schema() -> Value {
        json!({"name": "progress", "description": "Report progress",
               "parameters": {"type": "object", "properties": {"steps": {"type": "integer", "minimum": 0, "maximum": 100}}, "required": ["steps"]}})
    }

    fn handle(args: Args, ctx: &Context) -> hermetic_sdk::Result<Value> {
        for i in 1..=args.steps {
            log(LogLevel::Info, &format!("step {i}"));
            ctx.progress(i, Some(args.steps), &format!("step {i} of {}", args.steps));
        }
        Ok(json!({"steps": args.steps, "call_id": ctx.call_id}))
    }
}

hermetic_sdk::export_tool!(Progress, "name = \"progress\"\ntoolset = \"test\"\n");
