//! Hostile test tool `alien`: a well-formed tool that also imports `test:alien/probe`,
//! which no host provides. Loading it must fail with a clear message.
wit_bindgen::generate!({
    world: "test:alien/alien",
    path: ["../../../wit", "wit"],
    generate_all,
});

use exports::hermetic::tool::tool::{CallContext, Guest};

struct Alien;

impl Guest for Alien {
    fn schema() -> String {
        r#"{"name":"alien","description":"Needs an alien import","parameters":{"type":"object"}}"#
            .to_owned()
    }
    fn check() -> bool {
        true
    }
    fn handle(_args: String, _ctx: CallContext) -> Result<String, String> {
        Ok(format!("{{\"ping\":{:?}}}", test::alien::probe::ping()))
    }
}

export!(Alien);

#[used]
#[unsafe(link_section = "hermetic:declaration")]
static DECLARATION: [u8; 34] = *b"name = \"alien\"\ntoolset = \"hostile\"";
