//! Whether a release's signatures satisfy a policy: a pure decision over the manifest digest
//! and the signatures found, with a named reason for every refusal. A signature with a
//! certificate is checked as keyless ([`super::keyless`], [`super::rekor`]) when the policy
//! names identities (its certificate must also carry an SCT of a trusted CT log, [`super::sct`]);
//! otherwise against the policy's keys. Sigstore bundles (cosign v3) are
//! checked the same way by [`super::bundle_check`].

use super::bundle::Bundle;
use super::bundle_check;
use super::cosign::{self, Signature};
use super::keyless::{self, CertProblem};
use super::keys::PublicKey;
use super::rekor;
use super::sct::{self, SctProblem};
use super::trusted_root::TrustedRoot;

/// An identity a keyless signature may have: regexes of the OIDC issuer and of the subject
/// (the certificate's e-mail or URI), each matched against the whole text.
#[derive(Clone, Debug)]
pub struct Identity {
    pub issuer: regex::Regex,
    pub subject: regex::Regex,
}

impl PartialEq for Identity {
    fn eq(&self, other: &Identity) -> bool {
        (self.issuer.as_str(), self.subject.as_str()) == (other.issuer.as_str(), other.subject.as_str())
    }
}

impl Eq for Identity {}

impl Identity {
    /// `issuer` and `subject` as regexes anchored at both ends (`.*` for a prefix match).
    pub fn new(issuer: &str, subject: &str) -> Result<Identity, regex::Error> {
        let anchored = |re: &str| regex::Regex::new(&format!("^(?:{re})$"));
        Ok(Identity {
            issuer: anchored(issuer)?,
            subject: anchored(subject)?,
        })
    }

    pub fn matches(&self, issuer: &str, subject: &str) -> bool {
        self.issuer.is_match(issuer) && self.subject.is_match(subject)
    }
}

/// What a release must carry: a cosign signature by one of `keys`, or a keyless one whose
/// certificate chains to `trusted_root` and names one of `identities`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    pub keys: Vec<PublicKey>,
    pub identities: Vec<Identity>,
    pub trusted_root: Option<TrustedRoot>,
}

impl Policy {
    pub fn keyed(keys: Vec<PublicKey>) -> Policy {
        Policy {
            keys,
            ..Policy::default()
        }
    }

    /// Keyless signatures by `identities`, trusted through `root`.
    pub fn keyless(identities: Vec<Identity>, root: TrustedRoot) -> Policy {
        Policy {
            identities,
            trusted_root: Some(root),
            ..Policy::default()
        }
    }

    /// No keys and no identities: nothing is verified (today's behaviour).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty() && self.identities.is_empty()
    }

    /// Whether a recorded verification still holds under this policy: by one of its keys, or
    /// by an identity it accepts under the same trusted root.
    pub fn trusts(&self, verified: &Verified) -> bool {
        match &verified.keyless {
            None => self.keys.iter().any(|k| k.fingerprint() == verified.signer),
            Some(k) => {
                self.trusted_root.as_ref().map(|r| &r.fingerprint) == Some(&k.trusted_root)
                    && self.identities.iter().any(|i| i.matches(&k.issuer, &k.subject))
            }
        }
    }
}

/// Who signed a keyless signature, and under which trusted root it was verified.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KeylessSigner {
    pub subject: String,
    pub issuer: String,
    /// `sha256:<hex>` of the trusted root file.
    pub trusted_root: String,
}

/// A release that passed: the manifest digest and who signed it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Verified {
    pub digest: String,
    /// `sha256:<hex>` of the signer's public key (SubjectPublicKeyInfo DER), or for a keyless
    /// signature `SUBJECT (issuer ISSUER)`.
    pub signer: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keyless: Option<KeylessSigner>,
    /// The signatures and bundles found that could not be read, each `WHAT: WHY`: skipped,
    /// as another one verified.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
}

/// One signature or bundle that did not pass: where it was found, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tried {
    /// E.g. `Sigstore bundle sha256:…` or `.sig signature 2`.
    pub what: String,
    pub refusal: Refusal,
}

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

fn list_tried(tried: &[Tried]) -> String {
    let each: Vec<String> = tried
        .iter()
        .map(|t| format!("{}: {}", t.what, t.refusal))
        .collect();
    match each.len() {
        1 => each.concat(),
        n => format!("none of {n} signatures verifies — {}", each.join("; ")),
    }
}

/// Why a release is refused. When several signatures fail (or one could not be read), the
/// refusal lists what each said, and its [`Refusal::reason`] is the most telling one's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("no signature: the registry has no cosign signature or Sigstore bundle of {digest}")]
    Unsigned { digest: String },
    #[error(
        "no signature verifies under the given key(s): signed by another key, or the payload was changed after signing"
    )]
    WrongKey,
    /// A signature or bundle that could not be read (not JSON, not a bundle, missing, too large).
    #[error("unreadable: {0}")]
    Unreadable(String),
    /// Several signatures (or one unreadable) and none passed: what each said.
    #[error("{}", list_tried(.0))]
    NoneVerifies(Vec<Tried>),
    #[error("a signature is not base64 DER")]
    MalformedSignature,
    #[error("the signed payload is not a cosign payload: {0}")]
    MalformedPayload(String),
    #[error("digest mismatch: the signature is of {signed}, the release manifest is {release}")]
    DigestMismatch { signed: String, release: String },
    #[error("a keyless identity is required but the signature has no certificate")]
    NoCertificate,
    #[error("untrusted certificate: {0}")]
    UntrustedCertificate(String),
    #[error("expired certificate: {0}")]
    ExpiredCertificate(String),
    #[error("no SCT: {0}")]
    NoSct(String),
    #[error("SCT from an unknown log: {0}")]
    UnknownSctLog(String),
    #[error("bad SCT signature: {0}")]
    BadSct(String),
    #[error("bad transparency log entry: {0}")]
    BadInclusionProof(String),
    #[error(
        "identity mismatch: signed by {subject} (OIDC issuer {issuer}), which no --verify-identity / matchOIDCIdentity accepts"
    )]
    IdentityMismatch { subject: String, issuer: String },
}

