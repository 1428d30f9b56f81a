//! Hostile test tool `planter`: creates a symlink `link` → `target` in its read-write
//! workspace mount (through wasi-libc's `symlink`, no SDK checks), so only the sandbox
//! decides which links a guest may leave behind for the terminal and other tenants.
use hermetic_sdk::{Context, Tool, Value, json};
use std::ffi::{CString, c_char, c_int};

#[derive(serde::Deserialize)]
struct Args {
    target: String,
    link: String,
}

unsafe extern "C" {
    // wasi-libc's POSIX `symlink` (std does not expose symlink creation on WASI stable).
    fn symlink(target: *const c_char, link: *const c_char) -> c_int;
}

struct Planter;

impl Tool for Planter {
    type Args = Args;
    fn schema() -> Value {
        json!({"name": "planter", "description": "Creates a symlink", "parameters": {"type": "object",
            "properties": {"target": {"type": "string"}, "link": {"type": "string"}},
            "required": ["target", "link"]}})
    }
    fn handle(args: Args, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        let target = CString::new(args.target).map_err(|e| e.to_string())?;
        let link = CString::new(args.link).map_err(|e| e.to_string())?;
        // SAFETY: both are valid NUL-terminated strings that outlive the call.
        if unsafe { symlink(target.as_ptr(), link.as_ptr()) } != 0 {
            return Err(std::io::Error::last_os_error().into());
        }
        Ok(json!({"created": true}))
    }
}

hermetic_sdk::export_tool!(
    Planter,
    "name = \"planter\"\ntoolset = \"hostile\"\n[capabilities]\nfs = [{ mount = \"workspace\", access = \"rw\" }]\n"
);
