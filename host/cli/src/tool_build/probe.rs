//! Which interfaces the host links into a tool with a given declaration, asked of the
//! host itself: for every interface a tool might import beyond the tool world, a small
//! component that imports it (`wit-component`'s dummy module) is loaded the way every
//! tool is loaded (`Registry::load`: the declaration picks the linker). The imports
//! that load with the declaration's capabilities and not without any are the ones its
//! capabilities link.
//!
//! Why ask rather than read a table: the host's capability → imports mapping is code
//! (each capability's `link`), and wasmtime's linker cannot list what it holds. A table
//! here would be a second copy that could drift from it; the probe cannot.

use super::section;
use super::wit::{self, Resolved};
use anyhow::{Context, Result, bail};
use hermetic::{Declaration, LoadError, Registry, ToolSource};
use wit_component::{ComponentEncoder, StringEncoding};
use wit_parser::{LiftLowerAbi, ManglingAndAbi};

/// The interface ids (`wasi:http/types@0.2.12`, sorted) that the host links into a
/// tool with `declaration` beyond what it links into every tool.
///
/// # Errors
/// A probe component that cannot be built, or a load failure other than a misfit
/// (both bugs of this binary, not of the declaration).
pub(super) fn linked_imports(
    registry: &Registry,
    declaration: &Declaration,
) -> Result<Vec<String>> {
    let base = Resolved::with(&wit::probe_text(&[]))?;
    let candidates = base.candidates(base.world("p0")?);
    let probes = Resolved::with(&wit::probe_text(&candidates))?;
    // Only the capabilities decide what is linked; the rest is a valid baseline.
    let with_capabilities = probe_declaration(Declaration {
        capabilities: declaration.capabilities.clone(),
        ..Declaration::nothing("probe")
    })?;
    let without = probe_declaration(Declaration::nothing("probe"))?;
    let mut linked = Vec::new();
    for (i, candidate) in candidates.iter().enumerate() {
        let component = dummy(&probes, &format!("p{}", i + 1))?;
        if loads(registry, &component, &without, candidate)? {
            continue; // linked into every tool (WASI's own interfaces)
        }
        if loads(registry, &component, &with_capabilities, candidate)? {
            linked.push(candidate.clone());
        }
    }
    linked.sort();
    Ok(linked)
}

/// The declaration's text as the section holds it.
fn probe_declaration(declaration: Declaration) -> Result<String> {
    toml::to_string(&declaration).context("writing a probe declaration (a build bug)")
}

/// A component of world `world` whose functions all trap.
fn dummy(probes: &Resolved, world: &str) -> Result<Vec<u8>> {
    let world = probes.world(world)?;
    let mut module = wit_component::dummy_module(
        &probes.resolve,
        world,
        ManglingAndAbi::Legacy(LiftLowerAbi::Sync),
    );
    wit_component::embed_component_metadata(
        &mut module,
        &probes.resolve,
        world,
        StringEncoding::UTF8,
    )?;
    ComponentEncoder::default()
        .validate(true)
        .module(&module)?
        .encode()
        .context("encoding a probe component (a build bug)")
}

/// Whether `component`, carrying `declaration`, fits the host's linker for it: it
/// either loads or fails past linking (its `schema()` traps, as every dummy does).
fn loads(registry: &Registry, component: &[u8], declaration: &str, iface: &str) -> Result<bool> {
    let component = section::with_declaration(component, declaration)?;
    match registry.load(&component, ToolSource::Bundled(format!("probe {iface}"))) {
        Err(LoadError::Link { .. }) => Ok(false),
        Ok(_) | Err(LoadError::Schema { .. } | LoadError::Instantiate(_)) => Ok(true),
        Err(other) => bail!("probing the host's linker with {iface}: {other} (a build bug)"),
    }
}
