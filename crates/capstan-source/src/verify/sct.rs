//! Certificate transparency of a Fulcio certificate (RFC 6962): Fulcio logs each certificate
//! (as a precertificate) in a CT log before issuing it and embeds the log's promise, a Signed
//! Certificate Timestamp, in the certificate's SCT list extension. A keyless signature is trusted
//! only when one SCT was signed by a CT log of the trusted root (`ctlogs`), at a time inside the
//! log key's validity, as cosign and sigstore-go require by default. What the log signed is the
//! precertificate entry: the certificate's TBS without the SCT list extension, bound to the
//! issuer by the SHA-256 of the issuer's SubjectPublicKeyInfo.

use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_ASN1, ECDSA_P384_SHA256_ASN1, ECDSA_P384_SHA384_ASN1, RSA_PKCS1_2048_8192_SHA256,
    RSA_PKCS1_2048_8192_SHA384, UnparsedPublicKey, VerificationAlgorithm,
};
use sha2::{Digest, Sha256};
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::{ParsedExtension, SignedCertificateTimestamp};
use x509_parser::prelude::FromDer;

/// The SCT list extension (1.3.6.1.4.1.11129.2.4.2), as its DER OID content.
const SCT_LIST_OID: &[u8] = &[0x2b, 0x06, 0x01, 0x04, 0x01, 0xd6, 0x79, 0x02, 0x04, 0x02];
const SCT_LIST: &str = "1.3.6.1.4.1.11129.2.4.2";

/// Why a certificate's SCTs do not prove it was logged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SctProblem {
    /// The certificate carries no SCT (or an SCT list that does not parse).
    Missing(String),
    /// No SCT is of a CT log of the trusted root valid at the SCT's time.
    UnknownLog(String),
    /// An SCT of a trusted log whose signature does not verify.
    BadSignature(String),
}

/// The CT log (its URL) of `root` that logged `leaf` (DER), issued by the key `issuer_spki`
/// (SubjectPublicKeyInfo DER of the certificate that signed `leaf`).
pub fn check(root: &super::TrustedRoot, leaf: &[u8], issuer_spki: &[u8]) -> Result<String, SctProblem> {
    let cert = X509Certificate::from_der(leaf)
        .map(|(_, cert)| cert)
        .map_err(|e| SctProblem::Missing(format!("not an X.509 certificate: {e}")))?;
    let scts = embedded_scts(&cert)?;
    let tbs = precert_tbs(cert.tbs_certificate.as_ref()).map_err(SctProblem::Missing)?;
    let issuer_key_hash = Sha256::digest(issuer_spki);
    let mut unknown = Vec::new();
    let mut bad = Vec::new();
    for sct in &scts {
        let id = crate::cache::hex(sct.id.key_id);
        let millis = sct.timestamp;
        let seconds = i64::try_from(millis / 1000).unwrap_or(i64::MAX);
        let Some(log) = root.ct_log(&id) else {
            unknown.push(format!("{id} (unknown)"));
            continue;
        };
        if !log.valid.contains(seconds) {
            unknown.push(format!(
                "{} at {seconds}, outside its key's validity",
                log.base_url
            ));
            continue;
        }
        let signed =
            signed_entry(millis, &issuer_key_hash, &tbs, sct.extensions.0).map_err(SctProblem::Missing)?;
        if log_signed(&log.spki, sct, &signed) {
            return Ok(log.base_url.clone());
        }
        bad.push(log.base_url.clone());
    }
    if !bad.is_empty() {
        return Err(SctProblem::BadSignature(format!(
            "the SCT of {} does not verify under the log's key of the trusted root",
            bad.join(", ")
        )));
    }
    Err(SctProblem::UnknownLog(format!(
        "the certificate's SCTs are of {}; the trusted root's CT logs are {}",
        unknown.join(", "),
        if root.ct_logs.is_empty() {
            "none".to_string()
        } else {
            root.ct_logs
                .iter()
                .map(|l| l.base_url.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        }
    )))
}

/// The SCTs of the certificate's SCT list extension.
fn embedded_scts<'a>(
    cert: &'a X509Certificate<'a>,
) -> Result<Vec<SignedCertificateTimestamp<'a>>, SctProblem> {
    let extension = cert
        .extensions()
        .iter()
        .find(|e| e.oid.to_id_string() == SCT_LIST)
        .ok_or_else(|| {
            SctProblem::Missing("the certificate has no SCT list extension: no CT log vouches for it".into())
        })?;
    match extension.parsed_extension() {
        ParsedExtension::SCT(scts) if !scts.is_empty() => Ok(scts.clone()),
        ParsedExtension::SCT(_) => Err(SctProblem::Missing("the SCT list is empty".into())),
        _ => Err(SctProblem::Missing(
            "the SCT list extension does not parse".into(),
        )),
    }
}

