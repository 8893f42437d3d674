//! Go text/template's builtin functions: `and or not len index slice print printf println
//! html js urlquery eq ne lt le gt ge call`.

use std::rc::Rc;

use crate::error::FuncError;
use crate::funcs::{Func, FuncMap, Special};
use capstan_go::fmt as gofmt;
use capstan_go::value::{GoType, Value};

pub fn register(map: &mut FuncMap) {
    use GoType::{Any, Reflect, String};
    for (name, special) in [("and", Special::And), ("or", Special::Or)] {
        let mut f = Func::pure_variadic(&[Reflect], Reflect, |args| Ok(args[0].clone()));
        f.special = Some(special);
        map.insert(name, f);
    }
    map.insert(
        "not",
        Func::pure(&[Reflect], |args| Ok(Value::Bool(!args[0].truth()))),
    );
    map.insert("len", Func::pure(&[Reflect], |args| length(&args[0])));
    map.insert(
        "index",
        Func::pure_variadic(&[Reflect], Reflect, |args| index(&args[0], &args[1..])),
    );
    map.insert(
        "slice",
        Func::pure_variadic(&[Reflect], Reflect, |args| slice(&args[0], &args[1..])),
    );
    map.insert(
        "print",
        Func::pure_variadic(&[], Any, |args| Ok(gofmt::try_sprint_value(args)?)),
    );
    map.insert(
        "println",
        Func::pure_variadic(&[], Any, |args| Ok(gofmt::try_sprintln_value(args)?)),
    );
    map.insert(
        "printf",
        Func::pure_variadic(&[String], Any, |args| {
            Ok(gofmt::try_sprintf_value(super::arg_bytes(&args[0]), &args[1..])?)
        })
        .keeping_bytes(),
    );
    map.insert(
        "html",
        Func::pure_variadic(&[], Any, |args| {
            Ok(escape_bytes(&escaper_text(args), gofmt::html_escape))
        }),
    );
    map.insert(
        "js",
        Func::pure_variadic(&[], Any, |args| {
            Ok(escape_bytes(&escaper_text(args), gofmt::js_escape))
        }),
    );
    map.insert(
        "urlquery",
        Func::pure_variadic(&[], Any, |args| {
            Ok(Value::from(gofmt::query_escape(&escaper_text(args))))
        }),
    );
    map.insert(
        "eq",
        Func::pure_variadic(&[Reflect], Reflect, |args| {
            eq(&args[0], &args[1..]).map(Value::Bool)
        }),
    );
    map.insert(
        "ne",
        Func::pure(&[Reflect, Reflect], |args| {
            Ok(Value::Bool(!eq(&args[0], &args[1..2])?))
        }),
    );
    map.insert(
        "lt",
        Func::pure(&[Reflect, Reflect], |args| {
            lt(&args[0], &args[1]).map(Value::Bool)
        }),
    );
    map.insert(
        "le",
        Func::pure(&[Reflect, Reflect], |args| {
            le(&args[0], &args[1]).map(Value::Bool)
        }),
    );
    map.insert(
        "gt",
        Func::pure(&[Reflect, Reflect], |args| {
            Ok(Value::Bool(!le(&args[0], &args[1])?))
        }),
    );
    map.insert(
        "ge",
        Func::pure(&[Reflect, Reflect], |args| {
            Ok(Value::Bool(!lt(&args[0], &args[1])?))
        }),
    );
    map.insert(
        "call",
        Func::pure_variadic(&[Reflect], Reflect, |args| match &args[0] {
            Value::Nil => Err(FuncError::msg("call of nil")),
            other => Err(FuncError::msg(format!(
                "non-function of type {}",
                other.type_name()
            ))),
        }),
    );
}

/// Applies a text escaper to the valid UTF-8 runs of Go string bytes; Go's `html` and `js`
/// escapers copy invalid bytes unchanged.
fn escape_bytes(bytes: &[u8], escape: fn(&str) -> String) -> Value {
    let mut out = Vec::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.extend_from_slice(escape(chunk.valid()).as_bytes());
        out.extend_from_slice(chunk.invalid());
    }
    Value::from_go_bytes(out)
}

