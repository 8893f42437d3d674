//! RFC 3161 signed timestamps of a Sigstore bundle (`timestampVerificationData`), checked
//! offline: the token (a `TimeStampResp`, or its bare `TimeStampToken`) is CMS SignedData
//! (RFC 5652) whose content is a `TSTInfo`; its message imprint must be the hash of the
//! bundle's signature, its one signer's signed attributes must name that content and its
//! digest, and their signature must verify under a certificate that chains to a timestamp
//! authority of the trusted root — the signer's certificate embedded in the token, or the
//! authority's own leaf — with the authority, every certificate of the chain valid at the
//! token's `genTime` (end inclusive) and the leaf for time stamping. Then `genTime` is a time
//! the signature is proven to have existed at.

use sha2::{Digest, Sha256, Sha384, Sha512};
use x509_parser::certificate::X509Certificate;

use super::der::{self, Element, Reader};
use super::keyless;
use super::trusted_root::{Authority, TrustedRoot};

const SIGNED_DATA: &str = "1.2.840.113549.1.7.2";
const TST_INFO: &str = "1.2.840.113549.1.9.16.1.4";
const CONTENT_TYPE: &str = "1.2.840.113549.1.9.3";
const MESSAGE_DIGEST: &str = "1.2.840.113549.1.9.4";
const SHA256: &str = "2.16.840.1.101.3.4.2.1";
const SHA384: &str = "2.16.840.1.101.3.4.2.2";
const SHA512: &str = "2.16.840.1.101.3.4.2.3";
/// The largest token read: a response with its certificates is a few KiB.
pub const MAX_TOKEN: usize = 64 * 1024;

/// A verified timestamp: when, and by which authority of the trusted root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedTime {
    /// `genTime`, Unix seconds.
    pub at: i64,
    pub authority: String,
}

/// What a token says, before anything of it is trusted.
#[derive(Debug)]
struct Token<'a> {
    /// `TSTInfo` DER (the encapsulated content).
    content: &'a [u8],
    certificates: Vec<&'a [u8]>,
    signer: Signer<'a>,
    imprint_algorithm: String,
    imprint: &'a [u8],
    gen_time: i64,
}

#[derive(Debug)]
struct Signer<'a> {
    /// `IssuerAndSerialNumber` (the issuer Name DER, the serial's contents), or a subject key
    /// identifier.
    id: SignerId<'a>,
    digest_algorithm: String,
    /// `signedAttrs` re-tagged as the SET OF that is signed.
    signed_attributes: Vec<u8>,
    content_type: Option<String>,
    message_digest: Option<&'a [u8]>,
    signature_algorithm: String,
    signature: &'a [u8],
}

#[derive(Debug)]
enum SignerId<'a> {
    IssuerSerial { issuer: &'a [u8], serial: &'a [u8] },
    KeyId(&'a [u8]),
}

fn hash(algorithm: &str, data: &[u8]) -> Result<Vec<u8>, String> {
    Ok(match algorithm {
        SHA256 => Sha256::digest(data).to_vec(),
        SHA384 => Sha384::digest(data).to_vec(),
        SHA512 => Sha512::digest(data).to_vec(),
        other => return Err(format!("hash algorithm {other} is not SHA-2")),
    })
}

