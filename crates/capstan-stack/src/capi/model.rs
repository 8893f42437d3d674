//! The fields capstan needs of a Cluster and a ClusterClass, typed, from either version.
//!
//! | field | v1beta1 | v1beta2 |
//! |---|---|---|
//! | class | `spec.topology.class` | `spec.topology.classRef.name` |
//! | class namespace | `spec.topology.classNamespace` | `spec.topology.classRef.namespace` |
//! | control plane, infrastructure | `spec.controlPlaneRef` `{apiVersion, kind, name, namespace}` | `{apiGroup, kind, name}` |
//! | initialized / provisioned | `status.controlPlaneReady` / `infrastructureReady` | `status.initialization.{controlPlaneInitialized, infrastructureProvisioned}` |
//! | conditions (`metav1.Condition`) | `status.v1beta2.conditions` | `status.conditions` |
//! | v1beta1 conditions | `status.conditions` | `status.deprecated.v1beta1.conditions` |
//! | control plane versions | `status.v1beta2.controlPlane.versions` | `status.controlPlane.versions` |
//! | ClusterClass templates | `spec.{infrastructure,controlPlane}.ref` | `….templateRef` |
//! | MachineDeployment/Pool version, running versions | `spec.template.spec.version`, `status.versions` | the same |
//!
//! A field of the wrong type is an error naming it; a missing one is `None` (or `false`).

use serde_json::Value;

use super::{CapiError, CapiVersion, GROUP, group_of};

/// The ClusterClass a Cluster's topology names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassRef {
    pub name: String,
    /// As written; `None` means the Cluster's own namespace.
    pub namespace: Option<String>,
}

/// A Cluster's `controlPlaneRef` or `infrastructureRef`, in either version's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContractRef {
    /// `controlplane.cluster.x-k8s.io`; v1beta1: the group of `apiVersion`.
    pub api_group: String,
    /// v1beta1 only: the version is in the reference; v1beta2 leaves it to the provider
    /// CRD's contract labels ([`super::served::api_version_from_contract`]).
    pub api_version: Option<String>,
    pub kind: String,
    pub name: String,
}

impl ContractRef {
    /// Whether `object` (JSON) is of the kind and group this reference names.
    pub fn matches_kind_of(&self, object: &Value) -> bool {
        let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
        kind == self.kind && group_of(api_version) == self.api_group
    }
}

/// A ClusterClass's reference to a template (`apiVersion` is kept in both versions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateRef {
    pub api_version: String,
    pub kind: String,
    pub name: String,
}

/// A condition of either flavour (v1beta1's has `severity`, `metav1.Condition` has
/// `observedGeneration`; capstan reads neither).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Condition {
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    pub reason: Option<String>,
    pub message: Option<String>,
}

impl Condition {
    pub fn is_true(&self) -> bool {
        self.status == "True"
    }
}

/// The replicas of one Kubernetes version (`status.controlPlane.versions`, v1.14).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusVersion {
    pub version: String,
    pub replicas: Option<i64>,
}

/// What capstan reads of a Cluster, whichever version it came in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterFields {
    pub version: CapiVersion,
    pub name: String,
    /// `metadata.namespace` (empty when the file has none).
    pub namespace: String,
    /// `spec.topology`'s class; `None` without a topology or class.
    pub class: Option<ClassRef>,
    /// `spec.topology.version`.
    pub kubernetes_version: Option<String>,
    pub control_plane_ref: Option<ContractRef>,
    pub infrastructure_ref: Option<ContractRef>,
    /// v1beta1 `status.controlPlaneReady`, v1beta2 `status.initialization.controlPlaneInitialized`.
    pub control_plane_initialized: bool,
    /// v1beta1 `status.infrastructureReady`, v1beta2 `status.initialization.infrastructureProvisioned`.
    pub infrastructure_provisioned: bool,
    /// The `metav1.Condition`s (`Available`, `TopologyReconciled`, `RollingOut`, …).
    pub conditions: Vec<Condition>,
    /// The v1beta1 conditions (`Ready`, `ControlPlaneReady`, …).
    pub v1beta1_conditions: Vec<Condition>,
    /// `status.controlPlane.versions` (v1beta1: under `status.v1beta2`); empty before v1.14.
    pub control_plane_versions: Vec<StatusVersion>,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
}

