//! Private keys as sprig makes them (`genPrivateKey`, the keys behind `genCA`…) and reads
//! them (the `…WithKey` functions, `buildCustomCert`).

use rand_core::{CryptoRng, RngCore};
use rsa::pkcs1::EncodeRsaPrivateKey;

use super::der::{self, Reader};
use crate::template::funcs::FuncEnv;

/// A private key in the forms we need: PKCS#8 (for signing) and the PEM text a template sees.
pub struct PrivateKey {
    pub pkcs8: Vec<u8>,
    pub pem: String,
}

impl PrivateKey {
    /// The signing key pair; the algorithm follows the key (RSA → SHA256WithRSA, P-256 →
    /// ECDSAWithSHA256, P-384 → ECDSAWithSHA384, Ed25519), as Go's x509 chooses.
    pub fn key_pair(&self) -> Result<rcgen::KeyPair, String> {
        rcgen::KeyPair::try_from(self.pkcs8.as_slice())
            .map_err(|e| format!("x509: unsupported private key: {e}"))
    }
}

/// Adapts [`FuncEnv`] randomness to the `rand_core` traits key generation expects.
pub struct EnvRng<'a>(pub &'a FuncEnv);

impl RngCore for EnvRng<'_> {
    fn next_u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        self.0.fill_random(&mut b);
        u32::from_le_bytes(b)
    }
    fn next_u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        self.0.fill_random(&mut b);
        u64::from_le_bytes(b)
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.0.fill_random(dest);
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        self.0.fill_random(dest);
        Ok(())
    }
}

impl CryptoRng for EnvRng<'_> {}

/// An RSA key (`RSA PRIVATE KEY`, PKCS#1) with public exponent 65537.
pub fn generate_rsa(env: &FuncEnv, bits: usize) -> Result<PrivateKey, String> {
    let key = rsa::RsaPrivateKey::new(&mut EnvRng(env), bits).map_err(|e| e.to_string())?;
    let pkcs1 = key.to_pkcs1_der().map_err(|e| e.to_string())?;
    let pkcs1 = pkcs1.as_bytes();
    Ok(PrivateKey {
        pkcs8: wrap_pkcs8(der::OID_RSA, &der::tlv(der::TAG_NULL, &[]), pkcs1),
        pem: der::pem_encode("RSA PRIVATE KEY", pkcs1),
    })
}

/// A P-256 key (`EC PRIVATE KEY`, SEC1 with the curve and public key).
///
/// ring generates it from the OS generator: a seeded environment cannot make it repeat.
pub fn generate_ecdsa_p256() -> Result<PrivateKey, String> {
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 =
        ring::signature::EcdsaKeyPair::generate_pkcs8(&ring::signature::ECDSA_P256_SHA256_ASN1_SIGNING, &rng)
            .map_err(|_| "failed to generate private key: ecdsa".to_string())?;
    let pkcs8 = pkcs8.as_ref().to_vec();
    let sec1 = sec1_with_curve(&pkcs8, der::OID_P256).ok_or("failed to generate private key: ecdsa")?;
    Ok(PrivateKey {
        pem: der::pem_encode("EC PRIVATE KEY", &sec1),
        pkcs8,
    })
}

/// An Ed25519 key (`PRIVATE KEY`, PKCS#8 holding the 32-byte seed).
pub fn generate_ed25519(env: &FuncEnv) -> PrivateKey {
    let mut seed = [0u8; 32];
    env.fill_random(&mut seed);
    let pkcs8 = der::seq(&[
        der::uint(&[0]),
        der::seq(&[der::tlv(der::TAG_OID, der::OID_ED25519)]),
        der::tlv(der::TAG_OCTET_STRING, &der::tlv(der::TAG_OCTET_STRING, &seed)),
    ]);
    PrivateKey {
        pem: der::pem_encode("PRIVATE KEY", &pkcs8),
        pkcs8,
    }
}

/// `PrivateKeyInfo { 0, AlgorithmIdentifier { oid, params }, OCTET STRING key }`.
fn wrap_pkcs8(oid: &[u8], params: &[u8], key: &[u8]) -> Vec<u8> {
    der::seq(&[
        der::uint(&[0]),
        der::seq(&[der::tlv(der::TAG_OID, oid), params.to_vec()]),
        der::tlv(der::TAG_OCTET_STRING, key),
    ])
}