/// The text the escaper builtins work on: a lone string as is, otherwise `fmt.Sprint` with
/// missing values printed as `<no value>`; the bytes of a Go string.
fn escaper_text(args: &[Value]) -> Vec<u8> {
    if let [v] = args
        && let Some(bytes) = v.go_str_bytes()
    {
        return bytes.to_vec();
    }
    let printable: Vec<Value> = args
        .iter()
        .map(|a| {
            if a.is_nil() {
                Value::from("<no value>")
            } else {
                a.clone()
            }
        })
        .collect();
    gofmt::sprint_bytes(&printable)
}

/// The elements of a slice-typed object (`common.VersionSet`), which Go indexes and measures
/// like any slice.
fn slice_object_items(o: &dyn capstan_go::value::Object) -> Option<Vec<Value>> {
    if o.kind() != "slice" {
        return None;
    }
    match o.to_data() {
        Value::List(l) => Some(l.items.as_ref().clone()),
        _ => None,
    }
}

fn length(item: &Value) -> Result<Value, FuncError> {
    let n = match item {
        Value::Nil => return Err(FuncError::msg("len of nil pointer")),
        Value::String(s) => s.len(),
        Value::ByteString(b) | Value::Bytes(b) => b.len(),
        Value::List(l) => l.items.len(),
        Value::Map(m) => m.len(),
        Value::Object(o) => match (o.entries(), slice_object_items(o.as_ref())) {
            (Some(e), _) => e.len(),
            (None, Some(items)) => items.len(),
            // `len` looks through a pointer, so the error names the type pointed to.
            (None, None) => {
                let name = o.type_name();
                let pointee = name.strip_prefix('*').unwrap_or(&name);
                return Err(FuncError::msg(format!("len of type {pointee}")));
            }
        },
        other => return Err(FuncError::msg(format!("len of type {}", other.type_name()))),
    };
    Ok(Value::Int(n as i64))
}

/// An index argument as Go's `indexArg` accepts it.
fn index_arg(index: &Value, cap: usize) -> Result<usize, FuncError> {
    let x = match index {
        Value::Int(i) | Value::Int64(i) => *i,
        Value::Uint8(u) => i64::from(*u),
        // Go converts with int64(index.Uint()), which wraps.
        Value::Uint64(u) => *u as i64,
        Value::Nil => return Err(FuncError::msg("cannot index slice/array with nil")),
        other => {
            return Err(FuncError::msg(format!(
                "cannot index slice/array with type {}",
                other.type_name()
            )));
        }
    };
    if x < 0 || x as u64 > cap as u64 {
        return Err(FuncError::msg(format!("index out of range: {x}")));
    }
    Ok(x as usize)
}

fn index(item: &Value, indexes: &[Value]) -> Result<Value, FuncError> {
    if item.is_nil() {
        return Err(FuncError::msg("index of untyped nil"));
    }
    let mut item = item.clone();
    for idx in indexes {
        item = match &item {
            Value::Nil => return Err(FuncError::msg("index of nil pointer")),
            Value::List(l) => {
                let x = index_arg(idx, l.items.len())?;
                match l.items.get(x) {
                    Some(v) => v.clone(),
                    None => return Err(FuncError::msg("reflect: slice index out of range")),
                }
            }
            Value::String(_) | Value::ByteString(_) => {
                let s = item.go_str_bytes().unwrap_or_default();
                let x = index_arg(idx, s.len())?;
                match s.get(x) {
                    Some(b) => Value::Uint8(*b),
                    None => return Err(FuncError::msg("reflect: string index out of range")),
                }
            }
            Value::Bytes(b) => {
                let x = index_arg(idx, b.len())?;
                match b.get(x) {
                    Some(b) => Value::Uint8(*b),
                    None => return Err(FuncError::msg("reflect: slice index out of range")),
                }
            }
            Value::Map(m) => {
                let key = map_key(idx)?;
                m.get(&key).unwrap_or_else(|| m.zero_elem())
            }
            Value::Object(o) if slice_object_items(o.as_ref()).is_some() => {
                let items = slice_object_items(o.as_ref()).unwrap_or_default();
                let x = index_arg(idx, items.len())?;
                match items.get(x) {
                    Some(v) => v.clone(),
                    None => return Err(FuncError::msg("reflect: slice index out of range")),
                }
            }
            Value::Object(o) if o.entries().is_some() => {
                let key = map_key(idx)?;
                o.entries()
                    .unwrap_or_default()
                    .into_iter()
                    .find(|(k, _)| *k == *key)
                    .map(|(_, v)| v)
                    .unwrap_or(Value::Nil)
            }
            other => {
                return Err(FuncError::msg(format!(
                    "can't index item of type {}",
                    other.type_name()
                )));
            }
        };
    }
    Ok(item)
}

