//! `hermetic pull --policy FILE`: every tool the policy names by a tag, resolved,
//! fetched and written to `hermetic.lock` — unless the version the tag now names may
//! be a rollback. Each tool is decided on its own: one refused leaves its lock entry
//! as it was and the others are updated; the command then exits non-zero.

use super::review::older;
use anyhow::{Result, bail};
use hermetic::policy::trust::TrustPolicy;
use hermetic_distribution::lock::{Lock, Locked};
use hermetic_distribution::{ClientOptions, Digest, Pulled, Reference, Statement, Store, Trust};
use std::path::Path;

/// One `pull --policy`: what every tool's update reads.
pub(crate) struct Update<'a> {
    /// The policy file.
    pub policy_path: &'a Path,
    /// Its `[trust]` and sources.
    pub trust_policy: &'a TrustPolicy,
    /// The tool store.
    pub store: &'a Store,
    /// Its directory (for the hints).
    pub store_dir: &'a Path,
    /// What is trusted.
    pub trust: &'a Trust,
    /// How the registries are reached (to fetch a locked or reviewed version's
    /// statement this store lacks).
    pub options: &'a ClientOptions,
    /// `--allow-older`: the operator goes back to the version `reviewed` names on
    /// purpose.
    pub allow_older: bool,
}

