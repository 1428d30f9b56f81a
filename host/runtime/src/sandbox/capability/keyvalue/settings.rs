//! The operator's settings for every store at once (`[keyvalue]` in the policy file):
//! how much a tenant's session stores may hold together, and how long a session store
//! may sit unwritten before it is deleted. A tool's own quota ([`KeyValueQuota`]) is
//! per store; these bound what many sessions would otherwise multiply.

use crate::policy::keyvalue::KeyValueQuota;
use std::time::Duration;

/// Settings that hold for every store of a backend: configured once, when the backend
/// is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyValueSettings {
    /// Keys a tenant's session stores hold together, at most (every tool, every
    /// session): `[keyvalue] sessions_max_keys`.
    pub sessions_max_keys: u64,
    /// Bytes (keys and values) a tenant's session stores hold together, at most:
    /// `[keyvalue] sessions_max_total_bytes`.
    pub sessions_max_total_bytes: u64,
    /// How long a session store may go without a write before it is deleted
    /// (`[keyvalue] session_expiry_secs`): its session's end was never seen (a node
    /// killed, a client that never said goodbye). Tenant stores never expire. At most
    /// `MAX_SESSION_EXPIRY` (365 days) is applied.
    pub session_expiry: Duration,
}

/// 100,000 keys: ten stores full at the default quota of one (10,000 keys).
pub const DEFAULT_SESSIONS_MAX_KEYS: u64 = 100_000;
/// 64 MiB: four stores full at the default quota of one (16 MiB), or about sixty
/// sessions of `todo` at its largest (~1 MiB).
pub const DEFAULT_SESSIONS_MAX_TOTAL_BYTES: u64 = 64 << 20;
/// 24 hours: a session idle this long is over by any client's measure (the HTTP server
/// closes idle sessions long before).
pub const DEFAULT_SESSION_EXPIRY: Duration = Duration::from_secs(24 * 60 * 60);
/// 365 days: the longest expiry the policy file accepts, and the longest any backend
/// applies (a longer one is taken as this). Redis keeps expiries in milliseconds:
/// bounded, every expiry and twice it are plain integers there.
pub const MAX_SESSION_EXPIRY: Duration = Duration::from_secs(365 * 24 * 60 * 60);

impl Default for KeyValueSettings {
    /// 100,000 keys and 64 MiB across a tenant's sessions; a session idle for 24 hours
    /// expires.
    fn default() -> Self {
        Self {
            sessions_max_keys: DEFAULT_SESSIONS_MAX_KEYS,
            sessions_max_total_bytes: DEFAULT_SESSIONS_MAX_TOTAL_BYTES,
            session_expiry: DEFAULT_SESSION_EXPIRY,
        }
    }
}

impl KeyValueSettings {
    /// The ceiling of a tenant's session stores as a quota (its `max_value_bytes` is
    /// unused: one value is limited by the store's own quota).
    pub fn sessions_ceiling(&self) -> KeyValueQuota {
        KeyValueQuota {
            max_keys: self.sessions_max_keys,
            max_value_bytes: self.sessions_max_total_bytes,
            max_total_bytes: self.sessions_max_total_bytes,
        }
    }

    /// How often the embedded store looks for expired session stores: a quarter of
    /// the expiry (so a store outlives it by at most a quarter), between 50 ms (tests
    /// set short expiries) and 10 minutes (one sweep reads every store's use).
    pub fn sweep_every(&self) -> Duration {
        (self.session_expiry / 4).clamp(Duration::from_millis(50), Duration::from_secs(600))
    }

    /// The expiry applied, in whole milliseconds: at least 1 (as Redis's `PEXPIRE`
    /// takes it), at most `MAX_SESSION_EXPIRY`'s (365 days).
    pub fn expiry_millis(&self) -> u64 {
        let applied = self.session_expiry.min(MAX_SESSION_EXPIRY);
        u64::try_from(applied.as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_defaults_hold() {
        let d = KeyValueSettings::default();
        assert_eq!(
            d,
            KeyValueSettings {
                sessions_max_keys: 100_000,
                sessions_max_total_bytes: 64 * 1024 * 1024,
                session_expiry: Duration::from_secs(86_400),
            }
        );
        assert_eq!(d.sweep_every(), Duration::from_secs(600));
        assert_eq!(d.expiry_millis(), 86_400_000);
        let short = KeyValueSettings {
            session_expiry: Duration::from_millis(10),
            ..d
        };
        assert_eq!(short.sweep_every(), Duration::from_millis(50));
        let huge = KeyValueSettings {
            session_expiry: Duration::from_secs(u64::MAX),
            ..d
        };
        assert_eq!(huge.expiry_millis(), 365 * 86_400_000, "capped");
    }
}
