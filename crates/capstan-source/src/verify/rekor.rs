//! Cosign's Rekor bundle (the `dev.sigstore.cosign/bundle` annotation of a keyless signature),
//! checked offline: the signed entry timestamp (SET) is the log's ECDSA signature over the
//! canonical JSON of the entry (`body`, `integratedTime`, `logID`, `logIndex`, keys sorted, no
//! spaces); the body is the `hashedrekord` entry, which must name the payload's SHA-256, the
//! signature and the certificate that were verified.

use aws_lc_rs::signature::{ECDSA_P256_SHA256_ASN1, ECDSA_P384_SHA384_ASN1, UnparsedPublicKey};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha256};

use super::trusted_root::TrustedRoot;

/// The largest bundle read (a bundle holds the certificate twice, a few KiB).
pub const MAX_BUNDLE: usize = 64 * 1024;

/// A log entry the signature's checks may rely on: when it was logged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogEntry {
    pub integrated_time: i64,
    pub log_index: i64,
}

#[derive(serde::Deserialize)]
struct Bundle {
    #[serde(rename = "SignedEntryTimestamp")]
    set: String,
    #[serde(rename = "Payload")]
    payload: BundlePayload,
}

#[derive(serde::Deserialize)]
struct BundlePayload {
    body: String,
    #[serde(rename = "integratedTime")]
    integrated_time: i64,
    #[serde(rename = "logIndex")]
    log_index: i64,
    #[serde(rename = "logID")]
    log_id: String,
}

/// The canonical bytes the log signed (RFC 8785 for these four fields: sorted keys, integers,
/// JSON-escaped strings).
fn signed_bytes(p: &BundlePayload) -> Result<Vec<u8>, String> {
    let text = |s: &str| serde_json::to_string(s).map_err(|e| e.to_string());
    Ok(format!(
        r#"{{"body":{},"integratedTime":{},"logID":{},"logIndex":{}}}"#,
        text(&p.body)?,
        p.integrated_time,
        text(&p.log_id)?,
        p.log_index
    )
    .into_bytes())
}

/// Checks `bundle` against `root` and that its entry records `payload` signed with
/// `signature` (DER) by `certificate` (DER). `Err` says what failed.
pub fn check(
    root: &TrustedRoot,
    bundle: &[u8],
    payload: &[u8],
    signature: &[u8],
    certificate: &[u8],
) -> Result<LogEntry, String> {
    if bundle.len() > MAX_BUNDLE {
        return Err(format!("the bundle is {} bytes, over {MAX_BUNDLE}", bundle.len()));
    }
    let bundle: Bundle = serde_json::from_slice(bundle).map_err(|e| format!("not a cosign bundle: {e}"))?;
    let p = &bundle.payload;
    let log = root
        .log(&p.log_id)
        .ok_or_else(|| format!("logged in {}, a log the trusted root does not name", p.log_id))?;
    let set = STANDARD
        .decode(bundle.set.trim())
        .map_err(|e| format!("SignedEntryTimestamp is not base64: {e}"))?;
    let message = signed_bytes(p)?;
    let verified = [&ECDSA_P256_SHA256_ASN1, &ECDSA_P384_SHA384_ASN1]
        .iter()
        .any(|alg| {
            UnparsedPublicKey::new(*alg, &log.spki)
                .verify(&message, &set)
                .is_ok()
        });
    if !verified {
        return Err(format!(
            "the signed entry timestamp does not verify under the key of {} (entry {})",
            log.base_url, p.log_index
        ));
    }
    if !log.valid.contains(p.integrated_time) {
        return Err(format!(
            "integrated at {}, outside the validity of the key of {}",
            p.integrated_time, log.base_url
        ));
    }
    check_body(&p.body, payload, signature, certificate)?;
    Ok(LogEntry {
        integrated_time: p.integrated_time,
        log_index: p.log_index,
    })
}

/// The entry's body (base64 JSON of a `hashedrekord` 0.0.1) names this payload, signature and
/// certificate.
fn check_body(body: &str, payload: &[u8], signature: &[u8], certificate: &[u8]) -> Result<(), String> {
    let body = STANDARD
        .decode(body.trim())
        .map_err(|e| format!("the entry body is not base64: {e}"))?;
    let body: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| format!("the entry body is not JSON: {e}"))?;
    let kind = body.get("kind").and_then(|k| k.as_str()).unwrap_or_default();
    if kind != "hashedrekord" {
        return Err(format!(
            "a {kind:?} log entry; cosign's signatures are hashedrekord"
        ));
    }
    let field = |pointer: &str| {
        body.pointer(pointer)
            .and_then(|v| v.as_str())
            .ok_or_else(|| format!("the entry body has no {pointer}"))
    };
    let algorithm = field("/spec/data/hash/algorithm")?;
    let hash = field("/spec/data/hash/value")?;
    if algorithm != "sha256" || !hash.eq_ignore_ascii_case(&crate::cache::hex(&Sha256::digest(payload))) {
        return Err(format!(
            "the log entry is of another payload ({algorithm}:{hash})"
        ));
    }
    let logged_sig = STANDARD
        .decode(field("/spec/signature/content")?.trim())
        .unwrap_or_default();
    if logged_sig != signature {
        return Err("the log entry is of another signature".into());
    }
    let logged_key = STANDARD
        .decode(field("/spec/signature/publicKey/content")?.trim())
        .unwrap_or_default();
    let logged_cert = pem::parse(&logged_key)
        .map(|p| p.contents().to_vec())
        .unwrap_or_default();
    if logged_cert != certificate {
        return Err("the log entry is of another certificate".into());
    }
    Ok(())
}
