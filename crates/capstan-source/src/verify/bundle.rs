//! Sigstore bundles (what cosign v3 attaches to an image), as pure functions: where they are
//! kept — OCI referrers of the signed manifest, listed by the registry's referrers API or, where
//! it has none, by the image index at the tag `sha256-<hex>` — and what one says: the signed
//! content (a message signature over the manifest's SHA-256, or a DSSE envelope of an in-toto
//! statement whose subject is the manifest), the key material (a Fulcio certificate, or a hint
//! of a key the verifier holds), and the transparency log entries. Media types
//! `application/vnd.dev.sigstore.bundle.v0.3+json` and the v0.1/v0.2
//! `application/vnd.dev.sigstore.bundle+json;version=0.x`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use super::merkle::InclusionProof;
use crate::oci::manifest::{Descriptor, sha256_hex};

/// The artifact type of a v0.3 bundle (what cosign v3 writes).
pub const BUNDLE_V03: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
const BUNDLE_V0X: &str = "application/vnd.dev.sigstore.bundle+json;version=0.";
/// DSSE's payload type of an in-toto statement.
pub const IN_TOTO: &str = "application/vnd.in-toto+json";
/// The largest bundle read: a certificate, an envelope and a proof are a few KiB.
pub const MAX_BUNDLE: u64 = 256 * 1024;

/// Whether `media_type` is a Sigstore bundle's.
pub fn is_bundle(media_type: &str) -> bool {
    media_type == BUNDLE_V03 || media_type.starts_with(BUNDLE_V0X)
}

/// The tag of the referrers index of manifest `digest` where the registry has no referrers
/// API (`sha256:<hex>` → `sha256-<hex>`).
pub fn referrers_tag(digest: &str) -> Option<String> {
    sha256_hex(digest).map(|hex| format!("sha256-{hex}"))
}

#[derive(serde::Deserialize)]
struct Index {
    #[serde(default)]
    manifests: Vec<IndexEntry>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct IndexEntry {
    digest: String,
    #[serde(default)]
    artifact_type: Option<String>,
}

/// The digests of the bundle manifests a referrers index lists (by their artifact type).
pub fn bundle_manifests(index: &[u8]) -> Result<Vec<String>, String> {
    let index: Index = serde_json::from_slice(index).map_err(|e| format!("not an image index: {e}"))?;
    Ok(index
        .manifests
        .into_iter()
        .filter(|m| m.artifact_type.as_deref().is_some_and(is_bundle))
        .map(|m| m.digest)
        .collect())
}

/// `index` (a referrers listing) with only its Sigstore bundle manifests: what a mirror puts
/// at the fallback tag, so that the copy names no manifest it did not copy. Every other field
/// of the index is kept as it was.
pub fn only_bundles(index: &[u8]) -> Result<Vec<u8>, String> {
    let mut value: serde_json::Value =
        serde_json::from_slice(index).map_err(|e| format!("not an image index: {e}"))?;
    let manifests = value
        .get_mut("manifests")
        .and_then(serde_json::Value::as_array_mut)
        .ok_or_else(|| "an image index without manifests".to_string())?;
    manifests.retain(|m| {
        m.get("artifactType")
            .and_then(serde_json::Value::as_str)
            .is_some_and(is_bundle)
    });
    serde_json::to_vec(&value).map_err(|e| format!("writing the index: {e}"))
}

/// The layer of a bundle manifest that holds the bundle.
pub fn bundle_layer(manifest: &[u8]) -> Result<Descriptor, String> {
    let manifest: crate::oci::manifest::ImageManifest =
        serde_json::from_slice(manifest).map_err(|e| format!("not an image manifest: {e}"))?;
    manifest
        .layers
        .into_iter()
        .find(|l| is_bundle(&l.media_type))
        .ok_or_else(|| "no layer of a Sigstore bundle media type".to_string())
}

/// What a bundle's signature signs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Content {
    /// A signature over an artifact's SHA-256 (the artifact is the release manifest).
    Message { sha256: Vec<u8>, signature: Vec<u8> },
    /// A DSSE envelope: signatures over its pre-authentication encoding.
    Dsse {
        payload_type: String,
        payload: Vec<u8>,
        signatures: Vec<Vec<u8>>,
    },
}

