//! The wasm component artifact of the CNCF wasm OCI layout: an OCI image manifest whose
//! config has media type `application/vnd.wasm.config.v0+json` and whose one layer is
//! the component (`application/wasm`). The manifest carries the OCI annotations
//! `org.opencontainers.image.version` and `.created`, which `hermetic sign` puts in the
//! signed statement (so two pushes of one component make two manifests, one component
//! digest).
//!
//! A manifest from a registry is untrusted input: [`WasmManifest::parse`] checks its
//! size, media types, the one layer, and refuses external `urls` (a registry could
//! otherwise send the pull to any host).

use crate::digest::Digest;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The OCI image manifest media type.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// The wasm config media type.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The component layer media type.
pub const LAYER_MEDIA_TYPE: &str = "application/wasm";
/// Largest manifest read (the distribution spec's recommended limit).
pub const MAX_MANIFEST_BYTES: usize = 4 * 1024 * 1024;
/// Largest config blob read.
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;
/// Largest component pulled: the runtime's own limit on a component's size.
pub const MAX_COMPONENT_BYTES: u64 = 64 * 1024 * 1024;
/// The OCI annotation naming the artifact's version.
pub const VERSION_ANNOTATION: &str = "org.opencontainers.image.version";
/// The OCI annotation saying when the artifact was made (RFC 3339).
pub const CREATED_ANNOTATION: &str = "org.opencontainers.image.created";

/// An OCI content descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// Media type.
    pub media_type: String,
    /// Content digest.
    pub digest: Digest,
    /// Size in bytes.
    pub size: u64,
    /// External locations: refused when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub urls: Option<serde_json::Value>,
}

impl Descriptor {
    fn of(media_type: &str, bytes: &[u8]) -> Self {
        Self {
            media_type: media_type.to_owned(),
            digest: Digest::of(bytes),
            size: bytes.len() as u64,
            urls: None,
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ManifestJson {
    schema_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    media_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    artifact_type: Option<String>,
    config: Descriptor,
    layers: Vec<Descriptor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    annotations: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ConfigJson<'a> {
    architecture: &'a str,
    os: &'a str,
    layer_digests: Vec<String>,
}

/// A component packaged for a registry: the config blob and the manifest, as bytes.
#[derive(Debug, Clone)]
pub struct Packaged {
    /// The config blob.
    pub config: Vec<u8>,
    /// The manifest.
    pub manifest: Vec<u8>,
    /// The manifest's digest (what a pinned reference names).
    pub manifest_digest: Digest,
    /// The component's digest (what signatures and grants name).
    pub component_digest: Digest,
}

/// What a push says about the component in its manifest's annotations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Annotations {
    /// `org.opencontainers.image.version`.
    pub version: Option<String>,
    /// `org.opencontainers.image.created` (RFC 3339).
    pub created: Option<String>,
}

impl Annotations {
    /// `version`, made now (UTC, to the second).
    pub fn now(version: Option<String>) -> Self {
        let now = chrono::DateTime::<chrono::Utc>::from(std::time::SystemTime::now());
        Self {
            version,
            created: Some(now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        }
    }

    fn to_map(&self) -> Option<BTreeMap<String, String>> {
        let map: BTreeMap<String, String> = [
            (VERSION_ANNOTATION, &self.version),
            (CREATED_ANNOTATION, &self.created),
        ]
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_owned(), v.clone()?)))
        .collect();
        (!map.is_empty()).then_some(map)
    }
}

/// Packages `component` as a wasm artifact with `annotations`.
pub fn package(component: &[u8], annotations: &Annotations) -> Packaged {
    let layer = Descriptor::of(LAYER_MEDIA_TYPE, component);
    let config = serde_json::to_vec(&ConfigJson {
        architecture: "wasm",
        os: "wasip2",
        layer_digests: vec![layer.digest.to_string()],
    })
    .unwrap_or_default();
    let manifest = ManifestJson {
        schema_version: 2,
        media_type: Some(MANIFEST_MEDIA_TYPE.to_owned()),
        artifact_type: Some(CONFIG_MEDIA_TYPE.to_owned()),
        config: Descriptor::of(CONFIG_MEDIA_TYPE, &config),
        layers: vec![layer.clone()],
        annotations: annotations.to_map(),
    };
    // Serializing plain strings and numbers cannot fail.
    let manifest = serde_json::to_vec(&manifest).unwrap_or_default();
    Packaged {
        manifest_digest: Digest::of(&manifest),
        component_digest: layer.digest,
        config,
        manifest,
    }
}

