//! The keys of cosign's keyed signatures: ECDSA P-256 with SHA-256, public keys as PEM
//! `PUBLIC KEY` (X.509 SubjectPublicKeyInfo, what `cosign generate-key-pair` writes as
//! `cosign.pub`), private keys as cosign's encrypted file ([`super::sealed`]) or unencrypted
//! PKCS#8 / SEC1 PEM. The crypto is aws-lc-rs, the crate's one provider.

use aws_lc_rs::encoding::{AsDer, PublicKeyX509Der};
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_ASN1, ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair, UnparsedPublicKey,
};
use sha2::{Digest, Sha256};

use super::sealed::{self, SealedError};

/// A key file that cannot be used; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{origin}: not a PEM file: {message}")]
    NotPem { origin: String, message: String },
    #[error("{origin}: a PEM block {found:?}, expected {expected}")]
    WrongBlock {
        origin: String,
        found: String,
        expected: &'static str,
    },
    #[error("{origin}: not an ECDSA P-256 key (cosign's keys are P-256): {message}")]
    NotP256 { origin: String, message: String },
    #[error("{origin}: the key is encrypted; give its password in COSIGN_PASSWORD")]
    NoPassword { origin: String },
    #[error("{origin}: {source}")]
    Sealed {
        origin: String,
        #[source]
        source: SealedError,
    },
    #[error("signing failed")]
    Sign,
}

/// A public key that verifies signatures: its SubjectPublicKeyInfo DER, parsed once to check it
/// is a P-256 key.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey {
    spki: Vec<u8>,
    fingerprint: String,
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({})", self.fingerprint)
    }
}

impl PublicKey {
    /// A PEM `PUBLIC KEY` block; `origin` (the file) names it in errors.
    pub fn from_pem(text: &[u8], origin: &str) -> Result<PublicKey, KeyError> {
        let block = pem::parse(text).map_err(|e| KeyError::NotPem {
            origin: origin.to_string(),
            message: e.to_string(),
        })?;
        if block.tag() != "PUBLIC KEY" {
            return Err(KeyError::WrongBlock {
                origin: origin.to_string(),
                found: block.tag().to_string(),
                expected: "PUBLIC KEY",
            });
        }
        PublicKey::from_spki(block.contents().to_vec(), origin)
    }

    /// SubjectPublicKeyInfo DER of a P-256 key.
    pub fn from_spki(spki: Vec<u8>, origin: &str) -> Result<PublicKey, KeyError> {
        aws_lc_rs::signature::ParsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, &spki).map_err(|e| {
            KeyError::NotP256 {
                origin: origin.to_string(),
                message: e.to_string(),
            }
        })?;
        let fingerprint = format!("sha256:{}", crate::cache::hex(&Sha256::digest(&spki)));
        Ok(PublicKey { spki, fingerprint })
    }

    /// `sha256:<hex>` of the SubjectPublicKeyInfo DER: who signed, as recorded.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The PEM `PUBLIC KEY` text (what `cosign.pub` holds).
    pub fn to_pem(&self) -> String {
        pem::encode(&pem::Pem::new("PUBLIC KEY", self.spki.clone()))
    }

    /// Whether `signature` (ASN.1 DER ECDSA) signs `message` (hashed with SHA-256).
    pub fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        self.verifies_signed(Signed::Message(message), signature)
    }

    /// Whether `signature` signs `signed` (a message, or only its SHA-256).
    pub fn verifies_signed(&self, signed: Signed<'_>, signature: &[u8]) -> bool {
        signed.verifies(&ECDSA_P256_SHA256_ASN1, &self.spki, signature)
    }
}

/// What a signature signs: a message (hashed with SHA-256 when verified), or only the SHA-256
/// of one (a Sigstore bundle's message signature carries the digest, not the artifact).
#[derive(Clone, Copy, Debug)]
pub enum Signed<'a> {
    Message(&'a [u8]),
    Sha256(&'a [u8]),
}

impl Signed<'_> {
    /// Whether `signature` (DER) verifies under `spki` with `algorithm` (a SHA-256 one for
    /// `Sha256`: a digest of another length never verifies).
    pub(crate) fn verifies(
        &self,
        algorithm: &'static dyn aws_lc_rs::signature::VerificationAlgorithm,
        spki: &[u8],
        signature: &[u8],
    ) -> bool {
        let key = UnparsedPublicKey::new(algorithm, spki);
        match self {
            Signed::Message(message) => key.verify(message, signature).is_ok(),
            Signed::Sha256(digest) => {
                aws_lc_rs::digest::Digest::import_less_safe(digest, &aws_lc_rs::digest::SHA256)
                    .is_ok_and(|d| key.verify_digest(&d, signature).is_ok())
            }
        }
    }
}

/// A private key that signs.
pub struct SigningKey {
    pair: EcdsaKeyPair,
    public: PublicKey,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SigningKey({})", self.public.fingerprint)
    }
}

/// The PEM labels of cosign's encrypted key file (current and before cosign 1.x's rename).
const SEALED_TAGS: [&str; 2] = ["ENCRYPTED SIGSTORE PRIVATE KEY", "ENCRYPTED COSIGN PRIVATE KEY"];

