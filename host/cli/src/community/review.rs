//! What a review grants: the operator's grants are for the version `[tools.NAME]
//! reviewed` names (else the one the source pins by digest). Another version gets
//! them only when it means the same (`hermetic_policy::review`: name, toolset,
//! limits, schema…), asks for nothing more, and is not older — by its signed
//! statement — than the reviewed one.

use hermetic::policy::Declaration;
use hermetic::policy::review::{Meaning, Review, compare};
use hermetic::policy::trust::TrustPolicy;
use hermetic::{Registry, ToolSource};
use hermetic_distribution::artifact::MAX_COMPONENT_BYTES;
use hermetic_distribution::{Digest, Statement, Store, StoreError, TrustedKeys};
use serde_json::{Value, json};
use std::cmp::Ordering;

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

/// The reviewed version `digest` of a tool published under `repository`: its bytes
/// from the store (checked against the digest: exactly what was reviewed, so no
/// signature is needed to compare with it), loaded to read its schema (as every load
/// does, with nothing granted). `Err` says why it cannot be compared with, as the end
/// of a sentence about it.
pub(crate) fn reviewed_version(
    registry: &Registry,
    store: &Store,
    keys: &TrustedKeys,
    repository: &str,
    digest: &str,
) -> Result<ReviewedVersion, String> {
    let digest = Digest::parse(digest).map_err(|e| format!("which is not a digest ({e})"))?;
    let bytes = store
        .read(&digest, MAX_COMPONENT_BYTES)
        .map_err(|e| match e {
            StoreError::Missing { .. } => {
                "which is not in the tool store to compare with (pull it by digest, or review this version)".to_owned()
            }
            other => format!("which cannot be read from the tool store ({other})"),
        })?;
    let tool = registry
        .load(&bytes, ToolSource::Oci(format!("reviewed {digest}")))
        .map_err(|e| format!("which does not load to compare with ({e})"))?;
    let statement = hermetic_distribution::component_statement(&digest, repository, store, keys);
    Ok(ReviewedVersion {
        digest,
        declaration: tool.declaration,
        schema: tool.schema,
        statement,
    })
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

/// The facts about the version being loaded that a review looks at.
pub(crate) struct Candidate<'a> {
    /// The policy's name for the tool.
    pub name: &'a str,
    /// Whether the policy's source pins a digest (its grants are then for that one
    /// when `reviewed` is not set).
    pub source_pinned: bool,
    /// The repository it comes from.
    pub repository: &'a str,
    /// Its component digest.
    pub component: &'a Digest,
    /// What it declares.
    pub declaration: &'a Declaration,
    /// What its `schema()` returned.
    pub schema: &'a Value,
    /// What a trusted key signed about it (when signatures are required).
    pub statement: Option<&'a Statement>,
}

/// Why the grants are withheld from `candidate`, if they are.
pub(crate) fn withheld(
    candidate: &Candidate<'_>,
    trust: &TrustPolicy,
    registry: &Registry,
    store: &Store,
    keys: &TrustedKeys,
) -> Option<String> {
    let (name, component) = (candidate.name, candidate.component);
    let fix = format!(
        "review it (`hermetic inspect {name}` shows each difference) and set [tools.{name}] reviewed = \"{component}\""
    );
    let reviewed = match trust.reviewed.get(name) {
        Some(r) => r,
        None if candidate.source_pinned => return None,
        None => {
            return Some(format!(
                "tools.{name}: the source is a tag, and no version was reviewed for its grants: {fix}"
            ));
        }
    };
    if *reviewed == component.to_string() {
        return None;
    }
    let old = match reviewed_version(registry, store, keys, candidate.repository, reviewed) {
        Ok(old) => old,
        Err(why) => {
            return Some(format!(
                "tools.{name}: version {component} is not the reviewed {reviewed}, {why}: {fix}"
            ));
        }
    };
    if let (Some(now), Some(then)) = (candidate.statement, &old.statement)
        && let Some(why) = older(now, then, "reviewed")
    {
        return Some(format!(
            "tools.{name}: version {component} ({why}): an older version is not granted (a rollback): {fix}"
        ));
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

/// `hermetic inspect`'s `review` for a tool the policy names: the version the report
/// shows against the one `[tools.NAME] reviewed` names, field by field. `None` when
/// the policy reviews no version of a tool of that name.
pub(crate) fn report(
    registry: &Registry,
    trust: &TrustPolicy,
    store: &Store,
    inspected: &Value,
) -> Option<Value> {
    let declaration: Declaration = serde_json::from_value(inspected["declaration"].clone()).ok()?;
    let reviewed = trust.reviewed.get(&declaration.name)?;
    let component = inspected["component"].as_str().unwrap_or_default();
    if reviewed == component {
        return Some(json!({"reviewed": reviewed, "same": true, "differences": []}));
    }
    let repository = trust
        .sources
        .get(&declaration.name)
        .and_then(|s| hermetic_distribution::Reference::parse(s).ok())
        .map(|r| r.repository)
        .unwrap_or_default();
    let keys = super::trusted_keys(&trust.keys).unwrap_or_default();
    let old = match reviewed_version(registry, store, &keys, &repository, reviewed) {
        Ok(old) => old,
        Err(why) => {
            return Some(
                json!({"reviewed": reviewed, "same": false, "error": format!("the reviewed version {reviewed}, {why}")}),
            );
        }
    };
    let review = differences(&old, &declaration, &inspected["schema"]);
    Some(json!({
        "reviewed": old.digest.to_string(),
        "same": false,
        "withholds": review.withholds(),
        "asks_beyond": declaration.asks_beyond(&old.declaration),
        "differences": review.differences,
    }))
}
