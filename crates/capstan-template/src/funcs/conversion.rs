//! Sprig v3.3.0 functions: type conversion (`int`, `int64`, `float64`, `atoi`, `toDecimal`,
//! `toString`, `toStrings`), following the `spf13/cast` rules sprig uses: strings are parsed
//! the way Go's `strconv` parses them, and anything unparsable becomes zero.

use std::rc::Rc;

use crate::funcs::strings::{strslice_values, strval_value};
use crate::funcs::{Func, FuncEnv, FuncMap, arg_str};
use capstan_go::fmt as gofmt;
use capstan_go::value::{GoType, List, ListKind, Value};

pub fn register(map: &mut FuncMap, env: &Rc<FuncEnv>) {
    let _ = env;
    use GoType::{Any, String};
    map.insert("int", Func::pure(&[Any], |a| Ok(Value::Int(to_int64(&a[0])))));
    map.insert("int64", Func::pure(&[Any], |a| Ok(Value::Int64(to_int64(&a[0])))));
    map.insert(
        "float64",
        Func::pure(&[Any], |a| Ok(Value::Float(to_float64(&a[0])))),
    );
    map.insert(
        "atoi",
        Func::pure(&[String], |a| Ok(Value::Int(atoi(arg_str(&a[0]))))),
    );
    map.insert(
        "toDecimal",
        Func::pure(&[Any], |a| {
            let text = gofmt::sprint(std::slice::from_ref(&a[0]));
            Ok(Value::Int64(parse_int(&text, 8).unwrap_or(0)))
        }),
    );
    map.insert(
        "toString",
        Func::pure(&[Any], |a| match &a[0] {
            // Containers may contain themselves: report that instead of printing forever.
            v @ (Value::List(_) | Value::Map(_)) => Ok(gofmt::try_format_value(v)?),
            v => Ok(strval_value(v)),
        }),
    );
    map.insert(
        "toStrings",
        Func::pure(&[Any], |a| {
            Ok(Value::List(List::new(ListKind::String, strslice_values(&a[0]))))
        }),
    );
}

/// `cast.ToInt64`: integers as they are, floats truncated (with Go's out-of-range result),
/// strings parsed like `strconv.ParseInt(s, 0, 64)` after dropping a `.000` tail, bools as
/// 0/1; everything else (and every parse failure) is 0.
pub fn to_int64(v: &Value) -> i64 {
    match v {
        Value::Int(i) | Value::Int64(i) => *i,
        Value::Uint8(u) => i64::from(*u),
        // Go's int64(uint64) wraps.
        Value::Uint64(u) => *u as i64,
        Value::Float(f) => float_to_int64(*f),
        Value::String(s) => parse_int(trim_zero_decimal(s), 0).unwrap_or(0),
        Value::Bool(b) => i64::from(*b),
        _ => 0,
    }
}

/// `cast.ToFloat64`: numbers converted, strings parsed like `strconv.ParseFloat(s, 64)`,
/// bools as 0/1; everything else (and every parse failure, including overflow) is 0.
pub fn to_float64(v: &Value) -> f64 {
    match v {
        Value::Int(i) | Value::Int64(i) => *i as f64,
        Value::Uint8(u) => f64::from(*u),
        Value::Uint64(u) => *u as f64,
        Value::Float(f) => *f,
        Value::String(s) => parse_float(s).unwrap_or(0.0),
        Value::Bool(b) => f64::from(u8::from(*b)),
        _ => 0.0,
    }
}

/// Go's `int64(f)` on amd64: truncation, and the "integer indefinite" value (the minimum)
/// for NaN and anything out of range.
pub fn float_to_int64(f: f64) -> i64 {
    // 2^63 is exactly representable; anything at or above it (or below -2^63) overflows.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if f.is_nan() || !(-LIMIT..LIMIT).contains(&f) {
        i64::MIN
    } else {
        f as i64
    }
}

