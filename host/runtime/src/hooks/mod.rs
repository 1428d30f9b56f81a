//! Hooks around tool calls, as the operator turned them on (`[hooks.NAME]`), in order:
//! before a call each may let it run, refuse it or rewrite its arguments; after it,
//! keep its result or replace it. Each run is a fresh sandbox with the hook's own
//! grants and limits ([`component::LoadedHook`]).
//!
//! **Failure rules.** Before a call a hook that traps, runs out of time or memory, or
//! answers something unusable refuses the call (fail closed: a rule that cannot be
//! checked is not passed), naming the hook. After a call a failing hook keeps the
//! result (fail open: the call already ran; what it did cannot be undone by hiding
//! it), logged and noted. Every hook that refused, rewrote, replaced or failed is
//! noted for the call's audit record ([`HookNote`]).

pub mod component;
pub(crate) mod configure;

pub use configure::{HookError, bytes_of};

use crate::bindings::CallContext;
use crate::policy::EffectiveGrants;
use crate::policy::hooks::HookPolicy;
use crate::secrets::Scrubber;
use component::{Call, HookRun, LoadedHook, PostVerdict, PreVerdict};
use parking_lot::Mutex;
use std::sync::Arc;

/// Longest arguments a hook may rewrite a call's into (bytes of JSON).
pub const MAX_REWRITE_BYTES: usize = 1 << 20;

/// A hook, ready to run: its component, the operator's settings, its grants.
pub struct Hook {
    pub(crate) loaded: LoadedHook,
    pub(crate) policy: HookPolicy,
    pub(crate) grants: EffectiveGrants,
    /// The held secret values, when it is granted `secret_scan`.
    pub(crate) scanned: Option<Arc<[String]>>,
}

impl std::fmt::Debug for Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hook")
            .field("name", &self.policy.name)
            .field("order", &self.policy.order)
            .finish_non_exhaustive()
    }
}

impl Hook {
    /// The hook's name.
    pub fn name(&self) -> &str {
        &self.policy.name
    }

    /// Its component's digest.
    pub fn digest(&self) -> &str {
        &self.loaded.digest
    }

    /// Whether a call of `tool` (in `toolset`) by `tenant` reaches it.
    pub fn applies(&self, tool: &str, toolset: &str, tenant: &str) -> bool {
        self.policy
            .applies(&self.loaded.declaration, tool, toolset, tenant)
    }
}

/// What a hook did to one call, for its audit record.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HookNote {
    /// The hook.
    pub hook: String,
    /// `pre` or `post`.
    pub stage: &'static str,
    /// `denied`, `rewrote`, `replaced`, or `failed` (with why).
    pub did: String,
}

/// Where a call's [`HookNote`]s go (the caller reads them when the call returns).
pub type HookNotes = Arc<Mutex<Vec<HookNote>>>;

/// What the hooks before a call decided.
pub(crate) enum Before {
    /// Run it, with these arguments (the same, or a hook's rewrite: to check again).
    Run {
        /// The arguments (JSON object text).
        args: String,
        /// Which hook rewrote them last, if one did.
        rewritten_by: Option<String>,
    },
    /// Do not: why, naming the hook.
    Refused(String),
}

/// A call as the hooks see it, and what their runs need.
pub(crate) struct HookedCall<'a> {
    pub(crate) runtime: &'a crate::engine::Runtime,
    pub(crate) secrets: &'a crate::secrets::Secrets,
    pub(crate) tool: &'a str,
    pub(crate) toolset: &'a str,
    pub(crate) tenant: &'a str,
    pub(crate) ctx: &'a CallContext,
    /// Where notes go, when the caller wants them.
    pub(crate) notes: Option<&'a HookNotes>,
}

impl HookedCall<'_> {
    fn note(&self, hook: &str, stage: &'static str, did: String) {
        if let Some(notes) = self.notes {
            notes.lock().push(HookNote {
                hook: hook.to_owned(),
                stage,
                did,
            });
        }
    }

    /// `hook`'s run, with `setup` and the secret values it may locate.
    fn run<'h>(&'h self, hook: &'h Hook, setup: crate::sandbox::CallSetup<'static>) -> HookRun<'h> {
        HookRun {
            runtime: self.runtime,
            grants: &hook.grants,
            secrets: self.secrets,
            setup: crate::sandbox::CallSetup {
                scanned: hook.scanned.as_ref(),
                ..setup
            },
        }
    }

    fn wit_call(&self, hook: &Hook, args: String) -> Call {
        Call {
            tool: self.tool.to_owned(),
            args,
            ctx: self.ctx.clone(),
            config: hook.policy.config.clone(),
        }
    }
}

