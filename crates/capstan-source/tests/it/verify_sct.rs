//! The SCTs of keyless certificates (RFC 6962): real Fulcio certificates (of the cosign `.sig`
//! signature, the v0.2 bundle and the DSSE bundle of testdata/verify) checked against the
//! public-good trusted root, against sigstore-conformance's root whose CT logs are another
//! instance's (`invalid-ct-key_fail`), and against the public-good root with its CT log's key
//! swapped; every verdict is compared with tests/oracle/sct_oracle.py (Python `cryptography`).
//! Through the policy each case is refused with its reason, and a certificate made here without
//! an SCT is refused as `no SCT`.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use capstan_source::verify::bundle;
use capstan_source::verify::cosign::Signature;
use capstan_source::verify::keyless;
use capstan_source::verify::sct::{self, SctProblem};
use capstan_source::verify::{Identity, Policy, SigningKey, TrustedRoot, policy, verdict};
use capstan_testenv::keyless as made_here;
use sha2::Digest;
use x509_parser::certificate::X509Certificate;
use x509_parser::prelude::FromDer;

use crate::verify_support::fixture;

/// The oracle's verdict: `Ok(log URL)` when an SCT verified under a log of the root valid at
/// its time, else the kind of failure; and its SHA-256 of the precertificate TBS.
fn oracle(python: &Path, dir: &Path, cert: &[u8], root: &[u8]) -> (Result<String, &'static str>, String) {
    let report = crate::verify_support::run_oracle(
        python,
        "sct_oracle.py",
        dir,
        &[("cert.der", cert), ("root.json", root)],
    );
    let scts = report["scts"].as_array().unwrap();
    let verdict = if let Some(ok) = scts
        .iter()
        .find(|s| s["verified"] == true && s["in_validity"] == true)
    {
        Ok(ok["log"].as_str().unwrap().to_string())
    } else if scts.is_empty() {
        Err("missing")
    } else if scts
        .iter()
        .any(|s| !s["log"].is_null() && s["in_validity"] == true)
    {
        Err("bad signature")
    } else {
        Err("unknown log")
    };
    (
        verdict,
        report["precert_tbs_sha256"].as_str().unwrap().to_string(),
    )
}

fn kind(problem: &SctProblem) -> &'static str {
    match problem {
        SctProblem::Missing(_) => "missing",
        SctProblem::UnknownLog(_) => "unknown log",
        SctProblem::BadSignature(_) => "bad signature",
    }
}

/// The real certificates: the `.sig` signature's, the v0.2 bundle's, the DSSE bundle's.
fn real_certificates() -> Vec<(&'static str, Vec<u8>)> {
    let manifest: serde_json::Value =
        serde_json::from_slice(&fixture("keyless/signature-manifest.json")).unwrap();
    let pem = manifest["layers"][0]["annotations"]["dev.sigstore.cosign/certificate"]
        .as_str()
        .unwrap();
    let bundled = |path: &str| bundle::parse(&fixture(path)).unwrap().certificate.unwrap();
    vec![
        ("cosign .sig", keyless::certificate_der(pem).unwrap()),
        ("bundle v0.2", bundled("bundle/bundle-v02.json")),
        (
            "DSSE bundle",
            bundled("bundle/happy-path-intoto-in-dsse-v3.sigstore.json"),
        ),
    ]
}

/// The public-good root with the key of its current CT log replaced (its id kept).
fn swapped_ct_key() -> Vec<u8> {
    let mut root: serde_json::Value = serde_json::from_slice(&fixture("keyless/trusted_root.json")).unwrap();
    let other = SigningKey::generate().unwrap().public_key().to_pem();
    let other = pem::parse(other).unwrap().contents().to_vec();
    for log in root["ctlogs"].as_array_mut().unwrap() {
        log["publicKey"]["rawBytes"] = STANDARD.encode(&other).into();
    }
    root.to_string().into_bytes()
}

