//! Hostile test tool `escape`: reads, writes or lists any path it is given with plain
//! `std::fs` — no SDK path checks — so only the sandbox stands in the way. Declares the
//! workspace read-only.
use hermetic_sdk::{Context, Tool, Value, json};

#[derive(serde::Deserialize)]
struct Args {
    op: String,
    path: String,
    #[serde(default)]
    content: String,
}

struct Escape;

impl Tool for Escape {
    type Args = Args;
    fn schema() -> Value {
        json!({"name": "escape", "description": "Raw file access", "parameters": {"type": "object",
            "properties": {"op": {"enum": ["read", "write", "list"]}, "path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["op", "path"]}})
    }
    fn handle(args: Args, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        match args.op.as_str() {
            "read" => Ok(json!({"content": std::fs::read_to_string(&args.path)?})),
            "write" => {
                std::fs::write(&args.path, args.content)?;
                Ok(json!({"written": true}))
            }
            _ => {
                let mut names: Vec<String> = std::fs::read_dir(&args.path)?
                    .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
                    .collect();
                names.sort();
                Ok(json!({"entries": names}))
            }
        }
    }
}

hermetic_sdk::export_tool!(
    Escape,
    "name = \"escape\"\ntoolset = \"hostile\"\n[capabilities]\nfs = [{ mount = \"workspace\", access = \"ro\" }]\n"
);
