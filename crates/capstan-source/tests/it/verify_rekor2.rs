//! Rekor v2 transparency entries and RFC 3161 signed timestamps, on sigstore-conformance's
//! cases (testdata/verify/bundle/rekor2, see testdata/verify/README.md): each case's bundle
//! against its trusted root (the staging root unless the case has its own), the artifact
//! `a.txt` and the conformance suite's signer identity. A case passes when its name does not
//! end in `_fail`; every refusal is checked for its reason. sigstore-python (the oracle of
//! tests/oracle/sigstore_oracle.py) decides the same on every case.

use std::path::PathBuf;

use capstan_source::verify::bundle;
use capstan_source::verify::{Identity, Policy, TrustedRoot, verdict};

use crate::verify_support::{fixture, testdata};

/// sha256 of sigstore-conformance's `a.txt`, the artifact of every case.
const DIGEST: &str = "sha256:a0cfc71271d6e278e57cd332ff957c3f7043fdda354c4cbb190a30d56efa01bf";
const ISSUER: &str = r"https://token\.actions\.githubusercontent\.com";
const SUBJECT: &str = r"https://github\.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/\.github/workflows/extremely-dangerous-oidc-beacon\.yml@refs/heads/main";

/// Every case, and for a refusal its reason and a piece of its message.
const CASES: &[(&str, Option<(&str, &str)>)] = &[
    ("rekor2-happy-path", None),
    ("rekor2-dsse-happy-path", None),
    ("rekor2-checkpoint-cosigned", None),
    ("rekor2-checkpoint-multiple-cosigs", None),
    ("rekor2-checkpoint-origin-not-first", None),
    ("rekor2-checkpoint-two-sigs-cosigned", None),
    ("rekor2-checkpoint-two-sigs-from-origin", None),
    ("rekor2-timestamp-with-embedded-cert", None),
    ("rekor2-timestamp-without-embedded-cert", None),
    ("rekor2-timestamp-with-expired-cert-chain", None),
    ("trust-root-tsa-validity-end-inclusive", None),
    ("bundle-with-sct-with-extensions", None),
    (
        "rekor2-checkpoint-missing-log-signature_fail",
        Some(("BadInclusionProof", "not signed by the key of")),
    ),
    (
        "rekor2-checkpoint-missing-origin_fail",
        Some(("BadInclusionProof", "origin")),
    ),
    (
        "rekor2-checkpoint-missing-root-hash_fail",
        Some(("BadInclusionProof", "root hash")),
    ),
    (
        "rekor2-checkpoint-missing-size_fail",
        Some(("BadInclusionProof", "tree size")),
    ),
    // The suite replaced the log's name in the whole note, its origin line too.
    (
        "rekor2-checkpoint-no-matching-signature_fail",
        Some((
            "BadInclusionProof",
            "origin is \"log2025-alpha1.rekor.github.dev\"",
        )),
    ),
    ("rekor2-dsse-invalid-sig_fail", Some(("WrongKey", ""))),
    (
        "rekor2-dsse-mismatch-envelope_fail",
        Some(("BadInclusionProof", "another payload")),
    ),
    (
        "rekor2-dsse-mismatch-sig_fail",
        Some(("BadInclusionProof", "another signature")),
    ),
    (
        "rekor2-no-inclusion-proof_fail",
        Some((
            "BadInclusionProof",
            "neither a signed entry timestamp nor an inclusion proof",
        )),
    ),
    (
        "rekor2-no-timestamp_fail",
        Some(("BadTimestamp", "no RFC 3161 timestamp")),
    ),
    (
        "rekor2-timestamp-outside-trust-root-tsa-validity_fail",
        Some(("BadTimestamp", "trusts only")),
    ),
    (
        "rekor2-timestamp-outside-tsa-cert-validity_fail",
        Some(("BadTimestamp", "outside the validity of the TSA certificate")),
    ),
    (
        "rekor2-timestamp-payload-mismatch_fail",
        Some(("BadTimestamp", "message imprint")),
    ),
    (
        "rekor2-timestamp-untrusted-tsa-with-embedded-cert_fail",
        Some(("BadTimestamp", "does not name")),
    ),
    (
        "rekor2-timestamp-untrusted-tsa-without-embedded-cert_fail",
        Some(("BadTimestamp", "does not name")),
    ),
    (
        "rekor2-timestamp-with-incorrect-time_fail",
        Some(("ExpiredCertificate", "")),
    ),
    (
        "trust-root-tlog-missing-validity-start_fail",
        Some(("TrustedRoot", "validFor: no start")),
    ),
];

/// A pass, or a refusal's reason and message.
type Outcome = Result<(), (String, String)>;

fn dir() -> PathBuf {
    testdata("bundle/rekor2")
}

