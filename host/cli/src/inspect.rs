//! `hermetic inspect`: a registered tool, a component file or a registry reference —
//! its declaration, schema, grants and review — without running it.

use crate::args::HostArgs;
use crate::host::{build_registry, trust_of};
use anyhow::{Context, Result, bail};
use hermetic::{LoadProblem, Registry, ToolSource};
use std::path::PathBuf;
use std::process::ExitCode;

/// `hermetic inspect`: a registered tool by name, or a `.wasm` file (exit 1 when it
/// does not load, whatever else the report shows).
pub(crate) fn inspect(
    host: &HostArgs,
    target: &str,
    registry_args: &crate::community::RegistryArgs,
) -> Result<ExitCode> {
    let registry = build_registry(host)?;
    let path = std::path::Path::new(target);
    let reference = (!path.exists())
        .then(|| hermetic_distribution::Reference::parse(target).ok())
        .flatten();
    let mut report = if let Some(reference) = reference {
        // A tool in a registry: fetched into the store (signature checked as the
        // policy says), never run.
        let trust = trust_of(host)?;
        let (bytes, pinned) = crate::community::fetch_for_inspection(
            &reference,
            trust.as_ref(),
            host.store.as_deref(),
            host.tenant(),
            registry_args,
        )?;
        inspect_bytes(
            &registry,
            &bytes,
            ToolSource::Oci(format!("oci://{pinned}")),
            host.tenant(),
        )?
    } else if target.ends_with(".wasm") || target.contains('/') {
        if !path.exists() {
            bail!("{target}: no such file");
        }
        inspect_file(&registry, path.to_path_buf(), host.tenant())?
    } else {
        match registry.inspect_for(target, host.tenant()) {
            Some(report) => report,
            None => crate::community::skipped_report(
                &registry,
                host.policy.as_deref(),
                host.store.as_deref(),
                host.tenant(),
                target,
            )?
            .ok_or_else(|| anyhow::anyhow!("no tool named {target:?} (see `hermetic tools`)"))?,
        }
    };
    if let Some(hex) = report["sha256"].as_str() {
        // What `[tools.NAME] reviewed` takes.
        report["component"] = serde_json::Value::String(format!("sha256:{hex}"));
    }
    // Whether the policy's review withholds this version, and how it differs from
    // the one `reviewed` names.
    let trust = trust_of(host)?;
    crate::community::add_review(
        &mut report,
        &registry,
        host.policy.as_deref().zip(trust.as_ref()),
        host.store.as_deref(),
    )?;
    out!("{}", serde_json::to_string_pretty(&report)?);
    Ok(if report["loads"] == false {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Inspects a component file without registering it: its declaration (read without
/// running it), whether it loads, and what it would be granted.
pub(crate) fn inspect_file(
    registry: &Registry,
    path: PathBuf,
    tenant: &str,
) -> Result<serde_json::Value> {
    let bytes = hermetic::component::read_file(&path)
        .with_context(|| format!("reading {}", path.display()))?;
    inspect_bytes(registry, &bytes, ToolSource::File(path), tenant)
}

/// A component's declaration, schema and the grants it would get, and — when a tool
/// of its name is registered — what it asks for beyond that granted version. Runs no
/// guest code but `schema` (as loading does).
pub(crate) fn inspect_bytes(
    registry: &Registry,
    bytes: &[u8],
    source: ToolSource,
    tenant: &str,
) -> Result<serde_json::Value> {
    let label = source.to_string();
    let declaration = match hermetic::component::read_declaration(bytes) {
        Ok(d) => d,
        Err(e) => {
            return Ok(serde_json::json!({
                "file": label,
                "loads": false,
                "error": LoadProblem::new(label.clone(), &e).reason,
            }));
        }
    };
    let granted = registry.declaration_for(&declaration.name, tenant);
    let new_against_granted = granted.as_ref().map(|g| declaration.asks_beyond(g));
    let tenant_policy = registry.policy().tenants.get(tenant);
    let grants = hermetic::policy::effective(
        &declaration,
        registry.policy(),
        tenant_policy.map(|t| (tenant, t)),
    );
    let (loads, error, schema) = match registry.load(bytes, source) {
        Ok(tool) => (true, None, Some(tool.schema)),
        Err(e) => (
            false,
            Some(LoadProblem::new(label.clone(), &e).reason),
            None,
        ),
    };
    Ok(serde_json::json!({
        "file": label,
        "component": hermetic_distribution::Digest::of(bytes).to_string(),
        "new_against_granted": new_against_granted,
        "loads": loads,
        "error": error,
        "declaration": declaration,
        "operator": registry.policy().grants_for(&declaration.name),
        "tenant_policy": tenant_policy,
        "grants": grants,
        "schema": schema,
        "available": grants.unavailable_reason().is_none(),
        "reason": grants.unavailable_reason(),
    }))
}
