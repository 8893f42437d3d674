//! A keyless cosign signature made here, for the refusals real data cannot show and for a
//! release the test pushed itself: a Fulcio-like authority (rcgen, P-384), a leaf certificate
//! for `dev@example.org` with Fulcio's OIDC-issuer extension valid ten minutes from
//! `not_before` and an embedded SCT of a CT log of the test's own (RFC 6962: the log's ECDSA
//! signature over the precertificate entry — the leaf's TBS without the SCT list, the issuer's
//! key hash), the simple-signing payload signed with the leaf's key (aws-lc-rs), and a Rekor
//! bundle whose SET a log key of the test's own signed over the entry's canonical JSON. The
//! trusted root JSON names that authority, log and CT log. Nothing of capstan's verifier is used.

use aws_lc_rs::encoding::{AsDer, PublicKeyX509Der};
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, CustomExtension, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, PKCS_ECDSA_P256_SHA256, PKCS_ECDSA_P384_SHA384, SanType,
};
use sha2::{Digest, Sha256};

/// The OIDC issuer and subject of the made-here certificate.
pub const ISSUER: &str = "https://issuer.example.org";
pub const SUBJECT: &str = "dev@example.org";

/// A signature as cosign stores it, and the trusted root that vouches for it.
pub struct Made {
    pub trusted_root: Vec<u8>,
    pub payload: Vec<u8>,
    /// Base64 DER (the `dev.cosignproject.cosign/signature` annotation).
    pub signature: String,
    /// PEM (the `dev.sigstore.cosign/certificate` annotation).
    pub certificate: String,
    /// JSON (the `dev.sigstore.cosign/bundle` annotation).
    pub bundle: String,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes a Rekor log signs for a bundle payload (sorted keys, no spaces).
pub fn canonical(payload: &serde_json::Value) -> Vec<u8> {
    format!(
        r#"{{"body":{},"integratedTime":{},"logID":{},"logIndex":{}}}"#,
        payload["body"], payload["integratedTime"], payload["logID"], payload["logIndex"]
    )
    .into_bytes()
}

fn time_at(t: i64) -> time::OffsetDateTime {
    time::OffsetDateTime::from_unix_timestamp(t).unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
}

fn sign(pkcs8: &[u8], message: &[u8]) -> Vec<u8> {
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8).expect("P-256 key");
    pair.sign(&SystemRandom::new(), message)
        .expect("sign")
        .as_ref()
        .to_vec()
}

/// A new P-256 key: its PKCS#8 and SubjectPublicKeyInfo DER.
fn p256_key() -> (Vec<u8>, Vec<u8>) {
    let doc =
        EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &SystemRandom::new()).expect("key");
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, doc.as_ref()).expect("key");
    let spki: PublicKeyX509Der<'static> = AsDer::as_der(pair.public_key()).expect("SPKI");
    (doc.as_ref().to_vec(), spki.as_ref().to_vec())
}

/// One DER element of `der`: (header length, content length).
fn der_header(der: &[u8]) -> (usize, usize) {
    match der[1] {
        n if n < 0x80 => (2, n as usize),
        n => {
            let k = (n & 0x7f) as usize;
            (
                2 + k,
                der[2..2 + k].iter().fold(0, |acc, b| (acc << 8) | *b as usize),
            )
        }
    }
}

/// The TBSCertificate DER of a certificate's DER (its first element).
fn tbs_of(cert: &[u8]) -> Vec<u8> {
    let (outer, _) = der_header(cert);
    let (header, len) = der_header(&cert[outer..]);
    cert[outer..outer + header + len].to_vec()
}

/// The SCT list extension's value: a DER OCTET STRING of the TLS-encoded list of one SCT, the
/// CT log's (`log` PKCS#8, id `log_id`) signature at `millis` over the precertificate entry of
/// `tbs` issued by the key `issuer_spki`.
fn sct_list(log: &[u8], log_id: &[u8], millis: u64, issuer_spki: &[u8], tbs: &[u8]) -> Vec<u8> {
    let mut entry = vec![0u8, 0];
    entry.extend(millis.to_be_bytes());
    entry.extend(1u16.to_be_bytes());
    entry.extend(Sha256::digest(issuer_spki));
    entry.extend(&(tbs.len() as u32).to_be_bytes()[1..]);
    entry.extend(tbs);
    entry.extend(0u16.to_be_bytes());
    let signature = sign(log, &entry);
    let mut sct = vec![0u8];
    sct.extend(log_id);
    sct.extend(millis.to_be_bytes());
    sct.extend(0u16.to_be_bytes());
    sct.extend([4u8, 3]);
    sct.extend((signature.len() as u16).to_be_bytes());
    sct.extend(signature);
    let mut list = ((sct.len() + 2) as u16).to_be_bytes().to_vec();
    list.extend((sct.len() as u16).to_be_bytes());
    list.extend(sct);
    // DER's shortest length form (an SCT list is under 64 KiB).
    let mut octets = match list.len() {
        n if n < 0x80 => vec![0x04, n as u8],
        n if n < 0x100 => vec![0x04, 0x81, n as u8],
        n => vec![0x04, 0x82, (n >> 8) as u8, n as u8],
    };
    octets.extend(list);
    octets
}