/// Whether the SCT's signature (its algorithm as RFC 5246's DigitallySigned names it: hash 4
/// SHA-256 or 5 SHA-384, signature 3 ECDSA or 1 RSA PKCS#1 v1.5) over `signed` verifies
/// under the log key `spki`.
fn log_signed(spki: &[u8], sct: &SignedCertificateTimestamp<'_>, signed: &[u8]) -> bool {
    let algorithms: &[&'static dyn VerificationAlgorithm] =
        match (sct.signature.hash_alg_id, sct.signature.sign_alg_id) {
            (4, 3) => &[&ECDSA_P256_SHA256_ASN1, &ECDSA_P384_SHA256_ASN1],
            (5, 3) => &[&ECDSA_P384_SHA384_ASN1],
            (4, 1) => &[&RSA_PKCS1_2048_8192_SHA256],
            (5, 1) => &[&RSA_PKCS1_2048_8192_SHA384],
            _ => return false,
        };
    algorithms.iter().any(|alg| {
        UnparsedPublicKey::new(*alg, spki)
            .verify(signed, sct.signature.data)
            .is_ok()
    })
}

/// What a CT log signs for a precertificate SCT (RFC 6962 §3.2): version v1, signature type
/// certificate_timestamp, the timestamp (ms), entry type precert_entry, the issuer key hash,
/// the TBS (24-bit length) and the SCT's extensions (16-bit length).
pub fn signed_entry(
    millis: u64,
    issuer_key_hash: &[u8],
    tbs: &[u8],
    extensions: &[u8],
) -> Result<Vec<u8>, String> {
    let tbs_len = u32::try_from(tbs.len())
        .ok()
        .filter(|n| *n < 1 << 24)
        .ok_or("the certificate is too large for an SCT")?;
    let ext_len = u16::try_from(extensions.len()).map_err(|_| "the SCT's extensions are too large")?;
    let mut out = Vec::with_capacity(50 + tbs.len() + extensions.len());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&millis.to_be_bytes());
    out.extend_from_slice(&1u16.to_be_bytes());
    out.extend_from_slice(issuer_key_hash);
    out.extend_from_slice(&tbs_len.to_be_bytes()[1..]);
    out.extend_from_slice(tbs);
    out.extend_from_slice(&ext_len.to_be_bytes());
    out.extend_from_slice(extensions);
    Ok(out)
}

/// One DER element: its tag, its content, and what follows it.
fn element(der: &[u8]) -> Result<(u8, &[u8], &[u8]), String> {
    let bad = |what: &str| format!("the certificate's TBS is not DER: {what}");
    let (&tag, rest) = der.split_first().ok_or_else(|| bad("truncated"))?;
    if tag & 0x1f == 0x1f {
        return Err(bad("a multi-byte tag"));
    }
    let (&first, rest) = rest.split_first().ok_or_else(|| bad("truncated length"))?;
    let (len, rest) = match first {
        n if n < 0x80 => (n as usize, rest),
        0x81..=0x83 => {
            let n = (first & 0x7f) as usize;
            if rest.len() < n {
                return Err(bad("truncated length"));
            }
            let len = rest[..n].iter().fold(0usize, |acc, b| (acc << 8) | *b as usize);
            (len, &rest[n..])
        }
        _ => return Err(bad("an unsupported length")),
    };
    if rest.len() < len {
        return Err(bad("an element longer than its container"));
    }
    Ok((tag, &rest[..len], &rest[len..]))
}

/// `tag` with `content`, with a definite DER length.
fn encode(tag: u8, content: &[u8]) -> Vec<u8> {
    let len = content.len();
    let mut out = vec![tag];
    match len {
        0..=0x7f => out.push(len as u8),
        0x80..=0xff => out.extend_from_slice(&[0x81, len as u8]),
        0x100..=0xffff => out.extend_from_slice(&[0x82, (len >> 8) as u8, len as u8]),
        _ => out.extend_from_slice(&[0x83, (len >> 16) as u8, (len >> 8) as u8, len as u8]),
    }
    out.extend_from_slice(content);
    out
}

