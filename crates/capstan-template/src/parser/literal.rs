//! Literal values of the template language with Go's rules: string and character unquoting
//! (`strconv.Unquote`/`UnquoteChar`) and number constants (every interpretation a literal has,
//! like `parse.NumberNode`).

use capstan_go::fmt::underscore_ok;

/// Go's `strconv.ErrSyntax` text, which the parser reports for bad quoted literals.
pub const INVALID_SYNTAX: &str = "invalid syntax";

/// A number literal's interpretations.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NumberValue {
    pub int: Option<i64>,
    pub uint: Option<u64>,
    pub float: Option<f64>,
    pub complex: Option<(f64, f64)>,
}

/// One decoded character of a quoted literal.
struct Unquoted<'a> {
    value: u32,
    /// True when `value` is a rune to encode as UTF-8, false for a single raw byte.
    multibyte: bool,
    tail: &'a str,
}

fn hex_value(b: u8) -> Option<u32> {
    char::from(b).to_digit(16)
}

/// Go's `strconv.UnquoteChar`: decodes the first (possibly escaped) character of `s`.
fn unquote_char(s: &str, quote: u8) -> Option<Unquoted<'_>> {
    let bytes = s.as_bytes();
    let &first = bytes.first()?;
    if first == quote && (quote == b'\'' || quote == b'"') {
        return None;
    }
    if first >= 0x80 {
        let c = s.chars().next()?;
        return Some(Unquoted {
            value: u32::from(c),
            multibyte: true,
            tail: s.get(c.len_utf8()..)?,
        });
    }
    if first != b'\\' {
        return Some(Unquoted {
            value: u32::from(first),
            multibyte: false,
            tail: s.get(1..)?,
        });
    }
    let &c = bytes.get(1)?;
    let simple = |value: u8| {
        Some(Unquoted {
            value: u32::from(value),
            multibyte: false,
            tail: s.get(2..)?,
        })
    };
    match c {
        b'a' => simple(0x07),
        b'b' => simple(0x08),
        b'f' => simple(0x0C),
        b'n' => simple(b'\n'),
        b'r' => simple(b'\r'),
        b't' => simple(b'\t'),
        b'v' => simple(0x0B),
        b'\\' => simple(b'\\'),
        b'\'' | b'"' if c == quote => simple(c),
        b'x' | b'u' | b'U' => {
            let n = match c {
                b'x' => 2,
                b'u' => 4,
                _ => 8,
            };
            let digits = bytes.get(2..2 + n)?;
            let mut value: u32 = 0;
            for &d in digits {
                value = value.checked_mul(16)?.checked_add(hex_value(d)?)?;
            }
            if c != b'x' && char::from_u32(value).is_none() {
                return None;
            }
            Some(Unquoted {
                value,
                multibyte: c != b'x',
                tail: s.get(2 + n..)?,
            })
        }
        b'0'..=b'7' => {
            let digits = bytes.get(1..4)?;
            let mut value: u32 = 0;
            for &d in digits {
                if !(b'0'..=b'7').contains(&d) {
                    return None;
                }
                value = value * 8 + u32::from(d - b'0');
            }
            if value > 255 {
                return None;
            }
            Some(Unquoted {
                value,
                multibyte: false,
                tail: s.get(4..)?,
            })
        }
        _ => None,
    }
}

/// Go's `strconv.Unquote` of a `"…"` or `` `…` `` literal as text: raw bytes from `\x`/octal
/// escapes that do not form UTF-8 become U+FFFD, one per byte (template names).
pub fn unquote(quoted: &str) -> Option<String> {
    unquote_bytes(quoted).map(capstan_go::value::go_text)
}

