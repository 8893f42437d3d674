//! Reading values files the way Helm does: YAML 1.1 (go-yaml v2) through a JSON round trip,
//! so every number is a `float64`; a multi-document `values.yaml` is merged.

use crate::Chart;
use crate::coalesce::{new_table, table};
use capstan_encoding::yaml_load;
use capstan_go::value::Value;
use capstan_go::value::frozen::Frozen;

/// A values file that cannot be read.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{context}: {msg}")]
pub struct ValuesError {
    pub file: String,
    /// Helm's lead-in: `failed to parse <file>` for `-f` files, `cannot load values.yaml`
    /// for a chart's defaults.
    pub context: String,
    pub msg: String,
}

/// Parses a user values file (all documents merged, later documents winning) into a table.
pub fn parse(text: &str, file: &str) -> Result<Value, ValuesError> {
    parse_with_context(text, file, format!("failed to parse {file}"))
}

fn parse_with_context(text: &str, file: &str, context: String) -> Result<Value, ValuesError> {
    let docs = load_yaml_documents(text).map_err(|msg| ValuesError {
        file: file.to_string(),
        context,
        msg,
    })?;
    let mut merged = new_table();
    for doc in &docs {
        merged = merge_maps(&merged, doc);
    }
    Ok(merged)
}

/// Several values files merged the way `helm template -f a.yaml -f b.yaml` merges them
/// (Helm's `MergeValues` over its `-f` files): later files win key by key; where two files
/// both hold a table at a key the tables merge, anything else (a scalar, a list, a null)
/// replaces what was there. Nulls are kept: the chart's coalescing ([`crate::coalesce`]) then
/// deletes the chart default a null meets, as Helm does. Files that are not tables count as
/// empty ones.
pub fn merge_files(files: &[Value]) -> Value {
    files
        .iter()
        .fold(new_table(), |merged, file| merge_maps(&merged, file))
}

/// Helm's `MergeMaps`: `b` wins; where both hold a table, the tables merge recursively.
fn merge_maps(a: &Value, b: &Value) -> Value {
    let out = new_table();
    let (Some(out_map), Some(b_map)) = (table(&out), table(b)) else {
        return out;
    };
    if let Some(a_map) = table(a) {
        for (k, v) in a_map.snapshot() {
            out_map.insert(k, v);
        }
    }
    for (k, v) in b_map.snapshot() {
        let merged = match (out_map.get(&k), table(&v)) {
            (Some(existing), Some(_)) if table(&existing).is_some() => merge_maps(&existing, &v),
            _ => v,
        };
        out_map.insert(k, merged);
    }
    out
}

/// The chart's own default values (`values.yaml`), or an empty table.
pub fn chart_defaults(chart: &Chart) -> Result<Value, ValuesError> {
    if let Some(frozen) = chart.memo.defaults.get() {
        return Ok(frozen.thaw());
    }
    let Some(text) = &chart.values_text else {
        return Ok(new_table());
    };
    let parsed = parse_with_context(
        text,
        &format!("{}/values.yaml", chart.name()),
        "cannot load values.yaml".to_string(),
    )?;
    // Charts built in memory (not by the loader) are decoded here, once.
    if let Ok(frozen) = Frozen::freeze(&parsed) {
        let _ = chart.memo.defaults.set(frozen);
    }
    Ok(parsed)
}

/// Helm's `LoadValues`: the Kubernetes reader splits the text at `---` lines, and each
/// document is read by sigs.k8s.io/yaml into a `map[string]interface{}` (an empty document
/// is an empty table; a list or scalar document is an error). Messages are Helm's.
fn load_yaml_documents(text: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for doc in yaml_load::split_documents(text) {
        let doc = doc.map_err(|e| format!("error reading yaml document: {e}"))?;
        let value = yaml_load::load_document(&doc)
            .map_err(|e| format!("cannot unmarshal yaml document: {}", e.sigs_message()))?;
        out.push(match value {
            Value::Nil => new_table(),
            Value::Map(_) => value,
            other => {
                return Err(format!(
                    "cannot unmarshal yaml document: error unmarshaling JSON: while decoding JSON: \
                     json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                    json_kind(&other)
                ));
            }
        });
    }
    Ok(out)
}

