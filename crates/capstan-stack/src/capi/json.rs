//! Objects read from YAML as JSON (how the operator holds them), and JSON as the template
//! data of values templates, with the typing of the API's unstructured objects: integers are
//! `int64` (`float64` above its range), other numbers `float64`, keys strings.

use std::collections::BTreeMap;

use capstan_encoding::yaml_load::YamlNode;
use capstan_template::Value;

/// `node` as JSON; `Err((path, problem))` for what JSON cannot hold (a non-string key, an
/// infinite number).
pub fn yaml_to_json(node: &YamlNode, path: &str) -> Result<serde_json::Value, (String, String)> {
    Ok(match node {
        YamlNode::Null => serde_json::Value::Null,
        YamlNode::Bool(b) => serde_json::Value::Bool(*b),
        YamlNode::Int(i) => serde_json::Value::from(*i),
        YamlNode::Uint(u) => serde_json::Value::from(*u),
        YamlNode::Float(f) => serde_json::Number::from_f64(*f)
            .map(serde_json::Value::Number)
            .ok_or_else(|| {
                (
                    path.to_string(),
                    "infinite or NaN numbers are not valid in an object".to_string(),
                )
            })?,
        YamlNode::Str(s) => serde_json::Value::String(s.clone()),
        YamlNode::Seq(items) => serde_json::Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| yaml_to_json(item, &format!("{path}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        YamlNode::Map(entries) => {
            let mut map = serde_json::Map::new();
            for (k, v) in entries {
                let YamlNode::Str(key) = k else {
                    return Err((path.to_string(), "keys must be strings".to_string()));
                };
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                map.insert(key.clone(), yaml_to_json(v, &child)?);
            }
            serde_json::Value::Object(map)
        }
    })
}

/// `json` as template data: what [`crate::values::parse_object`] makes of the same object's
/// YAML.
pub fn json_to_template(json: &serde_json::Value) -> Value {
    match json {
        serde_json::Value::Null => Value::Nil,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Value::Int64(i),
            (None, Some(u), _) => Value::Float(u as f64),
            (None, None, Some(f)) => Value::Float(f),
            (None, None, None) => Value::Nil,
        },
        serde_json::Value::String(s) => Value::from(s.as_str()),
        serde_json::Value::Array(items) => Value::list(items.iter().map(json_to_template).collect()),
        serde_json::Value::Object(map) => Value::map(
            map.iter()
                .map(|(k, v)| (k.clone(), json_to_template(v)))
                .collect::<BTreeMap<_, _>>(),
        ),
    }
}
