//! go-yaml v2 (YAML 1.1) decoding, and the JSON round trip Helm applies to values files,
//! `fromYaml`, Chart.yaml and manifest heads (`sigs.k8s.io/yaml` on top of go-yaml v2).
//!
//! Pipeline: [`scanner`] (characters → tokens, libyaml's simple-key rules and error texts) →
//! [`parser`] (tokens → node graph of the first document) → [`decode`] (YAML 1.1 resolution,
//! aliases, `<<` merges → [`YamlNode`] with Go types) → [`to_json_value`] (the JSON round
//! trip: every number a `float64`, keys strings, `.inf`/`.nan` rejected).
//!
//! Typing through the JSON round trip loses information on purpose, as Helm does:
//! `appVersion: 1.10` in Chart.yaml is the float 1.1, which sigs.k8s.io/yaml turns into the
//! string `"1.1"` for a string field (see [`YamlNode::go_string`]); in values it is `1.1`.

mod decode;
mod deep;
mod error;
mod format;
mod node;
mod parser;
mod resolve;
mod scanner;

use std::collections::BTreeMap;

pub use error::{Mark, SyntaxError, YamlError};
pub use node::YamlNode;

use capstan_go::value::Value;
use deep::grow;
use error::Stage;

/// go-yaml v2's `Unmarshal` into `interface{}`: the first document of `text` with Go types
/// (`Null` when there is no document).
pub fn parse_yaml(text: &str) -> Result<YamlNode, YamlError> {
    parse_yaml_with(&mut Scratch::default(), text)
}

/// The whole-document buffers of a parse (the text as characters, its tokens, its nodes). A caller
/// that parses many documents in a row keeps one, so each buffer is allocated once, at the
/// largest size needed, instead of once per document: for the multi-megabyte documents of a
/// CRD chart, fresh buffers each time more than doubled the peak memory of `capstan render`
/// (the allocator keeps freed memory for a while).
#[derive(Default)]
pub struct Scratch {
    chars: Vec<char>,
    tokens: Vec<scanner::Token>,
    nodes: Vec<parser::Node>,
}

impl Scratch {
    /// Buffers for documents of up to `len` bytes, allocated once: a caller that knows its
    /// largest document (a stream's) keeps them from being replaced on the way.
    pub fn for_documents_up_to(len: usize) -> Scratch {
        let mut scratch = Scratch::default();
        scratch.make_room(len);
        scratch
    }

    fn make_room(&mut self, len: usize) {
        make_room(&mut self.chars, len);
        make_room(&mut self.tokens, len / 4);
        make_room(&mut self.nodes, len / 8);
    }
}

/// [`parse_yaml`] with buffers kept in `scratch`.
pub fn parse_yaml_with(scratch: &mut Scratch, text: &str) -> Result<YamlNode, YamlError> {
    // Room for the characters and for the tokens and nodes of a typical document up front: a
    // buffer grown by doubling leaves its smaller predecessors with the allocator (which keeps
    // freed memory for a while), while capacity that is never written is never backed by memory.
    scratch.make_room(text.len());
    scratch.chars.extend(text.chars());
    check_characters(&scratch.chars)?;
    scanner::tokenize_into(&scratch.chars, &mut scratch.tokens);
    let parsed = parser::parse_first_document(&scratch.tokens, std::mem::take(&mut scratch.nodes));
    scratch.tokens.clear();
    let doc = parsed?;
    let node = decode::decode(&doc);
    scratch.nodes = doc.into_nodes();
    node
}

/// Empties `buffer` with room for `len` items. A buffer too small is replaced, not grown: growing
/// would copy its old (stale) contents, writing to as much fresh memory as it had.
fn make_room<T>(buffer: &mut Vec<T>, len: usize) {
    buffer.clear();
    if buffer.capacity() < len {
        *buffer = Vec::with_capacity(len);
    }
}

/// `sigs.k8s.io/yaml.Unmarshal` into `interface{}`: the first document, through JSON.
pub fn load_document(text: &str) -> Result<Value, YamlError> {
    to_json_value(&parse_yaml(text)?)
}

