//! The verdict over every signature and bundle found for a release: each checked against the
//! policy — a keyed or keyless `.sig` signature here, a Sigstore bundle by `bundle_check` —,
//! the unreadable ones skipped and named, the release passed by any one that verifies and
//! refused only when none does, with what each said.

use super::bundle::Bundle;
use super::bundle_check;
use super::cosign::{self, Signature};
use super::keyless;
use super::policy::{Policy, Refusal, Tried, Verified, check_payload, keyless_verified, trusted_signer};
use super::rekor;
use super::trusted_root::TrustedRoot;

/// The signatures and bundles found for a release, each named by where it was found, and
/// those that could not be read (named, with why).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Found {
    pub signatures: Vec<(String, Signature)>,
    pub bundles: Vec<(String, Bundle)>,
    pub unreadable: Vec<(String, String)>,
}

impl Found {
    /// `signatures` and `bundles` named by their place in the list.
    pub fn listed(signatures: &[Signature], bundles: &[Bundle]) -> Found {
        let named = |kind: &str, i: usize| format!("{kind} {}", i + 1);
        Found {
            signatures: signatures
                .iter()
                .enumerate()
                .map(|(i, s)| (named(".sig signature", i), s.clone()))
                .collect(),
            bundles: bundles
                .iter()
                .enumerate()
                .map(|(i, b)| (named("Sigstore bundle", i), b.clone()))
                .collect(),
            unreadable: Vec::new(),
        }
    }

    fn count(&self) -> usize {
        self.signatures.len() + self.bundles.len() + self.unreadable.len()
    }
}

/// The outcome of one keyed signature: the payload is trusted only after its signature verified.
fn check_keyed(policy: &Policy, digest: &str, sig: &Signature) -> Result<Verified, Refusal> {
    let der = cosign::decode_signature(&sig.signature).ok_or(Refusal::MalformedSignature)?;
    let signer = policy
        .keys
        .iter()
        .find(|k| k.verifies(&sig.payload, &der))
        .ok_or(Refusal::WrongKey)?;
    check_payload(digest, &sig.payload)?;
    Ok(Verified {
        digest: digest.to_string(),
        signer: signer.fingerprint().to_string(),
        keyless: None,
        skipped: Vec::new(),
    })
}

/// The outcome of one keyless signature: signed by the certificate's key, logged (the log's
/// time is when it was signed), the certificate trusted and valid then, its identity accepted,
/// and only then the payload read.
fn check_keyless(
    policy: &Policy,
    root: &TrustedRoot,
    digest: &str,
    sig: &Signature,
) -> Result<Verified, Refusal> {
    let der = cosign::decode_signature(&sig.signature).ok_or(Refusal::MalformedSignature)?;
    let cert = sig.certificate.as_deref().ok_or(Refusal::NoCertificate)?;
    let cert = keyless::certificate_der(cert).map_err(Refusal::UntrustedCertificate)?;
    if !keyless::signs(&cert, &sig.payload, &der).map_err(Refusal::UntrustedCertificate)? {
        return Err(Refusal::WrongKey);
    }
    let bundle = sig.bundle.as_deref().ok_or_else(|| {
        Refusal::BadInclusionProof("no Rekor bundle: the signature's time cannot be proven offline".into())
    })?;
    let entry = rekor::check(root, bundle.as_bytes(), &sig.payload, &der, &cert)
        .map_err(Refusal::BadInclusionProof)?;
    let who = trusted_signer(policy, root, &cert, entry.integrated_time)?;
    check_payload(digest, &sig.payload)?;
    Ok(keyless_verified(digest, who, root))
}

/// One signature under `policy`: keyless when it carries a certificate and the policy names
/// identities (or has no keys), else keyed.
fn check_one(policy: &Policy, digest: &str, sig: &Signature) -> Result<Verified, Refusal> {
    match &policy.trusted_root {
        Some(root)
            if !policy.identities.is_empty() && (sig.certificate.is_some() || policy.keys.is_empty()) =>
        {
            check_keyless(policy, root, digest, sig)
        }
        _ => check_keyed(policy, digest, sig),
    }
}

/// Whether one of `signatures` of the manifest `digest` passes `policy`.
pub fn verify(policy: &Policy, digest: &str, signatures: &[Signature]) -> Result<Verified, Refusal> {
    verify_all(policy, digest, signatures, &[])
}

/// Whether one of `signatures` (the `.sig` tag's) or of `bundles` (Sigstore bundles, the
/// manifest's referrers) passes `policy`: either kind suffices.
pub fn verify_all(
    policy: &Policy,
    digest: &str,
    signatures: &[Signature],
    bundles: &[Bundle],
) -> Result<Verified, Refusal> {
    verify_found(policy, digest, &Found::listed(signatures, bundles))
}

