//! Sprig v3.3.0 functions: lists.
//!
//! Sprig takes lists as `interface{}` and walks them with reflection, so every slice type
//! works (`[]string` from `splitList`, `[]uint8`), results are `[]interface {}`, and nil or
//! non-slice arguments fail with Go's panic texts. The `must*` variants fail the same way
//! (text/template reports a recovered panic and a returned error identically).

use std::collections::HashSet;
use std::rc::Rc;

use crate::error::FuncError;
use crate::funcs::{Func, FuncEnv, FuncMap, arg_int};
use capstan_go::value::{GoType, List, ListKind, Value};

/// Go's message for the nil-pointer panic sprig hits on a nil list.
pub const NIL_DEREF: &str = "runtime error: invalid memory address or nil pointer dereference";

pub fn register(map: &mut FuncMap, env: &Rc<FuncEnv>) {
    let _ = env;
    use GoType::{Any, Int};

    for name in ["list", "tuple"] {
        map.insert(
            name,
            Func::pure_variadic(&[], Any, |a| Ok(Value::list(a.to_vec()))),
        );
    }
    for name in ["append", "push", "mustAppend", "mustPush"] {
        map.insert(
            name,
            Func::pure(&[Any, Any], |a| {
                let mut items = elements(&a[0], "Cannot push on type")?;
                items.push(a[1].clone());
                Ok(Value::list(items))
            }),
        );
    }
    for name in ["prepend", "mustPrepend"] {
        map.insert(
            name,
            Func::pure(&[Any, Any], |a| {
                let mut items = vec![a[1].clone()];
                items.extend(elements(&a[0], "Cannot prepend on type")?);
                Ok(Value::list(items))
            }),
        );
    }
    for name in ["first", "mustFirst"] {
        map.insert(
            name,
            Func::pure(&[Any], |a| {
                let items = elements(&a[0], "Cannot find first on type")?;
                Ok(items.into_iter().next().unwrap_or(Value::Nil))
            }),
        );
    }
    for name in ["last", "mustLast"] {
        map.insert(
            name,
            Func::pure(&[Any], |a| {
                let items = elements(&a[0], "Cannot find last on type")?;
                Ok(items.into_iter().last().unwrap_or(Value::Nil))
            }),
        );
    }
    for name in ["rest", "mustRest"] {
        map.insert(
            name,
            Func::pure(&[Any], |a| {
                let items = elements(&a[0], "Cannot find rest on type")?;
                // sprig returns a nil `[]interface {}` for an empty list.
                if items.is_empty() {
                    return Ok(Value::nil_list(ListKind::Any));
                }
                Ok(Value::list(items.into_iter().skip(1).collect()))
            }),
        );
    }
    for name in ["initial", "mustInitial"] {
        map.insert(
            name,
            Func::pure(&[Any], |a| {
                let mut items = elements(&a[0], "Cannot find initial on type")?;
                if items.is_empty() {
                    return Ok(Value::nil_list(ListKind::Any));
                }
                items.pop();
                Ok(Value::list(items))
            }),
        );
    }
    for name in ["reverse", "mustReverse"] {
        map.insert(
            name,
            Func::pure(&[Any], |a| {
                let mut items = elements(&a[0], "Cannot find reverse on type")?;
                items.reverse();
                Ok(Value::list(items))
            }),
        );
    }
    for name in ["uniq", "mustUniq"] {
        map.insert(
            name,
            Func::pure(&[Any], |a| {
                Ok(Value::list(uniq(elements(&a[0], "Cannot find uniq on type")?)))
            }),
        );
    }
    for name in ["without", "mustWithout"] {
        map.insert(
            name,
            Func::pure_variadic(&[Any], Any, |a| {
                let omit = a.get(1..).unwrap_or_default();
                let items = elements(&a[0], "Cannot find without on type")?;
                Ok(Value::list(
                    items
                        .into_iter()
                        .filter(|x| !omit.iter().any(|o| o.deep_equal(x)))
                        .collect(),
                ))
            }),
        );
    }
    for name in ["has", "mustHas"] {
        map.insert(
            name,
            Func::pure(&[Any, Any], |a| {
                if a[1].is_nil() {
                    return Ok(Value::Bool(false));
                }
                let items = elements(&a[1], "Cannot find has on type")?;
                Ok(Value::Bool(items.iter().any(|x| x.deep_equal(&a[0]))))
            }),
        );
    }
    for name in ["compact", "mustCompact"] {
        map.insert(
            name,
            Func::pure(&[Any], |a| {
                let items = elements(&a[0], "Cannot compact on type")?;
                Ok(Value::list(
                    items
                        .into_iter()
                        .filter(|x| !crate::funcs::defaults::is_empty(x))
                        .collect(),
                ))
            }),
        );
    }
    for name in ["slice", "mustSlice"] {
        map.insert(
            name,
            Func::pure_variadic(&[Any], Any, |a| slice(&a[0], a.get(1..).unwrap_or_default())),
        );
    }
    map.insert(
        "concat",
        Func::pure_variadic(&[], Any, |a| {
            let mut all = Vec::new();
            for list in a {
                match list {
                    Value::Nil => return Err(FuncError::msg(NIL_DEREF)),
                    Value::List(_) | Value::Bytes(_) => all.extend(elements(list, "")?),
                    other => {
                        return Err(FuncError::msg(format!(
                            "Cannot concat type {} as list",
                            other.kind_name()
                        )));
                    }
                }
            }
            Ok(Value::list(all))
        }),
    );
    for name in ["chunk", "mustChunk"] {
        map.insert(name, Func::pure(&[Int, Any], |a| chunk(arg_int(&a[0]), &a[1])));
    }
}

