//! Sprig v3.3.0 functions: dicts.
//!
//! Sprig's dict functions take `map[string]interface{}`: Helm's `common.Values` converts to
//! it (and comes back typed as the plain map), `map[string]string` does not. Maps are shared
//! references: `set`, `unset`, `merge` and `mergeOverwrite` change the map they are given.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;

use crate::error::FuncError;
use crate::funcs::defaults::is_empty;
use crate::funcs::strings::strval;
use crate::funcs::{Func, FuncEnv, FuncMap, arg_str};
use capstan_go::value::{GoType, List, Map, MapKind, Value};

pub fn register(map: &mut FuncMap, env: &Rc<FuncEnv>) {
    let _ = env;
    use GoType::{Any, MapAny, String};

    map.insert(
        "dict",
        Func::pure_variadic(&[], Any, |a| {
            let mut entries = BTreeMap::new();
            for pair in a.chunks(2) {
                let key = pair.first().map(strval).unwrap_or_default();
                entries.insert(key, pair.get(1).cloned().unwrap_or_else(|| Value::from("")));
            }
            Ok(Value::map(entries))
        }),
    );
    map.insert(
        "get",
        Func::pure(&[MapAny, String], |a| {
            Ok(as_map(&a[0])
                .and_then(|m| m.get(arg_str(&a[1])))
                .unwrap_or_else(|| Value::from("")))
        }),
    );
    map.insert(
        "set",
        Func::pure(&[MapAny, String, Any], |a| {
            let m = as_map(&a[0])
                .filter(|m| !m.nil)
                .ok_or_else(|| FuncError::msg("assignment to entry in nil map"))?;
            m.insert(arg_str(&a[1]), a[2].clone());
            Ok(plain(m))
        }),
    );
    map.insert(
        "unset",
        Func::pure(&[MapAny, String], |a| match as_map(&a[0]) {
            Some(m) => {
                m.entries.borrow_mut().remove(arg_str(&a[1]));
                Ok(plain(m))
            }
            None => Ok(Value::empty_map()),
        }),
    );
    map.insert(
        "hasKey",
        Func::pure(&[MapAny, String], |a| {
            Ok(Value::Bool(as_map(&a[0]).is_some_and(|m| {
                m.entries.borrow().contains_key(arg_str(&a[1]))
            })))
        }),
    );
    map.insert(
        "pluck",
        Func::pure_variadic(&[String], MapAny, |a| {
            let key = arg_str(&a[0]);
            let found = a
                .get(1..)
                .unwrap_or_default()
                .iter()
                .filter_map(|d| as_map(d).and_then(|m| m.get(key)))
                .collect();
            Ok(Value::list(found))
        }),
    );
    map.insert(
        "keys",
        Func::pure_variadic(&[], MapAny, |a| {
            // Go's map order is random; byte order is one of the orders Helm may produce.
            let keys = a
                .iter()
                .filter_map(as_map)
                .flat_map(|m| m.entries.borrow().keys().cloned().collect::<Vec<_>>())
                .collect();
            Ok(Value::string_list(keys))
        }),
    );
    map.insert(
        "values",
        Func::pure(&[MapAny], |a| {
            let values = as_map(&a[0])
                .map(|m| m.entries.borrow().values().cloned().collect())
                .unwrap_or_default();
            Ok(Value::list(values))
        }),
    );
    map.insert(
        "pick",
        Func::pure_variadic(&[MapAny], String, |a| {
            let wanted: Vec<&str> = a.get(1..).unwrap_or_default().iter().map(arg_str).collect();
            Ok(filtered(&a[0], |k| wanted.contains(&k)))
        }),
    );
    map.insert(
        "omit",
        Func::pure_variadic(&[MapAny], String, |a| {
            let unwanted: Vec<&str> = a.get(1..).unwrap_or_default().iter().map(arg_str).collect();
            Ok(filtered(&a[0], |k| !unwanted.contains(&k)))
        }),
    );
    map.insert("dig", Func::pure_variadic(&[], Any, dig));
    for (name, overwrite) in [
        ("merge", false),
        ("mustMerge", false),
        ("mergeOverwrite", true),
        ("mustMergeOverwrite", true),
    ] {
        map.insert(
            name,
            Func::pure_variadic(&[MapAny], MapAny, move |a| {
                // mergo gives a nil destination a new map (the caller's stays nil).
                let dst = match as_map(&a[0]) {
                    Some(m) if !m.nil => m.clone(),
                    _ => Map::new(MapKind::Any, BTreeMap::new()),
                };
                let mut merged = HashSet::new();
                for src in a.get(1..).unwrap_or_default().iter().filter_map(as_map) {
                    merge_into(&dst, src, overwrite, &mut merged);
                }
                Ok(plain(&dst))
            }),
        );
    }
    for name in ["deepCopy", "mustDeepCopy"] {
        map.insert(
            name,
            Func::pure(&[Any], |a| {
                if a[0].is_nil() {
                    return Err(FuncError::msg(
                        "reflect: call of reflect.Value.Type on zero Value",
                    ));
                }
                Ok(deep_copy(&a[0]))
            }),
        );
    }
}

