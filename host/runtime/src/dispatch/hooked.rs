//! The dispatcher's side of hooks: which of a call's hooks apply, their runs before
//! and after it (each in a sandbox of its own, on the call's slots), and what their
//! verdicts make of the call's arguments and outcome.

use super::{CallOptions, Dispatcher, kind_of};
use crate::bindings::CallContext;
use crate::catalog::Resolved;
use crate::hooks::{self, Before, Hook, HookedCall};
use crate::outcome::CallOutcome;
use crate::sandbox::CallSetup;
use serde_json::Value;
use std::sync::Arc;

/// The call the hooks are run for.
pub(super) struct HookSite<'a> {
    pub(super) tool: &'a Resolved,
    pub(super) name: &'a str,
    pub(super) ctx: &'a CallContext,
    pub(super) options: &'a CallOptions,
}

impl Dispatcher {
    /// Adds `hook`; hooks run in their `order` (ties by name).
    pub fn add_hook(&self, hook: Hook) {
        let mut hooks = self.hooks.write();
        let mut list: Vec<Arc<Hook>> = hooks.iter().cloned().collect();
        list.push(Arc::new(hook));
        list.sort_by(|a, b| (a.policy.order, a.name()).cmp(&(b.policy.order, b.name())));
        *hooks = list.into();
    }

    /// The hooks, in the order they run.
    pub fn hooks(&self) -> Arc<[Arc<Hook>]> {
        Arc::clone(&self.hooks.read())
    }

    /// The hooks, when any applies to a call of `tool` by `tenant`.
    pub(super) fn hooks_for(&self, tool: &Resolved, tenant: &str) -> Option<Arc<[Arc<Hook>]>> {
        let hooks = self.hooks.read();
        if hooks.is_empty() {
            return None;
        }
        let declaration = &tool.tool().declaration;
        hooks
            .iter()
            .any(|h| h.applies(&declaration.name, &declaration.toolset, tenant))
            .then(|| Arc::clone(&hooks))
    }

    /// A hook's sandbox setup for a call of `options`: the call's cancel token and
    /// CPU share.
    fn hook_setup(
        &self,
        hook: &Hook,
        ctx: &CallContext,
        options: &CallOptions,
    ) -> CallSetup<'static> {
        CallSetup {
            call_id: format!("{}:{}", ctx.call_id, hook.name()),
            progress: None,
            timeout: None,
            cancel: options.cancel.clone(),
            turn: Some(
                self.catalog
                    .runtime()
                    .turns()
                    .turn(self.share(&options.tenant)),
            ),
            ..CallSetup::default()
        }
    }

    /// A call as the hooks see it.
    fn hooked<'a>(&'a self, site: &HookSite<'a>) -> HookedCall<'a> {
        HookedCall {
            runtime: self.catalog.runtime(),
            secrets: self.catalog.secrets(),
            tool: site.name,
            toolset: &site.tool.tool().declaration.toolset,
            tenant: &site.options.tenant,
            ctx: site.ctx,
            notes: site.options.hook_notes.as_ref(),
        }
    }

    /// The hooks before a call of `tool` with `args` (checked): the arguments to run
    /// it with — a rewrite is checked against the tool's schema again — or the
    /// outcome that refuses it.
    pub(super) fn hooks_before(
        &self,
        hooks: &[Arc<Hook>],
        site: &HookSite<'_>,
        args: String,
    ) -> Result<String, CallOutcome> {
        let (tool, name) = (site.tool, site.name);
        let call = self.hooked(site);
        match hooks::before(hooks, &call, args, &mut |h| {
            self.hook_setup(h, site.ctx, site.options)
        }) {
            Before::Refused(reason) => Err(CallOutcome::Denied { reason }),
            Before::Run {
                args,
                rewritten_by: None,
            } => Ok(args),
            Before::Run {
                args,
                rewritten_by: Some(hook),
            } => {
                let invalid = |problem: String| CallOutcome::InvalidArguments {
                    name: name.to_owned(),
                    message: format!(
                        "hook {hook} rewrote the arguments into ones the tool refuses: {problem}"
                    ),
                };
                // A hook granted a bound secret (as its env var) must not hand it to
                // the tool: an injected secret never enters a tool's memory, and the
                // tool may have a network grant of its own. Refused, not scrubbed —
                // the rewrite meant to carry it somewhere.
                let scrub = crate::sandbox::redact_values(tool.grants(), self.catalog.secrets());
                if scrub.is_some_and(|scrub| scrub.finds(&args)) {
                    return Err(CallOutcome::Denied {
                        reason: format!(
                            "hook {hook} rewrote the arguments to hold a secret the policy binds to a destination; a bound secret never reaches a tool"
                        ),
                    });
                }
                let value: Value = serde_json::from_str(&args)
                    .map_err(|e| invalid(format!("not valid JSON ({e})")))?;
                if !value.is_object() {
                    return Err(invalid(format!(
                        "expected a JSON object, got {}",
                        kind_of(&value)
                    )));
                }
                if let Some(error) = tool.tool().validator.iter_errors(&value).next() {
                    let at = error.instance_path().to_string();
                    let field = if at.is_empty() {
                        "(arguments)".to_owned()
                    } else {
                        at
                    };
                    return Err(invalid(format!("{field}: {error}")));
                }
                Ok(value.to_string())
            }
        }
    }

    /// The hooks after a call that ended with `outcome`: what the agent gets. A
    /// cancelled call is left alone (nobody is waiting for it).
    pub(super) fn hooks_after(
        &self,
        hooks: &[Arc<Hook>],
        site: &HookSite<'_>,
        args: &str,
        outcome: CallOutcome,
    ) -> CallOutcome {
        if matches!(outcome, CallOutcome::Cancelled) {
            return outcome;
        }
        let tool = site.tool;
        let call = self.hooked(site);
        let result = match &outcome {
            CallOutcome::Success(text) => text.clone(),
            other => other.to_json(),
        };
        let max = tool.grants().limits.result_chars;
        let scrub = crate::sandbox::redact_values(tool.grants(), self.catalog.secrets());
        match hooks::after(hooks, &call, args, result, max, scrub.as_ref(), &mut |h| {
            self.hook_setup(h, site.ctx, site.options)
        }) {
            Some(replaced) => CallOutcome::Success(replaced),
            None => outcome,
        }
    }
}
