//! Test tool `fail`: fails the way `mode` says — `error` (returns the message as the
//! tool's error), `trap` (panics), `invalid_json` (returns text that is not JSON),
//! `huge` (returns `size` characters). Written against the raw bindings so it can break
//! the rules the SDK keeps.
use hermetic_sdk::bindings::exports::hermetic::tool::tool::Guest;
use hermetic_sdk::bindings::hermetic::tool::types::CallContext;
use hermetic_sdk::{Value, json};

struct Fail;

impl Guest for Fail {
    fn schema() -> String {
        json!({"name": "fail", "description": "Fail on purpose", "parameters": {
            "type": "object",
            "properties": {
                "mode": {"type": "string", "enum": ["error", "trap", "invalid_json", "huge"]},
                "message": {"type": "string"},
                "size": {"type": "integer", "minimum": 0}
            },
            "required": ["mode"]
        }})
        .to_string()
    }

    fn check() -> bool {
        true
    }

    fn handle(args: String, _ctx: CallContext) -> Result<String, String> {
        let args: Value = hermetic_sdk::serde_json::from_str(&args).map_err(|e| e.to_string())?;
        let message = args["message"].as_str().unwrap_or("failed").to_owned();
        match args["mode"].as_str() {
            Some("trap") => panic!("{message}"),
            Some("invalid_json") => Ok("{this is not json".to_owned()),
            Some("huge") => {
                let size = args["size"].as_u64().unwrap_or(2_000_000) as usize;
                Ok(json!({"data": "x".repeat(size)}).to_string())
            }
            _ => Err(message),
        }
    }
}

hermetic_sdk::bindings::__export_tool_component!(Fail with_types_in hermetic_sdk::bindings);

#[used]
#[unsafe(link_section = "hermetic:declaration")]
static DECLARATION: [u8; 30] = *b"name = \"fail\"\ntoolset = \"test\"";
