//! A Sigstore bundle of a release manifest against a policy, with the refusals of
//! [`super::policy`]. Keyed: a signature of the content by one of the policy's keys (the log
//! entries are not needed, as for keyed `.sig` signatures). Keyless: the bundle's certificate
//! signed the content, a log entry of the trusted root records that signature (its signed entry
//! timestamp gives the time; an inclusion proof, when present, must prove the entry under a
//! checkpoint the log signed, whose signed time is the time when the entry has no timestamp;
//! a Rekor v2 entry proves inclusion only), the bundle's RFC 3161 timestamps that verify under
//! the root's timestamp authorities give more times (a Rekor v2 entry needs one), the
//! certificate chained to the trusted root and was valid at every one of them, and its
//! identity is accepted. Only then is the content read: the message digest, or the
//! in-toto statement's subject, must be the release manifest's digest.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha256};

use super::bundle::{Bundle, Content, TlogEntry, pae, statement_subjects};
use super::keyless;
use super::keys::Signed;
use super::merkle;
use super::policy::{self, Policy, Refusal, Verified};
use super::rekor::{self, Entry, Logged};
use super::timestamp;
use super::trusted_root::{LogKey, TrustedRoot};

/// One bundle under `policy`: keyless when it has a certificate and the policy names
/// identities (or has no keys), else keyed.
pub(super) fn check(policy: &Policy, digest: &str, bundle: &Bundle) -> Result<Verified, Refusal> {
    match &policy.trusted_root {
        Some(root)
            if !policy.identities.is_empty() && (bundle.certificate.is_some() || policy.keys.is_empty()) =>
        {
            check_keyless(policy, root, digest, bundle)
        }
        _ => check_keyed(policy, digest, bundle),
    }
}

/// The signature of `content` that `verifies` accepts, when one does.
fn verified_signature(content: &Content, verifies: impl Fn(Signed<'_>, &[u8]) -> bool) -> Option<&[u8]> {
    match content {
        Content::Message { sha256, signature } => {
            verifies(Signed::Sha256(sha256), signature).then_some(signature.as_slice())
        }
        Content::Dsse {
            payload_type,
            payload,
            signatures,
        } => {
            let pae = pae(payload_type, payload);
            signatures
                .iter()
                .find(|sig| verifies(Signed::Message(&pae), sig))
                .map(Vec::as_slice)
        }
    }
}

/// The signed content names the release manifest `digest`.
fn check_subject(digest: &str, content: &Content) -> Result<(), Refusal> {
    let signed = match content {
        Content::Message { sha256, .. } => vec![format!("sha256:{}", crate::cache::hex(sha256))],
        Content::Dsse {
            payload_type,
            payload,
            ..
        } => statement_subjects(payload_type, payload).map_err(Refusal::MalformedPayload)?,
    };
    if signed.iter().any(|s| s == digest) {
        return Ok(());
    }
    Err(Refusal::DigestMismatch {
        signed: if signed.is_empty() {
            "no sha256 subject".into()
        } else {
            signed.join(", ")
        },
        release: digest.to_string(),
    })
}

fn check_keyed(policy: &Policy, digest: &str, bundle: &Bundle) -> Result<Verified, Refusal> {
    let signer = policy
        .keys
        .iter()
        .find(|key| verified_signature(&bundle.content, |m, s| key.verifies_signed(m, s)).is_some())
        .ok_or(Refusal::WrongKey)?;
    check_subject(digest, &bundle.content)?;
    Ok(Verified {
        digest: digest.to_string(),
        signer: signer.fingerprint().to_string(),
        keyless: None,
        skipped: Vec::new(),
    })
}

/// The entry is the log's record of `signature` by `cert` over `content`: its log, and when it
/// was logged when the log says — the entry's time when its signed entry timestamp verifies,
/// else the time of the checkpoint its inclusion proof verified under (Rekor v1 signs that the
/// entry was in by then). A Rekor v2 entry has neither: it proves inclusion, not time.
fn check_entry<'r>(
    root: &'r TrustedRoot,
    entry: &TlogEntry,
    content: &Content,
    signature: &[u8],
    cert: &[u8],
) -> Result<(&'r LogKey, Option<i64>), String> {
    let at = Entry {
        body: &entry.body,
        integrated_time: entry.integrated_time,
        log_index: entry.log_index,
        log_id: &entry.log_id,
    };
    let (log, mut time) = match &entry.set {
        Some(set) => (rekor::check_set(root, &at, set)?, Some(entry.integrated_time)),
        None => {
            let log = root
                .log(&entry.log_id)
                .ok_or_else(|| format!("logged in {}, a log the trusted root does not name", entry.log_id))?;
            (log, None)
        }
    };
    match &entry.proof {
        Some(proof) => {
            let body = STANDARD
                .decode(entry.body.trim())
                .map_err(|e| format!("the entry body is not base64: {e}"))?;
            let signed_at = merkle::check(log, &body, proof)?;
            time = time.or(signed_at);
        }
        None if time.is_none() => {
            return Err("neither a signed entry timestamp nor an inclusion proof".into());
        }
        None => {}
    }
    if let Some(time) = time {
        check_log_time(log, time)?;
    }
    let payload = match content {
        Content::Message { sha256, .. } => crate::cache::hex(sha256),
        Content::Dsse { payload, .. } => crate::cache::hex(&Sha256::digest(payload)),
    };
    let pae = match content {
        Content::Message { .. } => String::new(),
        Content::Dsse {
            payload_type,
            payload,
            ..
        } => crate::cache::hex(&Sha256::digest(pae(payload_type, payload))),
    };
    let logged = match content {
        Content::Message { .. } => Logged::HashedRekord(&payload),
        Content::Dsse { .. } => Logged::Dsse {
            payload: &payload,
            pae: &pae,
        },
    };
    rekor::check_body(&entry.body, &logged, signature, cert)?;
    Ok((log, time))
}

