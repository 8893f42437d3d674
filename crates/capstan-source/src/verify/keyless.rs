//! Cosign's keyless signatures: the payload signed by the key of a short-lived Fulcio
//! certificate (the `dev.sigstore.cosign/certificate` annotation), logged in Rekor (the
//! `dev.sigstore.cosign/bundle` annotation, checked by [`super::rekor`]). The certificate must
//! chain to an authority of the trusted root that was valid when the entry was logged, be
//! itself valid then (Fulcio's certificates live ten minutes; the log's time proves the
//! signature was made inside them), allow code signing, and name an identity (its SAN: an
//! e-mail or URI) and OIDC issuer (Fulcio's extension `1.3.6.1.4.1.57264.1.8`, or the older
//! `.1.1`) that the policy's regexes accept. The chain annotation is not trusted: the trusted
//! root's chains are.

use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_ASN1, ECDSA_P256_SHA384_ASN1, ECDSA_P384_SHA256_ASN1, ECDSA_P384_SHA384_ASN1,
    RSA_PKCS1_2048_8192_SHA256, RSA_PKCS1_2048_8192_SHA384, RSA_PKCS1_2048_8192_SHA512, UnparsedPublicKey,
    VerificationAlgorithm,
};
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::FromDer;

use super::keys::Signed;
use super::trusted_root::TrustedRoot;

/// Fulcio's OIDC issuer extension (a DER UTF8String).
const ISSUER_V2: &str = "1.3.6.1.4.1.57264.1.8";
/// Fulcio's first OIDC issuer extension (the raw string), still written next to the other.
const ISSUER_V1: &str = "1.3.6.1.4.1.57264.1.1";
pub(super) const ECDSA_SHA256: &str = "1.2.840.10045.4.3.2";
pub(super) const ECDSA_SHA384: &str = "1.2.840.10045.4.3.3";
const RSA_SHA256: &str = "1.2.840.113549.1.1.11";
const RSA_SHA384: &str = "1.2.840.113549.1.1.12";
const RSA_SHA512: &str = "1.2.840.113549.1.1.13";

/// Who a Fulcio certificate was issued to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertIdentity {
    /// The SAN: an e-mail address or a URI (a CI workflow).
    pub subject: String,
    pub issuer: String,
}

/// A certificate that cannot be trusted, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CertProblem {
    /// Not a certificate, no chain to the trusted root, or not for code signing.
    Untrusted(String),
    /// Not valid when the signature was logged.
    Expired(String),
}

/// The DER of the first certificate of PEM `text`.
pub fn certificate_der(text: &str) -> Result<Vec<u8>, String> {
    let block = pem::parse(text.trim()).map_err(|e| format!("the certificate is not PEM: {e}"))?;
    if block.tag() != "CERTIFICATE" {
        return Err(format!("a PEM {:?} block, not a CERTIFICATE", block.tag()));
    }
    Ok(block.contents().to_vec())
}

pub(super) fn parse(der: &[u8]) -> Result<X509Certificate<'_>, String> {
    X509Certificate::from_der(der)
        .map(|(_, cert)| cert)
        .map_err(|e| format!("not an X.509 certificate: {e}"))
}

/// Whether `signature` (DER) over `message` verifies under `spki` for a signature algorithm OID.
fn ecdsa_verifies(spki: &[u8], algorithm_oid: &str, message: &[u8], signature: &[u8]) -> bool {
    let algorithms: [&'static dyn VerificationAlgorithm; 2] = match algorithm_oid {
        ECDSA_SHA256 => [&ECDSA_P256_SHA256_ASN1, &ECDSA_P384_SHA256_ASN1],
        ECDSA_SHA384 => [&ECDSA_P384_SHA384_ASN1, &ECDSA_P256_SHA384_ASN1],
        _ => return false,
    };
    algorithms.iter().any(|alg| {
        UnparsedPublicKey::new(*alg, spki)
            .verify(message, signature)
            .is_ok()
    })
}

/// Whether `payload` was signed (ECDSA, SHA-256, as cosign signs) by the key of `cert` (DER).
pub fn signs(cert: &[u8], payload: &[u8], signature: &[u8]) -> Result<bool, String> {
    signs_signed(cert, Signed::Message(payload), signature)
}

/// Whether `signed` (a message or its SHA-256) was signed (ECDSA, SHA-256) by `cert`'s key.
pub fn signs_signed(cert: &[u8], signed: Signed<'_>, signature: &[u8]) -> Result<bool, String> {
    let cert = parse(cert)?;
    let spki = cert.public_key().raw;
    Ok([&ECDSA_P256_SHA256_ASN1, &ECDSA_P384_SHA256_ASN1]
        .into_iter()
        .any(|alg| signed.verifies(alg, spki, signature)))
}

/// Whether `signature` over `message` verifies under `cert`'s key for a signature algorithm
/// OID: ECDSA (P-256, P-384) or RSA PKCS#1 v1.5, each with SHA-256 or SHA-384 (and RSA with
/// SHA-512), what certificate authorities and timestamp authorities sign with.
pub(super) fn signature_verifies(
    cert: &X509Certificate<'_>,
    algorithm_oid: &str,
    message: &[u8],
    signature: &[u8],
) -> bool {
    let rsa: &'static dyn VerificationAlgorithm = match algorithm_oid {
        RSA_SHA256 => &RSA_PKCS1_2048_8192_SHA256,
        RSA_SHA384 => &RSA_PKCS1_2048_8192_SHA384,
        RSA_SHA512 => &RSA_PKCS1_2048_8192_SHA512,
        _ => return ecdsa_verifies(cert.public_key().raw, algorithm_oid, message, signature),
    };
    UnparsedPublicKey::new(rsa, &cert.public_key().subject_public_key.data)
        .verify(message, signature)
        .is_ok()
}

