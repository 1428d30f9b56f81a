//! Ed25519 signatures over a statement about a component, detached and verified
//! offline.
//!
//! Why detached, not embedded in the component (`wasmsign2`): an embedded signature
//! changes the component's bytes, so its digest — the store key, the OCI layer digest,
//! what a grant is bound to — would change with every signer. A signature here is a
//! small JSON document; it travels beside the component (`FILE.sig`, the store's
//! `signatures/`, and a registry tag `sha256-<manifest hex>.sig`, cosign's convention,
//! since distribution 2.8 has no referrers API). `ring` does the cryptography (already
//! in the tree through rustls).
//!
//! What is signed (format v2) is a [`Statement`], not a bare digest: the component's
//! digest, the repository it was published under, its version and its creation time
//! (the manifest's `org.opencontainers.image.version` and `.created` annotations). The
//! signed bytes are `hermetic-tool-statement-v2\0` and the statement's JSON as this
//! module writes it (fields in a fixed order, absent ones `null`), rebuilt from the
//! parsed fields when verifying: changing any field breaks the signature. So a
//! signature for one repository does not vouch for another, and a host can tell an
//! older signed version from a newer one and refuse a tag moved back (a rollback).
//!
//! Format v1 (`hermetic-tool-signature-v1\0sha256:<hex>`: the digest alone) is read,
//! checked, and refused with what to do: it cannot say which version it is, so
//! accepting it would let any old v1-signed version come back under a tag. The
//! publisher signs again (`hermetic sign`); versions they no longer stand behind stay
//! unsigned.

use crate::digest::Digest;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use ring::signature::{ED25519, Ed25519KeyPair, KeyPair as _, UnparsedPublicKey};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::fmt;

const CONTEXT_V1: &[u8] = b"hermetic-tool-signature-v1\0";
const CONTEXT_V2: &[u8] = b"hermetic-tool-statement-v2\0";
const PEM_BEGIN: &str = "-----BEGIN PRIVATE KEY-----";
const PEM_END: &str = "-----END PRIVATE KEY-----";
/// Largest signature document read.
pub const MAX_SIGNATURE_BYTES: usize = 64 * 1024;
/// Longest version a statement carries (OCI gives none; a tag is at most 128).
pub const MAX_VERSION_CHARS: usize = 128;
/// Longest repository a statement names (the distribution spec's limit).
pub const MAX_REPOSITORY_CHARS: usize = 255;

/// A signature problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignatureError {
    /// A key that does not parse.
    #[error("{0}")]
    BadKey(String),
    /// A signature document that does not parse.
    #[error("not a hermetic signature: {0}")]
    BadSignature(String),
    /// A statement that cannot be signed as it is.
    #[error("cannot sign: {0}")]
    BadStatement(String),
    /// No signature at all.
    #[error(
        "{digest} is not signed; ask its publisher for a signature (`hermetic sign`), or allow unsigned tools (require_signature = false)"
    )]
    Unsigned {
        /// The component.
        digest: Digest,
    },
    /// Signatures, but none by a trusted key.
    #[error(
        "{digest} is signed only by keys this host does not trust ({keys}); add the publisher's public key to [trust] keys if you trust it"
    )]
    Untrusted {
        /// The component.
        digest: Digest,
        /// The key ids that signed it.
        keys: String,
    },
    /// A trusted key's signature that does not verify (a tampered component or
    /// signature).
    #[error(
        "{digest}: the signature by trusted key {key} does not verify: the component or its signature was changed; refused"
    )]
    Invalid {
        /// The component.
        digest: Digest,
        /// The key id.
        key: String,
    },
    /// A trusted key's signature in format v1 (the bare digest).
    #[error(
        "{digest}: the signature by trusted key {key} is in format v1, which covers the digest only (not the repository, version and time a host needs to refuse a rollback): refused; the publisher signs it again with this hermetic (for a pushed tool `hermetic sign oci://HOST/REPOSITORY@sha256:… --key KEY`, by the manifest digest `hermetic push` printed, never by tag; for a file `hermetic sign FILE --key KEY`), then pull it again"
    )]
    OldFormat {
        /// The component.
        digest: Digest,
        /// The key id.
        key: String,
    },
    /// A trusted key signed this component as another repository's.
    #[error(
        "{digest}: trusted key {key} signed it as {signed}, not as {wanted}: refused (a signature for one repository does not vouch for another; the publisher signs it for {wanted})"
    )]
    OtherRepository {
        /// The component.
        digest: Digest,
        /// The key id.
        key: String,
        /// What the statement names (`a file` for a file's).
        signed: String,
        /// The repository it was pulled from.
        wanted: String,
    },
}

