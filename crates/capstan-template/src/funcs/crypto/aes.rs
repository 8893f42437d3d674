//! `encryptAES`/`decryptAES`: AES-256-CBC with a zero-padded 32-byte key, PKCS#7 padding,
//! the IV prepended, base64 outside.

use aes::Aes256;
use aes::cipher::{BlockDecrypt, BlockEncrypt, KeyInit, generic_array::GenericArray};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::funcs::FuncEnv;

const BLOCK: usize = 16;

/// The key: the password's bytes, truncated or zero-padded to 32.
fn cipher(password: &str) -> Aes256 {
    let mut key = [0u8; 32];
    for (k, b) in key.iter_mut().zip(password.as_bytes()) {
        *k = *b;
    }
    Aes256::new(GenericArray::from_slice(&key))
}

pub fn encrypt(env: &FuncEnv, password: &str, plaintext: &str) -> String {
    let aes = cipher(password);
    let mut content = plaintext.as_bytes().to_vec();
    let padding = BLOCK - content.len() % BLOCK;
    content.extend(std::iter::repeat_n(padding as u8, padding));
    let mut out = vec![0u8; BLOCK];
    env.fill_random(&mut out);
    let mut prev = [0u8; BLOCK];
    prev.copy_from_slice(&out);
    for chunk in content.chunks(BLOCK) {
        let mut block = GenericArray::clone_from_slice(chunk);
        for (b, p) in block.iter_mut().zip(prev.iter()) {
            *b ^= p;
        }
        aes.encrypt_block(&mut block);
        prev.copy_from_slice(&block);
        out.extend_from_slice(&block);
    }
    STANDARD.encode(out)
}

/// Errors reproduce what Go reports, including the runtime panics sprig does not guard
/// against (short input, bad padding byte).
pub fn decrypt(password: &str, crypt64: &str) -> Result<String, String> {
    let data = STANDARD
        .decode(crypt64.as_bytes())
        .map_err(|e| base64_error(crypt64, &e))?;
    let aes = cipher(password);
    if data.len() < BLOCK {
        return Err(format!(
            "runtime error: slice bounds out of range [:{BLOCK}] with capacity {}",
            data.len()
        ));
    }
    let (iv, body) = data.split_at(BLOCK);
    if body.len() % BLOCK != 0 {
        return Err("crypto/cipher: input not full blocks".into());
    }
    let mut prev = [0u8; BLOCK];
    prev.copy_from_slice(iv);
    let mut plain = Vec::with_capacity(body.len());
    for chunk in body.chunks(BLOCK) {
        let mut block = GenericArray::clone_from_slice(chunk);
        aes.decrypt_block(&mut block);
        for (b, p) in block.iter_mut().zip(prev.iter()) {
            *b ^= p;
        }
        prev.copy_from_slice(chunk);
        plain.extend_from_slice(&block);
    }
    let Some(&last) = plain.last() else {
        return Err("runtime error: index out of range [-1]".into());
    };
    let keep = plain.len() as i64 - i64::from(last);
    let Ok(keep) = usize::try_from(keep) else {
        return Err(format!("runtime error: slice bounds out of range [:{keep}]"));
    };
    plain.truncate(keep);
    Ok(String::from_utf8_lossy(&plain).into_owned())
}

/// Go's `base64.CorruptInputError` text: the offset of the first bad input byte.
fn base64_error(input: &str, e: &base64::DecodeError) -> String {
    let offset = match e {
        base64::DecodeError::InvalidByte(i, _) | base64::DecodeError::InvalidLastSymbol { offset: i, .. } => {
            *i
        }
        base64::DecodeError::InvalidLength(n) => *n,
        base64::DecodeError::InvalidPadding => input.len(),
    };
    format!("illegal base64 data at input byte {offset}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_errors_match_helm() {
        let env = FuncEnv::deterministic(3, 0);
        for text in ["plaintext", "", "0123456789abcdef"] {
            let enc = encrypt(&env, "secretkey", text);
            assert_eq!(decrypt("secretkey", &enc).as_deref(), Ok(text));
        }
        assert_eq!(
            STANDARD
                .decode(encrypt(&env, "k", "0123456789abcdef"))
                .map(|b| b.len()),
            Ok(48)
        );
        let long = "k".repeat(40);
        assert_eq!(decrypt(&long, &encrypt(&env, &long, "x")).as_deref(), Ok("x"));
        assert_eq!(
            decrypt("k", "AAAAAAAAAAAAAAAAAAAAAA=="),
            Err("runtime error: index out of range [-1]".into())
        );
        assert_eq!(
            decrypt("k", "AAAA"),
            Err("runtime error: slice bounds out of range [:16] with capacity 3".into())
        );
        assert_eq!(
            decrypt("k", "AAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
            Err("crypto/cipher: input not full blocks".into())
        );
        assert_eq!(
            decrypt("k", "!!!"),
            Err("illegal base64 data at input byte 0".into())
        );
    }
}
