// The key-value probe's logic, shared by kvprobe, kvprobe_session and kv_undeclared
// (each exports it with its own declaration).
use hermetic_sdk::{Context, Tool, Value, json, kv};

pub struct Probe;

fn text(args: &Value, key: &str) -> String {
    args[key].as_str().unwrap_or_default().to_owned()
}

impl Tool for Probe {
    type Args = Value;

    fn schema() -> Value {
        json!({"name": NAME, "description": "Key-value probe", "parameters": {"type": "object"}})
    }

    fn handle(args: Value, _ctx: &Context) -> hermetic_sdk::Result<Value> {
        let bucket = kv::open(&text(&args, "bucket"))?;
        let key = text(&args, "key");
        Ok(match text(&args, "op").as_str() {
            "set" => {
                bucket.set(&key, text(&args, "value").as_bytes())?;
                json!({"ok": true})
            }
            "get" => {
                let value = bucket.get(&key)?;
                json!({"value": value.map(|v| String::from_utf8_lossy(&v).into_owned())})
            }
            "delete" => {
                bucket.delete(&key)?;
                json!({"ok": true})
            }
            "exists" => json!({"exists": bucket.exists(&key)?}),
            "list" => json!({"keys": kv::keys(&bucket)?}),
            // One `list-keys` page from the cursor the arguments give (any u64).
            "page" => {
                let page = bucket.list_keys(args["cursor"].as_u64())?;
                json!({"keys": page.keys, "cursor": page.cursor})
            }
            "incr" => {
                json!({"value": kv::increment(&bucket, &key, args["by"].as_u64().unwrap_or(1))?})
            }
            // Compare-and-swap: `expected` null is "absent".
            "swap" => {
                let expected = args["expected"].as_str().map(str::as_bytes);
                let value = text(&args, "value");
                json!({"swapped": kv::swap(&bucket, &key, expected, value.as_bytes())?})
            }
            // Read, append `value` and a comma, write if unchanged; again until it took.
            "append" => {
                let mut tries = 0;
                loop {
                    tries += 1;
                    let old = bucket.get(&key)?;
                    let mut new = old.clone().unwrap_or_default();
                    new.extend_from_slice(text(&args, "value").as_bytes());
                    new.push(b',');
                    if kv::swap(&bucket, &key, old.as_deref(), &new)? {
                        break json!({"tries": tries});
                    }
                }
            }
            // Writes keys k0, k1, … until the store refuses one: how many it took.
            "flood" => {
                let n = args["n"].as_u64().unwrap_or(1_000_000);
                for i in 0..n {
                    if let Err(e) = bucket.set(&format!("k{i}"), b"x") {
                        return Ok(json!({"written": i, "refused": kv::describe(&e)}));
                    }
                }
                json!({"written": n})
            }
            // One value of `size` bytes.
            "big" => {
                let size = usize::try_from(args["size"].as_u64().unwrap_or(0)).unwrap_or(0);
                bucket.set(&key, &vec![b'v'; size])?;
                json!({"ok": true})
            }
            other => json!({"error": format!("unknown op {other:?}")}),
        })
    }
}
