//! `ClusterStackRollout` (`capstan.dev/v1alpha1`, capstan's own group): moves the Clusters of
//! a namespace to a release of its ClusterStack in waves, with health gates, approval, pause,
//! halt and rollback. The decisions are in [`crate::rollout`]; this module only holds the
//! types and their defaults.
//!
//! Everything a rollout must remember across operator restarts lives in its status: the target
//! (so a newer release never interrupts a rollout), each Cluster's class and version before its
//! switch (for rollback), and when each wave started, was approved and soaks until.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use super::conditions::Condition;

/// The API group of [`ClusterStackRollout`] (capstan's own, never the cluster-stack-operator's).
pub const ROLLOUT_GROUP: &str = "capstan.dev";
/// `spec.version` that follows the stack's newest ready release.
pub const LATEST: &str = "latest";
/// Annotation that approves a Manual wave: its value names the wave.
pub const APPROVE_ANNOTATION: &str = "capstan.dev/approve";
/// Annotation that resumes a Halted rollout: any value not seen before (e.g. a RFC 3339 time).
pub const RESUME_ANNOTATION: &str = "capstan.dev/resume";
/// Annotation that lets Blocked Clusters go despite their pre-flight: its value is a comma
/// list of `namespace/name`, optionally `@who` each (`tenant-a/prod-1@alice`).
pub const FORCE_ANNOTATION: &str = "capstan.dev/force";
/// `spec.from` that takes every lower minor of the target's stack.
pub const FROM_AUTO: &str = "auto";
/// `health.timeout` when not set.
pub const DEFAULT_HEALTH_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Condition type: the rollout is moving Clusters.
pub const CONDITION_PROGRESSING: &str = "Progressing";
/// Condition type: the rollout stopped after too many failures.
pub const CONDITION_HALTED: &str = "Halted";

/// Moves the Clusters of a ClusterStack to one of its releases, wave by wave.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
// `printcolumn(...)` entries repeat `type_ = "string"`, which clippy takes for duplicates.
#[allow(clippy::duplicated_attributes)]
#[kube(
    group = "capstan.dev",
    version = "v1alpha1",
    kind = "ClusterStackRollout",
    namespaced,
    status = "ClusterStackRolloutStatus",
    shortname = "csro",
    category = "capstan",
    derive = "PartialEq",
    doc = "Moves the Clusters that use a ClusterStack's classes to one of its releases in \
           waves, with health gates, approval, pause, halt and rollback.",
    printcolumn(name = "Stack", type_ = "string", json_path = ".spec.clusterStack"),
    printcolumn(name = "Target", type_ = "string", json_path = ".status.targetRelease"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Wave", type_ = "string", json_path = ".status.currentWave"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp"),
    printcolumn(name = "Message", type_ = "string", json_path = ".status.message")
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStackRolloutSpec {
    /// The ClusterStack (same namespace) whose releases are rolled out, e.g.
    /// `docker-ferrol-1-27`.
    #[schemars(length(min = 1))]
    pub cluster_stack: String,
    /// A release version of the stack (`v3`, `v0-sha.4e0d8f3`, dot or dash form), or `latest`:
    /// its newest ready release, fixed in `status.targetRelease` until the rollout completes.
    #[serde(default = "default_version")]
    pub version: String,
    /// Which Clusters take part (always only Clusters on a class of this stack); omitted =
    /// all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "label_selector_schema")]
    pub cluster_selector: Option<LabelSelector>,
    /// Switch no further Cluster while true.
    #[serde(default)]
    pub paused: bool,
    /// The waves, in order; a Cluster belongs to the first wave whose selector matches it.
    #[schemars(length(min = 1))]
    pub waves: Vec<Wave>,
    /// When a switched Cluster counts as healthy, and how long it may take.
    #[serde(default)]
    pub health: HealthPolicy,
    /// How many failed Clusters are tolerated, and what happens beyond.
    #[serde(default)]
    pub failure_policy: FailurePolicy,
    /// The ClusterStacks (same namespace, same provider and name, lower Kubernetes minors)
    /// whose Clusters are moved to `clusterStack`, one minor at a time: a list of names, or
    /// `auto` for all of them. Omitted: only Clusters of `clusterStack` itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "from_schema")]
    pub from: Option<FromStacks>,
    /// The checks before each switch of a Cluster, and what a blocked Cluster does to the
    /// rollout.
    #[serde(default)]
    pub preflight: PreflightPolicy,
    /// When switches may start (cron + duration + IANA time zone, as Argo CD's sync windows);
    /// open while any is; omitted: always. A wave with its own `windows` uses those.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<MaintenanceWindow>,
}

