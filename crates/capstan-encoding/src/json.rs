//! Go `encoding/json` for template values: `Marshal`/`MarshalIndent` output byte for byte
//! (sorted keys, HTML escaping, Go's float format) and `Unmarshal` into `interface{}`
//! (every number a `float64`) with Go's error texts.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::rc::Rc;

use base64::Engine as _;

use capstan_go::value::Value;

/// Containers nested deeper than this are refused on input, as Go's decoder does.
pub const MAX_DEPTH: usize = 10_000;

/// Why a value cannot be encoded or a text decoded; `Display` is Go's error text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum JsonError {
    /// NaN or an infinity (`json: unsupported value: NaN`).
    #[error("json: unsupported value: {0}")]
    UnsupportedValue(String),
    /// A syntax error or a type mismatch, with Go's message.
    #[error("{0}")]
    Decode(String),
}

/// How the encoder writes its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    /// Escape `<`, `>` and `&` as `\u003c`… (`json.Marshal`); off for `toRawJson`.
    pub escape_html: bool,
    /// `MarshalIndent(v, "", "  ")` layout.
    pub pretty: bool,
}

/// `json.Marshal(v)`.
pub fn marshal(v: &Value) -> Result<String, JsonError> {
    encode(
        v,
        Style {
            escape_html: true,
            pretty: false,
        },
    )
}

/// Encodes `v` in the given style.
pub fn encode(v: &Value, style: Style) -> Result<String, JsonError> {
    let mut e = Encoder {
        out: String::new(),
        style,
        level: 0,
        seen: HashSet::new(),
    };
    e.value(v, 0)?;
    Ok(e.out)
}

/// Encoded output larger than this is refused rather than grown without bound (shared
/// references can make a small value encode to an exponentially large text).
pub const MAX_OUTPUT_BYTES: usize = 64 << 20;

/// Go starts looking for reference cycles this many containers deep.
const START_DETECTING_CYCLES_AFTER: usize = 1000;

struct Encoder {
    out: String,
    style: Style,
    /// Maps and lists currently being encoded (Go's `ptrLevel`).
    level: usize,
    /// Containers on the current path once deep enough (Go's `ptrSeen`).
    seen: HashSet<(usize, usize)>,
}

impl Encoder {
    fn newline(&mut self, depth: usize) {
        if self.style.pretty {
            self.out.push('\n');
            for _ in 0..depth {
                self.out.push_str("  ");
            }
        }
    }

    /// Enters a map or list: past Go's threshold, seeing the same one again is a cycle.
    fn enter(&mut self, id: (usize, usize), v: &Value) -> Result<bool, JsonError> {
        self.level += 1;
        if self.level - 1 <= START_DETECTING_CYCLES_AFTER {
            return Ok(false);
        }
        if !self.seen.insert(id) {
            return Err(JsonError::UnsupportedValue(format!(
                "encountered a cycle via {}",
                v.type_name()
            )));
        }
        Ok(true)
    }

    fn leave(&mut self, id: (usize, usize), recorded: bool) {
        self.level -= 1;
        if recorded {
            self.seen.remove(&id);
        }
    }

