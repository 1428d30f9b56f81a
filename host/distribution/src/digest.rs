//! Content digests: `sha256:<64 lowercase hex>`, the only algorithm accepted (what
//! every registry computes and what the compiled-code cache is keyed by).

use sha2::{Digest as _, Sha256};
use std::fmt;

/// A sha256 content digest.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest {
    hex: String,
}

/// A string that is not a `sha256:` digest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a digest: write sha256: and 64 lowercase hex digits")]
pub struct BadDigest(pub String);

impl Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self::from_hasher(Sha256::new_with_prefix(bytes))
    }

    /// The digest a finished hasher holds.
    pub fn from_hasher(hasher: Sha256) -> Self {
        Self {
            hex: format!("{:x}", hasher.finalize()),
        }
    }

    /// Parses `sha256:<hex>`.
    ///
    /// # Errors
    /// [`BadDigest`] for another algorithm, a wrong length or upper-case hex.
    pub fn parse(s: &str) -> Result<Self, BadDigest> {
        let hex = s
            .strip_prefix("sha256:")
            .filter(|h| h.len() == 64 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
            .ok_or_else(|| BadDigest(s.chars().take(100).collect()))?;
        Ok(Self {
            hex: hex.to_owned(),
        })
    }

    /// The 64 hex digits.
    pub fn hex(&self) -> &str {
        &self.hex
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.hex)
    }
}

impl std::str::FromStr for Digest {
    type Err = BadDigest;
    fn from_str(s: &str) -> Result<Self, BadDigest> {
        Self::parse(s)
    }
}

impl serde::Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_round_trip_and_refuse_everything_else() {
        let d = Digest::of(b"hello");
        assert_eq!(
            d.to_string(),
            "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        assert_eq!(Digest::parse(&d.to_string()), Ok(d.clone()));
        for bad in [
            "",
            "sha256:",
            "sha512:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
            "sha256:2CF24DBA5FB0A30E26E83B2AC5B9E29E1B161E5C1FA7425E73043362938B9824",
            "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b982",
            "sha256:../../../../etc/passwd/00000000000000000000000000000000000000",
        ] {
            assert!(Digest::parse(bad).is_err(), "{bad}");
        }
    }
}
