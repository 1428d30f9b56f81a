//! `[tenants.ID]`: what each tenant narrows (toolsets, mounts of the operator's, env,
//! network, terminal, key-value store, limits) and whether its tools must be signed.
//! Its `token_sha256` and `limits.calls_per_minute` keys are the server's
//! ([`crate::server`]).

use crate::error::PolicyFileError;
use crate::grants::destinations;
use hermetic_policy::declaration::Access;
use hermetic_policy::trust::TrustPolicy;
use hermetic_policy::{MountGrant, TenantLimits, TenantMount, TenantPolicy};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// `[tenants.ID]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct TenantToml {
    toolsets: Option<Vec<String>>,
    mounts: Option<BTreeMap<String, TenantMountToml>>,
    env: Option<BTreeSet<String>>,
    network: Option<Vec<String>>,
    terminal: Option<bool>,
    keyvalue: Option<bool>,
    #[serde(default)]
    pub(crate) token_sha256: Vec<String>,
    #[serde(default)]
    pub(crate) limits: TenantLimitsToml,
    require_signature: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TenantMountToml {
    access: Access,
    subdir: Option<PathBuf>,
}

/// `[tenants.ID.limits]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct TenantLimitsToml {
    timeout_ms: Option<u64>,
    memory_mb: Option<u64>,
    result_chars: Option<usize>,
    fuel: Option<u64>,
    max_concurrent: Option<usize>,
    pub(crate) calls_per_minute: Option<u32>,
}

/// Every `[tenants.ID]`. A tenant may require signatures where `[trust]` does not
/// (recorded in `trust`), never waive them where it does.
pub(crate) fn tenant_policies(
    raw: BTreeMap<String, TenantToml>,
    mounts: &BTreeMap<String, MountGrant>,
    trust: &mut TrustPolicy,
    invalid: &impl Fn(String) -> PolicyFileError,
) -> Result<BTreeMap<String, TenantPolicy>, PolicyFileError> {
    let mut tenants = BTreeMap::new();
    for (id, mut t) in raw {
        match t.require_signature.take() {
            Some(true) if !trust.require_signature => {
                trust.tenants_requiring.insert(id.clone());
            }
            Some(false) if trust.require_signature => {
                return Err(invalid(format!(
                    "tenants.{id}.require_signature = false: a tenant may only narrow, and [trust] requires signatures"
                )));
            }
            _ => {}
        }
        let tenant = tenant_policy(&id, t, mounts, invalid)?;
        tenants.insert(id, tenant);
    }
    Ok(tenants)
}

/// `[tenants.ID]`: what the tenant narrows; its mounts must be the operator's.
fn tenant_policy(
    id: &str,
    t: TenantToml,
    mounts: &BTreeMap<String, MountGrant>,
    invalid: &impl Fn(String) -> PolicyFileError,
) -> Result<TenantPolicy, PolicyFileError> {
    if id.is_empty() {
        return Err(invalid("a tenant id cannot be empty".into()));
    }
    let network = t
        .network
        .map(|n| destinations(&n).map_err(|e| invalid(format!("tenants.{id}.network: {e}"))))
        .transpose()?;
    let tenant_mounts = match t.mounts {
        None => None,
        Some(ms) => {
            let mut out = BTreeMap::new();
            for (name, m) in ms {
                if !mounts.contains_key(&name) {
                    return Err(invalid(format!(
                        "tenants.{id}.mounts.{name}: no such mount (define it under [mounts.{name}])"
                    )));
                }
                out.insert(
                    name,
                    TenantMount {
                        access: m.access,
                        subdir: m.subdir,
                    },
                );
            }
            Some(out)
        }
    };
    Ok(TenantPolicy {
        toolsets: t.toolsets,
        mounts: tenant_mounts,
        env: t.env,
        network,
        terminal: t.terminal,
        keyvalue: t.keyvalue,
        limits: TenantLimits {
            timeout_ms: t.limits.timeout_ms,
            memory_mb: t.limits.memory_mb,
            result_chars: t.limits.result_chars,
            fuel: t.limits.fuel,
            max_concurrent: t.limits.max_concurrent,
        },
    })
}