/// Reads a `TimeStampResp` (status granted) or a bare `TimeStampToken`.
fn parse(bytes: &[u8]) -> Result<Token<'_>, String> {
    let outer = der::single(bytes, der::SEQUENCE, "the timestamp")?;
    let mut fields = Reader::new(outer.value);
    let first = fields.any("the timestamp's first field")?;
    let content_info = match first.tag {
        der::SEQUENCE => {
            let status = Reader::new(first.value).expect(der::INTEGER, "PKIStatusInfo.status")?;
            if !matches!(status.value, [0] | [1]) {
                return Err(format!(
                    "the timestamp response's status is {:?}, not granted",
                    status.value
                ));
            }
            fields.expect(der::SEQUENCE, "timeStampToken")?.value
        }
        _ => outer.value,
    };
    let mut info = Reader::new(content_info);
    let kind = der::oid_text(info.expect(der::OID, "ContentInfo.contentType")?.value)?;
    if kind != SIGNED_DATA {
        return Err(format!("the token's content is {kind}, not CMS SignedData"));
    }
    let explicit = info.expect(der::CONTEXT_0, "ContentInfo.content")?;
    let signed = der::single(explicit.value, der::SEQUENCE, "SignedData")?;
    let mut signed = Reader::new(signed.value);
    signed.expect(der::INTEGER, "SignedData.version")?;
    signed.expect(der::SET, "SignedData.digestAlgorithms")?;
    let encap = signed.expect(der::SEQUENCE, "SignedData.encapContentInfo")?;
    let mut encap = Reader::new(encap.value);
    let kind = der::oid_text(encap.expect(der::OID, "eContentType")?.value)?;
    if kind != TST_INFO {
        return Err(format!("the signed content is {kind}, not a TSTInfo"));
    }
    let explicit = encap.expect(der::CONTEXT_0, "eContent")?;
    let content = der::single(explicit.value, der::OCTET_STRING, "eContent")?.value;
    let mut certificates = Vec::new();
    if let Some(set) = signed.optional(der::CONTEXT_0, "SignedData.certificates")? {
        let mut certs = Reader::new(set.value);
        while !certs.is_empty() {
            let cert = certs.any("SignedData.certificates")?;
            if cert.tag == der::SEQUENCE {
                certificates.push(cert.raw);
            }
        }
    }
    signed.optional(der::CONTEXT_1, "SignedData.crls")?;
    let infos = signed.expect(der::SET, "SignedData.signerInfos")?;
    let mut infos = Reader::new(infos.value);
    let signer = signer_info(infos.expect(der::SEQUENCE, "SignerInfo")?)?;
    if !infos.is_empty() {
        return Err("a timestamp with more than one signer".into());
    }
    let tst = der::single(content, der::SEQUENCE, "TSTInfo")?;
    let mut tst = Reader::new(tst.value);
    tst.expect(der::INTEGER, "TSTInfo.version")?;
    tst.expect(der::OID, "TSTInfo.policy")?;
    let imprint = tst.expect(der::SEQUENCE, "TSTInfo.messageImprint")?;
    let mut imprint = Reader::new(imprint.value);
    let imprint_algorithm = der::algorithm(
        &imprint.expect(der::SEQUENCE, "messageImprint.hashAlgorithm")?,
        "messageImprint.hashAlgorithm",
    )?;
    let imprint = imprint
        .expect(der::OCTET_STRING, "messageImprint.hashedMessage")?
        .value;
    tst.expect(der::INTEGER, "TSTInfo.serialNumber")?;
    let gen_time = der::generalized_time(tst.expect(der::GENERALIZED_TIME, "TSTInfo.genTime")?.value)?;
    Ok(Token {
        content,
        certificates,
        signer,
        imprint_algorithm,
        imprint,
        gen_time,
    })
}

