//! Test tool `old_terminal`: a terminal tool built against `hermetic:tool@0.1.0` (a copy
//! of that package is in `wit/`), whose `terminal` functions returned JSON strings. The
//! host implements 0.3.0 only, so loading it must fail, naming the old interface.
wit_bindgen::generate!({
    world: "terminal-tool",
    path: "wit",
});

use exports::hermetic::tool::tool::{CallContext, Guest};
use hermetic::tool::terminal::{CommandRequest, run};

struct OldTerminal;

impl Guest for OldTerminal {
    fn schema() -> String {
        r#"{"name":"old_terminal","description":"A 0.1.0 terminal tool","parameters":{"type":"object"}}"#
            .to_owned()
    }
    fn check() -> bool {
        true
    }
    fn handle(_args: String, _ctx: CallContext) -> Result<String, String> {
        // Calling `run` keeps the 0.1.0 terminal import in the component.
        Ok(run(&CommandRequest {
            command: "true".into(),
            workdir: None,
            timeout_secs: None,
            stdin: None,
            pty: false,
        }))
    }
}

export!(OldTerminal);

#[used]
#[unsafe(link_section = "hermetic:declaration")]
static DECLARATION: [u8; 69] =
    *b"name = \"old_terminal\"\ntoolset = \"test\"\n[capabilities]\nterminal = true";