/// [`load_document`], with buffers kept in `scratch`, for a caller that reads only some
/// top-level fields of a mapping (a manifest's head: `apiVersion`, `kind`, `metadata`): the
/// other fields are checked as the full JSON round trip would check them, but not built, which keeps a multi-megabyte
/// CRD document from being held twice (as decoded YAML and as values). Any document the
/// round trip would refuse, or that is not a mapping, takes the full path, so results and
/// errors are those of [`load_document`].
pub fn load_document_fields_with(
    scratch: &mut Scratch,
    text: &str,
    fields: &[&str],
) -> Result<Value, YamlError> {
    let node = parse_yaml_with(scratch, text)?;
    match &node {
        YamlNode::Map(entries) if converts_cleanly(&node, 1) => {
            let mut map = BTreeMap::new();
            for (key, value) in entries {
                let key = json_key(key, value)?;
                if fields.contains(&key.as_str()) {
                    // A later key with the same JSON text replaces an earlier one, as in `convert`.
                    map.insert(key, convert(value)?);
                }
            }
            Ok(Value::map(map))
        }
        _ => to_json_value(&node),
    }
}

/// Whether [`to_json_value`] accepts `node` (at nesting `depth`): every map key converts,
/// no float is infinite or NaN, no container is nested deeper than `encoding/json` reads.
fn converts_cleanly(node: &YamlNode, depth: usize) -> bool {
    grow(|| match node {
        YamlNode::Float(f) => f.is_finite(),
        YamlNode::Seq(items) => {
            depth <= MAX_JSON_DEPTH && items.iter().all(|i| converts_cleanly(i, depth + 1))
        }
        YamlNode::Map(entries) => {
            depth <= MAX_JSON_DEPTH
                && entries.iter().all(|(k, v)| {
                    matches!(
                        k,
                        YamlNode::Str(_) | YamlNode::Int(_) | YamlNode::Bool(_) | YamlNode::Float(_)
                    ) && converts_cleanly(v, depth + 1)
                })
        }
        _ => true,
    })
}

/// `encoding/json` decodes at most this many nested arrays/objects.
const MAX_JSON_DEPTH: usize = 10000;

/// Helm's `LoadValues` reading: the text split into documents by the Kubernetes YAML reader
/// (`---` lines), each document loaded as by [`load_document`] (`Nil` for an empty one).
/// Documents are read in turn, so the first failure (loading or splitting) is reported.
pub fn load_documents(text: &str) -> Result<Vec<Value>, YamlError> {
    split_documents(text)
        .into_iter()
        .map(|doc| doc.and_then(|d| load_document(&d)))
        .collect()
}

/// The Kubernetes `YAMLReader` split, document by document: a line starting with `---` ends
/// a non-empty document (and is dropped); at the start of a document it is kept as the
/// document's first line. Only spaces or a `#` comment may follow the dashes: anything else
/// is an error, reported where the reader meets it (after the documents before it). Lines
/// are re-joined with `\n` (a `\r\n` ending becomes `\n`).
pub fn split_documents(text: &str) -> Vec<Result<String, YamlError>> {
    let mut docs = Vec::new();
    let mut buffer = String::new();
    let mut lines: Vec<&str> = text.split('\n').collect();
    // A final newline does not start another line.
    if lines.last() == Some(&"") {
        lines.pop();
    }
    for line in lines {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if let Some(rest) = line.strip_prefix("---") {
            let trimmed = rest.trim_matches(is_go_space);
            if !trimmed.is_empty() && !trimmed.starts_with('#') {
                docs.push(Err(YamlError::Separator(trimmed.to_string())));
                return docs;
            }
            if !buffer.is_empty() {
                docs.push(Ok(std::mem::take(&mut buffer)));
                continue;
            }
        }
        buffer.push_str(line);
        buffer.push('\n');
    }
    if !buffer.is_empty() {
        docs.push(Ok(buffer));
    }
    docs
}

/// Go's `unicode.IsSpace` (what `strings.TrimSpace` trims).
fn is_go_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\x0b' | '\x0c' | '\r' | ' ' | '\u{85}' | '\u{a0}'
    ) || (c != '\u{feff}' && c.is_whitespace())
}

/// libyaml's reader rejects control characters anywhere in the input.
fn check_characters(chars: &[char]) -> Result<(), YamlError> {
    let allowed = |c: char| {
        matches!(c, '\t' | '\n' | '\r' | '\u{85}')
            || ('\u{20}'..='\u{7e}').contains(&c)
            || ('\u{a0}'..='\u{d7ff}').contains(&c)
            || ('\u{e000}'..='\u{fffd}').contains(&c)
            || c >= '\u{10000}'
    };
    match chars.iter().position(|c| !allowed(*c)) {
        None => Ok(()),
        Some(index) => Err(YamlError::Syntax(SyntaxError {
            stage: Stage::Reader,
            context: "",
            context_mark: Mark::default(),
            problem: "control characters are not allowed",
            problem_mark: Mark {
                index,
                ..Mark::default()
            },
        })),
    }
}

