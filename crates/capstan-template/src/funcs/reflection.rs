//! Sprig v3.3.0 functions: reflection (`typeOf`, `typeIs`, `typeIsLike`, `kindOf`, `kindIs`,
//! `deepEqual`), answering with Go's type and kind names.

use std::rc::Rc;

use crate::funcs::{Func, FuncEnv, FuncMap, arg_str};
use capstan_go::value::{GoType, Value};

pub fn register(map: &mut FuncMap, env: &Rc<FuncEnv>) {
    let _ = env;
    use GoType::{Any, String};

    map.insert(
        "typeOf",
        Func::pure(&[Any], |a| Ok(Value::from(a[0].type_name()))),
    );
    map.insert(
        "kindOf",
        Func::pure(&[Any], |a| Ok(Value::from(a[0].kind_name()))),
    );
    map.insert(
        "typeIs",
        Func::pure(&[String, Any], |a| {
            Ok(Value::Bool(a[1].type_name() == arg_str(&a[0])))
        }),
    );
    map.insert(
        "typeIsLike",
        Func::pure(&[String, Any], |a| {
            // The type itself or a pointer to it.
            let (want, got) = (arg_str(&a[0]), a[1].type_name());
            Ok(Value::Bool(got == want || got.strip_prefix('*') == Some(want)))
        }),
    );
    map.insert(
        "kindIs",
        Func::pure(&[String, Any], |a| {
            Ok(Value::Bool(a[1].kind_name() == arg_str(&a[0])))
        }),
    );
    map.insert(
        "deepEqual",
        Func::pure(&[Any, Any], |a| Ok(Value::Bool(a[0].deep_equal(&a[1])))),
    );
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::funcs::{FuncMap, NoContext};
    use capstan_go::value::{List, ListKind, Map, MapKind, Value};

    /// The functions of the families in strings/lists/dicts/defaults/reflection.
    const NAMES: &[&str] = &[
        "hello",
        "trim",
        "upper",
        "lower",
        "title",
        "untitle",
        "swapcase",
        "snakecase",
        "kebabcase",
        "camelcase",
        "nospace",
        "initials",
        "shuffle",
        "trimAll",
        "trimall",
        "trimSuffix",
        "trimPrefix",
        "trunc",
        "substr",
        "repeat",
        "abbrev",
        "abbrevboth",
        "wrap",
        "wrapWith",
        "contains",
        "hasPrefix",
        "hasSuffix",
        "quote",
        "squote",
        "cat",
        "indent",
        "nindent",
        "replace",
        "plural",
        "split",
        "splitn",
        "splitList",
        "join",
        "sortAlpha",
        "list",
        "tuple",
        "append",
        "push",
        "prepend",
        "first",
        "last",
        "rest",
        "initial",
        "reverse",
        "uniq",
        "without",
        "has",
        "compact",
        "slice",
        "concat",
        "chunk",
        "dict",
        "get",
        "set",
        "unset",
        "hasKey",
        "pluck",
        "keys",
        "values",
        "pick",
        "omit",
        "dig",
        "merge",
        "mergeOverwrite",
        "deepCopy",
        "default",
        "empty",
        "coalesce",
        "all",
        "any",
        "ternary",
        "typeOf",
        "kindOf",
        "typeIs",
        "typeIsLike",
        "kindIs",
        "deepEqual",
    ];

    fn pool() -> Vec<Value> {
        let cyclic = Map::new(MapKind::Any, BTreeMap::new());
        cyclic.insert("a", Value::Map(cyclic.clone()));
        cyclic.insert("b", Value::Map(cyclic.clone()));
        vec![
            Value::Nil,
            Value::Bool(true),
            Value::Int(0),
            Value::Int(-1),
            Value::Int(3),
            Value::Int(5),
            Value::Int(i64::MAX),
            Value::Int(i64::MIN),
            Value::Int64(-7),
            Value::Float(f64::NAN),
            Value::Float(-1e300),
            Value::from(""),
            Value::from(" héllo_World-1a\u{a0}x "),
            Value::Bytes(vec![0xc3, 0x28, b' '].into()),
            Value::list(vec![Value::Nil, Value::Int(1), Value::from("a"), Value::Int(1)]),
            Value::string_list(vec!["b".into(), "a".into()]),
            Value::List(List::new(ListKind::AnyList, vec![Value::list(vec![])])),
            Value::empty_map(),
            Value::Map(cyclic),
            Value::Map(Map::new(MapKind::String, BTreeMap::new())),
            Value::from_json(&serde_json::json!({"a": {"b": 1}})).into_values(),
        ]
    }

    fn is_cyclic(v: &Value) -> bool {
        v.as_map().is_some_and(|m| {
            m.get("a")
                .and_then(|a| a.as_map().map(|a| std::rc::Rc::ptr_eq(&a.entries, &m.entries)))
                .unwrap_or(false)
        })
    }

    #[test]
    fn deep_equal_terminates_on_cyclic_maps() {
        let cyclic = || {
            let m = Map::new(MapKind::Any, BTreeMap::new());
            m.insert("a", Value::Map(m.clone()));
            m.insert("l", Value::list(vec![Value::Map(m.clone())]));
            Value::Map(m)
        };
        let (x, y) = (cyclic(), cyclic());
        assert!(x.deep_equal(&y));
        let funcs = FuncMap::helm();
        let both = Value::list(vec![y.clone(), x.clone()]);
        let calls = [
            ("has", vec![x.clone(), both.clone()]),
            ("uniq", vec![both.clone()]),
            ("without", vec![both.clone(), x.clone()]),
            ("deepEqual", vec![x.clone(), y.clone()]),
        ];
        for (name, args) in calls {
            let f = funcs.get(name).expect("registered");
            assert!((f.imp)(&mut NoContext, &args).is_ok(), "{name}");
        }
    }

    /// Every function, fed every combination of hostile arguments of each arity its
    /// signature allows (up to three), returns a value or an error and never panics.
    #[test]
    fn no_function_panics_on_any_argument() {
        let funcs = FuncMap::helm();
        let full = pool();
        // Formatting a map that contains itself never ends (in Go too): printing functions
        // get the acyclic values only.
        let printing = ["quote", "squote", "cat", "join", "sortAlpha", "dict"];
        for name in NAMES {
            let pool: Vec<Value> = if printing.contains(name) {
                full.iter().filter(|v| !is_cyclic(v)).cloned().collect()
            } else {
                full.clone()
            };
            let Some(f) = funcs.get(name) else {
                panic!("{name} is not registered");
            };
            let fixed = f.params.len();
            let max = if f.variadic.is_some() { fixed.max(3) } else { fixed };
            for arity in fixed..=max {
                let mut idx = vec![0usize; arity];
                loop {
                    let args: Vec<Value> = idx.iter().map(|&i| pool[i].clone()).collect();
                    let _ = (f.imp)(&mut NoContext, &args);
                    // Next combination (odometer).
                    let mut pos = 0;
                    while pos < arity {
                        idx[pos] += 1;
                        if idx[pos] < pool.len() {
                            break;
                        }
                        idx[pos] = 0;
                        pos += 1;
                    }
                    if pos == arity {
                        break;
                    }
                }
            }
        }
    }
}
