//! go-yaml v2's scalar resolution (YAML 1.1): which plain scalars are bools, nulls, ints,
//! floats or strings, and how explicit `!!tags` convert or fail.

use super::error::YamlError;
use super::node::YamlNode;

pub const STR: &str = "!!str";
pub const BOOL: &str = "!!bool";
pub const INT: &str = "!!int";
pub const FLOAT: &str = "!!float";
pub const NULL: &str = "!!null";
pub const TIMESTAMP: &str = "!!timestamp";
pub const BINARY: &str = "!!binary";
pub const MERGE: &str = "!!merge";

/// `tag:yaml.org,2002:x` → `!!x` (go-yaml compares the short forms).
pub fn short_tag(tag: &str) -> String {
    match tag.strip_prefix("tag:yaml.org,2002:") {
        Some(rest) => format!("!!{rest}"),
        None => tag.to_string(),
    }
}

/// The words YAML 1.1 (as go-yaml v2 reads it) gives a meaning; every other spelling,
/// such as `tRUE` or `nUll`, stays a string.
fn special_word(s: &str) -> Option<YamlNode> {
    Some(match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            YamlNode::Bool(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            YamlNode::Bool(false)
        }
        "" | "~" | "null" | "Null" | "NULL" => YamlNode::Null,
        ".nan" | ".NaN" | ".NAN" => YamlNode::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => YamlNode::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => YamlNode::Float(f64::NEG_INFINITY),
        _ => return None,
    })
}

fn tag_of(node: &YamlNode) -> &'static str {
    match node {
        YamlNode::Null => NULL,
        YamlNode::Bool(_) => BOOL,
        YamlNode::Int(_) | YamlNode::Uint(_) => INT,
        YamlNode::Float(_) => FLOAT,
        _ => STR,
    }
}

/// Resolves a scalar's text under an explicit short tag (empty: implicit, plain style).
/// Unknown tags (`!foo`) leave the text a string, as go-yaml does for `interface{}`.
pub fn resolve(tag: &str, text: &str) -> Result<YamlNode, YamlError> {
    let resolvable = matches!(tag, "" | STR | BOOL | INT | FLOAT | NULL | TIMESTAMP);
    if !resolvable {
        return Ok(YamlNode::Str(text.to_string()));
    }
    let (rtag, value) = natural(tag, text);
    if tag.is_empty() || tag == rtag {
        return Ok(value);
    }
    match (tag, &value) {
        (FLOAT, YamlNode::Int(i)) => Ok(YamlNode::Float(*i as f64)),
        (FLOAT, YamlNode::Uint(u)) => Ok(YamlNode::Float(*u as f64)),
        _ => Err(YamlError::Decode(format!(
            "cannot decode {rtag} `{text}` as a {tag}"
        ))),
    }
}

/// The implicit resolution and its tag (`!!timestamp` values keep their text: go-yaml hands
/// timestamps to `interface{}` targets as strings).
fn natural(tag: &str, text: &str) -> (&'static str, YamlNode) {
    let string = || (STR, YamlNode::Str(text.to_string()));
    if tag == STR || tag == BINARY {
        return string();
    }
    let hint = match text.as_bytes().first() {
        None => b'M',
        Some(b'+' | b'-') => b'S',
        Some(b'0'..=b'9') => b'D',
        Some(b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~') => b'M',
        Some(b'.') => b'.',
        _ => return string(),
    };
    if let Some(v) = special_word(text) {
        return (tag_of(&v), v);
    }
    match hint {
        // go-yaml hands these to `ParseFloat` as they are: underscores between digits pass.
        b'.' => {
            let plain: String = text.chars().filter(|c| *c != '_').collect();
            match parse_float_text(&plain) {
                Some(f) if capstan_go::fmt::underscore_ok(text) => (FLOAT, YamlNode::Float(f)),
                _ => string(),
            }
        }
        b'D' | b'S' => {
            if (tag.is_empty() || tag == TIMESTAMP) && is_timestamp(text) {
                return (TIMESTAMP, YamlNode::Str(text.to_string()));
            }
            let plain: String = text.chars().filter(|c| *c != '_').collect();
            if let Some(i) = parse_go_int(&plain) {
                return (INT, YamlNode::Int(i));
            }
            if let Some(u) = parse_go_uint(&plain) {
                return (INT, YamlNode::Uint(u));
            }
            if is_yaml_style_float(&plain)
                && let Some(f) = parse_float_text(&plain)
            {
                return (FLOAT, YamlNode::Float(f));
            }
            // go-yaml's own binary fallback: the digits after `0b` may carry a sign.
            if let Some(rest) = plain.strip_prefix("0b") {
                if let Some(i) = parse_signed_radix(rest, 2) {
                    return (INT, YamlNode::Int(i));
                }
                if let Some(u) = parse_unsigned_radix(rest, 2) {
                    return (INT, YamlNode::Uint(u));
                }
            } else if let Some(rest) = plain.strip_prefix("-0b")
                && let Some(i) = parse_signed_radix(&format!("-{rest}"), 2)
            {
                return (INT, YamlNode::Int(i));
            }
            string()
        }
        _ => string(),
    }
}

/// A decimal float as Go's `ParseFloat` reads strings of this shape; out-of-range values
/// are an error there (so the scalar stays a string).
fn parse_float_text(s: &str) -> Option<f64> {
    if !is_decimal_float(s) {
        return None;
    }
    let f: f64 = s.parse().ok()?;
    f.is_finite().then_some(f)
}

/// `[-+]?(digits[.digits?] | .digits)([eE][-+]?digits)?`
fn is_decimal_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_digits = i - int_start;
    let mut frac_digits = 0;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let f = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        frac_digits = i - f;
    }
    if int_digits + frac_digits == 0 {
        return false;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let e = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == e {
            return false;
        }
    }
    i == b.len()
}

