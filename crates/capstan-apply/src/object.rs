//! Desired objects from a YAML/JSON multi-document stream, read like `kubectl apply -f`:
//! documents split by `---` lines, YAML 1.1 typing of go-yaml v2 (what sigs.k8s.io/yaml gives
//! kubectl), empty documents skipped, `kind: List` (or any `…List` with `items`) expanded.
//! A document that is not an object, or lacks `apiVersion`, `kind` or `metadata.name`, is an
//! error naming the source and the document's index.

use std::fmt;

use serde_json::{Map, Value};

use capstan_encoding::yaml_load::{self, YamlNode};

use super::status::ObjectKey;

/// Where a desired object came from: a file (or `-`) and its document's 1-based index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub source: String,
    pub document: usize,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (document {})", self.source, self.document)
    }
}

/// One object to apply, as written: `data` is the whole JSON object.
#[derive(Debug, Clone, PartialEq)]
pub struct DesiredObject {
    pub origin: Origin,
    pub group: String,
    pub version: String,
    pub kind: String,
    pub name: String,
    /// `metadata.namespace` as written (the applier fills in or strips it by scope).
    pub namespace: Option<String>,
    pub data: Value,
}

impl DesiredObject {
    /// Builds a desired object from a JSON object, checking the fields the applier needs.
    pub fn from_value(data: Value, origin: Origin) -> Result<DesiredObject, ParseError> {
        let err = |message: String| ParseError {
            origin: origin.clone(),
            message,
        };
        let Value::Object(map) = &data else {
            return Err(err(format!("not an object but {}", json_type(&data))));
        };
        let text = |v: Option<&Value>, what: &str| -> Result<String, ParseError> {
            match v {
                Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
                Some(Value::String(_)) | None | Some(Value::Null) => Err(err(format!("missing {what}"))),
                Some(other) => Err(err(format!("{what} is {}, not a string", json_type(other)))),
            }
        };
        let api_version = text(map.get("apiVersion"), "apiVersion")?;
        let kind = text(map.get("kind"), "kind")?;
        let metadata = map.get("metadata");
        if let Some(m) = metadata
            && !m.is_object()
        {
            return Err(err(format!(
                "{kind}: metadata is {}, not an object",
                json_type(m)
            )));
        }
        let name = text(metadata.and_then(|m| m.get("name")), "metadata.name")
            .map_err(|e| err(format!("{kind}: {}", e.message)))?;
        let namespace = match metadata.and_then(|m| m.get("namespace")) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.is_empty() => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                return Err(err(format!(
                    "{kind}/{name}: metadata.namespace is {}, not a string",
                    json_type(other)
                )));
            }
        };
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) if !g.is_empty() && !v.is_empty() && !v.contains('/') => {
                (g.to_string(), v.to_string())
            }
            None => (String::new(), api_version.clone()),
            _ => {
                return Err(err(format!(
                    "{kind}/{name}: malformed apiVersion {api_version:?}"
                )));
            }
        };
        Ok(DesiredObject {
            origin,
            group,
            version,
            kind,
            name,
            namespace,
            data,
        })
    }

    /// The object's key once its namespace is settled (`namespace` is the effective one).
    pub fn key_in(&self, namespace: Option<&str>) -> ObjectKey {
        ObjectKey {
            group: self.group.clone(),
            version: self.version.clone(),
            kind: self.kind.clone(),
            namespace: namespace.map(str::to_string),
            name: self.name.clone(),
        }
    }
}

/// A document that cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: {message}")]
pub struct ParseError {
    pub origin: Origin,
    pub message: String,
}