/// Go's `strconv.Unquote` of a `"…"` or `` `…` `` literal: the bytes of the Go string, which
/// `\x` and octal escapes can make invalid UTF-8.
pub fn unquote_bytes(quoted: &str) -> Option<Vec<u8>> {
    let bytes = quoted.as_bytes();
    if bytes.len() < 2 {
        return None;
    }
    let (first, last) = (bytes[0], bytes[bytes.len() - 1]);
    if first != last {
        return None;
    }
    let inner = quoted.get(1..quoted.len() - 1)?;
    match first {
        b'`' => {
            if inner.contains('`') {
                return None;
            }
            // Carriage returns are discarded from raw strings.
            Some(inner.replace('\r', "").into_bytes())
        }
        b'"' => {
            if inner.contains('\n') {
                return None;
            }
            let mut out: Vec<u8> = Vec::with_capacity(inner.len());
            let mut rest = inner;
            while !rest.is_empty() {
                let u = unquote_char(rest, b'"')?;
                if u.value < 0x80 || !u.multibyte {
                    out.push(u.value as u8);
                } else {
                    let c = char::from_u32(u.value)?;
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                rest = u.tail;
            }
            Some(out)
        }
        _ => None,
    }
}

/// Why a literal is rejected (Go's messages).
#[derive(Debug, Clone, PartialEq)]
pub enum LiteralError {
    Syntax,
    Message(String),
}

impl LiteralError {
    pub fn message(&self) -> String {
        match self {
            LiteralError::Syntax => INVALID_SYNTAX.to_string(),
            LiteralError::Message(m) => m.clone(),
        }
    }
}

/// A character constant like `'a'` or `'\n'`: its rune value.
pub fn char_constant(text: &str) -> Result<i64, LiteralError> {
    let body = text.get(1..).ok_or(LiteralError::Syntax)?;
    let u = unquote_char(body, b'\'').ok_or(LiteralError::Syntax)?;
    if u.tail != "'" {
        return Err(LiteralError::Message(format!(
            "malformed character constant: {text}"
        )));
    }
    Ok(i64::from(u.value))
}

/// Go's `strconv.ParseUint(s, 0, 64)`.
pub fn parse_uint(s: &str) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let b = s.as_bytes();
    let (base, digits) = if b[0] == b'0' && b.len() >= 3 {
        match b[1].to_ascii_lowercase() {
            b'b' => (2, &s[2..]),
            b'o' => (8, &s[2..]),
            b'x' => (16, &s[2..]),
            _ => (8, &s[1..]),
        }
    } else if b[0] == b'0' {
        (8, &s[1..])
    } else {
        (10, s)
    };
    let mut n: u64 = 0;
    let mut underscores = false;
    for c in digits.bytes() {
        if c == b'_' {
            underscores = true;
            continue;
        }
        let d = char::from(c).to_digit(36)?;
        if d >= base {
            return None;
        }
        n = n.checked_mul(u64::from(base))?.checked_add(u64::from(d))?;
    }
    if underscores && !underscore_ok(s) {
        return None;
    }
    Some(n)
}

/// Go's `strconv.ParseInt(s, 0, 64)`.
pub fn parse_int(s: &str) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let u = parse_uint(body)?;
    if neg {
        if u > 1u64 << 63 {
            return None;
        }
        Some((u as i64).wrapping_neg())
    } else {
        i64::try_from(u).ok()
    }
}

/// Go's `strconv.ParseFloat(s, 64)` for the forms the lexer produces (decimal and hexadecimal
/// floats with optional sign and underscores). Out-of-range values are errors, like Go.
pub fn parse_float(s: &str) -> Option<f64> {
    if s.contains('_') && !underscore_ok(s) {
        return None;
    }
    let clean: String = s.chars().filter(|&c| c != '_').collect();
    let (neg, body) = match clean.as_bytes().first() {
        Some(b'-') => (true, &clean[1..]),
        Some(b'+') => (false, &clean[1..]),
        _ => (false, clean.as_str()),
    };
    let lower = body.to_ascii_lowercase();
    let value = if let Some(hex) = lower.strip_prefix("0x") {
        parse_hex_float(hex)?
    } else {
        if !body
            .bytes()
            .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'))
        {
            return None;
        }
        body.parse::<f64>().ok()?
    };
    if value.is_infinite() {
        return None;
    }
    Some(if neg { -value } else { value })
}

/// `<hex mantissa>[.<hex>]p<exp>` (the `p` exponent is mandatory, as in Go).
fn parse_hex_float(s: &str) -> Option<f64> {
    let (mantissa, exp) = s.split_once('p')?;
    let exp: i64 = exp.parse().ok()?;
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let mut value = 0f64;
    for c in int_part.chars() {
        value = value * 16.0 + f64::from(c.to_digit(16)?);
    }
    let mut scale = 1f64 / 16.0;
    for c in frac_part.chars() {
        value += f64::from(c.to_digit(16)?) * scale;
        scale /= 16.0;
    }
    let exp = i32::try_from(exp.clamp(-100_000, 100_000)).ok()?;
    Some(value * 2f64.powi(exp.clamp(-1074, 1024)) * if exp < -1074 { 0.0 } else { 1.0 })
}

/// A complex literal like `1+2i` (Go reads it with `fmt.Sscan`).
fn parse_complex(text: &str) -> Option<(f64, f64)> {
    let body = text.strip_suffix('i')?;
    let bytes = body.as_bytes();
    // The sign that starts the imaginary part: the last + or - not part of an exponent.
    let split = (1..bytes.len())
        .rev()
        .find(|&i| matches!(bytes[i], b'+' | b'-') && !matches!(bytes[i - 1], b'e' | b'E' | b'p' | b'P'))?;
    let re = parse_float(&body[..split])?;
    let im = parse_float(&body[split..])?;
    Some((re, im))
}

