//! Sprig v3.3.0 functions: strings.
//!
//! Go strings are byte strings: `trunc`, `substr`, `abbrev`, `wrap`, `initials` and `nospace`
//! count and cut bytes, exactly like sprig. A cut that splits a UTF-8 sequence leaves a
//! [`Value::ByteString`] with exactly Go's bytes; these functions (and `quote`, `squote`,
//! `cat`, `join`) take byte strings as they are.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::hash::{BuildHasher, RandomState};
use std::rc::Rc;

use crate::error::FuncError;
use crate::funcs::{Func, FuncEnv, FuncMap, arg_bytes, arg_int, arg_str};
use capstan_go::fmt as gofmt;
use capstan_go::value::{GoType, List, ListKind, Map, MapKind, Value};

/// The largest string a function may build; larger results are errors instead of allocations
/// (the executor bounds a template's whole output the same way).
pub const MAX_STRING_BYTES: usize = 256 << 20;

/// A string-to-string function body.
type StrFn = fn(&str) -> String;

pub fn register(map: &mut FuncMap, env: &Rc<FuncEnv>) {
    use GoType::{Any, Int, String};

    let shuffle_env = Rc::clone(env);
    let calls = Cell::new(0u64);
    map.insert(
        "shuffle",
        Func::pure(&[String], move |a| {
            calls.set(calls.get().wrapping_add(1));
            let seed = match shuffle_env.seed() {
                Some(seed) => seed ^ calls.get().wrapping_mul(0x9e37_79b9_7f4a_7c15),
                None => os_random_u64(),
            };
            Ok(Value::from(shuffle(arg_str(&a[0]), seed)))
        }),
    );

    map.insert("hello", Func::pure(&[], |_| Ok(Value::from("Hello!"))));

    // Unary string -> string functions.
    let unary: [(&str, StrFn); 9] = [
        ("trim", |s| s.trim_matches(is_go_space).to_string()),
        ("upper", |s| s.chars().map(upper_rune).collect()),
        ("lower", |s| s.chars().map(lower_rune).collect()),
        ("title", title),
        ("untitle", untitle),
        ("swapcase", swapcase),
        ("snakecase", |s| lower_with_separator(s, '_')),
        ("kebabcase", |s| lower_with_separator(s, '-')),
        ("camelcase", camelcase),
    ];
    for (name, f) in unary {
        map.insert(
            name,
            Func::pure(&[String], move |a| Ok(Value::from(f(arg_str(&a[0]))))),
        );
    }

    // goutils works on the bytes of these, each taken as the Latin-1 rune of its value.
    map.insert(
        "nospace",
        Func::pure(&[String], |a| Ok(nospace(arg_bytes(&a[0])))).keeping_bytes(),
    );
    map.insert(
        "initials",
        Func::pure(&[String], |a| Ok(Value::from(initials(arg_bytes(&a[0]))))).keeping_bytes(),
    );

    for name in ["trimAll", "trimall"] {
        map.insert(
            name,
            Func::pure(&[String, String], |a| {
                let cutset: Vec<char> = arg_str(&a[0]).chars().collect();
                Ok(Value::from(arg_str(&a[1]).trim_matches(cutset.as_slice())))
            }),
        );
    }
    // Prefix and suffix functions compare bytes, so byte strings keep theirs.
    map.insert(
        "trimSuffix",
        Func::pure(&[String, String], |a| {
            let (suffix, s) = (arg_bytes(&a[0]), arg_bytes(&a[1]));
            Ok(Value::from_go_bytes(s.strip_suffix(suffix).unwrap_or(s)))
        })
        .keeping_bytes(),
    );
    map.insert(
        "trimPrefix",
        Func::pure(&[String, String], |a| {
            let (prefix, s) = (arg_bytes(&a[0]), arg_bytes(&a[1]));
            Ok(Value::from_go_bytes(s.strip_prefix(prefix).unwrap_or(s)))
        })
        .keeping_bytes(),
    );
    map.insert(
        "trunc",
        Func::pure(&[Int, String], |a| Ok(trunc(arg_int(&a[0]), arg_bytes(&a[1])))).keeping_bytes(),
    );
    map.insert(
        "substr",
        Func::pure(&[Int, Int, String], |a| {
            substr(arg_int(&a[0]), arg_int(&a[1]), arg_bytes(&a[2]))
        })
        .keeping_bytes(),
    );
    map.insert(
        "repeat",
        Func::pure(&[Int, String], |a| {
            repeat_bytes(arg_bytes(&a[1]), arg_int(&a[0])).map(Value::from_go_bytes)
        })
        .keeping_bytes(),
    );
    map.insert(
        "abbrev",
        Func::pure(&[Int, String], |a| {
            Ok(abbreviate(arg_bytes(&a[1]), 0, arg_int(&a[0]))
                .map_or_else(|| a[1].clone(), Value::from_go_bytes))
        })
        .keeping_bytes(),
    );
    map.insert(
        "abbrevboth",
        Func::pure(&[Int, Int, String], |a| {
            Ok(abbreviate(arg_bytes(&a[2]), arg_int(&a[0]), arg_int(&a[1]))
                .map_or_else(|| a[2].clone(), Value::from_go_bytes))
        })
        .keeping_bytes(),
    );
    map.insert(
        "wrap",
        Func::pure(&[Int, String], |a| {
            wrap(arg_bytes(&a[1]), arg_int(&a[0]), b"\n").map(Value::from_go_bytes)
        })
        .keeping_bytes(),
    );
    map.insert(
        "wrapWith",
        Func::pure(&[Int, String, String], |a| {
            wrap(arg_bytes(&a[2]), arg_int(&a[0]), arg_bytes(&a[1])).map(Value::from_go_bytes)
        })
        .keeping_bytes(),
    );
    map.insert(
        "contains",
        Func::pure(&[String, String], |a| {
            let (s, sub) = (arg_bytes(&a[1]), arg_bytes(&a[0]));
            Ok(Value::Bool(memchr::memmem::find(s, sub).is_some()))
        })
        .keeping_bytes(),
    );
    map.insert(
        "hasPrefix",
        Func::pure(&[String, String], |a| {
            Ok(Value::Bool(arg_bytes(&a[1]).starts_with(arg_bytes(&a[0]))))
        })
        .keeping_bytes(),
    );
    map.insert(
        "hasSuffix",
        Func::pure(&[String, String], |a| {
            Ok(Value::Bool(arg_bytes(&a[1]).ends_with(arg_bytes(&a[0]))))
        })
        .keeping_bytes(),
    );
    map.insert(
        "quote",
        Func::pure_variadic(&[], Any, |a| {
            // `%q` escapes the invalid bytes of a byte string (`"h\xc3"`).
            let parts: Vec<_> = a
                .iter()
                .filter(|v| !v.is_nil())
                .map(|v| gofmt::quote_bytes(&strval_bytes(v), b'"', false))
                .collect();
            Ok(Value::from(parts.join(" ")))
        }),
    );
    map.insert(
        "squote",
        Func::pure_variadic(&[], Any, |a| {
            let parts: Vec<Vec<u8>> = a
                .iter()
                .filter(|v| !v.is_nil())
                .map(|v| [&b"'"[..], &strval_bytes(v), b"'"].concat())
                .collect();
            Ok(Value::from_go_bytes(parts.join(&b' ')))
        }),
    );
    map.insert(
        "cat",
        Func::pure_variadic(&[], Any, |a| {
            // sprig formats with `%v`, not strval.
            let parts: Vec<_> = a
                .iter()
                .filter(|v| !v.is_nil())
                .map(gofmt::format_value_bytes)
                .collect();
            Ok(Value::from_go_bytes(parts.join(&b' ')))
        }),
    );
    map.insert(
        "indent",
        Func::pure(&[Int, String], |a| {
            indent(arg_int(&a[0]), arg_bytes(&a[1])).map(Value::from_go_bytes)
        })
        .keeping_bytes(),
    );
    map.insert(
        "nindent",
        Func::pure(&[Int, String], |a| {
            indent(arg_int(&a[0]), arg_bytes(&a[1])).map(|s| Value::from_go_bytes([&b"\n"[..], &s].concat()))
        })
        .keeping_bytes(),
    );
    map.insert(
        "replace",
        Func::pure(&[String, String, String], |a| {
            replace(arg_bytes(&a[2]), arg_bytes(&a[0]), arg_bytes(&a[1])).map(Value::from_go_bytes)
        })
        .keeping_bytes(),
    );
    map.insert(
        "plural",
        Func::pure(&[String, String, Int], |a| {
            Ok(if arg_int(&a[2]) == 1 {
                a[0].clone()
            } else {
                a[1].clone()
            })
        }),
    );
    map.insert(
        "split",
        Func::pure(&[String, String], |a| {
            Ok(indexed_map(split_n(arg_bytes(&a[1]), arg_bytes(&a[0]), -1)))
        })
        .keeping_bytes(),
    );
    map.insert(
        "splitn",
        Func::pure(&[String, Int, String], |a| {
            Ok(indexed_map(split_n(
                arg_bytes(&a[2]),
                arg_bytes(&a[0]),
                arg_int(&a[1]),
            )))
        })
        .keeping_bytes(),
    );
    map.insert(
        "splitList",
        Func::pure(&[String, String], |a| {
            let parts = split_n(arg_bytes(&a[1]), arg_bytes(&a[0]), -1);
            Ok(Value::List(List::new(
                ListKind::String,
                parts.into_iter().map(Value::from_go_bytes).collect(),
            )))
        })
        .keeping_bytes(),
    );
    map.insert(
        "join",
        Func::pure(&[String, Any], |a| {
            let parts: Vec<Value> = strslice_values(&a[1]);
            let parts: Vec<&[u8]> = parts.iter().map(arg_bytes).collect();
            join(&parts, arg_bytes(&a[0])).map(Value::from_go_bytes)
        })
        .keeping_bytes(),
    );
    map.insert(
        "sortAlpha",
        Func::pure(&[Any], |a| {
            let mut items = match &a[0] {
                Value::List(_) | Value::Bytes(_) => strslice(&a[0]),
                other => vec![strval(other)],
            };
            items.sort();
            Ok(Value::string_list(items))
        }),
    );
}