fn signer_info(info: Element<'_>) -> Result<Signer<'_>, String> {
    let mut info = Reader::new(info.value);
    info.expect(der::INTEGER, "SignerInfo.version")?;
    let sid = info.any("SignerInfo.sid")?;
    let id = match sid.tag {
        der::SEQUENCE => {
            let mut sid = Reader::new(sid.value);
            let issuer = sid.expect(der::SEQUENCE, "sid.issuer")?.raw;
            let serial = sid.expect(der::INTEGER, "sid.serialNumber")?.value;
            SignerId::IssuerSerial { issuer, serial }
        }
        der::CONTEXT_0_PRIMITIVE => SignerId::KeyId(sid.value),
        tag => return Err(format!("SignerInfo.sid: tag {tag:#04x}")),
    };
    let digest_algorithm = der::algorithm(
        &info.expect(der::SEQUENCE, "SignerInfo.digestAlgorithm")?,
        "SignerInfo.digestAlgorithm",
    )?;
    let attributes = info
        .optional(der::CONTEXT_0, "SignerInfo.signedAttrs")?
        .ok_or("the timestamp's signer has no signed attributes")?;
    let mut signed_attributes = attributes.raw.to_vec();
    signed_attributes[0] = der::SET;
    let (mut content_type, mut message_digest) = (None, None);
    let mut attrs = Reader::new(attributes.value);
    while !attrs.is_empty() {
        let attr = attrs.expect(der::SEQUENCE, "signedAttrs")?;
        let mut attr = Reader::new(attr.value);
        let kind = der::oid_text(attr.expect(der::OID, "attrType")?.value)?;
        let values = attr.expect(der::SET, "attrValues")?;
        let mut values = Reader::new(values.value);
        match kind.as_str() {
            CONTENT_TYPE => {
                content_type = Some(der::oid_text(values.expect(der::OID, "contentType")?.value)?)
            }
            MESSAGE_DIGEST => message_digest = Some(values.expect(der::OCTET_STRING, "messageDigest")?.value),
            _ => {}
        }
    }
    let signature_algorithm = der::algorithm(
        &info.expect(der::SEQUENCE, "SignerInfo.signatureAlgorithm")?,
        "SignerInfo.signatureAlgorithm",
    )?;
    let signature = info.expect(der::OCTET_STRING, "SignerInfo.signature")?.value;
    Ok(Signer {
        id,
        digest_algorithm,
        signed_attributes,
        content_type,
        message_digest,
        signature_algorithm,
        signature,
    })
}

fn trim_zeros(serial: &[u8]) -> &[u8] {
    let start = serial.iter().position(|b| *b != 0).unwrap_or(serial.len());
    &serial[start..]
}

/// Whether `cert` is the one `id` names.
fn is_signer(cert: &X509Certificate<'_>, id: &SignerId<'_>) -> bool {
    match id {
        SignerId::IssuerSerial { issuer, serial } => {
            cert.issuer().as_raw() == *issuer && trim_zeros(cert.raw_serial()) == trim_zeros(serial)
        }
        SignerId::KeyId(key_id) => cert.extensions().iter().any(|e| {
            matches!(
                e.parsed_extension(),
                x509_parser::extensions::ParsedExtension::SubjectKeyIdentifier(k) if k.0 == *key_id
            )
        }),
    }
}

/// The chain from the signer `cert` to the top of `authority`'s chain, when `cert` is the
/// authority's leaf or was issued by one of its certificates.
fn chain_of<'c>(
    cert: &'c X509Certificate<'c>,
    cert_der: &[u8],
    authority: &'c [X509Certificate<'c>],
    authority_der: &[Vec<u8>],
) -> Option<Vec<&'c X509Certificate<'c>>> {
    let from = if authority_der.first().is_some_and(|leaf| leaf == cert_der) {
        1
    } else {
        authority
            .iter()
            .position(|parent| keyless::issued_by(cert, parent) && parent.is_ca())?
    };
    let mut chain = vec![cert];
    chain.extend(authority[from..].iter());
    let linked = chain
        .windows(2)
        .all(|pair| keyless::issued_by(pair[0], pair[1]) && pair[1].is_ca());
    linked.then_some(chain)
}

/// The ECDSA signature algorithm of `digest` when the token names only the key's algorithm.
fn signature_oid<'a>(signature_algorithm: &'a str, digest_algorithm: &str) -> &'a str {
    match (signature_algorithm, digest_algorithm) {
        ("1.2.840.10045.2.1", SHA256) => keyless::ECDSA_SHA256,
        ("1.2.840.10045.2.1", SHA384) => keyless::ECDSA_SHA384,
        (other, _) => other,
    }
}

