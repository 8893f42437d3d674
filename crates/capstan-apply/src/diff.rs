//! Drift: the difference between a live object and what the server would make of the desired
//! one (the answer of a server-side dry-run apply), as a unified diff of their YAML. Both
//! sides drop what only the server writes (managedFields, resourceVersion, generation, uid,
//! creationTimestamp, selfLink, status) and capstan's applied-hash annotation; fields other
//! managers own are untouched by the dry run, so they are equal on both sides and never
//! show up.

use serde::Serialize;
use serde_json::Value;

use capstan_encoding::yaml_emit;
use capstan_go::value::Value as GoValue;

use super::ssa::HASH_ANNOTATION;
use super::status::ObjectKey;

/// The drift of one object.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectDiff {
    #[serde(flatten)]
    pub key: ObjectKey,
    /// Whether the object exists on the server.
    pub live: bool,
    /// Unified diff (`live` → `desired`), empty when there is no drift.
    pub diff: String,
    /// A note, e.g. why the dry run could not be done (the desired object is shown as is).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
}

impl ObjectDiff {
    pub fn drifted(&self) -> bool {
        !self.diff.is_empty()
    }
}

const SERVER_METADATA: &[&str] = &[
    "managedFields",
    "resourceVersion",
    "generation",
    "uid",
    "creationTimestamp",
    "selfLink",
];

/// The object without server-written fields and the applied-hash annotation.
pub fn normalize(obj: &Value) -> Value {
    let mut v = obj.clone();
    if let Value::Object(map) = &mut v {
        map.remove("status");
        if let Some(Value::Object(meta)) = map.get_mut("metadata") {
            for f in SERVER_METADATA {
                meta.remove(*f);
            }
            let mut empty = false;
            if let Some(Value::Object(ann)) = meta.get_mut("annotations") {
                ann.remove(HASH_ANNOTATION);
                empty = ann.is_empty();
            }
            if empty {
                meta.remove("annotations");
            }
        }
    }
    v
}

/// The fields of a Secret whose values are secret.
const SECRET_FIELDS: &[&str] = &["data", "stringData"];
/// What a secret value is printed as.
const MASK: &str = "***";

/// Replaces a Secret's values in `data` and `stringData` (as `kubectl diff` does): `***` on
/// both sides when a value is the same, `*** (before)` and `*** (after)` when it changed, so
/// the diff still shows which keys changed, were added or were removed, but never a value.
pub fn mask_secret(mut before: Option<&mut Value>, after: &mut Value) {
    for field in SECRET_FIELDS {
        let old = before
            .as_deref()
            .and_then(|b| b.get(*field))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let new = after
            .get(*field)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mask = |value: &mut Value, other: Option<&Value>, side: &str| {
            *value = match other {
                Some(o) if o != value => Value::String(format!("{MASK} ({side})")),
                _ => Value::String(MASK.into()),
            };
        };
        if let Some(Value::Object(map)) = before.as_deref_mut().and_then(|b| b.get_mut(*field)) {
            for (k, v) in map.iter_mut() {
                mask(v, new.get(k), "before");
            }
        }
        if let Some(Value::Object(map)) = after.get_mut(*field) {
            for (k, v) in map.iter_mut() {
                mask(v, old.get(k), "after");
            }
        }
    }
}

/// YAML text of an object (keys sorted, as `kubectl get -o yaml` prints).
pub fn to_yaml(obj: &Value) -> String {
    yaml_emit::marshal(&GoValue::from_json(obj))
        .unwrap_or_else(|e| format!("# cannot print as YAML: {e}\n{obj:#}\n"))
}

/// The unified diff from `live` (absent: an empty file) to `desired`, both normalized;
/// empty when they are equal.
pub fn unified(key: &ObjectKey, live: Option<&Value>, desired: &Value) -> String {
    let mut before = live.map(normalize);
    let mut after = normalize(desired);
    if key.group.is_empty() && key.kind == "Secret" {
        mask_secret(before.as_mut(), &mut after);
    }
    if before.as_ref() == Some(&after) {
        return String::new();
    }
    let old = before.as_ref().map(to_yaml).unwrap_or_default();
    let new = to_yaml(&after);
    if old == new {
        return String::new();
    }
    similar::TextDiff::from_lines(&old, &new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("live/{key}"), &format!("desired/{key}"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key() -> ObjectKey {
        ObjectKey {
            group: String::new(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some("ns".into()),
            name: "c".into(),
        }
    }

    #[test]
    fn server_fields_do_not_count() {
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "uid": "1", "resourceVersion": "5", "managedFields": [],
                "annotations": {HASH_ANNOTATION: "a"}},
            "data": {"k": "v"}});
        let desired = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "uid": "1", "resourceVersion": "6", "annotations": {HASH_ANNOTATION: "b"}},
            "data": {"k": "v"}});
        assert_eq!(unified(&key(), Some(&live), &desired), "");
    }

    #[test]
    fn secret_values_are_masked() {
        let secret = |data: Value| {
            let mut k = key();
            k.kind = "Secret".into();
            (
                k,
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c"}, "data": data}),
            )
        };
        let (k, live) = secret(json!({"same": "c2FtZQ==", "changed": "b2xk", "gone": "Z29uZQ=="}));
        let (_, desired) = secret(json!({"same": "c2FtZQ==", "changed": "bmV3", "added": "YWRkZWQ="}));
        let d = unified(&k, Some(&live), &desired);
        for value in ["c2FtZQ==", "b2xk", "bmV3", "Z29uZQ==", "YWRkZWQ="] {
            assert!(!d.contains(value), "{value} shown:\n{d}");
        }
        assert!(d.contains("-  changed: '*** (before)'\n"), "{d}");
        assert!(d.contains("+  changed: '*** (after)'\n"), "{d}");
        assert!(d.contains("-  gone: '***'\n"), "{d}");
        assert!(d.contains("+  added: '***'\n"), "{d}");
        assert!(d.contains("   same: '***'\n"), "{d}");
        // stringData too, also when the object is new.
        let (_, mut desired) = secret(json!({}));
        desired["stringData"] = json!({"password": "hunter2"});
        let d = unified(&k, None, &desired);
        assert!(
            !d.contains("hunter2") && d.contains("+  password: '***'\n"),
            "{d}"
        );
        // Unchanged values: no diff at all.
        assert_eq!(unified(&k, Some(&live), &live), "");
    }

    #[test]
    fn changed_and_missing_objects_diff() {
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "changed"}});
        let desired =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}});
        let d = unified(&key(), Some(&live), &desired);
        assert!(
            d.starts_with("--- live/ConfigMap/ns/c\n+++ desired/ConfigMap/ns/c\n"),
            "{d}"
        );
        assert!(d.contains("-  k: changed\n+  k: v\n"), "{d}");
        let created = unified(&key(), None, &desired);
        assert!(created.contains("+kind: ConfigMap\n"), "{created}");
    }
}