/// The elements of a Go slice as `interface{}` values; `what` starts the error for a value
/// that is not a slice (`Cannot push on type string`).
pub fn elements(v: &Value, what: &str) -> Result<Vec<Value>, FuncError> {
    match v {
        Value::Nil => Err(FuncError::msg(NIL_DEREF)),
        Value::List(l) => Ok(l.items.as_ref().clone()),
        Value::Bytes(b) => Ok(b.iter().map(|&x| Value::Uint8(x)).collect()),
        other => Err(FuncError::msg(format!("{what} {}", other.kind_name()))),
    }
}

/// The first occurrence of each distinct element (`reflect.DeepEqual`). Scalars are found
/// through a hash set so long lists stay linear; composite values compare pairwise.
fn uniq(items: Vec<Value>) -> Vec<Value> {
    let mut seen: HashSet<ScalarKey> = HashSet::new();
    let mut composites: Vec<Value> = Vec::new();
    let mut unique = Vec::new();
    for item in items {
        let fresh = match scalar_key(&item) {
            Some(Some(key)) => seen.insert(key),
            // NaN equals nothing, not even itself.
            Some(None) => true,
            None => {
                let fresh = !composites.iter().any(|c| c.deep_equal(&item));
                if fresh {
                    composites.push(item.clone());
                }
                fresh
            }
        };
        if fresh {
            unique.push(item);
        }
    }
    unique
}

/// A hashable stand-in for a scalar that compares like `reflect.DeepEqual` (type and value).
#[derive(Hash, PartialEq, Eq)]
enum ScalarKey {
    Nil,
    Bool(bool),
    Int(i64),
    Int64(i64),
    Uint8(u8),
    Uint64(u64),
    Float(u64),
    String(Rc<str>),
    ByteString(Rc<[u8]>),
}

/// `None` for composite values; `Some(None)` for NaN, which is unequal to everything.
fn scalar_key(v: &Value) -> Option<Option<ScalarKey>> {
    Some(Some(match v {
        Value::Nil => ScalarKey::Nil,
        Value::Bool(b) => ScalarKey::Bool(*b),
        Value::Int(i) => ScalarKey::Int(*i),
        Value::Int64(i) => ScalarKey::Int64(*i),
        Value::Uint8(u) => ScalarKey::Uint8(*u),
        Value::Uint64(u) => ScalarKey::Uint64(*u),
        Value::Float(f) if f.is_nan() => return Some(None),
        // 0.0 == -0.0 under `==`.
        Value::Float(f) => ScalarKey::Float(if *f == 0.0 { 0 } else { f.to_bits() }),
        Value::String(s) => ScalarKey::String(Rc::clone(s)),
        Value::ByteString(b) => ScalarKey::ByteString(Rc::clone(b)),
        _ => return None,
    }))
}