/// Checks the timestamp `token` (DER) over `signature` (the bundle's signature bytes) against
/// the timestamp authorities of `root`; the time it proves.
pub fn check(root: &TrustedRoot, token: &[u8], signature: &[u8]) -> Result<SignedTime, String> {
    if token.len() > MAX_TOKEN {
        return Err(format!(
            "the timestamp is {} bytes, over {MAX_TOKEN}",
            token.len()
        ));
    }
    let token = parse(token)?;
    if hash(&token.imprint_algorithm, signature)? != token.imprint {
        return Err("the timestamp is of other data than the bundle's signature (message imprint)".into());
    }
    let signer = &token.signer;
    if signer.content_type.as_deref() != Some(TST_INFO) {
        return Err("the timestamp's signed attributes do not name a TSTInfo content".into());
    }
    if signer.message_digest != Some(hash(&signer.digest_algorithm, token.content)?.as_slice()) {
        return Err("the timestamp's signed attributes are of another content (message digest)".into());
    }
    let embedded: Vec<(X509Certificate<'_>, &[u8])> = token
        .certificates
        .iter()
        .filter_map(|der| keyless::parse(der).ok().map(|c| (c, *der)))
        .collect();
    let authorities: Vec<(&Authority, Vec<X509Certificate<'_>>)> = root
        .timestamp_authorities
        .iter()
        .filter_map(|a| {
            let chain = a
                .chain
                .iter()
                .map(|der| keyless::parse(der).ok())
                .collect::<Option<Vec<_>>>()?;
            (!chain.is_empty()).then_some((a, chain))
        })
        .collect();
    let candidates = embedded
        .iter()
        .map(|(c, der)| (c, *der))
        .chain(
            authorities
                .iter()
                .map(|(a, chain)| (&chain[0], a.chain[0].as_slice())),
        )
        .filter(|(cert, _)| is_signer(cert, &signer.id));
    let algorithm = signature_oid(&signer.signature_algorithm, &signer.digest_algorithm);
    let at = token.gen_time;
    let mut problem = None;
    for (cert, cert_der) in candidates {
        for (authority, chain) in &authorities {
            let Some(path) = chain_of(cert, cert_der, chain, &authority.chain) else {
                continue;
            };
            if !keyless::signature_verifies(cert, algorithm, &signer.signed_attributes, signer.signature) {
                problem = Some(format!(
                    "the timestamp's signature does not verify under the certificate of {}",
                    authority.name
                ));
                continue;
            }
            if !authority.valid.contains(at) {
                return Err(format!(
                    "stamped at {} by {}, which the trusted root trusts only {}",
                    keyless::utc(at),
                    authority.name,
                    authority.valid
                ));
            }
            if let Some(expired) = path.iter().find(|c| !keyless::valid_at(c, at)) {
                return Err(format!(
                    "stamped at {}, outside the validity of the TSA certificate {}",
                    keyless::utc(at),
                    expired.subject()
                ));
            }
            let stamping = cert
                .extended_key_usage()
                .ok()
                .flatten()
                .is_some_and(|e| e.value.time_stamping);
            if !stamping {
                return Err("the TSA certificate is not for time stamping (extended key usage)".into());
            }
            return Ok(SignedTime {
                at,
                authority: authority.name.clone(),
            });
        }
    }
    Err(problem
        .unwrap_or_else(|| "signed by a timestamp authority the trusted root does not name".to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_tokens_are_refused_with_the_field() {
        let root = TrustedRoot::public_good().unwrap();
        let table: [(&[u8], &str); 4] = [
            (b"", "the timestamp: missing"),
            (b"\x30\x05\x30\x03\x02\x01\x02", "status is [2]"),
            (b"\x30\x05\x06\x03\x2a\x03\x04", "not CMS SignedData"),
            (b"\x30\x05\x30\x03\x02\x01\x00", "timeStampToken: missing"),
        ];
        for (bytes, want) in table {
            let err = check(&root, bytes, b"sig").unwrap_err();
            assert!(err.contains(want), "{bytes:?}: {err}");
        }
    }
}