/// Sprig's `strval` as a Go string value: strings as they are (byte strings included), byte
/// slices as `string(b)`, Stringers via `String()`, the rest `%v`.
pub fn strval_value(v: &Value) -> Value {
    match v {
        Value::String(_) | Value::ByteString(_) => v.clone(),
        Value::Bytes(b) => Value::from_go_bytes(&b[..]),
        Value::Object(o) => Value::from(o.stringer().unwrap_or_else(|| gofmt::format_value(v))),
        other => Value::from_go_bytes(gofmt::format_value_bytes(other)),
    }
}

/// Sprig's `strval` as bytes (see [`strval_value`]).
pub fn strval_bytes(v: &Value) -> Vec<u8> {
    arg_bytes(&strval_value(v)).to_vec()
}

/// Sprig's `strval` as text: invalid bytes become one U+FFFD each, as Go decodes them.
pub fn strval(v: &Value) -> String {
    go_string_text(&strval_value(v))
}

/// The text of a Go string value (invalid bytes decoded the Go way); "" for other values.
fn go_string_text(v: &Value) -> String {
    v.go_str_lossy().map(Cow::into_owned).unwrap_or_default()
}

/// Sprig's `strslice`: a list as strings (nil elements dropped, `[]string` as is), nil as no
/// strings, any other value as the one string `strval` gives; each a Go string value.
pub fn strslice_values(v: &Value) -> Vec<Value> {
    match v {
        Value::Nil => Vec::new(),
        Value::List(l) if l.kind == ListKind::String => l.items.iter().map(strval_value).collect(),
        Value::List(l) => l.items.iter().filter(|x| !x.is_nil()).map(strval_value).collect(),
        Value::Bytes(b) => b.iter().map(|x| Value::from(x.to_string())).collect(),
        other => vec![strval_value(other)],
    }
}