/// Whether `child` was issued and signed by `parent`.
pub(super) fn issued_by(child: &X509Certificate<'_>, parent: &X509Certificate<'_>) -> bool {
    child.issuer() == parent.subject()
        && signature_verifies(
            parent,
            &child.signature_algorithm.algorithm.to_id_string(),
            child.tbs_certificate.as_ref(),
            &child.signature_value.data,
        )
}

/// `at` (Unix seconds) as an RFC 3339 time, for messages.
pub(super) fn utc(at: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(at)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_else(|| at.to_string())
}

pub(super) fn valid_at(cert: &X509Certificate<'_>, at: i64) -> bool {
    let v = cert.validity();
    v.not_before.timestamp() <= at && at <= v.not_after.timestamp()
}

/// The authority that issued a certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issuer {
    /// The authority's name in the trusted root.
    pub authority: String,
    /// The SubjectPublicKeyInfo DER of the certificate that signed the leaf (what its SCTs
    /// name, [`super::sct`]).
    pub spki: Vec<u8>,
}

/// The authority of `root` whose chain issued `leaf` (DER) and was valid at `at` (Unix
/// seconds, the log's time).
pub fn chain_to_root(root: &TrustedRoot, leaf: &[u8], at: i64) -> Result<Issuer, CertProblem> {
    let untrusted = CertProblem::Untrusted;
    let cert = parse(leaf).map_err(untrusted)?;
    let mut tried = Vec::new();
    for authority in &root.authorities {
        let Ok(chain) = authority
            .chain
            .iter()
            .map(|der| parse(der))
            .collect::<Result<Vec<_>, _>>()
        else {
            continue;
        };
        if chain.is_empty() {
            continue;
        }
        let links = std::iter::once(&cert).chain(chain.iter()).zip(chain.iter());
        let mut linked = true;
        for (child, parent) in links {
            linked &= issued_by(child, parent) && parent.is_ca();
        }
        if !linked {
            tried.push(authority.name.clone());
            continue;
        }
        if !authority.valid.contains(at) || !chain.iter().all(|c| valid_at(c, at)) {
            return Err(CertProblem::Untrusted(format!(
                "issued by {}, which the trusted root does not trust at {at} (the log's time)",
                authority.name
            )));
        }
        let usage = cert
            .extended_key_usage()
            .ok()
            .flatten()
            .map(|e| e.value.code_signing);
        if usage != Some(true) {
            return Err(CertProblem::Untrusted(
                "the certificate is not for code signing (no codeSigning extended key usage)".into(),
            ));
        }
        if !valid_at(&cert, at) {
            let v = cert.validity();
            return Err(CertProblem::Expired(format!(
                "the certificate was valid from {} to {}, the signature was logged at {at} ({})",
                v.not_before.timestamp(),
                v.not_after.timestamp(),
                time::OffsetDateTime::from_unix_timestamp(at)
                    .map(|t| t.to_string())
                    .unwrap_or_default()
            )));
        }
        return Ok(Issuer {
            authority: authority.name.clone(),
            spki: chain[0].public_key().raw.to_vec(),
        });
    }
    Err(CertProblem::Untrusted(format!(
        "issued by {}, not by an authority of the trusted root (tried {})",
        cert.issuer(),
        if tried.is_empty() {
            "none".to_string()
        } else {
            tried.join("; ")
        }
    )))
}

/// The identity and OIDC issuer a Fulcio certificate (DER) names.
pub fn identity(cert: &[u8]) -> Result<CertIdentity, String> {
    let cert = parse(cert)?;
    let subject = cert
        .subject_alternative_name()
        .ok()
        .flatten()
        .and_then(|san| {
            san.value.general_names.iter().find_map(|name| match name {
                GeneralName::RFC822Name(s) | GeneralName::URI(s) => Some(s.to_string()),
                _ => None,
            })
        })
        .ok_or("the certificate names no e-mail or URI (subject alternative name)")?;
    let extension = |oid: &str| {
        cert.extensions()
            .iter()
            .find(|e| e.oid.to_id_string() == oid)
            .map(|e| e.value)
    };
    let issuer = match (extension(ISSUER_V2), extension(ISSUER_V1)) {
        (Some(der), _) => utf8_string(der)?,
        (None, Some(raw)) => String::from_utf8(raw.to_vec()).map_err(|_| "the OIDC issuer is not UTF-8")?,
        (None, None) => return Err("the certificate names no OIDC issuer (not issued by Fulcio)".into()),
    };
    Ok(CertIdentity { subject, issuer })
}

/// The text of a DER UTF8String.
fn utf8_string(der: &[u8]) -> Result<String, String> {
    let bad = || "the OIDC issuer extension is not a DER UTF8String".to_string();
    let (&tag, rest) = der.split_first().ok_or_else(bad)?;
    let (&first, rest) = rest.split_first().ok_or_else(bad)?;
    let (len, body) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 2 || rest.len() < n {
            return Err(bad());
        }
        let len = rest[..n].iter().fold(0usize, |acc, b| (acc << 8) | *b as usize);
        (len, &rest[n..])
    };
    if tag != 0x0c || body.len() != len {
        return Err(bad());
    }
    String::from_utf8(body.to_vec()).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_strings_are_read_and_other_der_refused() {
        assert_eq!(utf8_string(b"\x0c\x03abc").unwrap(), "abc");
        let long = [&[0x0c, 0x81, 0x80][..], &[b'x'; 128]].concat();
        assert_eq!(utf8_string(&long).unwrap().len(), 128);
        for bad in [&b"\x13\x03abc"[..], b"\x0c\x04abc", b"\x0c", b""] {
            assert!(utf8_string(bad).is_err(), "{bad:?}");
        }
    }
}
