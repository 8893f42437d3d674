//! Whether a release's signatures satisfy a policy: a pure decision over the manifest digest
//! and the signatures found, with a named reason for every refusal.

use super::cosign::{self, Signature};
use super::keys::PublicKey;

/// What a release must carry: a cosign signature by one of `keys`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    pub keys: Vec<PublicKey>,
}

impl Policy {
    pub fn keyed(keys: Vec<PublicKey>) -> Policy {
        Policy { keys }
    }

    /// No keys: nothing is verified (today's behaviour).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Whether `fingerprint` is one of the policy's keys.
    pub fn trusts(&self, fingerprint: &str) -> bool {
        self.keys.iter().any(|k| k.fingerprint() == fingerprint)
    }
}

/// A release that passed: the manifest digest and who signed it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Verified {
    pub digest: String,
    /// `sha256:<hex>` of the signer's public key (SubjectPublicKeyInfo DER).
    pub signer: String,
}

/// Why a release is refused. The most telling reason wins when several signatures fail.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("no signature: the registry has no cosign signature of {digest}")]
    Unsigned { digest: String },
    #[error(
        "no signature verifies under the given key(s) ({count} signature(s) tried): signed by another key, or the payload was changed after signing"
    )]
    WrongKey { count: usize },
    #[error("a signature is not base64 DER")]
    MalformedSignature,
    #[error("the signed payload is not a cosign payload: {0}")]
    MalformedPayload(String),
    #[error("digest mismatch: the signature is of {signed}, the release manifest is {release}")]
    DigestMismatch { signed: String, release: String },
}

impl Refusal {
    /// A short stable name for conditions and metrics.
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::Unsigned { .. } => "NoSignature",
            Refusal::WrongKey { .. } => "WrongKey",
            Refusal::MalformedSignature => "MalformedSignature",
            Refusal::MalformedPayload(_) => "TamperedPayload",
            Refusal::DigestMismatch { .. } => "DigestMismatch",
        }
    }

    /// The order among refusals of several signatures: a signature that verified but names
    /// another digest tells more than one that did not verify.
    fn rank(&self) -> u8 {
        match self {
            Refusal::Unsigned { .. } => 0,
            Refusal::MalformedSignature => 1,
            Refusal::WrongKey { .. } => 2,
            Refusal::MalformedPayload(_) => 3,
            Refusal::DigestMismatch { .. } => 4,
        }
    }
}

/// The outcome of one signature: the payload is trusted only after its signature verified.
fn check_one(policy: &Policy, digest: &str, sig: &Signature, count: usize) -> Result<Verified, Refusal> {
    let der = cosign::decode_signature(&sig.signature).ok_or(Refusal::MalformedSignature)?;
    let signer = policy
        .keys
        .iter()
        .find(|k| k.verifies(&sig.payload, &der))
        .ok_or(Refusal::WrongKey { count })?;
    let signed = cosign::signed_digest(&sig.payload).map_err(Refusal::MalformedPayload)?;
    if signed != digest {
        return Err(Refusal::DigestMismatch {
            signed,
            release: digest.to_string(),
        });
    }
    Ok(Verified {
        digest: digest.to_string(),
        signer: signer.fingerprint().to_string(),
    })
}

/// Whether one of `signatures` of the manifest `digest` passes `policy`.
pub fn verify(policy: &Policy, digest: &str, signatures: &[Signature]) -> Result<Verified, Refusal> {
    let mut worst = Refusal::Unsigned {
        digest: digest.to_string(),
    };
    for sig in signatures {
        match check_one(policy, digest, sig, signatures.len()) {
            Ok(v) => return Ok(v),
            Err(r) if r.rank() > worst.rank() => worst = r,
            Err(_) => {}
        }
    }
    Err(worst)
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
    fn any_key_of_the_policy_verifies() {
        let (a, b) = (SigningKey::generate().unwrap(), SigningKey::generate().unwrap());
        let policy = Policy::keyed(vec![a.public_key().clone(), b.public_key().clone()]);
        let v = verify(&policy, DIGEST, &[signed(&b, &cosign::payload("r", DIGEST))]).unwrap();
        assert_eq!(v.signer, b.public_key().fingerprint());
        assert!(policy.trusts(&v.signer) && !Policy::default().trusts(&v.signer));
    }
}
