//! What a review grants: the operator's grants are for the version `[tools.NAME]
//! reviewed` names (else the one the source pins by digest). Another version gets
//! them only when it means the same (`hermetic_policy::review`: name, toolset,
//! limits, schema…), asks for nothing more, and — when signatures are required — is
//! known not to be older, by its signed statement, than the reviewed one. Start-up
//! ([`Reviewer::withheld`]) and `hermetic inspect` ([`Reviewer::report`]) decide with
//! the same function.

use hermetic::policy::Declaration;
use hermetic::policy::review::{Meaning, Review, compare};
use hermetic::policy::trust::TrustPolicy;
use hermetic::{Registry, ToolSource};
use hermetic_distribution::artifact::{MAX_COMPONENT_BYTES, WasmManifest};
use hermetic_distribution::{Digest, Reference, Statement, Store, StoreError, TrustedKeys};
use serde_json::{Value, json};
use std::cmp::Ordering;
use std::path::Path;

/// The version the operator reviewed, read back from the store.
pub(crate) struct ReviewedVersion {
    /// Its digest.
    pub digest: Digest,
    /// What it declares.
    pub declaration: Declaration,
    /// What its `schema()` returned.
    pub schema: Value,
    /// What a trusted key signed about it, when the store holds such a signature.
    pub statement: Option<Statement>,
}

/// The facts about the version being loaded that a review looks at.
pub(crate) struct Candidate<'a> {
    /// The policy's name for the tool.
    pub name: &'a str,
    /// The policy's source for it (its registry and repository are where the
    /// reviewed version's statement is looked up).
    pub source: &'a Reference,
    /// Its component digest.
    pub component: &'a Digest,
    /// What it declares.
    pub declaration: &'a Declaration,
    /// What its `schema()` returned.
    pub schema: &'a Value,
    /// What a trusted key signed about it (when signatures are required).
    pub statement: Option<&'a Statement>,
}

/// Everything a review decision reads: the policy, the store and the keys, and where
/// the policy and store are (for the hints).
pub(crate) struct Reviewer<'a> {
    /// Loads the reviewed version to read its schema (nothing granted).
    pub registry: &'a Registry,
    /// The policy's `[trust]` and sources.
    pub trust: &'a TrustPolicy,
    /// The tool store.
    pub store: &'a Store,
    /// The trusted keys.
    pub keys: &'a TrustedKeys,
    /// Whether signatures are required: then a version whose age against the
    /// reviewed one cannot be established is withheld (rollback protection fails
    /// closed).
    pub signatures_required: bool,
    /// The policy file (for the hints).
    pub policy_path: &'a Path,
    /// The store's directory (for the hints).
    pub store_dir: &'a Path,
}