/// The trusted root of `case`: its own when the suite modified it, else the staging root.
fn root_of(case: &str) -> Vec<u8> {
    let own = format!("bundle/rekor2/{case}.trusted_root.json");
    if testdata(&own).exists() {
        fixture(&own)
    } else {
        fixture("bundle/rekor2/trusted_root.json")
    }
}

/// capstan's verdict on `case`: `Ok(())`, or the reason and message of the refusal (a trusted
/// root that does not parse is refused as `TrustedRoot`).
fn capstan_verdict(case: &str) -> Outcome {
    let root = TrustedRoot::from_json(&root_of(case), "trusted_root.json")
        .map_err(|e| ("TrustedRoot".to_string(), e.to_string()))?;
    let bundle = bundle::parse(&fixture(&format!("bundle/rekor2/{case}.sigstore.json")))
        .map_err(|e| ("Unreadable".to_string(), e))?;
    let policy = Policy::keyless(vec![Identity::new(ISSUER, SUBJECT).unwrap()], root);
    verdict::verify_all(&policy, DIGEST, &[], &[bundle])
        .map(|_| ())
        .map_err(|r| (r.reason().to_string(), r.to_string()))
}

#[test]
fn verify_rekor2_every_conformance_case_is_decided_as_the_suite_expects() {
    let mut files: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".sigstore.json").map(str::to_string)
        })
        .collect();
    files.sort();
    let mut listed: Vec<String> = CASES.iter().map(|(c, _)| c.to_string()).collect();
    listed.sort();
    assert_eq!(files, listed, "every fixture is a case of the table");
    let mut wrong = Vec::new();
    for (case, want) in CASES {
        assert_eq!(
            case.ends_with("_fail"),
            want.is_some(),
            "{case}: the table contradicts its name"
        );
        let got = capstan_verdict(case);
        let ok = match (&got, want) {
            (Ok(()), None) => true,
            (Err((reason, text)), Some((want_reason, want_text))) => {
                reason == want_reason && text.contains(want_text)
            }
            _ => false,
        };
        if !ok {
            wrong.push(format!("{case}: got {got:?}, want {want:?}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} cases:\n{}",
        wrong.len(),
        CASES.len(),
        wrong.join("\n")
    );
}

/// `rekor2-happy-path` with `edit` applied to its JSON, under the staging root (minus what
/// `edit_root` takes away).
fn edited(
    edit: impl FnOnce(&mut serde_json::Value),
    edit_root: impl FnOnce(&mut serde_json::Value),
) -> Outcome {
    let mut json: serde_json::Value =
        serde_json::from_slice(&fixture("bundle/rekor2/rekor2-happy-path.sigstore.json")).unwrap();
    edit(&mut json);
    let mut root: serde_json::Value = serde_json::from_slice(&root_of("rekor2-happy-path")).unwrap();
    edit_root(&mut root);
    let root = TrustedRoot::from_json(root.to_string().as_bytes(), "trusted_root.json").unwrap();
    let bundle = bundle::parse(json.to_string().as_bytes()).unwrap();
    let policy = Policy::keyless(vec![Identity::new(ISSUER, SUBJECT).unwrap()], root);
    verdict::verify_all(&policy, DIGEST, &[], &[bundle])
        .map(|_| ())
        .map_err(|r| (r.reason().to_string(), r.to_string()))
}

/// The bytes at `pointer` (base64) of a bundle's JSON, changed by `change`.
fn change_base64(json: &mut serde_json::Value, pointer: &str, change: impl FnOnce(&mut Vec<u8>)) {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    let field = json.pointer_mut(pointer).unwrap();
    let mut bytes = STANDARD.decode(field.as_str().unwrap()).unwrap();
    change(&mut bytes);
    *field = STANDARD.encode(bytes).into();
}

const TOKEN: &str = "/verificationMaterial/timestampVerificationData/rfc3161Timestamps/0/signedTimestamp";

#[test]
fn verify_rekor2_a_changed_timestamp_or_checkpoint_is_refused() {
    assert_eq!(edited(|_| {}, |_| {}), Ok(()));
    let table: Vec<(&str, Outcome, &str, &str)> = vec![
        (
            "genTime changed inside the signed TSTInfo",
            edited(
                |j| {
                    change_base64(j, TOKEN, |t| {
                        let at = t.windows(15).position(|w| w == b"20250612120220Z").unwrap();
                        t[at + 13] = b'1';
                    })
                },
                |_| {},
            ),
            "BadTimestamp",
            "other content (message digest)",
        ),
        (
            "the TSA's signature changed",
            edited(
                |j| change_base64(j, TOKEN, |t| *t.last_mut().unwrap() ^= 1),
                |_| {},
            ),
            "BadTimestamp",
            "signature does not verify under the certificate of O=sigstore.dev, CN=sigstore-tsa-selfsigned",
        ),
        (
            "a root without timestamp authorities",
            edited(|_| {}, |r| r["timestampAuthorities"] = serde_json::json!([])),
            "BadTimestamp",
            "a timestamp authority the trusted root does not name",
        ),
        (
            "the log's checkpoint signature changed",
            edited(
                |j| {
                    let p = "/verificationMaterial/tlogEntries/0/inclusionProof/checkpoint/envelope";
                    let note = j.pointer(p).unwrap().as_str().unwrap().to_string();
                    let (text, line) = note.trim_end().rsplit_once(' ').unwrap();
                    let mut sig = serde_json::json!(line);
                    change_base64(&mut sig, "", |s| *s.last_mut().unwrap() ^= 1);
                    *j.pointer_mut(p).unwrap() = format!("{text} {}\n", sig.as_str().unwrap()).into();
                },
                |_| {},
            ),
            "BadInclusionProof",
            "signature by log2025-alpha1.rekor.sigstage.dev does not verify",
        ),
        (
            "the log's key in the root is another Ed25519 key",
            edited(
                |_| {},
                |r| {
                    let key = &mut r["tlogs"][1]["publicKey"]["rawBytes"];
                    change_base64(key, "", |k| *k.last_mut().unwrap() ^= 1);
                },
            ),
            "BadInclusionProof",
            "not signed by the key of https://log2025-alpha1.rekor.sigstage.dev",
        ),
        (
            "the log's key not yet valid at the timestamp",
            edited(
                |_| {},
                |r| r["tlogs"][1]["publicKey"]["validFor"]["start"] = "2025-06-13T00:00:00Z".into(),
            ),
            "BadInclusionProof",
            "outside the validity of the key of https://log2025-alpha1.rekor.sigstage.dev",
        ),
    ];
    for (what, got, reason, text) in table {
        let (got_reason, got_text) = got.expect_err(what);
        assert_eq!(got_reason, reason, "{what}: {got_text}");
        assert!(got_text.contains(text), "{what}: {got_text}");
    }
}

/// Cases the oracle's sigstore-python (4.5, scripts/verify-env.sh) decides otherwise than the
/// suite: it reads a timestamp authority's validity end as exclusive.
const ORACLE_DIFFERS: &[&str] = &["trust-root-tsa-validity-end-inclusive"];

#[test]
fn verify_rekor2_sigstore_python_agrees_on_every_case() {
    let test = "verify_rekor2_sigstore_python_agrees_on_every_case";
    let Some(python) = crate::verify_support::sigstore_python(test) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // One sigstore-python start for every case (each start takes a second or more).
    let mut list = String::new();
    for (case, _) in CASES {
        let root = dir.path().join(format!("{case}.root.json"));
        std::fs::write(&root, root_of(case)).unwrap();
        let bundle = testdata(&format!("bundle/rekor2/{case}.sigstore.json"));
        list.push_str(&format!("{} {} {DIGEST}\n", bundle.display(), root.display()));
    }
    let list_path = dir.path().join("cases.txt");
    std::fs::write(&list_path, list).unwrap();
    let out = std::process::Command::new(&python)
        .arg(crate::verify_support::script("sigstore_oracle.py"))
        .arg("--batch")
        .arg(&list_path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let verdicts: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(verdicts.len(), CASES.len());
    let mut compared = 0;
    for ((case, _), theirs) in CASES.iter().zip(&verdicts) {
        let ours = capstan_verdict(case);
        if ORACLE_DIFFERS.contains(case) {
            continue;
        }
        assert_eq!(
            theirs["ok"].as_bool(),
            Some(ours.is_ok()),
            "{case}: capstan {ours:?}, sigstore-python {theirs}"
        );
        if ours.is_ok() {
            assert_eq!(theirs["subjects"], serde_json::json!([DIGEST]), "{case}");
        }
        compared += 1;
    }
    assert_eq!(compared, CASES.len() - ORACLE_DIFFERS.len());
}

#[test]
fn verify_rekor2_a_log_signs_checkpoints_under_its_host_and_key_id() {
    let root = TrustedRoot::from_json(&root_of("rekor2-happy-path"), "trusted_root.json").unwrap();
    // Rekor v2: Ed25519, the key id of C2SP signed-note (which is also how the root names the log).
    let v2 = root
        .log("f30d5a999d92e662484244263f174cb8eacbfe8264bc583d32741799e3825dc9")
        .unwrap();
    assert!(v2.ed25519().is_some());
    assert_eq!(v2.key_name(), "log2025-alpha1.rekor.sigstage.dev");
    assert_eq!(v2.note_key_id(), [0xf3, 0x0d, 0x5a, 0x99]);
    // Rekor v1: ECDSA, the key id is the first bytes of the key's SHA-256 (its log id).
    let v1 = root.logs.iter().find(|l| l.ed25519().is_none()).unwrap();
    assert_eq!(v1.key_name(), "rekor.sigstage.dev");
    assert_eq!(capstan_source::cache::hex(&v1.note_key_id()), v1.log_id[..8]);
}