/// Whether one of the signatures or bundles `found` passes `policy`. The unreadable ones are
/// skipped (named in the verdict); refused only when none passes, then with what each said
/// (a single readable signature's refusal as it is).
pub fn verify_found(policy: &Policy, digest: &str, found: &Found) -> Result<Verified, Refusal> {
    let outcomes = found
        .signatures
        .iter()
        .map(|(what, sig)| (what, check_one(policy, digest, sig)))
        .chain(
            found
                .bundles
                .iter()
                .map(|(what, b)| (what, bundle_check::check(policy, digest, b))),
        );
    let mut tried = Vec::with_capacity(found.count());
    for (what, outcome) in outcomes {
        match outcome {
            Ok(mut verified) => {
                verified.skipped = found
                    .unreadable
                    .iter()
                    .map(|(what, why)| format!("{what}: {why}"))
                    .collect();
                return Ok(verified);
            }
            Err(refusal) => tried.push(Tried {
                what: what.clone(),
                refusal,
            }),
        }
    }
    tried.extend(found.unreadable.iter().map(|(what, why)| Tried {
        what: what.clone(),
        refusal: Refusal::Unreadable(why.clone()),
    }));
    match tried.len() {
        0 => Err(Refusal::Unsigned {
            digest: digest.to_string(),
        }),
        1 if found.unreadable.is_empty() => Err(tried.remove(0).refusal),
        _ => Err(Refusal::NoneVerifies(tried)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::keys::SigningKey;

    const DIGEST: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
    const OTHER: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

    fn signed(key: &SigningKey, payload: &[u8]) -> Signature {
        Signature {
            payload: payload.to_vec(),
            signature: cosign::encode_signature(&key.sign(payload).unwrap()),
            ..Signature::default()
        }
    }

    #[test]
    fn every_refusal_has_its_reason() {
        let key = SigningKey::generate().unwrap();
        let stranger = SigningKey::generate().unwrap();
        let policy = Policy::keyed(vec![key.public_key().clone()]);
        let good = signed(&key, &cosign::payload("r/x", DIGEST));
        let mut tampered = good.clone();
        tampered.payload = cosign::payload("r/x", OTHER);
        let garbage = signed(&key, b"{\"critical\":{}}");
        let table: Vec<(&str, Vec<Signature>, Result<&str, &str>)> = vec![
            (
                "signed by the key",
                vec![good.clone()],
                Ok(key.public_key().fingerprint()),
            ),
            ("no signatures", vec![], Err("NoSignature")),
            (
                "another key",
                vec![signed(&stranger, &cosign::payload("r/x", DIGEST))],
                Err("WrongKey"),
            ),
            (
                "payload changed after signing",
                vec![tampered.clone()],
                Err("WrongKey"),
            ),
            (
                "signed, of another manifest",
                vec![signed(&key, &cosign::payload("r/x", OTHER))],
                Err("DigestMismatch"),
            ),
            (
                "signed, not a cosign payload",
                vec![garbage],
                Err("TamperedPayload"),
            ),
            (
                "not base64",
                vec![Signature {
                    payload: good.payload.clone(),
                    signature: "%%".into(),
                    ..Signature::default()
                }],
                Err("MalformedSignature"),
            ),
            (
                "one good among bad ones",
                vec![tampered, good],
                Ok(key.public_key().fingerprint()),
            ),
        ];
        for (what, sigs, want) in table {
            let got = verify(&policy, DIGEST, &sigs);
            match (got, want) {
                (Ok(v), Ok(signer)) => {
                    assert_eq!((v.signer.as_str(), v.digest.as_str()), (signer, DIGEST), "{what}")
                }
                (Err(r), Err(reason)) => assert_eq!(r.reason(), reason, "{what}: {r}"),
                (got, want) => panic!("{what}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn an_unreadable_signature_is_skipped_and_named() {
        let key = SigningKey::generate().unwrap();
        let stranger = SigningKey::generate().unwrap();
        let policy = Policy::keyed(vec![key.public_key().clone()]);
        let good = signed(&key, &cosign::payload("r/x", DIGEST));
        let other = signed(&stranger, &cosign::payload("r/x", DIGEST));
        let broken = (
            "Sigstore bundle sha256:bad".to_string(),
            "not JSON: EOF".to_string(),
        );
        let found = |sigs: Vec<Signature>| Found {
            signatures: sigs
                .into_iter()
                .enumerate()
                .map(|(i, s)| (format!(".sig signature {}", i + 1), s))
                .collect(),
            bundles: Vec::new(),
            unreadable: vec![broken.clone()],
        };
        let v = verify_found(&policy, DIGEST, &found(vec![good])).unwrap();
        assert_eq!(v.signer, key.public_key().fingerprint());
        assert_eq!(v.skipped, ["Sigstore bundle sha256:bad: not JSON: EOF"]);
        // Refused only when none passes, naming each reason; the reason is the most telling.
        let table: [(Vec<Signature>, &str, &str); 2] = [
            (
                vec![],
                "UnreadableSignature",
                "Sigstore bundle sha256:bad: unreadable: not JSON: EOF",
            ),
            (
                vec![other],
                "WrongKey",
                "none of 2 signatures verifies — .sig signature 1: no signature verifies under the given key(s): signed by another key, or the payload was changed after signing; Sigstore bundle sha256:bad: unreadable: not JSON: EOF",
            ),
        ];
        for (sigs, reason, text) in table {
            let err = verify_found(&policy, DIGEST, &found(sigs)).unwrap_err();
            assert_eq!((err.reason(), err.to_string().as_str()), (reason, text));
        }
    }

    #[test]
    fn any_key_of_the_policy_verifies() {
        let (a, b) = (SigningKey::generate().unwrap(), SigningKey::generate().unwrap());
        let policy = Policy::keyed(vec![a.public_key().clone(), b.public_key().clone()]);
        let v = verify(&policy, DIGEST, &[signed(&b, &cosign::payload("r", DIGEST))]).unwrap();
        assert_eq!(v.signer, b.public_key().fingerprint());
        assert!(policy.trusts(&v) && !Policy::default().trusts(&v));
    }
}
