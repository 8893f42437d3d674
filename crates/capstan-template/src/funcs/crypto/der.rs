//! The little DER and PEM handling the key formats need (PKCS#1, SEC1, PKCS#8, DSA).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

pub const TAG_INTEGER: u8 = 0x02;
pub const TAG_OCTET_STRING: u8 = 0x04;
pub const TAG_NULL: u8 = 0x05;
pub const TAG_OID: u8 = 0x06;
pub const TAG_SEQUENCE: u8 = 0x30;
pub const TAG_CONTEXT_0: u8 = 0xa0;
pub const TAG_CONTEXT_1: u8 = 0xa1;

/// OID 1.2.840.113549.1.1.1 (rsaEncryption), content bytes.
pub const OID_RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
/// OID 1.2.840.10045.2.1 (id-ecPublicKey).
pub const OID_EC: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
/// OID 1.2.840.10045.3.1.7 (prime256v1 / P-256).
pub const OID_P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
/// OID 1.3.101.112 (Ed25519).
pub const OID_ED25519: &[u8] = &[0x2b, 0x65, 0x70];

/// One tag-length-value.
pub fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|&&b| b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(content);
    out
}

pub fn seq(parts: &[Vec<u8>]) -> Vec<u8> {
    tlv(TAG_SEQUENCE, &parts.concat())
}

/// A non-negative INTEGER from big-endian magnitude bytes.
pub fn uint(magnitude: &[u8]) -> Vec<u8> {
    let skip = magnitude.iter().take_while(|&&b| b == 0).count();
    let mut content = Vec::with_capacity(magnitude.len() + 1);
    let digits = &magnitude[skip..];
    if digits.first().is_none_or(|&b| b & 0x80 != 0) {
        content.push(0);
    }
    content.extend_from_slice(digits);
    tlv(TAG_INTEGER, &content)
}

/// A reader over DER elements.
pub struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(input: &'a [u8]) -> Reader<'a> {
        Reader { rest: input }
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// The bytes not read yet.
    pub fn remaining(&self) -> &'a [u8] {
        self.rest
    }

    /// The next element: (tag, content).
    pub fn next(&mut self) -> Option<(u8, &'a [u8])> {
        let (&tag, after_tag) = self.rest.split_first()?;
        let (&first, after_len) = after_tag.split_first()?;
        let (len, body) = if first < 0x80 {
            (usize::from(first), after_len)
        } else {
            let n = usize::from(first & 0x7f);
            if n == 0 || n > 4 {
                return None;
            }
            let len_bytes = after_len.get(..n)?;
            let len = len_bytes
                .iter()
                .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
            (len, after_len.get(n..)?)
        };
        let content = body.get(..len)?;
        self.rest = body.get(len..)?;
        Some((tag, content))
    }

    /// The next element, which must carry `tag`.
    pub fn expect(&mut self, tag: u8) -> Option<&'a [u8]> {
        match self.next()? {
            (t, content) if t == tag => Some(content),
            _ => None,
        }
    }
}

/// Go's `pem.EncodeToMemory`: 64-column base64 between BEGIN and END lines.
pub fn pem_encode(label: &str, der: &[u8]) -> String {
    let b64 = STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// The first PEM block in `text` (like Go's `pem.Decode`, without header support beyond
/// skipping `Key: value` lines): (label, bytes).
pub fn pem_decode(text: &str) -> Option<(String, Vec<u8>)> {
    let start = text.find("-----BEGIN ")?;
    let after = &text[start + "-----BEGIN ".len()..];
    let label_end = after.find("-----")?;
    let label = &after[..label_end];
    if label.contains('\n') {
        return None;
    }
    let body_start = &after[label_end + 5..];
    let end_marker = format!("-----END {label}-----");
    let end = body_start.find(&end_marker)?;
    let body: String = body_start[..end]
        .lines()
        .filter(|l| !l.contains(':'))
        .flat_map(|l| l.chars())
        .filter(|c| !c.is_whitespace())
        .collect();
    let der = STANDARD.decode(body.as_bytes()).ok()?;
    Some((label.to_string(), der))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_minimal_and_positive() {
        assert_eq!(uint(&[0, 0, 5]), vec![2, 1, 5]);
        assert_eq!(uint(&[0x80]), vec![2, 2, 0, 0x80]);
        assert_eq!(uint(&[]), vec![2, 1, 0]);
    }

    #[test]
    fn long_lengths_round_trip() {
        let body = vec![7u8; 300];
        let enc = tlv(TAG_OCTET_STRING, &body);
        assert_eq!(&enc[..4], &[4, 0x82, 1, 44]);
        let mut r = Reader::new(&enc);
        assert_eq!(r.expect(TAG_OCTET_STRING), Some(&body[..]));
        assert!(r.is_empty());
    }

    #[test]
    fn pem_round_trip() {
        let der = vec![1u8; 100];
        let pem = pem_encode("TEST", &der);
        assert!(pem.ends_with("-----END TEST-----\n"));
        assert_eq!(pem_decode(&pem), Some(("TEST".to_string(), der)));
        assert_eq!(pem_decode("junk"), None);
    }
}