/// A manifest that is not a wasm component artifact hermetic will pull.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a wasm component artifact: {0}")]
pub struct BadManifest(pub String);

/// A checked wasm component manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WasmManifest {
    /// The config blob.
    pub config: Descriptor,
    /// The component.
    pub component: Descriptor,
    /// What the manifest says about it (unsigned: a signed [`Statement`] is what a
    /// host trusts).
    ///
    /// [`Statement`]: crate::signature::Statement
    pub annotations: Annotations,
}

impl WasmManifest {
    /// Checks manifest bytes from a registry or the store.
    ///
    /// # Errors
    /// [`BadManifest`] saying what is wrong.
    pub fn parse(bytes: &[u8]) -> Result<Self, BadManifest> {
        if bytes.len() > MAX_MANIFEST_BYTES {
            return Err(BadManifest(format!(
                "the manifest is {} bytes, more than {MAX_MANIFEST_BYTES}",
                bytes.len()
            )));
        }
        let m: ManifestJson = serde_json::from_slice(bytes)
            .map_err(|e| BadManifest(format!("the manifest is not an OCI image manifest: {e}")))?;
        if m.schema_version != 2 {
            return Err(BadManifest(format!(
                "schemaVersion {} (2 expected)",
                m.schema_version
            )));
        }
        if let Some(t) = m.media_type.as_deref()
            && t != MANIFEST_MEDIA_TYPE
        {
            return Err(BadManifest(format!(
                "media type {t:?} ({MANIFEST_MEDIA_TYPE} expected)"
            )));
        }
        if m.config.media_type != CONFIG_MEDIA_TYPE {
            return Err(BadManifest(format!(
                "config media type {:?} ({CONFIG_MEDIA_TYPE} expected): an image, not a wasm component?",
                m.config.media_type
            )));
        }
        let [layer] = m.layers.as_slice() else {
            return Err(BadManifest(format!(
                "{} layers (exactly one, the component, expected)",
                m.layers.len()
            )));
        };
        if layer.media_type != LAYER_MEDIA_TYPE {
            return Err(BadManifest(format!(
                "layer media type {:?} ({LAYER_MEDIA_TYPE} expected)",
                layer.media_type
            )));
        }
        if m.config.urls.is_some() || layer.urls.is_some() {
            return Err(BadManifest(
                "a descriptor lists external urls (refused: content comes from the registry only)"
                    .into(),
            ));
        }
        if layer.size > MAX_COMPONENT_BYTES || m.config.size > MAX_CONFIG_BYTES {
            return Err(BadManifest(format!(
                "the component is {} bytes (at most {MAX_COMPONENT_BYTES})",
                layer.size
            )));
        }
        let annotation = |key: &str| m.annotations.as_ref().and_then(|a| a.get(key)).cloned();
        Ok(Self {
            config: m.config.clone(),
            component: layer.clone(),
            annotations: Annotations {
                version: annotation(VERSION_ANNOTATION),
                created: annotation(CREATED_ANNOTATION),
            },
        })
    }
}

/// The media type of a hermetic signature document (a layer of a signature artifact).
pub const SIGNATURE_MEDIA_TYPE: &str = "application/vnd.hermetic.signature.v1+json";
/// The empty config of an artifact without one.
const EMPTY_MEDIA_TYPE: &str = "application/vnd.oci.empty.v1+json";
/// Most signatures kept on one component.
pub const MAX_SIGNATURES: usize = 16;

/// The empty config blob (`{}`).
pub const EMPTY_CONFIG: &[u8] = b"{}";