/// What a publisher signs about one component.
///
/// Serialized with every field, in this order, absent ones `null`: the signed bytes
/// are rebuilt from these values, so they are the same whoever writes the document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Statement {
    /// The component's digest.
    pub digest: Digest,
    /// The repository it is published under (`tools/weather`, without the registry
    /// host: a mirror keeping the path keeps the signature); `None` for a file.
    #[serde(default)]
    pub repository: Option<String>,
    /// Its version (`org.opencontainers.image.version`), when the publisher gave one.
    #[serde(default)]
    pub version: Option<String>,
    /// When it was made (`org.opencontainers.image.created`, RFC 3339).
    #[serde(default)]
    pub created: Option<String>,
}

impl Statement {
    /// A statement, checked: a repository of `[a-z0-9._/-]` (at most
    /// [`MAX_REPOSITORY_CHARS`]), a version of printable characters (at most
    /// [`MAX_VERSION_CHARS`]), `created` in RFC 3339.
    ///
    /// # Errors
    /// [`SignatureError::BadStatement`] naming the field.
    pub fn new(
        digest: Digest,
        repository: Option<&str>,
        version: Option<&str>,
        created: Option<&str>,
    ) -> Result<Self, SignatureError> {
        let statement = Self {
            digest,
            repository: repository.map(str::to_owned),
            version: version.map(str::to_owned),
            created: created.map(str::to_owned),
        };
        statement.check().map_err(SignatureError::BadStatement)?;
        Ok(statement)
    }

    fn check(&self) -> Result<(), String> {
        if let Some(r) = &self.repository {
            let ok = !r.is_empty()
                && r.len() <= MAX_REPOSITORY_CHARS
                && r.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._/-".contains(&b));
            if !ok {
                return Err(format!(
                    "repository {:?} is not a repository name",
                    r.chars().take(80).collect::<String>()
                ));
            }
        }
        if let Some(v) = &self.version
            && (v.is_empty()
                || v.chars().count() > MAX_VERSION_CHARS
                || v.chars().any(char::is_control))
        {
            return Err(format!(
                "version {:?}: 1 to {MAX_VERSION_CHARS} printable characters",
                v.chars().take(80).collect::<String>()
            ));
        }
        if let Some(c) = &self.created
            && chrono::DateTime::parse_from_rfc3339(c).is_err()
        {
            return Err(format!(
                "created {:?} is not an RFC 3339 time (e.g. 2026-01-31T12:00:00Z)",
                c.chars().take(80).collect::<String>()
            ));
        }
        Ok(())
    }

    /// Whether `self` is newer (`Greater`) or older (`Less`) than `other`: by version
    /// when both are semantic versions (a leading `v` allowed) of different precedence
    /// (build metadata, `+…`, does not order versions: semver says so, and a build
    /// hash would order them at random), else by creation time; `None` when neither
    /// tells (no comparable versions, a time missing).
    pub fn age_against(&self, other: &Statement) -> Option<Ordering> {
        if let (Some(a), Some(b)) = (self.semver(), other.semver()) {
            let by_version = a.cmp_precedence(&b);
            if by_version != Ordering::Equal {
                return Some(by_version);
            }
        }
        Some(self.created_at()?.cmp(&other.created_at()?))
    }

    /// Whether `self` is the newer version of the two by its version, yet was made
    /// before `other` (a 2.0.0 built before the 1.9.5 backport, or a version number
    /// someone inflated on an old build): worth a warning, as the version decides.
    pub fn newer_but_made_before(&self, other: &Statement) -> bool {
        let (Some(a), Some(b)) = (self.semver(), other.semver()) else {
            return false;
        };
        a.cmp_precedence(&b) == Ordering::Greater
            && matches!((self.created_at(), other.created_at()), (Some(x), Some(y)) if x < y)
    }

    fn semver(&self) -> Option<semver::Version> {
        let v = self.version.as_deref()?;
        semver::Version::parse(v.strip_prefix('v').unwrap_or(v)).ok()
    }