impl ClusterFields {
    /// Reads a Cluster; refuses another kind, another version and fields of the wrong type.
    pub fn from_object(object: &Value) -> Result<ClusterFields, CapiError> {
        let version = expect_kind(object, "Cluster")?;
        let read = Reader { root: object };
        let name = read
            .string("metadata.name")?
            .filter(|n| !n.is_empty())
            .ok_or_else(|| field_error("metadata.name", "is missing"))?;
        let namespace = read.string("metadata.namespace")?.unwrap_or_default();
        let deleting = read.present("metadata.deletionTimestamp");
        let kubernetes_version = read.string("spec.topology.version")?.filter(|v| !v.is_empty());
        let paths = ClusterPaths::of(version);
        let reference = |path: &str| match version {
            CapiVersion::V1Beta1 => read.v1beta1_ref(path),
            CapiVersion::V1Beta2 => read.v1beta2_ref(path),
        };
        Ok(ClusterFields {
            version,
            name,
            namespace,
            class: read
                .string(paths.class)?
                .filter(|c| !c.is_empty())
                .map(|name| -> Result<ClassRef, CapiError> {
                    Ok(ClassRef {
                        name,
                        namespace: read.string(paths.class_namespace)?.filter(|n| !n.is_empty()),
                    })
                })
                .transpose()?,
            kubernetes_version,
            control_plane_ref: reference("spec.controlPlaneRef")?,
            infrastructure_ref: reference("spec.infrastructureRef")?,
            control_plane_initialized: read.bool(paths.control_plane_initialized)?.unwrap_or(false),
            infrastructure_provisioned: read.bool(paths.infrastructure_provisioned)?.unwrap_or(false),
            conditions: read.conditions(paths.conditions)?,
            v1beta1_conditions: read.conditions(paths.v1beta1_conditions)?,
            control_plane_versions: read.versions(paths.control_plane_versions)?,
            deleting,
        })
    }

    /// The namespace of the class: the one named, else the Cluster's.
    pub fn class_namespace(&self) -> Option<&str> {
        let class = self.class.as_ref()?;
        Some(class.namespace.as_deref().unwrap_or(&self.namespace))
    }

    /// The `metav1.Condition` of `type_`, when present.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }
}

/// What capstan reads of a ClusterClass, whichever version it came in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterClassFields {
    pub version: CapiVersion,
    pub name: String,
    pub namespace: String,
    /// v1beta1 `spec.infrastructure.ref`, v1beta2 `spec.infrastructure.templateRef`.
    pub infrastructure: Option<TemplateRef>,
    /// v1beta1 `spec.controlPlane.ref`, v1beta2 `spec.controlPlane.templateRef`.
    pub control_plane: Option<TemplateRef>,
    /// `spec.controlPlane.machineInfrastructure.ref` / `.templateRef`.
    pub control_plane_machine_infrastructure: Option<TemplateRef>,
    /// The `metav1.Condition`s (`VariablesReady`, `RefVersionsUpToDate`, …).
    pub conditions: Vec<Condition>,
}

impl ClusterClassFields {
    pub fn from_object(object: &Value) -> Result<ClusterClassFields, CapiError> {
        let version = expect_kind(object, "ClusterClass")?;
        let read = Reader { root: object };
        let name = read
            .string("metadata.name")?
            .filter(|n| !n.is_empty())
            .ok_or_else(|| field_error("metadata.name", "is missing"))?;
        let namespace = read.string("metadata.namespace")?.unwrap_or_default();
        let (reference, conditions) = match version {
            CapiVersion::V1Beta1 => ("ref", "status.v1beta2.conditions"),
            CapiVersion::V1Beta2 => ("templateRef", "status.conditions"),
        };
        Ok(ClusterClassFields {
            version,
            name,
            namespace,
            infrastructure: read.template_ref(&format!("spec.infrastructure.{reference}"))?,
            control_plane: read.template_ref(&format!("spec.controlPlane.{reference}"))?,
            control_plane_machine_infrastructure: read
                .template_ref(&format!("spec.controlPlane.machineInfrastructure.{reference}"))?,
            conditions: read.conditions(conditions)?,
        })
    }
}

/// The kinds of a Cluster's workers, whose Kubernetes versions a step's version skew reads.
pub const WORKER_KINDS: [&str; 2] = ["MachineDeployment", "MachinePool"];

