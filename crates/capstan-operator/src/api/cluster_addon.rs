//! `ClusterAddon`: the addons (CNI, CSI, cloud controller, …) of one workload cluster, as
//! applied from its cluster stack release. One per Cluster that uses a stack's ClusterClass.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use capstan_stack::addon_config::{Action as StageAction, Hook};

use super::conditions::Condition;
use super::recorded::{Recorded, StatusText};
use super::resource::{self, Resource};

/// The ClusterAddon of Cluster `cluster`.
pub fn addon_name(cluster: &str) -> String {
    format!("cluster-addon-{cluster}")
}

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
    category = "capstan",
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
    /// Every addon object applied to the workload cluster — of every stage so far, each with
    /// its stage — with the outcome of its last apply; at most 1,000 entries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<Resource>,
    /// How many applied objects `resources` leaves out (past its 1,000 entries) (capstan).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub resources_omitted: i64,
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
    #[schemars(with = "Option<String>")]
    pub stages_for: Option<Recorded<StagesFor>>,
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

impl ClusterAddonStatus {
    /// The fields the Runtime SDK hooks own (`upgradeHook*`, see `crate::hooks`); the
    /// ClusterAddon controller never writes them.
    pub const HOOK_FIELDS: &'static [&'static str] =
        &["upgradeHookSince", "upgradeHookTarget", "upgradeHookReleased"];
}

/// One stage of a multi-stage release (`clusteraddon.yaml`) in the current hook.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StageStatus {
    /// Name of the stage's chart.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// `apply` or `delete`.
    #[serde(default, skip_serializing_if = "Recorded::is_unset")]
    #[schemars(with = "String")]
    pub action: Recorded<StageAction>,
    /// `Pending`, `waitingForPreCondition`, `applyingOrDeleting`, `waitingForPostCondition` or
    /// `done`.
    #[serde(default, skip_serializing_if = "Recorded::is_unset")]
    #[schemars(with = "String")]
    pub phase: Recorded<StagePhase>,
    /// How many objects of the stage `resources` leaves out (capstan).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub resources_omitted: i64,
}

/// Where one stage is, as `status.stages[].phase` records it (in the order a stage moves).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StagePhase {
    Pending,
    WaitingForPreCondition,
    ApplyingOrDeleting,
    WaitingForPostCondition,
    Done,
}

impl StagePhase {
    pub const ALL: [StagePhase; 5] = [
        StagePhase::Pending,
        StagePhase::WaitingForPreCondition,
        StagePhase::ApplyingOrDeleting,
        StagePhase::WaitingForPostCondition,
        StagePhase::Done,
    ];

    /// The text stored in `status.stages[].phase` (CSO's).
    pub fn as_str(self) -> &'static str {
        match self {
            StagePhase::Pending => "Pending",
            StagePhase::WaitingForPreCondition => "waitingForPreCondition",
            StagePhase::ApplyingOrDeleting => "applyingOrDeleting",
            StagePhase::WaitingForPostCondition => "waitingForPostCondition",
            StagePhase::Done => "done",
        }
    }
}

impl StatusText for StagePhase {
    fn text(&self) -> String {
        self.as_str().to_string()
    }

    fn from_text(text: &str) -> Option<StagePhase> {
        StagePhase::ALL.into_iter().find(|p| p.as_str() == text)
    }
}

impl StatusText for StageAction {
    fn text(&self) -> String {
        self.as_str().to_string()
    }

    fn from_text(text: &str) -> Option<StageAction> {
        [StageAction::Apply, StageAction::Delete]
            .into_iter()
            .find(|a| a.as_str() == text)
    }
}

/// Which hook's stages `status.stages` holds, and for which class: `status.stagesFor`,
/// stored as `"<hook> <class>"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagesFor {
    pub hook: Hook,
    pub class: String,
}

impl StatusText for StagesFor {
    fn text(&self) -> String {
        format!("{} {}", self.hook, self.class)
    }

    fn from_text(text: &str) -> Option<StagesFor> {
        let (hook, class) = text.split_once(' ')?;
        Some(StagesFor {
            hook: Hook::parse(hook)?,
            class: class.to_string(),
        })
    }
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

impl ClusterAddonStatus {
    /// Records the per-object outcome of an apply: of the one chart (`stage` `None`: the list
    /// is replaced), or of one stage, whose entries replace its earlier ones while the other
    /// stages' stay. At most [`resource::MAX_LISTED`] entries; the rest are counted.
    pub fn record_resources(&mut self, stage: Option<&str>, mut fresh: Vec<Resource>) {
        let cap = resource::MAX_LISTED;
        let Some(stage) = stage else {
            let omitted = fresh.len().saturating_sub(cap);
            fresh.truncate(cap);
            self.resources = fresh;
            self.resources_omitted = count(omitted);
            return;
        };
        let omitted = count(resource::record_stage(&mut self.resources, stage, fresh, cap));
        let unrecorded = match self.stages.iter_mut().find(|s| s.name == stage) {
            Some(recorded) => {
                recorded.resources_omitted = omitted;
                0
            }
            // Not one of the recorded stages (never expected): counted for this write only.
            None => omitted,
        };
        self.resources_omitted = self
            .stages
            .iter()
            .map(|s| s.resources_omitted)
            .fold(unrecorded, i64::saturating_add);
    }
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(n: usize) -> Vec<Resource> {
        (0..n)
            .map(|i| Resource {
                version: "v1".into(),
                kind: "ConfigMap".into(),
                name: format!("cm-{i}"),
                status: Resource::SYNCED.into(),
                ..Resource::default()
            })
            .collect()
    }

    fn stage(name: &str) -> StageStatus {
        StageStatus {
            name: name.into(),
            action: Recorded::Known(StageAction::Apply),
            phase: Recorded::Known(StagePhase::Pending),
            resources_omitted: 0,
        }
    }

    #[test]
    fn every_stage_is_listed_up_to_the_cap_and_the_rest_counted() {
        let mut status = ClusterAddonStatus {
            stages: vec![stage("cni"), stage("csi")],
            ..ClusterAddonStatus::default()
        };
        status.record_resources(Some("cni"), entries(600));
        status.record_resources(Some("csi"), entries(700));
        assert_eq!(status.resources.len(), resource::MAX_LISTED);
        assert_eq!(status.resources.iter().filter(|r| r.stage == "cni").count(), 600);
        assert_eq!(status.resources_omitted, 300);
        assert_eq!(status.stages[1].resources_omitted, 300);
        // cni shrinks: csi's entries stay, the count is csi's alone.
        status.record_resources(Some("cni"), entries(100));
        assert_eq!(status.resources.len(), 500);
        assert_eq!(status.resources_omitted, 300);
        status.record_resources(Some("csi"), entries(700));
        assert_eq!((status.resources.len(), status.resources_omitted), (800, 0));
        // The one chart: replaced, cut at the cap.
        status.record_resources(None, entries(1_234));
        assert_eq!((status.resources.len(), status.resources_omitted), (1_000, 234));
        assert!(status.resources.iter().all(|r| r.stage.is_empty()));
    }
}
