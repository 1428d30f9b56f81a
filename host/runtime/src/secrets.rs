//! The secret values a policy's secrets file holds: what granted env vars get, and
//! what results and logs are scrubbed of. Kept apart from the policy (which names
//! which tool may see which variable) and from its loader (which only finds the file).

use std::collections::BTreeMap;

/// Secret values from the policy's secrets file: env var name → value. `Debug` never
/// shows the values.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secrets(BTreeMap<String, String>);

impl Secrets {
    /// The value of a secret, if the file defines it.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
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
        Self(pairs.into_iter().collect())
    }

    /// Every secret value (for redaction).
    pub fn values(&self) -> impl Iterator<Item = &str> {
        self.0.values().map(String::as_str)
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
        Ok(Self(values))
    }
}
