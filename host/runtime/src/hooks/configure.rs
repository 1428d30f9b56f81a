//! Turning the operator's `[hooks.NAME]` into a runnable [`Hook`]: its component's
//! bytes (bundled or a file; an OCI source is the host program's to resolve), the
//! component loaded and checked to be that hook, its grants decided — a hook that
//! needs what it is not granted stops the host at start, since calls must not run
//! without the hooks the operator put in front of them.

use super::Hook;
use super::component::LoadedHook;
use crate::catalog::Catalog;
use crate::component::LoadError;
use crate::policy::hooks::{HookLocation, HookPolicy};
use std::borrow::Cow;
use std::sync::Arc;

/// Why a configured hook cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HookError {
    /// Its component does not load (not a hook component, bad declaration, imports
    /// the host does not give it, …).
    #[error("hooks.{name}: {source}")]
    Load {
        /// The hook.
        name: String,
        /// Why.
        #[source]
        source: LoadError,
    },
    /// It loads but may not run as configured: what to change.
    #[error("hooks.{name}: {reason}")]
    Refused {
        /// The hook.
        name: String,
        /// Why, and what to do.
        reason: String,
    },
}

/// The component bytes of a bundled or file hook.
///
/// # Errors
/// [`HookError`] for an unknown bundled name, an unreadable file, or an OCI source
/// (resolved by the host program from its tool store, not here).
pub fn bytes_of(policy: &HookPolicy) -> Result<Cow<'static, [u8]>, HookError> {
    let refused = |reason: String| HookError::Refused {
        name: policy.name.clone(),
        reason,
    };
    match &policy.location {
        HookLocation::Bundled(name) => crate::bundled::BUNDLED_HOOKS
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, bytes)| Cow::Borrowed(*bytes))
            .ok_or_else(|| refused(format!("no bundled hook {name:?}"))),
        HookLocation::Path(path) => {
            crate::component::read_file(path)
                .map(Cow::Owned)
                .map_err(|source| HookError::Load {
                    name: policy.name.clone(),
                    source,
                })
        }
        HookLocation::Source(source) => Err(refused(format!(
            "{source} is resolved from the tool store by the host program (`hermetic pull --policy` fetches it)"
        ))),
    }
}

/// The hook `policy` configures, from its component's `bytes`.
///
/// # Errors
/// [`HookError`]: the component is not this hook, or it needs what it is not granted.
pub(crate) fn build(
    catalog: &Catalog,
    policy: &HookPolicy,
    bytes: &[u8],
) -> Result<Hook, HookError> {
    let name = &policy.name;
    let refused = |reason: String| HookError::Refused {
        name: name.clone(),
        reason,
    };
    if let (Some(check), HookLocation::Path(path)) = (catalog.file_check(), &policy.location) {
        check(path, bytes).map_err(refused)?;
    }
    let loaded =
        LoadedHook::load(catalog.runtime(), catalog.linkers(), bytes).map_err(|source| {
            HookError::Load {
                name: name.clone(),
                source,
            }
        })?;
    let declaration = &loaded.declaration;
    let grants = policy.grants(declaration, catalog.policy());
    if let Some(reason) = grants.unavailable_reason() {
        return Err(refused(format!(
            "{reason} (grant it under [hooks.{name}]: a hook gets nothing it is not given there)"
        )));
    }
    let scanned = match (declaration.capabilities.secret_scan, policy.secret_scan) {
        (true, true) => Some(Arc::from(
            catalog
                .secrets()
                .values()
                .map(str::to_owned)
                .collect::<Vec<_>>(),
        )),
        (true, false) => {
            return Err(refused(format!(
                "it declares secret_scan (it asks where the host's secrets are in a text): grant it with secret_scan = true under [hooks.{name}], or use another hook"
            )));
        }
        (false, _) => None,
    };
    Ok(Hook {
        loaded,
        policy: policy.clone(),
        grants,
        scanned,
    })
}
