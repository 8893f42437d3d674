//! Output helpers shared by subcommands.

/// A template value as JSON (for `-o json`).
pub fn value_to_json(v: &capstan_template::Value) -> serde_json::Value {
    use capstan_template::Value;
    match v {
        Value::Nil => serde_json::Value::Null,
        Value::Bool(b) => (*b).into(),
        Value::Int(i) | Value::Int64(i) => (*i).into(),
        Value::Uint8(u) => (*u).into(),
        Value::Uint64(u) => (*u).into(),
        // YAML numbers load as float64 (Helm's values typing); Go's encoding/json prints an
        // integral float64 without a fraction (`1`, not `1.0`), so Kubernetes reads an integer.
        Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 => (*f as i64).into(),
        Value::Float(f) => {
            serde_json::Number::from_f64(*f).map_or(serde_json::Value::Null, serde_json::Value::Number)
        }
        Value::String(s) => s.to_string().into(),
        Value::ByteString(b) | Value::Bytes(b) => capstan_go::value::go_lossy(b).into_owned().into(),
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