/// One transparency log entry of a bundle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlogEntry {
    pub log_index: i64,
    /// Hex.
    pub log_id: String,
    pub kind: String,
    pub integrated_time: i64,
    /// The base64 canonical body, as logged.
    pub body: String,
    /// The signed entry timestamp (DER), when the bundle has the inclusion promise.
    pub set: Option<Vec<u8>>,
    pub proof: Option<InclusionProof>,
}

/// A Sigstore bundle, as far as verification reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bundle {
    pub media_type: String,
    /// The signing certificate (DER): v0.3's `certificate`, or the first of v0.1/v0.2's chain.
    pub certificate: Option<Vec<u8>>,
    pub content: Content,
    pub tlog: Vec<TlogEntry>,
    /// The RFC 3161 signed timestamps (DER) of `timestampVerificationData`.
    pub timestamps: Vec<Vec<u8>>,
}

fn b64(value: &Value, pointer: &str) -> Result<Vec<u8>, String> {
    let text = value
        .pointer(pointer)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("no {pointer}"))?;
    // Line breaks are tolerated, as protobuf's JSON readers do (a wrapped `base64` output).
    let text: String = text.chars().filter(|c| !matches!(c, '\n' | '\r')).collect();
    STANDARD
        .decode(text.trim())
        .map_err(|e| format!("{pointer} is not base64: {e}"))
}

/// An int64 of protobuf's JSON form: a string of digits, or a number.
fn int(value: &Value, pointer: &str) -> Result<i64, String> {
    match value.pointer(pointer) {
        Some(Value::String(s)) => s.parse().map_err(|_| format!("{pointer} is not an integer")),
        Some(Value::Number(n)) => n.as_i64().ok_or_else(|| format!("{pointer} is not an integer")),
        _ => Err(format!("no {pointer}")),
    }
}

