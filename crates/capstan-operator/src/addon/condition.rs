//! Wait conditions of multi-stage cluster addons (`waitForPreCondition`,
//! `waitForPostCondition` of `clusteraddon.yaml`): a CEL expression over named objects read
//! from the workload cluster, each bound to its `key`.
//!
//! Objects become CEL values as JSON maps: integers are CEL `int`s (so two replica counts
//! compare with `==`), other numbers `double`s, `null` CEL `null`. A condition is met only when
//! every object exists and the expression is `true`. Reading a field an object does not have is
//! an error in CEL (`has()` tests for it); on a live cluster that usually means the field is not
//! set *yet* (`status.readyReplicas` is omitted while zero), so [`evaluate`] answers `NotMet`
//! for it instead of failing the stage. Expressions that do not compile, that name no object
//! of the condition, or that give something other than a bool are errors.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use capstan_apply::discovery::{Discovery, DiscoveryError};
use cel::common::value::Val;
use cel::objects::{Key, Map};
use cel::{Context, ExecutionError, Program, Value};

use capstan_stack::addon_config::{ConditionObject, WaitCondition};

/// Whether a wait condition holds on a workload cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Met,
    /// Why not, for the status: which objects are missing, or that the expression is false.
    NotMet(String),
}

/// A wait condition that cannot be decided: a wrong expression or a failed read.
#[derive(Debug, thiserror::Error)]
pub enum ConditionError {
    #[error("condition `{expression}` does not compile: {message}")]
    Syntax { expression: String, message: String },
    #[error("condition `{expression}` names `{name}`, which is none of its objects ({known})")]
    UnknownName {
        expression: String,
        name: String,
        known: String,
    },
    #[error("condition `{expression}` reads field `{field}`, which is not set (test it with has())")]
    MissingField { expression: String, field: String },
    #[error("condition `{expression}` gives {value}, not a bool")]
    NotBool { expression: String, value: String },
    #[error("condition `{expression}` fails: {message}")]
    Evaluation { expression: String, message: String },
    #[error("object `{key}` ({what}) is namespaced but the condition gives no namespace")]
    NoNamespace { key: String, what: String },
    #[error("reading object `{key}` ({what}): {source}")]
    Read {
        key: String,
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("object `{key}` ({what}) as JSON: {source}")]
    Json {
        key: String,
        what: String,
        #[source]
        source: serde_json::Error,
    },
}

/// Reads the condition's objects from the workload cluster behind `discovery` and evaluates its
/// expression over them. The expression is compiled first, so a broken one fails without
/// reading anything.
pub async fn evaluate(discovery: &Discovery, condition: &WaitCondition) -> Result<Verdict, ConditionError> {
    let expression = condition.conditions.as_str();
    let program = compile(expression)?;
    let mut objects = BTreeMap::new();
    let mut missing = Vec::new();
    for object in &condition.objects {
        match read(discovery, object).await? {
            Read::Found(json) => {
                objects.insert(object.key.clone(), json);
            }
            Read::Missing(why) => missing.push(why),
        }
    }
    if !missing.is_empty() {
        return Ok(Verdict::NotMet(missing.join("; ")));
    }
    match run(&program, expression, &objects) {
        Ok(true) => Ok(Verdict::Met),
        Ok(false) => Ok(Verdict::NotMet(format!("`{expression}` is false"))),
        Err(ConditionError::MissingField { field, .. }) => Ok(Verdict::NotMet(format!(
            "`{expression}` reads field `{field}`, which is not set"
        ))),
        Err(e) => Err(e),
    }
}

/// The pure part: evaluates `condition` over already-read objects (key → JSON object).
#[cfg(test)]
pub fn evaluate_on(
    condition: &str,
    objects: &BTreeMap<String, serde_json::Value>,
) -> Result<bool, ConditionError> {
    run(&compile(condition)?, condition, objects)
}

/// Whether `expression` compiles: what can be checked before any object is read (the
/// rollout webhook checks `health.checks` with it).
pub fn check_syntax(expression: &str) -> Result<(), ConditionError> {
    compile(expression).map(drop)
}

fn compile(expression: &str) -> Result<Program, ConditionError> {
    Program::compile(expression).map_err(|e| ConditionError::Syntax {
        expression: expression.to_string(),
        message: e.to_string(),
    })
}

