//! Differential tests: formats and operands with the output of Go's own `fmt` (generated
//! once with a Go toolchain into `go_vectors.json`).

use std::collections::BTreeMap;

use serde_json::Value as Json;

use super::{sprint, sprintf, sprintln};
use crate::value::{List, ListKind, Map, MapKind, Value};

fn arg(j: &Json) -> Value {
    let t = j["t"].as_str().unwrap_or_default();
    let v = &j["v"];
    let items = || -> Vec<Value> {
        j["items"]
            .as_array()
            .map(|a| a.iter().map(arg).collect())
            .unwrap_or_default()
    };
    let ents = || -> BTreeMap<String, Value> {
        j["ents"]
            .as_object()
            .map(|o| o.iter().map(|(k, v)| (k.clone(), arg(v))).collect())
            .unwrap_or_default()
    };
    match t {
        "nil" => Value::Nil,
        "bool" => Value::Bool(v.as_bool().unwrap_or_default()),
        "int" => Value::Int(v.as_i64().unwrap_or_default()),
        "int64" => Value::Int64(v.as_i64().unwrap_or_default()),
        "uint8" => Value::Uint8(v.as_u64().unwrap_or_default() as u8),
        "uint64" => Value::Uint64(v.as_u64().unwrap_or_default()),
        "float" => Value::Float(match v.as_str().unwrap_or_default() {
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            "nan" => f64::NAN,
            s => s.parse().unwrap_or_default(),
        }),
        "string" => Value::from(v.as_str().unwrap_or_default()),
        "bytes" => Value::Bytes(v.as_str().unwrap_or_default().as_bytes().into()),
        "list" => Value::list(items()),
        "slist" => Value::List(List::new(ListKind::String, items())),
        "map" => Value::map(ents()),
        "smap" => Value::Map(Map::new(MapKind::String, ents())),
        other => panic!("unknown arg type {other}"),
    }
}

#[test]
fn matches_go_fmt() {
    let cases: Vec<Json> = serde_json::from_str(include_str!("go_vectors.json")).expect("valid vectors");
    let mut failures = Vec::new();
    for case in &cases {
        let args: Vec<Value> = case["args"]
            .as_array()
            .map(|a| a.iter().map(arg).collect())
            .unwrap_or_default();
        let want = case["want"].as_str().unwrap_or_default();
        let format = case["format"].as_str().unwrap_or_default();
        let got = match case["kind"].as_str() {
            Some("print") => sprint(&args),
            Some("println") => sprintln(&args),
            _ => sprintf(format, &args),
        };
        if got != want {
            failures.push(format!("{format:?} {args:?}\n   want {want:?}\n   got  {got:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} differ:\n{}",
        failures.len(),
        cases.len(),
        failures.iter().take(40).cloned().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn a_map_that_contains_itself_is_an_error_not_endless_output() {
    let m = Map::new(MapKind::Any, BTreeMap::from([("x".to_string(), Value::Int(1))]));
    m.insert("self", Value::list(vec![Value::Map(m.clone())]));
    let v = Value::Map(m);
    let err = super::try_format_value(&v).expect_err("a cycle is reported");
    assert_eq!(err.type_name, "map[string]interface {}");
    assert!(super::try_sprintf_value(b"%v", std::slice::from_ref(&v)).is_err());
    assert!(super::try_sprint_value(std::slice::from_ref(&v)).is_err());
    assert!(super::try_sprintln_value(std::slice::from_ref(&v)).is_err());
    // The infallible form still terminates, eliding the repeated map.
    assert_eq!(super::format_value(&v), "map[self:[...] x:1]");
}

#[test]
fn a_map_shared_twice_is_not_a_cycle() {
    let inner = Value::map(BTreeMap::from([("a".to_string(), Value::Int(1))]));
    let outer = Value::list(vec![inner.clone(), inner]);
    let printed = super::try_format_value(&outer).expect("no cycle");
    assert_eq!(printed.as_str(), Some("[map[a:1] map[a:1]]"));
}

#[test]
fn very_deep_values_print_without_overflowing_the_stack() {
    let handle = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(|| {
            let mut v = Value::Nil;
            for _ in 0..50_000 {
                v = Value::list(vec![v]);
            }
            super::format_value(&v).len()
        })
        .expect("thread starts");
    assert_eq!(handle.join().ok(), Some(50_000 * 2 + "<nil>".len()));
}
