//! `ClusterStackRelease`: one release of a cluster stack in a namespace, named after its
//! release tag (`docker-ferrol-1-27-v2`). Its status lists every object applied for it.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::conditions::Condition;
use super::resource::Resource;

/// One release of a cluster stack, named after its release tag.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
// `printcolumn(...)` entries repeat `type_ = "string"`, which clippy takes for duplicates.
#[allow(clippy::duplicated_attributes)]
#[kube(
    group = "clusterstack.x-k8s.io",
    version = "v1alpha1",
    kind = "ClusterStackRelease",
    namespaced,
    status = "ClusterStackReleaseStatus",
    shortname = "cskr",
    category = "capstan",
    derive = "PartialEq",
    doc = "One release of a cluster stack, named after its release tag: its ClusterClass and \
           the objects applied for it.",
    printcolumn(
        name = "K8s Version",
        type_ = "string",
        json_path = ".status.kubernetesVersion"
    ),
    printcolumn(name = "Ready", type_ = "boolean", json_path = ".status.ready"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    printcolumn(
        name = "Last Pass",
        type_ = "date",
        priority = 1,
        json_path = ".status.lastReconciled"
    ),
    printcolumn(
        name = "Reason",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].reason"
    ),
    printcolumn(
        name = "Message",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].message"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStackReleaseSpec {
    /// The provider's `<X>ClusterStackRelease`, when the stack has a provider-specific part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::object_reference_schema")]
    pub provider_ref: Option<ObjectReference>,
}

/// What the operator observed of a release.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStackReleaseStatus {
    /// Every object applied for the release, with the outcome of its last apply.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<Resource>,
    /// Kubernetes version of the release with its patch level, e.g. `v1.27.3`, from the
    /// release's metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_version: Option<String>,
    /// Whether the release is ready to use.
    #[serde(default)]
    pub ready: bool,
    /// Observations (`Downloaded`, `Rendered`, `Applied`, …); `Ready` summarises them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Digest of the release's downloaded files (capstan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_digest: Option<String>,
    /// Hash of the inputs (release digest, namespace, capstan version) of the rendered
    /// manifest last applied in full (capstan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_inputs: Option<String>,
    /// Revision of the stored render last applied (capstan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_revision: Option<i64>,
    /// When the applied objects were last checked for drift (capstan): the drift interval
    /// counts from here, across restarts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::optional_date_time_schema")]
    pub last_reconciled: Option<Time>,
    /// Who signed the release, when its stack has a signature policy (capstan): the
    /// `sha256:<hex>` fingerprint of the public key whose cosign signature verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified_by: Option<String>,
    /// The chart dependencies whose signatures a policy checked (capstan; the stack's
    /// `spec.dependencyPolicy` or the operator's), each with who signed it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<SignedDependency>,
}

/// A chart dependency of a release whose signature was verified.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignedDependency {
    /// The release's chart that depends on it.
    pub chart: String,
    /// The dependency's name.
    pub name: String,
    /// The version resolved.
    pub version: String,
    /// Its repository, as Chart.yaml writes it.
    pub repository: String,
    /// `provenance` (a Helm `.prov`) or `cosign`.
    pub method: String,
    /// The OpenPGP key's fingerprint and user ID, the cosign key's `sha256:` fingerprint, or
    /// a keyless signer's `SUBJECT (issuer ISSUER)`.
    pub signer: String,
}