/// A slice value of the same Go type as `like`, holding `items`.
fn same_kind(like: &Value, items: Vec<Value>) -> Value {
    match like {
        Value::List(l) => Value::List(List::new(l.kind, items)),
        Value::Bytes(_) => Value::Bytes(
            items
                .iter()
                .map(|x| match x {
                    Value::Uint8(b) => *b,
                    _ => 0,
                })
                .collect(),
        ),
        _ => Value::list(items),
    }
}

/// Sprig's `slice list [start [end]]`: indices converted like `cast.ToInt`; the result keeps
/// the list's type.
fn slice(list: &Value, indices: &[Value]) -> Result<Value, FuncError> {
    let items = match list {
        Value::Nil => return Err(FuncError::msg(NIL_DEREF)),
        Value::List(_) | Value::Bytes(_) => elements(list, "")?,
        other => {
            return Err(FuncError::msg(format!(
                "list should be type of slice or array but {}",
                other.kind_name()
            )));
        }
    };
    // sprig answers an empty list with an untyped nil, before looking at the indices.
    if items.is_empty() {
        return Ok(Value::Nil);
    }
    let len = items.len() as i64;
    let start = indices.first().map_or(0, cast_to_int);
    let end = indices.get(1).map_or(len, cast_to_int);
    if start < 0 || end < start || end > len {
        return Err(FuncError::msg("reflect.Value.Slice: slice index out of bounds"));
    }
    let part = items
        .get(start as usize..end as usize)
        .unwrap_or_default()
        .to_vec();
    Ok(same_kind(list, part))
}

/// `cast.ToInt` for list indices: numbers truncate, strings parse with Go's base prefixes,
/// booleans are 0/1, anything else (or a parse failure) is 0.
pub fn cast_to_int(v: &Value) -> i64 {
    match v {
        Value::Int(i) | Value::Int64(i) => *i,
        Value::Uint8(u) => i64::from(*u),
        // Go's int(uint64) wraps.
        Value::Uint64(u) => *u as i64,
        Value::Float(f) if f.is_finite() => *f as i64,
        Value::Bool(b) => i64::from(*b),
        Value::String(s) => parse_go_int(s.trim()).unwrap_or(0),
        _ => 0,
    }
}

/// `strconv.ParseInt(s, 0, 0)`: optional sign, `0x`/`0o`/`0b`/leading-`0` prefixes, `_`
/// separators only after a prefix.
fn parse_go_int(s: &str) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, s.get(1..)?),
        Some(b'+') => (false, s.get(1..)?),
        _ => (false, s),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits, prefixed) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d.to_string(), true)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d.to_string(), true)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d.to_string(), true)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, lower.get(1..)?.to_string(), true)
    } else {
        (10, lower.clone(), false)
    };
    let digits = if prefixed { digits.replace('_', "") } else { digits };
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    let magnitude = i128::from_str_radix(&digits, radix).ok()?;
    let value = if neg { -magnitude } else { magnitude };
    i64::try_from(value).ok()
}

