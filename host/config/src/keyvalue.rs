//! `[keyvalue]` (where the embedded store keeps its file, the ceiling of a tenant's
//! session stores and their expiry) and a grant's `keyvalue` key (the store and its
//! quota, or none).

use crate::error::PolicyFileError;
use hermetic_policy::keyvalue::KeyValueQuota;
use serde::Deserialize;
use std::path::PathBuf;

/// `[keyvalue]`: where the embedded key-value store keeps its file, how much a
/// tenant's session stores hold together, and when an idle one expires.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct KeyValueFileToml {
    pub(crate) file: Option<PathBuf>,
    sessions_max_keys: Option<u64>,
    sessions_max_total_bytes: Option<u64>,
    session_expiry_secs: Option<u64>,
}

impl KeyValueFileToml {
    /// The settings these keys give (each positive: `0` would refuse every session
    /// write, or expire a store before its next call).
    pub(crate) fn settings(&self) -> Result<hermetic::KeyValueSettings, String> {
        let d = hermetic::KeyValueSettings::default();
        let positive = |key: &str, v: Option<u64>, default: u64| match v {
            Some(0) => Err(format!(
                "keyvalue.{key} must be positive (leave it out for the default, {default})"
            )),
            Some(v) => Ok(v),
            None => Ok(default),
        };
        Ok(hermetic::KeyValueSettings {
            sessions_max_keys: positive(
                "sessions_max_keys",
                self.sessions_max_keys,
                d.sessions_max_keys,
            )?,
            sessions_max_total_bytes: positive(
                "sessions_max_total_bytes",
                self.sessions_max_total_bytes,
                d.sessions_max_total_bytes,
            )?,
            session_expiry: std::time::Duration::from_secs(
                positive(
                    "session_expiry_secs",
                    self.session_expiry_secs,
                    d.session_expiry.as_secs(),
                )
                .and_then(|secs| {
                    let max = hermetic::KEYVALUE_MAX_SESSION_EXPIRY
                        .as_secs();
                    if secs > max {
                        Err(format!(
                            "keyvalue.session_expiry_secs must be at most {max} (365 days): a session store idle longer is over"
                        ))
                    } else {
                        Ok(secs)
                    }
                })?,
            ),
        })
    }
}

/// `keyvalue = true | false | { max_keys, max_value_bytes, max_total_bytes }`.
#[derive(Deserialize)]
#[serde(untagged)]
pub(crate) enum KeyValueToml {
    Granted(bool),
    Quota(KeyValueQuotaToml),
}

/// `keyvalue = { max_keys, max_value_bytes, max_total_bytes }`, each optional.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct KeyValueQuotaToml {
    max_keys: Option<u64>,
    max_value_bytes: Option<u64>,
    max_total_bytes: Option<u64>,
}

/// A grant's `keyvalue` key: `None` when absent, `Some(None)` when taken away, else
/// the store with its quota (each bound positive; the default's where not written).
pub(crate) fn keyvalue_grant(
    raw: Option<KeyValueToml>,
    invalid: &impl Fn(String) -> PolicyFileError,
) -> Result<Option<Option<KeyValueQuota>>, PolicyFileError> {
    Ok(match raw {
        None => None,
        Some(KeyValueToml::Granted(false)) => Some(None),
        Some(KeyValueToml::Granted(true)) => Some(Some(KeyValueQuota::default())),
        Some(KeyValueToml::Quota(q)) => {
            let d = KeyValueQuota::default();
            let quota = KeyValueQuota {
                max_keys: q.max_keys.unwrap_or(d.max_keys),
                max_value_bytes: q.max_value_bytes.unwrap_or(d.max_value_bytes),
                max_total_bytes: q.max_total_bytes.unwrap_or(d.max_total_bytes),
            };
            if quota.max_keys == 0 || quota.max_value_bytes == 0 || quota.max_total_bytes == 0 {
                return Err(invalid(
                    "keyvalue quotas must be positive (keyvalue = false takes the store away)"
                        .into(),
                ));
            }
            Some(Some(quota))
        }
    })
}
