//! Sigstore bundles whose content is a DSSE envelope of an in-toto statement, from real data
//! (testdata/verify/bundle/README.md): sigstore-conformance's keyless bundle made against the
//! public-good Fulcio and Rekor (a `dsse` log entry with its signed entry timestamp and
//! inclusion proof) and its refusal cases, and npm's keyed publish attestation from sigstore-go.
//! Keyed envelopes of another payload type or subject are made by tests/oracle/bundle_oracle.py.
//! Every keyless verdict is compared with sigstore-python's (tests/oracle/sigstore_oracle.py).

use std::path::Path;
use std::process::Command;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use capstan_source::verify::bundle::{self, Bundle, Content};
use capstan_source::verify::{Identity, Policy, PublicKey, SigningKey, TrustedRoot, verdict};

use crate::verify_support::{fixture, testdata};

const HAPPY: &str = "bundle/happy-path-intoto-in-dsse-v3.sigstore.json";
/// The statement's subject (the artifact `a.txt` of sigstore-conformance).
const DIGEST: &str = "sha256:a0cfc71271d6e278e57cd332ff957c3f7043fdda354c4cbb190a30d56efa01bf";
const OTHER: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const ISSUER: &str = r"https://token\.actions\.githubusercontent\.com";
const SUBJECT: &str = r"https://github\.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.*";

fn public_good() -> TrustedRoot {
    TrustedRoot::from_json(&fixture("keyless/trusted_root.json"), "trusted_root.json").unwrap()
}

fn keyless(subject: &str, root: TrustedRoot) -> Policy {
    Policy::keyless(vec![Identity::new(ISSUER, subject).unwrap()], root)
}

/// The bundle at `path` as JSON, with `edit` applied.
fn edited_json(path: &str, edit: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut json: serde_json::Value = serde_json::from_slice(&fixture(path)).unwrap();
    edit(&mut json);
    json.to_string().into_bytes()
}

/// sigstore-python's verdict on `bundle` (JSON) under `root` (JSON).
fn sigstore_verdict(python: &Path, dir: &Path, bundle: &[u8], root: &[u8]) -> serde_json::Value {
    crate::verify_support::run_oracle(
        python,
        "sigstore_oracle.py",
        dir,
        &[("bundle.json", bundle), ("root.json", root)],
    )
}

#[test]
fn verify_dsse_a_real_keyless_dsse_bundle_verifies_offline() {
    let real = bundle::parse(&fixture(HAPPY)).unwrap();
    let Content::Dsse { payload_type, .. } = &real.content else {
        panic!("not a DSSE bundle: {:?}", real.content)
    };
    assert_eq!(payload_type, bundle::IN_TOTO);
    assert_eq!(real.tlog[0].kind, "dsse");
    assert!(real.tlog[0].set.is_some() && real.tlog[0].proof.is_some());
    let v = verdict::verify_all(&keyless(SUBJECT, public_good()), DIGEST, &[], &[real]).unwrap();
    let who = v.keyless.unwrap();
    assert_eq!(
        who.subject,
        "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main"
    );
    assert_eq!(who.issuer, "https://token.actions.githubusercontent.com");
    assert_eq!(v.digest, DIGEST);
}

/// What changed, the bundle JSON, the trusted root JSON, the release digest, the reason and
/// the text of the refusal.
type Case = (
    &'static str,
    Vec<u8>,
    Vec<u8>,
    &'static str,
    &'static str,
    &'static str,
);

