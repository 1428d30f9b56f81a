//! Test tool `scribble`: its allocator overwrites every block it frees with `0xFF`
//! (never valid UTF-8), as an interpreter's allocator reusing the memory at once
//! would. The canonical ABI's post-return frees `handle`'s returned string, so a host
//! that reads the result after post-return reads garbage; one that copies it out in
//! time returns exactly `{"echo": TEXT}` (mode `ok`) or TEXT as the tool's error
//! (mode `error`).
#![allow(
    unsafe_code,
    reason = "a scribbling global allocator is an unsafe impl"
)]

use hermetic_sdk::bindings::exports::hermetic::tool::tool::Guest;
use hermetic_sdk::bindings::hermetic::tool::types::CallContext;
use hermetic_sdk::{Value, json};
use std::alloc::{GlobalAlloc, Layout, System};

struct Scribbling;

// SAFETY: forwards to `System`; the only addition writes inside the block being freed,
// which the caller owns until `dealloc` returns.
unsafe impl GlobalAlloc for Scribbling {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` is valid for `layout.size()` bytes until it is freed below.
        unsafe {
            std::ptr::write_bytes(ptr, 0xFF, layout.size());
            System.dealloc(ptr, layout);
        }
    }
}

#[global_allocator]
static ALLOCATOR: Scribbling = Scribbling;

struct Scribble;

impl Guest for Scribble {
    fn schema() -> String {
        json!({"name": "scribble", "description": "Return a text, then scribble over it", "parameters": {
            "type": "object",
            "properties": {
                "mode": {"type": "string", "enum": ["ok", "error"]},
                "text": {"type": "string"}
            },
            "required": ["mode", "text"]
        }})
        .to_string()
    }

    fn check() -> bool {
        true
    }

    fn handle(args: String, _ctx: CallContext) -> Result<String, String> {
        let args: Value = hermetic_sdk::serde_json::from_str(&args).map_err(|e| e.to_string())?;
        let text = args["text"].as_str().unwrap_or_default().to_owned();
        match args["mode"].as_str() {
            Some("ok") => Ok(json!({"echo": text}).to_string()),
            _ => Err(text),
        }
    }
}

hermetic_sdk::bindings::__export_tool_component!(Scribble with_types_in hermetic_sdk::bindings);

#[used]
#[unsafe(link_section = "hermetic:declaration")]
static DECLARATION: [u8; 34] = *b"name = \"scribble\"\ntoolset = \"test\"";
