//! Cosign's encrypted private-key file (the body of its `ENCRYPTED SIGSTORE PRIVATE KEY` PEM
//! block): JSON `{kdf: {name: "scrypt", params: {N, r, p}, salt}, cipher: {name:
//! "nacl/secretbox", nonce}, ciphertext}` with byte fields in standard base64. The key of the
//! NaCl secretbox (XSalsa20-Poly1305, its tag before the ciphertext) is scrypt of the password
//! and salt, 32 bytes; the plaintext is the PKCS#8 DER of the private key.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use crypto_secretbox::aead::{Aead, KeyInit};
use crypto_secretbox::{Key, Nonce, XSalsa20Poly1305};

/// `N = 2^16` as `cosign generate-key-pair` writes it today.
pub const COSIGN_LOG_N: u8 = 16;
/// The largest work factor read (`N = 2^20`): a file cannot make capstan spend gigabytes.
const MAX_LOG_N: u8 = 20;

#[derive(Debug, thiserror::Error)]
pub enum SealedError {
    #[error("not cosign's encrypted key JSON: {0}")]
    Format(String),
    #[error("unsupported {what} {name:?} (cosign writes scrypt and nacl/secretbox)")]
    Unsupported { what: &'static str, name: String },
    #[error("scrypt parameters N={n} r={r} p={p} are not accepted: {message}")]
    Params { n: u64, r: u32, p: u32, message: String },
    #[error("wrong password (COSIGN_PASSWORD), or the file is damaged")]
    WrongPassword,
    #[error("random bytes unavailable")]
    Random,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Sealed {
    kdf: Kdf,
    cipher: Cipher,
    ciphertext: String,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Kdf {
    name: String,
    params: Params,
    salt: String,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Params {
    #[serde(rename = "N")]
    n: u64,
    r: u32,
    p: u32,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Cipher {
    name: String,
    nonce: String,
}

fn b64(field: &str, text: &str) -> Result<Vec<u8>, SealedError> {
    STANDARD
        .decode(text)
        .map_err(|e| SealedError::Format(format!("{field}: not base64: {e}")))
}

fn derive(password: &[u8], salt: &[u8], params: &Params) -> Result<[u8; 32], SealedError> {
    let bad = |message: &str| SealedError::Params {
        n: params.n,
        r: params.r,
        p: params.p,
        message: message.to_string(),
    };
    if !params.n.is_power_of_two() || params.n < 2 {
        return Err(bad("N must be a power of two"));
    }
    let log_n = params.n.trailing_zeros() as u8;
    if log_n > MAX_LOG_N || params.r > 32 || params.p > 16 {
        return Err(bad("over the limits (N ≤ 2^20, r ≤ 32, p ≤ 16)"));
    }
    let scrypt_params =
        scrypt::Params::new(log_n, params.r, params.p, 32).map_err(|e| bad(&e.to_string()))?;
    let mut key = [0u8; 32];
    scrypt::scrypt(password, salt, &scrypt_params, &mut key).map_err(|e| bad(&e.to_string()))?;
    Ok(key)
}

/// The plaintext (PKCS#8 DER) of a sealed key file's JSON.
pub fn open(json: &[u8], password: &[u8]) -> Result<Vec<u8>, SealedError> {
    let sealed: Sealed = serde_json::from_slice(json).map_err(|e| SealedError::Format(e.to_string()))?;
    if sealed.kdf.name != "scrypt" {
        return Err(SealedError::Unsupported {
            what: "key derivation",
            name: sealed.kdf.name,
        });
    }
    if sealed.cipher.name != "nacl/secretbox" {
        return Err(SealedError::Unsupported {
            what: "cipher",
            name: sealed.cipher.name,
        });
    }
    let salt = b64("kdf.salt", &sealed.kdf.salt)?;
    let nonce = b64("cipher.nonce", &sealed.cipher.nonce)?;
    if nonce.len() != 24 {
        return Err(SealedError::Format(format!(
            "cipher.nonce: {} bytes, secretbox takes 24",
            nonce.len()
        )));
    }
    let ciphertext = b64("ciphertext", &sealed.ciphertext)?;
    let key = derive(password, &salt, &sealed.kdf.params)?;
    XSalsa20Poly1305::new(Key::from_slice(&key))
        .decrypt(Nonce::from_slice(&nonce), ciphertext.as_slice())
        .map_err(|_| SealedError::WrongPassword)
}

/// `plaintext` sealed under `password` with a fresh salt and nonce, `N = 2^log_n`, r = 8,
/// p = 1: the JSON cosign writes.
pub fn seal(plaintext: &[u8], password: &[u8], log_n: u8) -> Result<Vec<u8>, SealedError> {
    let mut salt = [0u8; 32];
    let mut nonce = [0u8; 24];
    aws_lc_rs::rand::fill(&mut salt).map_err(|_| SealedError::Random)?;
    aws_lc_rs::rand::fill(&mut nonce).map_err(|_| SealedError::Random)?;
    let params = Params {
        n: 1u64 << log_n,
        r: 8,
        p: 1,
    };
    let key = derive(password, &salt, &params)?;
    let ciphertext = XSalsa20Poly1305::new(Key::from_slice(&key))
        .encrypt(Nonce::from_slice(&nonce), plaintext)
        .map_err(|_| SealedError::Random)?;
    let sealed = Sealed {
        kdf: Kdf {
            name: "scrypt".into(),
            params,
            salt: STANDARD.encode(salt),
        },
        cipher: Cipher {
            name: "nacl/secretbox".into(),
            nonce: STANDARD.encode(nonce),
        },
        ciphertext: STANDARD.encode(ciphertext),
    };
    serde_json::to_vec(&sealed).map_err(|e| SealedError::Format(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_opens_only_with_its_password() {
        let sealed = seal(b"secret der", b"pw", 4).unwrap();
        assert_eq!(open(&sealed, b"pw").unwrap(), b"secret der");
        assert!(matches!(open(&sealed, b"pW"), Err(SealedError::WrongPassword)));
    }

    #[test]
    fn files_out_of_bounds_are_refused() {
        let with = |n: u64, kdf: &str, cipher: &str| {
            serde_json::json!({
                "kdf": {"name": kdf, "params": {"N": n, "r": 8, "p": 1}, "salt": "AAAA"},
                "cipher": {"name": cipher, "nonce": STANDARD.encode([0u8; 24])},
                "ciphertext": "AAAA"
            })
            .to_string()
        };
        let table = [
            (with(1 << 30, "scrypt", "nacl/secretbox"), "over the limits"),
            (with(1000, "scrypt", "nacl/secretbox"), "power of two"),
            (with(16, "pbkdf2", "nacl/secretbox"), "unsupported key derivation"),
            (with(16, "scrypt", "aes"), "unsupported cipher"),
            ("{}".to_string(), "not cosign's encrypted key JSON"),
        ];
        for (json, want) in table {
            let err = open(json.as_bytes(), b"pw").unwrap_err().to_string();
            assert!(err.contains(want), "{err}");
        }
    }
}