/// The JSON round trip sigs.k8s.io/yaml applies for an `interface{}` target: keys become
/// strings, every number a `float64`, and non-finite floats are rejected (in the order
/// `encoding/json` would meet them).
pub fn to_json_value(node: &YamlNode) -> Result<Value, YamlError> {
    let value = convert(node)?;
    if let Some(bad) = first_non_finite(&value) {
        return Err(YamlError::Json(format!(
            "json: unsupported value: {}",
            format::go_float_g(bad, false)
        )));
    }
    if let Some(open) = too_deep(&value, 1) {
        return Err(YamlError::JsonDecode(format!(
            "invalid character '{open}' exceeded max depth"
        )));
    }
    Ok(value)
}

/// The opening character of the first container (in JSON text order) nested deeper than
/// [`MAX_JSON_DEPTH`].
fn too_deep(v: &Value, depth: usize) -> Option<char> {
    let open = match v {
        Value::List(_) => '[',
        Value::Map(_) => '{',
        _ => return None,
    };
    if depth > MAX_JSON_DEPTH {
        return Some(open);
    }
    grow(|| match v {
        Value::List(l) => l.items.iter().find_map(|i| too_deep(i, depth + 1)),
        Value::Map(m) => m.entries.borrow().values().find_map(|i| too_deep(i, depth + 1)),
        _ => None,
    })
}

/// The decoded document as a value with go-yaml's typing kept: ints stay `Value::Int` (a
/// `uint64` beyond `int64` becomes its decimal text, which is what a string field gets),
/// floats stay floats (non-finite ones too),
/// and keys are converted to strings as sigs.k8s.io/yaml does. For decoders of typed Go
/// structs (Chart.yaml metadata), which turn scalars into strings with
/// [`YamlNode::go_string`]'s rules.
pub fn to_typed_value(node: &YamlNode) -> Result<Value, YamlError> {
    convert_with(node, true)
}

fn convert(node: &YamlNode) -> Result<Value, YamlError> {
    convert_with(node, false)
}

fn convert_with(node: &YamlNode, keep_ints: bool) -> Result<Value, YamlError> {
    grow(|| {
        Ok(match node {
            YamlNode::Null => Value::Nil,
            YamlNode::Bool(b) => Value::Bool(*b),
            YamlNode::Int(i) if keep_ints => Value::Int(*i),
            YamlNode::Int(i) => Value::Float(*i as f64),
            YamlNode::Uint(u) if keep_ints => Value::from(u.to_string()),
            YamlNode::Uint(u) => Value::Float(*u as f64),
            YamlNode::Float(f) => Value::Float(*f),
            YamlNode::Str(s) => Value::from(s.as_str()),
            YamlNode::Seq(items) => Value::list(
                items
                    .iter()
                    .map(|i| convert_with(i, keep_ints))
                    .collect::<Result<_, _>>()?,
            ),
            YamlNode::Map(entries) => {
                let mut map = BTreeMap::new();
                for (k, v) in entries {
                    map.insert(json_key(k, v)?, convert_with(v, keep_ints)?);
                }
                Value::map(map)
            }
        })
    })
}

/// sigs.k8s.io/yaml's map-key conversion (float keys print with float32 precision).
fn json_key(key: &YamlNode, value: &YamlNode) -> Result<String, YamlError> {
    match key {
        YamlNode::Str(s) => Ok(s.clone()),
        YamlNode::Int(i) => Ok(i.to_string()),
        YamlNode::Bool(b) => Ok(b.to_string()),
        YamlNode::Float(f) => Ok(match format::go_float_g(*f, true).as_str() {
            "+Inf" => ".inf".to_string(),
            "-Inf" => "-.inf".to_string(),
            "NaN" => ".nan".to_string(),
            s => s.to_string(),
        }),
        other => {
            let type_name = match other {
                YamlNode::Null => "%!s(<nil>)",
                o => o.go_type(),
            };
            Err(YamlError::Json(format!(
                "unsupported map key of type: {type_name}, key: {}, value: {}",
                other.go_syntax(),
                value.go_syntax()
            )))
        }
    }
}

fn first_non_finite(v: &Value) -> Option<f64> {
    grow(|| match v {
        Value::Float(f) if !f.is_finite() => Some(*f),
        Value::List(l) => l.items.iter().find_map(first_non_finite),
        Value::Map(m) => m.entries.borrow().values().find_map(first_non_finite),
        _ => None,
    })
}

#[cfg(test)]
mod tests;