/// Real refusals and tamperings of the keyless DSSE bundle.
fn keyless_cases() -> Vec<Case> {
    let root = fixture("keyless/trusted_root.json");
    let happy = fixture(HAPPY);
    let mut other_ca: serde_json::Value = serde_json::from_slice(&root).unwrap();
    other_ca["certificateAuthorities"]
        .as_array_mut()
        .unwrap()
        .retain(|ca| ca["validFor"].get("end").is_some());
    let other_ca = other_ca.to_string().into_bytes();
    let flip_signature = edited_json(HAPPY, |b| {
        let sig = b["dsseEnvelope"]["signatures"][0]["sig"].as_str().unwrap();
        let mut der = STANDARD.decode(sig).unwrap();
        let last = der.len() - 1;
        der[last] ^= 1;
        b["dsseEnvelope"]["signatures"][0]["sig"] = STANDARD.encode(der).into();
    });
    let payload_type = edited_json(HAPPY, |b| {
        b["dsseEnvelope"]["payloadType"] = "application/vnd.in-toto+json; charset=utf-8".into()
    });
    let other_subject = edited_json(HAPPY, |b| {
        let payload = STANDARD
            .decode(b["dsseEnvelope"]["payload"].as_str().unwrap())
            .unwrap();
        let text = String::from_utf8(payload)
            .unwrap()
            .replace("a0cfc712", "b0cfc712");
        b["dsseEnvelope"]["payload"] = STANDARD.encode(text).into();
    });
    vec![
        (
            "the statement is of another artifact than the release",
            happy.clone(),
            root.clone(),
            OTHER,
            "DigestMismatch",
            "digest mismatch: the signature is of sha256:a0cfc712",
        ),
        (
            "a tampered envelope signature",
            flip_signature,
            root.clone(),
            DIGEST,
            "WrongKey",
            "changed after signing",
        ),
        (
            "another payload type than was signed",
            payload_type,
            root.clone(),
            DIGEST,
            "WrongKey",
            "changed after signing",
        ),
        (
            "the subject digest changed after signing",
            other_subject,
            root.clone(),
            "sha256:b0cfc71271d6e278e57cd332ff957c3f7043fdda354c4cbb190a30d56efa01bf",
            "WrongKey",
            "changed after signing",
        ),
        (
            "conformance: a signature by another certificate (dsse-invalid-sig_fail)",
            fixture("bundle/dsse-invalid-sig_fail.sigstore.json"),
            root.clone(),
            DIGEST,
            "WrongKey",
            "signed by another key",
        ),
        (
            "conformance: a log entry of another signature (dsse-mismatch-sig_fail)",
            fixture("bundle/dsse-mismatch-sig_fail.sigstore.json"),
            root.clone(),
            DIGEST,
            "BadInclusionProof",
            "the log entry is of another signature",
        ),
        (
            "conformance: a log entry of another envelope (dsse-mismatch-envelope_fail)",
            fixture("bundle/dsse-mismatch-envelope_fail.sigstore.json"),
            root.clone(),
            DIGEST,
            "BadInclusionProof",
            "the log entry is of another payload",
        ),
        (
            "an intoto log entry (sigstore-js's npm provenance), not dsse",
            fixture("bundle/sigstore-js-2.0.0-provenance.sigstore.json"),
            root.clone(),
            DIGEST,
            "BadInclusionProof",
            "a \"intoto\" log entry of a DSSE envelope, not dsse",
        ),
        (
            "an authority the root does not trust",
            happy.clone(),
            other_ca,
            DIGEST,
            "UntrustedCertificate",
            "not by an authority of the trusted root",
        ),
        (
            "the CT logs of another instance",
            happy,
            fixture("sct/invalid-ct-key-trusted_root.json"),
            DIGEST,
            "UnknownSCTLog",
            "SCT from an unknown log",
        ),
    ]
}

#[test]
fn verify_dsse_every_refusal_of_real_data_names_its_reason() {
    for (what, json, root, digest, reason, text) in keyless_cases() {
        let root = TrustedRoot::from_json(&root, "trusted_root.json").unwrap();
        let bundle = bundle::parse(&json).unwrap();
        let err = verdict::verify_all(&keyless(SUBJECT, root), digest, &[], &[bundle]).unwrap_err();
        assert_eq!(err.reason(), reason, "{what}: {err}");
        assert!(err.to_string().contains(text), "{what}: {err}");
    }
    let err = verdict::verify_all(
        &keyless("https://github\\.com/someone/.*", public_good()),
        DIGEST,
        &[],
        &[bundle::parse(&fixture(HAPPY)).unwrap()],
    )
    .unwrap_err();
    assert_eq!(err.reason(), "IdentityMismatch", "{err}");
}