fn run(
    program: &Program,
    expression: &str,
    objects: &BTreeMap<String, serde_json::Value>,
) -> Result<bool, ConditionError> {
    let evaluation = |message: String| ConditionError::Evaluation {
        expression: expression.to_string(),
        message,
    };
    let mut context = Context::default();
    for (key, json) in objects {
        let value = Box::<dyn Val>::try_from(cel_value(json)).map_err(|e| evaluation(e.to_string()))?;
        context.add_variable_as_val(key.clone(), value);
    }
    match program.execute(&context) {
        Ok(Value::Bool(holds)) => Ok(holds),
        Ok(other) => Err(ConditionError::NotBool {
            expression: expression.to_string(),
            value: describe(&other),
        }),
        Err(ExecutionError::NoSuchKey(field)) => Err(ConditionError::MissingField {
            expression: expression.to_string(),
            field: field.to_string(),
        }),
        Err(ExecutionError::UndeclaredReference(name)) => Err(ConditionError::UnknownName {
            expression: expression.to_string(),
            name: name.to_string(),
            known: objects.keys().map(String::as_str).collect::<Vec<_>>().join(", "),
        }),
        Err(e) => Err(evaluation(e.to_string())),
    }
}

/// A result's CEL type and, for a scalar, its value: what the user needs to fix the expression.
fn describe(value: &Value) -> String {
    match value {
        Value::Int(i) => format!("int {i}"),
        Value::UInt(u) => format!("uint {u}u"),
        Value::Float(f) => format!("double {f}"),
        Value::String(s) if s.len() <= 60 => format!("string {s:?}"),
        Value::Null => "null".to_string(),
        Value::List(items) => format!("a list of {}", items.len()),
        Value::Map(map) => format!("a map of {}", map.map.len()),
        other => format!("a {}", other.type_of()),
    }
}

/// JSON as CEL: integers as `int` (`uint` only beyond `i64`), so replica counts compare.
fn cel_value(json: &serde_json::Value) -> Value {
    use serde_json::Value as Json;
    match json {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::Int(i),
            (None, Some(u)) => Value::UInt(u),
            (None, None) => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => Value::String(Arc::new(s.clone())),
        Json::Array(items) => Value::List(Arc::new(items.iter().map(cel_value).collect())),
        Json::Object(fields) => Value::Map(Map {
            map: Arc::new(
                fields
                    .iter()
                    .map(|(k, v)| (Key::String(Arc::new(k.clone())), cel_value(v)))
                    .collect::<HashMap<_, _>>(),
            ),
        }),
    }
}

enum Read {
    Found(serde_json::Value),
    /// Why the object is not there, for the status.
    Missing(String),
}

/// One object of a condition, or why it is missing: absent, or its kind not served (yet: a
/// previous stage may install the CRD). Other API errors are errors.
async fn read(discovery: &Discovery, object: &ConditionObject) -> Result<Read, ConditionError> {
    let what = describe_object(object);
    let read_error = |source| ConditionError::Read {
        key: object.key.clone(),
        what: what.clone(),
        source,
    };
    let info = match discovery
        .resolve_api_version(&object.api_version, &object.kind)
        .await
    {
        Ok(info) => info,
        Err(DiscoveryError::UnknownKind { served: false, .. }) => {
            return Ok(Read::Missing(format!(
                "{what}: {} is not served",
                object.api_version
            )));
        }
        Err(DiscoveryError::UnknownKind { .. }) => {
            return Ok(Read::Missing(format!(
                "{what}: kind {} of {} is not served",
                object.kind, object.api_version
            )));
        }
        Err(DiscoveryError::Api { source, .. }) => return Err(read_error(source)),
    };
    if info.namespaced && object.namespace.is_none() {
        return Err(ConditionError::NoNamespace {
            key: object.key.clone(),
            what,
        });
    }
    let api = discovery.api(&info, object.namespace.as_deref());
    match api.get_opt(&object.name).await.map_err(read_error)? {
        Some(found) => serde_json::to_value(&found)
            .map(Read::Found)
            .map_err(|source| ConditionError::Json {
                key: object.key.clone(),
                what,
                source,
            }),
        None => Ok(Read::Missing(format!("{what} not found"))),
    }
}

