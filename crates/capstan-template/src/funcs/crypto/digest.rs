//! Hashes and password functions: `sha1sum`, `sha256sum`, `sha512sum`, `adler32sum`,
//! `bcrypt`, `htpasswd`, `derivePassword`.

use std::fmt::Write;

use aws_lc_rs::digest;

use crate::funcs::FuncEnv;

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

pub fn sha1sum(s: &[u8]) -> String {
    hex(digest::digest(&digest::SHA1_FOR_LEGACY_USE_ONLY, s).as_ref())
}

pub fn sha256sum(s: &[u8]) -> String {
    hex(digest::digest(&digest::SHA256, s).as_ref())
}

pub fn sha512sum(s: &[u8]) -> String {
    hex(digest::digest(&digest::SHA512, s).as_ref())
}

/// Adler-32 as a decimal number.
pub fn adler32sum(s: &[u8]) -> String {
    const MOD: u32 = 65521;
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in s.chunks(5552) {
        for &byte in chunk {
            a += u32::from(byte);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    ((b << 16) | a).to_string()
}

/// Go's bcrypt with the default cost 10 and a `$2a$` prefix; errors become the output text.
pub fn bcrypt(env: &FuncEnv, password: &str) -> String {
    match bcrypt_hash(env, password) {
        Ok(h) => h,
        Err(e) => format!("failed to encrypt string with bcrypt: {e}"),
    }
}

fn bcrypt_hash(env: &FuncEnv, password: &str) -> Result<String, String> {
    if password.len() > 72 {
        return Err("bcrypt: password length exceeds 72 bytes".into());
    }
    let mut salt = [0u8; 16];
    env.fill_random(&mut salt);
    let parts = bcrypt::hash_with_salt(password.as_bytes(), 10, salt).map_err(|e| e.to_string())?;
    Ok(parts.format_for_version(bcrypt::Version::TwoA))
}

/// `htpasswd user pass`: `user:<bcrypt>`; a user name with `:` is refused in the output.
pub fn htpasswd(env: &FuncEnv, user: &str, password: &str) -> String {
    if user.contains(':') {
        return format!("invalid username: {user}");
    }
    format!("{user}:{}", bcrypt(env, password))
}

/// The Master Password templates of each password type.
fn templates(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "maximum" => &["anoxxxxxxxxxxxxxxxxx", "axxxxxxxxxxxxxxxxxno"],
        "long" => &[
            "CvcvnoCvcvCvcv",
            "CvcvCvcvnoCvcv",
            "CvcvCvcvCvcvno",
            "CvccnoCvcvCvcv",
            "CvccCvcvnoCvcv",
            "CvccCvcvCvcvno",
            "CvcvnoCvccCvcv",
            "CvcvCvccnoCvcv",
            "CvcvCvccCvcvno",
            "CvcvnoCvcvCvcc",
            "CvcvCvcvnoCvcc",
            "CvcvCvcvCvccno",
            "CvccnoCvccCvcv",
            "CvccCvccnoCvcv",
            "CvccCvccCvcvno",
            "CvcvnoCvccCvcc",
            "CvcvCvccnoCvcc",
            "CvcvCvccCvccno",
            "CvccnoCvcvCvcc",
            "CvccCvcvnoCvcc",
            "CvccCvcvCvccno",
        ],
        "medium" => &["CvcnoCvc", "CvcCvcno"],
        "short" => &["Cvcn"],
        "basic" => &["aaanaaan", "aannaaan", "aaannaaa"],
        "pin" => &["nnnn"],
        _ => return None,
    })
}

/// The characters a template class letter stands for.
fn class_chars(class: u8) -> &'static [u8] {
    match class {
        b'V' => b"AEIOU",
        b'C' => b"BCDFGHJKLMNPQRSTVWXYZ",
        b'v' => b"aeiou",
        b'c' => b"bcdfghjklmnpqrstvwxyz",
        b'A' => b"AEIOUBCDFGHJKLMNPQRSTVWXYZ",
        b'a' => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz",
        b'n' => b"0123456789",
        b'o' => b"@&%?,=[]_:-+*$#!'^~;()/.",
        b'x' => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz0123456789!@#$%^&*()",
        _ => b"",
    }
}

