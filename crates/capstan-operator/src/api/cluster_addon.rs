//! `ClusterAddon`: the addons (CNI, CSI, cloud controller, …) of one workload cluster, as
//! applied from its cluster stack release. One per Cluster that uses a stack's ClusterClass.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::conditions::Condition;
use super::resource::Resource;

/// The addons of one workload cluster.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
// `printcolumn(...)` entries repeat `type_ = "string"`, which clippy takes for duplicates.
#[allow(clippy::duplicated_attributes)]
#[kube(
    group = "clusterstack.x-k8s.io",
    version = "v1alpha1",
    kind = "ClusterAddon",
    namespaced,
    status = "ClusterAddonStatus",
    shortname = "caddon",
    derive = "PartialEq",
    doc = "The addons of one workload cluster, applied from the cluster stack release its \
           ClusterClass comes from.",
    printcolumn(name = "Cluster", type_ = "string", json_path = ".spec.clusterRef.name"),
    printcolumn(name = "ClusterStack", type_ = "string", json_path = ".spec.clusterStack"),
    printcolumn(name = "Applied", type_ = "string", json_path = ".status.appliedClusterStack"),
    printcolumn(name = "Ready", type_ = "boolean", json_path = ".status.ready"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    printcolumn(name = "Hook", type_ = "string", priority = 1, json_path = ".spec.hook"),
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
pub struct ClusterAddonSpec {
    /// The cluster stack release (`<provider>-<name>-<major>-<minor>-<version>`) whose addons
    /// are applied; follows the Cluster's `spec.topology.class`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_stack: Option<String>,
    /// Version of the addons applied to the workload cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The lifecycle hook being handled (`AfterControlPlaneInitialized`, `BeforeClusterUpgrade`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook: Option<String>,
    /// The Cluster (in the same namespace) whose workload cluster gets the addons.
    #[schemars(schema_with = "super::object_reference_schema")]
    pub cluster_ref: ObjectReference,
}

/// What the operator observed of a cluster's addons.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterAddonStatus {
    /// Every addon object applied to the workload cluster, with the outcome of its last apply.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<Resource>,
    /// The stages of the current hook of a multi-stage release, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageStatus>,
    /// Whether the addons are applied and healthy.
    #[serde(default)]
    pub ready: bool,
    /// Observations; `Ready` summarises them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The release (ClusterClass name) whose addons were last applied in full (capstan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_cluster_stack: Option<String>,
    /// Hash of the inputs (release digest, injected values, capstan version) of the rendered
    /// manifest last applied in full (capstan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_inputs: Option<String>,
    /// Revision of the stored render last applied (capstan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_revision: Option<i64>,
    /// When the applied objects were last checked for drift (capstan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::optional_date_time_schema")]
    pub last_reconciled: Option<Time>,
    /// The hook the `stages` belong to and the release they run for (capstan), e.g.
    /// `BeforeClusterUpgrade docker-ferrol-1-27-v2`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages_for: Option<String>,
    /// When the current `BeforeClusterUpgrade` wait began: the hook's timeout counts from
    /// here (capstan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::optional_date_time_schema")]
    pub upgrade_hook_since: Option<Time>,
    /// Why the last `BeforeClusterUpgrade` wait let the upgrade proceed without the new
    /// release's addons applied (its timeout passed) (capstan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade_hook_released: Option<String>,
    /// The ClusterClass the current `BeforeClusterUpgrade` wait is for: a wait recorded for
    /// another class is stale and starts over (capstan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade_hook_target: Option<String>,
}

/// One stage of a multi-stage release (`clusteraddon.yaml`) in the current hook.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StageStatus {
    /// Name of the stage's chart.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// `apply` or `delete`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub action: String,
    /// `Pending`, `waitingForPreCondition`, `applyingOrDeleting`, `waitingForPostCondition` or
    /// `done`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub phase: String,
}
