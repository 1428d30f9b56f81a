//! `[hooks.NAME]`: the hooks the operator turns on — where each comes from (a file, an
//! OCI reference, or bundled), when it runs among the others, what it sees and what it
//! is granted.

use crate::error::PolicyFileError;
use crate::grants::{GrantsToml, grant_override};
use crate::limits::LimitsToml;
use crate::mounts::check_mounts_exist;
use hermetic_policy::hooks::{HookLocation, HookPolicy};
use hermetic_policy::{MountGrant, TenantPolicy};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// `[hooks.NAME]`: a hook the operator turns on.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HookToml {
    /// A component file (relative to the policy file).
    path: Option<PathBuf>,
    /// An OCI reference, pulled like a tool's `source`.
    source: Option<String>,
    /// When it runs among the hooks: lower first.
    order: Option<i64>,
    /// Settings handed to the hook.
    #[serde(default)]
    config: toml::Table,
    tenants: Option<BTreeSet<String>>,
    tools: Option<BTreeSet<String>>,
    toolsets: Option<BTreeSet<String>>,
    #[serde(default)]
    secret_scan: bool,
    mounts: Option<BTreeSet<String>>,
    env: Option<BTreeSet<String>>,
    network: Option<Vec<String>>,
    #[serde(default)]
    limits: LimitsToml,
}

/// The bundled hooks, by name (their components are embedded in the binary).
pub const BUNDLED_HOOKS: &[&str] = &["secret_scan"];

/// `[hooks.NAME]` tables, in the order the hooks run.
pub(crate) fn hook_policies(
    raw: BTreeMap<String, HookToml>,
    mounts: &BTreeMap<String, MountGrant>,
    tenants: &BTreeMap<String, TenantPolicy>,
    file_dir: &Path,
    invalid: &impl Fn(String) -> PolicyFileError,
) -> Result<Vec<HookPolicy>, PolicyFileError> {
    let mut hooks = Vec::new();
    for (name, h) in raw {
        let at = format!("hooks.{name}");
        let location = match (h.path, h.source) {
            (Some(path), None) => HookLocation::Path(file_dir.join(path)),
            (None, Some(source)) if source.starts_with("oci://") => HookLocation::Source(source),
            (None, Some(source)) => {
                return Err(invalid(format!(
                    "{at}.source = {source:?}: write oci://HOST/REPOSITORY:TAG or oci://HOST/REPOSITORY@sha256:…"
                )));
            }
            (None, None) if BUNDLED_HOOKS.contains(&name.as_str()) => {
                HookLocation::Bundled(name.clone())
            }
            (None, None) => {
                return Err(invalid(format!(
                    "{at}: say where the hook is: path = \"FILE.wasm\" or source = \"oci://…\" (bundled hooks: {})",
                    BUNDLED_HOOKS.join(", ")
                )));
            }
            (Some(_), Some(_)) => {
                return Err(invalid(format!("{at}: path or source, not both")));
            }
        };
        let Some(order) = h.order else {
            return Err(invalid(format!(
                "{at}: say when it runs among the hooks: order = N (lower first)"
            )));
        };
        if let Some(unknown) = h
            .tenants
            .iter()
            .flatten()
            .find(|t| !tenants.contains_key(*t))
        {
            return Err(invalid(format!(
                "{at}.tenants: no tenant {unknown:?} in [tenants]"
            )));
        }
        if let Some(m) = &h.mounts {
            check_mounts_exist(m, mounts, &at, invalid)?;
        }
        let config =
            serde_json::to_string(&h.config).map_err(|e| invalid(format!("{at}.config: {e}")))?;
        let grants = grant_override(
            GrantsToml {
                mounts: h.mounts,
                env: h.env,
                network: h.network,
                limits: h.limits,
                ..GrantsToml::default()
            },
            invalid,
        )
        .map_err(|e| match e {
            PolicyFileError::Invalid { path, reason } => PolicyFileError::Invalid {
                path,
                reason: format!("{at}: {reason}"),
            },
            other => other,
        })?;
        hooks.push(HookPolicy {
            name,
            location,
            order,
            config,
            tenants: h.tenants,
            tools: h.tools,
            toolsets: h.toolsets,
            grants,
            secret_scan: h.secret_scan,
        });
    }
    hooks.sort_by(|a, b| a.order.cmp(&b.order).then_with(|| a.name.cmp(&b.name)));
    Ok(hooks)
}

/// The hook components `hooks` load from files: what the host trusts at its next
/// start, so no terminal command may name them.
pub(crate) fn hook_files(hooks: &[HookPolicy]) -> impl Iterator<Item = PathBuf> + '_ {
    hooks.iter().filter_map(|h| match &h.location {
        HookLocation::Path(p) => Some(p.clone()),
        _ => None,
    })
}
