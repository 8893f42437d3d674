//! Cosign's keyed signatures of an OCI manifest, as pure functions: where they are kept (the
//! tag `sha256-<hex>.sig` of the same repository), the simple-signing payload that names the
//! signed manifest's digest, and the signature manifest — one layer per signature, the payload
//! as its blob and the base64 ECDSA signature in its `dev.cosignproject.cosign/signature`
//! annotation.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::oci::manifest::{Annotations, Descriptor, ImageManifest, OCI_MANIFEST, sha256_hex};

/// The annotation of a signature layer holding the base64 signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The media type of a simple-signing payload layer.
pub const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// `critical.type` of a cosign payload.
pub const PAYLOAD_TYPE: &str = "cosign container image signature";
const IMAGE_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
/// The largest payload read: cosign's are a few hundred bytes.
pub const MAX_PAYLOAD: u64 = 64 * 1024;

/// The tag of the signatures of the manifest `digest` (`sha256:<hex>` → `sha256-<hex>.sig`).
pub fn signature_tag(digest: &str) -> Option<String> {
    sha256_hex(digest).map(|hex| format!("sha256-{hex}.sig"))
}

/// The annotation of a keyless signature layer holding the Fulcio certificate (PEM).
pub const CERTIFICATE_ANNOTATION: &str = "dev.sigstore.cosign/certificate";
/// The annotation holding the certificate's chain (PEM; informative, the trusted root decides).
pub const CHAIN_ANNOTATION: &str = "dev.sigstore.cosign/chain";
/// The annotation holding the Rekor bundle (JSON: the signed entry timestamp and the entry).
pub const BUNDLE_ANNOTATION: &str = "dev.sigstore.cosign/bundle";

/// One signature as stored: the payload bytes and the base64 signature text, and for a
/// keyless signature the certificate (PEM) and the Rekor bundle (JSON) of its annotations.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Signature {
    pub payload: Vec<u8>,
    pub signature: String,
    pub certificate: Option<String>,
    pub bundle: Option<String>,
}

/// The simple-signing payload of `digest` pushed as `docker_reference` (`HOST/REPO`), in
/// cosign's field order.
pub fn payload(docker_reference: &str, digest: &str) -> Vec<u8> {
    let value = serde_json::json!({
        "critical": {
            "identity": {"docker-reference": docker_reference},
            "image": {"docker-manifest-digest": digest},
            "type": PAYLOAD_TYPE,
        },
        "optional": null,
    });
    // serde_json's map keeps keys sorted, which is cosign's order here too.
    value.to_string().into_bytes()
}

/// The manifest digest a payload names, after checking it is a cosign payload.
pub fn signed_digest(payload: &[u8]) -> Result<String, String> {
    let value: serde_json::Value = serde_json::from_slice(payload).map_err(|e| format!("not JSON: {e}"))?;
    let critical = value.get("critical").ok_or("no `critical`")?;
    let kind = critical.get("type").and_then(|t| t.as_str()).unwrap_or_default();
    if kind != PAYLOAD_TYPE {
        return Err(format!("critical.type is {kind:?}, not {PAYLOAD_TYPE:?}"));
    }
    critical
        .pointer("/image/docker-manifest-digest")
        .and_then(|d| d.as_str())
        .map(str::to_string)
        .ok_or_else(|| "no critical.image.docker-manifest-digest".to_string())
}

/// The layers of a signature manifest that carry a signature (others are ignored, as cosign
/// does), with the signature text.
pub fn signature_layers(manifest: &[u8]) -> Result<Vec<(Descriptor, String)>, String> {
    let manifest: ImageManifest =
        serde_json::from_slice(manifest).map_err(|e| format!("not an image manifest: {e}"))?;
    Ok(manifest
        .layers
        .into_iter()
        .filter_map(|layer| {
            let sig = layer.annotations.as_ref()?.get(SIGNATURE_ANNOTATION)?.to_string();
            Some((layer, sig))
        })
        .collect())
}

/// The signature text of `der` (base64, as the annotation holds it).
pub fn encode_signature(der: &[u8]) -> String {
    STANDARD.encode(der)
}

/// The DER bytes of a signature annotation; `None` when it is not base64.
pub fn decode_signature(text: &str) -> Option<Vec<u8>> {
    STANDARD.decode(text.trim()).ok()
}

