//! `[tools.NAME.inject.SECRET]`: a secret the host adds to one tool's requests to one
//! destination (a header or a query parameter), so the tool never holds it. Checked
//! again once the secrets file is read: the secret exists, and the tool is not also
//! granted it as an env var.

use crate::error::PolicyFileError;
use hermetic::Secrets;
use hermetic_policy::OperatorPolicy;
use hermetic_policy::inject::{InjectInto, SecretInjection};
use serde::Deserialize;
use std::collections::BTreeMap;

/// `[tools.NAME.inject.SECRET]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct InjectToml {
    destination: String,
    header: Option<String>,
    query: Option<String>,
    format: Option<String>,
}

/// One tool's `inject` tables, each a binding that says where the secret goes.
pub(crate) fn bindings(
    raw: BTreeMap<String, InjectToml>,
    invalid: &impl Fn(String) -> PolicyFileError,
) -> Result<Vec<SecretInjection>, PolicyFileError> {
    let mut inject = Vec::new();
    for (secret, i) in raw {
        let at = format!("inject.{secret}");
        let into = match (i.header, i.query) {
            (Some(h), None) => InjectInto::Header(h),
            (None, Some(q)) => InjectInto::Query(q),
            _ => {
                return Err(invalid(format!(
                    "{at}: say where the secret goes: header = \"NAME\" or query = \"NAME\" (one of them)"
                )));
            }
        };
        let format = i.format.unwrap_or_else(|| "{}".to_owned());
        let binding = SecretInjection::new(&secret, &i.destination, into, &format)
            .map_err(|e| invalid(format!("{at}: {e}")))?;
        inject.push(binding);
    }
    Ok(inject)
}

/// Every tool's bindings name a secret of the secrets file that the tool is not also
/// granted as an env var (it would hold what the binding keeps from it).
pub(crate) fn check_bindings(
    policy: &OperatorPolicy,
    secrets: &Secrets,
    invalid: &impl Fn(String) -> PolicyFileError,
) -> Result<(), PolicyFileError> {
    for (name, tool) in &policy.tools {
        for binding in &tool.inject {
            if secrets.get(&binding.secret).is_none() {
                return Err(invalid(format!(
                    "tools.{name}.inject.{}: no such secret in the secrets file ([secrets] file)",
                    binding.secret
                )));
            }
            if policy.grants_for(name).env.contains(&binding.secret) {
                return Err(invalid(format!(
                    "tools.{name}.inject.{0}: {0} is also granted to the tool as an env var, so the tool would hold it; grant one or the other",
                    binding.secret
                )));
            }
        }
    }
    Ok(())
}
