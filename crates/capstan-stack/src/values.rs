//! Runtime values: the values an addon chart is rendered with, computed from the live objects
//! of the workload cluster.
//!
//! `cluster-addon-values.yaml` (single-chart addons) and each stage's `overwrite.yaml`
//! (multi-stage addons) are Go templates. They are executed with the data
//! `{Cluster, ControlPlane, InfraCluster}` — the objects as plain maps, as the Kubernetes API
//! returns them — using the native engine with sprig's and Helm's functions, never `env` or
//! `expandenv`. A missing field prints as Go's `<no value>`, exactly like the reference
//! operator (which uses Go's default `missingkey` option); it is *not* removed the way Helm
//! removes it from chart output.
//!
//! If the output is a YAML mapping whose key `values` holds a string, that string is the
//! chart's values file; otherwise the whole output is. That text is then read like a Helm
//! `-f` values file.

use std::collections::BTreeMap;
use std::path::Path;

use capstan_chart::values as chart_values;
use capstan_encoding::yaml_load::{YamlNode, parse_yaml};
use capstan_template::{FuncMap, Templates, Value};

use super::capi::json::{json_to_template, yaml_to_json};
use super::capi::{self, CapiError, CapiVersion, ClusterFields, ContractRef};
use super::doc::{DocumentError, describe, read_text};

/// The objects runtime values are computed from. `control_plane` and `infra_cluster` are
/// absent when the Cluster references none (then `.ControlPlane…` prints `<no value>`).
#[derive(Debug, Clone)]
pub struct ClusterObjects {
    pub cluster: Value,
    pub control_plane: Option<Value>,
    pub infra_cluster: Option<Value>,
}

/// Values computed from a values template, ready for the chart.
#[derive(Debug, Clone)]
pub struct ComputedValues {
    /// The values file text the chart gets (what the reference operator pipes to
    /// `helm template -f -`).
    pub text: String,
    /// `text` read as a Helm values file.
    pub values: Value,
}

/// A values template that could not be computed; names the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {problem}")]
pub struct ValuesError {
    /// The template's name (`cluster-addon-values.yaml`, `cni/overwrite.yaml`).
    pub file: String,
    pub problem: String,
}

impl ClusterObjects {
    /// Just a Cluster.
    pub fn new(cluster: Value) -> ClusterObjects {
        ClusterObjects {
            cluster,
            control_plane: None,
            infra_cluster: None,
        }
    }

    /// Reads the Cluster (and, when given, the control plane and infrastructure cluster)
    /// from YAML files, for templates that see the v1beta1 Cluster (every published stack):
    /// [`ClusterObjects::load_for`] with [`CapiVersion::V1Beta1`].
    pub fn load(
        cluster: &Path,
        control_plane: Option<&Path>,
        infra_cluster: Option<&Path>,
    ) -> Result<ClusterObjects, DocumentError> {
        ClusterObjects::load_for(cluster, control_plane, infra_cluster, CapiVersion::V1Beta1)
    }

    /// Reads the objects from YAML files (what `kubectl get -o yaml` prints, of either
    /// Cluster API version) and hands templates the Cluster in `templates`' shape
    /// ([`ClusterObjects::from_json`]). Errors name the file and the field.
    pub fn load_for(
        cluster: &Path,
        control_plane: Option<&Path>,
        infra_cluster: Option<&Path>,
        templates: CapiVersion,
    ) -> Result<ClusterObjects, DocumentError> {
        let read = |p: &Path| read_text(p).and_then(|t| parse_json_object(&t, p));
        let cluster_json = read(cluster)?;
        let control_plane_json = control_plane.map(read).transpose()?;
        let infra_cluster_json = infra_cluster.map(read).transpose()?;
        ClusterObjects::from_json(
            &cluster_json,
            control_plane_json.as_ref(),
            infra_cluster_json.as_ref(),
            templates,
        )
        .map_err(|e| {
            let (file, error) = match e {
                ObjectsError::Cluster(e) => (cluster, e),
                ObjectsError::ControlPlane(e) => (control_plane.unwrap_or(cluster), e),
                ObjectsError::InfraCluster(e) => (infra_cluster.unwrap_or(cluster), e),
            };
            match error {
                CapiError::Field { field, problem } => DocumentError::field(file, &field, problem),
                other => DocumentError::whole(file, other.to_string()),
            }
        })
    }