/// go-yaml's float pattern: `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn is_yaml_style_float(s: &str) -> bool {
    is_decimal_float(s)
}

/// Go's `strconv.ParseUint(s, 0, 64)` on an unsigned digit string with its base prefix.
fn parse_go_unsigned(s: &str) -> Option<u64> {
    let (digits, radix) = if let Some(r) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (r, 16)
    } else if let Some(r) = s.strip_prefix("0o").or_else(|| s.strip_prefix("0O")) {
        (r, 8)
    } else if let Some(r) = s.strip_prefix("0b").or_else(|| s.strip_prefix("0B")) {
        (r, 2)
    } else if s.len() > 1 && s.starts_with('0') {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// Go's `strconv.ParseInt(s, radix, 64)` for an explicit radix: optional sign, digits.
fn parse_signed_radix(s: &str, radix: u32) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let u = parse_unsigned_radix(body, radix)?;
    if neg {
        (u <= i64::MAX as u64 + 1).then(|| (u as i128).wrapping_neg() as i64)
    } else {
        i64::try_from(u).ok()
    }
}

/// Go's `strconv.ParseUint(s, radix, 64)` for an explicit radix.
fn parse_unsigned_radix(s: &str, radix: u32) -> Option<u64> {
    if s.is_empty() || !s.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(s, radix).ok()
}

/// Go's `strconv.ParseInt(s, 0, 64)`.
pub fn parse_go_int(s: &str) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let u = parse_go_unsigned(body)?;
    if neg {
        if u <= i64::MAX as u64 + 1 {
            Some((u as i128).wrapping_neg() as i64)
        } else {
            None
        }
    } else {
        i64::try_from(u).ok()
    }
}

/// Go's `strconv.ParseUint(s, 0, 64)` (no sign allowed).
fn parse_go_uint(s: &str) -> Option<u64> {
    if s.starts_with(['+', '-']) {
        return None;
    }
    parse_go_unsigned(s)
}

/// The timestamp shapes go-yaml v2 recognizes: `2006-1-2`, `2006-1-2 15:4:5.999`, and the
/// RFC 3339-like `2006-1-2T15:4:5.999Z07:00` (also with a lowercase `t`).
pub fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let lead = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if lead != 4 || b.get(4) != Some(&b'-') {
        return false;
    }
    let rest = &s[5..];
    let date_end = rest.find(['T', 't', ' ']).unwrap_or(rest.len());
    let (date, time) = rest.split_at(date_end);
    if !is_month_day(date) {
        return false;
    }
    if time.is_empty() {
        return true;
    }
    let sep = time.as_bytes()[0];
    let time = &time[1..];
    if sep == b' ' {
        // "2006-1-2 15:4:5.999999999": no zone.
        return is_clock(time, false);
    }
    is_clock(time, true)
}