    fn value(&mut self, v: &Value, depth: usize) -> Result<(), JsonError> {
        if self.out.len() > MAX_OUTPUT_BYTES {
            return Err(JsonError::UnsupportedValue(format!(
                "output exceeds {MAX_OUTPUT_BYTES} bytes"
            )));
        }
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.value_inner(v, depth))
    }

    fn value_inner(&mut self, v: &Value, depth: usize) -> Result<(), JsonError> {
        match v {
            Value::Nil => self.out.push_str("null"),
            Value::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Value::Int(i) | Value::Int64(i) => {
                let _ = write!(self.out, "{i}");
            }
            Value::Uint8(u) => {
                let _ = write!(self.out, "{u}");
            }
            Value::Uint64(u) => {
                let _ = write!(self.out, "{u}");
            }
            Value::Float(f) => self.out.push_str(&format_float(*f)?),
            Value::String(s) => write_string(&mut self.out, s, self.style.escape_html),
            Value::ByteString(b) => write_byte_string(&mut self.out, b, self.style.escape_html),
            Value::Bytes(b) => {
                self.out.push('"');
                self.out
                    .push_str(&base64::engine::general_purpose::STANDARD.encode(b));
                self.out.push('"');
            }
            Value::List(l) if l.nil => self.out.push_str("null"),
            Value::Map(m) if m.nil => self.out.push_str("null"),
            Value::List(l) => {
                let id = (Rc::as_ptr(&l.items) as usize, l.items.len());
                let recorded = self.enter(id, v)?;
                let result = self.list(&l.items, depth);
                self.leave(id, recorded);
                result?;
            }
            Value::Map(m) => {
                let id = (Rc::as_ptr(&m.entries) as usize, 0);
                let recorded = self.enter(id, v)?;
                let result = self.object(&m.snapshot(), depth);
                self.leave(id, recorded);
                result?;
            }
            // A typed nil (a nil map behind a Go type) encodes as `null`.
            Value::Object(o) if o.is_nil() => self.out.push_str("null"),
            Value::Object(o) if o.json_fields().is_some() => {
                let fields = o.json_fields().unwrap_or_default();
                self.object(&fields, depth)?;
            }
            Value::Object(o) => match o.entries() {
                Some(entries) => {
                    let sorted: BTreeMap<String, Value> = entries.into_iter().collect();
                    let entries: Vec<(String, Value)> = sorted.into_iter().collect();
                    self.object(&entries, depth)?;
                }
                None => self.value(&o.to_data(), depth)?,
            },
        }
        Ok(())
    }

    fn list(&mut self, items: &[Value], depth: usize) -> Result<(), JsonError> {
        if items.is_empty() {
            self.out.push_str("[]");
            return Ok(());
        }
        self.out.push('[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            self.newline(depth + 1);
            self.value(item, depth + 1)?;
        }
        self.newline(depth);
        self.out.push(']');
        Ok(())
    }

    fn object(&mut self, entries: &[(String, Value)], depth: usize) -> Result<(), JsonError> {
        if entries.is_empty() {
            self.out.push_str("{}");
            return Ok(());
        }
        self.out.push('{');
        for (i, (k, item)) in entries.iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            self.newline(depth + 1);
            write_string(&mut self.out, k, self.style.escape_html);
            self.out.push(':');
            if self.style.pretty {
                self.out.push(' ');
            }
            self.value(item, depth + 1)?;
        }
        self.newline(depth);
        self.out.push('}');
        Ok(())
    }
}

/// A JSON string literal as Go writes it.
pub fn write_string(out: &mut String, s: &str, escape_html: bool) {
    out.push('"');
    write_string_body(out, s, escape_html);
    out.push('"');
}

/// A Go string that is not valid UTF-8, as `encoding/json` writes it: each invalid byte
/// becomes the escape `\ufffd`.
pub fn write_byte_string(out: &mut String, bytes: &[u8], escape_html: bool) {
    out.push('"');
    for chunk in bytes.utf8_chunks() {
        write_string_body(out, chunk.valid(), escape_html);
        for _ in chunk.invalid() {
            out.push_str("\\ufffd");
        }
    }
    out.push('"');
}

fn write_string_body(out: &mut String, s: &str, escape_html: bool) {
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' if escape_html => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
}

/// Go's float64 encoding: shortest digits, `'f'` form unless the magnitude is below 1e-6 or
/// at least 1e21, where it uses `'e'` with a one-digit-minimum negative exponent.
pub fn format_float(f: f64) -> Result<String, JsonError> {
    if f.is_nan() {
        return Err(JsonError::UnsupportedValue("NaN".into()));
    }
    if f.is_infinite() {
        let v = if f > 0.0 { "+Inf" } else { "-Inf" };
        return Err(JsonError::UnsupportedValue(v.into()));
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Rust's `{:e}` is shortest-digits too: `1e21`, `1.5e-7`.
        let e = format!("{f:e}");
        let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
        let (sign, digits) = match exp.strip_prefix('-') {
            Some(d) => ('-', d),
            None => ('+', exp),
        };
        // Go pads to two digits, then rewrites `e-0X` to `e-X`; only `e+0X` keeps its zero,
        // which cannot happen at these magnitudes.
        let digits = if sign == '+' && digits.len() < 2 {
            format!("0{digits}")
        } else {
            digits.to_string()
        };
        return Ok(format!("{mant}e{sign}{digits}"));
    }
    Ok(format!("{f}"))
}