impl Update<'_> {
    /// Pulls every source, updates the lock file with each tag that may move, and
    /// says which may not.
    ///
    /// # Errors
    /// The lock file cannot be read or written; one or more tools were not updated
    /// (each said why on stderr, the others are in the lock file).
    pub(crate) fn run(&self, pull: impl Fn(&Reference) -> Result<Pulled>) -> Result<()> {
        let lock_path = Lock::path_beside(self.policy_path);
        let mut lock = Lock::load(&lock_path)?;
        let before = lock.clone();
        let mut refused = Vec::new();
        for (name, source) in &self.trust_policy.sources {
            match self.one(name, source, &lock, &pull) {
                Ok(Some(locked)) => {
                    let previous = lock.tools.insert(name.clone(), locked);
                    if let Some(previous) = previous
                        && previous.pinned != lock.tools[name].pinned
                    {
                        eprintln!(
                            "  {name}: {source} moved to a new digest (was {})",
                            previous.pinned
                        );
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    eprintln!("error: tools.{name}: {e:#}");
                    refused.push(name.as_str());
                }
            }
        }
        lock.tools
            .retain(|name, _| self.trust_policy.sources.contains_key(name));
        // Unchanged, it is not written: a refused update leaves the file as it was,
        // byte for byte.
        if lock != before || !lock_path.exists() && refused.is_empty() {
            lock.save(&lock_path)?;
            eprintln!("wrote {}", lock_path.display());
        }
        if !refused.is_empty() {
            bail!(
                "not updated: {} (each says why above); their entries in {} are left as they were, the other tools are updated",
                refused
                    .iter()
                    .map(|n| format!("tools.{n}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                lock_path.display()
            );
        }
        Ok(())
    }

    /// Pulls tool `name`'s `source`; its new lock entry when the source is a tag.
    fn one(
        &self,
        name: &str,
        source: &str,
        lock: &Lock,
        pull: &impl Fn(&Reference) -> Result<Pulled>,
    ) -> Result<Option<Locked>> {
        let reference = Reference::parse(source)?;
        let pulled = pull(&reference)?;
        if reference.digest.is_some() {
            return Ok(None);
        }
        if let Err(why) = self.rollback(name, &reference, source, &pulled, lock) {
            bail!(
                "{source} now names {} ({why}): refused, and {} is left as it was for it — a tag moved back to an older version is how a known-bad version returns",
                pulled.component,
                Lock::path_beside(self.policy_path).display(),
            );
        }
        Ok(Some(Locked {
            source: source.to_owned(),
            pinned: format!("oci://{}", pulled.pinned),
        }))
    }

    /// Whether the version a tag now names (`pulled`) may replace the locked one and
    /// stand in for the reviewed one: not older than either by the signed statements
    /// (version, then creation time) — and when either side's statement is missing,
    /// or nothing orders the two, it may not (rollback protection fails closed). The
    /// version `reviewed` names may be older than the locked one only with
    /// `--allow-older`. Without signatures there is no statement to go by: rollback
    /// protection needs them.
    fn rollback(
        &self,
        name: &str,
        source: &Reference,
        source_text: &str,
        pulled: &Pulled,
        lock: &Lock,
    ) -> Result<(), String> {
        let Some(now) = pulled.verified.as_ref().map(|v| &v.statement) else {
            return Ok(());
        };
        let component = pulled.component.to_string();
        let reviewed = self.trust_policy.reviewed.get(name);
        let is_reviewed = reviewed.is_some_and(|r| *r == component);
        let go_back = if is_reviewed {
            format!(
                "to go back to it on purpose, pull again with --allow-older ([tools.{name}] reviewed names it)"
            )
        } else {
            format!(
                "to go back to it on purpose, review it, set [tools.{name}] reviewed = \"{component}\", then pull again with --allow-older"
            )
        };
        let mut problems = Vec::new();
        if let Some(locked) = lock.pinned(name, source_text)
            && locked.digest != pulled.pinned.digest
        {
            match self.locked_statement(&locked) {
                Some(then) if then.digest == pulled.component => {}
                Some(then) => {
                    warn_if_made_before(name, now, &then, "locked");
                    if let Some(why) = older(now, &then, "locked") {
                        problems.push(why);
                    }
                }
                None => problems.push(format!(
                    "{}: cannot tell whether it is older than the locked oci://{locked}: no statement a trusted key signed about that version is in the tool store, and it could not be fetched (run {})",
                    now.describe(),
                    super::pull_hint(
                        self.policy_path,
                        self.trust_policy,
                        self.store_dir,
                        Some(&format!("oci://{locked}"))
                    )
                )),
            }
        }
        if is_reviewed {
            if !problems.is_empty() && !self.allow_older {
                return Err(format!("{}; {go_back}", problems.join("; ")));
            }
            for why in &problems {
                eprintln!(
                    "warning: tools.{name}: going back to the reviewed {component} (--allow-older): {why}"
                );
            }
            return Ok(());
        }
        if let Some(reviewed) = reviewed {
            match self.reviewed_statement(source, reviewed) {
                Ok(then) => {
                    warn_if_made_before(name, now, &then, "reviewed");
                    if let Some(why) = older(now, &then, "reviewed") {
                        problems.push(why);
                    }
                }
                Err(why) => problems.push(format!(
                    "{}: cannot tell whether it is older than the reviewed {reviewed}: {why}",
                    now.describe()
                )),
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!("{}; {go_back}", problems.join("; ")))
        }
    }

    /// The statement of the locked version: from the store, else fetched (a fresh
    /// machine with a committed lock file, or a store filled without the policy's
    /// keys) — this command reaches the registry anyway.
    fn locked_statement(&self, locked: &Reference) -> Option<Statement> {
        let stored = || {
            hermetic_distribution::stored_statement(locked, self.store, &self.trust.keys)
                .map(|(_, statement)| statement)
        };
        stored().or_else(|| {
            eprintln!("  fetching the locked oci://{locked} to compare with …");
            hermetic_distribution::pull(locked, self.store, self.trust, self.options).ok()?;
            stored()
        })
    }

    /// The statement a trusted key signed about the reviewed component `reviewed` as
    /// published under `source`'s repository: from the store, else fetched by the
    /// manifest the store holds for it. `Err`: why there is none, with what to run.
    fn reviewed_statement(&self, source: &Reference, reviewed: &str) -> Result<Statement, String> {
        let digest = Digest::parse(reviewed).map_err(|e| format!("it is not a digest ({e})"))?;
        let stored = || {
            hermetic_distribution::component_statement(
                &digest,
                &source.repository,
                self.store,
                &self.trust.keys,
            )
        };
        if let Some(statement) = stored() {
            return Ok(statement);
        }
        let repository = format!("oci://{}/{}", source.registry, source.repository);
        let hint = |reference: &str| {
            super::pull_hint(
                self.policy_path,
                self.trust_policy,
                self.store_dir,
                Some(reference),
            )
        };
        let Some(manifest) = hermetic_distribution::stored_manifests_of(self.store, &digest)
            .into_iter()
            .next()
        else {
            return Err(format!(
                "no statement a trusted key signed about it is in the tool store (run {} with the manifest digest `hermetic pull` printed for the version you reviewed)",
                hint(&format!("{repository}@sha256:…"))
            ));
        };
        let pinned =
            Reference::parse(&format!("{repository}@{manifest}")).map_err(|e| e.to_string())?;
        eprintln!("  fetching the reviewed oci://{pinned}'s signatures to compare with …");
        let fetched = hermetic_distribution::pull(&pinned, self.store, self.trust, self.options);
        stored().ok_or_else(|| {
            format!(
                "no statement a trusted key signed about it as {} is in the tool store{} (run {})",
                source.repository,
                fetched
                    .err()
                    .map(|e| format!(", nor could one be fetched: {e}"))
                    .unwrap_or_default(),
                hint(&format!("oci://{pinned}"))
            )
        })
    }
}

/// A newer version by number made before the one it replaces: allowed (the version
/// decides), said.
fn warn_if_made_before(name: &str, now: &Statement, then: &Statement, label: &str) {
    if now.newer_but_made_before(then) {
        eprintln!(
            "warning: tools.{name}: {} is a newer version than the {label} {} ({}) but was made before it: a backport released later, or a version number raised on an old build — check it is the release you expect",
            now.describe(),
            then.digest,
            then.describe()
        );
    }
}