/// [`strslice_values`] as text (invalid bytes decoded the Go way).
pub fn strslice(v: &Value) -> Vec<String> {
    strslice_values(v).iter().map(go_string_text).collect()
}

/// Go's `unicode.IsSpace` (the Unicode White_Space property, as Rust's `is_whitespace`).
fn is_go_space(c: char) -> bool {
    c.is_whitespace()
}

/// Go's `unicode.ToUpper`: the simple (one-rune) mapping; runes whose uppercase is several
/// runes (`ß`) stay as they are.
pub fn upper_rune(c: char) -> char {
    let mut up = c.to_uppercase();
    match (up.next(), up.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

/// Go's `unicode.ToLower` (simple mapping).
pub fn lower_rune(c: char) -> char {
    if c == '\u{130}' {
        return 'i';
    }
    let mut low = c.to_lowercase();
    match (low.next(), low.next()) {
        (Some(l), None) => l,
        _ => c,
    }
}

/// Go's `unicode.ToTitle`: the uppercase except for the Latin digraphs with a title form.
fn title_rune(c: char) -> char {
    match c {
        '\u{1C4}'..='\u{1C6}' => '\u{1C5}',
        '\u{1C7}'..='\u{1C9}' => '\u{1C8}',
        '\u{1CA}'..='\u{1CC}' => '\u{1CB}',
        '\u{1F1}'..='\u{1F3}' => '\u{1F2}',
        _ => upper_rune(c),
    }
}

/// The word boundaries of Go's deprecated `strings.Title`: ASCII letters, digits and `_` are
/// word characters, other ASCII is a separator; beyond ASCII only spaces separate words.
fn is_title_separator(c: char) -> bool {
    if c.is_ascii() {
        return !(c.is_ascii_alphanumeric() || c == '_');
    }
    if c.is_alphanumeric() {
        return false;
    }
    is_go_space(c)
}

/// `title`: every letter that follows a separator is title-cased, the rest is kept.
fn title(s: &str) -> String {
    let mut prev = ' ';
    s.chars()
        .map(|c| {
            let out = if is_title_separator(prev) {
                title_rune(c)
            } else {
                c
            };
            prev = c;
            out
        })
        .collect()
}

/// `untitle`: the first rune of each whitespace-separated word is lowercased.
fn untitle(s: &str) -> String {
    let mut at_word_start = true;
    s.chars()
        .map(|c| {
            let out = if at_word_start { lower_rune(c) } else { c };
            at_word_start = is_go_space(c);
            out
        })
        .collect()
}

/// `swapcase`: upper and title case become lower, lower becomes upper.
fn swapcase(s: &str) -> String {
    s.chars()
        .map(|c| {
            // Title-case runes (`ǅ`) are neither upper nor lower but have a lowercase form.
            if c.is_uppercase() || (title_rune(c) == c && lower_rune(c) != c) {
                lower_rune(c)
            } else if c.is_lowercase() {
                upper_rune(c)
            } else {
                c
            }
        })
        .collect()
}

/// The word separators of the case converters (`snakecase`, `kebabcase`, `camelcase`).
fn is_connector(c: char) -> bool {
    c == '_' || c == '-' || is_go_space(c)
}

/// `snakecase`/`kebabcase`: each connector becomes `sep` and everything is lowercased. A
/// separator also goes before an uppercase letter that starts a word (after a lowercase
/// letter or digit, or the last capital of an acronym followed by a lowercase letter), and
/// before a run of digits that follows a letter and leads into a lowercase letter (`ab1c` ->
/// `ab_1c`), unless the current word itself began with a digit (`x_1y2z`).
/// Go's `unicode.IsSymbol`: math, currency, modifier and other symbols.
fn is_symbol(c: char) -> bool {
    use unicode_general_category::{GeneralCategory as G, get_general_category};
    matches!(
        get_general_category(c),
        G::MathSymbol | G::CurrencySymbol | G::ModifierSymbol | G::OtherSymbol
    )
}

fn lower_with_separator(s: &str, sep: char) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len() + 4);
    let mut at_word_start = true;
    let mut word_starts_with_digit = false;
    // Whether the current run of connectors follows punctuation (decided at its first one,
    // so long runs stay linear).
    let mut run_after_punct = false;
    for (i, &c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).and_then(|p| chars.get(p)).copied();
        if is_connector(c) {
            // In a run of connectors right after punctuation, `-` and `_` stay as they are
            // (`a(-b` in snake case); white space still becomes the separator.
            if !prev.is_some_and(is_connector) {
                run_after_punct = prev.is_some_and(|p| !p.is_alphanumeric() && !is_symbol(p));
            }
            out.push(if run_after_punct && matches!(c, '-' | '_') {
                c
            } else {
                sep
            });
            at_word_start = true;
            continue;
        }
        let prev_in_word = prev.filter(|&p| !is_connector(p));
        if c.is_uppercase() {
            let next = chars.get(i + 1).copied();
            let starts_word = prev_in_word.is_some_and(|p| {
                p.is_lowercase()
                    || p.is_numeric()
                    || (p.is_uppercase() && next.is_some_and(char::is_lowercase))
            });
            if starts_word {
                out.push(sep);
                at_word_start = true;
            }
            out.push(lower_rune(c));
        } else if c.is_numeric() {
            let after_letter = prev_in_word.is_some_and(|p| p.is_alphabetic() && !p.is_numeric());
            // Looked ahead only where a letter meets a digit, so digit runs stay linear.
            let into_lowercase = || {
                chars
                    .get(i..)
                    .and_then(|rest| rest.iter().find(|x| !x.is_numeric()))
                    .is_some_and(|x| x.is_lowercase())
            };
            if after_letter && !word_starts_with_digit && into_lowercase() {
                out.push(sep);
                at_word_start = true;
            }
            out.push(c);
        } else if is_symbol(c) {
            // A run of symbols (`+`, `$`, `^`) is a word of its own, set apart from letters
            // and digits on both sides; punctuation (`(`, `.`) is not.
            if prev_in_word.is_some_and(char::is_alphanumeric) {
                out.push(sep);
            }
            out.push(c);
            if chars.get(i + 1).is_some_and(|n| n.is_alphabetic()) {
                out.push(sep);
                at_word_start = true;
                continue;
            }
        } else {
            out.push(c);
        }
        if at_word_start {
            word_starts_with_digit = c.is_numeric();
            at_word_start = false;
        }
    }
    out
}