const MASTER_PASSWORD_SCOPE: &[u8] = b"com.lyndir.masterpassword";

/// `derivePassword counter type password user site`: the Master Password algorithm
/// (scrypt master key N=32768 r=8 p=2, HMAC-SHA256 site seed, template characters).
pub fn derive_password(counter: u32, kind: &str, password: &str, user: &str, site: &str) -> String {
    let Some(templates) = templates(kind) else {
        return format!("cannot find password template {kind}");
    };
    let mut salt = MASTER_PASSWORD_SCOPE.to_vec();
    salt.extend_from_slice(&(user.len() as u32).to_be_bytes());
    salt.extend_from_slice(user.as_bytes());
    let mut key = [0u8; 64];
    let derived = scrypt::Params::new(15, 8, 2, 64)
        .map_err(|e| e.to_string())
        .and_then(|params| {
            scrypt::scrypt(password.as_bytes(), &salt, &params, &mut key).map_err(|e| e.to_string())
        });
    if let Err(e) = derived {
        return format!("failed to derive password: {e}");
    }
    let mut message = MASTER_PASSWORD_SCOPE.to_vec();
    message.extend_from_slice(&(site.len() as u32).to_be_bytes());
    message.extend_from_slice(site.as_bytes());
    message.extend_from_slice(&counter.to_be_bytes());
    let hmac_key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, &key);
    let seed = aws_lc_rs::hmac::sign(&hmac_key, &message);
    let seed = seed.as_ref();
    let first = usize::from(seed.first().copied().unwrap_or(0));
    let template = templates[first % templates.len()];
    template
        .bytes()
        .enumerate()
        .filter_map(|(i, class)| {
            let chars = class_chars(class);
            let pick = usize::from(seed.get(i + 1).copied().unwrap_or(0));
            chars.get(pick % chars.len().max(1)).map(|&c| char::from(c))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_match_helm() {
        assert_eq!(sha1sum(b"abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
        assert_eq!(
            sha256sum(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert!(sha512sum(b"abc").starts_with("ddaf35a193617aba"));
        assert_eq!(adler32sum(b"abc"), "38600999");
        assert_eq!(adler32sum(b""), "1");
    }

    #[test]
    fn derive_password_matches_helm() {
        assert_eq!(
            derive_password(1, "long", "password", "user", "example.com"),
            "ZedaFaxcZaso9*"
        );
        assert_eq!(
            derive_password(2, "maximum", "pw", "u", "s"),
            "S2$TYTKe9bU9YXWCqT@%"
        );
        assert_eq!(derive_password(3, "medium", "pw", "u", "s"), "Yun9!Fir");
        assert_eq!(derive_password(4, "short", "pw", "u", "s"), "Han2");
        assert_eq!(derive_password(5, "basic", "pw", "u", "s"), "FiB08GFi");
        assert_eq!(derive_password(6, "pin", "pw", "u", "s"), "9870");
        assert_eq!(
            derive_password(0, "maximum", "pässwörd", "ü", "日本"),
            "zqWObC3*P(3TgpQOr60&"
        );
        assert_eq!(
            derive_password(1, "nope", "pw", "u", "s"),
            "cannot find password template nope"
        );
    }

    #[test]
    fn bcrypt_verifies_and_limits_length() {
        let env = FuncEnv::deterministic(1, 0);
        let h = bcrypt(&env, "pass");
        assert!(h.starts_with("$2a$10$"), "{h}");
        assert_eq!(h.len(), 60);
        assert!(::bcrypt::verify("pass", &h).unwrap_or(false));
        assert_eq!(
            bcrypt(&env, &"a".repeat(73)),
            "failed to encrypt string with bcrypt: bcrypt: password length exceeds 72 bytes"
        );
        assert!(htpasswd(&env, "user", "pass").starts_with("user:$2a$10$"));
        assert_eq!(htpasswd(&env, "us:er", "pass"), "invalid username: us:er");
    }
}