/// The SCT's time (ms), as the oracle reads it, is inside the certificate's validity: the
/// authority that issued it is found at that time.
fn issuer_spki(root: &TrustedRoot, cert: &[u8]) -> Vec<u8> {
    let (_, parsed) = X509Certificate::from_der(cert).unwrap();
    let at = parsed.validity().not_before.timestamp() + 1;
    keyless::chain_to_root(root, cert, at).unwrap().spki
}

#[test]
fn verify_sct_real_certificates_agree_with_the_python_oracle() {
    let test = "verify_sct_real_certificates_agree_with_the_python_oracle";
    let Some(python) = crate::verify_support::python(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let roots = [
        ("public-good", fixture("keyless/trusted_root.json"), Ok(())),
        (
            "another instance's CT logs",
            fixture("sct/invalid-ct-key-trusted_root.json"),
            Err("unknown log"),
        ),
        ("the CT log's key swapped", swapped_ct_key(), Err("bad signature")),
    ];
    for (name, cert) in real_certificates() {
        for (root_name, json, want) in &roots {
            let root = TrustedRoot::from_json(json, root_name).unwrap();
            let issuer = issuer_spki(&root, &cert);
            let ours = sct::check(&root, &cert, &issuer);
            let (theirs, tbs_sha256) = oracle(&python, dir.path(), &cert, json);
            let what = format!("{name} under {root_name}");
            match (&ours, &theirs, want) {
                (Ok(log), Ok(their_log), Ok(())) => {
                    assert_eq!(log, their_log, "{what}");
                    assert_eq!(log, "https://ctfe.sigstore.dev/2022", "{what}");
                }
                (Err(problem), Err(their_kind), Err(want)) => {
                    assert_eq!(
                        (kind(problem), *their_kind),
                        (*want, *want),
                        "{what}: {problem:?}"
                    )
                }
                _ => panic!("{what}: capstan {ours:?}, oracle {theirs:?}, want {want:?}"),
            }
            let (_, parsed) = X509Certificate::from_der(&cert).unwrap();
            let precert = sct::precert_tbs(parsed.tbs_certificate.as_ref()).unwrap();
            assert_eq!(hex(&sha2::Sha256::digest(&precert)), tbs_sha256, "{what}");
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn verify_sct_a_made_here_certificate_agrees_with_the_oracle() {
    let test = "verify_sct_a_made_here_certificate_agrees_with_the_oracle";
    let Some(python) = crate::verify_support::python(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let digest = "sha256:3333333333333333333333333333333333333333333333333333333333333333";
    for (made, want) in [
        (
            made_here::signed("r/x", digest, 1_700_000_000, 1_700_000_100, true),
            Ok(()),
        ),
        (
            made_here::signed_without_sct("r/x", digest, 1_700_000_000, 1_700_000_100),
            Err("missing"),
        ),
    ] {
        let root = TrustedRoot::from_json(&made.trusted_root, "made-here").unwrap();
        let cert = keyless::certificate_der(&made.certificate).unwrap();
        let ours = sct::check(&root, &cert, &issuer_spki(&root, &cert));
        let (theirs, _) = oracle(&python, dir.path(), &cert, &made.trusted_root);
        match (&ours, &theirs, want) {
            (Ok(log), Ok(their_log), Ok(())) => assert_eq!(
                (log.as_str(), their_log.as_str()),
                ("https://ct.test", "https://ct.test")
            ),
            (Err(problem), Err(their_kind), Err(want)) => {
                assert_eq!((kind(problem), *their_kind), (want, want), "{problem:?}")
            }
            _ => panic!("capstan {ours:?}, oracle {theirs:?}, want {want:?}"),
        }
    }
}

const ISSUER: &str = r"https://token\.actions\.githubusercontent\.com";

#[test]
fn verify_sct_every_refusal_names_its_reason() {
    let identity = |subject: &str| vec![Identity::new(ISSUER, subject).unwrap()];
    let root = |json: &[u8]| TrustedRoot::from_json(json, "trusted_root.json").unwrap();
    let beacon = r"https://github\.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.*";
    let v02 = bundle::parse(&fixture("bundle/bundle-v02.json")).unwrap();
    let v02_digest = "sha256:a0cfc71271d6e278e57cd332ff957c3f7043fdda354c4cbb190a30d56efa01bf";
    let manifest: serde_json::Value =
        serde_json::from_slice(&fixture("keyless/signature-manifest.json")).unwrap();
    let annotation = |name: &str| {
        manifest["layers"][0]["annotations"][name]
            .as_str()
            .map(str::to_string)
    };
    let sig = Signature {
        payload: fixture("keyless/payload.json"),
        signature: annotation("dev.cosignproject.cosign/signature").unwrap(),
        certificate: annotation("dev.sigstore.cosign/certificate"),
        bundle: annotation("dev.sigstore.cosign/bundle"),
    };
    let sig_digest = "sha256:c05263d2ff654c3a94243662440913f045075d59c436e2c69e9145ec2b87a321";
    let salrashid = r"https://github\.com/salrashid123/go-bazel-github-workflow/\.github/workflows/.*";
    let public_good = fixture("keyless/trusted_root.json");
    let other_instance = fixture("sct/invalid-ct-key-trusted_root.json");
    let swapped = swapped_ct_key();

    // The bundle and the `.sig` signature under a trusted root (JSON).
    let of_bundle = |json: &[u8]| {
        verdict::verify_all(
            &Policy::keyless(identity(beacon), root(json)),
            v02_digest,
            &[],
            std::slice::from_ref(&v02),
        )
    };
    let of_sig = |json: &[u8]| {
        verdict::verify(
            &Policy::keyless(identity(salrashid), root(json)),
            sig_digest,
            std::slice::from_ref(&sig),
        )
    };
    // Both pass under the public-good root: the SCT is checked with everything else.
    of_bundle(&public_good).unwrap();
    of_sig(&public_good).unwrap();
    type Case<'a> = (
        &'a str,
        Result<policy::Verified, policy::Refusal>,
        &'a str,
        &'a str,
    );
    let table: Vec<Case> = vec![
        (
            "a bundle, another instance's CT logs",
            of_bundle(&other_instance),
            "UnknownSCTLog",
            "SCT from an unknown log: the certificate's SCTs are of dd3d306a",
        ),
        (
            "a bundle, the CT log's key swapped",
            of_bundle(&swapped),
            "BadSCT",
            "bad SCT signature: the SCT of https://ctfe.sigstore.dev/2022",
        ),
        (
            "a .sig signature, another instance's CT logs",
            of_sig(&other_instance),
            "UnknownSCTLog",
            "https://ctfe.sigstage.dev/2022",
        ),
        (
            "a .sig signature, the CT log's key swapped",
            of_sig(&swapped),
            "BadSCT",
            "does not verify",
        ),
    ];
    for (what, got, reason, text) in table {
        let err = got.unwrap_err();
        assert_eq!(err.reason(), reason, "{what}: {err}");
        assert!(err.to_string().contains(text), "{what}: {err}");
    }

    // A root without CT logs trusts no SCT.
    let mut none: serde_json::Value = serde_json::from_slice(&public_good).unwrap();
    none.as_object_mut().unwrap().remove("ctlogs");
    let err = of_bundle(none.to_string().as_bytes()).unwrap_err();
    assert_eq!(err.reason(), "UnknownSCTLog", "{err}");
    assert!(err.to_string().contains("CT logs are none"), "{err}");

    // A certificate without an SCT, made here.
    let digest = "sha256:4444444444444444444444444444444444444444444444444444444444444444";
    let made = made_here::signed_without_sct("r/x", digest, 1_700_000_000, 1_700_000_100);
    let policy = Policy::keyless(
        vec![Identity::new(r"https://issuer\.example\.org", r"dev@example\.org").unwrap()],
        root(&made.trusted_root),
    );
    let sig = Signature {
        payload: made.payload,
        signature: made.signature,
        certificate: Some(made.certificate),
        bundle: Some(made.bundle),
    };
    let err = verdict::verify(&policy, digest, &[sig]).unwrap_err();
    assert_eq!(err.reason(), "NoSCT", "{err}");
    assert!(
        err.to_string()
            .starts_with("no SCT: the certificate has no SCT list extension"),
        "{err}"
    );
}
