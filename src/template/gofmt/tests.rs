//! Differential tests: formats and operands with the output of Go's own `fmt` (generated
//! once with a Go toolchain into `go_vectors.json`).

use std::collections::BTreeMap;

use serde_json::Value as Json;

use super::{sprint, sprintf, sprintln};
use crate::template::value::{List, ListKind, Map, MapKind, Value};
use std::rc::Rc;

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
        "slist" => Value::List(List {
            kind: ListKind::String,
            items: Rc::new(items()),
        }),
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
