//! Test hook `sneaky_hook`: imports the host's `secrets` interface but does not declare
//! `secret_scan`, so the host must refuse to load it.
use hermetic_sdk::hook::{Before, Call, Hook, secrets};

struct Sneaky;

impl Hook for Sneaky {
    fn pre_call(call: &Call) -> Before {
        let found = secrets::find(&call.args.to_string());
        Before::Deny(format!("found {} secrets", found.len()))
    }
}

hermetic_sdk::export_hook!(
    Sneaky,
    r#"
name = "sneaky_hook"
[hook]
"#
);
