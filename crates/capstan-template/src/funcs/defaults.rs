//! Sprig v3.3.0 functions: defaults (`default`, `empty`, `coalesce`, `all`, `any`, `ternary`).

use std::rc::Rc;

use crate::funcs::{Func, FuncEnv, FuncMap};
use capstan_go::value::{GoType, Value};

pub fn register(map: &mut FuncMap, env: &Rc<FuncEnv>) {
    let _ = env;
    use GoType::{Any, Bool};

    map.insert(
        "default",
        Func::pure_variadic(&[Any], Any, |a| {
            // Only the first given value counts; none at all is empty.
            Ok(match a.get(1) {
                Some(given) if !is_empty(given) => given.clone(),
                _ => a[0].clone(),
            })
        }),
    );
    map.insert("empty", Func::pure(&[Any], |a| Ok(Value::Bool(is_empty(&a[0])))));
    map.insert(
        "coalesce",
        Func::pure_variadic(&[], Any, |a| {
            Ok(a.iter().find(|v| !is_empty(v)).cloned().unwrap_or(Value::Nil))
        }),
    );
    map.insert(
        "all",
        Func::pure_variadic(&[], Any, |a| Ok(Value::Bool(a.iter().all(|v| !is_empty(v))))),
    );
    map.insert(
        "any",
        Func::pure_variadic(&[], Any, |a| Ok(Value::Bool(a.iter().any(|v| !is_empty(v))))),
    );
    map.insert(
        "ternary",
        Func::pure(&[Any, Any, Bool], |a| {
            Ok(if matches!(a[2], Value::Bool(true)) {
                a[0].clone()
            } else {
                a[1].clone()
            })
        }),
    );
}

/// Sprig's emptiness: nil, false, zero numbers, and empty strings, lists and maps are empty;
/// structs and non-nil pointers never are.
pub fn is_empty(v: &Value) -> bool {
    match v {
        Value::Nil => true,
        Value::Bool(b) => !b,
        Value::Int(i) | Value::Int64(i) => *i == 0,
        Value::Uint8(u) => *u == 0,
        Value::Uint64(u) => *u == 0,
        Value::Float(f) => *f == 0.0,
        Value::String(s) => s.is_empty(),
        Value::ByteString(b) | Value::Bytes(b) => b.is_empty(),
        Value::List(l) => l.items.is_empty(),
        Value::Map(m) => m.is_empty(),
        Value::Object(o) => o.kind() == "map" && o.entries().is_none_or(|e| e.is_empty()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emptiness_follows_go_zero_values() {
        for v in [
            Value::Nil,
            Value::Bool(false),
            Value::Int(0),
            Value::Float(0.0),
            Value::from(""),
            Value::list(vec![]),
            Value::empty_map(),
        ] {
            assert!(is_empty(&v), "{v:?}");
        }
        for v in [
            Value::Bool(true),
            Value::Int64(1),
            Value::from("0"),
            Value::from(" "),
            Value::list(vec![Value::Int(0)]),
        ] {
            assert!(!is_empty(&v), "{v:?}");
        }
    }
}
