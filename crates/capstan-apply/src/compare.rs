//! Whether a live object already holds what a desired object says, seen through what the API
//! server does to an object it stores. The applier sends nothing for an object that holds
//! (`ssa::live_matches`), so a difference the server made itself must not count, or the
//! object is re-sent on every apply (and on v1.20 every re-send is a write):
//!
//! - `null` in the desired object has no say: a server-side apply drops it, and the server
//!   keeps or defaults the field (`metadata.creationTimestamp: null`, `schedulerName: null`).
//! - A zero value (`false`, `0`, `""`, `[]`, `{}`, or an object of nothing but zero values)
//!   matches a missing field: built-in types omit empty fields.
//! - A Secret's `stringData` is write-only: the server stores it base64-encoded in `data`
//!   (a `stringData` key wins over the same `data` key). `data` and a ConfigMap's
//!   `binaryData` are compared as the bytes they encode (the server re-encodes them).
//! - Resource quantities (`resources.limits`/`requests`, a quota's `hard`, a LimitRange's
//!   bounds, `sizeLimit`, capacities) are compared by value: the server stores `0.5` as
//!   `500m` and `1024Mi` as `1Gi`.
//! - Numbers are compared by value (`1.0` is `1`).
//!
//! Fields only the live object has (server defaults, status, others' fields) do not matter.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};

/// `desired ⊆ live` under the server's normalisations (module documentation), for an
/// object of `group`/`kind`.
pub fn holds(group: &str, kind: &str, desired: &Value, live: &Value) -> bool {
    let (desired, live) = match (group, kind) {
        ("", "Secret") => (
            secret_data(desired, "data", true),
            secret_data(live, "data", false),
        ),
        ("", "ConfigMap") => (
            secret_data(desired, "binaryData", false),
            secret_data(live, "binaryData", false),
        ),
        _ => (desired.clone(), live.clone()),
    };
    contained(&desired, Some(&live), None)
}

/// The object with `field` (base64 values) decoded to canonical base64, and — for a desired
/// Secret — `stringData` moved into `data`, encoded.
fn secret_data(obj: &Value, field: &str, string_data: bool) -> Value {
    let mut obj = obj.clone();
    let Value::Object(top) = &mut obj else {
        return obj;
    };
    if let Some(Value::Object(data)) = top.get_mut(field) {
        for v in data.values_mut() {
            if let Value::String(s) = v
                && let Some(bytes) = decode(s)
            {
                *s = STANDARD.encode(bytes);
            }
        }
    }
    if string_data && let Some(Value::Object(strings)) = top.remove("stringData") {
        let data = top
            .entry(field.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if !data.is_object() {
            *data = Value::Object(Map::new());
        }
        if let Value::Object(data) = data {
            for (k, v) in strings {
                let encoded = match v {
                    Value::String(s) => Value::String(STANDARD.encode(s.as_bytes())),
                    other => other,
                };
                data.insert(k, encoded);
            }
        }
    }
    obj
}

/// Base64 as Go's decoder for `[]byte` takes it (standard alphabet, padded), ignoring line
/// breaks.
fn decode(s: &str) -> Option<Vec<u8>> {
    let compact: String = s.chars().filter(|c| !matches!(c, '\n' | '\r')).collect();
    STANDARD.decode(compact).ok()
}

/// Keys whose values (or whose map's values) are resource quantities.
const QUANTITY_MAPS: &[&str] = &[
    "limits",
    "requests",
    "hard",
    "capacity",
    "allocatable",
    "max",
    "min",
    "default",
    "defaultRequest",
    "maxLimitRequestRatio",
];
const QUANTITY_FIELDS: &[&str] = &["sizeLimit"];

/// `desired ⊆ live` (`live` None: the field is missing); `parent` is the key of the map
/// `desired` is a value of.
fn contained(desired: &Value, live: Option<&Value>, parent: Option<(&str, &str)>) -> bool {
    let live = match live {
        None | Some(Value::Null) => return matches_absent(desired),
        Some(l) => l,
    };
    match (desired, live) {
        (Value::Null, _) => true,
        (Value::Object(d), Value::Object(l)) => d
            .iter()
            .all(|(k, dv)| contained(dv, l.get(k), Some((parent.map_or("", |p| p.1), k)))),
        (Value::Array(d), Value::Array(l)) => {
            d.len() == l.len() && d.iter().zip(l).all(|(a, b)| contained(a, Some(b), None))
        }
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::String(a), Value::String(b)) if a != b => {
            let quantity = parent
                .is_some_and(|(map, key)| QUANTITY_MAPS.contains(&map) || QUANTITY_FIELDS.contains(&key));
            quantity && same_quantity(a, b)
        }
        // A quantity may be written as a number (`cpu: 1`); the server stores a string.
        (Value::Number(n), Value::String(s)) => {
            parent.is_some_and(|(map, key)| QUANTITY_MAPS.contains(&map) || QUANTITY_FIELDS.contains(&key))
                && same_quantity(&n.to_string(), s)
        }
        (a, b) => a == b,
    }
}