/// Rewrites the ECPrivateKey inside a PKCS#8 key the way Go's `MarshalECPrivateKey` writes
/// it: version, private key, `[0]` curve, `[1]` public key.
fn sec1_with_curve(pkcs8: &[u8], curve: &[u8]) -> Option<Vec<u8>> {
    let mut outer = Reader::new(pkcs8);
    let mut info = Reader::new(outer.expect(der::TAG_SEQUENCE)?);
    info.expect(der::TAG_INTEGER)?;
    info.expect(der::TAG_SEQUENCE)?;
    let inner = info.expect(der::TAG_OCTET_STRING)?;
    let mut ec = Reader::new(Reader::new(inner).expect(der::TAG_SEQUENCE)?);
    ec.expect(der::TAG_INTEGER)?;
    let private = ec.expect(der::TAG_OCTET_STRING)?;
    let mut public = None;
    while let Some((tag, content)) = ec.next() {
        if tag == der::TAG_CONTEXT_1 {
            public = Some(content);
        }
    }
    Some(der::seq(&[
        der::uint(&[1]),
        der::tlv(der::TAG_OCTET_STRING, private),
        der::tlv(der::TAG_CONTEXT_0, &der::tlv(der::TAG_OID, curve)),
        der::tlv(der::TAG_CONTEXT_1, public?),
    ]))
}

/// Sprig's `parsePrivateKeyPEM`: the first PEM block must be a private key of a supported
/// type. Errors carry Go's wording. The PEM of the result is re-encoded the way sprig writes
/// keys back (`RSA PRIVATE KEY`, `EC PRIVATE KEY`, or PKCS#8 for Ed25519).
pub fn parse_private_key_pem(text: &str) -> Result<PrivateKey, String> {
    let Some((label, bytes)) = der::pem_decode(text) else {
        return Err("no PEM data in input".into());
    };
    let pkcs8 = if label == "PRIVATE KEY" {
        pkcs8_algorithm(&bytes).map_err(|e| format!("decoding PEM as PKCS#8: {e}"))?;
        bytes
    } else if let Some(kind) = label.strip_suffix(" PRIVATE KEY") {
        match kind {
            "RSA" => {
                check_pkcs1(&bytes).ok_or_else(|| {
                    "parsing RSA private key from PEM: x509: failed to parse private key".to_string()
                })?;
                wrap_pkcs8(der::OID_RSA, &der::tlv(der::TAG_NULL, &[]), &bytes)
            }
            "EC" => {
                let curve = sec1_curve(&bytes).ok_or_else(|| {
                    "parsing EC private key from PEM: x509: failed to parse EC private key".to_string()
                })?;
                wrap_pkcs8(der::OID_EC, &der::tlv(der::TAG_OID, &curve), &bytes)
            }
            "DSA" => return Err("x509: only RSA, ECDSA and Ed25519 keys supported".into()),
            _ => return Err(format!("invalid private key type {label}")),
        }
    } else {
        return Err(format!("no private key data in PEM block of type {label}"));
    };
    let pem = canonical_pem(&pkcs8).ok_or("x509: failed to parse private key")?;
    Ok(PrivateKey { pkcs8, pem })
}

/// The PEM sprig writes for a key (its `pemBlockForKey`).
fn canonical_pem(pkcs8: &[u8]) -> Option<String> {
    let (oid, params, inner) = pkcs8_parts(pkcs8)?;
    if oid == der::OID_RSA {
        Some(der::pem_encode("RSA PRIVATE KEY", inner))
    } else if oid == der::OID_EC {
        let curve = Reader::new(params).expect(der::TAG_OID)?;
        let sec1 = sec1_with_curve(pkcs8, curve)?;
        Some(der::pem_encode("EC PRIVATE KEY", &sec1))
    } else if oid == der::OID_ED25519 {
        let seed = Reader::new(inner).expect(der::TAG_OCTET_STRING)?;
        let canonical = der::seq(&[
            der::uint(&[0]),
            der::seq(&[der::tlv(der::TAG_OID, der::OID_ED25519)]),
            der::tlv(der::TAG_OCTET_STRING, &der::tlv(der::TAG_OCTET_STRING, seed)),
        ]);
        Some(der::pem_encode("PRIVATE KEY", &canonical))
    } else {
        None
    }
}