    /// The objects (JSON, either Cluster API version) as values templates see them:
    /// - the Cluster must be a Cluster API Cluster whose fields capstan reads are readable
    ///   ([`ClusterFields::from_object`]); for `templates` = v1beta1 a v1beta2 Cluster is
    ///   converted as Cluster API's conversion does ([`capi::convert`]), the apiVersion of its
    ///   references taken from the control plane / infrastructure cluster given (the
    ///   version the cluster-stack operator reads them at); a v1beta1 Cluster is refused for
    ///   `templates` = v1beta2 (capstan does not convert upwards);
    /// - the control plane and infrastructure cluster must be of the kind the Cluster
    ///   references; they are handed over as they are, like the reference operator reads
    ///   them at the apiVersion of the reference.
    pub fn from_json(
        cluster: &serde_json::Value,
        control_plane: Option<&serde_json::Value>,
        infra_cluster: Option<&serde_json::Value>,
        templates: CapiVersion,
    ) -> Result<ClusterObjects, ObjectsError> {
        let fields = ClusterFields::from_object(cluster).map_err(ObjectsError::Cluster)?;
        check_referenced(
            "control plane",
            "spec.controlPlaneRef",
            fields.control_plane_ref.as_ref(),
            control_plane,
        )
        .map_err(ObjectsError::ControlPlane)?;
        check_referenced(
            "infrastructure cluster",
            "spec.infrastructureRef",
            fields.infrastructure_ref.as_ref(),
            infra_cluster,
        )
        .map_err(ObjectsError::InfraCluster)?;
        let shaped = match (fields.version, templates) {
            (from, to) if from == to => cluster.clone(),
            (CapiVersion::V1Beta2, CapiVersion::V1Beta1) => {
                let resolve = |reference: &ContractRef| -> Result<String, String> {
                    [control_plane, infra_cluster]
                        .into_iter()
                        .flatten()
                        .find(|object| reference.matches_kind_of(object))
                        .and_then(|object| object.get("apiVersion").and_then(|v| v.as_str()))
                        .map(str::to_string)
                        .ok_or_else(|| {
                            "Cluster API's conversion takes it from the provider's CRD; give the object (--control-plane / --infra-cluster), or the Cluster as v1beta1 (`kubectl get clusters.v1beta1.cluster.x-k8s.io NAME -o yaml`)".to_string()
                        })
                };
                capi::convert::cluster_to_v1beta1(cluster, &resolve).map_err(ObjectsError::Cluster)?
            }
            (from, to) => {
                return Err(ObjectsError::Cluster(CapiError::WrongKind {
                    expected: format!("a {to} Cluster (the stack's values templates are written for {to})"),
                    found: format!("a {from} Cluster"),
                }));
            }
        };
        Ok(ClusterObjects {
            cluster: json_to_template(&shaped),
            control_plane: control_plane.map(json_to_template),
            infra_cluster: infra_cluster.map(json_to_template),
        })
    }

    /// The Cluster's `metadata.namespace`, if set.
    pub fn cluster_namespace(&self) -> Option<String> {
        field_string(&self.cluster, &["metadata", "namespace"])
    }

    /// The Cluster's `metadata.name`, if set.
    pub fn cluster_name(&self) -> Option<String> {
        field_string(&self.cluster, &["metadata", "name"])
    }

    /// The template data `{Cluster, ControlPlane, InfraCluster}` (absent objects left out).
    pub fn template_data(&self) -> Value {
        let mut data = BTreeMap::new();
        data.insert("Cluster".to_string(), self.cluster.clone());
        if let Some(cp) = &self.control_plane {
            data.insert("ControlPlane".to_string(), cp.clone());
        }
        if let Some(ic) = &self.infra_cluster {
            data.insert("InfraCluster".to_string(), ic.clone());
        }
        Value::map(data)
    }
}

fn field_string(v: &Value, path: &[&str]) -> Option<String> {
    let mut cur = v.clone();
    for key in path {
        let Value::Map(m) = &cur else { return None };
        let next = m.entries.borrow().get(*key).cloned()?;
        cur = next;
    }
    match cur {
        Value::String(s) => Some(s.to_string()),
        _ => None,
    }
}

/// Which of the objects given to [`ClusterObjects::from_json`] is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectsError {
    #[error("the Cluster: {0}")]
    Cluster(CapiError),
    #[error("the control plane: {0}")]
    ControlPlane(CapiError),
    #[error("the infrastructure cluster: {0}")]
    InfraCluster(CapiError),
}

/// A control plane or infrastructure cluster must be what the Cluster references.
fn check_referenced(
    what: &str,
    field: &str,
    reference: Option<&ContractRef>,
    object: Option<&serde_json::Value>,
) -> Result<(), CapiError> {
    let Some(object) = object else { return Ok(()) };
    let text = |key: &str| object.get(key).and_then(|v| v.as_str()).unwrap_or("").to_string();
    let found = format!("a {} ({})", text("kind"), text("apiVersion"));
    match reference {
        None => Err(CapiError::WrongKind {
            expected: format!("no {what}: the Cluster names none ({field})"),
            found,
        }),
        Some(reference) if !reference.matches_kind_of(object) => Err(CapiError::WrongKind {
            expected: format!(
                "the {what} the Cluster names in {field}, a {} of {}",
                reference.kind, reference.api_group
            ),
            found,
        }),
        Some(_) => Ok(()),
    }
}