impl Reviewer<'_> {
    /// `hermetic pull --policy FILE [REF]`.
    fn pull_hint(&self, reference: Option<&str>) -> String {
        super::pull_hint(self.policy_path, self.trust, self.store_dir, reference)
    }

    /// The command that brings the reviewed `digest` of `source`'s repository into the
    /// store with its signed statement: its manifest, when the store has one, pulled
    /// by digest with the policy's keys.
    fn pull_reviewed_hint(&self, source: &Reference, digest: &Digest) -> String {
        let repository = format!("oci://{}/{}", source.registry, source.repository);
        match hermetic_distribution::stored_manifests_of(self.store, digest).first() {
            Some(manifest) => self.pull_hint(Some(&format!("{repository}@{manifest}"))),
            None => format!(
                "{} with the manifest digest `hermetic pull` printed for the version you reviewed",
                self.pull_hint(Some(&format!("{repository}@sha256:…")))
            ),
        }
    }

    /// The reviewed version `digest` of the tool `source` names: its bytes from the
    /// store (checked against the digest: exactly what was reviewed, so no signature
    /// is needed to compare with it), loaded to read its schema (as every load does,
    /// with nothing granted), and its statement as published under `source`'s
    /// repository. `Err` says why it cannot be compared with, as the end of a
    /// sentence about it.
    pub(crate) fn reviewed_version(
        &self,
        source: &Reference,
        digest: &str,
    ) -> Result<ReviewedVersion, String> {
        let digest = Digest::parse(digest).map_err(|e| format!("which is not a digest ({e})"))?;
        let bytes = self
            .store
            .read(&digest, MAX_COMPONENT_BYTES)
            .map_err(|e| match e {
                StoreError::Missing { .. } => format!(
                    "which is not in the tool store to compare with (run {})",
                    self.pull_reviewed_hint(source, &digest)
                ),
                other => format!("which cannot be read from the tool store ({other})"),
            })?;
        if let Ok(manifest) = WasmManifest::parse(&bytes) {
            return Err(format!(
                "which is a manifest's digest (what `hermetic pull` prints), not a component's: `reviewed` takes the component digest, here reviewed = \"{}\" (`hermetic inspect` prints it as `component`)",
                manifest.component.digest
            ));
        }
        let tool = self
            .registry
            .load(&bytes, ToolSource::Oci(format!("reviewed {digest}")))
            .map_err(|e| format!("which does not load to compare with ({e})"))?;
        let statement = hermetic_distribution::component_statement(
            &digest,
            &source.repository,
            self.store,
            self.keys,
        );
        Ok(ReviewedVersion {
            digest,
            declaration: tool.declaration,
            schema: tool.schema,
            statement,
        })
    }

    /// Why the grants are withheld from `candidate`, if they are.
    pub(crate) fn withheld(&self, candidate: &Candidate<'_>) -> Option<String> {
        let (name, component) = (candidate.name, candidate.component);
        let fix = format!(
            "review it (`hermetic inspect {name}` shows each difference) and set [tools.{name}] reviewed = \"{component}\""
        );
        let reviewed = match self.trust.reviewed.get(name) {
            Some(r) => r,
            None if candidate.source.digest.is_some() => return None,
            None => {
                return Some(format!(
                    "tools.{name}: the source is a tag, and no version was reviewed for its grants: {fix}"
                ));
            }
        };
        if *reviewed == component.to_string() {
            return None;
        }
        let old = match self.reviewed_version(candidate.source, reviewed) {
            Ok(old) => old,
            Err(why) => {
                return Some(format!(
                    "tools.{name}: version {component} is not the reviewed {reviewed}, {why}: {fix}"
                ));
            }
        };
        if let Some(why) = self.rollback(candidate, &old) {
            return Some(format!("tools.{name}: version {component} {why}: {fix}"));
        }
        let review = differences(&old, candidate.declaration, candidate.schema);
        if !review.withholds() {
            return None;
        }
        let mut what = Vec::new();
        let more = candidate.declaration.asks_beyond(&old.declaration);
        if !more.is_empty() {
            what.push(format!("asks for {}", more.join(", ")));
        }
        let changed = review.summary();
        if !changed.is_empty() {
            what.push(format!("differs from the reviewed {reviewed} in {changed}"));
        }
        Some(format!(
            "tools.{name}: version {component} {} (not granted for this digest): {fix}",
            what.join(" and ")
        ))
    }

    /// Why `candidate` may be a rollback from the reviewed `old`, when signatures are
    /// required: older by the signed statements, or no way to tell (a statement
    /// missing on either side, or nothing in them that orders the two).
    fn rollback(&self, candidate: &Candidate<'_>, old: &ReviewedVersion) -> Option<String> {
        if !self.signatures_required {
            return None;
        }
        match (candidate.statement, &old.statement) {
            (Some(now), Some(then)) => older(now, then, "reviewed").map(|why| {
                format!(
                    "({why}): an older version is not granted, nor one that cannot be told from one (a rollback)"
                )
            }),
            (None, _) => Some(format!(
                "carries no statement signed by a trusted key, so nothing tells whether it is older than the reviewed {}: not granted (a rollback cannot be ruled out)",
                old.digest
            )),
            (Some(now), None) => Some(format!(
                "({}): cannot tell whether it is older than the reviewed {}: no statement a trusted key signed about that version as {} is in the tool store (run {}), so it is not granted (a rollback cannot be ruled out)",
                now.describe(),
                old.digest,
                candidate.source.repository,
                self.pull_reviewed_hint(candidate.source, &old.digest)
            )),
        }
    }

    /// `hermetic inspect`'s verdict for the version `inspected` shows (a registered
    /// tool, a file or a reference) as the tool of its name the policy names by
    /// source: whether its grants would be withheld (as at start, the age check
    /// included: `statement` is what a trusted key signed about it), and — when the
    /// policy reviews a version — the `review` block, field by field. `None` when the
    /// policy names no tool of that name by source.
    pub(crate) fn report(
        &self,
        inspected: &Value,
        statement: Option<&Statement>,
    ) -> Option<(Option<String>, Option<Value>)> {
        let declaration: Declaration =
            serde_json::from_value(inspected["declaration"].clone()).ok()?;
        let name = declaration.name.clone();
        let source = Reference::parse(self.trust.sources.get(&name)?).ok()?;
        let component = Digest::parse(inspected["component"].as_str()?).ok()?;
        let schema = &inspected["schema"];
        let withheld = self.withheld(&Candidate {
            name: &name,
            source: &source,
            component: &component,
            declaration: &declaration,
            schema,
            statement,
        });
        let Some(reviewed) = self.trust.reviewed.get(&name) else {
            return Some((withheld, None));
        };
        if *reviewed == component.to_string() {
            return Some((
                withheld,
                Some(json!({"reviewed": reviewed, "same": true, "differences": []})),
            ));
        }
        let review = match self.reviewed_version(&source, reviewed) {
            Ok(old) => {
                let review = differences(&old, &declaration, schema);
                json!({
                    "reviewed": old.digest.to_string(),
                    "same": false,
                    "withholds": withheld.is_some(),
                    "withheld": withheld,
                    "asks_beyond": declaration.asks_beyond(&old.declaration),
                    "differences": review.differences,
                })
            }
            Err(why) => json!({
                "reviewed": reviewed,
                "same": false,
                "withholds": true,
                "withheld": withheld,
                "error": format!("the reviewed version {reviewed}, {why}"),
            }),
        };
        Some((withheld, Some(review)))
    }
}

/// How `declaration` and `schema` differ from the reviewed version's.
pub(crate) fn differences(
    reviewed: &ReviewedVersion,
    declaration: &Declaration,
    schema: &Value,
) -> Review {
    compare(
        Meaning {
            declaration: &reviewed.declaration,
            schema: &reviewed.schema,
        },
        Meaning {
            declaration,
            schema,
        },
    )
}

/// Why `now` may not replace `then` (`label`: "reviewed", "locked"), if it may not:
/// older by version, then by creation time, or not comparable at all.
pub(crate) fn older(now: &Statement, then: &Statement, label: &str) -> Option<String> {
    match now.age_against(then) {
        Some(Ordering::Less) => Some(format!(
            "{} is older than the {label} {} ({})",
            now.describe(),
            then.digest,
            then.describe()
        )),
        None => Some(format!(
            "{}: nothing tells whether it is older than the {label} {} ({})",
            now.describe(),
            then.digest,
            then.describe()
        )),
        Some(_) => None,
    }
}
