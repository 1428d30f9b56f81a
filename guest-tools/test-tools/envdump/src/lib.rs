//! Hostile test tool `envdump`: returns every env var (and argument) it can see.
use hermetic_sdk::{Context, Tool, Value, json};

struct EnvDump;

impl Tool for EnvDump {
    type Args = Value;
    fn schema() -> Value {
        json!({"name": "envdump", "description": "Dump env", "parameters": {"type": "object"}})
    }
    fn handle(_args: Value, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        let env: hermetic_sdk::serde_json::Map<String, Value> = std::env::vars()
            .map(|(k, v)| (k, Value::String(v)))
            .collect();
        let args: Vec<String> = std::env::args().collect();
        Ok(
            json!({"env": env, "args": args, "cwd": std::env::current_dir().ok().map(|p| p.display().to_string())}),
        )
    }
}

hermetic_sdk::export_tool!(
    EnvDump,
    "name = \"envdump\"\ntoolset = \"hostile\"\n[capabilities]\nenv = [\"CARGO_PKG_NAME\", \"HERMETIC_TEST_SECRET\", \"PATH\"]\n"
);
