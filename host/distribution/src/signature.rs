//! Ed25519 signatures over a component's digest, detached and verified offline.
//!
//! Why detached over the digest, not embedded in the component (`wasmsign2`): an
//! embedded signature changes the component's bytes, so its digest — the store key, the
//! OCI layer digest, what a grant is bound to — would change with every signer. A
//! signature here is a small JSON document naming the digest; it travels beside the
//! component (`FILE.sig`, the store's `signatures/`, and a registry tag
//! `sha256-<manifest hex>.sig`, cosign's convention, since distribution 2.8 has no
//! referrers API). `ring` does the cryptography (already in the tree through rustls).
//!
//! What is signed is `hermetic-tool-signature-v1\0sha256:<hex>`: the prefix keeps a
//! signature made for anything else from verifying as a tool signature.

use crate::digest::Digest;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use ring::signature::{ED25519, Ed25519KeyPair, KeyPair as _, UnparsedPublicKey};
use serde::{Deserialize, Serialize};
use std::fmt;

const CONTEXT: &[u8] = b"hermetic-tool-signature-v1\0";
const PEM_BEGIN: &str = "-----BEGIN PRIVATE KEY-----";
const PEM_END: &str = "-----END PRIVATE KEY-----";
/// Largest signature document read.
pub const MAX_SIGNATURE_BYTES: usize = 64 * 1024;

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

    /// Signs the component with `digest`.
    pub fn sign(&self, digest: &Digest) -> Signature {
        let sig = self.0.sign(&message(digest));
        Signature {
            version: 1,
            algorithm: "ed25519".to_owned(),
            key: self.public().id(),
            digest: digest.clone(),
            signature: B64.encode(sig.as_ref()),
        }
    }
}

fn message(digest: &Digest) -> Vec<u8> {
    let mut m = CONTEXT.to_vec();
    m.extend_from_slice(digest.to_string().as_bytes());
    m
}

/// One signature document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signature {
    /// Format version (1).
    #[serde(rename = "v")]
    pub version: u32,
    /// `ed25519`.
    #[serde(rename = "alg")]
    pub algorithm: String,
    /// The signing key's id.
    pub key: String,
    /// The component's digest.
    pub digest: Digest,
    /// The signature, base64.
    #[serde(rename = "sig")]
    pub signature: String,
}

impl Signature {
    /// Parses a signature document.
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
        let s: Self = serde_json::from_slice(bytes)
            .map_err(|e| SignatureError::BadSignature(e.to_string()))?;
        if s.version != 1 || s.algorithm != "ed25519" {
            return Err(SignatureError::BadSignature(format!(
                "version {} algorithm {:?} (1, ed25519 expected)",
                s.version, s.algorithm
            )));
        }
        Ok(s)
    }

    /// The document's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        // Plain strings and numbers always serialize.
        serde_json::to_vec(self).unwrap_or_default()
    }
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

    /// The trusted key that signed `digest`, among `signatures`.
    ///
    /// # Errors
    /// [`SignatureError::Unsigned`] without signatures for this digest,
    /// [`SignatureError::Invalid`] when a trusted key's signature does not verify,
    /// [`SignatureError::Untrusted`] when only other keys signed.
    pub fn verify(
        &self,
        digest: &Digest,
        signatures: &[Signature],
    ) -> Result<PublicKey, SignatureError> {
        let for_this: Vec<&Signature> = signatures.iter().filter(|s| &s.digest == digest).collect();
        if for_this.is_empty() {
            return Err(SignatureError::Unsigned {
                digest: digest.clone(),
            });
        }
        let mut invalid = None;
        for sig in &for_this {
            let Some(key) = self.0.iter().find(|k| k.id() == sig.key) else {
                continue;
            };
            let ok = B64.decode(&sig.signature).is_ok_and(|bytes| {
                UnparsedPublicKey::new(&ED25519, &key.0)
                    .verify(&message(digest), &bytes)
                    .is_ok()
            });
            if ok {
                return Ok(key.clone());
            }
            invalid = Some(sig.key.clone());
        }
        if let Some(key) = invalid {
            return Err(SignatureError::Invalid {
                digest: digest.clone(),
                key,
            });
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

    #[test]
    fn a_signature_verifies_only_for_its_digest_and_a_trusted_key() {
        let (pem, generated) = SigningKey::generate().unwrap();
        // The key file reads back as the same key.
        let key = SigningKey::from_pem(&pem).unwrap();
        assert_eq!(key.public(), generated.public());
        let (_, stranger) = SigningKey::generate().unwrap();
        let d = Digest::of(b"component");
        let sig = key.sign(&d);
        let sig = Signature::parse(&sig.to_bytes()).unwrap();
        let trusted = TrustedKeys::new(vec![PublicKey::parse(&key.public().to_string()).unwrap()]);
        assert_eq!(
            trusted.verify(&d, std::slice::from_ref(&sig)),
            Ok(key.public())
        );
        // Another component: unsigned.
        let other = Digest::of(b"other");
        assert!(matches!(
            trusted.verify(&other, std::slice::from_ref(&sig)),
            Err(SignatureError::Unsigned { .. })
        ));
        // A signature moved onto another digest does not verify.
        let mut moved = sig.clone();
        moved.digest = other.clone();
        assert!(matches!(
            trusted.verify(&other, &[moved]),
            Err(SignatureError::Invalid { .. })
        ));
        // A stranger's signature is untrusted, and says whose it is.
        let e = trusted.verify(&d, &[stranger.sign(&d)]).unwrap_err();
        assert!(e.to_string().contains(&stranger.public().id()), "{e}");
        // A stranger claiming the trusted key's id does not verify.
        let mut forged = stranger.sign(&d);
        forged.key = key.public().id();
        assert!(matches!(
            trusted.verify(&d, &[forged]),
            Err(SignatureError::Invalid { .. })
        ));
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
}
