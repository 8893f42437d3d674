//! Encoding functions: sprig's `b64enc b64dec b32enc b32dec toPrettyJson toRawJson
//! mustFromJson …` and Helm's overrides `toJson mustToJson fromJson fromJsonArray toYaml
//! mustToYaml toYamlPretty fromYaml fromYamlArray toToml mustToToml`, with Helm's error
//! behaviour (most swallow errors into "" or an `Error` entry; `must*` variants raise them).

use std::collections::BTreeMap;
use std::rc::Rc;

use base64::Engine as _;

use crate::encoding::json::{self, JsonError, Style};
use crate::encoding::{toml_emit, yaml_emit};
use crate::template::error::FuncError;
use crate::template::funcs::{FuncEnv, FuncMap, arg_str, helm};
use crate::template::value::{GoType, Value};

pub fn register(map: &mut FuncMap, env: &Rc<FuncEnv>) {
    let _ = env;
    use crate::template::funcs::Func;
    use GoType::{Any, String};
    let string_fn = |f: fn(&str) -> std::string::String| {
        Func::pure(&[String], move |args| Ok(Value::from(f(arg_str(&args[0])))))
    };
    map.insert(
        "b64enc",
        string_fn(|s| base64::engine::general_purpose::STANDARD.encode(s)),
    );
    map.insert("b64dec", string_fn(|s| lossy(b64_decode(s))));
    map.insert("b32enc", string_fn(|s| b32_encode(s.as_bytes())));
    map.insert("b32dec", string_fn(|s| lossy(b32_decode(s))));

    let any_fn = |f: fn(&Value) -> Result<Value, FuncError>| Func::pure(&[Any], move |args| f(&args[0]));
    map.insert(
        "toJson",
        any_fn(|v| Ok(Value::from(json::marshal(v).unwrap_or_default()))),
    );
    map.insert(
        "mustToJson",
        any_fn(|v| Ok(Value::from(json::marshal(v).map_err(err)?))),
    );
    map.insert(
        "toPrettyJson",
        any_fn(|v| Ok(Value::from(json::encode(v, PRETTY).unwrap_or_default()))),
    );
    map.insert(
        "mustToPrettyJson",
        any_fn(|v| Ok(Value::from(json::encode(v, PRETTY).map_err(err)?))),
    );
    // sprig's toRawJson panics on error; text/template turns the panic into an error.
    for name in ["toRawJson", "mustToRawJson"] {
        map.insert(
            name,
            any_fn(|v| Ok(Value::from(json::encode(v, RAW).map_err(err)?))),
        );
    }

    map.insert(
        "fromJson",
        Func::pure(&[String], |args| Ok(from_json_map(arg_str(&args[0])))),
    );
    map.insert(
        "fromJsonArray",
        Func::pure(&[String], |args| Ok(from_json_array(arg_str(&args[0])))),
    );
    map.insert(
        "mustFromJson",
        Func::pure(&[String], |args| json::unmarshal(arg_str(&args[0])).map_err(err)),
    );

    map.insert("toYaml", any_fn(|v| Ok(Value::from(helm::to_yaml_trimmed(v)))));
    map.insert(
        "mustToYaml",
        any_fn(|v| {
            let text = yaml_emit::marshal(v).map_err(err)?;
            Ok(Value::from(trim_newline(&text)))
        }),
    );
    map.insert(
        "toYamlPretty",
        any_fn(|v| {
            let text = yaml_emit::marshal_pretty(v).unwrap_or_default();
            Ok(Value::from(trim_newline(&text)))
        }),
    );
    map.insert(
        "toToml",
        any_fn(|v| {
            Ok(Value::from(
                toml_emit::encode(v).unwrap_or_else(|e| e.to_string()),
            ))
        }),
    );
    map.insert(
        "mustToToml",
        any_fn(|v| Ok(Value::from(toml_emit::encode(v).map_err(err)?))),
    );
}

const PRETTY: Style = Style {
    escape_html: true,
    pretty: true,
};
const RAW: Style = Style {
    escape_html: false,
    pretty: false,
};

fn err(e: impl std::fmt::Display) -> FuncError {
    FuncError::msg(e.to_string())
}

fn trim_newline(s: &str) -> String {
    s.strip_suffix('\n').unwrap_or(s).to_string()
}

/// Go's `string(bytes)` can hold invalid UTF-8; ours cannot, so bad bytes become U+FFFD.
fn lossy(r: Result<Vec<u8>, String>) -> String {
    match r {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(msg) => msg,
    }
}

/// Helm's `fromJson`: the decoded object, or `{"Error": <Go's message>}`.
pub fn from_json_map(text: &str) -> Value {
    match json::unmarshal(text) {
        Ok(Value::Map(m)) => Value::Map(m),
        Ok(Value::Nil) => Value::empty_map(),
        Ok(other) => error_map(&type_error(&other, "map[string]interface {}")),
        Err(e) => error_map(&e.to_string()),
    }
}

