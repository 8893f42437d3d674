//! `values.schema.json`: validating the coalesced values of a chart and of each of its
//! subcharts, as Helm does before rendering. Pass/fail follows Helm (JSON Schema drafts 4 to
//! 2020-12, chosen by `$schema`); messages follow Helm's wording where it is stable.
//!
//! Helm's message lists errors in Go map order, which changes between runs, so only the
//! wording of each line is Helm's; capstan sorts the lines by location.

use std::collections::BTreeMap;

use std::sync::Arc;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::Value as Json;

use crate::chart::coalesce::ChartValues;
use crate::go::value::Value;

/// Values that do not satisfy a chart's schema, or a schema that cannot be used.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct SchemaError(pub String);

/// Validates `values` against the schema of the processed chart tree's root and, recursively,
/// each enabled subchart's section (keyed by alias) against its own schema. Subcharts without a
/// values section are validated against an empty table.
pub fn validate(chart: &ChartValues<'_>, values: &Value) -> Result<(), SchemaError> {
    let mut report = String::new();
    collect(chart, values, &mut report)?;
    if report.is_empty() {
        return Ok(());
    }
    Err(SchemaError(format!(
        "values don't meet the specifications of the schema(s) in the following chart(s):\n{report}"
    )))
}

fn collect(chart: &ChartValues<'_>, values: &Value, report: &mut String) -> Result<(), SchemaError> {
    if let Some(schema) = &chart.chart.schema {
        let validator = chart
            .chart
            .memo
            .schema
            .get_or_init(|| compile(schema).map(Arc::new));
        let lines = check(validator, &to_json(values)).map_err(|msg| {
            SchemaError(format!(
                "{}: values.schema.json: {msg}",
                chart.chart.source.display()
            ))
        })?;
        if !lines.is_empty() {
            report.push_str(&chart.name);
            report.push_str(":\n");
            for line in lines {
                report.push_str(&line);
                report.push('\n');
            }
        }
    }
    for sub in &chart.children {
        let sub_values = match values {
            Value::Map(m) => m.get(&sub.name).unwrap_or_else(Value::empty_map),
            _ => Value::empty_map(),
        };
        collect(sub, &sub_values, report)?;
    }
    Ok(())
}

/// Compiles a chart's schema (once per chart: renders share it).
fn compile(schema: &[u8]) -> Result<jsonschema::Validator, String> {
    let schema: Json = serde_json::from_slice(schema).map_err(|e| format!("invalid JSON: {e}"))?;
    jsonschema::validator_for(&schema).map_err(|e| format!("invalid schema: {e}"))
}

/// Validates one instance; returns the error lines (empty when valid).
fn check(
    validator: &Result<Arc<jsonschema::Validator>, String>,
    instance: &Json,
) -> Result<Vec<String>, String> {
    let validator = validator.as_ref().map_err(String::clone)?;
    // Group by the first segment of the location, like Helm's nested "validation failed".
    let mut groups: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for err in validator.iter_errors(instance) {
        let location = err.instance_path().to_string();
        let top = match location.get(1..).and_then(|rest| rest.split('/').next()) {
            Some(first) => format!("/{first}"),
            None => String::new(),
        };
        groups
            .entry(top)
            .or_default()
            .push((location, message(err.kind(), instance_at(instance, &err))));
    }
    let mut lines = Vec::new();
    for (top, mut errors) in groups {
        errors.sort();
        if let [(location, msg)] = errors.as_slice() {
            lines.push(format!("- at '{location}': {msg}"));
            continue;
        }
        lines.push(format!("- at '{top}': validation failed"));
        for (location, msg) in errors {
            lines.push(format!("  - at '{location}': {msg}"));
        }
    }
    Ok(lines)
}

fn instance_at<'a>(root: &'a Json, err: &jsonschema::ValidationError<'_>) -> Option<&'a Json> {
    root.pointer(&err.instance_path().to_string())
}