/// The tag a component manifest's signatures live under (cosign's convention:
/// registries without the referrers API, distribution 2.8 among them, find it by name).
pub fn signature_tag(manifest: &Digest) -> String {
    format!("sha256-{}.sig", manifest.hex())
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SignatureManifestJson {
    schema_version: u32,
    media_type: String,
    artifact_type: String,
    config: Descriptor,
    layers: Vec<Descriptor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    subject: Option<Descriptor>,
}

/// The signature artifact for the component manifest `subject`: one layer per
/// signature document.
pub fn signature_manifest(subject: &[u8], signatures: &[Vec<u8>]) -> Vec<u8> {
    let m = SignatureManifestJson {
        schema_version: 2,
        media_type: MANIFEST_MEDIA_TYPE.to_owned(),
        artifact_type: SIGNATURE_MEDIA_TYPE.to_owned(),
        config: Descriptor::of(EMPTY_MEDIA_TYPE, EMPTY_CONFIG),
        layers: signatures
            .iter()
            .map(|s| Descriptor::of(SIGNATURE_MEDIA_TYPE, s))
            .collect(),
        subject: Some(Descriptor::of(MANIFEST_MEDIA_TYPE, subject)),
    };
    serde_json::to_vec(&m).unwrap_or_default()
}

/// The signature layers of a signature artifact (at most [`MAX_SIGNATURES`], each at
/// most `limit` bytes; other layers are ignored).
///
/// # Errors
/// [`BadManifest`] when it is not one.
pub fn signature_layers(bytes: &[u8], limit: u64) -> Result<Vec<Descriptor>, BadManifest> {
    if bytes.len() > MAX_MANIFEST_BYTES {
        return Err(BadManifest("the signature manifest is too large".into()));
    }
    let m: SignatureManifestJson = serde_json::from_slice(bytes)
        .map_err(|e| BadManifest(format!("not a signature manifest: {e}")))?;
    Ok(m.layers
        .into_iter()
        .filter(|l| l.media_type == SIGNATURE_MEDIA_TYPE && l.size <= limit && l.urls.is_none())
        .take(MAX_SIGNATURES)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packaged_component_parses_back_with_its_annotations() {
        let annotations = Annotations {
            version: Some("1.2.0".into()),
            created: Some("2026-01-31T12:00:00Z".into()),
        };
        let p = package(b"\0asm component", &annotations);
        let m = WasmManifest::parse(&p.manifest).unwrap();
        assert_eq!(m.component.digest, Digest::of(b"\0asm component"));
        assert_eq!(m.component.digest, p.component_digest);
        assert_eq!(m.annotations, annotations);
        let text = String::from_utf8(p.manifest.clone()).unwrap();
        assert!(
            text.contains(r#""org.opencontainers.image.version":"1.2.0""#),
            "{text}"
        );
        // The same component and annotations: the same manifest.
        assert_eq!(
            package(b"\0asm component", &annotations).manifest_digest,
            p.manifest_digest
        );
        // None: no annotations at all (as before them).
        let bare = package(b"\0asm component", &Annotations::default());
        assert!(
            !String::from_utf8(bare.manifest)
                .unwrap()
                .contains("annotations")
        );
        // `now` is RFC 3339 UTC.
        let now = Annotations::now(None).created.unwrap();
        assert!(
            chrono::DateTime::parse_from_rfc3339(&now).is_ok() && now.ends_with('Z'),
            "{now}"
        );
    }

    #[test]
    fn manifests_that_are_not_one_wasm_layer_are_refused() {
        let p = package(b"x", &Annotations::default());
        let text = String::from_utf8(p.manifest).unwrap();
        let bad = |from: &str, to: &str, says: &str| {
            let m = text.replacen(from, to, 1);
            assert_ne!(m, text, "{from}");
            let e = WasmManifest::parse(m.as_bytes()).unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        };
        bad(
            "\"application/wasm\"",
            "\"application/vnd.oci.image.layer.v1.tar+gzip\"",
            "layer media type",
        );
        bad(
            "\"config\":{\"mediaType\":\"application/vnd.wasm.config.v0+json\"",
            "\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\"",
            "config media type",
        );
        bad(
            "\"schemaVersion\":2",
            "\"schemaVersion\":1",
            "schemaVersion",
        );
        bad(
            "\"size\":1}",
            "\"size\":1,\"urls\":[\"http://169.254.169.254/\"]}",
            "external urls",
        );
        bad("\"size\":1}", "\"size\":99999999999}", "bytes (at most");
        bad(
            "\"layers\":[",
            "\"layers\":[{\"mediaType\":\"application/wasm\",\"digest\":\"sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824\",\"size\":5},",
            "2 layers",
        );
        assert!(WasmManifest::parse(&vec![b' '; MAX_MANIFEST_BYTES + 1]).is_err());
        assert!(WasmManifest::parse(b"{").is_err());
    }
}
