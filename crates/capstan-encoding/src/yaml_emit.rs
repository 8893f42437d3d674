//! `sigs.k8s.io/yaml.Marshal` as Helm's `toYaml` uses it, byte for byte.
//!
//! That library encodes to JSON, lets go-yaml v2 decode the JSON (integral numbers become
//! ints, others float64, object keys strings) and re-encodes with the go-yaml v2 emitter. We
//! build the same decoded tree straight from the value ([`Node`]) and reproduce the emitter's
//! observable rules: YAML 1.1 resolution decides plain vs quoted strings, go-yaml's "natural"
//! key order, 2-space indentation with sequences flush under mapping keys, literal block
//! scalars for multi-line strings, folding at 80 columns, escapes in double quotes.

use std::cmp::Ordering;

use base64::Engine as _;

use crate::json;
use capstan_go::value::Value;

/// Nesting deeper than this is refused (the emitter recurses once per level).
const MAX_DEPTH: usize = 10_000;

/// Why a value cannot be written as YAML; `Display` is Go's error text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum YamlEmitError {
    /// `encoding/json` refused the value (NaN, a cycle, …).
    #[error("error marshaling into JSON: {0}")]
    Json(#[from] json::JsonError),
    /// go-yaml's reader rejects characters JSON leaves unescaped (DEL, C1 controls, …).
    #[error("yaml: control characters are not allowed")]
    ControlCharacter,
    #[error("yaml: nesting too deep")]
    TooDeep,
    /// A key holding a raw NEL: go-yaml's scanner sees a key spanning lines.
    #[error("yaml: line {line}: did not find expected ',' or '}}'")]
    KeyLineBreak { line: usize },
    /// More nodes than we are willing to hold (shared references can multiply a value).
    #[error("yaml: value too large")]
    TooLarge,
}

/// The value tree go-yaml v2 decodes from the JSON text.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
    /// A string that is not valid UTF-8, which go-yaml v3 writes as a `!!binary` scalar: the
    /// base64 text, broken into lines of 70 when longer than one line.
    Binary(String),
    Seq(Vec<Node>),
    /// Entries in any order: the emitter sorts keys the way its go-yaml version does.
    Map(Vec<(String, Node)>),
    /// A Go struct encoded directly by go-yaml v3: its fields in declaration order.
    Struct(Vec<(String, Node)>),
    /// A `time.Time` encoded directly by go-yaml v3: RFC 3339 text as a plain scalar.
    Timestamp(String),
}

/// Emitter settings that differ between go-yaml v2 (`toYaml`) and v3 (`toYamlPretty`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flavor {
    /// Indent block sequences under a mapping key (`a:\n  - x`) instead of flush.
    pub indent_sequences: bool,
    /// Fold long plain/quoted scalars past this column; `None` never folds.
    pub width: Option<usize>,
    /// go-yaml v3 rules: a letter sorts before other characters right after a digit
    /// (`1e` < `1.0`), and tabs are allowed in literal block scalars.
    pub v3: bool,
}

/// go-yaml v2 as sigs.k8s.io/yaml configures it.
pub const V2: Flavor = Flavor {
    indent_sequences: false,
    width: Some(80),
    v3: false,
};

/// go-yaml v3 `Encoder` with `SetIndent(2)` (Helm's `toYamlPretty`).
pub const V3_PRETTY: Flavor = Flavor {
    indent_sequences: true,
    width: None,
    v3: true,
};

/// `sigs.k8s.io/yaml.Marshal(v)`: the YAML document, ending in a newline.
pub fn marshal(v: &Value) -> Result<String, YamlEmitError> {
    // The JSON step decides which values fail (NaN, cycles) and with which message.
    json::marshal(v)?;
    let mut budget = Build::new(true);
    let node = json_round_trip(v, 0, &mut budget)?;
    Ok(emit(&node, V2))
}

/// go-yaml v3 encoding of `v` without a JSON round trip (floats stay floats).
pub fn marshal_pretty(v: &Value) -> Result<String, YamlEmitError> {
    // No JSON step: NaN and infinities are written (`.nan`); a reference cycle, on which Go
    // would overflow its stack, ends at the depth limit.
    let mut budget = Build::new(false);
    let node = direct_node(v, 0, &mut budget)?;
    Ok(emit(&node, V3_PRETTY))
}

/// At most this many nodes are built for one encoding.
const MAX_NODES: usize = 4_000_000;