fn tlog_entry(entry: &Value, i: usize) -> Result<TlogEntry, String> {
    let at = |e: String| format!("tlogEntries[{i}]: {e}");
    let proof = match entry.get("inclusionProof") {
        None | Some(Value::Null) => None,
        Some(p) => Some(InclusionProof {
            log_index: int(p, "/logIndex")
                .and_then(|n| u64::try_from(n).map_err(|e| e.to_string()))
                .map_err(at)?,
            tree_size: int(p, "/treeSize")
                .and_then(|n| u64::try_from(n).map_err(|e| e.to_string()))
                .map_err(at)?,
            root_hash: b64(p, "/rootHash").map_err(at)?,
            hashes: p
                .get("hashes")
                .and_then(Value::as_array)
                .map(|hs| {
                    hs.iter()
                        .map(|h| {
                            STANDARD
                                .decode(h.as_str().unwrap_or("%"))
                                .map_err(|e| e.to_string())
                        })
                        .collect::<Result<Vec<_>, _>>()
                })
                .transpose()
                .map_err(|e| at(format!("inclusionProof.hashes: {e}")))?
                .unwrap_or_default(),
            checkpoint: p
                .pointer("/checkpoint/envelope")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        }),
    };
    Ok(TlogEntry {
        log_index: int(entry, "/logIndex").map_err(at)?,
        log_id: crate::cache::hex(&b64(entry, "/logId/keyId").map_err(at)?),
        kind: entry
            .pointer("/kindVersion/kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        integrated_time: int(entry, "/integratedTime").unwrap_or(0),
        body: entry
            .get("canonicalizedBody")
            .and_then(Value::as_str)
            .ok_or_else(|| at("no canonicalizedBody".into()))?
            .to_string(),
        set: b64(entry, "/inclusionPromise/signedEntryTimestamp").ok(),
        proof,
    })
}

/// Reads a bundle's JSON.
pub fn parse(bytes: &[u8]) -> Result<Bundle, String> {
    if bytes.len() as u64 > MAX_BUNDLE {
        return Err(format!("the bundle is {} bytes, over {MAX_BUNDLE}", bytes.len()));
    }
    let json: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let media_type = json
        .get("mediaType")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if !is_bundle(&media_type) {
        return Err(format!("mediaType {media_type:?} is not a Sigstore bundle's"));
    }
    let material = json
        .get("verificationMaterial")
        .ok_or("no verificationMaterial")?;
    let certificate = b64(material, "/certificate/rawBytes")
        .or_else(|_| b64(material, "/x509CertificateChain/certificates/0/rawBytes"))
        .ok();
    let content = if let Some(m) = json.get("messageSignature") {
        let algorithm = m.pointer("/messageDigest/algorithm").and_then(Value::as_str);
        if algorithm != Some("SHA2_256") {
            return Err(format!(
                "messageSignature.messageDigest.algorithm is {algorithm:?}, not SHA2_256"
            ));
        }
        Content::Message {
            sha256: b64(m, "/messageDigest/digest")?,
            signature: b64(m, "/signature")?,
        }
    } else if let Some(d) = json.get("dsseEnvelope") {
        let signatures = d
            .get("signatures")
            .and_then(Value::as_array)
            .map(|sigs| sigs.iter().map(|s| b64(s, "/sig")).collect::<Result<Vec<_>, _>>())
            .transpose()?
            .unwrap_or_default();
        Content::Dsse {
            payload_type: d
                .get("payloadType")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            payload: b64(d, "/payload")?,
            signatures,
        }
    } else {
        return Err("neither messageSignature nor dsseEnvelope".into());
    };
    let tlog = material
        .get("tlogEntries")
        .and_then(Value::as_array)
        .map(|entries| {
            entries
                .iter()
                .enumerate()
                .map(|(i, e)| tlog_entry(e, i))
                .collect()
        })
        .transpose()?
        .unwrap_or_default();
    let timestamps = material
        .pointer("/timestampVerificationData/rfc3161Timestamps")
        .and_then(Value::as_array)
        .map(|stamps| {
            stamps
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    b64(t, "/signedTimestamp")
                        .map_err(|e| format!("timestampVerificationData.rfc3161Timestamps[{i}]: {e}"))
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?
        .unwrap_or_default();
    Ok(Bundle {
        media_type,
        certificate,
        content,
        tlog,
        timestamps,
    })
}

/// DSSE's pre-authentication encoding: what an envelope's signatures sign.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!("DSSEv1 {} {payload_type} {} ", payload_type.len(), payload.len()).into_bytes();
    out.extend_from_slice(payload);
    out
}

/// The `sha256:<hex>` digests of an in-toto statement's subjects.
pub fn statement_subjects(payload_type: &str, payload: &[u8]) -> Result<Vec<String>, String> {
    if payload_type != IN_TOTO {
        return Err(format!(
            "a DSSE payload of type {payload_type:?}, not an in-toto statement"
        ));
    }
    let statement: Value =
        serde_json::from_slice(payload).map_err(|e| format!("the statement is not JSON: {e}"))?;
    let subjects = statement
        .get("subject")
        .and_then(Value::as_array)
        .ok_or("the in-toto statement has no subject")?;
    Ok(subjects
        .iter()
        .filter_map(|s| s.pointer("/digest/sha256").and_then(Value::as_str))
        .map(|hex| format!("sha256:{}", hex.to_ascii_lowercase()))
        .collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_mirrored_referrers_index_keeps_only_the_bundles() {
        let index = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[
            {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:aa","size":1,"artifactType":"application/vnd.dev.sigstore.bundle.v0.3+json"},
            {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:bb","size":1,"artifactType":"application/spdx+json"},
            {"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:cc","size":1}]}"#;
        let kept = only_bundles(index).unwrap();
        assert_eq!(bundle_manifests(&kept).unwrap(), vec!["sha256:aa".to_string()]);
        let value: serde_json::Value = serde_json::from_slice(&kept).unwrap();
        assert_eq!(value["manifests"].as_array().map(Vec::len), Some(1));
        assert_eq!(value["mediaType"], "application/vnd.oci.image.index.v1+json");
        assert!(only_bundles(br#"{"schemaVersion":2}"#).is_err());
    }

    use super::*;

    #[test]
    fn bundle_media_types_and_the_fallback_tag() {
        for (media_type, bundle) in [
            (BUNDLE_V03, true),
            ("application/vnd.dev.sigstore.bundle+json;version=0.1", true),
            ("application/vnd.dev.sigstore.bundle+json;version=0.2", true),
            ("application/vnd.dev.cosign.simplesigning.v1+json", false),
            ("application/vnd.dev.sigstore.bundle+json", false),
        ] {
            assert_eq!(is_bundle(media_type), bundle, "{media_type}");
        }
        let digest = format!("sha256:{}", "ab".repeat(32));
        assert_eq!(
            referrers_tag(&digest),
            Some(format!("sha256-{}", "ab".repeat(32)))
        );
        assert_eq!(referrers_tag("md5:00"), None);
    }

    #[test]
    fn an_index_lists_only_bundle_referrers() {
        let index = serde_json::json!({"schemaVersion": 2, "manifests": [
            {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:01", "size": 1, "artifactType": BUNDLE_V03},
            {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:02", "size": 1, "artifactType": "application/spdx+json"},
            {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:03", "size": 1},
        ]});
        assert_eq!(
            bundle_manifests(index.to_string().as_bytes()).unwrap(),
            ["sha256:01"]
        );
        assert!(bundle_manifests(b"7").is_err());
    }

    #[test]
    fn pae_and_subjects_follow_dsse_and_in_toto() {
        assert_eq!(pae("t/x", b"hello"), b"DSSEv1 3 t/x 5 hello");
        let statement = serde_json::json!({"_type": "https://in-toto.io/Statement/v1",
            "subject": [{"name": "r", "digest": {"sha256": "AB"}}, {"name": "s", "digest": {"sha512": "cd"}}]});
        let bytes = statement.to_string().into_bytes();
        assert_eq!(statement_subjects(IN_TOTO, &bytes).unwrap(), ["sha256:ab"]);
        for (kind, payload, want) in [
            ("text/plain", &bytes[..], "not an in-toto statement"),
            (IN_TOTO, b"{}", "no subject"),
            (IN_TOTO, b"nope", "not JSON"),
        ] {
            let err = statement_subjects(kind, payload).unwrap_err();
            assert!(err.contains(want), "{err}");
        }
    }

    #[test]
    fn malformed_bundles_are_refused_with_the_field() {
        let table = [
            (r#"{"mediaType":"x"}"#, "is not a Sigstore bundle"),
            (
                r#"{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}"#,
                "no verificationMaterial",
            ),
            (
                r#"{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{}}"#,
                "neither messageSignature nor dsseEnvelope",
            ),
            (
                r#"{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{},"messageSignature":{"messageDigest":{"algorithm":"SHA2_512","digest":""},"signature":""}}"#,
                "not SHA2_256",
            ),
            (
                r#"{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"tlogEntries":[{"logIndex":"x"}]},"dsseEnvelope":{"payload":"","payloadType":"","signatures":[]}}"#,
                "tlogEntries[0]: /logIndex is not an integer",
            ),
        ];
        for (text, want) in table {
            let err = parse(text.as_bytes()).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
        }
    }
}