impl Refusal {
    /// A short stable name for conditions and metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::Unsigned { .. } => "NoSignature",
            Refusal::WrongKey => "WrongKey",
            Refusal::Unreadable(_) => "UnreadableSignature",
            Refusal::NoneVerifies(tried) => most_telling(tried).map_or("NoSignature", Refusal::reason),
            Refusal::MalformedSignature => "MalformedSignature",
            Refusal::MalformedPayload(_) => "TamperedPayload",
            Refusal::DigestMismatch { .. } => "DigestMismatch",
            Refusal::NoCertificate => "NoCertificate",
            Refusal::UntrustedCertificate(_) => "UntrustedCertificate",
            Refusal::ExpiredCertificate(_) => "ExpiredCertificate",
            Refusal::NoSct(_) => "NoSCT",
            Refusal::UnknownSctLog(_) => "UnknownSCTLog",
            Refusal::BadSct(_) => "BadSCT",
            Refusal::BadInclusionProof(_) => "BadInclusionProof",
            Refusal::IdentityMismatch { .. } => "IdentityMismatch",
        }
    }

    /// The order among refusals of several signatures: the further a signature got through
    /// the checks, the more its refusal tells (one that verified but names another digest
    /// tells most).
    pub(super) fn rank(&self) -> u8 {
        match self {
            Refusal::Unsigned { .. } => 0,
            Refusal::Unreadable(_) => 1,
            Refusal::MalformedSignature => 2,
            Refusal::NoCertificate => 3,
            Refusal::WrongKey => 4,
            Refusal::BadInclusionProof(_) => 5,
            Refusal::UntrustedCertificate(_) => 6,
            Refusal::ExpiredCertificate(_) => 7,
            Refusal::NoSct(_) | Refusal::UnknownSctLog(_) | Refusal::BadSct(_) => 8,
            Refusal::IdentityMismatch { .. } => 9,
            Refusal::MalformedPayload(_) => 10,
            Refusal::DigestMismatch { .. } => 11,
            Refusal::NoneVerifies(tried) => most_telling(tried).map_or(0, Refusal::rank),
        }
    }
}

/// The refusal among `tried` that tells most (the first of equals).
fn most_telling(tried: &[Tried]) -> Option<&Refusal> {
    tried
        .iter()
        .map(|t| &t.refusal)
        .reduce(|best, r| if r.rank() > best.rank() { r } else { best })
}

/// The payload's digest is the release's: checked only after the signature verified.
fn check_payload(digest: &str, payload: &[u8]) -> Result<(), Refusal> {
    let signed = cosign::signed_digest(payload).map_err(Refusal::MalformedPayload)?;
    if signed != digest {
        return Err(Refusal::DigestMismatch {
            signed,
            release: digest.to_string(),
        });
    }
    Ok(())
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

/// Who the certificate `cert` (DER) of a signature logged at `at` (the log's time) names,
/// once it chained to `root`, was valid then, carries an SCT of one of the root's CT logs, and
/// names an identity `policy` accepts.
pub(super) fn trusted_signer(
    policy: &Policy,
    root: &TrustedRoot,
    cert: &[u8],
    at: i64,
) -> Result<keyless::CertIdentity, Refusal> {
    let issuer = keyless::chain_to_root(root, cert, at).map_err(|p| match p {
        CertProblem::Untrusted(m) => Refusal::UntrustedCertificate(m),
        CertProblem::Expired(m) => Refusal::ExpiredCertificate(m),
    })?;
    sct::check(root, cert, &issuer.spki).map_err(|p| match p {
        SctProblem::Missing(m) => Refusal::NoSct(m),
        SctProblem::UnknownLog(m) => Refusal::UnknownSctLog(m),
        SctProblem::BadSignature(m) => Refusal::BadSct(m),
    })?;
    let who = keyless::identity(cert).map_err(Refusal::UntrustedCertificate)?;
    if !policy
        .identities
        .iter()
        .any(|i| i.matches(&who.issuer, &who.subject))
    {
        return Err(Refusal::IdentityMismatch {
            subject: who.subject,
            issuer: who.issuer,
        });
    }
    Ok(who)
}

/// The record of a keyless pass of `digest` by `who` under `root`.
pub(super) fn keyless_verified(digest: &str, who: keyless::CertIdentity, root: &TrustedRoot) -> Verified {
    Verified {
        digest: digest.to_string(),
        signer: format!("{} (issuer {})", who.subject, who.issuer),
        keyless: Some(KeylessSigner {
            subject: who.subject,
            issuer: who.issuer,
            trusted_root: root.fingerprint.clone(),
        }),
        skipped: Vec::new(),
    }
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