/// (algorithm OID, algorithm parameters, private key octets) of a PKCS#8 key.
fn pkcs8_parts(bytes: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let mut outer = Reader::new(bytes);
    let mut info = Reader::new(outer.expect(der::TAG_SEQUENCE)?);
    info.expect(der::TAG_INTEGER)?;
    let mut alg = Reader::new(info.expect(der::TAG_SEQUENCE)?);
    let oid = alg.expect(der::TAG_OID)?;
    let params = alg.remaining();
    let inner = info.expect(der::TAG_OCTET_STRING)?;
    Some((oid, params, inner))
}

fn pkcs8_algorithm(bytes: &[u8]) -> Result<(), String> {
    let (oid, _, _) = pkcs8_parts(bytes).ok_or("asn1: structure error: tags don't match")?;
    if oid == der::OID_RSA || oid == der::OID_EC || oid == der::OID_ED25519 {
        Ok(())
    } else {
        Err("x509: PKCS#8 wrapping contained private key with unknown algorithm".into())
    }
}

fn check_pkcs1(bytes: &[u8]) -> Option<()> {
    let mut outer = Reader::new(bytes);
    let mut key = Reader::new(outer.expect(der::TAG_SEQUENCE)?);
    for _ in 0..9 {
        key.expect(der::TAG_INTEGER)?;
    }
    Some(())
}

/// The named curve of a SEC1 ECPrivateKey (P-256 when the `[0]` field is absent).
fn sec1_curve(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut outer = Reader::new(bytes);
    let mut ec = Reader::new(outer.expect(der::TAG_SEQUENCE)?);
    ec.expect(der::TAG_INTEGER)?;
    ec.expect(der::TAG_OCTET_STRING)?;
    while let Some((tag, content)) = ec.next() {
        if tag == der::TAG_CONTEXT_0 {
            return Reader::new(content).expect(der::TAG_OID).map(<[u8]>::to_vec);
        }
    }
    Some(der::OID_P256.to_vec())
}

/// A DSA key with L=2048, N=256 parameters (`DSA PRIVATE KEY`: version, p, q, g, y, x).
///
/// Parameters are made as FIPS 186-3 describes: a prime q, then primes p ≡ 1 (mod 2q) tried
/// from random candidates, then a generator of the order-q subgroup.
pub fn generate_dsa(env: &FuncEnv) -> Result<PrivateKey, String> {
    use num_bigint_dig::BigUint;
    use num_bigint_dig::prime::probably_prime;
    const L: usize = 2048;
    const N: usize = 256;
    let random = |bits: usize, top: bool| {
        let mut bytes = vec![0u8; bits / 8];
        env.fill_random(&mut bytes);
        if top && let Some(b) = bytes.first_mut() {
            *b |= 0x80;
        }
        bytes
    };
    let q = loop {
        let mut bytes = random(N, true);
        if let Some(b) = bytes.last_mut() {
            *b |= 1;
        }
        let q = BigUint::from_bytes_be(&bytes);
        if probably_prime(&q, 64) {
            break q;
        }
    };
    let two_q = &q << 1usize;
    let one = BigUint::from(1u8);
    let p = 'outer: loop {
        for _ in 0..4 * L {
            let mut bytes = random(L, true);
            if let Some(b) = bytes.last_mut() {
                *b |= 1;
            }
            let x = BigUint::from_bytes_be(&bytes);
            let p = &x - (&x % &two_q) + &one;
            if p.bits() < L {
                continue;
            }
            if probably_prime(&p, 64) {
                break 'outer p;
            }
        }
    };
    let exponent = (&p - &one) / &q;
    let mut h = BigUint::from(2u8);
    let g = loop {
        let g = h.modpow(&exponent, &p);
        if g != one {
            break g;
        }
        h += &one;
    };
    let x = loop {
        let x = BigUint::from_bytes_be(&random(N, false));
        if x != BigUint::from(0u8) && x < q {
            break x;
        }
    };
    let y = g.modpow(&x, &p);
    let der = der::seq(&[
        der::uint(&[0]),
        der::uint(&p.to_bytes_be()),
        der::uint(&q.to_bytes_be()),
        der::uint(&g.to_bytes_be()),
        der::uint(&y.to_bytes_be()),
        der::uint(&x.to_bytes_be()),
    ]);
    Ok(PrivateKey {
        pem: der::pem_encode("DSA PRIVATE KEY", &der),
        // DSA keys cannot sign certificates (Go's x509 refuses them too).
        pkcs8: Vec::new(),
    })
}