/// The JSON type name `encoding/json` uses in its unmarshal errors.
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::List(_) => "array",
        Value::String(_) => "string",
        Value::Bool(_) => "bool",
        Value::Map(_) => "object",
        Value::Nil => "null",
        _ => "number",
    }
}

/// Parses one YAML document (a manifest head, Chart.yaml) as sigs.k8s.io/yaml does: the
/// first document of the text, through JSON (`Nil` when there is none). Errors read
/// `error converting YAML to JSON: yaml: line 3: …`.
pub fn parse_document(text: &str) -> Result<Value, String> {
    yaml_load::load_document(text).map_err(|e| e.sigs_message())
}

/// Like [`parse_document`], but with go-yaml's typing kept (ints stay `Value::Int`), for
/// decoders of typed Go structs such as Chart.yaml's metadata, where sigs.k8s.io/yaml turns
/// an int into its decimal text and a float into float32 `%g` text (`1.10` → `"1.1"`).
pub fn parse_document_typed(text: &str) -> Result<Value, String> {
    yaml_load::parse_yaml(text)
        .and_then(|node| yaml_load::to_typed_value(&node))
        .map_err(|e| e.sigs_message())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> Value {
        Value::from_json(&serde_json::from_str(text).expect("valid JSON"))
    }

    fn to_json(v: &Value) -> String {
        capstan_encoding::json::marshal(v).expect("encodable")
    }

    /// `merge_files` as a table: the files in order → the merged values.
    #[test]
    fn files_merge_like_helms_repeated_f_flags() {
        let cases: [(&[&str], &str); 8] = [
            (&[], "{}"),
            (&[r#"{"a":1}"#], r#"{"a":1}"#),
            // Later files win; keys of earlier ones stay.
            (&[r#"{"a":1,"b":2}"#, r#"{"a":3}"#], r#"{"a":3,"b":2}"#),
            // Tables merge key by key, at any depth.
            (
                &[r#"{"t":{"x":1,"u":{"p":1}}}"#, r#"{"t":{"y":2,"u":{"q":2}}}"#],
                r#"{"t":{"u":{"p":1,"q":2},"x":1,"y":2}}"#,
            ),
            // A scalar replaces a table and a table a scalar; lists are replaced whole.
            (
                &[r#"{"t":{"x":1},"s":1}"#, r#"{"t":5,"s":{"z":1}}"#],
                r#"{"s":{"z":1},"t":5}"#,
            ),
            (&[r#"{"l":[1,2]}"#, r#"{"l":[3]}"#], r#"{"l":[3]}"#),
            // A null replaces the value and stays (the chart's coalescing deletes the default).
            (
                &[r#"{"a":1,"t":{"x":1}}"#, r#"{"a":null,"t":{"x":null}}"#],
                r#"{"a":null,"t":{"x":null}}"#,
            ),
            // Three files: the last one wins over both.
            (&[r#"{"a":1}"#, r#"{"a":2}"#, r#"{"a":3}"#], r#"{"a":3}"#),
        ];
        for (files, want) in cases {
            let values: Vec<Value> = files.iter().map(|f| json(f)).collect();
            assert_eq!(to_json(&merge_files(&values)), want, "{files:?}");
        }
    }

    #[test]
    fn merging_leaves_the_files_alone() {
        let first = json(r#"{"t":{"x":1}}"#);
        let second = json(r#"{"t":{"y":2}}"#);
        merge_files(&[first.clone(), second]);
        assert_eq!(to_json(&first), r#"{"t":{"x":1}}"#);
    }
}
