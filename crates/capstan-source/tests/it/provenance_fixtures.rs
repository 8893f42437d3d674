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
