//! Tool references: `[oci://]HOST[:PORT]/REPOSITORY[:TAG][@sha256:HEX]`, parsed by the
//! OCI distribution grammar. The registry host is always explicit: a reference never
//! silently means Docker Hub.

use crate::digest::Digest;
use regex::Regex;
use std::fmt;
use std::sync::LazyLock;

/// Longest reference accepted (the distribution spec caps a repository name at 255).
const MAX_REFERENCE: usize = 512;

/// `path-component` of the distribution spec, joined by `/`.
static REPOSITORY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$",
    )
    .unwrap_or_else(|e| unreachable!("a constant pattern compiles: {e}"))
});
static TAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")
        .unwrap_or_else(|e| unreachable!("a constant pattern compiles: {e}"))
});
/// A DNS name or IPv4 address, or a bracketed IPv6 address, with an optional port.
static REGISTRY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$")
        .unwrap_or_else(|e| unreachable!("a constant pattern compiles: {e}"))
});

/// A parsed reference.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Reference {
    /// `host[:port]` of the registry.
    pub registry: String,
    /// The repository (`tools/weather`).
    pub repository: String,
    /// The tag, if one was given.
    pub tag: Option<String>,
    /// The manifest digest, if one was given (it wins over the tag).
    pub digest: Option<Digest>,
}

/// A reference that does not parse, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{reference:?} is not a tool reference ({reason}); write HOST[:PORT]/REPOSITORY[:TAG][@sha256:…], e.g. registry.example.com/tools/weather:1.0"
)]
pub struct BadReference {
    /// The input (cut to 100 characters).
    pub reference: String,
    /// What is wrong.
    pub reason: String,
}

impl Reference {
    /// Parses a reference (`oci://` in front is allowed).
    ///
    /// # Errors
    /// [`BadReference`] naming what is wrong.
    pub fn parse(s: &str) -> Result<Self, BadReference> {
        let bad = |reason: &str| BadReference {
            reference: s.chars().take(100).collect(),
            reason: reason.to_owned(),
        };
        if s.len() > MAX_REFERENCE {
            return Err(bad("longer than 512 bytes"));
        }
        let rest = s.strip_prefix("oci://").unwrap_or(s);
        let (rest, digest) = match rest.split_once('@') {
            Some((r, d)) => (r, Some(Digest::parse(d).map_err(|e| bad(&e.to_string()))?)),
            None => (rest, None),
        };
        let Some((registry, path)) = rest.split_once('/') else {
            return Err(bad("no registry host"));
        };
        let explicit_host =
            registry.contains('.') || registry.contains(':') || registry.starts_with("localhost");
        if !explicit_host || !REGISTRY.is_match(registry) {
            return Err(bad(
                "the registry host must be explicit (a name with a dot, a port, localhost or an IP address)",
            ));
        }
        let port = match registry.strip_prefix('[') {
            Some(bracketed) => bracketed.split_once("]:").map(|(_, p)| p),
            None => registry.split_once(':').map(|(_, p)| p),
        };
        if let Some(port) = port
            && !matches!(port.parse::<u16>(), Ok(1..))
        {
            return Err(bad("the port must be 1 to 65535"));
        }
        let (repository, tag) = match path.rsplit_once(':') {
            Some((r, t)) if !t.contains('/') => (r, Some(t)),
            _ => (path, None),
        };
        if repository.len() > 255 || !REPOSITORY.is_match(repository) {
            return Err(bad(
                "the repository must be lower-case path components (a-z, 0-9, . _ -) separated by /",
            ));
        }
        if let Some(t) = tag
            && !TAG.is_match(t)
        {
            return Err(bad(
                "a tag is up to 128 of A-Z a-z 0-9 _ . - (not starting with . or -)",
            ));
        }
        if tag.is_none() && digest.is_none() {
            return Err(bad("no tag and no digest: add :TAG or @sha256:…"));
        }
        Ok(Self {
            registry: registry.to_owned(),
            repository: repository.to_owned(),
            tag: tag.map(str::to_owned),
            digest,
        })
    }

