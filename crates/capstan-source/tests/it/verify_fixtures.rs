//! Cosign keys and signatures made by other tools (testdata/verify/README.md says how): a key
//! file written by cosign itself, one written by the Python oracle (PyNaCl + `cryptography`),
//! and a signature the oracle made. capstan must read and verify them as cosign does.

use std::path::PathBuf;

use capstan_source::verify::cosign::{self, Signature};
use capstan_source::verify::{Policy, PublicKey, SigningKey, verdict};

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/verify")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn verify_fixtures_a_cosign_made_key_opens_to_its_public_key() {
    let key = SigningKey::from_pem(
        &fixture("cosign-made-empty-password.key"),
        Some(b""),
        "cosign.key",
    )
    .unwrap();
    let public = PublicKey::from_pem(&fixture("cosign-made-empty-password.pub"), "cosign.pub").unwrap();
    assert_eq!(key.public_key(), &public);
    let err = SigningKey::from_pem(
        &fixture("cosign-made-empty-password.key"),
        Some(b"x"),
        "cosign.key",
    )
    .unwrap_err();
    assert!(err.to_string().contains("wrong password"), "{err}");
}

#[test]
fn verify_fixtures_a_python_sealed_key_opens_with_its_password() {
    let key = SigningKey::from_pem(
        &fixture("python-sealed/cosign.key"),
        Some(b"capstan-test"),
        "cosign.key",
    )
    .unwrap();
    let public = PublicKey::from_pem(&fixture("python-sealed/cosign.pub"), "cosign.pub").unwrap();
    assert_eq!(key.public_key(), &public);
}

#[test]
fn verify_fixtures_a_python_signature_verifies_and_refusals_hold() {
    let public = PublicKey::from_pem(&fixture("python-sealed/cosign.pub"), "cosign.pub").unwrap();
    let other = PublicKey::from_pem(&fixture("cosign-made-empty-password.pub"), "other.pub").unwrap();
    let payload = fixture("python-signed.payload.json");
    let signature = String::from_utf8(fixture("python-signed.sig")).unwrap();
    let digest = cosign::signed_digest(&payload).unwrap();
    let sig = Signature {
        payload: payload.clone(),
        signature,
        ..Signature::default()
    };
    let v = verdict::verify(
        &Policy::keyed(vec![public.clone()]),
        &digest,
        std::slice::from_ref(&sig),
    )
    .unwrap();
    assert_eq!(v.signer, public.fingerprint());
    let refused = |policy: Policy, digest: &str, sig: Signature| {
        verdict::verify(&policy, digest, &[sig]).unwrap_err().reason()
    };
    assert_eq!(
        refused(Policy::keyed(vec![other]), &digest, sig.clone()),
        "WrongKey"
    );
    let mismatch = format!("sha256:{}", "cd".repeat(32));
    assert_eq!(
        refused(Policy::keyed(vec![public.clone()]), &mismatch, sig.clone()),
        "DigestMismatch"
    );
    let mut tampered = sig;
    tampered.payload = String::from_utf8(payload)
        .unwrap()
        .replace("abab", "abac")
        .into_bytes();
    assert_eq!(
        refused(Policy::keyed(vec![public]), &digest, tampered),
        "WrongKey"
    );
}