/// Whether a desired value matches a field the live object lacks: `null`, zero values, and
/// objects of nothing else.
fn matches_absent(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.values().all(matches_absent),
    }
}

/// Two quantities of the same value (`0.5` and `500m`, `1024Mi` and `1Gi`, `1e3` and `1k`).
fn same_quantity(a: &str, b: &str) -> bool {
    match (quantity(a), quantity(b)) {
        (Some(x), Some(y)) => {
            let scale = x.abs().max(y.abs()).max(f64::MIN_POSITIVE);
            (x - y).abs() / scale < 1e-12
        }
        _ => false,
    }
}

/// A Kubernetes quantity's value: a signed decimal number and a suffix (binary `Ki`…`Ei`,
/// decimal `n u m k M G T P E`, or an exponent `e3`/`E3`).
fn quantity(s: &str) -> Option<f64> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|(i, c)| !(c.is_ascii_digit() || *c == '.' || (*i == 0 && (*c == '+' || *c == '-'))))
        .map_or(s.len(), |(i, _)| i);
    let (number, suffix) = s.split_at(end);
    if number.is_empty() || !number.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    let value: f64 = number.parse().ok()?;
    let factor = match suffix {
        "" => 1.0,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        exp if exp.starts_with(['e', 'E']) => 10f64.powi(exp[1..].parse().ok()?),
        _ => return None,
    };
    Some(value * factor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn normalisations_table() {
        let b64 = |s: &str| STANDARD.encode(s);
        // (what, group, kind, desired, live, holds)
        let table: Vec<(&str, &str, &str, Value, Value, bool)> = vec![
            (
                "same",
                "",
                "ConfigMap",
                json!({"data": {"a": "1"}}),
                json!({"data": {"a": "1"}}),
                true,
            ),
            (
                "changed",
                "",
                "ConfigMap",
                json!({"data": {"a": "1"}}),
                json!({"data": {"a": "2"}}),
                false,
            ),
            (
                "extra live fields",
                "",
                "ConfigMap",
                json!({"data": {"a": "1"}}),
                json!({"data": {"a": "1", "b": "x"}, "metadata": {"uid": "u"}}),
                true,
            ),
            (
                "missing field",
                "",
                "ConfigMap",
                json!({"data": {"a": "1"}}),
                json!({"data": {}}),
                false,
            ),
            (
                "null vs server time",
                "",
                "ConfigMap",
                json!({"metadata": {"creationTimestamp": null}}),
                json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"}}),
                true,
            ),
            (
                "null vs server default",
                "apps",
                "Deployment",
                json!({"spec": {"template": {"spec": {"schedulerName": null}}}}),
                json!({"spec": {"template": {"spec": {"schedulerName": "default-scheduler"}}}}),
                true,
            ),
            (
                "null vs absent",
                "",
                "ConfigMap",
                json!({"data": null}),
                json!({}),
                true,
            ),
            (
                "empty string vs absent",
                "",
                "Service",
                json!({"spec": {"clusterIP": ""}}),
                json!({"spec": {}}),
                true,
            ),
            (
                "false vs absent",
                "",
                "Pod",
                json!({"spec": {"hostNetwork": false}}),
                json!({"spec": {}}),
                true,
            ),
            (
                "true vs absent",
                "",
                "Pod",
                json!({"spec": {"hostNetwork": true}}),
                json!({"spec": {}}),
                false,
            ),
            (
                "object of empties vs absent",
                "apps",
                "Deployment",
                json!({"spec": {"template": {"metadata": {"creationTimestamp": null, "labels": {}}}}}),
                json!({"spec": {"template": {}}}),
                true,
            ),
            (
                "object with a value vs absent",
                "",
                "Pod",
                json!({"spec": {"securityContext": {"runAsUser": 1}}}),
                json!({"spec": {}}),
                false,
            ),
            (
                "numbers by value",
                "",
                "Pod",
                json!({"spec": {"priority": 1.0}}),
                json!({"spec": {"priority": 1}}),
                true,
            ),
            (
                "list lengths",
                "",
                "Pod",
                json!({"spec": {"args": ["a"]}}),
                json!({"spec": {"args": ["a", "b"]}}),
                false,
            ),
            (
                "stringData as data",
                "",
                "Secret",
                json!({"stringData": {"user": "admin"}}),
                json!({"data": {"user": b64("admin")}, "type": "Opaque"}),
                true,
            ),
            (
                "stringData changed",
                "",
                "Secret",
                json!({"stringData": {"user": "admin"}}),
                json!({"data": {"user": b64("root")}}),
                false,
            ),
            (
                "stringData missing",
                "",
                "Secret",
                json!({"stringData": {"user": "admin"}}),
                json!({"data": {}}),
                false,
            ),
            (
                "stringData wins over data",
                "",
                "Secret",
                json!({"data": {"user": b64("old")}, "stringData": {"user": "new"}}),
                json!({"data": {"user": b64("new")}}),
                true,
            ),
            (
                "data re-encoded",
                "",
                "Secret",
                json!({"data": {"k": "YWJj\nZA=="}}),
                json!({"data": {"k": "YWJjZA=="}}),
                true,
            ),
            (
                "stringData of another kind is a field",
                "example.com",
                "Secret",
                json!({"stringData": {"user": "admin"}}),
                json!({"data": {"user": b64("admin")}}),
                false,
            ),
            (
                "binaryData re-encoded",
                "",
                "ConfigMap",
                json!({"binaryData": {"k": "YWJj\nZA=="}}),
                json!({"binaryData": {"k": "YWJjZA=="}}),
                true,
            ),
            (
                "cpu 0.5 is 500m",
                "apps",
                "Deployment",
                json!({"spec": {"resources": {"requests": {"cpu": "0.5", "memory": "1024Mi"}}}}),
                json!({"spec": {"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}}),
                true,
            ),
            (
                "cpu as a number",
                "",
                "Pod",
                json!({"resources": {"limits": {"cpu": 2}}}),
                json!({"resources": {"limits": {"cpu": "2"}}}),
                true,
            ),
            (
                "quantity changed",
                "",
                "Pod",
                json!({"resources": {"limits": {"cpu": "1"}}}),
                json!({"resources": {"limits": {"cpu": "2"}}}),
                false,
            ),
            (
                "quota hard",
                "",
                "ResourceQuota",
                json!({"spec": {"hard": {"pods": "1e3"}}}),
                json!({"spec": {"hard": {"pods": "1k"}}}),
                true,
            ),
            (
                "sizeLimit",
                "",
                "Pod",
                json!({"emptyDir": {"sizeLimit": "1024Ki"}}),
                json!({"emptyDir": {"sizeLimit": "1Mi"}}),
                true,
            ),
            (
                "equal values elsewhere are strings",
                "",
                "ConfigMap",
                json!({"data": {"cpu": "0.5"}}),
                json!({"data": {"cpu": "500m"}}),
                false,
            ),
        ];
        for (what, group, kind, desired, live, want) in table {
            assert_eq!(
                holds(group, kind, &desired, &live),
                want,
                "{what}: {desired} ⊆ {live}"
            );
        }
    }

    #[test]
    fn quantities() {
        assert_eq!(quantity("500m"), Some(0.5));
        assert_eq!(quantity("1Gi"), Some(1073741824.0));
        assert_eq!(quantity("-2k"), Some(-2000.0));
        assert_eq!(quantity("1.5e3"), Some(1500.0));
        for bad in ["", "m", "1x", "abc", "1.2.3"] {
            assert_eq!(quantity(bad), None, "{bad}");
        }
    }
}
