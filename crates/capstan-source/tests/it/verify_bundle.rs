//! Sigstore bundles (cosign v3's format). A real keyless v0.2 bundle made against the
//! public-good Fulcio and Rekor by the sigstore-conformance OIDC beacon (a message signature,
//! a hashedrekord entry with an inclusion proof and a signed checkpoint; testdata/verify/bundle/
//! README.md says where it came from), checked offline against Sigstore's public-good trusted
//! root: it passes, and every change to it or to the policy is refused with its reason.

use std::path::PathBuf;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use capstan_source::verify::bundle::{self, Bundle, Content};
use capstan_source::verify::{Identity, Policy, SigningKey, TrustedRoot, verdict};

fn fixture(path: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/verify")
        .join(path);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The SHA-256 of the artifact the bundle signs (its message digest).
const DIGEST: &str = "sha256:a0cfc71271d6e278e57cd332ff957c3f7043fdda354c4cbb190a30d56efa01bf";
const ISSUER: &str = r"https://token\.actions\.githubusercontent\.com";
const SUBJECT: &str = r"https://github\.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.*";

fn real_bundle() -> Bundle {
    bundle::parse(&fixture("bundle/bundle-v02.json")).unwrap()
}

fn public_good() -> TrustedRoot {
    TrustedRoot::from_json(&fixture("keyless/trusted_root.json"), "trusted_root.json").unwrap()
}

fn keyless(issuer: &str, subject: &str, root: TrustedRoot) -> Policy {
    Policy::keyless(vec![Identity::new(issuer, subject).unwrap()], root)
}

/// The bundle's JSON with `edit` applied, read again.
fn edited(edit: impl FnOnce(&mut serde_json::Value)) -> Bundle {
    let mut json: serde_json::Value = serde_json::from_slice(&fixture("bundle/bundle-v02.json")).unwrap();
    edit(&mut json);
    bundle::parse(json.to_string().as_bytes()).unwrap()
}

#[test]
fn verify_bundle_a_real_keyless_bundle_verifies_offline() {
    let real = real_bundle();
    assert!(matches!(real.content, Content::Message { .. }));
    let proof = real.tlog[0].proof.as_ref().unwrap();
    assert_eq!((proof.tree_size, proof.hashes.len()), (23083062, 10));
    let v = verdict::verify_all(&keyless(ISSUER, SUBJECT, public_good()), DIGEST, &[], &[real]).unwrap();
    let who = v.keyless.as_ref().unwrap();
    assert_eq!(
        who.subject,
        "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main"
    );
    assert_eq!(who.issuer, "https://token.actions.githubusercontent.com");
    assert_eq!(v.digest, DIGEST);
    assert!(keyless(ISSUER, SUBJECT, public_good()).trusts(&v));
}

#[test]
fn verify_bundle_every_refusal_of_real_data_names_its_reason() {
    let root = public_good();
    let good = real_bundle();
    let mut other_ca = root.clone();
    other_ca.authorities.retain(|a| a.valid.end.is_some());
    let mut other_log = root.clone();
    other_log.logs[0].spki = pem::parse(SigningKey::generate().unwrap().public_key().to_pem())
        .unwrap()
        .contents()
        .to_vec();
    let broken_path = edited(|b| {
        let hashes = &mut b["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]["hashes"];
        hashes[3] = STANDARD.encode([7u8; 32]).into();
    });
    let short_path = edited(|b| {
        let hashes = &mut b["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]["hashes"];
        hashes.as_array_mut().unwrap().pop();
    });
    let other_root_hash = edited(|b| {
        b["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]["rootHash"] =
            STANDARD.encode([1u8; 32]).into();
    });
    let forged_checkpoint = edited(|b| {
        let at = &mut b["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]["checkpoint"]["envelope"];
        let text = at
            .as_str()
            .unwrap()
            .replace("Timestamp: 1689177396", "Timestamp: 1689177397");
        *at = text.into();
    });
    let no_proof = edited(|b| {
        b["verificationMaterial"]["tlogEntries"][0]
            .as_object_mut()
            .unwrap()
            .remove("inclusionProof");
    });
    let no_entry = edited(|b| b["verificationMaterial"]["tlogEntries"] = serde_json::json!([]));
    let no_certificate = edited(|b| {
        b["verificationMaterial"] = serde_json::json!({"publicKey": {"hint": "x"}, "tlogEntries": []})
    });
    let other_digest = edited(|b| {
        b["messageSignature"]["messageDigest"]["digest"] = STANDARD.encode([0u8; 32]).into();
    });
    /// What changed, the policy, the release digest, the bundles, the reason and its text.
    type Case<'a> = (&'a str, Policy, &'a str, Vec<Bundle>, &'a str, &'a str);
    let table: Vec<Case> = vec![
        (
            "another subject",
            keyless(ISSUER, "https://github.com/someone/.*", root.clone()),
            DIGEST,
            vec![good.clone()],
            "IdentityMismatch",
            "extremely-dangerous-oidc-beacon.yml",
        ),
        (
            "another issuer",
            keyless("https://accounts\\.google\\.com", SUBJECT, root.clone()),
            DIGEST,
            vec![good.clone()],
            "IdentityMismatch",
            "OIDC issuer https://token.actions.githubusercontent.com",
        ),
        (
            "an authority the root does not trust",
            keyless(ISSUER, SUBJECT, other_ca),
            DIGEST,
            vec![good.clone()],
            "UntrustedCertificate",
            "not by an authority of the trusted root",
        ),
        (
            "a checkpoint another log key signed",
            keyless(ISSUER, SUBJECT, other_log),
            DIGEST,
            vec![good.clone()],
            "BadInclusionProof",
            "the checkpoint is not signed by the key of https://rekor.sigstore.dev",
        ),
        (
            "a hash of the audit path changed",
            keyless(ISSUER, SUBJECT, root.clone()),
            DIGEST,
            vec![broken_path],
            "BadInclusionProof",
            "gives another root hash",
        ),
        (
            "a hash of the audit path missing",
            keyless(ISSUER, SUBJECT, root.clone()),
            DIGEST,
            vec![short_path],
            "BadInclusionProof",
            "too few hashes",
        ),
        (
            "another root hash",
            keyless(ISSUER, SUBJECT, root.clone()),
            DIGEST,
            vec![other_root_hash],
            "BadInclusionProof",
            "another root hash",
        ),
        (
            "a checkpoint changed after the log signed it",
            keyless(ISSUER, SUBJECT, root.clone()),
            DIGEST,
            vec![forged_checkpoint],
            "BadInclusionProof",
            "the checkpoint's signature by rekor.sigstore.dev does not verify",
        ),
        (
            "neither a timestamp nor a proof",
            keyless(ISSUER, SUBJECT, root.clone()),
            DIGEST,
            vec![no_proof],
            "BadInclusionProof",
            "neither a signed entry timestamp nor an inclusion proof",
        ),
        (
            "no log entry",
            keyless(ISSUER, SUBJECT, root.clone()),
            DIGEST,
            vec![no_entry],
            "BadInclusionProof",
            "no transparency log entry",
        ),
        (
            "no certificate",
            keyless(ISSUER, SUBJECT, root.clone()),
            DIGEST,
            vec![no_certificate],
            "NoCertificate",
            "no certificate",
        ),
        (
            "a message digest changed after signing",
            keyless(ISSUER, SUBJECT, root.clone()),
            DIGEST,
            vec![other_digest],
            "WrongKey",
            "changed after signing",
        ),
        (
            "a bundle of another artifact",
            keyless(ISSUER, SUBJECT, root.clone()),
            "sha256:1111111111111111111111111111111111111111111111111111111111111111",
            vec![good.clone()],
            "DigestMismatch",
            "the signature is of sha256:a0cfc712",
        ),
        (
            "no bundle",
            keyless(ISSUER, SUBJECT, root.clone()),
            DIGEST,
            vec![],
            "NoSignature",
            "no cosign signature or Sigstore bundle",
        ),
        (
            "keyed: a key that did not sign it",
            Policy::keyed(vec![SigningKey::generate().unwrap().public_key().clone()]),
            DIGEST,
            vec![good.clone()],
            "WrongKey",
            "under the given key",
        ),
    ];
    for (what, policy, digest, bundles, reason, text) in table {
        let err = verdict::verify_all(&policy, digest, &[], &bundles).unwrap_err();
        assert_eq!(err.reason(), reason, "{what}: {err}");
        assert!(err.to_string().contains(text), "{what}: {err}");
    }
}
