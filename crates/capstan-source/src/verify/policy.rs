//! Whether a release's signatures satisfy a policy: a pure decision over the manifest digest
//! and the signatures found, with a named reason for every refusal. A signature with a
//! certificate is checked as keyless ([`super::keyless`], [`super::rekor`]) when the policy
//! names identities (its certificate must also carry an SCT of a trusted CT log, [`super::sct`]);
//! otherwise against the policy's keys. Sigstore bundles (cosign v3) are
//! checked the same way by [`super::bundle_check`].

use super::cosign;
use super::keyless::{self, CertProblem};
use super::keys::PublicKey;
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
    /// No signed time: no RFC 3161 timestamp verified and no log entry gave a time (a Rekor v2
    /// entry has none).
    #[error("no signed time: {0}")]
    BadTimestamp(String),
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
            Refusal::BadTimestamp(_) => "BadTimestamp",
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
            Refusal::BadInclusionProof(_) | Refusal::BadTimestamp(_) => 5,
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
pub(super) fn check_payload(digest: &str, payload: &[u8]) -> Result<(), Refusal> {
    let signed = cosign::signed_digest(payload).map_err(Refusal::MalformedPayload)?;
    if signed != digest {
        return Err(Refusal::DigestMismatch {
            signed,
            release: digest.to_string(),
        });
    }
    Ok(())
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