// ---------------------------------------------------------------------------------------------
// Decoding

/// `json.Unmarshal(text, &v)` with `v interface{}`.
pub fn unmarshal(text: &str) -> Result<Value, JsonError> {
    let d = unmarshal_partial(text)?;
    match d.error {
        Some(e) => Err(e),
        None => Ok(d.value),
    }
}

/// A decoded document plus the first value error Go saved while decoding on (a number out
/// of float64 range decodes as nil).
pub struct Decoded {
    pub value: Value,
    pub error: Option<JsonError>,
}

/// Like [`unmarshal`], but keeps what Go keeps when a value cannot be stored. Syntax errors
/// (found before decoding starts) are still errors.
pub fn unmarshal_partial(text: &str) -> Result<Decoded, JsonError> {
    check_syntax(text.as_bytes())?;
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
        error: None,
    };
    p.skip_ws();
    let value = p.value(0)?;
    Ok(Decoded {
        value,
        error: p.error,
    })
}

/// The kind of the top-level value of syntactically valid JSON (`object`, `array`, …).
pub fn top_level_kind(text: &str) -> &'static str {
    match text.bytes().find(|&c| !is_ws(c)) {
        Some(b'{') => "object",
        Some(b'[') => "array",
        Some(b'"') => "string",
        Some(b't' | b'f') => "bool",
        Some(b'n') => "null",
        _ => "number",
    }
}

/// Go's `quoteChar` for scanner error messages.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => "'\\''".into(),
        b'"' => "'\"'".into(),
        // Go quotes `string(rune(c))`: bytes >= 0x80 read as U+0080..U+00FF.
        _ => format!("'{}'", go_quote_rune(char::from(c))),
    }
}

/// The body of Go's `strconv.Quote` for one Latin-1 rune.
fn go_quote_rune(c: char) -> String {
    match c {
        '\u{7}' => "\\a".into(),
        '\u{8}' => "\\b".into(),
        '\u{c}' => "\\f".into(),
        '\n' => "\\n".into(),
        '\r' => "\\r".into(),
        '\t' => "\\t".into(),
        '\u{b}' => "\\v".into(),
        '\\' => "\\\\".into(),
        c if u32::from(c) < 0x20 || u32::from(c) == 0x7F => format!("\\x{:02x}", u32::from(c)),
        // Latin-1 controls, NBSP and soft hyphen are not printable for Go.
        c if (0x80..=0xA0).contains(&u32::from(c)) || c == '\u{ad}' => {
            format!("\\u{:04x}", u32::from(c))
        }
        c => c.to_string(),
    }
}

fn syntax(c: u8, ctx: &str) -> JsonError {
    JsonError::Decode(format!("invalid character {} {ctx}", quote_char(c)))
}

fn eof() -> JsonError {
    JsonError::Decode("unexpected end of JSON input".into())
}

fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

/// A validating pass with Go's scanner messages (Go validates the whole text before decoding).
fn check_syntax(s: &[u8]) -> Result<(), JsonError> {
    let mut i = 0;
    let skip = |i: &mut usize| {
        while *i < s.len() && is_ws(s[*i]) {
            *i += 1;
        }
    };
    skip(&mut i);
    check_value(s, &mut i, 0)?;
    skip(&mut i);
    match s.get(i) {
        None => Ok(()),
        Some(&c) => Err(syntax(c, "after top-level value")),
    }
}

fn skip_ws(s: &[u8], i: &mut usize) {
    while *i < s.len() && is_ws(s[*i]) {
        *i += 1;
    }
}

/// After an element of an object or array: a `,` (skipped, with the space after it) means
/// more follow; `close` ends the container (true). Anything else is Go's error `context`.
fn element_closes(s: &[u8], i: &mut usize, close: u8, context: &str) -> Result<bool, JsonError> {
    skip_ws(s, i);
    match s.get(*i) {
        None => Err(eof()),
        Some(b',') => {
            *i += 1;
            skip_ws(s, i);
            Ok(false)
        }
        Some(&c) if c == close => {
            *i += 1;
            Ok(true)
        }
        Some(&c) => Err(syntax(c, context)),
    }
}

fn check_value(s: &[u8], i: &mut usize, depth: usize) -> Result<(), JsonError> {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || check_value_inner(s, i, depth))
}