/// `camelcase` (PascalCase): leading connectors are kept, connectors between words are
/// dropped (of a run of them all but the last are kept) and the rune after them is uppercased;
/// when a word starts with capitals, that run of capitals is lowercased after its first
/// letter (`ABC_DEF` -> `AbcDef`).
fn camelcase(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        if !is_connector(c) {
            break;
        }
        out.push(c);
        i += 1;
    }
    let Some(&first) = chars.get(i) else {
        // Only connectors: the last one comes out twice.
        if let Some(&last) = chars.last() {
            out.push(last);
        }
        return out;
    };
    let mut lowering_caps = first.is_uppercase();
    out.push(upper_rune(first));
    let mut prev = first;
    for &c in chars.iter().skip(i + 1) {
        if is_connector(c) {
            if is_connector(prev) {
                out.push(prev);
            }
        } else if is_connector(prev) {
            lowering_caps = c.is_uppercase();
            out.push(upper_rune(c));
        } else if lowering_caps && c.is_uppercase() {
            out.push(lower_rune(c));
        } else {
            lowering_caps = false;
            out.push(c);
        }
        prev = c;
    }
    if is_connector(prev) {
        out.push(prev);
    }
    out
}

/// Go's `unicode.IsSpace` of a byte taken as the Latin-1 rune of its value.
fn is_latin1_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ' | 0x85 | 0xa0)
}