    /// What the registry is asked for: the digest when there is one, else the tag.
    pub fn manifest_ref(&self) -> String {
        match (&self.digest, &self.tag) {
            (Some(d), _) => d.to_string(),
            (None, Some(t)) => t.clone(),
            (None, None) => "latest".to_owned(),
        }
    }

    /// This reference pinned to `digest` (tag dropped): what a lock file records.
    pub fn pinned(&self, digest: Digest) -> Self {
        Self {
            registry: self.registry.clone(),
            repository: self.repository.clone(),
            tag: None,
            digest: Some(digest),
        }
    }

    /// Whether the registry host is this machine (`localhost`, 127.0.0.0/8, ::1): the
    /// only place plain HTTP (`--insecure`) is allowed.
    pub fn is_loopback(&self) -> bool {
        let host = match self.registry.rsplit_once(':') {
            Some((h, p)) if p.bytes().all(|b| b.is_ascii_digit()) => h,
            _ => self.registry.as_str(),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        host.eq_ignore_ascii_case("localhost")
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        if let Some(t) = &self.tag {
            write!(f, ":{t}")?;
        }
        if let Some(d) = &self.digest {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Reference {
    type Err = BadReference;
    fn from_str(s: &str) -> Result<Self, BadReference> {
        Self::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const D: &str = "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";

    #[test]
    fn references_parse_as_the_distribution_grammar_says() {
        let r = Reference::parse("oci://127.0.0.1:5000/tools/weather:1.0").unwrap();
        assert_eq!(
            (r.registry.as_str(), r.repository.as_str(), r.tag.as_deref()),
            ("127.0.0.1:5000", "tools/weather", Some("1.0"))
        );
        assert!(r.is_loopback());
        let r = Reference::parse(&format!("registry.example.com/a/b-c__d@{D}")).unwrap();
        assert_eq!(
            r.digest.as_ref().map(ToString::to_string).as_deref(),
            Some(D)
        );
        assert!(!r.is_loopback());
        assert_eq!(r.to_string(), format!("registry.example.com/a/b-c__d@{D}"));
        let r = Reference::parse(&format!("localhost:80/x:v1@{D}")).unwrap();
        assert_eq!(r.manifest_ref(), D, "the digest wins over the tag");
        assert!(Reference::parse("[::1]:5000/x:1").unwrap().is_loopback());
        for bad in [
            "weather:1.0",              // no host: not Docker Hub
            "library/weather:1.0",      // no explicit host
            "example.com/Tools:1",      // upper case
            "example.com/tools",        // neither tag nor digest
            "example.com/../etc:1",     // not a path component
            "example.com/x:.hidden",    // tag starts with .
            "example.com:0/x:1",        // port 0
            "example.com:99999/x:1",    // port too large
            "example.com/x@sha256:abc", // short digest
            "exa mple.com/x:1",         // space
            "example.com/x:1\n",        // newline
        ] {
            assert!(Reference::parse(bad).is_err(), "{bad:?}");
        }
        assert!(Reference::parse(&"a".repeat(600)).is_err());
    }

    proptest! {
        // Whatever comes in, parsing ends with a value or an error, and a value prints
        // back to a string that parses to itself.
        #[test]
        fn parsing_never_panics_and_round_trips(s in "(oci://)?[a-z0-9.:\\[\\]/@_-]{0,80}(:[a-zA-Z0-9._-]{0,10})?") {
            if let Ok(r) = Reference::parse(&s) {
                prop_assert_eq!(Reference::parse(&r.to_string()), Ok(r));
            }
        }

        #[test]
        fn arbitrary_input_never_panics(s in "\\PC{0,300}") {
            let _ = Reference::parse(&s);
        }
    }
}