/// A map key for `index`: must be a string (Go's `prepareArg`). Map keys are text, so a byte
/// string looks up its Go-decoded text.
fn map_key(idx: &Value) -> Result<std::borrow::Cow<'_, str>, FuncError> {
    if let Some(s) = idx.go_str_lossy() {
        return Ok(s);
    }
    match idx {
        Value::Nil => Err(FuncError::msg("value is nil; should be of type string")),
        other => Err(FuncError::msg(format!(
            "value has type {}; should be string",
            other.type_name()
        ))),
    }
}

fn slice(item: &Value, indexes: &[Value]) -> Result<Value, FuncError> {
    if item.is_nil() {
        return Err(FuncError::msg("slice of untyped nil"));
    }
    if indexes.len() > 3 {
        return Err(FuncError::msg(format!(
            "too many slice indexes: {}",
            indexes.len()
        )));
    }
    let len = match item {
        Value::String(_) | Value::ByteString(_) => {
            if indexes.len() == 3 {
                return Err(FuncError::msg("cannot 3-index slice a string"));
            }
            item.go_str_bytes().map_or(0, <[u8]>::len)
        }
        Value::List(l) => l.items.len(),
        Value::Bytes(b) => b.len(),
        other => {
            return Err(FuncError::msg(format!(
                "can't slice item of type {}",
                other.type_name()
            )));
        }
    };
    let mut idx = [0, len, len];
    for (i, index) in indexes.iter().enumerate() {
        idx[i] = index_arg(index, len)?;
    }
    if idx[0] > idx[1] {
        return Err(FuncError::msg(format!(
            "invalid slice index: {} > {}",
            idx[0], idx[1]
        )));
    }
    if indexes.len() == 3 && idx[1] > idx[2] {
        return Err(FuncError::msg(format!(
            "invalid slice index: {} > {}",
            idx[1], idx[2]
        )));
    }
    let (from, to) = (idx[0], idx[1]);
    Ok(match item {
        // Cutting inside a character leaves a byte string, as in Go.
        Value::String(_) | Value::ByteString(_) => Value::from_go_bytes(
            item.go_str_bytes()
                .and_then(|s| s.get(from..to))
                .unwrap_or_default(),
        ),
        Value::List(l) => Value::List(capstan_go::value::List {
            kind: l.kind,
            items: Rc::new(l.items[from..to].to_vec()),
            nil: l.nil,
        }),
        Value::Bytes(b) => Value::Bytes(b[from..to].into()),
        _ => Value::Nil,
    })
}

/// Go's comparison classes.
#[derive(PartialEq, Eq, Clone, Copy)]
enum Kind {
    Bool,
    Int,
    Uint,
    Float,
    String,
    Other,
}

fn basic_kind(v: &Value) -> Kind {
    match v {
        Value::Bool(_) => Kind::Bool,
        Value::Int(_) | Value::Int64(_) => Kind::Int,
        Value::Uint8(_) | Value::Uint64(_) => Kind::Uint,
        Value::Float(_) => Kind::Float,
        Value::String(_) | Value::ByteString(_) => Kind::String,
        _ => Kind::Other,
    }
}