/// State while building the tree.
pub struct Build {
    nodes_left: usize,
    /// Building what go-yaml reads back from JSON (its reader rules apply to keys too).
    json: bool,
    /// Raw NELs (line breaks to go-yaml) written so far, in JSON order.
    nels: usize,
}

impl Build {
    pub fn new(json: bool) -> Build {
        Build {
            nodes_left: MAX_NODES,
            json,
            nels: 0,
        }
    }
}

fn spend(budget: &mut Build) -> Result<(), YamlEmitError> {
    budget.nodes_left = budget.nodes_left.checked_sub(1).ok_or(YamlEmitError::TooLarge)?;
    Ok(())
}

/// The tree go-yaml v2 decodes from `json.Marshal(v)`.
pub fn json_round_trip(v: &Value, depth: usize, budget: &mut Build) -> Result<Node, YamlEmitError> {
    if depth > MAX_DEPTH {
        return Err(YamlEmitError::TooDeep);
    }
    spend(budget)?;
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || json_node(v, depth, budget))
}

fn json_node(v: &Value, depth: usize, budget: &mut Build) -> Result<Node, YamlEmitError> {
    Ok(match v {
        Value::Nil => Node::Null,
        Value::Bool(b) => Node::Bool(*b),
        Value::Int(i) | Value::Int64(i) => Node::Int(*i),
        Value::Uint8(u) => Node::Int(i64::from(*u)),
        Value::Uint64(u) => resolve_json_number(&u.to_string()),
        Value::Float(f) => resolve_json_number(&json::format_float(*f)?),
        Value::String(_) | Value::ByteString(_) => {
            // `encoding/json` writes each invalid byte of a byte string as `\ufffd`.
            let s = v.go_str_lossy().unwrap_or_default();
            check_reader_chars(&s)?;
            budget.nels += s.matches('\u{85}').count();
            Node::Str(fold_line_breaks(&s))
        }
        Value::Bytes(b) => Node::Str(base64::engine::general_purpose::STANDARD.encode(b)),
        // Typed nils marshal as JSON `null`.
        Value::List(l) if l.nil => Node::Null,
        Value::Map(m) if m.nil => Node::Null,
        Value::List(l) => Node::Seq(
            l.items
                .iter()
                .map(|item| json_round_trip(item, depth + 1, budget))
                .collect::<Result<_, _>>()?,
        ),
        Value::Map(m) => map_node(m.snapshot(), depth, budget, json_round_trip)?,
        Value::Object(o) if o.is_nil() => Node::Null,
        Value::Object(o) => match o.json_fields().or_else(|| o.entries()) {
            Some(entries) => map_node(entries, depth, budget, json_round_trip)?,
            None => json_round_trip(&o.to_data(), depth + 1, budget)?,
        },
    })
}

/// The tree go-yaml v3 sees when it encodes the Go value itself.
fn direct_node(v: &Value, depth: usize, budget: &mut Build) -> Result<Node, YamlEmitError> {
    if depth > MAX_DEPTH {
        return Err(YamlEmitError::TooDeep);
    }
    spend(budget)?;
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || direct_inner(v, depth, budget))
}

fn direct_inner(v: &Value, depth: usize, budget: &mut Build) -> Result<Node, YamlEmitError> {
    Ok(match v {
        Value::Float(f) => Node::Float(*f),
        Value::String(s) => Node::Str(s.to_string()),
        Value::ByteString(b) => Node::Binary(yaml_base64(b)),
        Value::List(l) => Node::Seq(
            l.items
                .iter()
                .map(|item| direct_node(item, depth + 1, budget))
                .collect::<Result<_, _>>()?,
        ),
        Value::Map(m) => map_node(m.snapshot(), depth, budget, direct_node)?,
        Value::Object(o) if o.is_nil() => Node::Null,
        // go-yaml v3 writes a time as its RFC 3339 text (the JSON form without quotes).
        Value::Object(o) if o.type_name() == "time.Time" => match o.to_data() {
            Value::String(text) => Node::Timestamp(text.to_string()),
            other => direct_node(&other, depth + 1, budget)?,
        },
        // A struct: its exported fields in order, named by their lowercased Go names.
        Value::Object(o) if o.fmt_fields().is_some() => {
            let mut fields = Vec::new();
            for (name, value) in o.fmt_fields().unwrap_or_default() {
                if name.starts_with(|c: char| c.is_ascii_uppercase()) {
                    fields.push((name.to_ascii_lowercase(), direct_node(&value, depth + 1, budget)?));
                }
            }
            Node::Struct(fields)
        }
        Value::Object(o) => match o.json_fields().or_else(|| o.entries()) {
            Some(entries) => map_node(entries, depth, budget, direct_node)?,
            None => direct_node(&o.to_data(), depth + 1, budget)?,
        },
        other => json_node(other, depth, budget)?,
    })
}