/// The map in a `map[string]interface{}` argument (`None` for a nil map).
fn as_map(v: &Value) -> Option<&Map> {
    v.as_map().filter(|m| m.kind != MapKind::String)
}

/// The same map typed as the plain `map[string]interface {}` sprig's signatures return.
fn plain(m: &Map) -> Value {
    Value::Map(m.retyped(MapKind::Any))
}

/// A new `map[string]interface {}` with the entries whose keys pass `keep`.
fn filtered(v: &Value, keep: impl Fn(&str) -> bool) -> Value {
    let entries = as_map(v)
        .map(|m| {
            m.entries
                .borrow()
                .iter()
                .filter(|(k, _)| keep(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    Value::map(entries)
}

/// Go's message for a failed `x.(T)` type assertion on an `interface{}`.
fn conversion_error(v: &Value, want: &str) -> FuncError {
    let got = if v.is_nil() {
        "nil".to_string()
    } else {
        v.type_name()
    };
    FuncError::msg(format!(
        "interface conversion: interface {{}} is {got}, not {want}"
    ))
}

/// `dig k1 k2 … default dict`: walks nested `map[string]interface {}` (exactly that type) and
/// returns the default as soon as a key is missing.
fn dig(a: &[Value]) -> Result<Value, FuncError> {
    if a.len() < 3 {
        return Err(FuncError::msg("dig needs at least three arguments"));
    }
    let (keys, rest) = a.split_at(a.len() - 2);
    let (default, top) = (&rest[0], &rest[1]);
    let mut current = match top {
        Value::Map(m) if m.kind == MapKind::Any => m.clone(),
        other => return Err(conversion_error(other, "map[string]interface {}")),
    };
    let keys: Vec<std::borrow::Cow<'_, str>> = keys
        .iter()
        .map(|k| k.go_str_lossy().ok_or_else(|| conversion_error(k, "string")))
        .collect::<Result<_, _>>()?;
    for (i, key) in keys.iter().enumerate() {
        let Some(step) = current.get(key) else {
            return Ok(default.clone());
        };
        if i + 1 == keys.len() {
            return Ok(step);
        }
        current = match &step {
            Value::Map(m) if m.kind == MapKind::Any => m.clone(),
            other => return Err(conversion_error(other, "map[string]interface {}")),
        };
    }
    Ok(default.clone())
}

/// The identity of a map's shared storage.
fn map_id(m: &Map) -> usize {
    Rc::as_ptr(&m.entries) as *const () as usize
}

/// mergo's map merge of `src` into `dst`, in place. Nested maps on both sides merge
/// recursively into dst's map; otherwise without `overwrite` src fills keys dst lacks (unless
/// src's value is nil) or holds an empty value, and with `overwrite` src's value always wins,
/// even when empty. Values taken from src are shared, not copied. `merged` records the
/// (dst, src) pairs already merged, so maps that contain themselves cost linear time.
fn merge_into(dst: &Map, src: &Map, overwrite: bool, merged: &mut HashSet<(usize, usize)>) {
    if Rc::ptr_eq(&dst.entries, &src.entries) || !merged.insert((map_id(dst), map_id(src))) {
        return;
    }
    for (key, sv) in src.snapshot() {
        let dv = dst.get(&key);
        match (&dv, &sv) {
            (Some(Value::Map(dm)), Value::Map(sm))
                if dm.kind != MapKind::String && sm.kind != MapKind::String && !dm.nil =>
            {
                // Deeply nested maps recurse deeply: grow the stack instead of overflowing.
                stacker::maybe_grow(64 * 1024, 1024 * 1024, || merge_into(dm, sm, overwrite, merged));
            }
            (None, _) => {
                if overwrite || !sv.is_nil() {
                    dst.insert(key, sv);
                }
            }
            (Some(d), _) => {
                if overwrite || (is_empty(d) && !sv.is_nil()) {
                    dst.insert(key, sv);
                }
            }
        }
    }
}

/// copystructure's deep copy: maps and lists are copied all the way down, keeping their Go
/// types; scalars and objects are immutable and shared. A map reached twice is copied once
/// (so self-containing maps stay finite).
pub fn deep_copy(v: &Value) -> Value {
    deep_copy_at(v, &mut HashMap::new())
}

fn deep_copy_at(v: &Value, copies: &mut HashMap<usize, Map>) -> Value {
    // Deeply nested values recurse deeply: grow the stack instead of overflowing.
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || deep_copy_value(v, copies))
}

fn deep_copy_value(v: &Value, copies: &mut HashMap<usize, Map>) -> Value {
    match v {
        Value::Map(m) => {
            if let Some(done) = copies.get(&map_id(m)) {
                return Value::Map(done.clone());
            }
            if m.nil {
                return Value::nil_map(m.kind);
            }
            let copy = Map::new(m.kind, BTreeMap::new());
            copies.insert(map_id(m), copy.clone());
            for (k, x) in m.snapshot() {
                let x = deep_copy_at(&x, copies);
                copy.insert(k, x);
            }
            Value::Map(copy)
        }
        Value::List(l) => Value::List(List {
            kind: l.kind,
            items: Rc::new(l.items.iter().map(|x| deep_copy_at(x, copies)).collect()),
            nil: l.nil,
        }),
        Value::Object(o) => o.deep_copy().unwrap_or_else(|| v.clone()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dict(pairs: &[(&str, Value)]) -> Map {
        Map::new(
            MapKind::Any,
            pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
        )
    }

    fn int(m: &Map, k: &str) -> Option<i64> {
        match m.get(k) {
            Some(Value::Int(i)) => Some(i),
            _ => None,
        }
    }

    #[test]
    fn merge_keeps_dst_and_fills_empty() {
        let inner = dict(&[("x", Value::Int(1))]);
        let dst = dict(&[
            ("a", Value::Int(1)),
            ("z", Value::Int(0)),
            ("n", Value::Map(inner.clone())),
        ]);
        let src = dict(&[
            ("a", Value::Int(2)),
            ("z", Value::Int(5)),
            ("b", Value::Nil),
            ("n", Value::Map(dict(&[("y", Value::Int(2))]))),
        ]);
        merge_into(&dst, &src, false, &mut HashSet::new());
        assert_eq!(int(&dst, "a"), Some(1));
        assert_eq!(int(&dst, "z"), Some(5));
        assert!(dst.get("b").is_none());
        assert_eq!(int(&inner, "y"), Some(2), "nested maps merge in place");
    }

    #[test]
    fn merge_overwrite_takes_src_even_when_empty() {
        let dst = dict(&[
            ("a", Value::Int(1)),
            ("n", Value::Map(dict(&[("x", Value::Int(1))]))),
        ]);
        let src = dict(&[("a", Value::Int(0)), ("n", Value::Nil), ("b", Value::Nil)]);
        merge_into(&dst, &src, true, &mut HashSet::new());
        assert_eq!(int(&dst, "a"), Some(0));
        assert!(matches!(dst.get("n"), Some(Value::Nil)));
        assert!(matches!(dst.get("b"), Some(Value::Nil)));
    }

    #[test]
    fn merge_survives_self_reference() {
        let m = dict(&[]);
        m.insert("self", Value::Map(m.clone()));
        merge_into(&m, &m.clone(), true, &mut HashSet::new());
        let other = dict(&[]);
        other.insert("a", Value::Map(other.clone()));
        other.insert("b", Value::Map(other.clone()));
        m.insert("a", Value::Map(m.clone()));
        m.insert("b", Value::Map(m.clone()));
        merge_into(&other, &m, false, &mut HashSet::new());
        let copy = deep_copy(&Value::Map(m.clone()));
        assert_eq!(copy.as_map().map(Map::len), Some(3));
    }

    #[test]
    fn merge_handles_deep_nesting() {
        let nest = || {
            let top = dict(&[]);
            let mut cur = top.clone();
            for _ in 0..100_000 {
                let next = dict(&[]);
                cur.insert("n", Value::Map(next.clone()));
                cur = next;
            }
            cur.insert("leaf", Value::Int(1));
            top
        };
        let (dst, src) = (nest(), nest());
        merge_into(&dst, &src, true, &mut HashSet::new());
        let copy = deep_copy(&Value::Map(dst.clone()));
        std::mem::forget(copy);
        // Dropping a 100k-deep map recurses in Rc's drop glue; not what this test is about.
        std::mem::forget((dst, src));
    }

    #[test]
    fn dig_walks_plain_maps_only() {
        let nested = Value::Map(dict(&[("a", Value::Map(dict(&[("b", Value::from("deep"))])))]));
        let got = dig(&[
            Value::from("a"),
            Value::from("b"),
            Value::from("def"),
            nested.clone(),
        ]);
        assert_eq!(
            got.ok().and_then(|v| v.as_str().map(String::from)).as_deref(),
            Some("deep")
        );
        let got = dig(&[
            Value::from("a"),
            Value::from("x"),
            Value::from("def"),
            nested.clone(),
        ]);
        assert_eq!(
            got.ok().and_then(|v| v.as_str().map(String::from)).as_deref(),
            Some("def")
        );
        let err = dig(&[Value::from("a"), Value::from("d"), nested.into_values()]).err();
        assert_eq!(
            err.map(|e| e.to_string()).as_deref(),
            Some("interface conversion: interface {} is common.Values, not map[string]interface {}")
        );
    }

    #[test]
    fn deep_copy_is_independent_and_typed() {
        let inner = dict(&[("x", Value::Int(1))]);
        let orig = Value::Map(dict(&[("n", Value::Map(inner.clone()))])).into_values();
        let copy = deep_copy(&orig);
        assert_eq!(copy.type_name(), "common.Values");
        if let Some(Value::Map(n)) = copy.as_map().and_then(|m| m.get("n")) {
            n.insert("y", Value::Int(2));
        }
        assert!(inner.get("y").is_none());
    }
}
