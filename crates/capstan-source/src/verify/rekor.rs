//! Cosign's Rekor bundle (the `dev.sigstore.cosign/bundle` annotation of a keyless signature),
//! checked offline: the signed entry timestamp (SET) is the log's ECDSA signature over the
//! canonical JSON of the entry (`body`, `integratedTime`, `logID`, `logIndex`, keys sorted, no
//! spaces); the body is the `hashedrekord` entry, which must name the payload's SHA-256, the
//! signature and the certificate that were verified.

use aws_lc_rs::signature::{ECDSA_P256_SHA256_ASN1, ECDSA_P384_SHA384_ASN1, UnparsedPublicKey};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha256};

use super::trusted_root::{LogKey, TrustedRoot};

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

/// A log entry as a bundle records it: the base64 canonical body and where and when it was
/// logged (`log_id` hex).
#[derive(Clone, Copy, Debug)]
pub struct Entry<'a> {
    pub body: &'a str,
    pub integrated_time: i64,
    pub log_index: i64,
    pub log_id: &'a str,
}

/// The log of `entry`, after its signed entry timestamp `set` (DER) verified under that log's
/// key of `root` and the entry's time fell inside the key's validity.
pub fn check_set<'r>(root: &'r TrustedRoot, entry: &Entry<'_>, set: &[u8]) -> Result<&'r LogKey, String> {
    let log = root
        .log(entry.log_id)
        .ok_or_else(|| format!("logged in {}, a log the trusted root does not name", entry.log_id))?;
    let text = |s: &str| serde_json::to_string(s).map_err(|e| e.to_string());
    let message = format!(
        r#"{{"body":{},"integratedTime":{},"logID":{},"logIndex":{}}}"#,
        text(entry.body)?,
        entry.integrated_time,
        text(entry.log_id)?,
        entry.log_index
    );
    if !log_signed(log, message.as_bytes(), set) {
        return Err(format!(
            "the signed entry timestamp does not verify under the key of {} (entry {})",
            log.base_url, entry.log_index
        ));
    }
    if !log.valid.contains(entry.integrated_time) {
        return Err(format!(
            "integrated at {}, outside the validity of the key of {}",
            entry.integrated_time, log.base_url
        ));
    }
    Ok(log)
}

/// Whether `signature` (DER) over `message` verifies under the log's key (Rekor's keys are
/// P-256; P-384 too for other instances).
pub fn log_signed(log: &LogKey, message: &[u8], signature: &[u8]) -> bool {
    [&ECDSA_P256_SHA256_ASN1, &ECDSA_P384_SHA384_ASN1]
        .iter()
        .any(|alg| {
            UnparsedPublicKey::new(*alg, &log.spki)
                .verify(message, signature)
                .is_ok()
        })
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
    let set = STANDARD
        .decode(bundle.set.trim())
        .map_err(|e| format!("SignedEntryTimestamp is not base64: {e}"))?;
    let entry = Entry {
        body: &p.body,
        integrated_time: p.integrated_time,
        log_index: p.log_index,
        log_id: &p.log_id,
    };
    check_set(root, &entry, &set)?;
    let payload_hash = crate::cache::hex(&Sha256::digest(payload));
    check_body(
        &p.body,
        &Logged::HashedRekord(&payload_hash),
        signature,
        certificate,
    )?;
    Ok(LogEntry {
        integrated_time: p.integrated_time,
        log_index: p.log_index,
    })
}

/// What a log entry must record: a `hashedrekord` of a message's SHA-256 (hex), or a `dsse`
/// entry of a DSSE envelope whose payload has this SHA-256 (hex).
#[derive(Clone, Copy, Debug)]
pub enum Logged<'a> {
    HashedRekord(&'a str),
    Dsse(&'a str),
}

/// The entry's body (base64 JSON of a `hashedrekord` or `dsse` 0.0.1) names this content,
/// signature and certificate (DER).
pub fn check_body(
    body: &str,
    logged: &Logged<'_>,
    signature: &[u8],
    certificate: &[u8],
) -> Result<(), String> {
    let body = STANDARD
        .decode(body.trim())
        .map_err(|e| format!("the entry body is not base64: {e}"))?;
    let body: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| format!("the entry body is not JSON: {e}"))?;
    let kind = body.get("kind").and_then(|k| k.as_str()).unwrap_or_default();
    let str_at = |value: &serde_json::Value, pointer: &str| {
        value
            .pointer(pointer)
            .and_then(|v| v.as_str())
            .map(str::to_string)
            .ok_or_else(|| format!("the entry body has no {pointer}"))
    };
    let pem_der = |text: String| {
        let pem = STANDARD.decode(text.trim()).unwrap_or_default();
        pem::parse(&pem)
            .map(|p| p.contents().to_vec())
            .unwrap_or_default()
    };
    let (hash_at, want_hash, logged_sig, logged_cert) = match (logged, kind) {
        (Logged::HashedRekord(hash), "hashedrekord") => (
            "/spec/data/hash",
            *hash,
            str_at(&body, "/spec/signature/content")?,
            pem_der(str_at(&body, "/spec/signature/publicKey/content")?),
        ),
        (Logged::Dsse(hash), "dsse") => {
            let want = STANDARD.encode(signature);
            let entry = body
                .pointer("/spec/signatures")
                .and_then(|s| s.as_array())
                .and_then(|sigs| {
                    sigs.iter()
                        .find(|s| s.get("signature").and_then(|v| v.as_str()) == Some(want.as_str()))
                })
                .ok_or("the log entry is of another signature")?;
            (
                "/spec/payloadHash",
                *hash,
                want,
                pem_der(str_at(entry, "/verifier")?),
            )
        }
        (Logged::HashedRekord(_), _) => {
            return Err(format!(
                "a {kind:?} log entry of a message signature, not hashedrekord"
            ));
        }
        (Logged::Dsse(_), _) => return Err(format!("a {kind:?} log entry of a DSSE envelope, not dsse")),
    };
    let algorithm = str_at(&body, &format!("{hash_at}/algorithm"))?;
    let hash = str_at(&body, &format!("{hash_at}/value"))?;
    if algorithm != "sha256" || !hash.eq_ignore_ascii_case(want_hash) {
        return Err(format!(
            "the log entry is of another payload ({algorithm}:{hash})"
        ));
    }
    if STANDARD.decode(logged_sig.trim()).unwrap_or_default() != signature {
        return Err("the log entry is of another signature".into());
    }
    if logged_cert != certificate {
        return Err("the log entry is of another certificate".into());
    }
    Ok(())
}