/// `nospace` (goutils' `DeleteWhiteSpace`): works on bytes as if they were Latin-1
/// characters: bytes that are spaces in Latin-1 are removed (so NBSP's second byte `0xA0`
/// goes too) and every other byte comes out as the character with its value (`à` becomes
/// `Ã`). A string without such bytes is returned unchanged.
fn nospace(s: &[u8]) -> Value {
    if !s.iter().copied().any(is_latin1_space) {
        return Value::from_go_bytes(s);
    }
    Value::from(
        s.iter()
            .copied()
            .filter(|&b| !is_latin1_space(b))
            .map(char::from)
            .collect::<String>(),
    )
}

/// `initials` (goutils' `Initials`): the first byte of each word, as a Latin-1 character;
/// words are separated by bytes that are spaces in Latin-1.
fn initials(s: &[u8]) -> String {
    let mut out = String::new();
    let mut at_word_start = true;
    for &b in s {
        if is_latin1_space(b) {
            at_word_start = true;
        } else if at_word_start {
            out.push(char::from(b));
            at_word_start = false;
        }
    }
    out
}

/// `shuffle`: the runes of `s` in a random order (Fisher-Yates driven by splitmix64).
fn shuffle(s: &str, seed: u64) -> String {
    let mut runes: Vec<char> = s.chars().collect();
    let mut state = seed;
    for i in (1..runes.len()).rev() {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let j = (z % (i as u64 + 1)) as usize;
        runes.swap(i, j);
    }
    runes.into_iter().collect()
}

/// Unpredictable bits from the OS-seeded keys of std's `RandomState` (shuffling needs no
/// cryptographic strength).
fn os_random_u64() -> u64 {
    RandomState::new().hash_one(0u8)
}

/// `trunc`: the first `n` bytes, or for negative `n` the last `-n` bytes.
fn trunc(n: i64, bytes: &[u8]) -> Value {
    let len = bytes.len() as i64;
    let cut = if n >= 0 && len > n {
        bytes.get(..n as usize)
    } else if n < 0 && len + n > 0 {
        bytes.get((len + n) as usize..)
    } else {
        None
    };
    Value::from_go_bytes(cut.unwrap_or(bytes))
}

/// `substr start end s` on bytes, with Go's slice panics as errors.
fn substr(start: i64, end: i64, s: &[u8]) -> Result<Value, FuncError> {
    let len = s.len() as i64;
    let (from, to) = if start < 0 {
        (0, end)
    } else if end < 0 || end > len {
        if start > len {
            return Err(slice_error(format!("[{start}:{len}]")));
        }
        (start, len)
    } else {
        (start, end)
    };
    if to < 0 {
        return Err(slice_error(format!("[:{to}]")));
    }
    if to > len {
        return Err(slice_error(format!("[:{to}] with length {len}")));
    }
    if from > to {
        return Err(slice_error(format!("[{from}:{to}]")));
    }
    let bytes = s.get(from as usize..to as usize).unwrap_or_default();
    Ok(Value::from_go_bytes(bytes))
}

fn slice_error(bounds: String) -> FuncError {
    FuncError::msg(format!("runtime error: slice bounds out of range {bounds}"))
}

/// Go's `strings.Repeat`, with its panics as errors and a bound on the result.
pub fn repeat(s: &str, count: i64) -> Result<String, FuncError> {
    repeat_bytes(s.as_bytes(), count).map(|b| String::from_utf8(b).unwrap_or_default())
}

/// [`repeat`] on the bytes of a Go string.
fn repeat_bytes(s: &[u8], count: i64) -> Result<Vec<u8>, FuncError> {
    if count < 0 {
        return Err(FuncError::msg("strings: negative Repeat count"));
    }
    let total = (s.len() as u64).checked_mul(count as u64);
    match total {
        Some(t) if t <= i64::MAX as u64 => {
            if t > MAX_STRING_BYTES as u64 {
                return Err(too_long());
            }
            Ok(s.repeat(count as usize))
        }
        _ => Err(FuncError::msg("strings: Repeat output length overflow")),
    }
}

fn too_long() -> FuncError {
    FuncError::msg(format!("string result exceeds {MAX_STRING_BYTES} bytes"))
}