/// An integer of either signedness, exactly: text/template compares a signed and an unsigned
/// integer by value (a negative int is less than every uint).
fn int_of(v: &Value) -> i128 {
    match v {
        Value::Int(i) | Value::Int64(i) => i128::from(*i),
        Value::Uint8(u) => i128::from(*u),
        Value::Uint64(u) => i128::from(*u),
        _ => 0,
    }
}

fn bad_comparison(a: &Value, b: &Value) -> FuncError {
    FuncError::msg(format!(
        "incompatible types for comparison: {} and {}",
        a.type_name(),
        b.type_name()
    ))
}

fn eq(arg1: &Value, rest: &[Value]) -> Result<bool, FuncError> {
    if rest.is_empty() {
        return Err(FuncError::msg("missing argument for comparison"));
    }
    let k1 = basic_kind(arg1);
    for arg in rest {
        let k2 = basic_kind(arg);
        let truth = if k1 != k2 {
            match (k1, k2) {
                (Kind::Int, Kind::Uint) | (Kind::Uint, Kind::Int) => int_of(arg1) == int_of(arg),
                _ => {
                    if !arg1.is_nil() && !arg.is_nil() {
                        return Err(bad_comparison(arg1, arg));
                    }
                    false
                }
            }
        } else {
            match (arg1, arg) {
                (Value::Bool(a), Value::Bool(b)) => a == b,
                (Value::Float(a), Value::Float(b)) => a == b,
                _ if k1 == Kind::String => arg1.go_str_bytes() == arg.go_str_bytes(),
                _ if k1 == Kind::Int || k1 == Kind::Uint => int_of(arg1) == int_of(arg),
                _ => compare_other(arg1, arg)?,
            }
        };
        if truth {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `eq` on values that are not basic kinds: nil compares with anything nil-able, other
/// values only when Go's `==` would be defined for them.
fn compare_other(a: &Value, b: &Value) -> Result<bool, FuncError> {
    match (a, b) {
        (Value::Nil, Value::Nil) => Ok(true),
        // A typed nil (nil map or slice) equals the untyped nil.
        (Value::Nil, other) | (other, Value::Nil) => Ok(other.is_typed_nil()),
        (Value::List(_) | Value::Bytes(_), _) | (Value::Map(_), _) => {
            // Go's `canCompare` looks at kinds, not types: two maps of different types get
            // the message about the second one alone.
            if a.kind_name() != b.kind_name() {
                // Go formats the first value with %s (so `%!s(int=1)` markers appear).
                return Err(FuncError::msg(format!(
                    "non-comparable types {}: {}, {}: {}",
                    gofmt::sprintf("%s", std::slice::from_ref(a)),
                    a.type_name(),
                    b.type_name(),
                    gofmt::format_value(b)
                )));
            }
            Err(FuncError::msg(format!(
                "non-comparable type {}: {}",
                gofmt::sprintf("%s", std::slice::from_ref(b)),
                b.type_name()
            )))
        }
        (Value::Object(x), Value::Object(y)) => Ok(Rc::ptr_eq(x, y)),
        _ => Err(bad_comparison(a, b)),
    }
}

fn lt(a: &Value, b: &Value) -> Result<bool, FuncError> {
    let (k1, k2) = (basic_kind(a), basic_kind(b));
    if k1 == Kind::Other || k2 == Kind::Other {
        return Err(FuncError::msg("invalid type for comparison"));
    }
    if k1 != k2 {
        return match (k1, k2) {
            (Kind::Int, Kind::Uint) | (Kind::Uint, Kind::Int) => Ok(int_of(a) < int_of(b)),
            _ => Err(bad_comparison(a, b)),
        };
    }
    match (a, b) {
        (Value::Bool(_), _) => Err(FuncError::msg("invalid type for comparison")),
        (Value::Float(x), Value::Float(y)) => Ok(x < y),
        // Go compares strings bytewise.
        _ if k1 == Kind::String => Ok(a.go_str_bytes() < b.go_str_bytes()),
        _ => Ok(int_of(a) < int_of(b)),
    }
}

fn le(a: &Value, b: &Value) -> Result<bool, FuncError> {
    if lt(a, b)? {
        return Ok(true);
    }
    eq(a, std::slice::from_ref(b))
}
