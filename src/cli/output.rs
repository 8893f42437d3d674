//! Output helpers shared by subcommands.

/// A template value as JSON (for `-o json`).
pub fn value_to_json(v: &crate::template::Value) -> serde_json::Value {
    use crate::template::Value;
    match v {
        Value::Nil => serde_json::Value::Null,
        Value::Bool(b) => (*b).into(),
        Value::Int(i) | Value::Int64(i) => (*i).into(),
        Value::Uint8(u) => (*u).into(),
        Value::Uint64(u) => (*u).into(),
        Value::Float(f) => {
            serde_json::Number::from_f64(*f).map_or(serde_json::Value::Null, serde_json::Value::Number)
        }
        Value::String(s) => s.to_string().into(),
        Value::ByteString(b) | Value::Bytes(b) => crate::go::value::go_lossy(b).into_owned().into(),
        Value::List(l) => l.items.iter().map(value_to_json).collect(),
        Value::Map(m) => m
            .entries
            .borrow()
            .iter()
            .map(|(k, v)| (k.clone(), value_to_json(v)))
            .collect(),
        Value::Object(o) => value_to_json(&o.to_data()),
    }
}