/// `indent`: the pad before the text and after every newline (on bytes: Go strings).
fn indent(n: i64, s: &[u8]) -> Result<Vec<u8>, FuncError> {
    let pad = repeat_bytes(b" ", n)?;
    let newlines = s.iter().filter(|&&b| b == b'\n').count();
    if pad.len().saturating_mul(newlines + 1).saturating_add(s.len()) > MAX_STRING_BYTES {
        return Err(too_long());
    }
    let mut out = Vec::with_capacity(s.len() + pad.len() * (newlines + 1));
    out.extend_from_slice(&pad);
    for &b in s {
        out.push(b);
        if b == b'\n' {
            out.extend_from_slice(&pad);
        }
    }
    Ok(out)
}

/// Go's `strings.Replace(s, old, new, -1)`: an empty `old` matches before every rune and at
/// the end, as Rust's `replace` does.
/// The length of the UTF-8 sequence at the start of `s` as Go decodes it: an invalid byte
/// is a sequence of one.
fn rune_width(s: &[u8]) -> usize {
    gofmt::decode_rune(s).map_or(1, |(_, width)| width)
}

/// Where `old` matches in `s` (Go's `strings.Replace`/`Split` on bytes): an empty `old`
/// matches at the start and after each UTF-8 sequence.
fn match_starts(s: &[u8], old: &[u8]) -> Vec<usize> {
    if !old.is_empty() {
        return memchr::memmem::find_iter(s, old).collect();
    }
    let mut starts = vec![0];
    let mut at = 0;
    while at < s.len() {
        at += rune_width(&s[at..]);
        starts.push(at);
    }
    starts
}

/// Go's `strings.Replace(s, old, new, -1)` on the bytes of Go strings.
fn replace(s: &[u8], old: &[u8], new: &[u8]) -> Result<Vec<u8>, FuncError> {
    let starts = match_starts(s, old);
    if starts.len().saturating_mul(new.len()).saturating_add(s.len()) > MAX_STRING_BYTES {
        return Err(too_long());
    }
    let mut out = Vec::with_capacity(s.len() + starts.len() * new.len());
    let mut done = 0;
    for start in starts {
        out.extend_from_slice(s.get(done..start).unwrap_or_default());
        out.extend_from_slice(new);
        done = start + old.len();
    }
    out.extend_from_slice(s.get(done..).unwrap_or_default());
    Ok(out)
}

/// Go's `strings.SplitN` on bytes: `n < 0` means all parts, `n == 0` none; an empty
/// separator splits after each UTF-8 sequence.
pub fn split_n(s: &[u8], sep: &[u8], n: i64) -> Vec<Vec<u8>> {
    if n == 0 {
        return Vec::new();
    }
    let limit = if n < 0 { usize::MAX } else { n as usize };
    let mut parts = Vec::new();
    let mut rest = s;
    while parts.len() + 1 < limit && !rest.is_empty() {
        let cut = if sep.is_empty() {
            Some(rune_width(rest))
        } else {
            memchr::memmem::find(rest, sep)
        };
        let Some(cut) = cut else { break };
        parts.push(rest[..cut].to_vec());
        rest = &rest[cut + sep.len()..];
    }
    // Go keeps the remainder; with a separator it is kept even when empty ("a," → "a", "").
    if !sep.is_empty() || !rest.is_empty() {
        parts.push(rest.to_vec());
    }
    parts
}

/// `split`/`splitn` results: `map[string]string` with keys `_0`, `_1`, …
fn indexed_map(parts: Vec<Vec<u8>>) -> Value {
    let entries: BTreeMap<String, Value> = parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| (format!("_{i}"), Value::from_go_bytes(p)))
        .collect();
    Value::Map(Map::new(MapKind::String, entries))
}

/// goutils' `AbbreviateFull(s, offset, width)` on bytes; `None` where it reports an error
/// (sprig then returns the text unchanged).
fn abbreviate(s: &[u8], offset: i64, width: i64) -> Option<Vec<u8>> {
    const MARKER: &[u8] = b"...";
    let len = s.len() as i64;
    if s.is_empty() {
        return Some(Vec::new());
    }
    if width < 4 {
        return None;
    }
    if len <= width {
        return Some(s.to_vec());
    }
    let mut offset = offset.min(len);
    if len.saturating_sub(offset) < width - 3 {
        offset = len - (width - 3);
    }
    if offset <= 4 {
        let mut out = s.get(..(width - 3) as usize)?.to_vec();
        out.extend_from_slice(MARKER);
        return Some(out);
    }
    if width < 7 {
        return None;
    }
    let mut out = MARKER.to_vec();
    if offset + width - 3 < len {
        out.extend(abbreviate(s.get(offset as usize..)?, 0, width - 3)?);
    } else {
        out.extend_from_slice(s.get((len - (width - 3)) as usize..)?);
    }
    Some(out)
}