fn check_value_inner(s: &[u8], i: &mut usize, depth: usize) -> Result<(), JsonError> {
    // Go refuses to open container number MAX_DEPTH + 1.
    if let Some(&c @ (b'[' | b'{')) = s.get(*i)
        && depth >= MAX_DEPTH
    {
        return Err(syntax(c, "exceeded max depth"));
    }
    let skip = |i: &mut usize| skip_ws(s, i);
    let Some(&c) = s.get(*i) else {
        return Err(eof());
    };
    match c {
        b'{' => {
            *i += 1;
            skip(i);
            if s.get(*i) == Some(&b'}') {
                *i += 1;
                return Ok(());
            }
            loop {
                match s.get(*i) {
                    None => return Err(eof()),
                    Some(b'"') => check_string(s, i)?,
                    Some(&c) => return Err(syntax(c, "looking for beginning of object key string")),
                }
                skip(i);
                match s.get(*i) {
                    None => return Err(eof()),
                    Some(b':') => *i += 1,
                    Some(&c) => return Err(syntax(c, "after object key")),
                }
                skip(i);
                check_value(s, i, depth + 1)?;
                if element_closes(s, i, b'}', "after object key:value pair")? {
                    return Ok(());
                }
            }
        }
        b'[' => {
            *i += 1;
            skip(i);
            if s.get(*i) == Some(&b']') {
                *i += 1;
                return Ok(());
            }
            loop {
                check_value(s, i, depth + 1)?;
                if element_closes(s, i, b']', "after array element")? {
                    return Ok(());
                }
            }
        }
        b'"' => check_string(s, i),
        b'-' | b'0'..=b'9' => check_number(s, i),
        b't' => check_literal(s, i, b"true"),
        b'f' => check_literal(s, i, b"false"),
        b'n' => check_literal(s, i, b"null"),
        c => Err(syntax(c, "looking for beginning of value")),
    }
}

fn check_literal(s: &[u8], i: &mut usize, word: &[u8]) -> Result<(), JsonError> {
    let name = std::str::from_utf8(word).unwrap_or("");
    for (k, &want) in word.iter().enumerate() {
        match s.get(*i + k) {
            None => {
                return Err(syntax(
                    b' ',
                    &format!("in literal {name} (expecting {})", quote_char(want)),
                ));
            }
            Some(&c) if c == want => {}
            Some(&c) => {
                return Err(syntax(
                    c,
                    &format!("in literal {name} (expecting {})", quote_char(want)),
                ));
            }
        }
    }
    *i += word.len();
    Ok(())
}

fn check_string(s: &[u8], i: &mut usize) -> Result<(), JsonError> {
    *i += 1;
    loop {
        let Some(&c) = s.get(*i) else {
            return Err(eof());
        };
        *i += 1;
        match c {
            b'"' => return Ok(()),
            b'\\' => {
                let Some(&e) = s.get(*i) else {
                    return Err(syntax(b' ', "in string escape code"));
                };
                *i += 1;
                match e {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                    b'u' => {
                        for _ in 0..4 {
                            match s.get(*i) {
                                None => return Err(syntax(b' ', "in \\u hexadecimal character escape")),
                                Some(h) if h.is_ascii_hexdigit() => *i += 1,
                                Some(&h) => {
                                    return Err(syntax(h, "in \\u hexadecimal character escape"));
                                }
                            }
                        }
                    }
                    e => return Err(syntax(e, "in string escape code")),
                }
            }
            c if c < 0x20 => return Err(syntax(c, "in string literal")),
            _ => {}
        }
    }
}

fn check_number(s: &[u8], i: &mut usize) -> Result<(), JsonError> {
    let digits = |i: &mut usize| {
        while s.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
    };
    if s.get(*i) == Some(&b'-') {
        *i += 1;
        match s.get(*i) {
            None => return Err(syntax(b' ', "in numeric literal")),
            Some(c) if c.is_ascii_digit() => {}
            Some(&c) => return Err(syntax(c, "in numeric literal")),
        }
    }
    if s.get(*i) == Some(&b'0') {
        *i += 1;
    } else {
        digits(i);
    }
    if s.get(*i) == Some(&b'.') {
        *i += 1;
        match s.get(*i) {
            None => return Err(syntax(b' ', "after decimal point in numeric literal")),
            Some(c) if c.is_ascii_digit() => digits(i),
            Some(&c) => return Err(syntax(c, "after decimal point in numeric literal")),
        }
    }
    if matches!(s.get(*i), Some(b'e' | b'E')) {
        *i += 1;
        if matches!(s.get(*i), Some(b'+' | b'-')) {
            *i += 1;
        }
        match s.get(*i) {
            None => return Err(syntax(b' ', "in exponent of numeric literal")),
            Some(c) if c.is_ascii_digit() => digits(i),
            Some(&c) => return Err(syntax(c, "in exponent of numeric literal")),
        }
    }
    Ok(())
}