/// Reads one Kubernetes object from YAML as JSON; `file` names it in errors.
pub fn parse_json_object(text: &str, file: &Path) -> Result<serde_json::Value, DocumentError> {
    let node = parse_yaml(text).map_err(|e| DocumentError::whole(file, e.to_string()))?;
    check_object_node(&node, file)?;
    yaml_to_json(&node, "").map_err(|(path, problem)| DocumentError::field(file, &path, problem))
}

fn check_object_node(node: &YamlNode, file: &Path) -> Result<(), DocumentError> {
    match node {
        YamlNode::Map(_) => {}
        YamlNode::Null => return Err(DocumentError::whole(file, "the document is empty")),
        other => {
            return Err(DocumentError::whole(
                file,
                format!(
                    "expected a Kubernetes object (a mapping), found {}",
                    describe(other)
                ),
            ));
        }
    }
    for key in ["apiVersion", "kind"] {
        let present = matches!(node, YamlNode::Map(entries)
            if entries.iter().any(|(k, v)| matches!(k, YamlNode::Str(s) if s == key) && matches!(v, YamlNode::Str(s) if !s.is_empty())));
        if !present {
            return Err(DocumentError::field(
                file,
                key,
                "is missing (expected a Kubernetes object)",
            ));
        }
    }
    Ok(())
}

/// Reads one Kubernetes object from YAML with the typing of the API's unstructured objects:
/// integers are `int64`, other numbers `float64`, keys strings. `file` names it in errors.
pub fn parse_object(text: &str, file: &Path) -> Result<Value, DocumentError> {
    let node = parse_yaml(text).map_err(|e| DocumentError::whole(file, e.to_string()))?;
    check_object_node(&node, file)?;
    unstructured(&node, "").map_err(|(path, problem)| DocumentError::field(file, &path, problem))
}

