//! Hooks: components the host runs around tool calls (`hermetic:tool/hook`). A hook
//! says, before a call, whether it runs (and with which arguments) and, after it,
//! whether its result stands; the operator turns it on in the policy
//! (`[hooks.NAME]`). Each run is a fresh sandbox with the hook's own grants.
//!
//! ```ignore
//! use hermetic_sdk::hook::{After, Before, Call, Hook};
//!
//! struct NoRmRf;
//! impl Hook for NoRmRf {
//!     fn pre_call(call: &Call) -> Before {
//!         let command = call.args["command"].as_str().unwrap_or_default();
//!         if command.contains("rm -rf /") {
//!             return Before::Deny("our rule: no rm -rf at the root".into());
//!         }
//!         Before::Allow
//!     }
//! }
//!
//! hermetic_sdk::export_hook!(NoRmRf, r#"
//! name = "no_rm_rf"
//! [hook]
//! tools = ["terminal"]
//! "#);
//! ```

use crate::Context;
use serde_json::Value;

/// Generated bindings of the `hook-component` world (the host and types interfaces are
/// the tool world's).
#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "hook-component",
        path: "../../wit",
        pub_export_macro: true,
        export_macro_name: "__export_hook_component",
        default_bindings_module: "::hermetic_sdk::hook::bindings",
        with: {
            "hermetic:tool/types@0.3.0": crate::bindings::hermetic::tool::types,
            "hermetic:tool/host@0.3.0": crate::bindings::hermetic::tool::host,
        },
    });
}

use bindings::exports::hermetic::tool::hook as wit;

/// A call as the hook sees it.
#[derive(Debug, Clone)]
pub struct Call {
    /// The tool's name.
    pub tool: String,
    /// Its arguments (a JSON object).
    pub args: Value,
    /// Who calls.
    pub ctx: Context,
    /// The operator's `[hooks.NAME.config]` (an object; empty without).
    pub config: Value,
}

/// What a hook says before a call.
#[derive(Debug, Clone, PartialEq)]
pub enum Before {
    /// Let it run.
    Allow,
    /// Refuse it, with this reason for the agent.
    Deny(String),
    /// Run it with these arguments instead (checked against the tool's schema again).
    Rewrite(Value),
}

/// What a hook says after a call.
#[derive(Debug, Clone, PartialEq)]
pub enum After {
    /// Keep the result.
    Keep,
    /// Give the agent this result instead.
    Replace(String),
}

/// What a hook implements; both default to letting everything through.
pub trait Hook {
    /// Before the call.
    fn pre_call(_call: &Call) -> Before {
        Before::Allow
    }

    /// After the call, with its result (the JSON text the agent would get).
    fn post_call(_call: &Call, _result: &str) -> After {
        After::Keep
    }
}

#[doc(hidden)]
pub fn __call(call: wit::Call) -> Call {
    Call {
        tool: call.tool,
        args: serde_json::from_str(&call.args).unwrap_or(Value::Null),
        ctx: Context {
            call_id: call.ctx.call_id,
            tenant: call.ctx.tenant,
            session: call.ctx.session,
        },
        config: serde_json::from_str(&call.config).unwrap_or(Value::Null),
    }
}

#[doc(hidden)]
pub fn __pre<H: Hook>(call: wit::Call) -> wit::PreVerdict {
    match H::pre_call(&__call(call)) {
        Before::Allow => wit::PreVerdict::Allow,
        Before::Deny(reason) => wit::PreVerdict::Deny(reason),
        Before::Rewrite(args) => wit::PreVerdict::Rewrite(args.to_string()),
    }
}

#[doc(hidden)]
pub fn __post<H: Hook>(call: wit::Call, result: String) -> wit::PostVerdict {
    match H::post_call(&__call(call), &result) {
        After::Keep => wit::PostVerdict::Keep,
        After::Replace(text) => wit::PostVerdict::Replace(text),
    }
}

/// Exports a [`Hook`] as the component's `hook` interface and embeds its declaration
/// (TOML: `name`, and a `[hook]` table naming the `tools` and `toolsets` it applies to
/// — both empty or absent: every call).
#[macro_export]
macro_rules! export_hook {
    ($hook:ty, $declaration:literal) => {
        const _: () = {
            $crate::__embed_declaration!($declaration);

            struct __HermeticHookExport;
            impl $crate::hook::bindings::exports::hermetic::tool::hook::Guest
                for __HermeticHookExport
            {
                fn pre_call(
                    call: $crate::hook::bindings::exports::hermetic::tool::hook::Call,
                ) -> $crate::hook::bindings::exports::hermetic::tool::hook::PreVerdict {
                    $crate::hook::__pre::<$hook>(call)
                }
                fn post_call(
                    call: $crate::hook::bindings::exports::hermetic::tool::hook::Call,
                    result: ::std::string::String,
                ) -> $crate::hook::bindings::exports::hermetic::tool::hook::PostVerdict {
                    $crate::hook::__post::<$hook>(call, result)
                }
            }
            $crate::hook::bindings::__export_hook_component!(
                __HermeticHookExport with_types_in $crate::hook::bindings
            );
        };
    };
}

/// Where the host's held secrets are in a text (`hermetic:tool/secrets`), for hooks
/// that declare `secret_scan = true` under `[capabilities]` (feature `secrets`).
#[cfg(feature = "secrets")]
pub mod secrets {
    #[doc(hidden)]
    pub mod bindings {
        wit_bindgen::generate!({
            world: "secret-imports",
            path: "../../wit",
        });
    }

    /// Byte ranges `[start, end)` of `text` holding a secret the host holds.
    pub fn find(text: &str) -> Vec<(usize, usize)> {
        bindings::hermetic::tool::secrets::find(text)
            .into_iter()
            .map(|(start, end)| (start as usize, end as usize))
            .collect()
    }
}