/// The payload layer's descriptor for a signature.
pub fn payload_layer(payload: &[u8], signature: &str) -> Descriptor {
    use sha2::{Digest, Sha256};
    Descriptor {
        media_type: SIMPLE_SIGNING.into(),
        digest: format!("sha256:{}", crate::cache::hex(&Sha256::digest(payload))),
        size: payload.len() as u64,
        data: None,
        annotations: Some(Annotations(vec![(SIGNATURE_ANNOTATION.into(), signature.into())])),
    }
}

/// The signature manifest with `layer` added to the layers of `existing` (a signature already
/// there is kept, as `cosign sign` appends; the same layer twice is kept once), and the image
/// config blob it names: `(config, manifest)`.
pub fn signature_manifest(existing: Option<&[u8]>, layer: Descriptor) -> (Vec<u8>, Vec<u8>) {
    use sha2::{Digest, Sha256};
    let mut layers: Vec<Descriptor> = existing
        .and_then(|bytes| serde_json::from_slice::<ImageManifest>(bytes).ok())
        .map(|m| m.layers)
        .unwrap_or_default();
    if !layers.contains(&layer) {
        layers.push(layer);
    }
    let diff_ids: Vec<&str> = layers.iter().map(|l| l.digest.as_str()).collect();
    let config = serde_json::json!({
        "architecture": "",
        "config": {},
        "created": "0001-01-01T00:00:00Z",
        "history": [{"created": "0001-01-01T00:00:00Z"}],
        "os": "",
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
    })
    .to_string()
    .into_bytes();
    let manifest = ImageManifest {
        schema_version: 2,
        media_type: Some(OCI_MANIFEST.into()),
        artifact_type: None,
        config: Descriptor {
            media_type: IMAGE_CONFIG.into(),
            digest: format!("sha256:{}", crate::cache::hex(&Sha256::digest(&config))),
            size: config.len() as u64,
            data: None,
            annotations: None,
        },
        layers,
        annotations: None,
    };
    // An ImageManifest of strings always serialises.
    let bytes = serde_json::to_vec(&manifest).unwrap_or_default();
    (config, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn the_signature_tag_names_the_digest() {
        assert_eq!(
            signature_tag(DIGEST).as_deref(),
            Some("sha256-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.sig")
        );
        assert_eq!(signature_tag("sha512:00"), None);
    }

    #[test]
    fn a_payload_names_its_digest_and_others_are_refused() {
        let p = payload("127.0.0.1:5000/kaas/cs", DIGEST);
        assert_eq!(
            String::from_utf8(p.clone()).unwrap(),
            format!(
                r#"{{"critical":{{"identity":{{"docker-reference":"127.0.0.1:5000/kaas/cs"}},"image":{{"docker-manifest-digest":"{DIGEST}"}},"type":"cosign container image signature"}},"optional":null}}"#
            )
        );
        assert_eq!(signed_digest(&p).unwrap(), DIGEST);
        let table: &[(&str, &str)] = &[
            ("nope", "not JSON"),
            ("{}", "no `critical`"),
            (r#"{"critical":{"type":"x"}}"#, "critical.type is \"x\""),
            (
                r#"{"critical":{"type":"cosign container image signature"}}"#,
                "no critical.image.docker-manifest-digest",
            ),
        ];
        for (text, want) in table {
            let err = signed_digest(text.as_bytes()).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
        }
    }

    #[test]
    fn signatures_are_appended_to_the_manifest_once() {
        let one = payload_layer(b"one", "c2lnMQ==");
        let two = payload_layer(b"two", "c2lnMg==");
        let (_, first) = signature_manifest(None, one.clone());
        let (config, both) = signature_manifest(Some(&first), two.clone());
        let (_, again) = signature_manifest(Some(&both), two);
        assert_eq!(both, again);
        let layers = signature_layers(&both).unwrap();
        assert_eq!(
            layers.iter().map(|(_, s)| s.as_str()).collect::<Vec<_>>(),
            ["c2lnMQ==", "c2lnMg=="]
        );
        assert_eq!(layers[0].0, one);
        let config: serde_json::Value = serde_json::from_slice(&config).unwrap();
        assert_eq!(config["rootfs"]["diff_ids"][1], layers[1].0.digest.as_str());
    }
}