/// What capstan reads of a MachineDeployment or MachinePool, whichever version it came in
/// (the paths are the same in both).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkersFields {
    pub version: CapiVersion,
    /// `MachineDeployment` or `MachinePool`.
    pub kind: String,
    pub name: String,
    /// `spec.template.spec.version`: what its machines are to run (`None`: the topology's).
    pub kubernetes_version: Option<String>,
    /// `status.versions`: what its machines run now, with how many (Cluster API v1.14, in
    /// both versions; empty before).
    pub running: Vec<StatusVersion>,
}

impl WorkersFields {
    /// Reads a MachineDeployment or MachinePool; refuses another kind, another version and
    /// fields of the wrong type.
    pub fn from_object(object: &Value) -> Result<WorkersFields, CapiError> {
        let found = object.get("kind").and_then(Value::as_str).unwrap_or("");
        let kind = WORKER_KINDS
            .into_iter()
            .find(|k| *k == found)
            .unwrap_or("MachineDeployment");
        let version = expect_kind(object, kind)?;
        let read = Reader { root: object };
        let name = read
            .string("metadata.name")?
            .filter(|n| !n.is_empty())
            .ok_or_else(|| field_error("metadata.name", "is missing"))?;
        Ok(WorkersFields {
            version,
            kind: kind.to_string(),
            name,
            kubernetes_version: read
                .string("spec.template.spec.version")?
                .filter(|v| !v.is_empty()),
            running: read.versions("status.versions")?,
        })
    }
}

/// The version of a Cluster API core object of `kind`, or why it is not one.
pub fn expect_kind(object: &Value, kind: &str) -> Result<CapiVersion, CapiError> {
    let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let found_kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    if found_kind != kind || group_of(api_version) != GROUP {
        let found = match (api_version, found_kind) {
            ("", "") => "an object without apiVersion and kind".to_string(),
            (v, "") => format!("an object of apiVersion {v} without kind"),
            ("", k) => format!("a {k} without apiVersion"),
            (v, k) => format!("a {k} ({v})"),
        };
        return Err(CapiError::WrongKind {
            expected: format!("a Cluster API {kind} ({GROUP})"),
            found,
        });
    }
    CapiVersion::of_api_version(api_version).ok_or_else(|| CapiError::UnsupportedVersion {
        kind: kind.to_string(),
        api_version: api_version.to_string(),
    })
}

fn field_error(field: &str, problem: impl Into<String>) -> CapiError {
    CapiError::Field {
        field: field.to_string(),
        problem: problem.into(),
    }
}

/// What a JSON value is, for errors.
pub(crate) fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Reads typed fields at dotted paths, naming the path in errors.
struct Reader<'a> {
    root: &'a Value,
}