impl SigningKey {
    /// A private key file: cosign's encrypted one (opened with `password`), or an unencrypted
    /// `PRIVATE KEY` (PKCS#8) or `EC PRIVATE KEY` (SEC1).
    pub fn from_pem(text: &[u8], password: Option<&[u8]>, origin: &str) -> Result<SigningKey, KeyError> {
        let block = pem::parse(text).map_err(|e| KeyError::NotPem {
            origin: origin.to_string(),
            message: e.to_string(),
        })?;
        let not_p256 = |e: aws_lc_rs::error::KeyRejected| KeyError::NotP256 {
            origin: origin.to_string(),
            message: e.to_string(),
        };
        let pair = match block.tag() {
            tag if SEALED_TAGS.contains(&tag) => {
                let password = password.ok_or_else(|| KeyError::NoPassword {
                    origin: origin.to_string(),
                })?;
                let der = sealed::open(block.contents(), password).map_err(|source| KeyError::Sealed {
                    origin: origin.to_string(),
                    source,
                })?;
                EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &der).map_err(not_p256)?
            }
            "PRIVATE KEY" => EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, block.contents())
                .map_err(not_p256)?,
            "EC PRIVATE KEY" => {
                EcdsaKeyPair::from_private_key_der(&ECDSA_P256_SHA256_ASN1_SIGNING, block.contents())
                    .map_err(not_p256)?
            }
            other => {
                return Err(KeyError::WrongBlock {
                    origin: origin.to_string(),
                    found: other.to_string(),
                    expected: "ENCRYPTED SIGSTORE PRIVATE KEY, PRIVATE KEY or EC PRIVATE KEY",
                });
            }
        };
        let spki: PublicKeyX509Der<'static> =
            AsDer::as_der(pair.public_key()).map_err(|_| KeyError::NotP256 {
                origin: origin.to_string(),
                message: "its public key cannot be encoded".into(),
            })?;
        let spki = spki.as_ref().to_vec();
        let public = PublicKey::from_spki(spki, origin)?;
        Ok(SigningKey { pair, public })
    }

    /// A new random key (tests, and fixtures made by capstan).
    pub fn generate() -> Result<SigningKey, KeyError> {
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &SystemRandom::new())
            .map_err(|_| KeyError::Sign)?;
        let text = pem::encode(&pem::Pem::new("PRIVATE KEY", doc.as_ref().to_vec()));
        SigningKey::from_pem(text.as_bytes(), None, "generated key")
    }

    /// The unencrypted PKCS#8 PEM of this key.
    pub fn to_pkcs8_pem(&self) -> Result<String, KeyError> {
        let doc = self.pair.to_pkcs8v1().map_err(|_| KeyError::Sign)?;
        Ok(pem::encode(&pem::Pem::new("PRIVATE KEY", doc.as_ref().to_vec())))
    }

    /// Cosign's encrypted key file of this key under `password`.
    pub fn to_sealed_pem(&self, password: &[u8]) -> Result<String, KeyError> {
        let doc = self.pair.to_pkcs8v1().map_err(|_| KeyError::Sign)?;
        let sealed = sealed::seal(doc.as_ref(), password, sealed::COSIGN_LOG_N).map_err(|source| {
            KeyError::Sealed {
                origin: "generated key".into(),
                source,
            }
        })?;
        Ok(pem::encode(&pem::Pem::new(SEALED_TAGS[0], sealed)))
    }

    pub fn public_key(&self) -> &PublicKey {
        &self.public
    }

    /// The ASN.1 DER ECDSA signature of `message` (SHA-256), as cosign makes it.
    pub fn sign(&self, message: &[u8]) -> Result<Vec<u8>, KeyError> {
        let sig = self
            .pair
            .sign(&SystemRandom::new(), message)
            .map_err(|_| KeyError::Sign)?;
        Ok(sig.as_ref().to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_only_under_its_key_and_message() {
        let key = SigningKey::generate().unwrap();
        let other = SigningKey::generate().unwrap();
        let sig = key.sign(b"payload").unwrap();
        assert!(key.public_key().verifies(b"payload", &sig));
        assert!(!key.public_key().verifies(b"payloaD", &sig));
        assert!(!other.public_key().verifies(b"payload", &sig));
        assert_ne!(key.public_key().fingerprint(), other.public_key().fingerprint());
    }

    #[test]
    fn keys_read_back_from_their_pem() {
        let key = SigningKey::generate().unwrap();
        let public = PublicKey::from_pem(key.public_key().to_pem().as_bytes(), "cosign.pub").unwrap();
        assert_eq!(&public, key.public_key());
        let plain = SigningKey::from_pem(key.to_pkcs8_pem().unwrap().as_bytes(), None, "k").unwrap();
        assert_eq!(plain.public_key(), key.public_key());
        // A small work factor keeps the test fast; the format is the same.
        let doc = key.pair.to_pkcs8v1().unwrap();
        let sealed = sealed::seal(doc.as_ref(), b"pw", 4).unwrap();
        let text = pem::encode(&pem::Pem::new(SEALED_TAGS[0], sealed));
        let opened = SigningKey::from_pem(text.as_bytes(), Some(b"pw"), "cosign.key").unwrap();
        assert_eq!(opened.public_key(), key.public_key());
        let err = SigningKey::from_pem(text.as_bytes(), None, "cosign.key").unwrap_err();
        assert!(matches!(err, KeyError::NoPassword { .. }), "{err}");
        let err = SigningKey::from_pem(text.as_bytes(), Some(b"wrong"), "cosign.key").unwrap_err();
        assert!(err.to_string().contains("cosign.key: wrong password"), "{err}");
    }

    #[test]
    fn other_files_are_refused_with_their_name() {
        let table: &[(&[u8], &str)] = &[
            (b"not pem", "k.pub: not a PEM file"),
            (
                b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
                "k.pub: a PEM block \"CERTIFICATE\"",
            ),
            (
                b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
                "k.pub: not an ECDSA P-256 key",
            ),
        ];
        for (text, want) in table {
            let err = PublicKey::from_pem(text, "k.pub").unwrap_err().to_string();
            assert!(err.starts_with(want), "{err}");
        }
    }
}
