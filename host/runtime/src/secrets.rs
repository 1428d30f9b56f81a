//! The secret values a policy's secrets file holds: what granted env vars get, and
//! what results and logs are scrubbed of. Kept apart from the policy (which names
//! which tool may see which variable) and from its loader (which only finds the file).

mod scrub;

pub(crate) use scrub::Scrubber;

use crate::policy::OperatorPolicy;
use crate::policy::inject::SecretInjection;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

/// Secret values from the policy's secrets file: env var name → value. `Debug` never
/// shows the values.
///
/// What results are scrubbed of is built here too, once per policy and only on first
/// use (`Secrets::scrubber`): every form of every secret the policy binds to a
/// destination. Secrets only granted as env vars, or the `[cluster] state_key`, are
/// never compiled into anything.
#[derive(Clone, Default)]
pub struct Secrets {
    values: BTreeMap<String, String>,
    bound: Arc<Bound>,
}

/// The secrets the policy binds to destinations, and their scrubber, compiled on first
/// use (a call of any tool while the policy has a binding).
#[derive(Default)]
struct Bound {
    names: BTreeSet<String>,
    scrubber: OnceLock<Option<Scrubber>>,
}

impl PartialEq for Secrets {
    fn eq(&self, other: &Self) -> bool {
        self.values == other.values
    }
}

impl Eq for Secrets {}

impl Secrets {
    /// The value of a secret, if the file defines it.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// The value a granted env var gets: the secrets file's, else the host
    /// environment's, else none (the tool does not see it).
    pub fn env_value(&self, name: &str) -> Option<String> {
        self.get(name)
            .map(str::to_owned)
            .or_else(|| std::env::var(name).ok())
    }

    /// Secrets from name/value pairs (for embedding hosts and tests).
    pub fn from_pairs(pairs: impl IntoIterator<Item = (String, String)>) -> Self {
        Self {
            values: pairs.into_iter().collect(),
            bound: Arc::default(),
        }
    }

    /// Every secret value (for redaction).
    pub fn values(&self) -> impl Iterator<Item = &str> {
        self.values.values().map(String::as_str)
    }

    /// These secrets as `policy` uses them: every secret a tool of it gets injected is
    /// scrubbed from every call's result (`Secrets::scrubber`).
    pub(crate) fn bound_to(mut self, policy: &OperatorPolicy) -> Self {
        let names = policy
            .tools
            .values()
            .flat_map(|tool| tool.inject.iter().map(|b| b.secret.clone()))
            .collect();
        self.bound = Arc::new(Bound {
            names,
            scrubber: OnceLock::new(),
        });
        self
    }

    /// What a call — whose requests get the secrets of `bindings` — is scrubbed of:
    /// every form in which the host puts a secret on the wire ([`Scrubber`]), for
    /// *every* secret the policy binds, not only the call's: a value one tool got back
    /// from its destination may be in a file or a store another tool reads. Compiled
    /// once, on first use; `None` when the policy binds nothing (the common path: no
    /// cost).
    pub(crate) fn scrubber(&self, bindings: &[SecretInjection]) -> Option<Scrubber> {
        let host = self
            .bound
            .scrubber
            .get_or_init(|| {
                Scrubber::new(
                    self.bound
                        .names
                        .iter()
                        .filter_map(|name| self.get(name))
                        .collect(),
                )
            })
            .clone();
        if bindings
            .iter()
            .all(|b| self.bound.names.contains(&b.secret))
        {
            return host;
        }
        // Grants from a policy these secrets were not bound to (a host assembled
        // without [`Secrets::bound_to`]): never send a secret unscrubbed, so compile
        // what this call needs, at a cost per call.
        tracing::warn!(
            "secret bindings outside the policy the secrets were loaded with: compiling their scrubber for this call"
        );
        Scrubber::new(
            self.bound
                .names
                .iter()
                .map(String::as_str)
                .chain(bindings.iter().map(|b| b.secret.as_str()))
                .filter_map(|name| self.get(name))
                .collect(),
        )
    }
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.values.keys()).finish()
    }
}

impl Secrets {
    /// Reads a secrets file's text: `NAME = "value"` lines.
    ///
    /// # Errors
    /// What is wrong and where (line, column) — never the offending line itself,
    /// which could hold a secret.
    pub fn from_toml(text: &str) -> Result<Self, String> {
        let values: BTreeMap<String, String> = toml::from_str(text).map_err(|e| {
            format!(
                "secrets file must be NAME = \"value\" lines ({}{})",
                e.span()
                    .and_then(|span| text.get(..span.start))
                    .map(|before| {
                        let line = before.matches('\n').count() + 1;
                        let start = before.rfind('\n').map_or(0, |i| i + 1);
                        let column = before[start..].chars().count() + 1;
                        format!("line {line}, column {column}: ")
                    })
                    .unwrap_or_default(),
                e.message()
            )
        })?;
        Ok(Self::from_pairs(values))
    }
}