#[test]
fn verify_dsse_sigstore_python_agrees_on_real_data() {
    let test = "verify_dsse_sigstore_python_agrees_on_real_data";
    let Some(python) = crate::verify_support::sigstore_python(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = fixture("keyless/trusted_root.json");
    let theirs = sigstore_verdict(&python, dir.path(), &fixture(HAPPY), &root);
    assert_eq!(theirs["ok"], true, "{theirs}");
    assert_eq!(theirs["payload_type"], bundle::IN_TOTO);
    assert_eq!(theirs["subjects"], serde_json::json!([DIGEST]));
    let ours = verdict::verify_all(
        &keyless(SUBJECT, public_good()),
        DIGEST,
        &[],
        &[bundle::parse(&fixture(HAPPY)).unwrap()],
    )
    .unwrap();
    let who = ours.keyless.unwrap();
    assert_eq!(
        (theirs["san"].as_str(), theirs["issuer"].as_str()),
        (Some(who.subject.as_str()), Some(who.issuer.as_str()))
    );
    // Every bundle capstan refuses before reading the subject, sigstore-python refuses too (a
    // statement of another artifact is for the caller to refuse: the oracle only reports it).
    for (what, json, root, _, reason, _) in keyless_cases() {
        let theirs = sigstore_verdict(&python, dir.path(), &json, &root);
        if reason == "DigestMismatch" {
            assert_eq!(
                theirs["subjects"],
                serde_json::json!([DIGEST]),
                "{what}: {theirs}"
            );
        } else {
            assert_eq!(theirs["ok"], false, "{what}: sigstore-python accepted it");
        }
    }
}

/// A keyed DSSE bundle made by tests/oracle/bundle_oracle.py (offline) with the key of
/// testdata/verify/python-sealed.
fn python_made(python: &Path, dir: &Path, extra: &[&str]) -> Bundle {
    let out_file = dir.join("keyed.json");
    let key = testdata("python-sealed/cosign.key");
    let out = Command::new(python)
        .arg(crate::verify_support::script("bundle_oracle.py"))
        .args(["keyed", "-", "-"])
        .arg(&key)
        .arg(&out_file)
        .args(["--password", "capstan-test", "--dsse"])
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    bundle::parse(&std::fs::read(&out_file).unwrap()).unwrap()
}

#[test]
fn verify_dsse_keyed_envelopes_by_independent_signers() {
    // npm's publish attestation (sigstore-go's example), signed by npm's key: the signature
    // verifies under that key; its subject is an npm tarball's sha512, never a release's.
    let npm = bundle::parse(&fixture("bundle/npm-publish.sigstore.json")).unwrap();
    let npm_key = PublicKey::from_pem(&fixture("bundle/npm-publish-key.pub"), "npm-publish-key.pub").unwrap();
    let err = verdict::verify_all(
        &Policy::keyed(vec![npm_key.clone()]),
        DIGEST,
        &[],
        std::slice::from_ref(&npm),
    )
    .unwrap_err();
    assert_eq!(err.reason(), "DigestMismatch", "{err}");
    assert!(
        err.to_string().contains("the signature is of no sha256 subject"),
        "{err}"
    );
    let stranger = SigningKey::generate().unwrap().public_key().clone();
    let err = verdict::verify_all(
        &Policy::keyed(vec![stranger]),
        DIGEST,
        &[],
        std::slice::from_ref(&npm),
    )
    .unwrap_err();
    assert_eq!(err.reason(), "WrongKey", "{err}");
    let mut tampered = npm;
    if let Content::Dsse { payload, .. } = &mut tampered.content {
        payload[40] ^= 1;
    }
    let err = verdict::verify_all(&Policy::keyed(vec![npm_key]), DIGEST, &[], &[tampered]).unwrap_err();
    assert_eq!(err.reason(), "WrongKey", "{err}");

    // Envelopes made by Python's cryptography, of this digest or not, of in-toto's type or not.
    let test = "verify_dsse_keyed_envelopes_by_independent_signers";
    let Some(python) = crate::verify_support::python(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let key = PublicKey::from_pem(&fixture("python-sealed/cosign.pub"), "cosign.pub").unwrap();
    let policy = Policy::keyed(vec![key.clone()]);
    let good = python_made(&python, dir.path(), &["--digest", DIGEST]);
    let v = verdict::verify_all(&policy, DIGEST, &[], &[good]).unwrap();
    assert_eq!(v.signer, key.fingerprint());
    let table: [(&[&str], &str, &str); 3] = [
        (
            &["--digest", DIGEST, "--payload-type", "application/json"],
            "TamperedPayload",
            "a DSSE payload of type \"application/json\", not an in-toto statement",
        ),
        (
            &["--digest", OTHER],
            "DigestMismatch",
            "the signature is of sha256:1111",
        ),
        (
            &["--digest", DIGEST, "--tamper"],
            "WrongKey",
            "changed after signing",
        ),
    ];
    for (extra, reason, text) in table {
        let made = python_made(&python, dir.path(), extra);
        let err = verdict::verify_all(&policy, DIGEST, &[], &[made]).unwrap_err();
        assert_eq!(err.reason(), reason, "{extra:?}: {err}");
        assert!(err.to_string().contains(text), "{extra:?}: {err}");
    }
}
