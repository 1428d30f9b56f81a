//! The secret values a policy's secrets file holds: what granted env vars get, and
//! what results and logs are scrubbed of. Kept apart from the policy (which names
//! which tool may see which variable) and from its loader (which only finds the file).

mod scrub;

pub(crate) use scrub::Scrubber;

use crate::policy::inject::SecretInjection;
use scrub::WireForms;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Secret values from the policy's secrets file: env var name → value, each with the
/// forms it is scrubbed in (compiled once, here, not per call). `Debug` never shows
/// the values.
#[derive(Clone, Default)]
pub struct Secrets(BTreeMap<String, Held>);

/// One secret: its value and the forms it is scrubbed in (`None` when empty).
#[derive(Clone)]
struct Held {
    value: String,
    forms: Option<Arc<WireForms>>,
}

impl PartialEq for Secrets {
    fn eq(&self, other: &Self) -> bool {
        self.0.len() == other.0.len()
            && self
                .0
                .iter()
                .zip(&other.0)
                .all(|((a, x), (b, y))| a == b && x.value == y.value)
    }
}

impl Eq for Secrets {}

impl Secrets {
    /// The value of a secret, if the file defines it.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(|h| h.value.as_str())
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
        Self(
            pairs
                .into_iter()
                .map(|(name, value)| {
                    let forms = WireForms::of(&value).map(Arc::new);
                    (name, Held { value, forms })
                })
                .collect(),
        )
    }

    /// Every secret value (for redaction).
    pub fn values(&self) -> impl Iterator<Item = &str> {
        self.0.values().map(|h| h.value.as_str())
    }

    /// What a call whose requests get the secrets of `bindings` is scrubbed of: every
    /// form in which the host puts those values on the wire ([`Scrubber`]); `None`
    /// when there is nothing to scrub (the common path: no allocation).
    pub(crate) fn scrubber(&self, bindings: &[SecretInjection]) -> Option<Scrubber> {
        if bindings.is_empty() {
            return None;
        }
        Scrubber::new(
            bindings
                .iter()
                .filter_map(|b| self.0.get(&b.secret)?.forms.clone())
                .collect(),
        )
    }
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
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
