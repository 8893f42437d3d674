//! A Sigstore bundle of a release manifest against a policy, with the refusals of
//! [`super::policy`]. Keyed: a signature of the content by one of the policy's keys (the log
//! entries are not needed, as for keyed `.sig` signatures). Keyless: the bundle's certificate
//! signed the content, a log entry of the trusted root records that signature (its signed entry
//! timestamp gives the time; an inclusion proof, when present, must prove the entry under a
//! checkpoint the log signed, whose signed time is the time when the entry has no timestamp),
//! the certificate chained to the trusted root and was valid then,
//! and its identity is accepted. Only then is the content read: the message digest, or the
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
use super::trusted_root::TrustedRoot;

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

/// The entry is the log's record of `signature` by `cert` over `content`; when it was logged:
/// the entry's time when its signed entry timestamp verifies, else the time of the checkpoint
/// that its inclusion proof verified under (the log signed that the entry was in by then).
fn check_entry(
    root: &TrustedRoot,
    entry: &TlogEntry,
    content: &Content,
    signature: &[u8],
    cert: &[u8],
) -> Result<i64, String> {
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
    let time = time.ok_or("the checkpoint has no signed time, and there is no signed entry timestamp")?;
    if !log.valid.contains(time) {
        return Err(format!(
            "logged at {time}, outside the validity of the key of {}",
            log.base_url
        ));
    }
    let hash = match content {
        Content::Message { sha256, .. } => crate::cache::hex(sha256),
        Content::Dsse { payload, .. } => crate::cache::hex(&Sha256::digest(payload)),
    };
    let logged = match content {
        Content::Message { .. } => Logged::HashedRekord(&hash),
        Content::Dsse { .. } => Logged::Dsse(&hash),
    };
    rekor::check_body(&entry.body, &logged, signature, cert)?;
    Ok(time)
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
    let mut logged_at = None;
    for entry in &bundle.tlog {
        match check_entry(root, entry, &bundle.content, signature, cert) {
            Ok(at) => {
                logged_at = Some(at);
                break;
            }
            Err(e) => problem = format!("entry {}: {e}", entry.log_index),
        }
    }
    let at = logged_at.ok_or(Refusal::BadInclusionProof(problem))?;
    let who = policy::trusted_signer(policy, root, cert, at)?;
    check_subject(digest, &bundle.content)?;
    Ok(policy::keyless_verified(digest, who, root))
}
