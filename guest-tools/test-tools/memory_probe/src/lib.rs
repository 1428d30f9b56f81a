//! Test tool `memory_probe`: `{"write": "secret-…"}` stores a secret in static memory and
//! fills 1 MiB of heap with it; `{}` reports the static buffer and how often the prefix
//! `secret-` appears anywhere in linear memory. A fresh instance must find nothing.
use hermetic_sdk::{Context, Tool, Value, json};
use std::sync::Mutex;

static STATIC_BUF: Mutex<[u8; 256]> = Mutex::new([0; 256]);

#[derive(serde::Deserialize)]
struct Args {
    #[serde(default)]
    write: Option<String>,
    /// After writing, scan this same instance's memory (proves the scanner sees it).
    #[serde(default)]
    scan_after_write: bool,
}

struct Probe;

impl Tool for Probe {
    type Args = Args;

    fn schema() -> Value {
        json!({"name": "memory_probe", "description": "Probe for leftover memory",
               "parameters": {"type": "object", "properties": {"write": {"type": "string"}, "scan_after_write": {"type": "boolean"}}}})
    }

    fn handle(args: Args, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        let mut buf = STATIC_BUF.lock().map_err(|_| "poisoned")?;
        if let Some(secret) = args.write {
            let bytes = secret.as_bytes();
            if bytes.is_empty() {
                return Err("write needs a non-empty secret".into());
            }
            let n = bytes.len().min(256);
            buf[..n].copy_from_slice(&bytes[..n]);
            // Fill 1 MiB of heap with the secret and leak it, so the instance's memory
            // is full of it when the call ends.
            let heap: Vec<u8> = bytes.iter().copied().cycle().take(1 << 20).collect();
            std::mem::forget(std::hint::black_box(heap));
            if args.scan_after_write {
                return Ok(json!({"wrote": n, "memory_hits": scan_memory_for_secret_prefix()}));
            }
            return Ok(json!({"wrote": n}));
        }
        // Grow memory as far as the writer did (without touching it), then scan every
        // byte of linear memory for the secret's prefix. The prefix is compared in
        // encoded form so this instance never holds it in plain text itself.
        let reserve: Vec<u8> = Vec::with_capacity(4 << 20);
        std::hint::black_box(&reserve);
        let heap_hits = scan_memory_for_secret_prefix();
        let static_seen: Vec<u8> = buf.iter().copied().filter(|b| *b != 0).collect();
        Ok(json!({
            "static": String::from_utf8_lossy(&static_seen),
            "memory_hits": heap_hits,
        }))
    }
}

/// `"secret-"` XOR 0x55: the prefix every secret the tests write starts with.
#[cfg(target_arch = "wasm32")]
const ENCODED_PREFIX: [u8; 7] = [
    b's' ^ 0x55,
    b'e' ^ 0x55,
    b'c' ^ 0x55,
    b'r' ^ 0x55,
    b'e' ^ 0x55,
    b't' ^ 0x55,
    b'-' ^ 0x55,
];

/// Counts places in linear memory where the secret prefix appears.
#[cfg(target_arch = "wasm32")]
fn scan_memory_for_secret_prefix() -> u64 {
    let end = core::arch::wasm32::memory_size(0) * 65536;
    let mut hits = 0;
    for addr in 8..end.saturating_sub(ENCODED_PREFIX.len()) {
        let matches = ENCODED_PREFIX.iter().enumerate().all(|(i, enc)| {
            // SAFETY: every address below memory.size is valid to read in wasm linear
            // memory; volatile keeps the compiler from reasoning about the contents.
            let byte = unsafe { std::ptr::read_volatile((addr + i) as *const u8) };
            byte ^ 0x55 == *enc
        });
        if matches {
            hits += 1;
        }
    }
    hits
}

#[cfg(not(target_arch = "wasm32"))]
fn scan_memory_for_secret_prefix() -> u64 {
    0
}

hermetic_sdk::export_tool!(Probe, "name = \"memory_probe\"\ntoolset = \"test\"\n");