/// Helm's (santhosh-tekuri/jsonschema's) wording of one error.
fn message(kind: &ValidationErrorKind, value: Option<&Json>) -> String {
    use ValidationErrorKind as K;
    let got_len = |v: Option<&Json>| match v {
        Some(Json::String(s)) => s.chars().count(),
        Some(Json::Array(a)) => a.len(),
        Some(Json::Object(o)) => o.len(),
        _ => 0,
    };
    let got = value.map(display).unwrap_or_default();
    match kind {
        K::Type { kind } => {
            let mut want: Vec<String> = match kind {
                TypeKind::Single(t) => vec![t.to_string()],
                TypeKind::Multiple(set) => set.iter().map(|t| t.to_string()).collect(),
            };
            want.sort();
            format!("got {}, want {}", json_type(value), want.join(" or "))
        }
        K::Required { property } => format!("missing property {}", display(property)),
        K::Minimum { limit } => format!("minimum: got {got}, want {limit}"),
        K::Maximum { limit } => format!("maximum: got {got}, want {limit}"),
        K::ExclusiveMinimum { limit } => format!("exclusiveMinimum: got {got}, want {limit}"),
        K::ExclusiveMaximum { limit } => format!("exclusiveMaximum: got {got}, want {limit}"),
        K::MinLength { limit } => format!("minLength: got {}, want {limit}", got_len(value)),
        K::MaxLength { limit } => format!("maxLength: got {}, want {limit}", got_len(value)),
        K::MinItems { limit } => format!("minItems: got {}, want {limit}", got_len(value)),
        K::MaxItems { limit } => format!("maxItems: got {}, want {limit}", got_len(value)),
        K::MinProperties { limit } => format!("minProperties: got {}, want {limit}", got_len(value)),
        K::MaxProperties { limit } => format!("maxProperties: got {}, want {limit}", got_len(value)),
        K::Pattern { pattern } => format!("{got} does not match pattern '{pattern}'"),
        K::Constant { expected_value } => format!("value must be {}", display(expected_value)),
        K::Enum { options } => match options.as_ref() {
            Json::Array(items) => format!(
                "value must be one of {}",
                items.iter().map(display).collect::<Vec<_>>().join(", ")
            ),
            other => format!("value must be one of {}", display(other)),
        },
        K::AdditionalProperties { unexpected } => format!(
            "additional properties {} not allowed",
            unexpected
                .iter()
                .map(|p| format!("'{p}'"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        K::OneOfNotValid { .. } => "'oneOf' failed, none matched".into(),
        K::OneOfMultipleValid { .. } => "'oneOf' failed, more than one matched".into(),
        K::AnyOf { .. } => "'anyOf' failed".into(),
        K::Not { .. } => "'not' failed".into(),
        K::FalseSchema => "false schema".into(),
        K::UniqueItems => "items are not unique".into(),
        K::Format { format } => format!("{got} is not valid {format}"),
        _ => "validation failed".into(),
    }
}

fn json_type(v: Option<&Json>) -> &'static str {
    match v {
        None | Some(Json::Null) => "null",
        Some(Json::Bool(_)) => "boolean",
        Some(Json::Number(_)) => "number",
        Some(Json::String(_)) => "string",
        Some(Json::Array(_)) => "array",
        Some(Json::Object(_)) => "object",
    }
}

/// A JSON value as the validator quotes it: strings in single quotes, the rest as JSON.
fn display(v: &Json) -> String {
    match v {
        Json::String(s) => format!("'{s}'"),
        other => other.to_string(),
    }
}

/// The values as the JSON document the validator sees.
fn to_json(v: &Value) -> Json {
    match v {
        Value::Nil => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) | Value::Int64(i) => Json::from(*i),
        Value::Uint8(u) => Json::from(*u),
        Value::Uint64(u) => Json::from(*u),
        Value::Float(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
        Value::String(s) => Json::String(s.to_string()),
        Value::ByteString(b) => Json::String(crate::go::value::go_lossy(b).into_owned()),
        Value::Bytes(b) => {
            use base64::Engine;
            Json::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        Value::List(l) => Json::Array(l.items.iter().map(to_json).collect()),
        Value::Map(m) => Json::Object(m.snapshot().into_iter().map(|(k, v)| (k, to_json(&v))).collect()),
        Value::Object(o) => to_json(&o.to_data()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::Chart;

    fn tree<'c>(chart: &'c Chart, children: Vec<ChartValues<'c>>) -> ChartValues<'c> {
        ChartValues {
            chart,
            name: chart.name().to_string(),
            defaults: Value::empty_map(),
            children,
        }
    }

    fn chart_with_schema(schema: &str) -> Chart {
        Chart {
            metadata: crate::chart::Metadata {
                name: "t".into(),
                ..Default::default()
            },
            templates: Vec::new(),
            files: Vec::new(),
            values_text: None,
            schema: Some(schema.as_bytes().to_vec()),
            dependencies: Vec::new(),
            lock: None,
            source: "t".into(),
            memo: Default::default(),
        }
    }

    fn values(json: serde_json::Value) -> Value {
        Value::from_json(&json)
    }

    #[test]
    fn reports_like_helm() {
        // The message Helm 4.2.3 printed for this schema and these values.
        let chart =
            chart_with_schema(r#"{"type":"object","required":["z"],"properties":{"x":{"type":"integer"}}}"#);
        let err = validate(&tree(&chart, vec![]), &values(serde_json::json!({"x": "abc"}))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "values don't meet the specifications of the schema(s) in the following chart(s):\n\
             t:\n- at '': missing property 'z'\n- at '/x': got string, want integer\n"
        );
    }

    #[test]
    fn integers_may_be_float64() {
        // Every number in values is a float64; 3.0 still satisfies "integer".
        let chart = chart_with_schema(r#"{"properties":{"n":{"type":"integer","minimum":1}}}"#);
        let t = tree(&chart, vec![]);
        assert!(validate(&t, &values(serde_json::json!({"n": 3.0}))).is_ok());
        assert!(validate(&t, &values(serde_json::json!({"n": 0.5}))).is_err());
    }

    #[test]
    fn subcharts_validate_their_own_section() {
        let mut parent = chart_with_schema("{}");
        parent.schema = None;
        let mut sub = chart_with_schema(r#"{"properties":{"port":{"type":"integer"}}}"#);
        sub.metadata.name = "db".into();
        let t = tree(&parent, vec![tree(&sub, vec![])]);
        let bad = values(serde_json::json!({"db": {"port": "x"}}));
        let err = validate(&t, &bad).unwrap_err().to_string();
        assert!(
            err.contains("db:\n- at '/port': got string, want integer"),
            "{err}"
        );
        assert!(validate(&t, &values(serde_json::json!({"db": {"port": 5}}))).is_ok());
    }

    #[test]
    fn broken_schema_is_an_error_not_a_panic() {
        let chart = chart_with_schema("{not json");
        assert!(validate(&tree(&chart, vec![]), &Value::empty_map()).is_err());
    }
}