    fn created_at(&self) -> Option<chrono::DateTime<chrono::FixedOffset>> {
        chrono::DateTime::parse_from_rfc3339(self.created.as_deref()?).ok()
    }

    /// `version 1.2.0, created 2026-01-31T12:00:00Z` (what is known of it).
    pub fn describe(&self) -> String {
        let version = self.version.as_deref().unwrap_or("(none)");
        let created = self.created.as_deref().unwrap_or("(unknown)");
        format!("version {version}, created {created}")
    }

    fn message(&self) -> Vec<u8> {
        let mut m = CONTEXT_V2.to_vec();
        // A struct of strings always serializes.
        m.extend_from_slice(&serde_json::to_vec(self).unwrap_or_default());
        m
    }
}

/// A public key: `ed25519:<base64 of 32 bytes>`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PublicKey([u8; 32]);

impl PublicKey {
    /// Parses `ed25519:<base64>`.
    ///
    /// # Errors
    /// [`SignatureError::BadKey`].
    pub fn parse(s: &str) -> Result<Self, SignatureError> {
        let bad = || {
            SignatureError::BadKey(format!(
                "{:?} is not a public key (ed25519: and 32 bytes of base64, as `hermetic keygen` writes)",
                s.chars().take(80).collect::<String>()
            ))
        };
        let b64 = s.trim().strip_prefix("ed25519:").ok_or_else(bad)?;
        let bytes = B64.decode(b64).map_err(|_| bad())?;
        Ok(Self(bytes.try_into().map_err(|_| bad())?))
    }

    /// A short id: the first 16 hex digits of the key's sha256.
    pub fn id(&self) -> String {
        Digest::of(&self.0).hex()[..16].to_owned()
    }
}

impl fmt::Display for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ed25519:{}", B64.encode(self.0))
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({})", self.id())
    }
}

/// A private key (PKCS#8, PEM-armoured in its file).
pub struct SigningKey(Ed25519KeyPair);

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SigningKey({})", self.public().id())
    }
}

impl SigningKey {
    /// A new key: its PEM text (for a 0600 file) and the key.
    ///
    /// # Errors
    /// [`SignatureError::BadKey`] if the system has no randomness.
    pub fn generate() -> Result<(String, Self), SignatureError> {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng)
            .map_err(|_| SignatureError::BadKey("no randomness to make a key with".into()))?;
        let pem = format!("{PEM_BEGIN}\n{}\n{PEM_END}\n", B64.encode(pkcs8.as_ref()));
        Ok((pem.clone(), Self::from_pem(&pem)?))
    }

    /// Reads a key file's text.
    ///
    /// # Errors
    /// [`SignatureError::BadKey`] for anything but an Ed25519 PKCS#8 key.
    pub fn from_pem(text: &str) -> Result<Self, SignatureError> {
        let bad = |why: &str| SignatureError::BadKey(format!("not an Ed25519 private key: {why}"));
        let body = text
            .trim()
            .strip_prefix(PEM_BEGIN)
            .and_then(|t| t.strip_suffix(PEM_END))
            .ok_or_else(|| bad("no PRIVATE KEY armour"))?;
        let der: String = body.split_whitespace().collect();
        let der = B64.decode(der).map_err(|_| bad("bad base64"))?;
        Ed25519KeyPair::from_pkcs8_maybe_unchecked(&der)
            .map(Self)
            .map_err(|_| bad("not Ed25519 PKCS#8"))
    }

    /// Its public key.
    pub fn public(&self) -> PublicKey {
        let mut key = [0u8; 32];
        key.copy_from_slice(self.0.public_key().as_ref());
        PublicKey(key)
    }

    /// Signs `statement` (format v2).
    pub fn sign(&self, statement: &Statement) -> Signature {
        let sig = self.0.sign(&statement.message());
        Signature {
            format: Format::V2,
            key: self.public().id(),
            statement: statement.clone(),
            signature: B64.encode(sig.as_ref()),
        }
    }
}

fn message_v1(digest: &Digest) -> Vec<u8> {
    let mut m = CONTEXT_V1.to_vec();
    m.extend_from_slice(digest.to_string().as_bytes());
    m
}

