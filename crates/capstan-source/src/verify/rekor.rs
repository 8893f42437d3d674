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

/// What a log entry must record: a message signature over a SHA-256 (hex), or a DSSE envelope
/// whose payload and pre-authentication encoding have these SHA-256s (hex) — a `dsse` entry
/// names the payload's, Rekor v2's `hashedrekord` of an envelope the PAE's.
#[derive(Clone, Copy, Debug)]
pub enum Logged<'a> {
    HashedRekord(&'a str),
    Dsse { payload: &'a str, pae: &'a str },
}

/// What an entry body records: the hash (algorithm as written, hex value) and the
/// signatures with their certificates (DER; empty when the verifier is not a certificate).
struct Recorded {
    algorithm: String,
    hash: String,
    signatures: Vec<(Vec<u8>, Vec<u8>)>,
}

fn str_at(value: &serde_json::Value, pointer: &str) -> Result<String, String> {
    value
        .pointer(pointer)
        .and_then(|v| v.as_str())
        .map(str::to_string)
        .ok_or_else(|| format!("the entry body has no {pointer}"))
}

fn base64_at(value: &serde_json::Value, pointer: &str) -> Result<Vec<u8>, String> {
    STANDARD
        .decode(str_at(value, pointer)?.trim())
        .map_err(|e| format!("the entry body's {pointer} is not base64: {e}"))
}

/// The DER of a v0.0.1 body's base64 PEM certificate (empty when it is not one).
fn pem_der(text: &str) -> Vec<u8> {
    let pem = STANDARD.decode(text.trim()).unwrap_or_default();
    pem::parse(&pem)
        .map(|p| p.contents().to_vec())
        .unwrap_or_default()
}

/// A v0.0.2 signature (`content` and `verifier`).
fn signature_v002(value: &serde_json::Value) -> Result<(Vec<u8>, Vec<u8>), String> {
    let cert = base64_at(value, "/verifier/x509Certificate/rawBytes").unwrap_or_default();
    Ok((base64_at(value, "/content")?, cert))
}

/// The hash and signatures a body of `kind` and `version` records.
fn recorded(body: &serde_json::Value, kind: &str, version: &str) -> Result<Recorded, String> {
    Ok(match (kind, version) {
        ("hashedrekord", "0.0.1") => Recorded {
            algorithm: str_at(body, "/spec/data/hash/algorithm")?,
            hash: str_at(body, "/spec/data/hash/value")?,
            signatures: vec![(
                base64_at(body, "/spec/signature/content")?,
                pem_der(&str_at(body, "/spec/signature/publicKey/content")?),
            )],
        },
        ("dsse", "0.0.1") => Recorded {
            algorithm: str_at(body, "/spec/payloadHash/algorithm")?,
            hash: str_at(body, "/spec/payloadHash/value")?,
            signatures: body
                .pointer("/spec/signatures")
                .and_then(|s| s.as_array())
                .ok_or("the entry body has no /spec/signatures")?
                .iter()
                .map(|s| {
                    Ok((
                        base64_at(s, "/signature")?,
                        pem_der(&str_at(s, "/verifier").unwrap_or_default()),
                    ))
                })
                .collect::<Result<_, String>>()?,
        },
        ("hashedrekord", "0.0.2") => {
            let spec = body
                .pointer("/spec/hashedRekordV002")
                .ok_or("the entry body has no /spec/hashedRekordV002")?;
            Recorded {
                algorithm: str_at(spec, "/data/algorithm")?,
                hash: crate::cache::hex(&base64_at(spec, "/data/digest")?),
                signatures: vec![signature_v002(
                    spec.get("signature").ok_or("the entry body has no signature")?,
                )?],
            }
        }
        ("dsse", "0.0.2") => {
            let spec = body
                .pointer("/spec/dsseV002")
                .ok_or("the entry body has no /spec/dsseV002")?;
            Recorded {
                algorithm: str_at(spec, "/payloadHash/algorithm")?,
                hash: crate::cache::hex(&base64_at(spec, "/payloadHash/digest")?),
                signatures: spec
                    .get("signatures")
                    .and_then(|s| s.as_array())
                    .ok_or("the entry body has no signatures")?
                    .iter()
                    .map(signature_v002)
                    .collect::<Result<_, String>>()?,
            }
        }
        _ => {
            return Err(format!(
                "a {kind:?} {version} log entry, which capstan does not read"
            ));
        }
    })
}

/// The entry's body (base64 JSON of a `hashedrekord` or `dsse` entry, v0.0.1 of Rekor v1 or
/// v0.0.2 of Rekor v2) names this content, signature and certificate (DER).
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
    let version = body
        .get("apiVersion")
        .and_then(|k| k.as_str())
        .unwrap_or_default();
    let want_hash = match (logged, kind, version) {
        (Logged::HashedRekord(hash), "hashedrekord", _) => *hash,
        (Logged::Dsse { payload, .. }, "dsse", _) => *payload,
        // Rekor v2 logs a DSSE envelope as a hashedrekord of its pre-authentication encoding.
        (Logged::Dsse { pae, .. }, "hashedrekord", "0.0.2") => *pae,
        (Logged::HashedRekord(_), _, _) => {
            return Err(format!(
                "a {kind:?} log entry of a message signature, not hashedrekord"
            ));
        }
        (Logged::Dsse { .. }, _, _) => {
            return Err(format!("a {kind:?} log entry of a DSSE envelope, not dsse"));
        }
    };
    let recorded = recorded(&body, kind, version)?;
    let algorithm = recorded.algorithm.as_str();
    if !matches!(algorithm, "sha256" | "SHA2_256") || !recorded.hash.eq_ignore_ascii_case(want_hash) {
        return Err(format!(
            "the log entry is of another payload ({algorithm}:{})",
            recorded.hash
        ));
    }
    let (_, logged_cert) = recorded
        .signatures
        .iter()
        .find(|(sig, _)| sig == signature)
        .ok_or("the log entry is of another signature")?;
    if logged_cert != certificate {
        return Err("the log entry is of another certificate".into());
    }
    Ok(())
}