/// The log's key was trusted at `time`.
fn check_log_time(log: &LogKey, time: i64) -> Result<(), String> {
    if log.valid.contains(time) {
        return Ok(());
    }
    Err(format!(
        "logged at {}, outside the validity of the key of {} ({})",
        keyless::utc(time),
        log.base_url,
        log.valid
    ))
}

/// The times the signature is proven to have existed at: the log's (when its entry gives one)
/// and each RFC 3161 timestamp's that verifies (one that does not is skipped, as
/// sigstore-python does; named when no time is left). The log's key must have been trusted at
/// every one.
fn signed_times(
    root: &TrustedRoot,
    bundle: &Bundle,
    signature: &[u8],
    log: &LogKey,
    logged_at: Option<i64>,
) -> Result<Vec<i64>, Refusal> {
    let mut times: Vec<i64> = logged_at.into_iter().collect();
    let mut problems = Vec::new();
    for (i, token) in bundle.timestamps.iter().enumerate() {
        match timestamp::check(root, token, signature) {
            Ok(stamped) => {
                check_log_time(log, stamped.at).map_err(Refusal::BadInclusionProof)?;
                times.push(stamped.at);
            }
            Err(e) => problems.push(format!("timestamp {}: {e}", i + 1)),
        }
    }
    if times.is_empty() {
        return Err(Refusal::BadTimestamp(if problems.is_empty() {
            "the log entry has no integrated time (a Rekor v2 log's) and the bundle no RFC 3161 timestamp"
                .to_string()
        } else {
            problems.join("; ")
        }));
    }
    Ok(times)
}

fn check_keyless(
    policy: &Policy,
    root: &TrustedRoot,
    digest: &str,
    bundle: &Bundle,
) -> Result<Verified, Refusal> {
    let cert = bundle.certificate.as_deref().ok_or(Refusal::NoCertificate)?;
    // A certificate that does not parse is refused as such, not as a wrong key.
    keyless::identity(cert).map_err(Refusal::UntrustedCertificate)?;
    let signature = verified_signature(&bundle.content, |m, s| {
        keyless::signs_signed(cert, m, s).unwrap_or(false)
    })
    .ok_or(Refusal::WrongKey)?;
    let mut problem = "no transparency log entry: the signature's time cannot be proven offline".to_string();
    let mut logged = None;
    for entry in &bundle.tlog {
        match check_entry(root, entry, &bundle.content, signature, cert) {
            Ok(found) => {
                logged = Some(found);
                break;
            }
            Err(e) => problem = format!("entry {}: {e}", entry.log_index),
        }
    }
    let (log, logged_at) = logged.ok_or(Refusal::BadInclusionProof(problem))?;
    let times = signed_times(root, bundle, signature, log, logged_at)?;
    // The certificate must have been trusted and valid at every proven time.
    let mut who = None;
    for at in times {
        who = Some(policy::trusted_signer(policy, root, cert, at)?);
    }
    let who = who.ok_or_else(|| Refusal::BadTimestamp("no signed time".into()))?;
    check_subject(digest, &bundle.content)?;
    Ok(policy::keyless_verified(digest, who, root))
}
