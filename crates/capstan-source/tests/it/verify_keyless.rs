//! Keyless cosign signatures. A real one, made by `cosign sign` in a GitHub Actions workflow
//! against the public-good Fulcio and Rekor (testdata/verify/keyless/README.md says where it
//! came from), checked offline against Sigstore's public-good trusted root: it passes, and every
//! change to it or to the policy is refused with its reason. The one refusal real data cannot
//! show — a certificate that had expired when the signature was logged — uses a chain and a
//! log key made here.

use std::path::PathBuf;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use capstan_source::verify::cosign::{self, Signature};
use capstan_source::verify::{Identity, Policy, SigningKey, TrustedRoot, verdict};
use capstan_testenv::keyless::{self as made_here, canonical};
use sha2::{Digest, Sha256};

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/verify/keyless")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

const DIGEST: &str = "sha256:c05263d2ff654c3a94243662440913f045075d59c436e2c69e9145ec2b87a321";
const ISSUER: &str = r"https://token\.actions\.githubusercontent\.com";
const SUBJECT: &str = r"https://github\.com/salrashid123/go-bazel-github-workflow/\.github/workflows/.*";

/// The signature of the fixture's signature manifest, as the registry path reads it.
fn real_signature() -> Signature {
    let manifest: serde_json::Value = serde_json::from_slice(&fixture("signature-manifest.json")).unwrap();
    let layer = &manifest["layers"][0];
    let payload = fixture("payload.json");
    assert_eq!(
        format!("sha256:{}", hex(&Sha256::digest(&payload))),
        layer["digest"].as_str().unwrap(),
        "the payload is the layer's blob"
    );
    let annotation = |name: &str| layer["annotations"][name].as_str().map(str::to_string);
    Signature {
        payload,
        signature: annotation(cosign::SIGNATURE_ANNOTATION).unwrap(),
        certificate: annotation(cosign::CERTIFICATE_ANNOTATION),
        bundle: annotation(cosign::BUNDLE_ANNOTATION),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn public_good() -> TrustedRoot {
    TrustedRoot::from_json(&fixture("trusted_root.json"), "trusted_root.json").unwrap()
}

fn keyless(issuer: &str, subject: &str, root: TrustedRoot) -> Policy {
    Policy::keyless(vec![Identity::new(issuer, subject).unwrap()], root)
}

/// The bundle of `sig` with `edit` applied to its JSON.
fn edit_bundle(sig: &Signature, edit: impl FnOnce(&mut serde_json::Value)) -> Signature {
    let mut bundle: serde_json::Value = serde_json::from_str(sig.bundle.as_deref().unwrap()).unwrap();
    edit(&mut bundle);
    Signature {
        bundle: Some(bundle.to_string()),
        ..sig.clone()
    }
}

#[test]
fn verify_keyless_a_real_cosign_signature_verifies_offline() {
    let v = verdict::verify(
        &keyless(ISSUER, SUBJECT, public_good()),
        DIGEST,
        &[real_signature()],
    )
    .unwrap();
    let who = v.keyless.as_ref().unwrap();
    assert_eq!(
        who.subject,
        "https://github.com/salrashid123/go-bazel-github-workflow/.github/workflows/release.yaml@refs/tags/v0.0.30"
    );
    assert_eq!(who.issuer, "https://token.actions.githubusercontent.com");
    assert_eq!(v.digest, DIGEST);
    assert!(
        v.signer.starts_with("https://github.com/salrashid123/")
            && v.signer.contains("(issuer https://token.")
    );
    let policy = keyless(ISSUER, SUBJECT, public_good());
    assert!(
        policy.trusts(&v),
        "a recorded verification holds under the same policy"
    );
    assert!(!keyless(ISSUER, "nobody", public_good()).trusts(&v));
}

#[test]
fn verify_keyless_every_refusal_of_real_data_names_its_reason() {
    let good = real_signature();
    let root = public_good();
    let mut tampered_payload = good.clone();
    tampered_payload.payload[20] ^= 1;
    // The trusted root without the authority that issued the certificate (the 2022 one).
    let mut other_ca = root.clone();
    other_ca.authorities.retain(|a| a.valid.end.is_some());
    // The trusted root with the log's key replaced by another P-256 key.
    let mut other_log = root.clone();
    other_log.logs[0].spki = SigningKey::generate()
        .unwrap()
        .public_key()
        .to_pem()
        .pipe(|pem| pem::parse(pem).unwrap().contents().to_vec());
    let later = edit_bundle(&good, |b| {
        b["Payload"]["integratedTime"] = (b["Payload"]["integratedTime"].as_i64().unwrap() + 1).into()
    });
    let bad_set = edit_bundle(&good, |b| {
        b["SignedEntryTimestamp"] = STANDARD.encode(b"nope").into()
    });
    let table: Vec<(&str, Policy, &str, Signature, &str, &str)> = vec![
        (
            "another subject",
            keyless(ISSUER, "https://github.com/other/.*", root.clone()),
            DIGEST,
            good.clone(),
            "IdentityMismatch",
            "signed by https://github.com/salrashid123/",
        ),
        (
            "another issuer",
            keyless(r"https://accounts\.google\.com", SUBJECT, root.clone()),
            DIGEST,
            good.clone(),
            "IdentityMismatch",
            "OIDC issuer https://token.actions.githubusercontent.com",
        ),
        (
            "a subject regex matching only a part",
            keyless(ISSUER, "salrashid123", root.clone()),
            DIGEST,
            good.clone(),
            "IdentityMismatch",
            "",
        ),
        (
            "an untrusted chain",
            keyless(ISSUER, SUBJECT, other_ca),
            DIGEST,
            good.clone(),
            "UntrustedCertificate",
            "not by an authority of the trusted root",
        ),
        (
            "another log key",
            keyless(ISSUER, SUBJECT, other_log),
            DIGEST,
            good.clone(),
            "BadInclusionProof",
            "does not verify under the key of https://rekor.sigstore.dev",
        ),
        (
            "a changed integrated time",
            keyless(ISSUER, SUBJECT, root.clone()),
            DIGEST,
            later,
            "BadInclusionProof",
            "signed entry timestamp does not verify",
        ),
        (
            "a broken SET",
            keyless(ISSUER, SUBJECT, root.clone()),
            DIGEST,
            bad_set,
            "BadInclusionProof",
            "",
        ),
        (
            "no bundle",
            keyless(ISSUER, SUBJECT, root.clone()),
            DIGEST,
            Signature {
                bundle: None,
                ..good.clone()
            },
            "BadInclusionProof",
            "no Rekor bundle",
        ),
        (
            "a tampered payload",
            keyless(ISSUER, SUBJECT, root.clone()),
            DIGEST,
            tampered_payload,
            "WrongKey",
            "",
        ),
        (
            "a digest mismatch",
            keyless(ISSUER, SUBJECT, root.clone()),
            "sha256:1111111111111111111111111111111111111111111111111111111111111111",
            good.clone(),
            "DigestMismatch",
            "the signature is of sha256:c05263",
        ),
        (
            "a keyed signature",
            keyless(ISSUER, SUBJECT, root.clone()),
            DIGEST,
            Signature {
                certificate: None,
                ..good.clone()
            },
            "NoCertificate",
            "",
        ),
    ];
    for (what, policy, digest, sig, reason, message) in table {
        let refusal = verdict::verify(&policy, digest, &[sig]).unwrap_err();
        assert_eq!(refusal.reason(), reason, "{what}: {refusal}");
        assert!(refusal.to_string().contains(message), "{what}: {refusal}");
    }
}

#[test]
fn verify_keyless_the_log_entry_must_be_of_this_signature() {
    // Another payload, signature or certificate in the logged body breaks the SET first; with
    // the SET re-signed by a log key of the test's own, the body check itself is what refuses.
    let good = real_signature();
    let log = SigningKey::generate().unwrap();
    let mut root = public_good();
    root.logs[0].spki = pem::parse(log.public_key().to_pem()).unwrap().contents().to_vec();
    let policy = keyless(ISSUER, SUBJECT, root);
    let resign = |body_edit: &dyn Fn(&mut serde_json::Value)| {
        edit_bundle(&good, |b| {
            let mut body: serde_json::Value =
                serde_json::from_slice(&STANDARD.decode(b["Payload"]["body"].as_str().unwrap()).unwrap())
                    .unwrap();
            body_edit(&mut body);
            b["Payload"]["body"] = STANDARD.encode(body.to_string()).into();
            b["SignedEntryTimestamp"] = STANDARD
                .encode(log.sign(&canonical(&b["Payload"])).unwrap())
                .into();
        })
    };
    verdict::verify(&policy, DIGEST, &[resign(&|_| {})]).unwrap();
    type BodyEdit<'a> = &'a dyn Fn(&mut serde_json::Value);
    let table: [(&str, BodyEdit, &str); 4] = [
        (
            "another payload hash",
            &|b| b["spec"]["data"]["hash"]["value"] = "00".into(),
            "another payload",
        ),
        (
            "another signature",
            &|b| b["spec"]["signature"]["content"] = "AAAA".into(),
            "another signature",
        ),
        (
            "another certificate",
            &|b| b["spec"]["signature"]["publicKey"]["content"] = "AAAA".into(),
            "another certificate",
        ),
        (
            "another kind",
            &|b| b["kind"] = "intoto".into(),
            "\"intoto\" log entry",
        ),
    ];
    for (what, body_edit, message) in table {
        let refusal = verdict::verify(&policy, DIGEST, &[resign(body_edit)]).unwrap_err();
        assert_eq!(refusal.reason(), "BadInclusionProof", "{what}: {refusal}");
        assert!(refusal.to_string().contains(message), "{what}: {refusal}");
    }
}

trait Pipe: Sized {
    fn pipe<T>(self, f: impl FnOnce(Self) -> T) -> T {
        f(self)
    }
}
impl<T> Pipe for T {}

#[test]
fn verify_keyless_a_certificate_expired_when_logged_is_refused() {
    const T0: i64 = 1_700_000_000;
    let digest = "sha256:2222222222222222222222222222222222222222222222222222222222222222";
    let made = |logged: i64, code_signing: bool| {
        let m = made_here::signed("registry.example/stacks", digest, T0, logged, code_signing);
        let sig = Signature {
            payload: m.payload,
            signature: m.signature,
            certificate: Some(m.certificate),
            bundle: Some(m.bundle),
        };
        (m.trusted_root, sig)
    };
    let policy_of = |root: &[u8]| {
        keyless(
            r"https://issuer\.example\.org",
            r"dev@example\.org",
            TrustedRoot::from_json(root, "made-here").unwrap(),
        )
    };
    let (root, inside) = made(T0 + 300, true);
    let v = verdict::verify(&policy_of(&root), digest, &[inside]).unwrap();
    assert_eq!(v.signer, "dev@example.org (issuer https://issuer.example.org)");

    let table = [
        (
            T0 + 601,
            true,
            "ExpiredCertificate",
            "the signature was logged at",
        ),
        (T0 - 1, true, "ExpiredCertificate", ""),
        (T0 + 300, false, "UntrustedCertificate", "not for code signing"),
    ];
    for (logged, code_signing, reason, message) in table {
        let (root, sig) = made(logged, code_signing);
        let refusal = verdict::verify(&policy_of(&root), digest, &[sig]).unwrap_err();
        assert_eq!(refusal.reason(), reason, "{logged}: {refusal}");
        assert!(refusal.to_string().contains(message), "{refusal}");
    }
    // The authority valid from 2023 does not vouch for a signature logged in 2022.
    let (root, sig) = made(T0 + 300, true);
    let mut root: serde_json::Value = serde_json::from_slice(&root).unwrap();
    root["certificateAuthorities"][0]["validFor"]["start"] = "2024-01-01T00:00:00Z".into();
    let refusal = verdict::verify(&policy_of(root.to_string().as_bytes()), digest, &[sig]).unwrap_err();
    assert_eq!(refusal.reason(), "UntrustedCertificate", "{refusal}");
}