/// Decodes text already validated by [`check_syntax`].
struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    error: Option<JsonError>,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.s.get(self.i).copied().is_some_and(is_ws) {
            self.i += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, JsonError> {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.value_inner(depth))
    }

    fn value_inner(&mut self, depth: usize) -> Result<Value, JsonError> {
        match self.s.get(self.i) {
            Some(b'{') => {
                self.i += 1;
                let mut map = BTreeMap::new();
                loop {
                    self.skip_ws();
                    match self.s.get(self.i) {
                        Some(b'}') => {
                            self.i += 1;
                            break;
                        }
                        Some(b',') => {
                            self.i += 1;
                            continue;
                        }
                        Some(b'"') => {}
                        _ => return Err(eof()),
                    }
                    let key = self.string();
                    self.skip_ws();
                    self.i += 1; // ':'
                    self.skip_ws();
                    let v = self.value(depth + 1)?;
                    map.insert(key, v);
                }
                Ok(Value::map(map))
            }
            Some(b'[') => {
                self.i += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_ws();
                    match self.s.get(self.i) {
                        Some(b']') => {
                            self.i += 1;
                            break;
                        }
                        Some(b',') => {
                            self.i += 1;
                            continue;
                        }
                        None => return Err(eof()),
                        _ => {}
                    }
                    items.push(self.value(depth + 1)?);
                }
                Ok(Value::list(items))
            }
            Some(b'"') => Ok(Value::from(self.string())),
            Some(b't') => {
                self.i += 4;
                Ok(Value::Bool(true))
            }
            Some(b'f') => {
                self.i += 5;
                Ok(Value::Bool(false))
            }
            Some(b'n') => {
                self.i += 4;
                Ok(Value::Nil)
            }
            Some(_) => {
                let start = self.i;
                while self
                    .s
                    .get(self.i)
                    .is_some_and(|c| matches!(c, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                {
                    self.i += 1;
                }
                let text = std::str::from_utf8(self.s.get(start..self.i).unwrap_or(b"")).unwrap_or("");
                match text.parse::<f64>() {
                    Ok(f) if f.is_finite() => Ok(Value::Float(f)),
                    _ => {
                        self.error.get_or_insert_with(|| {
                            JsonError::Decode(format!(
                                "json: cannot unmarshal number {text} into Go value of type float64"
                            ))
                        });
                        Ok(Value::Nil)
                    }
                }
            }
            None => Err(eof()),
        }
    }

    /// A string literal at `self.i` (validated), with lone surrogates as U+FFFD like Go.
    fn string(&mut self) -> String {
        self.i += 1;
        let mut out: Vec<u8> = Vec::new();
        while let Some(&c) = self.s.get(self.i) {
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let e = self.s.get(self.i).copied().unwrap_or(b'"');
                    self.i += 1;
                    let ch = match e {
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape(),
                        other => char::from(other),
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                c => out.push(c),
            }
        }
        // Go replaces invalid UTF-8 with U+FFFD; input is a Rust str, so it is always valid.
        String::from_utf8_lossy(&out).into_owned()
    }

    fn hex4(&mut self) -> Option<u32> {
        let h = self.s.get(self.i..self.i + 4)?;
        let v = u32::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()?;
        self.i += 4;
        Some(v)
    }

    fn unicode_escape(&mut self) -> char {
        let Some(hi) = self.hex4() else {
            return '\u{fffd}';
        };
        if (0xD800..0xDC00).contains(&hi) {
            // A high surrogate pairs only with a following `\uDC00`–`\uDFFF` escape.
            if self.s.get(self.i..self.i + 2) == Some(b"\\u") {
                let save = self.i;
                self.i += 2;
                if let Some(lo) = self.hex4()
                    && (0xDC00..0xE000).contains(&lo)
                {
                    let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                    return char::from_u32(c).unwrap_or('\u{fffd}');
                }
                self.i = save;
            }
            return '\u{fffd}';
        }
        char::from_u32(hi).unwrap_or('\u{fffd}')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_like_go() {
        let cases = [
            (0.0, "0"),
            (-0.0, "-0"),
            (1e6, "1000000"),
            (0.1, "0.1"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (1e-6, "0.000001"),
            (1.234e-10, "1.234e-10"),
            (-2.5e300, "-2.5e+300"),
        ];
        for (f, want) in cases {
            assert_eq!(format_float(f).unwrap(), want, "{f}");
        }
        assert!(format_float(f64::NAN).is_err());
    }

    /// A struct whose JSON field order is not alphabetical.
    struct Point;

    impl capstan_go::value::Object for Point {
        fn type_name(&self) -> String {
            "main.Point".into()
        }
        fn kind(&self) -> &'static str {
            "struct"
        }
        fn field(&self, _: &str) -> Option<Value> {
            None
        }
        fn format(&self) -> String {
            "{2 1}".into()
        }
        fn json_fields(&self) -> Option<Vec<(String, Value)>> {
            Some(vec![("Y".into(), Value::Int(2)), ("X".into(), Value::Int(1))])
        }
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
    }

    #[test]
    fn structs_keep_field_order() {
        let v = Value::Object(Rc::new(Point));
        assert_eq!(marshal(&v).unwrap(), r#"{"Y":2,"X":1}"#);
    }

    #[test]
    fn strings_escape_html() {
        let mut s = String::new();
        write_string(&mut s, "<a&b>\u{2028}\u{1}\"", true);
        assert_eq!(s, r#""\u003ca\u0026b\u003e\u2028\u0001\"""#);
        let mut raw = String::new();
        write_string(&mut raw, "<&>", false);
        assert_eq!(raw, r#""<&>""#);
    }

    #[test]
    fn byte_strings_write_each_invalid_byte_as_replacement_escape() {
        let mut s = String::new();
        write_byte_string(&mut s, b"<\xe2\x82\xff\xef\xbf\xbd", true);
        // A valid U+FFFD stays literal; each invalid byte becomes the escape.
        assert_eq!(s, "\"\\u003c\\ufffd\\ufffd\\ufffd\u{fffd}\"");
    }

    #[test]
    fn decode_errors_match_go() {
        let err = |t: &str| unmarshal(t).unwrap_err().to_string();
        assert_eq!(err(""), "unexpected end of JSON input");
        assert_eq!(err("{\"a\":1}x"), "invalid character 'x' after top-level value");
        assert_eq!(
            err("[1,]"),
            "invalid character ']' looking for beginning of value"
        );
        assert_eq!(
            err("tru"),
            "invalid character ' ' in literal true (expecting 'e')"
        );
        assert_eq!(err("[1"), "unexpected end of JSON input");
    }

    #[test]
    fn decodes_numbers_as_float() {
        let v = unmarshal("[1, -2.5e3, \"\\ud83d\\ude00\"]").unwrap();
        let l = v.as_list().unwrap();
        assert!(matches!(l.items[0], Value::Float(f) if f == 1.0));
        assert!(matches!(l.items[1], Value::Float(f) if f == -2500.0));
        assert_eq!(l.items[2].as_str(), Some("😀"));
    }
}

#[cfg(test)]
mod deep_tests {
    use super::*;

    #[test]
    fn deep_documents_decode_and_encode() {
        // Dropping a 10000-deep value recurses in the value model's drop glue, which needs
        // more than a test thread's default stack.
        let run = || {
            let text = format!("{}{}", "[".repeat(9999), "]".repeat(9999));
            let v = unmarshal(&text).unwrap();
            assert_eq!(marshal(&v).unwrap(), text);
            let too_deep = format!("{}{}", "[".repeat(10001), "]".repeat(10001));
            assert_eq!(
                unmarshal(&too_deep).unwrap_err().to_string(),
                "invalid character '[' exceeded max depth"
            );
        };
        std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn(run)
            .unwrap()
            .join()
            .unwrap();
    }
}