/// Parses a multi-document YAML (or JSON) stream. `source` names it in errors.
pub fn parse_stream(text: &str, source: &str) -> Result<Vec<DesiredObject>, ParseError> {
    let docs = yaml_load::split_documents(text);
    // Documents are independent: long streams are decoded on all cores, in chunks; the
    // first error in document order wins, as in a sequential read.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = docs.len().div_ceil(threads).max(PARALLEL_MIN_DOCUMENTS);
    let parts: Vec<Result<Vec<DesiredObject>, ParseError>> = if docs.len() > chunk {
        std::thread::scope(|scope| {
            let handles: Vec<_> = docs
                .chunks(chunk)
                .enumerate()
                .map(|(n, part)| scope.spawn(move || parse_documents(part, n * chunk, source)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    } else {
        vec![parse_documents(&docs, 0, source)]
    };
    let mut out = Vec::new();
    for part in parts {
        out.extend(part?);
    }
    Ok(out)
}

/// Below this many documents a stream is decoded on one thread.
const PARALLEL_MIN_DOCUMENTS: usize = 64;

/// Decodes `docs`, the first of which is document `first + 1` of `source`.
fn parse_documents(
    docs: &[Result<String, yaml_load::YamlError>],
    first: usize,
    source: &str,
) -> Result<Vec<DesiredObject>, ParseError> {
    let mut out = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        let origin = Origin {
            source: source.to_string(),
            document: first + i + 1,
        };
        let err = |message: String| ParseError {
            origin: origin.clone(),
            message,
        };
        let doc = doc.as_ref().map_err(|e| err(e.to_string()))?;
        let node = yaml_load::parse_yaml(doc).map_err(|e| err(located(&e)))?;
        let value = to_json(&node).map_err(err)?;
        push_value(value, &origin, &mut out)?;
    }
    Ok(out)
}

/// Adds one decoded document: nothing for an empty one, the items of a list, else the object.
fn push_value(value: Value, origin: &Origin, out: &mut Vec<DesiredObject>) -> Result<(), ParseError> {
    match value {
        Value::Null => Ok(()),
        Value::Object(ref map) if is_list(map) => {
            let Some(Value::Array(items)) = map.get("items") else {
                return Ok(());
            };
            for item in items {
                out.push(DesiredObject::from_value(item.clone(), origin.clone())?);
            }
            Ok(())
        }
        // A JSON array of objects (`capstan render -o json`) is a list too.
        Value::Array(items) => {
            for item in items {
                out.push(DesiredObject::from_value(item, origin.clone())?);
            }
            Ok(())
        }
        other => {
            out.push(DesiredObject::from_value(other, origin.clone())?);
            Ok(())
        }
    }
}

fn is_list(map: &Map<String, Value>) -> bool {
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or_default();
    let api_version = map.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    kind.ends_with("List") && api_version == "v1" && map.get("items").is_some_and(Value::is_array)
}

fn located(e: &yaml_load::YamlError) -> String {
    match (e.line(), e.column()) {
        (Some(l), Some(c)) => format!("{e} (line {l}, column {c} of the document)"),
        _ => e.to_string(),
    }
}

/// go-yaml v2's typed tree as JSON, keeping integers integers (kubectl's YAML → JSON step).
fn to_json(node: &YamlNode) -> Result<Value, String> {
    Ok(match node {
        YamlNode::Null => Value::Null,
        YamlNode::Bool(b) => Value::Bool(*b),
        YamlNode::Int(i) => Value::from(*i),
        YamlNode::Uint(u) => Value::from(*u),
        YamlNode::Float(f) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .ok_or_else(|| format!("unsupported value: {f} (JSON has no infinities or NaN)"))?,
        YamlNode::Str(s) => Value::String(s.clone()),
        YamlNode::Seq(items) => Value::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        YamlNode::Map(entries) => {
            let mut map = Map::new();
            for (k, v) in entries {
                let key = match k {
                    YamlNode::Str(s) => s.clone(),
                    other => other
                        .go_string()
                        .ok_or_else(|| format!("unsupported map key {}", other.go_syntax()))?,
                };
                map.insert(key, to_json(v)?);
            }
            Value::Object(map)
        }
    })
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_document_stream_with_empty_documents_and_lists() {
        let text = "---\n# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  on: yes\n  num: 1\n---\n\
            apiVersion: v1\nkind: List\nitems:\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: d, namespace: x}\n";
        let objs = parse_stream(text, "in.yaml").expect("parses");
        assert_eq!(objs.len(), 2);
        assert_eq!(objs[0].kind, "ConfigMap");
        assert_eq!(objs[0].group, "");
        assert_eq!(objs[0].origin.document, 2);
        // YAML 1.1 typing like kubectl's: `on`/`yes` are booleans, integers stay integers.
        assert_eq!(objs[0].data["data"], serde_json::json!({"true": true, "num": 1}));
        assert_eq!((objs[1].group.as_str(), objs[1].version.as_str()), ("apps", "v1"));
        assert_eq!(objs[1].namespace.as_deref(), Some("x"));
    }

    #[test]
    fn long_streams_keep_order_and_report_the_first_error() {
        let doc = |i: usize| format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n");
        let text: Vec<String> = (0..500).map(doc).collect();
        let objs = parse_stream(&text.join("---\n"), "big.yaml").expect("parses");
        let names: Vec<String> = objs.iter().map(|o| o.name.clone()).collect();
        assert_eq!(names, (0..500).map(|i| format!("cm-{i}")).collect::<Vec<_>>());
        assert_eq!(objs[499].origin.document, 500);
        let mut bad = text.clone();
        bad[450] = "kind: X\n".into();
        bad[120] = "apiVersion: v1\n".into();
        let err = parse_stream(&bad.join("---\n"), "big.yaml").expect_err("bad documents");
        assert_eq!(err.to_string(), "big.yaml (document 121): missing kind");
    }

    #[test]
    fn json_documents_parse() {
        let objs = parse_stream(
            r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}"#,
            "-",
        )
        .expect("parses");
        assert_eq!(objs[0].name, "s");
    }

    #[test]
    fn errors_name_source_and_document() {
        let cases = [
            ("- a\n- b\n", "not an object but a string"),
            ("apiVersion: v1\nmetadata: {name: x}\n", "missing kind"),
            ("kind: ConfigMap\nmetadata: {name: x}\n", "missing apiVersion"),
            (
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
                "ConfigMap: missing metadata.name",
            ),
            (
                "apiVersion: v1\nkind: ConfigMap\n",
                "ConfigMap: missing metadata.name",
            ),
            (
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [1]}\n",
                "metadata.name is a list",
            ),
            ("a: [\n", "yaml: line"),
            ("plain words\n", "not an object but a string"),
        ];
        for (doc, want) in cases {
            let text = format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: ok}}\n---\n{doc}");
            let err = parse_stream(&text, "dir/file.yaml").expect_err(doc);
            let msg = err.to_string();
            assert!(msg.starts_with("dir/file.yaml (document 2): "), "{msg}");
            assert!(msg.contains(want), "{doc:?}: {msg}");
        }
    }
}
