//! Cluster API objects as capstan reads them, in either API version capstan speaks:
//! `cluster.x-k8s.io/v1beta1` (Cluster API up to v1.10, served deprecated from v1.11 to
//! v1.15) and `cluster.x-k8s.io/v1beta2` (the storage version since v1.11, the only one from
//! v1.16).
//!
//! - [`model`] — the fields capstan needs of a Cluster, a ClusterClass and a Cluster's
//!   workers (MachineDeployments, MachinePools), typed, read from either version's JSON: the class and its namespace, the Kubernetes version, the
//!   control plane and infrastructure references, the initialization flags, the conditions.
//! - [`convert`] — a v1beta2 Cluster in the v1beta1 shape values templates see (what Cluster
//!   API's own conversion hands a v1beta1 reader), a pure function.
//! - [`served`] — which version to speak, from what the API server serves; the apiVersion of
//!   a referenced provider object from its CRD's contract labels.
//! - [`json`] — objects read from YAML files as JSON, and JSON as template data.
//! - [`schema`] — the fields of an object a CRD's schema does not know (strict reading).
//! - [`to_v1beta2`] — a stack's v1beta1 ClusterClass, kubeadm and docker templates in
//!   v1beta2, what capstan applies where v1beta2 is served; a pure function.
//!
//! Knows nothing of the Kubernetes API client: callers bring the objects and the discovery
//! result.

pub mod convert;
pub mod json;
pub mod model;
pub mod schema;
pub mod served;
pub mod to_v1beta2;

pub use model::{
    ClassRef, ClusterClassFields, ClusterFields, Condition, ContractRef, StatusVersion, TemplateRef,
    WORKER_KINDS, WorkersFields,
};
pub use served::ServedVersions;

/// The API group of Cluster API's core types.
pub const GROUP: &str = "cluster.x-k8s.io";

/// A version of Cluster API's core API that capstan speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CapiVersion {
    V1Beta1,
    V1Beta2,
}

impl CapiVersion {
    /// `v1beta1` or `v1beta2`.
    pub fn as_str(self) -> &'static str {
        match self {
            CapiVersion::V1Beta1 => "v1beta1",
            CapiVersion::V1Beta2 => "v1beta2",
        }
    }

    /// `cluster.x-k8s.io/v1beta1` or `cluster.x-k8s.io/v1beta2`.
    pub fn api_version(self) -> String {
        format!("{GROUP}/{}", self.as_str())
    }

    /// The version of `apiVersion` when it is one of Cluster API's core group capstan speaks.
    pub fn of_api_version(api_version: &str) -> Option<CapiVersion> {
        match api_version.strip_prefix(GROUP)?.strip_prefix('/')? {
            "v1beta1" => Some(CapiVersion::V1Beta1),
            "v1beta2" => Some(CapiVersion::V1Beta2),
            _ => None,
        }
    }
}

impl std::fmt::Display for CapiVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An object that is not what capstan expected, or a field it needs that it cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CapiError {
    /// The object is of another kind (or group).
    #[error("expected {expected}, found {found}")]
    WrongKind { expected: String, found: String },
    /// A Cluster API object of a version capstan does not speak.
    #[error(
        "{kind} of apiVersion {api_version} is not supported: capstan reads cluster.x-k8s.io/v1beta1 and cluster.x-k8s.io/v1beta2"
    )]
    UnsupportedVersion { kind: String, api_version: String },
    /// A field capstan needs has the wrong type, or a required one is missing.
    #[error("field {field}: {problem}")]
    Field { field: String, problem: String },
    /// A v1beta2 reference whose apiVersion could not be found (no CRD contract label, no
    /// object of that kind given).
    #[error("field {field}: cannot tell the apiVersion of {group} {kind}: {reason}")]
    UnknownApiVersion {
        field: String,
        group: String,
        kind: String,
        reason: String,
    },
}

/// The group of `apiVersion` (`""` for the core group's `v1`).
pub fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}