/// Every interpretation of a number literal, or Go's error message.
pub fn number(text: &str, is_complex_token: bool) -> Result<NumberValue, LiteralError> {
    let mut n = NumberValue::default();
    if is_complex_token {
        let (re, im) = parse_complex(text).ok_or(LiteralError::Syntax)?;
        n.complex = Some((re, im));
        simplify_complex(&mut n);
        return Ok(n);
    }
    if let Some(body) = text.strip_suffix('i')
        && let Some(im) = parse_float(body)
    {
        n.complex = Some((0.0, im));
        simplify_complex(&mut n);
        return Ok(n);
    }
    n.uint = parse_uint(text);
    if let Some(i) = parse_int(text) {
        n.int = Some(i);
        if i == 0 {
            n.uint = Some(0);
        }
    }
    if let Some(i) = n.int {
        n.float = Some(i as f64);
    } else if let Some(u) = n.uint {
        n.float = Some(u as f64);
    } else if let Some(f) = parse_float(text) {
        if !text.contains(['.', 'e', 'E', 'p', 'P']) {
            return Err(LiteralError::Message(format!(
                "integer overflow: {}",
                capstan_go::fmt::quote(text)
            )));
        }
        n.float = Some(f);
        (n.int, n.uint) = integral_parts(f);
    }
    if n.int.is_none() && n.uint.is_none() && n.float.is_none() {
        return Err(LiteralError::Message(format!(
            "illegal number syntax: {}",
            capstan_go::fmt::quote(text)
        )));
    }
    Ok(n)
}

/// A complex constant with a zero imaginary part is also a float (and maybe an integer).
fn simplify_complex(n: &mut NumberValue) {
    let Some((re, im)) = n.complex else { return };
    if im != 0.0 {
        return;
    }
    n.float = Some(re);
    (n.int, n.uint) = integral_parts(re);
}

/// The int64 and uint64 a float converts to exactly, if any.
fn integral_parts(f: f64) -> (Option<i64>, Option<u64>) {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if f.fract() != 0.0 {
        return (None, None);
    }
    let int = (-TWO_63..TWO_63).contains(&f).then_some(f as i64);
    let uint = (0.0..2.0 * TWO_63).contains(&f).then_some(f as u64);
    (int, uint)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unquotes_like_go() {
        assert_eq!(unquote(r#""a\tb\x41\101\u00e9""#).as_deref(), Some("a\tbAAé"));
        assert_eq!(unquote("`a\r\nb`").as_deref(), Some("a\nb"));
        assert_eq!(unquote(r#""\'""#), None);
        assert_eq!(unquote(r#""\400""#), None);
        assert_eq!(unquote(r#""\ud800""#), None);
        // `\x` and octal escapes make bytes, which need not be UTF-8.
        assert_eq!(unquote_bytes(r#""h\xc3""#).as_deref(), Some(&b"h\xc3"[..]));
        assert_eq!(unquote_bytes(r#""\303\251""#).as_deref(), Some("é".as_bytes()));
        assert_eq!(unquote(r#""h\xe2\x82""#).as_deref(), Some("h\u{fffd}\u{fffd}"));
    }

    #[test]
    fn char_constants() {
        assert_eq!(char_constant("'a'"), Ok(97));
        assert_eq!(char_constant(r"'\n'"), Ok(10));
        assert_eq!(char_constant("'é'"), Ok(233));
        assert_eq!(char_constant(r"'\''"), Ok(39));
        assert_eq!(char_constant("''"), Err(LiteralError::Syntax));
        assert!(matches!(char_constant("'ab'"), Err(LiteralError::Message(_))));
    }

    #[test]
    fn integers_in_every_base() {
        assert_eq!(parse_int("0x1F"), Some(31));
        assert_eq!(parse_int("0o17"), Some(15));
        assert_eq!(parse_int("017"), Some(15));
        assert_eq!(parse_int("0b101"), Some(5));
        assert_eq!(parse_int("1_000"), Some(1000));
        assert_eq!(parse_int("-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_int("1__0"), None);
        assert_eq!(parse_int("08"), None);
        assert_eq!(parse_int("0x"), None);
        assert_eq!(parse_uint("18446744073709551615"), Some(u64::MAX));
    }

    #[test]
    fn floats() {
        assert_eq!(parse_float("0x1Fp-2"), Some(7.75));
        assert_eq!(parse_float("0x1.8p1"), Some(3.0));
        assert_eq!(parse_float(".5"), Some(0.5));
        assert_eq!(parse_float("1_000.5"), Some(1000.5));
        assert_eq!(parse_float("1e400"), None);
        assert_eq!(parse_float("0x1.8"), None);
    }

    #[test]
    fn numbers() {
        let n = number("1e3", false).unwrap_or_default();
        assert_eq!((n.int, n.float), (Some(1000), Some(1000.0)));
        assert!(
            matches!(number("08", false), Err(LiteralError::Message(m)) if m.starts_with("integer overflow"))
        );
        assert!(matches!(number("1.2.3", false), Err(LiteralError::Message(m)) if m.starts_with("illegal")));
        assert_eq!(number("1+2i", true).map(|n| n.complex), Ok(Some((1.0, 2.0))));
        assert_eq!(number("0i", false).map(|n| n.int), Ok(Some(0)));
    }
}
