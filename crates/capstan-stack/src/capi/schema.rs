//! The fields of an object a CRD version's OpenAPI schema does not know — kubectl's strict
//! field validation, for files capstan reads (and for checking that test objects have the
//! shape of a Cluster API release's CRDs).

use serde_json::Value;

/// The dotted paths (`spec.waves[0].form`) of the fields of `object` that `schema` (an
/// `openAPIV3Schema`) does not declare; none below `x-kubernetes-preserve-unknown-fields`,
/// `additionalProperties`, nor the top level's `apiVersion`, `kind` and `metadata` (the API
/// server's own, whether the schema declares them or not).
pub fn unknown_fields(object: &Value, schema: &Value) -> Vec<String> {
    let mut found = Vec::new();
    walk(object, schema, "", &mut found);
    found
}

fn walk(value: &Value, schema: &Value, path: &str, found: &mut Vec<String>) {
    if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        return;
    }
    match value {
        Value::Object(map) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| !a.is_boolean());
            for (key, child) in map {
                let child_path = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                if path.is_empty() && ["apiVersion", "kind", "metadata"].contains(&key.as_str()) {
                    continue;
                }
                match (properties.and_then(|p| p.get(key)), additional) {
                    (Some(child_schema), _) => walk(child, child_schema, &child_path, found),
                    (None, Some(child_schema)) => walk(child, child_schema, &child_path, found),
                    (None, None) => {
                        if schema.get("additionalProperties") != Some(&Value::Bool(true)) {
                            found.push(child_path);
                        }
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    walk(item, item_schema, &format!("{path}[{i}]"), found);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::unknown_fields;
    use serde_json::json;

    #[test]
    fn finds_what_the_schema_does_not_declare() {
        let schema = json!({"type": "object", "properties": {
            "apiVersion": {"type": "string"}, "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {"type": "object", "properties": {
                "waves": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
            }}
        }});
        let object = json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "x", "whatever": 1},
            "spec": {"waves": [{"name": "a"}, {"name": "b", "from": "auto"}], "labels": {"any": "x"},
                     "free": {"any": {"thing": 1}}, "bogus": true},
            "extra": 1});
        assert_eq!(
            unknown_fields(&object, &schema),
            ["extra", "spec.bogus", "spec.waves[1].from"]
        );
        let clean = json!({"apiVersion": "a/v1", "kind": "K", "spec": {"waves": [{"name": "a"}]}});
        assert!(unknown_fields(&clean, &schema).is_empty());
    }
}