fn unstructured(node: &YamlNode, path: &str) -> Result<Value, (String, String)> {
    Ok(match node {
        YamlNode::Null => Value::Nil,
        YamlNode::Bool(b) => Value::Bool(*b),
        YamlNode::Int(i) => Value::Int64(*i),
        YamlNode::Uint(u) => match i64::try_from(*u) {
            Ok(i) => Value::Int64(i),
            Err(_) => Value::Float(*u as f64),
        },
        YamlNode::Float(f) if f.is_finite() => Value::Float(*f),
        YamlNode::Float(_) => {
            return Err((
                path.to_string(),
                "infinite or NaN numbers are not valid in an object".into(),
            ));
        }
        YamlNode::Str(s) => Value::from(s.as_str()),
        YamlNode::Seq(items) => Value::list(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| unstructured(item, &format!("{path}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        YamlNode::Map(entries) => {
            let mut map = BTreeMap::new();
            for (k, v) in entries {
                let YamlNode::Str(key) = k else {
                    return Err((
                        path.to_string(),
                        format!("keys must be strings, found {}", describe(k)),
                    ));
                };
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                map.insert(key.clone(), unstructured(v, &child)?);
            }
            Value::map(map)
        }
    })
}

/// Executes the values template `text` (named `file` in errors) with `objects` and returns
/// the chart's values.
pub fn compute_values(
    text: &str,
    file: &str,
    objects: &ClusterObjects,
) -> Result<ComputedValues, ValuesError> {
    let fail = |problem: String| ValuesError {
        file: file.to_string(),
        problem,
    };
    // Sprig and Helm's functions; `FuncMap::helm` has no `env`/`expandenv`.
    let mut templates = Templates::new(FuncMap::helm());
    templates.parse(file, text).map_err(|e| fail(e.to_string()))?;
    let output = templates
        .execute(file, &objects.template_data())
        .map_err(|e| fail(e.to_string()))?;
    let node = parse_yaml(&output)
        .map_err(|e| fail(format!("the rendered template is not valid YAML: {e}\n{output}")))?;
    let text = match &node {
        YamlNode::Map(entries) => entries
            .iter()
            .rev()
            .find(|(k, _)| matches!(k, YamlNode::Str(s) if s == "values"))
            .and_then(|(_, v)| match v {
                YamlNode::Str(s) => Some(s.clone()),
                _ => None,
            })
            .unwrap_or(output),
        _ => output,
    };
    let values =
        chart_values::parse(&text, file).map_err(|e| fail(format!("the computed values: {}", e.msg)))?;
    Ok(ComputedValues { text, values })
}

/// [`compute_values`] for a file on disk.
pub fn compute_values_file(path: &Path, objects: &ClusterObjects) -> Result<ComputedValues, ValuesError> {
    let text = read_text(path).map_err(|e| ValuesError {
        file: path.display().to_string(),
        problem: e.problem,
    })?;
    compute_values(&text, &path.display().to_string(), objects)
}

#[cfg(test)]
mod tests {
    use super::*;
    use capstan_encoding::yaml_emit;

    fn cluster() -> ClusterObjects {
        let text = "apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata:\n  name: c1\n  namespace: ns\nspec:\n  controlPlaneEndpoint:\n    host: 10.0.0.1\n    port: 6443\n  topology:\n    controlPlane:\n      replicas: 3\n";
        ClusterObjects::new(parse_object(text, Path::new("cluster.yaml")).unwrap())
    }

    #[test]
    fn values_key_holds_the_values() {
        let t = "values: |\n  a:\n    host: \"{{ .Cluster.spec.controlPlaneEndpoint.host }}\"\n    port: {{ .Cluster.spec.controlPlaneEndpoint.port }}\n    name: {{ .Cluster.metadata.name | upper }}\n";
        let v = compute_values(t, "cluster-addon-values.yaml", &cluster()).unwrap();
        assert_eq!(v.text, "a:\n  host: \"10.0.0.1\"\n  port: 6443\n  name: C1\n");
        assert_eq!(
            yaml_emit::marshal(&v.values).unwrap(),
            "a:\n  host: 10.0.0.1\n  name: C1\n  port: 6443\n"
        );
    }

    #[test]
    fn without_values_key_the_whole_document_is_used() {
        let t = "replicas: {{ .Cluster.spec.topology.controlPlane.replicas }}\n";
        let v = compute_values(t, "x/overwrite.yaml", &cluster()).unwrap();
        assert_eq!(v.text, "replicas: 3\n");
        // `values` that is not a string: the whole document, as the reference does.
        let t = "values:\n  a: 1\n";
        let v = compute_values(t, "x/overwrite.yaml", &cluster()).unwrap();
        assert_eq!(v.text, t);
    }

    #[test]
    fn missing_fields_print_no_value() {
        let t = "values: |\n  a: \"{{ .Cluster.spec.nothing }}\"\n  b: \"{{ .InfraCluster.spec.x }}\"\n  c: {{ .ControlPlane }}\n";
        let v = compute_values(t, "cluster-addon-values.yaml", &cluster()).unwrap();
        assert_eq!(v.text, "a: \"<no value>\"\nb: \"<no value>\"\nc: <no value>\n");
    }

    #[test]
    fn env_functions_are_absent_and_errors_name_the_file() {
        let err = compute_values("{{ env \"HOME\" }}", "cni/overwrite.yaml", &cluster()).unwrap_err();
        assert!(err.to_string().starts_with("cni/overwrite.yaml: "), "{err}");
        assert!(err.to_string().contains("function \"env\" not defined"), "{err}");
        let err = compute_values("{{ expandenv \"$HOME\" }}", "f", &cluster()).unwrap_err();
        assert!(
            err.to_string().contains("function \"expandenv\" not defined"),
            "{err}"
        );
        let err = compute_values("values: |\n  a: [\n", "f.yaml", &cluster()).unwrap_err();
        assert!(
            err.to_string().starts_with("f.yaml: the computed values: "),
            "{err}"
        );
        let err = compute_values(
            "{{ .Cluster.spec.topology.controlPlane.replicas.x }}",
            "f.yaml",
            &cluster(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("f.yaml"), "{err}");
    }

    #[test]
    fn objects_have_unstructured_typing() {
        let c = cluster();
        let data = c.template_data();
        let mut t = Templates::new(FuncMap::helm());
        t.parse(
            "t",
            "{{ printf \"%T\" .Cluster.spec.controlPlaneEndpoint.port }} {{ kindOf .Cluster.spec }}",
        )
        .unwrap();
        assert_eq!(t.execute("t", &data).unwrap(), "int64 map");
        assert_eq!(c.cluster_namespace().as_deref(), Some("ns"));
        assert_eq!(c.cluster_name().as_deref(), Some("c1"));
        let err = parse_object("kind: Cluster\n", Path::new("c.yaml")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "c.yaml: field apiVersion: is missing (expected a Kubernetes object)"
        );
        let err = parse_object("- 1\n", Path::new("c.yaml")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "c.yaml: expected a Kubernetes object (a mapping), found a list"
        );
    }
}
