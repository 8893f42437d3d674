//! The ClusterClass conversion to v1beta2 against Cluster API v1.14's CRDs
//! (`../shared/capi-crds/v1.14.0-rc.1`): the field names it checks its results against are
//! those CRDs' `v1beta2` schemas, and every field the `v1beta1` schemas declare either
//! converts (to fields `v1beta2` has) or is refused as having no equivalent — none is
//! unknown to the conversion.

use std::path::Path;

use capstan_stack::capi::to_v1beta2::{self, CONVERTED_KINDS, Refusal, V1BETA2_FIELDS};
use capstan_stack::values::parse_json_object;
use serde_json::{Map, Value, json};

const FILES: [&str; 6] = [
    "cluster.x-k8s.io_clusterclasses.yaml",
    "controlplane.cluster.x-k8s.io_kubeadmcontrolplanetemplates.yaml",
    "bootstrap.cluster.x-k8s.io_kubeadmconfigtemplates.yaml",
    "infrastructure.cluster.x-k8s.io_dockerclustertemplates.yaml",
    "infrastructure.cluster.x-k8s.io_dockermachinetemplates.yaml",
    "infrastructure.cluster.x-k8s.io_dockermachinepooltemplates.yaml",
];

fn crd(dir: &Path, file: &str) -> Value {
    let path = dir.join(file);
    parse_json_object(&std::fs::read_to_string(&path).unwrap(), &path).unwrap()
}

fn schema_of(crd: &Value, version: &str) -> Value {
    crd["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == version)
        .unwrap()["schema"]["openAPIV3Schema"]
        .clone()
}

/// A schema with nothing but its field names and which mappings may not be empty (what
/// `v1beta2-fields.json` holds).
fn names_only(schema: &Value) -> Value {
    let mut out = Map::new();
    if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        out.insert("x-kubernetes-preserve-unknown-fields".into(), Value::Bool(true));
    }
    if let Some(min) = schema
        .get("minProperties")
        .filter(|m| m.as_u64().is_some_and(|n| n > 0))
    {
        out.insert("minProperties".into(), min.clone());
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        let named: Map<String, Value> = properties
            .iter()
            .map(|(k, v)| (k.clone(), names_only(v)))
            .collect();
        out.insert("properties".into(), Value::Object(named));
    }
    if let Some(items) = schema.get("items").filter(|i| i.is_object()) {
        out.insert("items".into(), names_only(items));
    }
    match schema.get("additionalProperties") {
        Some(Value::Bool(true)) => {
            out.insert("additionalProperties".into(), Value::Bool(true));
        }
        Some(additional @ Value::Object(_)) => {
            out.insert("additionalProperties".into(), names_only(additional));
        }
        _ => {}
    }
    Value::Object(out)
}

#[test]
fn the_v1beta2_field_names_are_the_crds() {
    let Some(shared) = capstan_testenv::shared::dir("the_v1beta2_field_names_are_the_crds") else {
        return;
    };
    let dir = shared.join("capi-crds/v1.14.0-rc.1");
    let mut from_crds = Map::new();
    for file in FILES {
        let crd = crd(&dir, file);
        let group = crd["spec"]["group"].as_str().unwrap();
        let kind = crd["spec"]["names"]["kind"].as_str().unwrap();
        let mut names = names_only(&schema_of(&crd, "v1beta2"));
        names["properties"].as_object_mut().unwrap().remove("status");
        from_crds.insert(format!("{group}/v1beta2/{kind}"), names);
    }
    let embedded: Value = serde_json::from_str(V1BETA2_FIELDS).unwrap();
    assert_eq!(
        embedded,
        Value::Object(from_crds),
        "regenerate v1beta2-fields.json"
    );
}

/// A value of `schema`'s type for a leaf (durations where a `v1beta1` string is one).
fn leaf_value(schema: &Value, key: &str) -> Value {
    match schema.get("type").and_then(Value::as_str) {
        Some("boolean") => json!(true),
        Some("integer") | Some("number") => json!(1),
        Some("array") => json!([]),
        Some("object") => json!({}),
        _ if schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) => json!(1),
        _ if key.to_lowercase().contains("timeout") || key.ends_with("Period") || key == "ttl" => {
            json!("90s")
        }
        _ => json!("x"),
    }
}

/// Every leaf field path of `schema` (below `spec`), each as the smallest object holding it.
fn leaf_objects(schema: &Value, key: &str, found: &mut Vec<(String, Value)>, path: &str) {
    if let Some(properties) = schema.get("properties").and_then(Value::as_object)
        && !properties.is_empty()
    {
        for (child_key, child) in properties {
            let mut inner = Vec::new();
            leaf_objects(child, child_key, &mut inner, &format!("{path}.{child_key}"));
            for (p, v) in inner {
                found.push((p, json!({ child_key.clone(): v })));
            }
        }
        return;
    }
    if let Some(items) = schema.get("items").filter(|i| i.is_object())
        && schema.get("type").and_then(Value::as_str) == Some("array")
    {
        let mut inner = Vec::new();
        leaf_objects(items, key, &mut inner, &format!("{path}[0]"));
        for (p, v) in inner {
            found.push((p, json!([v])));
        }
        return;
    }
    if let Some(additional) = schema.get("additionalProperties").filter(|a| a.is_object()) {
        let mut inner = Vec::new();
        leaf_objects(additional, "k", &mut inner, &format!("{path}.k"));
        for (p, v) in inner {
            found.push((p, json!({ "k": v })));
        }
        return;
    }
    found.push((path.to_string(), leaf_value(schema, key)));
}

#[test]
fn every_v1beta1_field_converts_or_is_refused_as_having_no_equivalent() {
    let Some(shared) =
        capstan_testenv::shared::dir("every_v1beta1_field_converts_or_is_refused_as_having_no_equivalent")
    else {
        return;
    };
    let dir = shared.join("capi-crds/v1.14.0-rc.1");
    let mut unknown = Vec::new();
    let mut checked = 0;
    for (file, (group, kind)) in FILES.iter().zip(CONVERTED_KINDS) {
        let schema = schema_of(&crd(&dir, file), "v1beta1");
        let mut leaves = Vec::new();
        leaf_objects(&schema["properties"]["spec"], "spec", &mut leaves, "spec");
        for (path, spec) in leaves {
            let object = json!({"apiVersion": format!("{group}/v1beta1"), "kind": kind,
                "metadata": {"name": "x"}, "spec": spec});
            checked += 1;
            match to_v1beta2::convert(&object, "ns") {
                Ok(Some(_)) => {}
                Ok(None) => panic!("{kind} not converted"),
                Err(e) if matches!(e.refusal, Refusal::NoEquivalent(_)) => {}
                Err(e) => unknown.push(format!("{kind} {path}: {e}")),
            }
        }
    }
    assert!(checked > 500, "only {checked} fields");
    assert!(
        unknown.is_empty(),
        "{} fields:\n{}",
        unknown.len(),
        unknown.join("\n")
    );
}
