//! `values.schema.json`: validating the coalesced values of a chart and of each of its
//! subcharts, as Helm does before rendering. Pass/fail follows Helm (JSON Schema drafts 4 to
//! 2020-12, chosen by `$schema`); messages follow Helm's wording where it is stable.
//!
//! The lines come in the order Helm's validator finds them (`required` before the
//! properties' errors, those before `additionalProperties`, items by index, `allOf` after the
//! type's keywords, …). Where Helm walks a Go map (the properties of one object, `dependencies`)
//! its order changes between runs; there capstan sorts the lines by location.

use std::sync::Arc;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::Value as Json;

use crate::coalesce::ChartValues;
use capstan_go::value::Value;

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

/// Validates one instance; returns the error lines (empty when valid), as Helm prints them.
fn check(
    validator: &Result<Arc<jsonschema::Validator>, String>,
    instance: &Json,
) -> Result<Vec<String>, String> {
    let validator = validator.as_ref().map_err(String::clone)?;
    let found: Vec<Found> = validator
        .iter_errors(instance)
        .map(|err| Found::new(&err, instance))
        .collect();
    let mut lines = Vec::new();
    for node in tree::report(&found) {
        node.render(0, &mut lines);
    }
    Ok(lines)
}

/// One error of the validator: where in the schema (the evaluation path, through `$ref`s) and
/// in the values it was found, Helm's wording, and for `anyOf`/`oneOf` the errors of each
/// subschema.
#[derive(Debug)]
struct Found {
    path: Vec<String>,
    instance: Vec<String>,
    message: String,
    subschemas: Vec<Vec<Found>>,
}

impl Found {
    fn new(err: &jsonschema::ValidationError<'_>, root: &Json) -> Found {
        let subschemas = match err.kind() {
            ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
                context
                    .iter()
                    .map(|errors| errors.iter().map(|e| Found::new(e, root)).collect())
                    .collect()
            }
            _ => Vec::new(),
        };
        Found {
            path: pointer_tokens(&err.evaluation_path().to_string()),
            instance: pointer_tokens(&err.instance_path().to_string()),
            message: message(err.kind(), instance_at(root, err)),
            subschemas,
        }
    }
}

/// The tokens of a JSON pointer, still escaped (`~0`, `~1`): joined with `/` they are the
/// pointer again.
fn pointer_tokens(pointer: &str) -> Vec<String> {
    pointer.split('/').skip(1).map(str::to_string).collect()
}

/// The errors as the tree Helm's validator (santhosh-tekuri/jsonschema) builds and prints:
/// each schema applied to a value yields its one error, or a "validation failed" group of
/// several; `allOf`, `anyOf` and `oneOf` hold their subschemas' errors, a `$ref` its target's
/// (shown only when more than one); the top-level group is flattened. jsonschema-rs reports
/// a flat list, so the tree is rebuilt from each error's evaluation path.
mod tree {
    use std::collections::BTreeMap;

    use super::Found;

    /// One line of the report and the lines indented under it.
    #[derive(Debug)]
    pub(super) struct Node {
        at: String,
        text: String,
        causes: Vec<Node>,
        kind: Kind,
    }

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Kind {
        /// One keyword's error (`anyOf`/`oneOf` with their subschemas' errors as causes).
        Keyword,
        /// Several errors of one schema applied to one value: "validation failed".
        Group,
        /// A `$ref`'s errors: shown as a group only when there are several.
        Reference,
    }

    impl Node {
        pub(super) fn render(&self, depth: usize, lines: &mut Vec<String>) {
            if self.kind == Kind::Reference && self.causes.len() == 1 {
                return self.causes[0].render(depth, lines);
            }
            lines.push(format!("{}- at '{}': {}", "  ".repeat(depth), self.at, self.text));
            for cause in &self.causes {
                cause.render(depth + 1, lines);
            }
        }

        /// The one error of a schema applied to a value, or the group of its several.
        fn one_of(at: String, mut nodes: Vec<Node>) -> Node {
            if nodes.len() == 1 {
                return nodes.remove(0);
            }
            Node {
                at,
                text: "validation failed".into(),
                causes: nodes,
                kind: Kind::Group,
            }
        }
    }

    /// The report's top-level lines.
    pub(super) fn report(found: &[Found]) -> Vec<Node> {
        let all = found.iter().map(|found| Cursor { found, at: 0 }).collect();
        let mut nodes = scope(all, 0);
        if nodes.len() == 1 && nodes[0].kind == Kind::Group {
            return nodes.remove(0).causes;
        }
        nodes
    }

