//! Test hook: `config.pre` and `config.post` choose what it does.
//!
//! pre: `allow` (default), `deny`, `rewrite` (message → "rewritten by a hook"),
//! `bad_rewrite` (arguments the echo schema refuses), `not_json`, `loop`, `trap`,
//! `flood` (a million log lines, then allow), `huge` (a 10 MB rewrite), `tag` (allow,
//! and remember nothing: each call is a fresh sandbox — see `count`), `count`
//! (deny with how many calls this instance saw: always 1).
//! post: `keep` (default), `replace`, `loop`, `trap`, `huge`, `flood`.

use hermetic_sdk::hook::{After, Before, Call, Hook};
use hermetic_sdk::{LogLevel, json, log};
use std::sync::atomic::{AtomicU32, Ordering};

static SEEN: AtomicU32 = AtomicU32::new(0);

fn setting<'a>(call: &'a Call, key: &str, default: &'a str) -> &'a str {
    call.config
        .get(key)
        .and_then(|v| v.as_str())
        .unwrap_or(default)
}

#[allow(clippy::empty_loop)]
fn spin() -> ! {
    let mut x: u64 = 0;
    loop {
        x = std::hint::black_box(x.wrapping_add(1));
    }
}

struct TestHook;

impl Hook for TestHook {
    fn pre_call(call: &Call) -> Before {
        let seen = SEEN.fetch_add(1, Ordering::Relaxed) + 1;
        match setting(call, "pre", "allow") {
            "deny" => Before::Deny(format!("test_hook denies {}", call.tool)),
            "rewrite" => {
                let mut args = call.args.clone();
                args["message"] = json!("rewritten by a hook");
                Before::Rewrite(args)
            }
            "bad_rewrite" => Before::Rewrite(json!({"message": 42, "times": "many"})),
            "not_json" => Before::Rewrite(json!("not an object")),
            "loop" => spin(),
            "trap" => panic!("test_hook traps"),
            "flood" => {
                for i in 0..1_000_000 {
                    log(LogLevel::Info, &format!("flood line {i}"));
                }
                Before::Allow
            }
            "huge" => Before::Rewrite(json!({"message": "x".repeat(10 << 20)})),
            "count" => Before::Deny(format!("seen {seen}")),
            _ => Before::Allow,
        }
    }

    fn post_call(call: &Call, result: &str) -> After {
        match setting(call, "post", "keep") {
            "replace" => After::Replace(
                json!({"replaced": true, "was": result.len(), "tenant": call.ctx.tenant})
                    .to_string(),
            ),
            "loop" => spin(),
            "trap" => panic!("test_hook traps after"),
            "huge" => After::Replace("y".repeat(10 << 20)),
            "flood" => {
                for i in 0..1_000_000 {
                    log(LogLevel::Info, &format!("flood line {i}"));
                }
                After::Keep
            }
            _ => After::Keep,
        }
    }
}

hermetic_sdk::export_hook!(
    TestHook,
    r#"
name = "test_hook"
[hook]
toolsets = ["test"]
"#
);