/// `spec.from`: `auto`, or the names of ClusterStacks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FromStacks {
    /// Every ClusterStack of the namespace with the target's provider and name and a lower
    /// Kubernetes minor.
    Auto,
    Stacks(Vec<String>),
}

impl Serialize for FromStacks {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            FromStacks::Auto => serializer.serialize_str(FROM_AUTO),
            FromStacks::Stacks(names) => names.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for FromStacks {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Word(String),
            List(Vec<String>),
        }
        match Raw::deserialize(deserializer) {
            Ok(Raw::Word(word)) if word == FROM_AUTO => Ok(FromStacks::Auto),
            Ok(Raw::List(names)) => Ok(FromStacks::Stacks(names)),
            Ok(Raw::Word(word)) => Err(serde::de::Error::custom(format!(
                "spec.from: {word:?} is neither \"auto\" nor a list of ClusterStack names"
            ))),
            Err(_) => Err(serde::de::Error::custom(
                "spec.from: neither \"auto\" nor a list of ClusterStack names",
            )),
        }
    }
}

/// A maintenance window: opens whenever `schedule` fires in `timeZone`, for `duration`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceWindow {
    /// A five-field cron schedule (`minute hour day-of-month month day-of-week`), e.g.
    /// `0 22 * * 1-5`.
    #[schemars(length(min = 1))]
    pub schedule: String,
    /// How long the window stays open, a duration like `4h`.
    #[schemars(length(min = 1))]
    pub duration: String,
    /// The IANA time zone `schedule` is read in, e.g. `Europe/Berlin`; default `UTC`.
    #[serde(default = "default_time_zone")]
    pub time_zone: String,
}

fn default_time_zone() -> String {
    "UTC".to_string()
}

/// `spec.preflight`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreflightPolicy {
    /// `Halt` (default): a Blocked Cluster halts the rollout; `Skip`: the rollout goes on
    /// without it. Blocked Clusters are never switched and never count as failures.
    #[serde(default)]
    pub on_blocked: OnBlocked,
    /// CEL conditions over workload-cluster objects (`health.checks`' syntax) that must hold
    /// before a Cluster is switched.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<HealthCheck>,
}

/// What a Blocked Cluster does to the rollout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "PascalCase")]
pub enum OnBlocked {
    #[default]
    Halt,
    Skip,
}

fn default_version() -> String {
    LATEST.to_string()
}

/// One wave of a rollout.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Wave {
    /// Unique within the rollout.
    #[schemars(length(min = 1))]
    pub name: String,
    /// Which Clusters belong to the wave (of those no earlier wave took); omitted = all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "label_selector_schema")]
    pub cluster_selector: Option<LabelSelector>,
    /// How many Clusters of the wave may be switched and not yet healthy at once: a number or
    /// a percentage of the wave's Clusters (`25%`, rounded down, at least 1). Default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "int_or_string_schema")]
    pub max_in_flight: Option<IntOrString>,
    /// How long every Cluster of the wave stays healthy before the next wave starts, a
    /// duration like `10m`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soak: Option<String>,
    /// `Auto` or `Manual`: a Manual wave starts only once approved.
    #[serde(default)]
    pub approval: Approval,
    /// The wave's own maintenance windows, instead of the rollout's `windows`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<MaintenanceWindow>,
}

/// Whether a wave starts by itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "PascalCase")]
pub enum Approval {
    #[default]
    Auto,
    Manual,
}

/// When a switched Cluster counts as healthy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HealthPolicy {
    /// From a Cluster's switch until it must be healthy, a duration like `30m` (default);
    /// past it the Cluster has failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// CEL conditions over workload-cluster objects (`clusteraddon.yaml`'s syntax); all must
    /// hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<HealthCheck>,
}

/// A CEL condition over objects of the workload cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HealthCheck {
    /// Shown in messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The objects the condition reads, each bound to its `key`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<CheckObject>,
    /// The CEL expression; true when healthy.
    #[schemars(length(min = 1))]
    pub conditions: String,
}