    /// An error and how far into its evaluation path the tree has descended.
    #[derive(Clone, Copy)]
    struct Cursor<'a> {
        found: &'a Found,
        at: usize,
    }

    impl<'a> Cursor<'a> {
        fn rest(&self) -> &'a [String] {
            &self.found.path[self.at.min(self.found.path.len())..]
        }

        fn advanced(self, by: usize) -> Cursor<'a> {
            Cursor {
                found: self.found,
                at: self.at + by,
            }
        }
    }

    /// Where an error goes within one schema's evaluation.
    enum Step {
        /// A keyword's own error.
        Here,
        /// A subschema applied to a child value (`properties/p`, `items`, …): `len` path
        /// tokens.
        Child { len: usize },
        /// A subschema applied to the same value whose error is one of this schema's
        /// (`then`, `else`, `dependencies/p`).
        Same { len: usize },
        /// The `index`th subschema of `allOf`.
        AllOf { index: usize },
        /// A `$ref` (or `$dynamicRef`, `$recursiveRef`).
        Reference,
    }

    fn step(rest: &[String]) -> Step {
        let keyword = rest.first().map(String::as_str).unwrap_or("");
        let index = rest.get(1).and_then(|s| s.parse::<usize>().ok());
        match keyword {
            "properties" | "patternProperties" if rest.len() > 2 => Step::Child { len: 2 },
            "items" | "prefixItems" if index.is_some() && rest.len() > 2 => Step::Child { len: 2 },
            "additionalProperties"
            | "items"
            | "additionalItems"
            | "unevaluatedProperties"
            | "unevaluatedItems"
            | "contains"
                if rest.len() > 1 =>
            {
                Step::Child { len: 1 }
            }
            "then" | "else" if rest.len() > 1 => Step::Same { len: 1 },
            "dependencies" | "dependentSchemas" if rest.len() > 2 => Step::Same { len: 2 },
            "allOf" => match index {
                Some(index) if rest.len() > 2 => Step::AllOf { index },
                _ => Step::Here,
            },
            "$ref" | "$dynamicRef" | "$recursiveRef" if rest.len() > 1 => Step::Reference,
            _ => Step::Here,
        }
    }

    /// Where a keyword's errors come in a schema's list, as Helm's validator
    /// (santhosh-tekuri/jsonschema v6) checks them: `$ref`; the value's own keywords (`type`,
    /// `enum`, …); the keywords of its type in the validator's order — for an object
    /// `minProperties`, `maxProperties`, `required`, `dependencies`, then each property's
    /// subschemas (`properties`, `patternProperties`, an `additionalProperties` schema), then
    /// `additionalProperties: false`, `propertyNames`, `dependentSchemas`,
    /// `dependentRequired`; for an array the bounds, `uniqueItems`, the items by index,
    /// `contains`; for a string and a number their bounds, then `pattern` / `multipleOf`;
    /// then `not`, `allOf`, `anyOf`, `oneOf`, `if`, `unevaluated*`. `child` says the error is
    /// a subschema's applied to a child value.
    fn rank(keyword: &str, child: bool) -> u8 {
        match (keyword, child) {
            ("$ref" | "$dynamicRef" | "$recursiveRef", _) => 0,
            ("minProperties" | "minItems" | "minLength" | "minimum", _) => 2,
            ("maxProperties" | "maxItems" | "maxLength" | "maximum", _) => 3,
            ("required" | "uniqueItems" | "exclusiveMinimum", _) => 4,
            ("dependencies" | "exclusiveMaximum", _) => 5,
            ("pattern" | "multipleOf", _) => 6,
            (
                "properties"
                | "patternProperties"
                | "additionalProperties"
                | "items"
                | "additionalItems"
                | "prefixItems",
                true,
            ) => 7,
            ("additionalProperties" | "additionalItems" | "items" | "contentEncoding", false) => 8,
            ("propertyNames" | "contains" | "minContains" | "contentMediaType", _) => 9,
            ("dependentSchemas" | "maxContains" | "contentSchema", _) => 10,
            ("dependentRequired", _) => 11,
            ("not", _) => 20,
            ("allOf", _) => 21,
            ("anyOf", _) => 22,
            ("oneOf", _) => 23,
            ("then" | "else", _) => 24,
            ("unevaluatedProperties" | "unevaluatedItems", _) => 25,
            _ => 1,
        }
    }

    /// Whether Helm's order among a rank's errors is that of their locations (array items
    /// by index; a map's walk, which changes between runs, sorted by location here too), not
    /// the order found (`$ref`, the subschemas of `not` … `if`).
    fn sorted_by_location(rank: u8) -> bool {
        (1..20).contains(&rank)
    }

    /// A location's order: its tokens, array indexes by number.
    fn location_key(at: &str) -> Vec<(u8, u64, &str)> {
        at.split('/')
            .skip(1)
            .map(|token| match token.parse::<u64>() {
                Ok(index) => (0, index, token),
                Err(_) => (1, 0, token),
            })
            .collect()
    }

    /// The errors of one schema applied to the value `depth` tokens into the instance path
    /// (every error in `errors` is at or below it).
    fn scope(errors: Vec<Cursor<'_>>, depth: usize) -> Vec<Node> {
        let prefix =
            |found: &Found, depth: usize| pointer(&found.instance[..depth.min(found.instance.len())]);
        let place = errors.first().map(|c| prefix(c.found, depth)).unwrap_or_default();
        let mut ranked: Vec<(u8, Node)> = Vec::new();
        // Keyed by the path tokens taken (and the child value's token).
        let mut children: BTreeMap<(&[String], &str), Vec<Cursor<'_>>> = BTreeMap::new();
        let mut same: BTreeMap<&[String], Vec<Cursor<'_>>> = BTreeMap::new();
        let mut all_of: BTreeMap<usize, Vec<Cursor<'_>>> = BTreeMap::new();
        let mut references: Vec<Cursor<'_>> = Vec::new();
        for cursor in errors {
            let found = cursor.found;
            let rest = cursor.rest();
            match step(rest) {
                Step::Child { len } if found.instance.len() > depth => children
                    .entry((&rest[..len], found.instance[depth].as_str()))
                    .or_default()
                    .push(cursor.advanced(len)),
                Step::Same { len } => same.entry(&rest[..len]).or_default().push(cursor.advanced(len)),
                Step::AllOf { index } => all_of.entry(index).or_default().push(cursor.advanced(2)),
                Step::Reference => references.push(cursor.advanced(1)),
                Step::Here | Step::Child { .. } => ranked.push((
                    rank(rest.first().map(String::as_str).unwrap_or(""), false),
                    Node {
                        at: pointer(&found.instance),
                        text: found.message.clone(),
                        causes: found
                            .subschemas
                            .iter()
                            .map(|errors| subschema(found, errors))
                            .collect(),
                        kind: Kind::Keyword,
                    },
                )),
            }
        }
        for ((taken, _), errors) in children {
            let at = errors
                .first()
                .map(|c| prefix(c.found, depth + 1))
                .unwrap_or_default();
            let keyword = taken.first().map(String::as_str).unwrap_or("");
            ranked.push((rank(keyword, true), Node::one_of(at, scope(errors, depth + 1))));
        }
        for (keyword, errors) in same {
            let node = Node::one_of(place.clone(), scope(errors, depth));
            ranked.push((
                rank(keyword.first().map(String::as_str).unwrap_or(""), false),
                node,
            ));
        }
        if !references.is_empty() {
            let causes = match Node::one_of(place.clone(), scope(references, depth)) {
                group if group.kind == Kind::Group => group.causes,
                one => vec![one],
            };
            let node = Node {
                at: place.clone(),
                text: "validation failed".into(),
                causes,
                kind: Kind::Reference,
            };
            ranked.push((0, node));
        }
        if !all_of.is_empty() {
            // The subschemas' errors in the order of the subschemas.
            let causes = all_of
                .into_values()
                .map(|errors| Node::one_of(place.clone(), scope(errors, depth)))
                .collect();
            let node = Node {
                at: place.clone(),
                text: "'allOf' failed".into(),
                causes,
                kind: Kind::Keyword,
            };
            ranked.push((rank("allOf", false), node));
        }
        // Stable: elsewhere the order found.
        ranked.sort_by(|(ra, a), (rb, b)| {
            ra.cmp(rb).then_with(|| {
                if sorted_by_location(*ra) {
                    (location_key(&a.at), &a.text).cmp(&(location_key(&b.at), &b.text))
                } else {
                    std::cmp::Ordering::Equal
                }
            })
        });
        ranked.into_iter().map(|(_, node)| node).collect()
    }

    /// The errors of one subschema of `anyOf`/`oneOf` (their paths continue the keyword's,
    /// or start afresh at the subschema).
    fn subschema(parent: &Found, errors: &[Found]) -> Node {
        let depth = parent.instance.len();
        let cursors: Vec<Cursor<'_>> = errors
            .iter()
            .map(|found| {
                let continues = found.path.len() > parent.path.len() && found.path.starts_with(&parent.path);
                Cursor {
                    found,
                    at: if continues { parent.path.len() + 1 } else { 0 },
                }
            })
            .collect();
        Node::one_of(pointer(&parent.instance), scope(cursors, depth))
    }

    fn pointer(tokens: &[String]) -> String {
        tokens.iter().map(|t| format!("/{t}")).collect()
    }
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
        K::MultipleOf { multiple_of } => format!("multipleOf: got {got}, want {multiple_of}"),
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
        // Values arrive as float64 (`5.0`); Helm's validator prints a whole number as `5`.
        Json::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0 && f.abs() < 1e15) => {
            format!("{}", n.as_f64().unwrap_or_default())
        }
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
        Value::ByteString(b) => Json::String(capstan_go::value::go_lossy(b).into_owned()),
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
    use crate::Chart;

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
            metadata: crate::Metadata {
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
    fn nested_errors_are_indented_under_their_keyword_like_helm() {
        // Helm 4.2.3's messages for these schemas and values (testdata/checks has more).
        let cases = [
            (
                r#"{"properties":{"a":{"allOf":[{"required":["x"]}]}}}"#,
                serde_json::json!({"a": {}}),
                "- at '/a': 'allOf' failed\n  - at '/a': missing property 'x'\n",
            ),
            (
                r#"{"properties":{"a":{"properties":{"y":{"type":"integer"}},"allOf":[{"required":["x"],"properties":{"y":{"type":"integer"}}}]}}}"#,
                serde_json::json!({"a": {"y": "s"}}),
                "- at '/a/y': got string, want integer\n- at '/a': 'allOf' failed\n  - at '/a': validation failed\n    - at '/a': missing property 'x'\n    - at '/a/y': got string, want integer\n",
            ),
            (
                r#"{"properties":{"a":{"anyOf":[{"type":"integer"},{"type":"boolean"}]}}}"#,
                serde_json::json!({"a": "s"}),
                "- at '/a': 'anyOf' failed\n  - at '/a': got string, want integer\n  - at '/a': got string, want boolean\n",
            ),
            (
                r##"{"definitions":{"p":{"required":["x"]}},"properties":{"a":{"$ref":"#/definitions/p"}}}"##,
                serde_json::json!({"a": {}}),
                "- at '/a': missing property 'x'\n",
            ),
            (
                r#"{"properties":{"a":{"properties":{"b":{"required":["x"],"properties":{"y":{"type":"integer"}}}}}}}"#,
                serde_json::json!({"a": {"b": {"y": "s"}}}),
                "- at '/a/b': missing property 'x'\n- at '/a/b/y': got string, want integer\n",
            ),
        ];
        for (schema, input, want) in cases {
            let chart = chart_with_schema(schema);
            let err = validate(&tree(&chart, vec![]), &values(input)).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "values don't meet the specifications of the schema(s) in the following chart(s):\nt:\n{want}"
                ),
                "{schema}"
            );
        }
    }

    #[test]
    fn lines_come_in_helms_order() {
        // Helm 4.2.3, every run: a property's errors before the object's
        // `additionalProperties`, items by index (testdata/checks has more).
        let closed = r#"{"type":"object","additionalProperties":false,"properties":{"rbac":{"type":"object","additionalProperties":false,"properties":{"enabled":{"type":"boolean"}}}}}"#;
        let err = validate(
            &tree(&chart_with_schema(closed), vec![]),
            &values(serde_json::json!({"extra": 1, "rbac": {"bogus": 1}})),
        )
        .unwrap_err();
        assert!(
            err.to_string().ends_with(
                "- at '/rbac': additional properties 'bogus' not allowed\n\
                 - at '': additional properties 'extra' not allowed\n"
            ),
            "{err}"
        );
        let items = r#"{"items":{"type":"integer"}}"#;
        let list: Vec<serde_json::Value> = (0..11)
            .map(|i| if i == 2 || i == 10 { "x".into() } else { i.into() })
            .collect();
        let err = validate(
            &tree(&chart_with_schema(items), vec![]),
            &values(serde_json::Value::Array(list)),
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .ends_with("- at '/2': got string, want integer\n- at '/10': got string, want integer\n"),
            "{err}"
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