impl<'a> Reader<'a> {
    /// The value at `path`; `None` when a step is missing or null. A step through something
    /// that is not a mapping is an error.
    fn at(&self, path: &str) -> Result<Option<&'a Value>, CapiError> {
        at(self.root, path)
    }

    fn present(&self, path: &str) -> bool {
        matches!(self.at(path), Ok(Some(_)))
    }

    fn string(&self, path: &str) -> Result<Option<String>, CapiError> {
        string_at(self.root, path)
    }

    fn bool(&self, path: &str) -> Result<Option<bool>, CapiError> {
        match self.at(path)? {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(field_error(
                path,
                format!("expected a boolean, found {}", describe(other)),
            )),
        }
    }

    fn list(&self, path: &str) -> Result<&'a [Value], CapiError> {
        match self.at(path)? {
            None => Ok(&[]),
            Some(Value::Array(items)) => Ok(items),
            Some(other) => Err(field_error(
                path,
                format!("expected a list, found {}", describe(other)),
            )),
        }
    }

    fn conditions(&self, path: &str) -> Result<Vec<Condition>, CapiError> {
        self.list(path)?
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let at = format!("{path}[{i}]");
                let required = |key: &str| {
                    string_at(item, key)
                        .map_err(|e| prefix(&at, e))?
                        .ok_or_else(|| field_error(&format!("{at}.{key}"), "is missing"))
                };
                Ok(Condition {
                    type_: required("type")?,
                    status: required("status")?,
                    reason: string_at(item, "reason").map_err(|e| prefix(&at, e))?,
                    message: string_at(item, "message").map_err(|e| prefix(&at, e))?,
                })
            })
            .collect()
    }

    fn versions(&self, path: &str) -> Result<Vec<StatusVersion>, CapiError> {
        self.list(path)?
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let at = format!("{path}[{i}]");
                let version = string_at(item, "version")
                    .map_err(|e| prefix(&at, e))?
                    .ok_or_else(|| field_error(&format!("{at}.version"), "is missing"))?;
                let replicas = match item.get("replicas") {
                    None | Some(Value::Null) => None,
                    Some(Value::Number(n)) if n.is_i64() => n.as_i64(),
                    Some(other) => {
                        return Err(field_error(
                            &format!("{at}.replicas"),
                            format!("expected an integer, found {}", describe(other)),
                        ));
                    }
                };
                Ok(StatusVersion { version, replicas })
            })
            .collect()
    }

    fn v1beta1_ref(&self, path: &str) -> Result<Option<ContractRef>, CapiError> {
        if self.at(path)?.is_none() {
            return Ok(None);
        }
        let api_version = self.string(&format!("{path}.apiVersion"))?.unwrap_or_default();
        let kind = self.string(&format!("{path}.kind"))?.unwrap_or_default();
        let name = self.string(&format!("{path}.name"))?.unwrap_or_default();
        if kind.is_empty() && name.is_empty() {
            return Ok(None);
        }
        Ok(Some(ContractRef {
            api_group: group_of(&api_version).to_string(),
            api_version: Some(api_version).filter(|v| !v.is_empty()),
            kind,
            name,
        }))
    }

    fn v1beta2_ref(&self, path: &str) -> Result<Option<ContractRef>, CapiError> {
        if self.at(path)?.is_none() {
            return Ok(None);
        }
        let api_group = self.string(&format!("{path}.apiGroup"))?.unwrap_or_default();
        let kind = self.string(&format!("{path}.kind"))?.unwrap_or_default();
        let name = self.string(&format!("{path}.name"))?.unwrap_or_default();
        // Cluster API's `IsDefined`: a reference with nothing in it is none.
        if api_group.is_empty() && kind.is_empty() && name.is_empty() {
            return Ok(None);
        }
        Ok(Some(ContractRef {
            api_group,
            api_version: None,
            kind,
            name,
        }))
    }

    fn template_ref(&self, path: &str) -> Result<Option<TemplateRef>, CapiError> {
        if self.at(path)?.is_none() {
            return Ok(None);
        }
        Ok(Some(TemplateRef {
            api_version: self.string(&format!("{path}.apiVersion"))?.unwrap_or_default(),
            kind: self.string(&format!("{path}.kind"))?.unwrap_or_default(),
            name: self.string(&format!("{path}.name"))?.unwrap_or_default(),
        }))
    }
}

/// `field` of an error found inside the item at `at`.
fn prefix(at: &str, error: CapiError) -> CapiError {
    match error {
        CapiError::Field { field, problem } => CapiError::Field {
            field: format!("{at}.{field}"),
            problem,
        },
        other => other,
    }
}

/// The value at dotted `path` below `root`; `None` when a step is missing or null.
pub(crate) fn at<'a>(root: &'a Value, path: &str) -> Result<Option<&'a Value>, CapiError> {
    let mut current = root;
    let mut walked = String::new();
    for key in path.split('.') {
        let next = match current {
            Value::Object(map) => map.get(key),
            other => {
                return Err(field_error(
                    &walked,
                    format!("expected a mapping, found {}", describe(other)),
                ));
            }
        };
        match next {
            None | Some(Value::Null) => return Ok(None),
            Some(value) => current = value,
        }
        if !walked.is_empty() {
            walked.push('.');
        }
        walked.push_str(key);
    }
    Ok(Some(current))
}

fn string_at(root: &Value, path: &str) -> Result<Option<String>, CapiError> {
    match at(root, path)? {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(field_error(
            path,
            format!("expected a string, found {}", describe(other)),
        )),
    }
}