/// Sprig's `chunk size list`: the chunk count is `floor((len-1)/size)+1` computed in floats,
/// the last chunk holds `len mod size`; counts or lengths that come out negative are Go's
/// `makeslice` panic (so `size` 0 always fails and negative sizes mostly do).
fn chunk(size: i64, list: &Value) -> Result<Value, FuncError> {
    let items = match list {
        Value::Nil => return Err(FuncError::msg(NIL_DEREF)),
        Value::List(_) | Value::Bytes(_) => elements(list, "")?,
        other => {
            return Err(FuncError::msg(format!("Cannot chunk type {}", other.kind_name())));
        }
    };
    let makeslice = || FuncError::msg("runtime error: makeslice: len out of range");
    let len = items.len() as i64;
    let count = ((len - 1) as f64 / size as f64).floor() + 1.0;
    if !count.is_finite() || count < 0.0 || count > (len + 2) as f64 {
        return Err(makeslice());
    }
    let count = count as i64;
    let mut chunks = Vec::with_capacity(count as usize);
    for i in 0..count {
        let mut chunk_len = size;
        if i == count - 1 {
            chunk_len = ((len as f64) % (size as f64)).floor() as i64;
            if chunk_len == 0 {
                chunk_len = size;
            }
        }
        if chunk_len < 0 {
            return Err(makeslice());
        }
        let from = i.saturating_mul(size);
        let mut part = Vec::with_capacity(chunk_len.min(len) as usize);
        for j in 0..chunk_len {
            let ix = from.saturating_add(j);
            let item = usize::try_from(ix)
                .ok()
                .and_then(|ix| items.get(ix))
                .ok_or_else(|| {
                    FuncError::msg(format!(
                        "runtime error: index out of range [{ix}] with length {len}"
                    ))
                })?;
            part.push(item.clone());
        }
        chunks.push(Value::list(part));
    }
    Ok(Value::List(List::new(ListKind::AnyList, chunks)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(v: &[i64]) -> Value {
        Value::list(v.iter().map(|&i| Value::Int(i)).collect())
    }

    fn shape(v: &Value) -> Vec<usize> {
        v.as_list()
            .map(|l| {
                l.items
                    .iter()
                    .map(|c| c.as_list().map_or(0, |c| c.items.len()))
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn chunk_matches_sprig_arithmetic() {
        assert_eq!(
            chunk(2, &ints(&[1, 2, 3, 4, 5])).map(|v| shape(&v)).ok(),
            Some(vec![2, 2, 1])
        );
        assert_eq!(chunk(3, &ints(&[])).map(|v| shape(&v)).ok(), Some(vec![]));
        assert_eq!(chunk(-1, &ints(&[1, 2])).map(|v| shape(&v)).ok(), Some(vec![]));
        assert_eq!(chunk(-2, &ints(&[1])).map(|v| shape(&v)).ok(), Some(vec![1]));
        for (size, list) in [
            (0, vec![1, 2]),
            (0, vec![]),
            (-1, vec![1]),
            (-1, vec![1, 2, 3]),
            (-2, vec![1, 2, 3, 4, 5]),
        ] {
            let err = chunk(size, &ints(&list)).err().map(|e| e.to_string());
            assert_eq!(
                err.as_deref(),
                Some("runtime error: makeslice: len out of range"),
                "{size} {list:?}"
            );
        }
    }

    #[test]
    fn slice_bounds_and_types() {
        let l = ints(&[1, 2, 3, 4]);
        assert_eq!(
            slice(&l, &[Value::Int(1), Value::Int(3)])
                .map(|v| shape(&Value::list(vec![v])))
                .ok(),
            Some(vec![2])
        );
        assert!(slice(&l, &[Value::Int(2), Value::Int(1)]).is_err());
        assert!(slice(&l, &[Value::Int(-1)]).is_err());
        let strs = Value::string_list(vec!["a".into(), "b".into()]);
        let sliced = slice(&strs, &[Value::from("1")]).ok();
        assert_eq!(sliced.map(|v| v.type_name()).as_deref(), Some("[]string"));
    }

    #[test]
    fn uniq_is_type_exact_and_linear() {
        let items = vec![
            Value::Int(1),
            Value::Float(1.0),
            Value::Int64(1),
            Value::from("1"),
            Value::Int(1),
            Value::Float(-0.0),
            Value::Float(0.0),
            Value::Float(f64::NAN),
            Value::Float(f64::NAN),
            Value::list(vec![Value::Int(1)]),
            Value::list(vec![Value::Int(1)]),
            Value::Nil,
            Value::Nil,
        ];
        assert_eq!(uniq(items).len(), 9);
        let many: Vec<Value> = (0..200_000).map(|i| Value::Int(i % 1000)).collect();
        assert_eq!(uniq(many).len(), 1000);
    }

    #[test]
    fn go_int_parsing() {
        assert_eq!(parse_go_int("010"), Some(8));
        assert_eq!(parse_go_int("0x10"), Some(16));
        assert_eq!(parse_go_int("-12"), Some(-12));
        assert_eq!(parse_go_int("08"), None);
        assert_eq!(parse_go_int("1_000"), None);
        assert_eq!(parse_go_int("0x1_0"), Some(16));
    }
}