/// `strconv.Atoi` with the error ignored: base 10, optional sign, and on overflow the value
/// clamped to the int64 range (what Go returns alongside the range error).
pub fn atoi(s: &str) -> i64 {
    let (neg, digits) = split_sign(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return 0;
    }
    let mut acc: i128 = 0;
    for b in digits.bytes() {
        acc = acc * 10 + i128::from(b - b'0');
        if acc > i128::from(u64::MAX) {
            break;
        }
    }
    let signed = if neg { -acc } else { acc };
    signed.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// cast's `trimZeroDecimal`: `"1.000"` → `"1"`, other strings unchanged.
fn trim_zero_decimal(s: &str) -> &str {
    let Some(dot) = s.rfind('.') else {
        return s;
    };
    let tail = &s[dot + 1..];
    if !tail.is_empty() && tail.bytes().all(|b| b == b'0') {
        &s[..dot]
    } else {
        s
    }
}

fn split_sign(s: &str) -> (bool, &str) {
    if let Some(rest) = s.strip_prefix('-') {
        (true, rest)
    } else if let Some(rest) = s.strip_prefix('+') {
        (false, rest)
    } else {
        (false, s)
    }
}

/// `strconv.ParseInt(s, base, 64)` for base 0 (Go literal prefixes, `_` separators) or a
/// fixed base 2..=36 (no separators). `None` for syntax and range errors.
pub fn parse_int(s: &str, base: u32) -> Option<i64> {
    let (neg, body) = split_sign(s);
    if !body.is_ascii() || body.is_empty() {
        return None;
    }
    let separators = base == 0;
    let (base, digits) = if base == 0 {
        let prefix = body.get(..2).map(str::to_ascii_lowercase);
        let (base, digits, prefixed) = match prefix.as_deref() {
            Some("0x") => (16, &body[2..], true),
            Some("0b") => (2, &body[2..], true),
            Some("0o") => (8, &body[2..], true),
            // A leading 0 means octal and counts as a digit before a separator.
            _ if body.len() > 1 && body.starts_with('0') => (8, &body[1..], true),
            _ => (10, body, false),
        };
        if !underscores_ok(digits, prefixed) {
            return None;
        }
        (base, digits)
    } else {
        (base, body)
    };
    let mut acc: u128 = 0;
    let mut any = false;
    for c in digits.chars() {
        if c == '_' && separators {
            continue;
        }
        let d = c.to_digit(base)?;
        acc = acc * u128::from(base) + u128::from(d);
        if acc > 1 << 64 {
            return None;
        }
        any = true;
    }
    if !any {
        return None;
    }
    let value: i128 = if neg { -(acc as i128) } else { acc as i128 };
    i64::try_from(value).ok()
}

/// Go's rule for `_` in number literals: only between digits or after a base prefix.
fn underscores_ok(digits: &str, prefixed: bool) -> bool {
    if !digits.contains('_') {
        return true;
    }
    let bytes = digits.as_bytes();
    let mut prev_digit = prefixed;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'_' {
            if !prev_digit {
                return false;
            }
            let next_ok = bytes.get(i + 1).is_some_and(|n| n.is_ascii_alphanumeric());
            if !next_ok {
                return false;
            }
            prev_digit = false;
        } else {
            prev_digit = true;
        }
    }
    true
}

/// `strconv.ParseFloat(s, 64)`: decimal and hexadecimal (`0x1.8p1`) forms with `_`
/// separators, `inf`/`infinity` with a sign, unsigned `nan`, all case-insensitive.
/// `None` for syntax errors and overflow.
pub fn parse_float(s: &str) -> Option<f64> {
    let lower = s.to_ascii_lowercase();
    if lower == "nan" {
        return Some(f64::NAN);
    }
    let (neg, body) = split_sign(&lower);
    if body == "inf" || body == "infinity" {
        return Some(if neg { f64::NEG_INFINITY } else { f64::INFINITY });
    }
    let value = if let Some(hex) = body.strip_prefix("0x") {
        parse_hex_float(hex)?
    } else {
        parse_dec_float(body)?
    };
    if value.is_infinite() {
        return None;
    }
    Some(if neg { -value } else { value })
}

fn parse_dec_float(body: &str) -> Option<f64> {
    let (mantissa, exponent) = match body.find('e') {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let (int_part, frac_part) = match mantissa.find('.') {
        Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
        None => (mantissa, ""),
    };
    let is_digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit() || b == b'_');
    if !is_digits(int_part) || !is_digits(frac_part) {
        return None;
    }
    if int_part.bytes().chain(frac_part.bytes()).all(|b| b == b'_') {
        return None;
    }
    if mantissa.contains('_') && !float_underscores_ok(mantissa) {
        return None;
    }
    let mut text: String = mantissa.chars().filter(|&c| c != '_').collect();
    if let Some(exp) = exponent {
        let (eneg, edigits) = split_sign(exp);
        if edigits.is_empty() || !edigits.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
            return None;
        }
        if edigits.contains('_') && !underscores_ok(edigits, false) {
            return None;
        }
        text.push('e');
        if eneg {
            text.push('-');
        }
        text.extend(edigits.chars().filter(|&c| c != '_'));
    }
    text.parse::<f64>().ok()
}

