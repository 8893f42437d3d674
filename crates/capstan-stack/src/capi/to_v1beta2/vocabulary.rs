//! The kinds converted, and what a conversion gives back: the object, what it dropped, or
//! why a field is refused.

use serde_json::Value;

/// The kinds converted, by API group.
pub const CONVERTED_KINDS: [(&str, &str); 6] = [
    ("cluster.x-k8s.io", "ClusterClass"),
    ("controlplane.cluster.x-k8s.io", "KubeadmControlPlaneTemplate"),
    ("bootstrap.cluster.x-k8s.io", "KubeadmConfigTemplate"),
    ("infrastructure.cluster.x-k8s.io", "DockerClusterTemplate"),
    ("infrastructure.cluster.x-k8s.io", "DockerMachineTemplate"),
    ("infrastructure.cluster.x-k8s.io", "DockerMachinePoolTemplate"),
];

/// Whether `api_version` + `kind` is a `v1beta1` object of a kind converted here.
pub fn is_converted(api_version: &str, kind: &str) -> bool {
    api_version
        .strip_suffix("/v1beta1")
        .is_some_and(|group| CONVERTED_KINDS.contains(&(group, kind)))
}

/// `api_version` for `kind` after conversion: `v1beta2` for a converted kind, else as given.
pub fn converted_api_version(api_version: &str, kind: &str) -> String {
    match api_version.strip_suffix("/v1beta1") {
        Some(group) if CONVERTED_KINDS.contains(&(group, kind)) => format!("{group}/v1beta2"),
        _ => api_version.to_string(),
    }
}

/// A converted object and what Cluster API's conversion drops from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    pub object: Value,
    pub dropped: Vec<Dropped>,
}

/// A `v1beta1` field `v1beta2` no longer has, dropped as Cluster API's own conversion drops
/// it (it takes the value from the Cluster, or the field had no effect).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// Its dotted path in the `v1beta1` object.
    pub field: String,
    pub why: &'static str,
}

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} dropped: {}", self.field, self.why)
    }
}

/// A `v1beta1` object that cannot be converted without losing something.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{object}: field {field}: {refusal}")]
pub struct ConversionError {
    /// `Kind name`.
    pub object: String,
    /// The dotted path of the field (in the `v1beta1` object; for [`Refusal::Unknown`], in the
    /// converted one, the same path where the conversion passes a field through).
    pub field: String,
    pub refusal: Refusal,
}

/// Why a field is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Neither the conversion nor the `v1beta2` schema knows the field: the API server would
    /// prune it.
    #[error("not a field of {kind} v1beta2 (the API server would prune it)")]
    Unknown { kind: String },
    /// The field's value is not of the type `v1beta1` declares.
    #[error("{0}")]
    Invalid(String),
    /// The value cannot be said in `v1beta2`.
    #[error("no v1beta2 equivalent: {0}")]
    NoEquivalent(String),
}