/// go-yaml v3's `encodeBase64`: standard base64, and when it is longer than one line of 70
/// characters, every line (the last included) ends in a newline.
fn yaml_base64(data: &[u8]) -> String {
    const LINE: usize = 70;
    let text = base64::engine::general_purpose::STANDARD.encode(data);
    if text.len() < LINE {
        return text;
    }
    let mut out = String::with_capacity(text.len() + text.len() / LINE + 1);
    for line in text.as_bytes().chunks(LINE) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out
}

type Convert = fn(&Value, usize, &mut Build) -> Result<Node, YamlEmitError>;

fn map_node(
    entries: Vec<(String, Value)>,
    depth: usize,
    budget: &mut Build,
    convert: Convert,
) -> Result<Node, YamlEmitError> {
    let mut out = Vec::with_capacity(entries.len());
    for (k, v) in &entries {
        if budget.json {
            check_reader_chars(k)?;
            // A line break inside a flow mapping key ends the key too early for go-yaml.
            if k.contains('\u{85}') {
                return Err(YamlEmitError::KeyLineBreak {
                    line: budget.nels + 1,
                });
            }
        }
        out.push((k.clone(), convert(v, depth + 1, budget)?));
    }
    Ok(Node::Map(out))
}

/// go-yaml's reader refuses these characters in its input; `encoding/json` leaves them raw.
fn check_reader_chars(s: &str) -> Result<(), YamlEmitError> {
    let bad = |c: char| {
        let c = u32::from(c);
        c == 0x7F || ((0x80..=0x9F).contains(&c) && c != 0x85) || c == 0xFFFE || c == 0xFFFF
    };
    if s.chars().any(bad) {
        return Err(YamlEmitError::ControlCharacter);
    }
    Ok(())
}