impl HealthCheck {
    /// The check as the CEL evaluator of stage conditions reads one (health checks and
    /// pre-flight checks share the evaluator).
    pub fn wait_condition(&self) -> capstan_stack::addon_config::WaitCondition {
        capstan_stack::addon_config::WaitCondition {
            objects: self
                .objects
                .iter()
                .map(|o| capstan_stack::addon_config::ConditionObject {
                    key: o.key.clone(),
                    api_version: o.api_version.clone(),
                    kind: o.kind.clone(),
                    name: o.name.clone(),
                    namespace: o.namespace.clone(),
                })
                .collect(),
            conditions: self.conditions.clone(),
        }
    }
}

/// An object of the workload cluster a health check reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckObject {
    /// The name the CEL expression uses for the object.
    #[schemars(length(min = 1))]
    pub key: String,
    pub api_version: String,
    pub kind: String,
    pub name: String,
    /// Omitted for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// How many failures are tolerated, and what follows.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailurePolicy {
    /// Failed Clusters tolerated over the whole rollout (default 0).
    #[serde(default)]
    #[schemars(schema_with = "count_schema")]
    pub max_failures: u32,
    /// `Halt` (default) or `Rollback` (halt and switch the failed Clusters back).
    #[serde(default)]
    pub action: FailureAction,
}

/// What happens when more Clusters failed than tolerated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "PascalCase")]
pub enum FailureAction {
    #[default]
    Halt,
    Rollback,
}

/// What the operator observed and decided; also the rollout's memory across restarts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStackRolloutStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default)]
    pub phase: RolloutPhase,
    /// The ClusterStackRelease rolled out, e.g. `docker-ferrol-1-27-v3`: fixed until the
    /// rollout completes (or a halted one is resumed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_release: Option<String>,
    /// The ClusterClass Clusters are switched to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_class: Option<String>,
    /// `versions.kubernetes` of the target release, e.g. `v1.27.3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_kubernetes: Option<String>,
    /// The wave being rolled out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_wave: Option<String>,
    /// `Ready`, `Progressing`, `Halted`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waves: Vec<WaveStatus>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<ClusterRolloutStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::optional_date_time_schema")]
    pub halted_at: Option<Time>,
    /// The value of the `capstan.dev/resume` annotation last acted on: a different one resumes
    /// a halted rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_token: Option<String>,
    /// The value of the `capstan.dev/approve` annotation last acted on (or present when the
    /// target was chosen): an approval counts once, and only for the target it was given for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the next maintenance window opens, while switches wait for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::optional_date_time_schema")]
    pub next_window: Option<Time>,
}

/// Where a rollout is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "PascalCase")]
pub enum RolloutPhase {
    #[default]
    Idle,
    Progressing,
    WaitingForApproval,
    Soaking,
    Paused,
    Halted,
    Complete,
    /// Switches wait for a maintenance window (`status.nextWindow`).
    WaitingForWindow,
}

/// One wave's progress.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaveStatus {
    pub name: String,
    #[serde(default)]
    pub phase: WavePhase,
    /// Clusters in the wave.
    #[serde(default)]
    #[schemars(schema_with = "count_schema")]
    pub total: u32,
    /// Clusters switched (or already on the target).
    #[serde(default)]
    #[schemars(schema_with = "count_schema")]
    pub updated: u32,
    #[serde(default)]
    #[schemars(schema_with = "count_schema")]
    pub healthy: u32,
    #[serde(default)]
    #[schemars(schema_with = "count_schema")]
    pub failed: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::optional_date_time_schema")]
    pub started_at: Option<Time>,
    /// The next wave starts after this time (once every Cluster is healthy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::optional_date_time_schema")]
    pub soak_until: Option<Time>,
    /// When the wave was approved for the current target (Manual waves).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::optional_date_time_schema")]
    pub approved_at: Option<Time>,
}

/// Where a wave is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "PascalCase")]
pub enum WavePhase {
    #[default]
    Pending,
    WaitingForApproval,
    Progressing,
    Soaking,
    Complete,
    Halted,
}

/// One Cluster's part in a rollout.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterRolloutStatus {
    /// `namespace/name`.
    pub name: String,
    pub wave: String,
    /// The class before the switch (what a rollback restores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// `spec.topology.version` before the switch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_version: Option<String>,
    /// The class switched to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    #[serde(default)]
    pub phase: ClusterPhase,
    /// A failure the user resumed past: it no longer counts against `maxFailures`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub acknowledged: bool,
    /// When `phase` was entered (for `Updating`: the switch, from which the health timeout
    /// counts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::optional_date_time_schema")]
    pub since: Option<Time>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The steps from the Cluster's stack to the target, one Kubernetes minor each (a
    /// rollout with `from`); empty for a rollout within one stack.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path: Vec<PathStep>,
    /// The index in `path` of the step being switched or next to switch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "count_schema")]
    pub step: Option<u32>,
    /// The last pre-flight of the current step; kept while a Cluster is Blocked, so the
    /// evidence survives a restart of the workload API server (whose counters start again).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preflight: Vec<PreflightResult>,
    /// A user let the Cluster go despite its pre-flight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forced: Option<ForceApproval>,
}

