//! Loading the tools a policy names by `source` from the tool store at start: no
//! network. A tool that cannot be loaded — not pulled, unsigned, signed for another
//! repository, tampered with, named otherwise — is reported and skipped, as the
//! registry does with a broken component from a directory, and the rest are served;
//! `[trust] strict = true` (or `--strict`) makes it stop the start instead. Every
//! reason says what to do.

use super::review::{Candidate, Reviewer};
use anyhow::{Result, anyhow, bail};
use hermetic::component::LoadedTool;
use hermetic::policy::trust::TrustPolicy;
use hermetic::{LoadProblem, Registry, ToolSource, ToolStatus};
use hermetic_distribution::lock::Lock;
use hermetic_distribution::{DistributionError, Reference, Store, StoreError, Trust};
use std::path::Path;

/// Loads what the policy names by source; `strict`: the first tool that cannot be
/// loaded stops the start.
pub(crate) struct SourceLoader<'a> {
    registry: &'a Registry,
    policy_path: &'a Path,
    trust_policy: &'a TrustPolicy,
    store: Store,
    store_dir: &'a Path,
    /// The pull that fetches what is missing, for the hints.
    pull: String,
    lock: Lock,
    trust: Trust,
}

impl<'a> SourceLoader<'a> {
    /// Opens the store (cleaning what dead pulls left) and reads the lock file.
    ///
    /// # Errors
    /// The operator's own set-up: a store that cannot be opened, a lock file that is
    /// not one, a trusted key that does not parse. These stop the start in any mode.
    pub(crate) fn new(
        registry: &'a Registry,
        policy_path: &'a Path,
        trust_policy: &'a TrustPolicy,
        store_dir: &'a Path,
        require_signature: bool,
    ) -> Result<Self> {
        Ok(Self {
            registry,
            policy_path,
            trust_policy,
            store: Store::open(store_dir)?,
            store_dir,
            pull: super::pull_hint(policy_path, trust_policy, store_dir, None),
            lock: Lock::load(&Lock::path_beside(policy_path))?,
            trust: Trust {
                keys: super::trusted_keys(&trust_policy.keys)?,
                require_signature,
            },
        })
    }

    /// Tool `name` from `source`, loaded (its schema read) with its review decided,
    /// not registered.
    ///
    /// # Errors
    /// Why it cannot be loaded, with what to do.
    pub(crate) fn load(&self, name: &str, source: &str) -> Result<LoadedTool> {
        let pull = &self.pull;
        let reference = Reference::parse(source)?;
        let pinned = match &reference.digest {
            Some(_) => reference.clone(),
            None => self.lock.pinned(name, source).ok_or_else(|| {
                anyhow!(
                    "{source} is a tag that is not in {}: run {pull} to resolve and fetch it",
                    Lock::path_beside(self.policy_path).display(),
                )
            })?,
        };
        // What loads is the source's own repository's, whatever the lock says: a pin
        // of another repository would bring another tool under these grants.
        if !hermetic_distribution::lock::pins(&reference, &pinned) {
            bail!("oci://{pinned} is not in the registry and repository of {source}: run {pull}");
        }
        let stored = hermetic_distribution::stored_component(&pinned, &self.store, &self.trust)
            .map_err(|e| match e {
                DistributionError::NotPulled { reference, store } => anyhow!(
                    "oci://{reference} is not in the tool store {}: run {pull} on a machine that reaches the registry",
                    store.display()
                ),
                DistributionError::Store(e @ StoreError::Mismatch { .. }) => {
                    anyhow!("{e}: run {pull}")
                }
                other => anyhow!(other),
            })?;
        let mut tool = self
            .registry
            .load(&stored.bytes, ToolSource::Oci(format!("oci://{pinned}")))
            .map_err(|e| anyhow!("oci://{pinned}: {e}"))?;
        let own = tool.schema["name"].as_str().unwrap_or_default();
        if own != name {
            bail!(
                "oci://{pinned} is the tool {own:?}, not {name:?}: name the policy entry after the tool"
            );
        }
        tool.withheld = self.reviewer().withheld(&Candidate {
            name,
            source: &reference,
            component: &stored.component,
            declaration: &tool.declaration,
            schema: &tool.schema,
            statement: stored.verified.as_ref().map(|v| &v.statement),
        });
        Ok(tool)
    }