/// go-yaml reads the JSON string as a double-quoted scalar, where a raw NEL (the only line
/// break `encoding/json` leaves unescaped) folds: with the spaces around it, a single break
/// becomes one space and `n` breaks become `n-1` newlines.
fn fold_line_breaks(s: &str) -> String {
    if !s.contains('\u{85}') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        let breaks = run.chars().filter(|&c| c == '\u{85}').count();
        match breaks {
            0 => out.push_str(run),
            1 => out.push(' '),
            n => out.extend(std::iter::repeat_n('\n', n - 1)),
        }
        run.clear();
    };
    for c in s.chars() {
        if c == ' ' || c == '\u{85}' {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

/// How go-yaml v2 resolves a number `encoding/json` wrote: an int when it parses as one
/// (`int64`, else `uint64`), a float64 otherwise.
fn resolve_json_number(text: &str) -> Node {
    if let Ok(i) = text.parse::<i64>() {
        return Node::Int(i);
    }
    if let Ok(u) = text.parse::<u64>() {
        return Node::Uint(u);
    }
    Node::Float(text.parse::<f64>().unwrap_or(0.0))
}

// ---------------------------------------------------------------------------------------------
// Key order

/// go-yaml v2's map key order for string keys: runs of digits compare numerically, letters
/// sort after non-letters, otherwise code point order, a prefix first.
///
/// The comparison is not transitive for some mixes of digit runs and letters (`4004` <
/// `4a` < `8zA2` < `4004`). go-yaml then sorts Go's randomly ordered map keys into one of
/// several orders, so Helm's own output varies between runs; ours is one of them.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    natural_cmp_in(a, b, false)
}

/// The key order of go-yaml v2 (`v3 == false`) or v3.
pub fn natural_cmp_in(a: &str, b: &str, v3: bool) -> Ordering {
    if natural_less(a, b, v3) {
        Ordering::Less
    } else if natural_less(b, a, v3) {
        Ordering::Greater
    } else {
        a.cmp(b)
    }
}

fn natural_less(a: &str, b: &str, v3: bool) -> bool {
    // Keys are nearly always ASCII: compare their bytes (each byte is its char) without
    // collecting chars, which sorting would otherwise do twice per comparison.
    if a.is_ascii() && b.is_ascii() {
        return natural_less_chars(a.as_bytes(), b.as_bytes(), v3);
    }
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    natural_less_chars(&ar, &br, v3)
}

fn natural_less_chars<C: Copy + Into<char>>(ar: &[C], br: &[C], v3: bool) -> bool {
    let at = |s: &[C], i: usize| -> char { s[i].into() };
    let digit = |c: char| c.is_ascii_digit();
    let mut after_digit = false;
    for i in 0..ar.len().min(br.len()) {
        let (ca, cb) = (at(ar, i), at(br, i));
        if ca == cb {
            after_digit = digit(ca);
            continue;
        }
        let (al, bl) = (ca.is_alphabetic(), cb.is_alphabetic());
        if al && bl {
            return ca < cb;
        }
        if al || bl {
            return if v3 && after_digit { al } else { bl };
        }
        // A digit run that started earlier with a non-zero digit is a number already under
        // way: its zeros are significant. Leading zeros otherwise compare as the value 0.
        let (mut an, mut bn): (i64, i64) = (0, 0);
        if ca == '0' || cb == '0' {
            let mut j = i;
            while j > 0 && digit(at(ar, j - 1)) {
                j -= 1;
                if at(ar, j) != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && digit(at(ar, ai)) {
            an = an
                .wrapping_mul(10)
                .wrapping_add(i64::from(at(ar, ai) as u8 - b'0'));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && digit(at(br, bi)) {
            bn = bn
                .wrapping_mul(10)
                .wrapping_add(i64::from(at(br, bi) as u8 - b'0'));
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ca < cb;
    }
    ar.len() < br.len()
}

// ---------------------------------------------------------------------------------------------
// Scalars: resolution and formatting

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)` as go-yaml writes floats.
pub fn format_float_g(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let e = format!("{f:e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", exp.unsigned_abs())
    } else {
        format!("{f}")
    }
}

/// Whether go-yaml v2 would read `s`, written plain, as something other than a string
/// (`yes`, `~`, `1.5`, `0x1f`, `2024-01-01`, …), or as a base-60 float it quotes anyway.
pub fn resolves_as_non_string(s: &str) -> bool {
    const SPECIAL: &[&str] = &[
        "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON", "n", "N", "no", "No", "NO",
        "false", "False", "FALSE", "off", "Off", "OFF", "", "~", "null", "Null", "NULL", ".nan", ".NaN",
        ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", "<<",
    ];
    let Some(first) = s.bytes().next() else {
        return true;
    };
    let hint = match first {
        b'+' | b'-' => 'S',
        b'0'..=b'9' => 'D',
        b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~' => 'M',
        b'.' => '.',
        _ => return false,
    };
    if SPECIAL.contains(&s) {
        return true;
    }
    match hint {
        '.' => go_parse_float(s).is_some(),
        'D' | 'S' => {
            if is_timestamp(s) {
                return true;
            }
            let plain = s.replace('_', "");
            go_parse_int(&plain)
                || (is_yaml_style_float(&plain) && go_parse_float(&plain).is_some())
                || binary_int(&plain)
                || is_base60_float(s)
        }
        _ => false,
    }
}

/// `strconv.ParseInt(s, 0, 64)` or `ParseUint(s, 0, 64)` succeeding.
fn go_parse_int(s: &str) -> bool {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits) = if let Some(d) = body.strip_prefix("0x").or(body.strip_prefix("0X")) {
        (16, d)
    } else if let Some(d) = body.strip_prefix("0b").or(body.strip_prefix("0B")) {
        (2, d)
    } else if let Some(d) = body.strip_prefix("0o").or(body.strip_prefix("0O")) {
        (8, d)
    } else if body.len() > 1 && body.starts_with('0') {
        (8, &body[1..])
    } else {
        (10, body)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return false;
    }
    match u64::from_str_radix(digits, radix) {
        // ParseUint takes no sign; ParseInt bounds the magnitude by int64.
        Ok(v) => !neg || v <= 1u64 << 63,
        Err(_) => false,
    }
}

fn binary_int(s: &str) -> bool {
    let body = s.strip_prefix('-').unwrap_or(s);
    body.strip_prefix("0b")
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|c| c == b'0' || c == b'1'))
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn is_yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i > start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if !digits(&mut i) {
            return false;
        }
    } else {
        if !digits(&mut i) {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !digits(&mut i) {
            return false;
        }
    }
    i == b.len()
}

/// `strconv.ParseFloat(s, 64)` without error (finite; Go reports overflow as an error).
fn go_parse_float(s: &str) -> Option<f64> {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let lower = body.to_ascii_lowercase();
    if matches!(lower.as_str(), "inf" | "infinity" | "nan") {
        return Some(0.0);
    }
    // Rust accepts exactly the decimal forms Go does, minus Go's hex floats and underscores
    // (only allowed with a base prefix), which never reach here as floats.
    if !body
        .bytes()
        .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return None;
    }
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`
fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    if !b.get(i).is_some_and(u8::is_ascii_digit) {
        return false;
    }
    while b.get(i).is_some_and(|c| c.is_ascii_digit() || *c == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while b.get(i) == Some(&b':') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) && i - start < 2 {
            i += 1;
        }
        let group = &b[start..i];
        let ok = match group {
            [d] => d.is_ascii_digit(),
            [h, _] => (b'0'..=b'5').contains(h),
            _ => false,
        };
        if !ok {
            return false;
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while b.get(i).is_some_and(|c| c.is_ascii_digit() || *c == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// go-yaml's timestamp formats (`2006-1-2`, with `T`/`t`/space time parts), with Go
/// `time.Parse` range checks.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let mut i = 5;
    // One or two digits, as Go's `1`/`2`/`15`/`4`/`5` layout elements accept.
    let num = |i: &mut usize| -> Option<u32> {
        let start = *i;
        while *i < b.len() && *i - start < 2 && b[*i].is_ascii_digit() {
            *i += 1;
        }
        if *i == start {
            return None;
        }
        std::str::from_utf8(&b[start..*i]).ok()?.parse().ok()
    };
    let year: u32 = s[..4].parse().unwrap_or(0);
    let Some(month) = num(&mut i) else {
        return false;
    };
    if b.get(i) != Some(&b'-') {
        return false;
    }
    i += 1;
    let Some(day) = num(&mut i) else {
        return false;
    };
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return false;
    }
    if i == b.len() {
        return true;
    }
    let sep = b[i];
    if !matches!(sep, b'T' | b't' | b' ') {
        return false;
    }
    i += 1;
    let (Some(h), true) = (num(&mut i), b.get(i) == Some(&b':')) else {
        return false;
    };
    i += 1;
    let (Some(m), true) = (num(&mut i), b.get(i) == Some(&b':')) else {
        return false;
    };
    i += 1;
    let Some(sec) = num(&mut i) else {
        return false;
    };
    if h >= 24 || m >= 60 || sec >= 60 {
        return false;
    }
    if matches!(b.get(i), Some(b'.' | b',')) && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i += 1;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    if sep == b' ' {
        return i == b.len();
    }
    match b.get(i) {
        Some(b'Z') => i + 1 == b.len(),
        Some(b'+' | b'-') => {
            let z = &b[i + 1..];
            z.len() == 5
                && z[0].is_ascii_digit()
                && z[1].is_ascii_digit()
                && z[2] == b':'
                && z[3].is_ascii_digit()
                && z[4].is_ascii_digit()
        }
        _ => false,
    }
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

// ---------------------------------------------------------------------------------------------
// Scalar analysis (what the emitter allows for a given text)

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn is_blankz(c: Option<char>) -> bool {
    match c {
        None => true,
        Some(c) => c == ' ' || c == '\t' || c == '\0' || is_break(c),
    }
}

fn is_printable(c: char) -> bool {
    let v = u32::from(c);
    v == 0x0A
        || (0x20..=0x7E).contains(&v)
        || (0xA0..=0xD7FF).contains(&v)
        || ((0xE000..=0xFFFD).contains(&v) && v != 0xFEFF)
}

#[derive(Debug, Default)]
struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

fn analyze(value: &str, v3: bool) -> Analysis {
    if value.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let chars: Vec<char> = value.chars().collect();
    let mut block_indicators = value.starts_with("---") || value.starts_with("...");
    let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
        (false, false, false, false);
    let (mut break_space, mut space_break, mut previous_space, mut previous_break) =
        (false, false, false, false);
    let (mut line_breaks, mut special, mut tab) = (false, false, false);
    let mut preceded_by_ws = true;
    let mut followed_by_ws = is_blankz(chars.get(1).copied());
    let last = chars.len() - 1;
    for (i, &c) in chars.iter().enumerate() {
        if i == 0 {
            if "#,[]{}&*!|>'\"%@`".contains(c) {
                block_indicators = true;
            }
            if (c == '?' || c == ':' || c == '-') && followed_by_ws {
                block_indicators = true;
            }
        } else {
            if c == ':' && followed_by_ws {
                block_indicators = true;
            }
            if c == '#' && preceded_by_ws {
                block_indicators = true;
            }
        }
        if c == '\t' && v3 {
            // v3 keeps tabs out of plain and single-quoted scalars but allows them in blocks.
            tab = true;
        } else if !is_printable(c) {
            special = true;
        }
        if c == ' ' {
            if i == 0 {
                leading_space = true;
            }
            if i == last {
                trailing_space = true;
            }
            if previous_break {
                break_space = true;
            }
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            line_breaks = true;
            if i == 0 {
                leading_break = true;
            }
            if i == last {
                trailing_break = true;
            }
            if previous_space {
                space_break = true;
            }
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_ws = is_blankz(Some(c));
        if i < last {
            followed_by_ws = is_blankz(chars.get(i + 2).copied());
        }
    }
    let mut a = Analysis {
        multiline: line_breaks,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain_allowed = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
        a.block_allowed = false;
    }
    if line_breaks || block_indicators {
        a.block_plain_allowed = false;
    }
    if tab {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    a
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

/// The style go-yaml's encoder asks for (`stringv`), then the emitter's downgrades.
fn select_style(s: &str, a: &Analysis, simple_key: bool) -> Style {
    let mut style = if s.contains('\n') {
        Style::Literal
    } else if !resolves_as_non_string(s) {
        Style::Plain
    } else {
        Style::Double
    };
    if simple_key && a.multiline {
        style = Style::Double;
    }
    if style == Style::Plain && (!a.block_plain_allowed || (s.is_empty() && simple_key)) {
        style = Style::Single;
    }
    if style == Style::Single && !a.single_quoted_allowed {
        style = Style::Double;
    }
    if style == Style::Literal && (!a.block_allowed || simple_key) {
        style = Style::Double;
    }
    style
}

// ---------------------------------------------------------------------------------------------
// The emitter

/// Writes `node` as one YAML document the way go-yaml's emitter does.
pub fn emit(node: &Node, flavor: Flavor) -> String {
    let mut e = Emitter {
        out: String::new(),
        column: 0,
        whitespace: true,
        indention: true,
        indent: -1,
        flavor,
    };
    e.node(node, false, false);
    e.write_indent();
    e.out
}

struct Emitter {
    out: String,
    /// Characters written on the current line.
    column: usize,
    /// The last character written was whitespace (no separator needed).
    whitespace: bool,
    /// Only indentation (and indicators like `- `) on the current line so far.
    indention: bool,
    indent: i64,
    flavor: Flavor,
}

const BEST_INDENT: i64 = 2;
/// Keys longer than this (in bytes) are written as `? key` complex keys.
const MAX_SIMPLE_KEY: usize = 128;

impl Emitter {
    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
        }
    }

    fn write_indent(&mut self) {
        let indent = usize::try_from(self.indent.max(0)).unwrap_or(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(&mut self, ind: &str, need_ws: bool, is_ws: bool, is_indention: bool) {
        if need_ws && !self.whitespace {
            self.put(' ');
        }
        for c in ind.chars() {
            self.put(c);
        }
        self.whitespace = is_ws;
        self.indention = self.indention && is_indention;
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn over_width(&self) -> bool {
        self.flavor.width.is_some_and(|w| self.column > w)
    }

    /// Emits a node; `mapping_value` is go-yaml's `mapping_context` for a value position.
    fn node(&mut self, node: &Node, mapping_value: bool, simple_key: bool) {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            self.node_inner(node, mapping_value, simple_key)
        });
    }

    fn node_inner(&mut self, node: &Node, mapping_value: bool, simple_key: bool) {
        match node {
            Node::Null => self.scalar_plain("null", simple_key),
            Node::Bool(b) => self.scalar_plain(if *b { "true" } else { "false" }, simple_key),
            Node::Int(i) => self.scalar_plain(&i.to_string(), simple_key),
            Node::Uint(u) => self.scalar_plain(&u.to_string(), simple_key),
            Node::Float(f) => self.scalar_plain(&format_float_g(*f), simple_key),
            Node::Str(s) => self.string(s, simple_key),
            Node::Binary(text) => self.binary(text),
            Node::Seq(items) if items.is_empty() => self.empty_flow("[]"),
            Node::Timestamp(text) => self.scalar_plain(text, simple_key),
            Node::Map(entries) | Node::Struct(entries) if entries.is_empty() => self.empty_flow("{}"),
            Node::Seq(items) => self.sequence(items, mapping_value),
            Node::Map(entries) => {
                let v3 = self.flavor.v3;
                let mut sorted: Vec<&(String, Node)> = entries.iter().collect();
                sorted.sort_by(|a, b| natural_cmp_in(&a.0, &b.0, v3));
                self.mapping(&sorted);
            }
            Node::Struct(fields) => self.mapping(&fields.iter().collect::<Vec<_>>()),
        }
    }

    fn empty_flow(&mut self, text: &str) {
        self.write_indicator(&text[..1], true, true, false);
        self.write_indicator(&text[1..], false, false, false);
    }

    fn sequence(&mut self, items: &[Node], mapping_value: bool) {
        let saved = self.indent;
        let indentless = mapping_value && !self.indention && !self.flavor.indent_sequences;
        self.increase_indent(false, indentless);
        for item in items {
            self.write_indent();
            self.write_indicator("-", true, false, true);
            self.node(item, false, false);
        }
        self.indent = saved;
    }

    /// A block mapping of `entries` in the order given.
    fn mapping(&mut self, entries: &[&(String, Node)]) {
        let saved = self.indent;
        self.increase_indent(false, false);
        for (key, value) in entries.iter().copied() {
            self.write_indent();
            let simple = key.len() <= MAX_SIMPLE_KEY && !analyze(key, self.flavor.v3).multiline;
            if simple {
                self.string(key, true);
                self.write_indicator(":", false, false, false);
            } else {
                self.write_indicator("?", true, false, true);
                self.string(key, false);
                self.write_indent();
                self.write_indicator(":", true, false, true);
            }
            self.node(value, true, false);
        }
        self.indent = saved;
    }

    /// A `!!binary` scalar: the tag, then the base64 text plain, or as a literal block when
    /// it spans lines.
    fn binary(&mut self, text: &str) {
        let saved = self.indent;
        self.increase_indent(true, false);
        self.write_indicator("!!binary", true, false, false);
        if text.contains('\n') {
            self.write_literal(text);
        } else {
            self.write_plain(text, true);
        }
        self.indent = saved;
    }

    fn scalar_plain(&mut self, text: &str, simple_key: bool) {
        let saved = self.indent;
        self.increase_indent(true, false);
        self.write_plain(text, !simple_key);
        self.indent = saved;
    }

    fn string(&mut self, s: &str, simple_key: bool) {
        let a = analyze(s, self.flavor.v3);
        let style = select_style(s, &a, simple_key);
        let saved = self.indent;
        self.increase_indent(true, false);
        let allow_breaks = !simple_key;
        match style {
            Style::Plain => self.write_plain(s, allow_breaks),
            Style::Single => self.write_single(s, allow_breaks),
            Style::Double => self.write_double(s, allow_breaks),
            Style::Literal => self.write_literal(s),
        }
        self.indent = saved;
    }

    fn write_plain(&mut self, s: &str, allow_breaks: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        self.write_folding(s, allow_breaks, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_single(&mut self, s: &str, allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        self.write_folding(s, allow_breaks, true);
        self.write_indicator("'", false, false, false);
    }

    /// The text of a plain or single-quoted scalar: a space may fold into a line break past
    /// the width (in quotes, never the first or last character), line breaks are kept (the
    /// first `\n` of a run doubled, as folding would eat it), and in quotes `'` is doubled.
    fn write_folding(&mut self, s: &str, allow_breaks: bool, single_quoted: bool) {
        let chars: Vec<char> = s.chars().collect();
        let last = chars.len().saturating_sub(1);
        let (mut spaces, mut breaks) = (false, false);
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.over_width()
                    && (!single_quoted || (i != 0 && i != last))
                    && chars.get(i + 1) != Some(&' ')
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if single_quoted && c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
    }

    fn write_double(&mut self, s: &str, allow_breaks: bool) {
        self.write_indicator("\"", true, false, false);
        let chars: Vec<char> = s.chars().collect();
        let last = chars.len().saturating_sub(1);
        let mut spaces = false;
        // go-yaml's BOM test looks at the start of the value, not at the current character:
        // a value starting with a BOM has every character escaped.
        let starts_with_bom = chars.first() == Some(&'\u{FEFF}');
        for (i, &c) in chars.iter().enumerate() {
            if !is_printable(c) || starts_with_bom || is_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                let v = u32::from(c);
                match c {
                    '\0' => self.put('0'),
                    '\u{7}' => self.put('a'),
                    '\u{8}' => self.put('b'),
                    '\t' => self.put('t'),
                    '\n' => self.put('n'),
                    '\u{b}' => self.put('v'),
                    '\u{c}' => self.put('f'),
                    '\r' => self.put('r'),
                    '\u{1b}' => self.put('e'),
                    '"' => self.put('"'),
                    '\\' => self.put('\\'),
                    '\u{85}' => self.put('N'),
                    '\u{a0}' => self.put('_'),
                    '\u{2028}' => self.put('L'),
                    '\u{2029}' => self.put('P'),
                    _ => {
                        let (tag, width) = if v <= 0xFF {
                            ('x', 2)
                        } else if v <= 0xFFFF {
                            ('u', 4)
                        } else {
                            ('U', 8)
                        };
                        self.put(tag);
                        for ch in format!("{v:0width$X}").chars() {
                            self.put(ch);
                        }
                    }
                }
                spaces = false;
            } else if c == ' ' {
                if allow_breaks && !spaces && self.over_width() && i != 0 && i != last {
                    self.write_indent();
                    if chars.get(i + 1) == Some(&' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false, false);
    }

    fn write_literal(&mut self, s: &str) {
        self.write_indicator("|", true, false, false);
        let chars: Vec<char> = s.chars().collect();
        if chars.first().is_some_and(|&c| c == ' ' || is_break(c)) {
            self.write_indicator("2", false, false, false);
        }
        let chomp = match chars.as_slice() {
            [] => Some("-"),
            [.., last] if !is_break(*last) => Some("-"),
            [_] => Some("+"),
            [.., prev, _] if is_break(*prev) => Some("+"),
            _ => None,
        };
        if let Some(ch) = chomp {
            self.write_indicator(ch, false, false, false);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for &c in &chars {
            if is_break(c) {
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn y(node: Node) -> String {
        emit(&node, V2)
    }

    fn s(x: &str) -> Node {
        Node::Str(x.into())
    }

    #[test]
    fn natural_order_matches_go_yaml() {
        let want = [
            "-x", ".x", "_", "1", "9", "10", "A", "Z", "a", "a-b", "a_b", "a1", "a2", "a10", "aB", "ab", "b",
            "z0", "z00", "z01", "é",
        ];
        let mut keys: Vec<&str> = want.to_vec();
        keys.reverse();
        keys.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(keys, want);
    }

    #[test]
    fn quoting() {
        assert_eq!(y(s("abc")), "abc\n");
        assert_eq!(y(s("yes")), "\"yes\"\n");
        assert_eq!(y(s("|x")), "'|x'\n");
        assert_eq!(y(s("")), "\"\"\n");
        assert_eq!(y(s("a\u{0}b")), "\"a\\0b\"\n");
        assert_eq!(y(s("a😀b")), "\"a\\U0001F600b\"\n");
        assert_eq!(y(s("2024-01-01")), "\"2024-01-01\"\n");
        assert_eq!(y(s("2024-02-30")), "2024-02-30\n");
        assert_eq!(y(s("12:30")), "\"12:30\"\n");
        assert_eq!(y(s("0x")), "0x\n");
        assert_eq!(y(s("09")), "\"09\"\n");
    }

    #[test]
    fn block_layout() {
        let m = Node::Map(vec![
            (
                "a".into(),
                Node::Seq(vec![Node::Int(1), Node::Seq(vec![Node::Int(2)])]),
            ),
            ("b".into(), Node::Map(vec![("c".into(), s("x\ny\n"))])),
            ("e".into(), Node::Map(vec![])),
        ]);
        assert_eq!(y(m), "a:\n- 1\n- - 2\nb:\n  c: |\n    x\n    y\ne: {}\n");
        assert_eq!(y(s("a\nb\n")), "|\n  a\n  b\n");
        assert_eq!(y(s("a\n\n")), "|+\n  a\n\n");
        assert_eq!(y(s(" a\nb")), "|2-\n   a\n  b\n");
    }

    #[test]
    fn floats_g() {
        assert_eq!(format_float_g(1.5), "1.5");
        assert_eq!(format_float_g(1e-7), "1e-07");
        assert_eq!(format_float_g(1e21), "1e+21");
        assert_eq!(format_float_g(123456789.123), "1.23456789123e+08");
        assert_eq!(format_float_g(0.0001), "0.0001");
        assert_eq!(format_float_g(0.00001), "1e-05");
    }
}