/// Underscores in a decimal mantissa must sit between digits (not next to the point).
fn float_underscores_ok(mantissa: &str) -> bool {
    let bytes = mantissa.as_bytes();
    bytes.iter().enumerate().all(|(i, &b)| {
        b != b'_'
            || (i > 0 && bytes[i - 1].is_ascii_digit() && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
    })
}

/// The part after `0x` of a hexadecimal float: hex digits, an optional point, and a
/// mandatory binary exponent `p±N`.
fn parse_hex_float(hex: &str) -> Option<f64> {
    let p = hex.find('p')?;
    let (mantissa, exp) = (&hex[..p], &hex[p + 1..]);
    let (eneg, edigits) = split_sign(exp);
    if edigits.is_empty() || !edigits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let exp: i64 = edigits.parse::<i64>().unwrap_or(i64::MAX / 2);
    let exp = if eneg { -exp } else { exp };
    let (int_part, frac_part) = match mantissa.find('.') {
        Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
        None => (mantissa, ""),
    };
    let clean = |p: &str| p.chars().filter(|&c| c != '_').collect::<String>();
    let (int_part, frac_part) = (clean(int_part), clean(frac_part));
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let mut value = 0f64;
    for c in int_part.chars().chain(frac_part.chars()) {
        value = value * 16.0 + f64::from(c.to_digit(16)?);
    }
    let shift = exp - 4 * frac_part.len() as i64;
    let shift = shift.clamp(-2000, 2000) as i32;
    // Scale in two steps so intermediate powers of two stay finite.
    let half = shift / 2;
    Some(value * 2f64.powi(half) * 2f64.powi(shift - half))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_parsing_follows_cast() {
        let cases = [
            ("010", 8),
            ("08", 0),
            ("0x10", 16),
            ("1.0", 1),
            ("1.00", 1),
            ("1.5", 0),
            ("12abc", 0),
            (" 12", 0),
            ("-7", -7),
            ("+7", 7),
            ("1_000", 1000),
            ("0b101", 5),
            ("0o17", 15),
            ("", 0),
            ("10.", 0),
            (".0", 0),
            ("9223372036854775807", i64::MAX),
            ("9223372036854775808", 0),
            ("-9223372036854775808", i64::MIN),
            ("0_7", 7),
            ("0x_1f", 31),
            ("1_", 0),
            ("00", 0),
            ("-0x10", -16),
            ("0b", 0),
            ("0o", 0),
            ("07_7", 63),
            ("-", 0),
            ("+", 0),
            ("1.0.0", 0),
            ("0x1.0", 1),
            ("1e3", 0),
        ];
        for (s, want) in cases {
            assert_eq!(to_int64(&Value::from(s)), want, "int64 {s:?}");
        }
    }

    #[test]
    fn float_to_int_wraps_like_amd64() {
        assert_eq!(to_int64(&Value::Float(1.2e19)), i64::MIN);
        assert_eq!(to_int64(&Value::Float(-1.2e19)), i64::MIN);
        assert_eq!(to_int64(&Value::Float(-3.99)), -3);
        assert_eq!(to_int64(&Value::Bool(true)), 1);
        assert_eq!(to_int64(&Value::Nil), 0);
    }

    #[test]
    fn float_parsing_follows_strconv() {
        let cases = [
            ("1.5", Some(1.5)),
            ("1e3", Some(1000.0)),
            ("inf", Some(f64::INFINITY)),
            ("-Infinity", Some(f64::NEG_INFINITY)),
            ("+NaN", None),
            ("0x1p-2", Some(0.25)),
            ("0x1.8p1", Some(3.0)),
            ("0x10", None),
            ("0X1P+2", Some(4.0)),
            ("1_000.5", Some(1000.5)),
            ("_1", None),
            ("1__0", None),
            (" 1", None),
            (".5", Some(0.5)),
            ("5.", Some(5.0)),
            (".", None),
            ("1e", None),
            ("1e400", None),
            ("0x_1p0", Some(1.0)),
        ];
        for (s, want) in cases {
            assert_eq!(parse_float(s), want, "float64 {s:?}");
        }
        assert!(parse_float("NaN").is_some_and(f64::is_nan));
    }

    #[test]
    fn atoi_is_base_ten_and_clamps() {
        assert_eq!(atoi("010"), 10);
        assert_eq!(atoi("+5"), 5);
        assert_eq!(atoi("1_000"), 0);
        assert_eq!(atoi("99999999999999999999"), i64::MAX);
        assert_eq!(atoi("-99999999999999999999"), i64::MIN);
        assert_eq!(atoi(" 1"), 0);
    }

    #[test]
    fn octal_parsing_for_to_decimal() {
        assert_eq!(parse_int("0777", 8), Some(511));
        assert_eq!(parse_int("-10", 8), Some(-8));
        assert_eq!(parse_int("8", 8), None);
        assert_eq!(parse_int("0_7", 8), None);
        assert_eq!(parse_int("+17", 8), Some(15));
    }
}