/// goutils' `WrapCustom(s, width, newline, false)` on bytes: breaks at the last space that
/// keeps a line within `width`; a longer word runs on to the next space. Newlines already in
/// the text are ordinary characters.
fn wrap(b: &[u8], width: i64, newline: &[u8]) -> Result<Vec<u8>, FuncError> {
    let width = width.max(1) as usize;
    let mut out: Vec<u8> = Vec::with_capacity(b.len() + 8);
    let mut offset = 0usize;
    while b.len() - offset > width {
        if b.get(offset) == Some(&b' ') {
            offset += 1;
            continue;
        }
        let window = b.get(offset..offset + width + 1).unwrap_or_default();
        match window.iter().rposition(|&c| c == b' ') {
            Some(p) => {
                out.extend_from_slice(b.get(offset..offset + p).unwrap_or_default());
                out.extend_from_slice(newline);
                offset += p + 1;
                if out.len() > MAX_STRING_BYTES {
                    return Err(too_long());
                }
            }
            None => {
                let from = offset + width;
                match b.get(from..).and_then(|r| r.iter().position(|&c| c == b' ')) {
                    Some(p) => {
                        out.extend_from_slice(b.get(offset..from + p).unwrap_or_default());
                        out.extend_from_slice(newline);
                        offset = from + p + 1;
                        if out.len() > MAX_STRING_BYTES {
                            return Err(too_long());
                        }
                    }
                    None => {
                        out.extend_from_slice(b.get(offset..).unwrap_or_default());
                        offset = b.len();
                    }
                }
            }
        }
    }
    out.extend_from_slice(b.get(offset..).unwrap_or_default());
    Ok(out)
}

