//! `[defaults]` and `[tools.NAME]`: what every tool is granted, and what one tool's
//! table changes — its grants, its component (`source`, and the `reviewed` digest the
//! grants were reviewed for) and its secret bindings (`inject`, [`crate::inject`]).

use crate::error::PolicyFileError;
use crate::inject::{self, InjectToml};
use crate::keyvalue::{KeyValueToml, keyvalue_grant};
use crate::limits::{LimitsToml, limit_override};
use crate::mounts::check_mounts_exist;
use hermetic_policy::network::{Destination, DestinationError};
use hermetic_policy::{ClockPolicy, GrantOverride, GrantSet, MountGrant};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

/// `[defaults]`, `[tools.NAME]` (and a hook's grants) as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct GrantsToml {
    /// Only under `[tools.NAME]`: where the component comes from.
    pub(crate) source: Option<String>,
    /// Only under `[tools.NAME]`: the component digest the grants were reviewed for.
    pub(crate) reviewed: Option<String>,
    /// Only under `[tools.NAME]`: secrets the host adds to requests, by secret name.
    pub(crate) inject: Option<BTreeMap<String, InjectToml>>,
    pub(crate) mounts: Option<BTreeSet<String>>,
    pub(crate) env: Option<BTreeSet<String>>,
    pub(crate) network: Option<Vec<String>>,
    pub(crate) terminal: Option<bool>,
    pub(crate) keyvalue: Option<KeyValueToml>,
    pub(crate) clock: Option<ClockToml>,
    #[serde(default)]
    pub(crate) limits: LimitsToml,
}

/// `clock = "real" | "frozen" | { coarse_ms = N }`.
#[derive(Deserialize)]
#[serde(untagged)]
pub(crate) enum ClockToml {
    Name(String),
    Coarse { coarse_ms: u64 },
}

/// The `[tools.NAME]` tables read: each tool's grants, and the components they name
/// (for the trust policy).
pub(crate) struct ToolGrants {
    /// Tool name → what its table changes.
    pub(crate) grants: BTreeMap<String, GrantOverride>,
    /// Tool name → `source` (an `oci://` reference).
    pub(crate) sources: BTreeMap<String, String>,
    /// Tool name → `reviewed` (the component digest the grants were reviewed for).
    pub(crate) reviewed: BTreeMap<String, String>,
}

/// `[defaults]`: every mount unless it names some; nothing else unless it grants it.
/// A component and secret bindings are one tool's, never defaults.
pub(crate) fn default_grants(
    raw: GrantsToml,
    mounts: &BTreeMap<String, MountGrant>,
    invalid: &impl Fn(String) -> PolicyFileError,
) -> Result<GrantSet, PolicyFileError> {
    if raw.inject.is_some() {
        return Err(invalid(
            "defaults.inject: a secret is bound to one tool's requests: write it under [tools.NAME.inject.SECRET]".into(),
        ));
    }
    if raw.source.is_some() || raw.reviewed.is_some() {
        return Err(invalid(
            "defaults.source and defaults.reviewed name one tool's component: write them under [tools.NAME]".into(),
        ));
    }
    let mut defaults = GrantSet {
        mounts: mounts.keys().cloned().collect(),
        ..GrantSet::default()
    };
    let d = grant_override(raw, invalid)?;
    if let Some(m) = d.mounts {
        defaults.mounts = m;
    }
    defaults.env = d.env.unwrap_or_default();
    defaults.network = d.network.unwrap_or_default();
    defaults.terminal = d.terminal.unwrap_or(false);
    defaults.keyvalue = d.keyvalue.flatten();
    defaults.clock = d.clock.unwrap_or_default();
    defaults.limits = d.limits.apply_to(defaults.limits);
    check_mounts_exist(&defaults.mounts, mounts, "defaults", invalid)?;
    Ok(defaults)
}

/// `[tools.NAME]`: each tool's grants (its mounts the operator's), its `source` an OCI
/// reference and its `reviewed` a component digest.
pub(crate) fn tool_grants(
    raw: BTreeMap<String, GrantsToml>,
    mounts: &BTreeMap<String, MountGrant>,
    invalid: &impl Fn(String) -> PolicyFileError,
) -> Result<ToolGrants, PolicyFileError> {
    let mut tools = ToolGrants {
        grants: BTreeMap::new(),
        sources: BTreeMap::new(),
        reviewed: BTreeMap::new(),
    };
    for (name, mut grants) in raw {
        if let Some(digest) = grants.reviewed.take() {
            let valid = digest.strip_prefix("sha256:").is_some_and(|h| {
                h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            });
            if !valid {
                return Err(invalid(format!(
                    "tools.{name}.reviewed = {digest:?}: write the component's digest, sha256: and 64 lowercase hex digits (`hermetic inspect` shows it)"
                )));
            }
            tools.reviewed.insert(name.clone(), digest);
        }
        if let Some(source) = grants.source.take() {
            if !source.starts_with("oci://") {
                return Err(invalid(format!(
                    "tools.{name}.source = {source:?}: write oci://HOST/REPOSITORY:TAG or oci://HOST/REPOSITORY@sha256:…"
                )));
            }
            tools.sources.insert(name.clone(), source);
        }
        let o = grant_override(grants, invalid)?;
        if let Some(m) = &o.mounts {
            check_mounts_exist(m, mounts, &format!("tools.{name}"), invalid)?;
        }
        tools.grants.insert(name, o);
    }
    Ok(tools)
}

/// What one grants table changes (every key optional: absent keys change nothing).
pub(crate) fn grant_override(
    g: GrantsToml,
    invalid: &impl Fn(String) -> PolicyFileError,
) -> Result<GrantOverride, PolicyFileError> {
    let clock = match g.clock {
        None => None,
        Some(ClockToml::Name(n)) if n == "real" => Some(ClockPolicy::Real),
        Some(ClockToml::Name(n)) if n == "frozen" => Some(ClockPolicy::Frozen),
        Some(ClockToml::Name(n)) => {
            return Err(invalid(format!(
                "clock {n:?}: write \"real\", \"frozen\" or {{ coarse_ms = N }}"
            )));
        }
        Some(ClockToml::Coarse { coarse_ms: 0 }) => {
            return Err(invalid("clock coarse_ms must be positive".into()));
        }
        Some(ClockToml::Coarse { coarse_ms }) => Some(ClockPolicy::Coarse(coarse_ms)),
    };
    let network = g
        .network
        .map(|n| destinations(&n).map_err(|e| invalid(e.to_string())))
        .transpose()?;
    let inject = inject::bindings(g.inject.unwrap_or_default(), invalid)?;
    let limits = limit_override(g.limits, invalid)?;
    let keyvalue = keyvalue_grant(g.keyvalue, invalid)?;
    Ok(GrantOverride {
        inject,
        mounts: g.mounts,
        env: g.env,
        network,
        terminal: g.terminal,
        keyvalue,
        clock,
        limits,
    })
}

/// Network patterns as destinations (`network = [...]` of a grant or a tenant).
pub(crate) fn destinations(patterns: &[String]) -> Result<Vec<Destination>, DestinationError> {
    patterns.iter().map(|p| Destination::parse(p)).collect()
}
