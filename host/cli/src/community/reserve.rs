//! A name the policy gives a tool by `source` is that tool's, loaded or not: a bundled
//! tool or a `--tools-dir` file of the same name is skipped (reported as such), never
//! registered under it. Otherwise a community tool that could not be loaded — not
//! pulled, withheld, broken — would hand its name, and the `[tools.NAME]` grants
//! written for it, to whatever else declares that name.

use hermetic::policy::trust::TrustPolicy;
use hermetic::{FileCheck, LoadProblem, Registry, ToolSource};
use std::path::Path;
use std::sync::Arc;

/// Why a tool called `name` from elsewhere than its source is not loaded.
fn reserved(name: &str, source: &str) -> String {
    format!(
        "the policy names the tool {name:?} by source ([tools.{name}] source = \"{source}\"): that name and its grants are that tool's, so no bundled or --tools-dir tool of that name is loaded (rename this one, or drop the source)"
    )
}

/// The check every component file passes: refused when it is a tool (not a hook) of
/// a name the policy gives a source, then `inner` (the signature check, when one is
/// required). `None` when the policy names nothing by source and there is no `inner`.
pub fn file_check(trust: &TrustPolicy, inner: Option<FileCheck>) -> Option<FileCheck> {
    if trust.sources.is_empty() {
        return inner;
    }
    let sources = trust.sources.clone();
    Some(Arc::new(move |path: &Path, bytes: &[u8]| {
        // A file whose declaration does not read fails its load with that reason.
        if let Ok(declaration) = hermetic::component::read_declaration(bytes)
            && declaration.hook.is_none()
            && let Some(source) = sources.get(&declaration.name)
        {
            return Err(reserved(&declaration.name, source));
        }
        inner.as_ref().map_or(Ok(()), |check| check(path, bytes))
    }))
}

/// Removes every registered tool that holds a name the policy gives a source but
/// does not come from one (a bundled tool: files are refused by [`file_check`]), each
/// reported as skipped. Run before the sources are loaded.
pub fn release_source_names(registry: &Registry, trust: &TrustPolicy) -> Vec<LoadProblem> {
    registry
        .sources()
        .into_iter()
        .filter(|(_, from)| !matches!(from, ToolSource::Oci(_)))
        .filter_map(|(name, from)| {
            let source = trust.sources.get(&name)?;
            registry.deregister(&name);
            Some(LoadProblem {
                source: from.to_string(),
                reason: reserved(&name, source),
            })
        })
        .collect()
}
