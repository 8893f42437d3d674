//! A keyless cosign signature made here, for the refusals real data cannot show and for a
//! release the test pushed itself: a Fulcio-like authority (rcgen, P-384), a leaf certificate
//! for `dev@example.org` with Fulcio's OIDC-issuer extension valid ten minutes from
//! `not_before`, the simple-signing payload signed with the leaf's key (aws-lc-rs), and a Rekor
//! bundle whose SET a log key of the test's own signed over the entry's canonical JSON. The
//! trusted root JSON names that authority and log. Nothing of capstan's verifier is used.

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
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("params");
    let mut name = DistinguishedName::new();
    name.push(DnType::OrganizationName, "capstan-test");
    name.push(DnType::CommonName, "test-fulcio");
    ca.distinguished_name = name;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.not_before = time_at(not_before - 86_400);
    ca.not_after = time_at(not_before + 86_400 * 365);
    let ca_key = rcgen::KeyPair::generate_for(&PKCS_ECDSA_P384_SHA384).expect("CA key");
    let ca = CertifiedIssuer::self_signed(ca, ca_key).expect("CA");

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
    let leaf = leaf.signed_by(&leaf_key, &ca).expect("leaf");

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

    let log =
        EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &SystemRandom::new()).expect("log key");
    let log_pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, log.as_ref()).expect("log key");
    let log_spki: PublicKeyX509Der<'static> = AsDer::as_der(log_pair.public_key()).expect("SPKI");
    let log_spki = log_spki.as_ref().to_vec();
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
    let set = sign(log.as_ref(), &canonical(&entry));
    let bundle = serde_json::json!({"SignedEntryTimestamp": STANDARD.encode(set), "Payload": entry});
    let root = serde_json::json!({
        "tlogs": [{"baseUrl": "https://log.test", "publicKey": {"rawBytes": STANDARD.encode(&log_spki)}, "logId": {"keyId": STANDARD.encode(Sha256::digest(&log_spki))}}],
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