/// One step of a Cluster's path: a switch to a release of one stack.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PathStep {
    /// The ClusterStackRelease, e.g. `docker-ferrol-1-28-v2`.
    pub release: String,
    /// Its ClusterClass.
    pub class: String,
    /// Its Kubernetes version, e.g. `v1.28.4`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<String>,
}

/// One pre-flight check's verdict.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreflightResult {
    /// `RemovedAPIs`, `Render`, `VersionSkew`, or a `preflight.checks` name.
    pub check: String,
    pub ok: bool,
    /// Why it failed (or what it saw), with the evidence.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// Who let a Blocked Cluster go, and when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForceApproval {
    /// The user the approval names (`capstan rollout approve --force` puts the caller's).
    pub by: String,
    #[schemars(schema_with = "super::date_time_schema")]
    pub at: Time,
    /// The step it was given for: it counts for that step only.
    #[serde(default)]
    #[schemars(schema_with = "count_schema")]
    pub step: u32,
}

/// Where a Cluster is in a rollout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "PascalCase")]
pub enum ClusterPhase {
    #[default]
    Pending,
    Updating,
    Healthy,
    Failed,
    RolledBack,
    /// Its pre-flight (or its path) stops it; `preflight` and `message` say why. Never
    /// switched, never a failure.
    Blocked,
}

/// A duration field (`soak`, `health.timeout`) that is not a Go duration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} {value:?} is not a duration like 10m or 1h30m: {reason}")]
pub struct DurationError {
    pub field: String,
    pub value: String,
    pub reason: String,
}

/// Parses a Go duration (`10m`, `1h30m`); negative ones are refused.
pub fn parse_duration(field: &str, text: &str) -> Result<Duration, DurationError> {
    let error = |reason: String| DurationError {
        field: field.to_string(),
        value: text.to_string(),
        reason,
    };
    let nanos = capstan_go::time::duration::parse(text).map_err(error)?;
    let nanos = u64::try_from(nanos).map_err(|_| error("it is negative".into()))?;
    Ok(Duration::from_nanos(nanos))
}

impl HealthPolicy {
    /// `timeout`, else [`DEFAULT_HEALTH_TIMEOUT`].
    pub fn timeout(&self) -> Result<Duration, DurationError> {
        self.timeout.as_deref().map_or(Ok(DEFAULT_HEALTH_TIMEOUT), |t| {
            parse_duration("spec.health.timeout", t)
        })
    }
}

impl Wave {
    /// `soak`, else zero.
    pub fn soak(&self) -> Result<Duration, DurationError> {
        self.soak.as_deref().map_or(Ok(Duration::ZERO), |s| {
            parse_duration(&format!("waves[{}].soak", self.name), s)
        })
    }
}

impl ClusterStackRolloutSpec {
    /// Whether `version` follows the newest release.
    pub fn follows_latest(&self) -> bool {
        self.version == LATEST
    }
}

/// Schema of a `metav1.LabelSelector` (`matchLabels`, `matchExpressions`).
fn label_selector_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "description": "A label selector: matchLabels and matchExpressions, all of which must hold; empty matches everything.",
        "properties": {
            "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
            "matchExpressions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["key", "operator"],
                    "properties": {
                        "key": {"type": "string"},
                        "operator": {"type": "string", "enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
                        "values": {"type": "array", "items": {"type": "string"}}
                    }
                }
            }
        },
        "x-kubernetes-map-type": "atomic"
    })
}

/// Schema of a count: an integer without schemars' `minimum: 0.0`, a float that a YAML round
/// trip (the chart's CRD file) turns into an integer; the Rust type refuses negatives.
fn count_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "integer", "format": "int32"})
}

/// Schema of `spec.from`: `auto` or a list of names. A structural schema cannot say "string
/// or list", so the API server keeps what it is given and the webhook checks it.
fn from_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "auto, or a list of ClusterStack names of the namespace",
        "x-kubernetes-preserve-unknown-fields": true
    })
}