    /// What decides whether a loaded version gets the grants.
    fn reviewer(&self) -> Reviewer<'_> {
        Reviewer {
            registry: self.registry,
            trust: self.trust_policy,
            store: &self.store,
            keys: &self.trust.keys,
            signatures_required: self.trust.require_signature,
            policy_path: self.policy_path,
            store_dir: self.store_dir,
        }
    }

    /// Loads and registers tool `name`.
    fn add(&self, name: &str, source: &str) -> Result<()> {
        let tool = self.load(name, source)?;
        if let Some(reason) = &tool.withheld {
            eprintln!("warning: {reason}");
        }
        self.registry.register(tool)?;
        Ok(())
    }
}

/// Loads and registers every tool the policy names by source; what cannot be loaded
/// comes back as a [`LoadProblem`] (source `tools.NAME (SOURCE)`) for the caller to
/// report, the rest are registered. `strict`: the first one stops the start instead.
///
/// # Errors
/// The set-up errors of [`SourceLoader::new`]; with `strict`, the first tool that
/// cannot be loaded.
pub fn load_sources(
    registry: &Registry,
    policy_path: &Path,
    trust_policy: &TrustPolicy,
    store_dir: &Path,
    require_signature: bool,
    strict: bool,
) -> Result<Vec<LoadProblem>> {
    if trust_policy.sources.is_empty() {
        return Ok(Vec::new());
    }
    let loader = SourceLoader::new(
        registry,
        policy_path,
        trust_policy,
        store_dir,
        require_signature,
    )?;
    let mut problems = Vec::new();
    for (name, source) in &trust_policy.sources {
        if let Err(e) = loader.add(name, source) {
            if strict {
                bail!(
                    "tools.{name}: {e:#} (strict start-up: [trust] strict or --strict; without it the tool would be listed unavailable and the rest served)"
                );
            }
            problems.push(LoadProblem::new(
                format!("tools.{name} ({source})"),
                &format!("{e:#}"),
            ));
        }
    }
    Ok(problems)
}

/// The tools the policy names by source that are not registered, each unavailable
/// with why (what `hermetic tools` and `inspect` show for them). Loads each again
/// (the reason is not kept from the start): only the broken ones, so a start that
/// loaded everything pays nothing.
///
/// # Errors
/// The set-up errors of [`SourceLoader::new`].
pub fn skipped_tools(
    registry: &Registry,
    policy_path: &Path,
    trust_policy: &TrustPolicy,
    store_dir: &Path,
    require_signature: bool,
) -> Result<Vec<ToolStatus>> {
    let sources = registry.sources();
    let missing: Vec<(&String, &String)> = trust_policy
        .sources
        .iter()
        .filter(|(name, _)| !matches!(sources.get(*name), Some(ToolSource::Oci(_))))
        .collect();
    if missing.is_empty() {
        return Ok(Vec::new());
    }
    let loader = SourceLoader::new(
        registry,
        policy_path,
        trust_policy,
        store_dir,
        require_signature,
    )?;
    Ok(missing
        .into_iter()
        .map(|(name, source)| {
            let reason = match loader.load(name, source) {
                // It loads now but was not registered at start (no other tool can
                // hold its name: see `reserve`): the store or the lock changed since.
                Ok(_) => "not registered at start (see the warning it printed); it loads now: restart to serve it".to_owned(),
                Err(e) => LoadProblem::new(name.clone(), &format!("{e:#}")).reason,
            };
            ToolStatus {
                name: name.clone(),
                toolset: String::new(),
                emoji: None,
                description: String::new(),
                available: false,
                reason: Some(reason),
                source: source.clone(),
            }
        })
        .collect())
}