/// One element of a DER sequence: its tag, its content, and its whole encoding.
struct Element<'a> {
    tag: u8,
    content: &'a [u8],
    whole: &'a [u8],
}

/// The elements of a DER sequence's content.
fn elements(mut content: &[u8]) -> Result<Vec<Element<'_>>, String> {
    let mut out = Vec::new();
    while !content.is_empty() {
        let (tag, inner, rest) = element(content)?;
        out.push(Element {
            tag,
            content: inner,
            whole: &content[..content.len() - rest.len()],
        });
        content = rest;
    }
    Ok(out)
}

/// The precertificate's TBS that the CT log signed: `tbs` (a TBSCertificate's DER) without the
/// SCT list extension, every other byte as it was.
pub fn precert_tbs(tbs: &[u8]) -> Result<Vec<u8>, String> {
    let (tag, content, rest) = element(tbs)?;
    if tag != 0x30 || !rest.is_empty() {
        return Err("the certificate's TBS is not one DER SEQUENCE".into());
    }
    let mut out = Vec::with_capacity(tbs.len());
    for child in elements(content)? {
        if child.tag != 0xa3 {
            out.extend_from_slice(child.whole);
            continue;
        }
        // [3] EXPLICIT Extensions: one SEQUENCE of Extension SEQUENCEs, each starting with its OID.
        let (seq_tag, extensions, _) = element(child.content)?;
        if seq_tag != 0x30 {
            return Err("the certificate's extensions are not a SEQUENCE".into());
        }
        let mut kept = Vec::with_capacity(extensions.len());
        for extension in elements(extensions)? {
            let (oid_tag, oid, _) = element(extension.content)?;
            if !(oid_tag == 0x06 && oid == SCT_LIST_OID) {
                kept.extend_from_slice(extension.whole);
            }
        }
        out.extend(encode(0xa3, &encode(0x30, &kept)));
    }
    Ok(encode(0x30, &out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_are_encoded_in_the_shortest_der_form() {
        for (len, header) in [
            (0usize, vec![0x04, 0x00]),
            (0x7f, vec![0x04, 0x7f]),
            (0x80, vec![0x04, 0x81, 0x80]),
            (0x1234, vec![0x04, 0x82, 0x12, 0x34]),
            (0x10000, vec![0x04, 0x83, 0x01, 0x00, 0x00]),
        ] {
            let der = encode(0x04, &vec![7; len]);
            assert_eq!(der[..header.len()], header[..], "{len}");
            let (tag, content, rest) = element(&der).unwrap();
            assert_eq!((tag, content.len(), rest.len()), (0x04, len, 0));
        }
    }

    #[test]
    fn only_the_sct_list_extension_is_removed() {
        let extension =
            |oid: &[u8], value: &[u8]| encode(0x30, &[encode(0x06, oid), encode(0x04, value)].concat());
        let other = extension(&[0x55, 0x1d, 0x0f], &[3, 2, 7, 0x80]);
        let sct = extension(SCT_LIST_OID, &[9; 200]);
        let tbs = |extensions: &[Vec<u8>]| {
            encode(
                0x30,
                &[
                    encode(0xa0, &encode(0x02, &[2])),
                    encode(0x02, &[1, 2, 3]),
                    encode(0xa3, &encode(0x30, &extensions.concat())),
                ]
                .concat(),
            )
        };
        let with = tbs(&[other.clone(), sct.clone(), other.clone()]);
        let without = tbs(&[other.clone(), other.clone()]);
        assert_eq!(precert_tbs(&with).unwrap(), without);
        assert_eq!(precert_tbs(&without).unwrap(), without);
        for bad in [
            &with[..with.len() - 1],
            &[0x31, 0x00][..],
            &[0x30, 0x84, 0, 0, 0, 0][..],
            &[0x30, 0x02, 0xa3, 0x00][..],
        ] {
            assert!(precert_tbs(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_signed_entry_follows_rfc_6962() {
        let signed = signed_entry(0x0102030405060708, &[0xaa; 32], b"TBS", b"ex").unwrap();
        let mut want = vec![0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 1];
        want.extend([0xaa; 32]);
        want.extend([0, 0, 3]);
        want.extend(b"TBS");
        want.extend([0, 2]);
        want.extend(b"ex");
        assert_eq!(signed, want);
    }
}