/// A signature document's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The bare digest (refused when verifying; see the module docs).
    V1,
    /// A [`Statement`].
    V2,
}

/// One signature document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// Its format.
    pub format: Format,
    /// The signing key's id.
    pub key: String,
    /// What it signs (for format v1, the digest alone).
    pub statement: Statement,
    /// The signature, base64.
    pub signature: String,
}

/// The JSON of a signature document: v1 `{"v":1,"alg","key","digest","sig"}`, v2
/// `{"v":2,"alg","key","statement","sig"}`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    v: u32,
    alg: String,
    key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    digest: Option<Digest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    statement: Option<Statement>,
    sig: String,
}

impl Signature {
    /// The component it is for.
    pub fn digest(&self) -> &Digest {
        &self.statement.digest
    }

    /// Parses a signature document (either format).
    ///
    /// # Errors
    /// [`SignatureError::BadSignature`].
    pub fn parse(bytes: &[u8]) -> Result<Self, SignatureError> {
        if bytes.len() > MAX_SIGNATURE_BYTES {
            return Err(SignatureError::BadSignature(format!(
                "{} bytes, more than {MAX_SIGNATURE_BYTES}",
                bytes.len()
            )));
        }
        let d: Document = serde_json::from_slice(bytes)
            .map_err(|e| SignatureError::BadSignature(e.to_string()))?;
        if d.alg != "ed25519" {
            return Err(SignatureError::BadSignature(format!(
                "algorithm {:?} (ed25519 expected)",
                d.alg
            )));
        }
        let (format, statement) = match (d.v, d.digest, d.statement) {
            (1, Some(digest), None) => (
                Format::V1,
                Statement {
                    digest,
                    repository: None,
                    version: None,
                    created: None,
                },
            ),
            (2, None, Some(statement)) => {
                statement.check().map_err(SignatureError::BadSignature)?;
                (Format::V2, statement)
            }
            (v, ..) => {
                return Err(SignatureError::BadSignature(format!(
                    "version {v} with these fields (v 1 with a digest or v 2 with a statement expected)"
                )));
            }
        };
        Ok(Self {
            format,
            key: d.key,
            statement,
            signature: d.sig,
        })
    }

    /// The document's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let (v, digest, statement) = match self.format {
            Format::V1 => (1, Some(self.statement.digest.clone()), None),
            Format::V2 => (2, None, Some(self.statement.clone())),
        };
        let d = Document {
            v,
            alg: "ed25519".to_owned(),
            key: self.key.clone(),
            digest,
            statement,
            sig: self.signature.clone(),
        };
        // Plain strings and numbers always serialize.
        serde_json::to_vec(&d).unwrap_or_default()
    }

    /// A short name for it, unique per key and statement (the store's file name).
    pub fn file_stem(&self) -> String {
        let statement = Digest::of(&self.statement.message());
        format!("{}-{}", self.key, &statement.hex()[..16])
    }

    /// Whether `key` made this signature over what it says.
    fn verifies_with(&self, key: &PublicKey) -> bool {
        let message = match self.format {
            Format::V1 => message_v1(&self.statement.digest),
            Format::V2 => self.statement.message(),
        };
        B64.decode(&self.signature).is_ok_and(|bytes| {
            UnparsedPublicKey::new(&ED25519, &key.0)
                .verify(&message, &bytes)
                .is_ok()
        })
    }
}

/// A signature that verified: by which trusted key, and what it said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The trusted key.
    pub key: PublicKey,
    /// What it signed.
    pub statement: Statement,
}

/// The keys a host trusts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedKeys(Vec<PublicKey>);

impl TrustedKeys {
    /// These keys.
    pub fn new(keys: Vec<PublicKey>) -> Self {
        Self(keys)
    }

    /// Whether no key is trusted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `id` is one of these keys' ids.
    pub fn trusts(&self, id: &str) -> bool {
        self.0.iter().any(|k| k.id() == id)
    }