/// Where each field [`ClusterFields`] reads stands in a Cluster of each version (the
/// references differ in shape too: read by `v1beta1_ref`/`v1beta2_ref`).
struct ClusterPaths {
    class: &'static str,
    class_namespace: &'static str,
    control_plane_initialized: &'static str,
    infrastructure_provisioned: &'static str,
    /// `metav1.Condition`s: v1beta1 keeps them under `status.v1beta2`.
    conditions: &'static str,
    /// Cluster API's own condition type: v1beta2 keeps them under `status.deprecated.v1beta1`.
    v1beta1_conditions: &'static str,
    control_plane_versions: &'static str,
}

impl ClusterPaths {
    fn of(version: CapiVersion) -> ClusterPaths {
        match version {
            CapiVersion::V1Beta1 => ClusterPaths {
                class: "spec.topology.class",
                class_namespace: "spec.topology.classNamespace",
                control_plane_initialized: "status.controlPlaneReady",
                infrastructure_provisioned: "status.infrastructureReady",
                conditions: "status.v1beta2.conditions",
                v1beta1_conditions: "status.conditions",
                control_plane_versions: "status.v1beta2.controlPlane.versions",
            },
            CapiVersion::V1Beta2 => ClusterPaths {
                class: "spec.topology.classRef.name",
                class_namespace: "spec.topology.classRef.namespace",
                control_plane_initialized: "status.initialization.controlPlaneInitialized",
                infrastructure_provisioned: "status.initialization.infrastructureProvisioned",
                conditions: "status.conditions",
                v1beta1_conditions: "status.deprecated.v1beta1.conditions",
                control_plane_versions: "status.controlPlane.versions",
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn refusals_name_the_kind_or_field() {
        let table = [
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
                "expected a Cluster API Cluster (cluster.x-k8s.io), found a ConfigMap (v1)",
            ),
            (
                json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine"}),
                "expected a Cluster API Cluster (cluster.x-k8s.io), found a Machine (cluster.x-k8s.io/v1beta1)",
            ),
            (
                json!({"apiVersion": "cluster.x-k8s.io/v1alpha4", "kind": "Cluster"}),
                "Cluster of apiVersion cluster.x-k8s.io/v1alpha4 is not supported: capstan reads cluster.x-k8s.io/v1beta1 and cluster.x-k8s.io/v1beta2",
            ),
            (
                json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {}}),
                "field metadata.name: is missing",
            ),
            (
                json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"name": "c"},
                    "spec": {"topology": {"classRef": {"name": 3}}}}),
                "field spec.topology.classRef.name: expected a string, found a number",
            ),
            (
                json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"name": "c"},
                    "spec": {"topology": "x"}}),
                "field spec.topology: expected a mapping, found a string",
            ),
            (
                json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster", "metadata": {"name": "c"},
                    "status": {"controlPlaneReady": "yes"}}),
                "field status.controlPlaneReady: expected a boolean, found a string",
            ),
            (
                json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"name": "c"},
                    "status": {"conditions": [{"type": "Available"}]}}),
                "field status.conditions[0].status: is missing",
            ),
        ];
        for (object, want) in table {
            assert_eq!(
                ClusterFields::from_object(&object).unwrap_err().to_string(),
                want,
                "{object}"
            );
        }
    }

    #[test]
    fn cluster_class_refs_in_either_version() {
        let v1beta1 = json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "ClusterClass",
            "metadata": {"name": "k", "namespace": "ns"},
            "spec": {"infrastructure": {"ref": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "DockerClusterTemplate", "name": "t"}},
                     "controlPlane": {"ref": {"apiVersion": "controlplane.cluster.x-k8s.io/v1beta1", "kind": "KubeadmControlPlaneTemplate", "name": "cp"},
                                      "machineInfrastructure": {"ref": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "DockerMachineTemplate", "name": "m"}}}},
            "status": {"v1beta2": {"conditions": [{"type": "VariablesReady", "status": "True"}]}}});
        let v1beta2 = json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "ClusterClass",
            "metadata": {"name": "k", "namespace": "ns"},
            "spec": {"infrastructure": {"templateRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "DockerClusterTemplate", "name": "t"}},
                     "controlPlane": {"templateRef": {"apiVersion": "controlplane.cluster.x-k8s.io/v1beta1", "kind": "KubeadmControlPlaneTemplate", "name": "cp"},
                                      "machineInfrastructure": {"templateRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "DockerMachineTemplate", "name": "m"}}}},
            "status": {"conditions": [{"type": "VariablesReady", "status": "True"}]}});
        let old = ClusterClassFields::from_object(&v1beta1).unwrap();
        let new = ClusterClassFields::from_object(&v1beta2).unwrap();
        assert_eq!(old.version, CapiVersion::V1Beta1);
        assert_eq!(
            ClusterClassFields {
                version: CapiVersion::V1Beta1,
                ..new
            },
            old
        );
        assert_eq!(
            old.control_plane_machine_infrastructure.unwrap().kind,
            "DockerMachineTemplate"
        );
        assert!(old.conditions[0].is_true());
    }

    #[test]
    fn workers_in_either_version() {
        let workers = |api_version: &str, kind: &str, spec: Value, status: Value| {
            json!({"apiVersion": api_version, "kind": kind,
                   "metadata": {"name": "md-0", "namespace": "ns"},
                   "spec": {"clusterName": "c", "template": {"spec": spec}}, "status": status})
        };
        let running = |pairs: &[(&str, i64)]| -> Vec<StatusVersion> {
            pairs
                .iter()
                .map(|(version, replicas)| StatusVersion {
                    version: version.to_string(),
                    replicas: Some(*replicas),
                })
                .collect()
        };
        // (object, version, kind, spec version, running)
        let table = [
            // v1.6's v1beta1: no status.versions.
            (
                workers(
                    "cluster.x-k8s.io/v1beta1",
                    "MachineDeployment",
                    json!({"version": "v1.27.3"}),
                    json!({"replicas": 3}),
                ),
                CapiVersion::V1Beta1,
                "MachineDeployment",
                Some("v1.27.3"),
                running(&[]),
            ),
            // v1.14, either version: status.versions.
            (
                workers(
                    "cluster.x-k8s.io/v1beta2",
                    "MachineDeployment",
                    json!({"version": "v1.27.3", "bootstrap": {"configRef": {"apiGroup": "bootstrap.cluster.x-k8s.io",
                               "kind": "KubeadmConfigTemplate", "name": "b"}}}),
                    json!({"versions": [{"version": "v1.26.9", "replicas": 2}, {"version": "v1.27.3", "replicas": 1}]}),
                ),
                CapiVersion::V1Beta2,
                "MachineDeployment",
                Some("v1.27.3"),
                running(&[("v1.26.9", 2), ("v1.27.3", 1)]),
            ),
            (
                workers(
                    "cluster.x-k8s.io/v1beta1",
                    "MachinePool",
                    json!({}),
                    json!({"versions": [{"version": "v1.25.0", "replicas": 4}]}),
                ),
                CapiVersion::V1Beta1,
                "MachinePool",
                None,
                running(&[("v1.25.0", 4)]),
            ),
            // An empty version is none (the topology's).
            (
                workers(
                    "cluster.x-k8s.io/v1beta2",
                    "MachinePool",
                    json!({"version": ""}),
                    json!({}),
                ),
                CapiVersion::V1Beta2,
                "MachinePool",
                None,
                running(&[]),
            ),
        ];
        for (object, version, kind, kubernetes_version, running) in table {
            let fields = WorkersFields::from_object(&object).unwrap_or_else(|e| panic!("{object}: {e}"));
            assert_eq!(
                fields,
                WorkersFields {
                    version,
                    kind: kind.into(),
                    name: "md-0".into(),
                    kubernetes_version: kubernetes_version.map(str::to_string),
                    running,
                },
                "{object}"
            );
        }
        let refusals = [
            (
                json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "metadata": {"name": "m"}}),
                "expected a Cluster API MachineDeployment (cluster.x-k8s.io), found a Machine (cluster.x-k8s.io/v1beta2)",
            ),
            (
                workers(
                    "cluster.x-k8s.io/v1beta2",
                    "MachineDeployment",
                    json!({"version": 1.27}),
                    json!({}),
                ),
                "field spec.template.spec.version: expected a string, found a number",
            ),
            (
                workers(
                    "cluster.x-k8s.io/v1beta2",
                    "MachinePool",
                    json!({}),
                    json!({"versions": [{"replicas": 2}]}),
                ),
                "field status.versions[0].version: is missing",
            ),
        ];
        for (object, want) in refusals {
            assert_eq!(
                WorkersFields::from_object(&object).unwrap_err().to_string(),
                want,
                "{object}"
            );
        }
    }
}