fn is_month_day(s: &str) -> bool {
    let mut parts = s.split('-');
    let (Some(m), Some(d), None) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let num = |p: &str, max: u32| {
        (1..=2).contains(&p.len())
            && p.chars().all(|c| c.is_ascii_digit())
            && p.parse::<u32>().is_ok_and(|v| (1..=max).contains(&v))
    };
    num(m, 12) && num(d, 31)
}

fn is_clock(s: &str, zone: bool) -> bool {
    let (clock, tz) = if zone {
        match s.find(['Z', '+', '-']) {
            Some(i) => s.split_at(i),
            None => return false,
        }
    } else {
        (s, "")
    };
    let (hms, frac) = match clock.find('.') {
        Some(i) => (&clock[..i], Some(&clock[i + 1..])),
        None => (clock, None),
    };
    if let Some(f) = frac
        && (f.is_empty() || !f.chars().all(|c| c.is_ascii_digit()))
    {
        return false;
    }
    let fields: Vec<&str> = hms.split(':').collect();
    let limits = [23u32, 59, 59];
    if fields.len() != 3
        || !fields.iter().zip(limits).all(|(f, max)| {
            (1..=2).contains(&f.len())
                && f.chars().all(|c| c.is_ascii_digit())
                && f.parse::<u32>().is_ok_and(|v| v <= max)
        })
    {
        return false;
    }
    if !zone {
        return true;
    }
    if tz == "Z" {
        return true;
    }
    let b = tz.as_bytes();
    b.len() == 6
        && (b[0] == b'+' || b[0] == b'-')
        && b[1].is_ascii_digit()
        && b[2].is_ascii_digit()
        && b[3] == b':'
        && b[4].is_ascii_digit()
        && b[5].is_ascii_digit()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> YamlNode {
        resolve("", s).unwrap()
    }

    #[test]
    fn yaml11_words() {
        assert_eq!(r("yes"), YamlNode::Bool(true));
        assert_eq!(r("Off"), YamlNode::Bool(false));
        assert_eq!(r("tRUE"), YamlNode::Str("tRUE".into()));
        assert_eq!(r("~"), YamlNode::Null);
        assert_eq!(r(""), YamlNode::Null);
        assert_eq!(r("nUll"), YamlNode::Str("nUll".into()));
    }

    #[test]
    fn numbers() {
        assert_eq!(r("0x1F"), YamlNode::Int(31));
        assert_eq!(r("0755"), YamlNode::Int(493));
        assert_eq!(r("-0755"), YamlNode::Int(-493));
        assert_eq!(r("08"), YamlNode::Float(8.0));
        assert_eq!(r("0b101"), YamlNode::Int(5));
        assert_eq!(r("0o17"), YamlNode::Int(15));
        assert_eq!(r("1__0"), YamlNode::Int(10));
        assert_eq!(r("1_0.5"), YamlNode::Float(10.5));
        assert_eq!(r(".5"), YamlNode::Float(0.5));
        assert_eq!(r("1."), YamlNode::Float(1.0));
        assert_eq!(r("1e400"), YamlNode::Str("1e400".into()));
        assert_eq!(r("0xFFFFFFFFFFFFFFFF"), YamlNode::Uint(u64::MAX));
        assert_eq!(
            r("0xFFFFFFFFFFFFFFFFFF"),
            YamlNode::Str("0xFFFFFFFFFFFFFFFFFF".into())
        );
        assert_eq!(r("-9223372036854775808"), YamlNode::Int(i64::MIN));
        assert_eq!(r("190:20:30"), YamlNode::Str("190:20:30".into()));
        assert_eq!(r("._5"), YamlNode::Str("._5".into()));
        assert_eq!(r("2024-01-02"), YamlNode::Str("2024-01-02".into()));
    }

    #[test]
    fn tags() {
        assert_eq!(resolve(INT, "12").unwrap(), YamlNode::Int(12));
        assert_eq!(resolve(FLOAT, "1").unwrap(), YamlNode::Float(1.0));
        assert_eq!(resolve(STR, "yes").unwrap(), YamlNode::Str("yes".into()));
        assert_eq!(
            resolve(INT, "abc").unwrap_err().to_string(),
            "yaml: cannot decode !!str `abc` as a !!int"
        );
        assert_eq!(
            resolve(BOOL, "1").unwrap_err().to_string(),
            "yaml: cannot decode !!int `1` as a !!bool"
        );
        assert_eq!(resolve("!foo", "1").unwrap(), YamlNode::Str("1".into()));
    }
}