/// Helm's `fromJsonArray`: the decoded array, or a one-element list holding the error.
pub fn from_json_array(text: &str) -> Value {
    match json::unmarshal(text) {
        Ok(v @ Value::List(_)) => v,
        Ok(Value::Nil) => Value::list(Vec::new()),
        Ok(other) => Value::list(vec![Value::from(type_error(&other, "[]interface {}"))]),
        Err(e) => Value::list(vec![Value::from(e.to_string())]),
    }
}

fn type_error(v: &Value, go_type: &str) -> String {
    JsonError::Decode(format!(
        "json: cannot unmarshal {} into Go value of type {go_type}",
        json::kind_word(v)
    ))
    .to_string()
}

fn error_map(msg: &str) -> Value {
    Value::map(BTreeMap::from([("Error".to_string(), Value::from(msg))]))
}

// ---------------------------------------------------------------------------------------------
// base64 / base32 decoding with Go's `CorruptInputError` offsets

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// Go's `base64.StdEncoding.DecodeString`, the error as `illegal base64 data at input byte N`.
pub fn b64_decode(s: &str) -> Result<Vec<u8>, String> {
    decode_blocks(s.as_bytes(), B64, 4, 6, "base64")
}

/// Go's `base32.StdEncoding.DecodeString`.
pub fn b32_decode(s: &str) -> Result<Vec<u8>, String> {
    decode_blocks(s.as_bytes(), B32, 8, 5, "base32")
}

/// Go's `base32.StdEncoding.EncodeToString`.
pub fn b32_encode(data: &[u8]) -> String {
    let mut out = String::new();
    for chunk in data.chunks(5) {
        let mut buf = [0u8; 5];
        buf[..chunk.len()].copy_from_slice(chunk);
        let bits = buf.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
        let symbols = (chunk.len() * 8).div_ceil(5);
        for i in 0..8 {
            if i < symbols {
                let idx = ((bits >> (35 - 5 * i)) & 31) as usize;
                out.push(char::from(B32[idx]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A padded base-2^bits decoder over `quantum`-symbol blocks, skipping `\r`/`\n`, reporting
/// the byte offsets Go's decoders report.
fn decode_blocks(
    src: &[u8],
    alphabet: &[u8],
    quantum: usize,
    bits: u32,
    name: &str,
) -> Result<Vec<u8>, String> {
    let corrupt = |at: usize| format!("illegal {name} data at input byte {at}");
    let lookup = |c: u8| alphabet.iter().position(|&a| a == c);
    let is_nl = |c: u8| c == b'\n' || c == b'\r';
    let mut out = Vec::new();
    let mut si = 0;
    loop {
        let mut vals = Vec::with_capacity(quantum);
        let mut dlen = quantum;
        let mut done = false;
        let mut j = 0;
        while j < quantum {
            let Some(&c) = src.get(si) else {
                if j == 0 {
                    return Ok(out);
                }
                return Err(corrupt(si - j));
            };
            si += 1;
            if let Some(v) = lookup(c) {
                vals.push(v as u64);
                j += 1;
                continue;
            }
            if is_nl(c) {
                continue;
            }
            if c != b'=' {
                return Err(corrupt(si - 1));
            }
            // Padding: the block ends here and must be completed with `=`.
            let valid_at = if quantum == 4 {
                j >= 2
            } else {
                matches!(j, 2 | 4 | 5 | 7)
            };
            if !valid_at {
                return Err(corrupt(si - 1));
            }
            for _ in j + 1..quantum {
                while src.get(si).copied().is_some_and(is_nl) {
                    si += 1;
                }
                match src.get(si) {
                    None => return Err(corrupt(src.len())),
                    Some(b'=') => si += 1,
                    Some(_) => return Err(corrupt(si - 1)),
                }
            }
            while src.get(si).copied().is_some_and(is_nl) {
                si += 1;
            }
            if si < src.len() {
                return Err(corrupt(si));
            }
            dlen = j;
            done = true;
            break;
        }
        let acc =
            vals.iter().fold(0u64, |acc, &v| (acc << bits) | v) << (bits * (quantum - vals.len()) as u32);
        let total_bytes = quantum * bits as usize / 8;
        let n = dlen * bits as usize / 8;
        for k in 0..n {
            out.push(((acc >> (8 * (total_bytes - 1 - k))) & 0xFF) as u8);
        }
        if done {
            return Ok(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_errors_like_go() {
        assert_eq!(b64_decode("aGk=").unwrap(), b"hi");
        assert_eq!(b64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(
            b64_decode("!!!").unwrap_err(),
            "illegal base64 data at input byte 0"
        );
        assert_eq!(
            b64_decode("aGk").unwrap_err(),
            "illegal base64 data at input byte 0"
        );
        assert_eq!(
            b64_decode("aGk=x").unwrap_err(),
            "illegal base64 data at input byte 4"
        );
    }

    #[test]
    fn base32_round_trip() {
        assert_eq!(b32_encode(b"hello"), "NBSWY3DP");
        assert_eq!(b32_encode(b"hi"), "NBUQ====");
        assert_eq!(b32_decode("NBUQ====").unwrap(), b"hi");
    }
}