/// Schema of an int-or-string field (`maxInFlight: 2` or `"25%"`).
fn int_or_string_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"x-kubernetes-int-or-string": true})
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::CustomResourceExt;

    #[test]
    fn defaults_fill_an_almost_empty_spec() {
        let spec: ClusterStackRolloutSpec = serde_json::from_value(serde_json::json!({
            "clusterStack": "docker-ferrol-1-27", "waves": [{"name": "all"}]
        }))
        .expect("spec deserializes");
        assert_eq!(spec.version, "latest");
        assert!(spec.follows_latest());
        assert!(!spec.paused);
        assert_eq!(spec.waves[0].approval, Approval::Auto);
        assert_eq!(spec.failure_policy.action, FailureAction::Halt);
        assert_eq!(spec.failure_policy.max_failures, 0);
        assert_eq!(spec.health.timeout(), Ok(DEFAULT_HEALTH_TIMEOUT));
        assert_eq!(spec.waves[0].soak(), Ok(Duration::ZERO));
    }

    #[test]
    fn from_is_auto_or_a_list_of_names() {
        let read = |from: serde_json::Value| {
            serde_json::from_value::<ClusterStackRolloutSpec>(serde_json::json!({
                "clusterStack": "docker-ferrol-1-29", "waves": [{"name": "all"}], "from": from
            }))
            .map(|spec| spec.from)
            .map_err(|e| e.to_string())
        };
        assert_eq!(read(serde_json::json!("auto")), Ok(Some(FromStacks::Auto)));
        assert_eq!(
            read(serde_json::json!(["docker-ferrol-1-27"])),
            Ok(Some(FromStacks::Stacks(vec!["docker-ferrol-1-27".into()])))
        );
        let why = read(serde_json::json!("everything")).expect_err("not auto");
        assert!(why.starts_with("spec.from: \"everything\" is neither"), "{why}");
        assert!(read(serde_json::json!({"auto": true})).is_err());
        let spec = ClusterStackRolloutSpec {
            from: Some(FromStacks::Auto),
            ..serde_json::from_value(serde_json::json!({"clusterStack": "s", "waves": []})).expect("spec")
        };
        let json = serde_json::to_value(&spec).expect("JSON");
        assert_eq!(json["from"], "auto");
        assert_eq!(json["preflight"]["onBlocked"], "Halt");
        assert!(json.get("windows").is_none(), "no windows: omitted");
    }

    #[test]
    fn a_window_defaults_to_utc() {
        let window: MaintenanceWindow =
            serde_json::from_value(serde_json::json!({"schedule": "0 22 * * 1-5", "duration": "4h"}))
                .expect("window");
        assert_eq!(window.time_zone, "UTC");
    }

    #[test]
    fn an_unknown_phase_in_status_fails_to_read() {
        let status = serde_json::json!({"phase": "Sideways"});
        assert!(serde_json::from_value::<ClusterStackRolloutStatus>(status).is_err());
        let status = serde_json::json!({"phase": "WaitingForApproval"});
        let read: ClusterStackRolloutStatus = serde_json::from_value(status).expect("known phase");
        assert_eq!(read.phase, RolloutPhase::WaitingForApproval);
    }

    #[test]
    fn durations_are_go_durations() {
        let wave = Wave {
            name: "canary".into(),
            soak: Some("1h30m".into()),
            ..Wave::default()
        };
        assert_eq!(wave.soak(), Ok(Duration::from_secs(5400)));
        let bad = Wave {
            soak: Some("ten minutes".into()),
            ..wave
        };
        let error = bad.soak().expect_err("not a duration");
        assert_eq!(error.field, "waves[canary].soak");
    }

    #[test]
    fn crd_is_namespaced_in_the_capstan_group_with_its_columns() {
        let crd = ClusterStackRollout::crd();
        assert_eq!(crd.spec.group, ROLLOUT_GROUP);
        assert_eq!(crd.spec.scope, "Namespaced");
        assert_eq!(crd.spec.names.short_names, Some(vec!["csro".to_string()]));
        assert_eq!(crd.spec.names.categories, Some(vec!["capstan".to_string()]));
        let columns: Vec<String> = crd.spec.versions[0]
            .additional_printer_columns
            .iter()
            .flatten()
            .map(|c| c.name.clone())
            .collect();
        assert_eq!(columns, ["Stack", "Target", "Phase", "Wave", "Age", "Message"]);
    }
}