/// `Deployment kube-system/metrics-server (msdeployment)`.
fn describe_object(object: &ConditionObject) -> String {
    let name = match &object.namespace {
        Some(namespace) => format!("{namespace}/{}", object.name),
        None => object.name.clone(),
    };
    format!("{} {name} ({})", object.kind, object.key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployments(ms_replicas: i64, ngnix_replicas: i64) -> BTreeMap<String, serde_json::Value> {
        BTreeMap::from([
            (
                "msdeployment".to_string(),
                json!({"kind": "Deployment", "metadata": {"name": "metrics-server", "labels": {"app": "ms"}},
                       "spec": {"replicas": ms_replicas, "paused": false},
                       "status": {"conditions": [{"type": "Available", "status": "True"}]}}),
            ),
            (
                "ngnix".to_string(),
                json!({"kind": "Deployment", "metadata": {"name": "cluster-addon-ngnix"},
                       "spec": {"replicas": ngnix_replicas, "ratio": 0.5}}),
            ),
        ])
    }

    const HIPSTSW: &str = "msdeployment.spec.replicas == ngnix.spec.replicas";

    #[test]
    fn the_hipstsw_condition_compares_replica_counts() {
        assert!(evaluate_on(HIPSTSW, &deployments(1, 1)).expect("evaluates"));
        assert!(!evaluate_on(HIPSTSW, &deployments(1, 3)).expect("evaluates"));
    }

    #[test]
    fn integers_are_cel_ints_and_other_numbers_doubles() {
        let objects = deployments(2, 2);
        assert!(evaluate_on("ngnix.spec.replicas == 2", &objects).expect("int literal"));
        assert!(
            evaluate_on("ngnix.spec.replicas > 1 && ngnix.spec.replicas < 3", &objects).expect("ordering")
        );
        assert!(evaluate_on("ngnix.spec.ratio == 0.5", &objects).expect("double"));
        assert!(evaluate_on("msdeployment.spec.replicas + 1 == 3", &objects).expect("arithmetic"));
    }

    #[test]
    fn strings_lists_maps_and_logic() {
        let objects = deployments(1, 1);
        for holds in [
            "msdeployment.metadata.name == 'metrics-server'",
            "ngnix.metadata.name.startsWith('cluster-addon-')",
            "size(msdeployment.status.conditions) == 1",
            "msdeployment.status.conditions.exists(c, c.type == 'Available' && c.status == 'True')",
            "msdeployment.metadata.labels['app'] == 'ms'",
            "'app' in msdeployment.metadata.labels",
            "!msdeployment.spec.paused || false",
            "has(msdeployment.status) && !has(ngnix.status)",
        ] {
            assert!(evaluate_on(holds, &objects).expect(holds), "{holds}");
        }
    }

    #[test]
    fn a_missing_field_is_an_error_as_cel_says_and_has_guards_it() {
        let objects = deployments(1, 1);
        let err = evaluate_on("ngnix.status.readyReplicas == 1", &objects).expect_err("no status");
        assert!(
            matches!(&err, ConditionError::MissingField { field, .. } if field == "status"),
            "{err}"
        );
        assert!(
            err.to_string().contains("ngnix.status.readyReplicas == 1"),
            "{err}"
        );
        let guarded = "has(ngnix.status) && ngnix.status.readyReplicas == 1";
        assert!(!evaluate_on(guarded, &objects).expect("short-circuits"));
    }

    #[test]
    fn a_result_that_is_not_a_bool_is_an_error_naming_it() {
        let err = evaluate_on("ngnix.spec.replicas", &deployments(1, 4)).expect_err("an int");
        assert!(matches!(err, ConditionError::NotBool { .. }), "{err}");
        let text = err.to_string();
        assert!(
            text.contains("`ngnix.spec.replicas`") && text.contains("gives int 4, not a bool"),
            "{text}"
        );
    }

    #[test]
    fn a_syntax_error_names_the_expression_and_the_position() {
        let err = evaluate_on("ngnix.spec.replicas ==", &deployments(1, 1)).expect_err("incomplete");
        assert!(matches!(err, ConditionError::Syntax { .. }), "{err}");
        let text = err.to_string();
        assert!(
            text.contains("`ngnix.spec.replicas ==`") && text.contains("does not compile"),
            "{text}"
        );
        assert!(text.contains("1:"), "position of the problem: {text}");
    }

    #[test]
    fn an_unknown_name_lists_the_objects() {
        let err = evaluate_on("nginx.spec.replicas == 1", &deployments(1, 1)).expect_err("typo");
        let text = err.to_string();
        assert!(matches!(err, ConditionError::UnknownName { .. }), "{text}");
        assert!(
            text.contains("`nginx`") && text.contains("msdeployment, ngnix"),
            "{text}"
        );
    }

    #[test]
    fn equality_across_types_is_false_and_ordering_across_them_an_error() {
        let objects = deployments(1, 1);
        assert!(!evaluate_on("ngnix.metadata.name == 1", &objects).expect("== of string and int"));
        let err = evaluate_on("ngnix.metadata.name < 1", &objects).expect_err("no < of string and int");
        assert!(matches!(err, ConditionError::Evaluation { .. }), "{err}");
    }
}