/// A keyless signature of `digest` pushed as `docker_reference`: the leaf valid from
/// `not_before` for ten minutes, logged at `logged`; with `code_signing` false the leaf lacks
/// the code-signing usage.
pub fn signed(
    docker_reference: &str,
    digest: &str,
    not_before: i64,
    logged: i64,
    code_signing: bool,
) -> Made {
    made(docker_reference, digest, not_before, logged, code_signing, true)
}

/// As [`signed`], but the leaf carries no SCT (as a certificate from an authority that logs
/// nothing in CT).
pub fn signed_without_sct(docker_reference: &str, digest: &str, not_before: i64, logged: i64) -> Made {
    made(docker_reference, digest, not_before, logged, true, false)
}

fn made(
    docker_reference: &str,
    digest: &str,
    not_before: i64,
    logged: i64,
    code_signing: bool,
    with_sct: bool,
) -> Made {
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("params");
    let mut name = DistinguishedName::new();
    name.push(DnType::OrganizationName, "capstan-test");
    name.push(DnType::CommonName, "test-fulcio");
    ca.distinguished_name = name;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.not_before = time_at(not_before - 86_400);
    ca.not_after = time_at(not_before + 86_400 * 365);
    let ca_key = rcgen::KeyPair::generate_for(&PKCS_ECDSA_P384_SHA384).expect("CA key");
    let ca_spki = rcgen::PublicKeyData::subject_public_key_info(&ca_key);
    let ca = CertifiedIssuer::self_signed(ca, ca_key).expect("CA");
    let (ct_log, ct_spki) = p256_key();
    let ct_log_id = Sha256::digest(&ct_spki);

    let leaf_key = rcgen::KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("leaf key");
    let mut leaf = CertificateParams::new(Vec::<String>::new()).expect("params");
    leaf.distinguished_name = DistinguishedName::new();
    leaf.subject_alt_names = vec![SanType::Rfc822Name(SUBJECT.try_into().expect("e-mail"))];
    if code_signing {
        leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::CodeSigning];
    }
    let utf8 = [&[0x0c, ISSUER.len() as u8][..], ISSUER.as_bytes()].concat();
    leaf.custom_extensions = vec![CustomExtension::from_oid_content(
        &[1, 3, 6, 1, 4, 1, 57264, 1, 8],
        utf8,
    )];
    leaf.not_before = time_at(not_before);
    leaf.not_after = time_at(not_before + 600);
    leaf.serial_number = Some(rcgen::SerialNumber::from_slice(&[0x42; 16]));
    let leaf = if with_sct {
        // The precertificate: the same TBS without the SCT list, which rcgen writes last.
        let precert = leaf.signed_by(&leaf_key, &ca).expect("precertificate");
        let millis = (not_before * 1000 + 5) as u64;
        let list = sct_list(&ct_log, &ct_log_id, millis, &ca_spki, &tbs_of(precert.der()));
        leaf.custom_extensions.push(CustomExtension::from_oid_content(
            &[1, 3, 6, 1, 4, 1, 11129, 2, 4, 2],
            list,
        ));
        leaf.signed_by(&leaf_key, &ca).expect("leaf")
    } else {
        leaf.signed_by(&leaf_key, &ca).expect("leaf")
    };

    let payload = serde_json::json!({
        "critical": {
            "identity": {"docker-reference": docker_reference},
            "image": {"docker-manifest-digest": digest},
            "type": "cosign container image signature",
        },
        "optional": null,
    })
    .to_string()
    .into_bytes();
    let der = sign(&leaf_key.serialize_der(), &payload);

    let (log, log_spki) = p256_key();
    let body = serde_json::json!({
        "apiVersion": "0.0.1", "kind": "hashedrekord",
        "spec": {
            "data": {"hash": {"algorithm": "sha256", "value": hex(&Sha256::digest(&payload))}},
            "signature": {"content": STANDARD.encode(&der), "publicKey": {"content": STANDARD.encode(leaf.pem())}},
        },
    });
    let entry = serde_json::json!({
        "body": STANDARD.encode(body.to_string()), "integratedTime": logged, "logIndex": 7,
        "logID": hex(&Sha256::digest(&log_spki)),
    });
    let set = sign(&log, &canonical(&entry));
    let bundle = serde_json::json!({"SignedEntryTimestamp": STANDARD.encode(set), "Payload": entry});
    let root = serde_json::json!({
        "tlogs": [{"baseUrl": "https://log.test", "publicKey": {"rawBytes": STANDARD.encode(&log_spki)}, "logId": {"keyId": STANDARD.encode(Sha256::digest(&log_spki))}}],
        "ctlogs": [{"baseUrl": "https://ct.test", "publicKey": {"rawBytes": STANDARD.encode(&ct_spki)}, "logId": {"keyId": STANDARD.encode(ct_log_id)}}],
        "certificateAuthorities": [{"certChain": {"certificates": [{"rawBytes": STANDARD.encode(ca.der())}]}, "validFor": {"start": "2023-01-01T00:00:00Z"}}],
    });
    Made {
        trusted_root: root.to_string().into_bytes(),
        payload,
        signature: STANDARD.encode(&der),
        certificate: leaf.pem(),
        bundle: bundle.to_string(),
    }
}