/// Go's `strings.Join` on the bytes of Go strings, bounded like every built string.
fn join(parts: &[&[u8]], sep: &[u8]) -> Result<Vec<u8>, FuncError> {
    let total = parts.iter().map(|p| p.len()).fold(
        sep.len().saturating_mul(parts.len().saturating_sub(1)),
        usize::saturating_add,
    );
    if total > MAX_STRING_BYTES {
        return Err(too_long());
    }
    Ok(parts.join(sep))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trunc_counts_bytes_both_ways() {
        assert_eq!(trunc(5, b"hello world").as_str(), Some("hello"));
        assert_eq!(trunc(-3, b"hello world").as_str(), Some("rld"));
        assert_eq!(trunc(-50, b"short").as_str(), Some("short"));
        // Cutting inside `é` leaves Go's bytes, not a stand-in character.
        let cut = trunc(2, "héllo".as_bytes());
        assert!(matches!(&cut, Value::ByteString(b) if &b[..] == b"h\xc3"));
        assert_eq!(
            trunc(-4, "héllo".as_bytes()).go_str_bytes(),
            Some(&b"\xa9llo"[..])
        );
        assert_eq!(trunc(3, "héllo".as_bytes()).as_str(), Some("hé"));
    }

    #[test]
    fn substr_reports_go_slice_panics() {
        assert_eq!(
            substr(1, 3, b"hello")
                .ok()
                .and_then(|v| v.as_str().map(String::from)),
            Some("el".into())
        );
        assert_eq!(
            substr(-1, 2, b"hello")
                .ok()
                .and_then(|v| v.as_str().map(String::from)),
            Some("he".into())
        );
        assert_eq!(
            substr(2, 99, b"hello")
                .ok()
                .and_then(|v| v.as_str().map(String::from)),
            Some("llo".into())
        );
        let err = substr(3, 1, b"hello").err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("runtime error: slice bounds out of range [3:1]")
        );
        let err = substr(9, 10, b"hello").err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("runtime error: slice bounds out of range [9:5]")
        );
    }

    #[test]
    fn repeat_is_bounded() {
        assert_eq!(repeat("ab", 3).ok().as_deref(), Some("ababab"));
        assert!(repeat("x", -1).is_err());
        let overflow = repeat("ab", i64::MAX).err().map(|e| e.to_string());
        assert_eq!(
            overflow.as_deref(),
            Some("strings: Repeat output length overflow")
        );
        assert!(repeat("ab", 1 << 40).is_err());
        assert_eq!(repeat("", 1_000_000_000).ok().as_deref(), Some(""));
    }

    #[test]
    fn case_conversions() {
        assert_eq!(
            title("hello world foo-bar o'neil aBC x_y 1st"),
            "Hello World Foo-Bar O'Neil ABC X_y 1st"
        );
        assert_eq!(untitle("Hello  World\tFoo"), "hello  world\tfoo");
        assert_eq!(swapcase("Hello World ÀbC 123"), "hELLO wORLD àBc 123");
        let snake: Vec<_> = [
            "FirstName",
            "HTTPServer",
            "foo-bar baz",
            "getHTTPResponseCode",
            "a1B2",
            "  lead",
            "x__y",
            "FooBAR",
        ]
        .iter()
        .map(|s| lower_with_separator(s, '_'))
        .collect();
        assert_eq!(
            snake,
            [
                "first_name",
                "http_server",
                "foo_bar_baz",
                "get_http_response_code",
                "a1_b2",
                "__lead",
                "x__y",
                "foo_bar"
            ]
        );
        let camel: Vec<_> = [
            "foo_bar-baz",
            "hello world",
            "_x",
            "fooBar",
            "a__b",
            "x.y",
            "ABC_def",
            "",
            "1_a",
        ]
        .iter()
        .map(|s| camelcase(s))
        .collect();
        assert_eq!(
            camel,
            [
                "FooBarBaz",
                "HelloWorld",
                "_X",
                "FooBar",
                "A_B",
                "X.y",
                "AbcDef",
                "",
                "1A"
            ]
        );
        assert_eq!(
            "HELLO WORLD ß É",
            "hello World ß é".chars().map(upper_rune).collect::<String>()
        );
    }

    #[test]
    fn shuffle_permutes_runes() {
        let mut out: Vec<char> = shuffle("héllo wörld", 42).chars().collect();
        out.sort_unstable();
        let mut want: Vec<char> = "héllo wörld".chars().collect();
        want.sort_unstable();
        assert_eq!(out, want);
        assert_eq!(shuffle("abcdef", 7), shuffle("abcdef", 7));
        assert_eq!(shuffle("", 1), "");
    }

    #[test]
    fn abbreviations() {
        let ab = |o, w, s: &str| abbreviate(s.as_bytes(), o, w).and_then(|b| String::from_utf8(b).ok());
        assert_eq!(ab(0, 5, "hello world").as_deref(), Some("he..."));
        assert_eq!(ab(0, 3, "hello world"), None);
        assert_eq!(ab(5, 10, "1234 5678 9123").as_deref(), Some("...5678..."));
        assert_eq!(
            ab(20, 10, "abcdefghijklmnopqrstuvwxyz").as_deref(),
            Some("...tuvwxyz")
        );
        assert_eq!(ab(3, 7, "abcdefghijklmno").as_deref(), Some("abcd..."));
    }

    #[test]
    fn wrapping() {
        let w = |s: &str, n, sep: &str| {
            wrap(s.as_bytes(), n, sep.as_bytes())
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .unwrap_or_default()
        };
        assert_eq!(w("Hello World and more", 5, "\n"), "Hello\nWorld\nand\nmore");
        assert_eq!(w("abcdefgh ij", 3, "\n"), "abcdefgh\nij");
        assert_eq!(
            w("line one is long\nshort\n  spaced   words here", 10, "\n"),
            "line one\nis\nlong\nshort\n\nspaced  \nwords here"
        );
        assert_eq!(w("a b c", 0, "\n"), "a\nb\nc");
        let huge_sep = "x".repeat(1 << 20);
        assert!(wrap("a ".repeat(1 << 10).as_bytes(), 1, huge_sep.as_bytes()).is_err());
        let parts = vec![&b"a"[..]; 1 << 10];
        assert!(join(&parts, huge_sep.as_bytes()).is_err());
        assert_eq!(join(&parts[..2], b",").ok().as_deref(), Some(&b"a,a"[..]));
    }

    #[test]
    fn splitting() {
        let split = |s: &str, sep: &str, n: i64| -> Vec<String> {
            split_n(s.as_bytes(), sep.as_bytes(), n)
                .into_iter()
                .map(|p| String::from_utf8_lossy(&p).into_owned())
                .collect()
        };
        assert_eq!(split("a,b,,c", ",", -1), ["a", "b", "", "c"]);
        assert_eq!(split("héllo", "", -1), ["h", "é", "l", "l", "o"]);
        assert_eq!(split("abc", "", 2), ["a", "bc"]);
        assert_eq!(split("a,b", ",", 0), Vec::<String>::new());
        assert_eq!(split("", ",", -1), [""]);
        assert_eq!(split("a,", ",", -1), ["a", ""]);
        assert_eq!(split("", "", -1), Vec::<String>::new());
        // An invalid byte is a sequence of its own.
        assert_eq!(
            split_n(b"a\xc3b", b"", -1),
            [b"a".to_vec(), vec![0xc3], b"b".to_vec()]
        );
    }

    #[test]
    fn byte_level_helpers() {
        assert_eq!(
            nospace(" h e\tl\nl o\u{a0}x ".as_bytes()).as_str(),
            Some("hello\u{c2}x")
        );
        assert_eq!(nospace("héllo".as_bytes()).as_str(), Some("héllo"));
        assert_eq!(nospace(b"h\xc3").go_str_bytes(), Some(&b"h\xc3"[..]));
        assert_eq!(initials(b"First Try"), "FT");
        assert_eq!(initials("élan über".as_bytes()), "\u{c3}\u{c3}");
        // `à` is c3 a0 and 0xA0 is a Latin-1 space.
        assert_eq!(initials("xày".as_bytes()), "xy");
        assert_eq!(indent(2, b"a\nb\n").ok().as_deref(), Some(&b"  a\n  b\n  "[..]));
    }
}
