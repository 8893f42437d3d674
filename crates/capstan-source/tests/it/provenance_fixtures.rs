//! Helm provenance files made by real GnuPG (testdata/provenance/make.sh says how): capstan
//! must accept the good one under the signer's keyring and refuse each bad case with its reason.

use std::path::PathBuf;

use capstan_source::verify::provenance::{self, Archive, Keyring};

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/provenance")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The good provenance with its signed text changed (a line of Chart.yaml).
fn tampered_text(prov: &[u8]) -> Vec<u8> {
    String::from_utf8(prov.to_vec())
        .unwrap()
        .replace("description: A chart", "description: A Chart")
        .into_bytes()
}

/// The good provenance with one character of its signature's base64 changed.
fn tampered_signature(prov: &[u8]) -> Vec<u8> {
    let text = String::from_utf8(prov.to_vec()).unwrap();
    let start = text.find("-----BEGIN PGP SIGNATURE-----").unwrap();
    // The third line of the armored signature: past the header and blank line.
    let line = start + text[start..].match_indices('\n').nth(2).unwrap().0 + 10;
    let mut bytes = text.into_bytes();
    bytes[line] = if bytes[line] == b'A' { b'B' } else { b'A' };
    bytes
}

#[test]
fn provenance_fixtures_the_signed_chart_passes_and_every_bad_case_has_its_reason() {
    let archive_bytes = fixture("demo-0.1.0.tgz");
    let sum = sha256(&archive_bytes);
    let archive = Archive {
        file_name: "demo-0.1.0.tgz",
        sha256: &sum,
        name: "demo",
        version: "0.1.0",
    };
    let signer = Keyring::parse(&fixture("signer.pubring.gpg"), "signer.pubring.gpg").unwrap();
    let armored = Keyring::parse(&fixture("signer.pub.asc"), "signer.pub.asc").unwrap();
    let stranger = Keyring::parse(&fixture("stranger.pubring.gpg"), "stranger.pubring.gpg").unwrap();
    let both = Keyring::merge([stranger.clone(), signer.clone()]);
    let good = fixture("demo-0.1.0.tgz.prov");

    for keyring in [&signer, &armored, &both] {
        let v = provenance::verify(&good, archive, keyring).unwrap();
        assert_eq!(v.signer, signer.fingerprints()[0]);
        assert_eq!(v.identity, "Capstan Test Signer <signer@capstan.test>");
        assert_eq!(
            (v.file.as_str(), v.digest),
            ("demo-0.1.0.tgz", format!("sha256:{sum}"))
        );
    }

    let other_sum = "0".repeat(64);
    let table: Vec<(&str, Vec<u8>, Archive, &Keyring, &str)> = vec![
        (
            "a keyring without the signer",
            good.clone(),
            archive,
            &stranger,
            "WrongKey",
        ),
        (
            "the signed text changed",
            tampered_text(&good),
            archive,
            &signer,
            "TamperedSignature",
        ),
        (
            "the signature changed",
            tampered_signature(&good),
            archive,
            &signer,
            "TamperedSignature",
        ),
        (
            "another archive",
            good.clone(),
            Archive {
                sha256: &other_sum,
                ..archive
            },
            &signer,
            "DigestMismatch",
        ),
        (
            "another file name",
            good.clone(),
            Archive {
                file_name: "demo-0.1.0-renamed.tgz",
                ..archive
            },
            &signer,
            "DigestMismatch",
        ),
        (
            "Chart.yaml of another version",
            fixture("other-version.prov"),
            archive,
            &signer,
            "ChartMismatch",
        ),
        (
            "not signed at all",
            b"name: demo\n...\nfiles: {}\n".to_vec(),
            archive,
            &signer,
            "NoSignature",
        ),
    ];
    for (what, prov, archive, keyring, reason) in table {
        let err = provenance::verify(&prov, archive, keyring).unwrap_err();
        assert_eq!(err.reason(), reason, "{what}: {err}");
    }
    let err = provenance::verify(&good, archive, &stranger)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&signer.fingerprints()[0]) || err.contains(&signer.fingerprints()[0][24..]),
        "{err}"
    );
}

/// Signers whose keys GnuPG made for the key's lifecycle (testdata/provenance/
/// make-key-lifecycle.sh): a key revoked after it signed (its revocation certificate in the
/// keyring) and a key valid 2025-01-01..2025-06-01 that signed on 2025-03-01. Both signatures
/// verify; Helm refuses both now (`signature made by revoked key`, `key expired`), and so does
/// capstan. The expired key passed while it was valid.
#[test]
fn provenance_fixtures_revoked_and_expired_signing_keys_are_refused() {
    let archive_bytes = fixture("demo-0.1.0.tgz");
    let sum = sha256(&archive_bytes);
    let archive = Archive {
        file_name: "demo-0.1.0.tgz",
        sha256: &sum,
        name: "demo",
        version: "0.1.0",
    };
    let ring = |name: &str| Keyring::parse(&fixture(name), name).unwrap();
    let revoked = ring("revoked.pubring.gpg");
    let expired = ring("expired.pubring.gpg");
    let err = provenance::verify(&fixture("revoked.prov"), archive, &revoked).unwrap_err();
    assert_eq!(err.reason(), "RevokedKey", "{err}");
    assert!(
        err.to_string().starts_with(&format!(
            "signature made by revoked key {}",
            revoked.fingerprints()[0]
        )),
        "{err}"
    );
    let err = provenance::verify(&fixture("expired.prov"), archive, &expired).unwrap_err();
    assert_eq!(err.reason(), "ExpiredKey", "{err}");
    assert!(
        err.to_string().starts_with("key expired: ")
            && err.to_string().contains("expired on 2025-06-01 12:00 UTC"),
        "{err}"
    );
    // GnuPG's expiry date is at noon UTC; as Helm's library, the key is expired after it:
    // valid on 2025-03-01 and at 2025-06-01 12:00:00, expired a second later.
    for (at, ok) in [
        (1_740_787_200, true),
        (1_748_779_200, true),
        (1_748_779_201, false),
    ] {
        let got = provenance::verify_at(
            &fixture("expired.prov"),
            archive,
            &expired,
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(at),
        );
        assert_eq!(got.is_ok(), ok, "at {at}: {got:?}");
    }
    // A pass recorded in the cache is reused only while its key still vouches.
    let now = std::time::SystemTime::now();
    let march = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_740_787_200);
    let signer = ring("signer.pubring.gpg");
    assert!(signer.vouches(&signer.fingerprints()[0], now));
    assert!(!revoked.vouches(&revoked.fingerprints()[0], now));
    assert!(!expired.vouches(&expired.fingerprints()[0], now));
    assert!(expired.vouches(&expired.fingerprints()[0], march));
    assert!(!signer.vouches(&expired.fingerprints()[0], march));
    // A revoked key stays refused whenever checked; the signer's key beside it still vouches.
    let both = Keyring::merge([revoked.clone(), ring("signer.pubring.gpg")]);
    assert!(provenance::verify(&fixture("demo-0.1.0.tgz.prov"), archive, &both).is_ok());
}
