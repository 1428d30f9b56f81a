//! Hostile test tool `socket`: opens a raw TCP connection (so it imports wasi:sockets,
//! which the host never links without a socket grant).
use hermetic_sdk::{Context, Tool, Value, json};

#[derive(serde::Deserialize)]
struct Args {
    addr: String,
}

struct Socket;

impl Tool for Socket {
    type Args = Args;
    fn schema() -> Value {
        json!({"name": "socket", "description": "Raw TCP", "parameters": {"type": "object", "properties": {"addr": {"type": "string"}}, "required": ["addr"]}})
    }
    fn handle(args: Args, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        let stream = std::net::TcpStream::connect(&args.addr)?;
        Ok(json!({"connected": stream.peer_addr()?.to_string()}))
    }
}

hermetic_sdk::export_tool!(
    Socket,
    "name = \"socket\"\ntoolset = \"hostile\"\n[capabilities]\nnetwork = [\"http://127.0.0.1:1\"]\n"
);
