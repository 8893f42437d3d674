//! Sprig v3.3.0 functions: random strings, bytes, integers, UUIDs and `shuffle`.
//!
//! All randomness comes from [`FuncEnv`], so a seeded environment renders reproducibly.

use std::rc::Rc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::error::FuncError;
use crate::funcs::{Func, FuncEnv, FuncMap, arg_int, arg_str};
use capstan_go::value::{GoType, Value};

const ALPHA: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const ALPHANUM: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const NUMERIC: &[u8] = b"0123456789";

/// `count` characters drawn uniformly from `alphabet`; a negative count gives "" (sprig
/// drops the error goutils reports).
fn random_string(env: &FuncEnv, count: i64, alphabet: &[u8]) -> String {
    let Ok(count) = usize::try_from(count) else {
        return String::new();
    };
    (0..count)
        .map(|_| {
            let i = env.random_below(alphabet.len() as u64) as usize;
            char::from(alphabet.get(i).copied().unwrap_or(b'0'))
        })
        .collect()
}

/// Printable ASCII, space to tilde (goutils' `RandomAscii`).
fn ascii_alphabet() -> Vec<u8> {
    (32u8..127).collect()
}

fn rand_bytes(env: &FuncEnv, count: i64) -> Result<Value, FuncError> {
    let Ok(count) = usize::try_from(count) else {
        return Err(FuncError::msg("runtime error: makeslice: len out of range"));
    };
    let mut buf = vec![0u8; count];
    env.fill_random(&mut buf);
    Ok(Value::from(STANDARD.encode(buf)))
}

/// `randInt min max`: in `[min, max)`; an empty range panics in Go's `rand.Intn`.
fn rand_int(env: &FuncEnv, min: i64, max: i64) -> Result<Value, FuncError> {
    let span = max.checked_sub(min).filter(|&s| s > 0);
    let Some(span) = span else {
        return Err(FuncError::msg("invalid argument to Intn"));
    };
    Ok(Value::Int(min + env.random_below(span as u64) as i64))
}

/// A version 4 (random) UUID in lower-case hex groups.
fn uuid_v4(env: &FuncEnv) -> String {
    let mut b = [0u8; 16];
    env.fill_random(&mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// The characters of `s` in a random order (Fisher–Yates).
fn shuffle(env: &FuncEnv, s: &str) -> String {
    let mut chars: Vec<char> = s.chars().collect();
    for i in (1..chars.len()).rev() {
        let j = env.random_below(i as u64 + 1) as usize;
        chars.swap(i, j);
    }
    chars.into_iter().collect()
}

pub fn register(map: &mut FuncMap, env: &Rc<FuncEnv>) {
    use GoType::{Int, String as Str};
    let strings = [
        ("randAlphaNum", ALPHANUM.to_vec()),
        ("randAlpha", ALPHA.to_vec()),
        ("randNumeric", NUMERIC.to_vec()),
        ("randAscii", ascii_alphabet()),
    ];
    for (name, alphabet) in strings {
        let e = env.clone();
        map.insert(
            name,
            Func::pure(&[Int], move |a| {
                Ok(Value::from(random_string(&e, arg_int(&a[0]), &alphabet)))
            }),
        );
    }
    let e = env.clone();
    map.insert(
        "randBytes",
        Func::pure(&[Int], move |a| rand_bytes(&e, arg_int(&a[0]))),
    );
    let e = env.clone();
    map.insert(
        "randInt",
        Func::pure(&[Int, Int], move |a| rand_int(&e, arg_int(&a[0]), arg_int(&a[1]))),
    );
    let e = env.clone();
    map.insert("uuidv4", Func::pure(&[], move |_| Ok(Value::from(uuid_v4(&e)))));
    let e = env.clone();
    map.insert(
        "shuffle",
        Func::pure(&[Str], move |a| Ok(Value::from(shuffle(&e, arg_str(&a[0]))))),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_use_their_alphabet() {
        let env = FuncEnv::deterministic(5, 0);
        let s = random_string(&env, 200, ALPHANUM);
        assert_eq!(s.len(), 200);
        assert!(s.bytes().all(|c| c.is_ascii_alphanumeric()));
        assert!(
            random_string(&env, 50, NUMERIC)
                .bytes()
                .all(|c| c.is_ascii_digit())
        );
        assert!(
            random_string(&env, 50, &ascii_alphabet())
                .bytes()
                .all(|c| (32..127).contains(&c))
        );
        assert_eq!(random_string(&env, -1, ALPHA), "");
        assert_eq!(random_string(&env, 0, ALPHA), "");
    }

    #[test]
    fn seeded_environment_repeats() {
        let (a, b) = (FuncEnv::deterministic(9, 0), FuncEnv::deterministic(9, 0));
        assert_eq!(uuid_v4(&a), uuid_v4(&b));
        assert_eq!(shuffle(&a, "abcdef"), shuffle(&b, "abcdef"));
    }

    #[test]
    fn uuid_shape() {
        let u = uuid_v4(&FuncEnv::system());
        assert_eq!(u.len(), 36);
        assert_eq!(u.as_bytes()[14], b'4');
        assert!(matches!(u.as_bytes()[19], b'8' | b'9' | b'a' | b'b'));
    }

    #[test]
    fn ints_bytes_and_shuffle() {
        let env = FuncEnv::system();
        for _ in 0..50 {
            let Ok(Value::Int(n)) = rand_int(&env, 1, 3) else {
                panic!("randInt failed");
            };
            assert!((1..3).contains(&n));
        }
        assert!(rand_int(&env, 3, 3).is_err());
        let Ok(Value::String(b)) = rand_bytes(&env, 6) else {
            panic!("randBytes failed");
        };
        assert_eq!(STANDARD.decode(b.as_bytes()).map(|v| v.len()), Ok(6));
        assert!(rand_bytes(&env, -1).is_err());
        let sorted = |t: &str| {
            let mut v: Vec<char> = t.chars().collect();
            v.sort_unstable();
            v
        };
        assert_eq!(sorted(&shuffle(&env, "héllo")), sorted("héllo"));
    }
}
