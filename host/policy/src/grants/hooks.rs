//! Hooks the operator turns on (`[hooks.NAME]`): which component, in what order, for
//! which tenants and calls, with what settings and grants. A hook sees only calls its
//! declaration names (`[hook]` in the component) *and* the operator's selection allows;
//! its grants are its declaration ∩ its own `[hooks.NAME]` grants — never the
//! operator's `[defaults]`, never a tenant's.

use super::{EffectiveGrants, GrantOverride, GrantSet, LimitPolicy, OperatorPolicy};
use crate::declaration::Declaration;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// Where a hook's component comes from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum HookLocation {
    /// One the host embeds (`secret_scan`), by name.
    Bundled(String),
    /// A component file.
    Path(PathBuf),
    /// An OCI reference (`oci://…`), pulled into the tool store like a tool's.
    Source(String),
}

/// One hook, as the operator configured it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HookPolicy {
    /// Its name (the `[hooks.NAME]` key; also the component's declared name).
    pub name: String,
    /// Where its component is.
    pub location: HookLocation,
    /// When it runs among the others: lower first (ties by name).
    pub order: i64,
    /// The settings handed to it with every call, as a JSON object's text.
    pub config: String,
    /// Tenants whose calls it sees (`None`: every tenant's, the operator's included).
    pub tenants: Option<BTreeSet<String>>,
    /// Tools whose calls it sees, within what it declares (`None`: all it declares).
    pub tools: Option<BTreeSet<String>>,
    /// Toolsets whose calls it sees, within what it declares (`None`: all).
    pub toolsets: Option<BTreeSet<String>>,
    /// Its grants: mounts, env, network, limits (never the terminal).
    pub grants: GrantOverride,
    /// Whether it may ask where the host's secrets are in a text (`secrets.find`).
    pub secret_scan: bool,
}

/// A hook's default wall-clock limit per run: it sits in every call it applies to.
pub const HOOK_TIMEOUT_MS: u64 = 1_000;
/// The longest a hook's run may be made (by its declaration or `[hooks.NAME.limits]
/// timeout_ms`) unless its `max_timeout_ms` says otherwise.
pub const HOOK_MAX_TIMEOUT_MS: u64 = 10_000;
/// A hook's default memory limit.
pub const HOOK_MEMORY_MB: u64 = 64;

impl HookPolicy {
    /// Whether a call of `tool` (in `toolset`) by `tenant` reaches this hook, given
    /// what the hook's `declaration` says it applies to.
    pub fn applies(
        &self,
        declaration: &Declaration,
        tool: &str,
        toolset: &str,
        tenant: &str,
    ) -> bool {
        if self.tenants.as_ref().is_some_and(|t| !t.contains(tenant)) {
            return false;
        }
        let declared = declaration.hook.as_ref();
        let named = |tools: &[String], toolsets: &[String]| {
            (tools.is_empty() && toolsets.is_empty())
                || tools.iter().any(|t| t == tool)
                || toolsets.iter().any(|t| t == toolset)
        };
        if !declared.is_some_and(|d| named(&d.tools, &d.toolsets)) {
            return false;
        }
        match (&self.tools, &self.toolsets) {
            (None, None) => true,
            (tools, toolsets) => {
                tools.as_ref().is_some_and(|t| t.contains(tool))
                    || toolsets.as_ref().is_some_and(|t| t.contains(toolset))
            }
        }
    }

    /// The hook's grants: `declaration` ∩ this hook's own grants, with the hooks'
    /// default limits ([`HOOK_TIMEOUT_MS`] of at most [`HOOK_MAX_TIMEOUT_MS`],
    /// [`HOOK_MEMORY_MB`]) under what its `limits` set. The terminal is never granted.
    pub fn grants(&self, declaration: &Declaration, operator: &OperatorPolicy) -> EffectiveGrants {
        let limits = LimitPolicy {
            default_timeout_ms: HOOK_TIMEOUT_MS,
            max_timeout_ms: HOOK_MAX_TIMEOUT_MS,
            default_memory_mb: HOOK_MEMORY_MB,
            ..operator.defaults.limits
        };
        let mut own = self.grants.clone();
        own.terminal = Some(false);
        own.keyvalue = Some(None);
        own.inject = Vec::new();
        let alone = OperatorPolicy {
            mounts: operator.mounts.clone(),
            defaults: GrantSet {
                limits,
                ..GrantSet::default()
            },
            tools: BTreeMap::from([(declaration.name.clone(), own)]),
            tenants: BTreeMap::new(),
            terminal: crate::terminal::TerminalSettings::default(),
            hooks: Vec::new(),
        };
        super::effective(declaration, &alone, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(tools: &str, toolsets: &str) -> Declaration {
        Declaration::parse(
            format!("name = \"h\"\n[hook]\ntools = [{tools}]\ntoolsets = [{toolsets}]\n[capabilities]\nenv = [\"X\"]\n")
                .as_bytes(),
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn policy() -> HookPolicy {
        HookPolicy {
            name: "h".into(),
            location: HookLocation::Bundled("h".into()),
            order: 0,
            config: "{}".into(),
            tenants: None,
            tools: None,
            toolsets: None,
            grants: GrantOverride::default(),
            secret_scan: false,
        }
    }

    #[test]
    fn a_hook_sees_what_it_declares_narrowed_by_the_operator_never_widened() {
        let everything = hook("", "");
        let p = policy();
        assert!(p.applies(&everything, "echo", "test", "acme"));
        let terminal_only = hook("\"terminal\"", "");
        assert!(p.applies(&terminal_only, "terminal", "terminal", ""));
        assert!(!p.applies(&terminal_only, "echo", "test", ""));
        let by_set = hook("", "\"web\"");
        assert!(p.applies(&by_set, "web_extract", "web", ""));
        // The operator narrows to tenants and tools; it cannot add a tool the hook
        // does not declare.
        let narrowed = HookPolicy {
            tenants: Some(["acme".to_owned()].into()),
            tools: Some(["echo".to_owned(), "terminal".to_owned()].into()),
            ..policy()
        };
        assert!(narrowed.applies(&everything, "echo", "test", "acme"));
        assert!(!narrowed.applies(&everything, "echo", "test", "globex"));
        assert!(!narrowed.applies(&everything, "read_file", "file", "acme"));
        assert!(!narrowed.applies(&terminal_only, "echo", "test", "acme"));
        // A tool's declaration (no [hook]) never applies.
        let tool = Declaration::nothing("t");
        assert!(!p.applies(&tool, "echo", "test", ""));
    }

    #[test]
    fn a_hook_gets_only_its_own_grants_and_the_hooks_limits() {
        let mut operator = OperatorPolicy::with_workspace("/ws".into());
        operator.defaults.env.insert("X".into());
        let decl = hook("", "");
        let grants = policy().grants(&decl, &operator);
        assert!(grants.env.is_empty(), "not the operator's defaults");
        assert!(grants.unavailable_reason().is_none(), "X is optional");
        assert_eq!(grants.limits.timeout_ms, HOOK_TIMEOUT_MS);
        assert_eq!(grants.limits.memory_bytes, HOOK_MEMORY_MB << 20);
        assert!(!grants.terminal);
        let mut p = policy();
        p.grants.env = Some(["X".to_owned()].into());
        p.grants.terminal = Some(true);
        let grants = p.grants(&decl, &operator);
        assert_eq!(grants.env, ["X"]);
        assert!(!grants.terminal);
    }
}