    /// The trusted key's format-v2 signature, among `signatures`, that says `digest`
    /// was published as `repository` (`None`: a file, any repository).
    ///
    /// # Errors
    /// [`SignatureError::Unsigned`] without signatures for this digest;
    /// [`SignatureError::Invalid`] when a trusted key's signature does not verify;
    /// [`SignatureError::OtherRepository`] when a trusted key signed it for another
    /// repository; [`SignatureError::OldFormat`] when a trusted key signed it in format
    /// v1 only; [`SignatureError::Untrusted`] when only other keys signed.
    pub fn verify(
        &self,
        digest: &Digest,
        repository: Option<&str>,
        signatures: &[Signature],
    ) -> Result<Verified, SignatureError> {
        let for_this: Vec<&Signature> =
            signatures.iter().filter(|s| s.digest() == digest).collect();
        if for_this.is_empty() {
            return Err(SignatureError::Unsigned {
                digest: digest.clone(),
            });
        }
        // The most telling refusal when nothing verifies: tampering, then a signature
        // for another repository, then the old format.
        let mut refusal: Option<SignatureError> = None;
        let rank = |e: &SignatureError| match e {
            SignatureError::Invalid { .. } => 3,
            SignatureError::OtherRepository { .. } => 2,
            _ => 1,
        };
        for sig in &for_this {
            let Some(key) = self.0.iter().find(|k| k.id() == sig.key) else {
                continue;
            };
            let found = if !sig.verifies_with(key) {
                SignatureError::Invalid {
                    digest: digest.clone(),
                    key: sig.key.clone(),
                }
            } else if sig.format == Format::V1 {
                SignatureError::OldFormat {
                    digest: digest.clone(),
                    key: sig.key.clone(),
                }
            } else if let Some(wanted) =
                repository.filter(|r| sig.statement.repository.as_deref() != Some(*r))
            {
                SignatureError::OtherRepository {
                    digest: digest.clone(),
                    key: sig.key.clone(),
                    signed: sig
                        .statement
                        .repository
                        .clone()
                        .unwrap_or_else(|| "a file".to_owned()),
                    wanted: wanted.to_owned(),
                }
            } else {
                return Ok(Verified {
                    key: key.clone(),
                    statement: sig.statement.clone(),
                });
            };
            if refusal.as_ref().is_none_or(|r| rank(&found) > rank(r)) {
                refusal = Some(found);
            }
        }
        if let Some(refusal) = refusal {
            return Err(refusal);
        }
        let mut keys: Vec<&str> = for_this.iter().map(|s| s.key.as_str()).collect();
        keys.sort_unstable();
        keys.dedup();
        Err(SignatureError::Untrusted {
            digest: digest.clone(),
            keys: keys.join(", "),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statement(digest: &Digest, repository: &str, version: &str, created: &str) -> Statement {
        Statement::new(
            digest.clone(),
            Some(repository),
            Some(version),
            Some(created),
        )
        .unwrap()
    }

    #[test]
    fn a_signature_verifies_only_for_its_statement_and_a_trusted_key() {
        let (pem, generated) = SigningKey::generate().unwrap();
        // The key file reads back as the same key.
        let key = SigningKey::from_pem(&pem).unwrap();
        assert_eq!(key.public(), generated.public());
        let (_, stranger) = SigningKey::generate().unwrap();
        let d = Digest::of(b"component");
        let said = statement(&d, "tools/echo", "1.0.0", "2026-01-01T00:00:00Z");
        let sig = key.sign(&said);
        let sig = Signature::parse(&sig.to_bytes()).unwrap();
        assert_eq!(sig.format, Format::V2);
        let trusted = TrustedKeys::new(vec![PublicKey::parse(&key.public().to_string()).unwrap()]);
        assert_eq!(
            trusted.verify(&d, Some("tools/echo"), std::slice::from_ref(&sig)),
            Ok(Verified {
                key: key.public(),
                statement: said.clone(),
            })
        );
        // A file check asks for no repository.
        assert!(trusted.verify(&d, None, std::slice::from_ref(&sig)).is_ok());
        // Another component: unsigned.
        let other = Digest::of(b"other");
        assert!(matches!(
            trusted.verify(&other, Some("tools/echo"), std::slice::from_ref(&sig)),
            Err(SignatureError::Unsigned { .. })
        ));
        // The same component pulled from another repository: refused, saying which.
        let e = trusted
            .verify(&d, Some("tools/other"), std::slice::from_ref(&sig))
            .unwrap_err();
        assert!(
            matches!(&e, SignatureError::OtherRepository { signed, wanted, .. } if signed == "tools/echo" && wanted == "tools/other"),
            "{e}"
        );
        // Each field of the statement is signed: changing any one breaks it.
        let tampered = [
            Statement {
                digest: other.clone(),
                ..said.clone()
            },
            Statement {
                repository: Some("tools/other".into()),
                ..said.clone()
            },
            Statement {
                version: Some("9.9.9".into()),
                ..said.clone()
            },
            Statement {
                created: Some("2030-01-01T00:00:00Z".into()),
                ..said.clone()
            },
        ];
        for statement in tampered {
            let moved = Signature {
                statement: statement.clone(),
                ..sig.clone()
            };
            let repository = statement.repository.as_deref();
            let e = trusted
                .verify(&statement.digest, repository, &[moved])
                .unwrap_err();
            assert!(matches!(e, SignatureError::Invalid { .. }), "{e}");
        }
        // A stranger's signature is untrusted, and says whose it is.
        let e = trusted
            .verify(&d, Some("tools/echo"), &[stranger.sign(&said)])
            .unwrap_err();
        assert!(e.to_string().contains(&stranger.public().id()), "{e}");
        // A stranger claiming the trusted key's id does not verify.
        let mut forged = stranger.sign(&said);
        forged.key = key.public().id();
        assert!(matches!(
            trusted.verify(&d, Some("tools/echo"), &[forged]),
            Err(SignatureError::Invalid { .. })
        ));
        // A good signature among bad ones is found.
        let mut bad = sig.clone();
        bad.signature = B64.encode([0u8; 64]);
        assert!(
            trusted
                .verify(&d, Some("tools/echo"), &[bad, sig.clone()])
                .is_ok()
        );
        // Garbage is refused cleanly.
        for bad in ["", "ed25519:", "ed25519:AAAA", "rsa:abc"] {
            assert!(PublicKey::parse(bad).is_err(), "{bad}");
        }
        assert!(
            SigningKey::from_pem("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----")
                .is_err()
        );
        assert!(Signature::parse(b"{}").is_err());
        assert!(Signature::parse(&vec![b' '; MAX_SIGNATURE_BYTES + 1]).is_err());
    }

    /// A v1 document exactly as hermetic before statements wrote it: the bare digest
    /// signed under the v1 context.
    fn v1_signature(key: &SigningKey, digest: &Digest) -> Vec<u8> {
        let sig = key.0.sign(&message_v1(digest));
        format!(
            r#"{{"v":1,"alg":"ed25519","key":"{}","digest":"{digest}","sig":"{}"}}"#,
            key.public().id(),
            B64.encode(sig.as_ref())
        )
        .into_bytes()
    }

    #[test]
    fn a_v1_signature_by_a_trusted_key_is_refused_saying_how_to_sign_again() {
        let (_, key) = SigningKey::generate().unwrap();
        let d = Digest::of(b"component");
        let v1 = Signature::parse(&v1_signature(&key, &d)).unwrap();
        assert_eq!(v1.format, Format::V1);
        // It reads back to the same bytes (a store keeps it as it came).
        assert_eq!(Signature::parse(&v1.to_bytes()).unwrap(), v1);
        let trusted = TrustedKeys::new(vec![key.public()]);
        let e = trusted
            .verify(&d, Some("tools/echo"), std::slice::from_ref(&v1))
            .unwrap_err();
        assert!(matches!(e, SignatureError::OldFormat { .. }), "{e}");
        let text = e.to_string();
        assert!(
            text.contains("format v1") && text.contains("hermetic sign"),
            "{text}"
        );
        // A v1 document whose signature does not verify is tampering, not old.
        let mut changed = v1.clone();
        changed.statement.digest = Digest::of(b"other");
        assert!(matches!(
            trusted.verify(&Digest::of(b"other"), None, &[changed]),
            Err(SignatureError::Invalid { .. })
        ));
        // A v2 signature beside it is what counts.
        let v2 = key.sign(&statement(&d, "tools/echo", "1", "2026-01-01T00:00:00Z"));
        assert!(trusted.verify(&d, Some("tools/echo"), &[v1, v2]).is_ok());
    }

    #[test]
    fn statements_order_by_version_then_by_creation_time() {
        let d = Digest::of(b"x");
        let s = |v: &str, c: &str| {
            Statement::new(
                d.clone(),
                Some("t/x"),
                (!v.is_empty()).then_some(v),
                (!c.is_empty()).then_some(c),
            )
            .unwrap()
        };
        let rows = [
            (
                ("1.10.0", "2026-01-01T00:00:00Z"),
                ("1.9.0", "2026-06-01T00:00:00Z"),
                Some(Ordering::Greater),
                "semver, not text, and not time",
            ),
            (
                ("v2.0.0", ""),
                ("1.0.0", ""),
                Some(Ordering::Greater),
                "a leading v",
            ),
            (
                ("1.0.0", "2026-01-01T00:00:00Z"),
                ("1.0.0", "2026-01-02T00:00:00Z"),
                Some(Ordering::Less),
                "the same version: the time",
            ),
            (
                ("stable", "2026-01-02T00:00:00+02:00"),
                ("stable", "2026-01-01T23:00:00Z"),
                Some(Ordering::Less),
                "times compared as instants",
            ),
            (
                ("", "2026-01-02T00:00:00Z"),
                ("", "2026-01-01T00:00:00Z"),
                Some(Ordering::Greater),
                "no versions: the time",
            ),
            (
                ("1.2.0+c144a98", "2026-01-02T00:00:00Z"),
                ("1.2.0+d0f1e2b", "2026-01-01T00:00:00Z"),
                Some(Ordering::Greater),
                "build metadata orders nothing: the time",
            ),
            (
                ("1.2.0+ffff", "2026-01-01T00:00:00Z"),
                ("1.2.0+0000", "2026-01-02T00:00:00Z"),
                Some(Ordering::Less),
                "build metadata orders nothing, whichever way the hashes sort",
            ),
            (
                ("1.2.0-rc.1", "2026-06-01T00:00:00Z"),
                ("1.2.0", "2026-01-01T00:00:00Z"),
                Some(Ordering::Less),
                "a pre-release precedes its release",
            ),
            (("1.0.0", ""), ("1.0.0", ""), None, "nothing tells"),
            (
                ("1.0.0+a", ""),
                ("1.0.0+b", ""),
                None,
                "nothing tells, build metadata included",
            ),
            (
                ("", ""),
                ("", "2026-01-01T00:00:00Z"),
                None,
                "a time missing",
            ),
        ];
        for ((va, ca), (vb, cb), expected, why) in rows {
            assert_eq!(s(va, ca).age_against(&s(vb, cb)), expected, "{why}");
        }
        // A newer version made earlier is newer, and said to be odd.
        let backport = s("1.9.5", "2026-06-01T00:00:00Z");
        let major = s("2.0.0", "2026-01-01T00:00:00Z");
        assert_eq!(major.age_against(&backport), Some(Ordering::Greater));
        assert!(major.newer_but_made_before(&backport));
        assert!(!backport.newer_but_made_before(&major));
        assert!(!s("2.0.0", "2026-07-01T00:00:00Z").newer_but_made_before(&backport));
    }

    #[test]
    fn statements_with_fields_no_publisher_writes_are_refused() {
        let d = Digest::of(b"x");
        assert!(Statement::new(d.clone(), Some("Tools/Echo"), None, None).is_err());
        assert!(Statement::new(d.clone(), Some(""), None, None).is_err());
        assert!(Statement::new(d.clone(), None, Some("1.0\n"), None).is_err());
        assert!(Statement::new(d.clone(), None, Some(&"9".repeat(129)), None).is_err());
        assert!(Statement::new(d.clone(), None, None, Some("yesterday")).is_err());
        assert!(
            Statement::new(
                d,
                Some("tools/echo"),
                Some("1.0"),
                Some("2026-01-01T00:00:00Z")
            )
            .is_ok()
        );
        // A document carrying such a statement does not parse.
        let bad = format!(
            r#"{{"v":2,"alg":"ed25519","key":"k","statement":{{"digest":"{}","repository":null,"version":"1\u0000","created":null}},"sig":""}}"#,
            Digest::of(b"x")
        );
        assert!(Signature::parse(bad.as_bytes()).is_err());
        // Neither format's fields mixed.
        let mixed = format!(
            r#"{{"v":1,"alg":"ed25519","key":"k","statement":{{"digest":"{}"}},"sig":""}}"#,
            Digest::of(b"x")
        );
        assert!(Signature::parse(mixed.as_bytes()).is_err());
    }
}