/// Runs the `pre-call` of each hook in `hooks` that applies, in order, on `args`.
pub(crate) fn before(
    hooks: &[Arc<Hook>],
    call: &HookedCall<'_>,
    mut args: String,
    setup: &mut dyn FnMut(&Hook) -> crate::sandbox::CallSetup<'static>,
) -> Before {
    let mut rewritten_by = None;
    for hook in hooks {
        if !hook.applies(call.tool, call.toolset, call.tenant) {
            continue;
        }
        let name = hook.name();
        let verdict = hook.loaded.pre_call(
            call.run(hook, setup(hook)),
            &call.wit_call(hook, args.clone()),
        );
        match verdict {
            Ok(PreVerdict::Allow) => {}
            Ok(PreVerdict::Deny(reason)) => {
                let reason = bounded(&reason, 2_000);
                call.note(name, "pre", "denied".to_owned());
                return Before::Refused(format!("hook {name} refused the call: {reason}"));
            }
            Ok(PreVerdict::Rewrite(new)) if new.len() > MAX_REWRITE_BYTES => {
                let why = format!(
                    "rewrote the arguments into {} bytes, over the {MAX_REWRITE_BYTES}-byte limit",
                    new.len()
                );
                call.note(name, "pre", format!("failed: {why}"));
                return Before::Refused(failed(name, &why));
            }
            Ok(PreVerdict::Rewrite(new)) => {
                call.note(name, "pre", "rewrote".to_owned());
                args = new;
                rewritten_by = Some(name.to_owned());
            }
            Err(failure) => {
                let why = failure.to_string();
                tracing::warn!(
                    hook = name,
                    tool = call.tool,
                    "a hook failed before a call: {why}"
                );
                call.note(name, "pre", format!("failed: {why}"));
                return Before::Refused(failed(name, &why));
            }
        }
    }
    Before::Run { args, rewritten_by }
}

/// The refusal of a call whose hook failed before it.
fn failed(name: &str, why: &str) -> String {
    format!(
        "hook {name} failed ({why}), so the call is refused: a hook that cannot decide does not let a call through"
    )
}

/// Runs the `post-call` of each hook in `hooks` that applies, in order, on `result`
/// (the JSON text the agent would get, already scrubbed); the result the agent gets.
/// A replacement longer than `max_chars` is not used (the hook counts as failed); one
/// that is, is scrubbed by `scrub` before the next hook sees it (a hook granted a
/// bound secret as an env var could put it there, and the next one may have a network
/// grant of its own).
pub(crate) fn after(
    hooks: &[Arc<Hook>],
    call: &HookedCall<'_>,
    args: &str,
    mut result: String,
    max_chars: usize,
    scrub: Option<&Scrubber>,
    setup: &mut dyn FnMut(&Hook) -> crate::sandbox::CallSetup<'static>,
) -> Option<String> {
    let mut replaced = false;
    for hook in hooks {
        if !hook.applies(call.tool, call.toolset, call.tenant) {
            continue;
        }
        let name = hook.name();
        match hook.loaded.post_call(
            call.run(hook, setup(hook)),
            &call.wit_call(hook, args.to_owned()),
            &result,
        ) {
            Ok(PostVerdict::Keep) => {}
            Ok(PostVerdict::Replace(new)) if new.chars().count() > max_chars => {
                let why = format!(
                    "its replacement result is over the tool's {max_chars}-character limit; the result is kept"
                );
                tracing::warn!(hook = name, tool = call.tool, "{why}");
                call.note(name, "post", format!("failed: {why}"));
            }
            Ok(PostVerdict::Replace(new)) => {
                call.note(name, "post", "replaced".to_owned());
                result = match scrub {
                    Some(scrub) => scrub.scrub_json(new),
                    None => new,
                };
                replaced = true;
            }
            Err(failure) => {
                let why = format!("{failure}; the result is kept");
                tracing::warn!(
                    hook = name,
                    tool = call.tool,
                    "a hook failed after a call: {why}"
                );
                call.note(name, "post", format!("failed: {why}"));
            }
        }
    }
    replaced.then_some(result)
}

/// `text` cut to at most `max` characters.
fn bounded(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}
