//! What `capstan get` shows of each object, decided from the typed objects alone: one row per
//! ClusterStack, ClusterStackRelease or ClusterAddon, the table it is printed as, and the row
//! as `-o json|yaml` prints it. These rows are the stable output: their JSON field names are
//! documented in the README ("Watching a fleet") and change only by adding fields.
//!
//! Each kind has a row type, a constructor from its typed object and a table function here,
//! and an implementation of `get::Kind`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use serde::Serialize;

use capstan_operator::api::conditions::{self, Condition};
use capstan_operator::api::rollout::{ClusterPhase, ClusterStackRollout, RolloutPhase};
use capstan_operator::api::{
    ClusterAddon, ClusterStack, ClusterStackRelease, Recorded, Resource, SignedDependency, StackSource,
    StagePhase,
};
use capstan_stack::name::ReleaseTag;

use super::get_table::{NONE, Table, age, one_line};

/// The longest message a table prints (`-o wide` prints all of it).
const MESSAGE_WIDTH: usize = 80;

/// The `Reason` of the Event the operator emits when a pass restored drifted objects.
pub const DRIFT_CORRECTED: &str = "DriftCorrected";

/// How the table is laid out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Layout {
    /// A NAMESPACE column (`-A`).
    pub namespaces: bool,
    /// `-o wide`: more columns, whole messages.
    pub wide: bool,
}

impl Layout {
    fn message(&self, text: &str) -> String {
        one_line(text, (!self.wide).then_some(MESSAGE_WIDTH))
    }
}

/// The `Ready` condition's state: its status, reason and message; without a condition, the
/// status' `ready` flag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Readiness {
    /// `True`, `False` or `Unknown`.
    pub status: String,
    pub reason: String,
    pub message: String,
}

impl Readiness {
    fn of(conditions: &[Condition], ready: bool) -> Readiness {
        match conditions::find(conditions, conditions::READY) {
            Some(c) => Readiness {
                status: c.status.as_str().into(),
                reason: c.reason.clone(),
                message: c.message.clone(),
            },
            None => Readiness {
                status: if ready { "True" } else { "Unknown" }.into(),
                reason: String::new(),
                message: String::new(),
            },
        }
    }

    pub fn is_ready(&self) -> bool {
        self.status == "True"
    }

    /// The message, else the reason (a condition may carry only one of them).
    fn text(&self) -> &str {
        if self.message.is_empty() {
            &self.reason
        } else {
            &self.message
        }
    }
}

/// Objects of a status whose last apply succeeded, of all listed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ObjectCount {
    pub synced: usize,
    pub total: usize,
}

impl ObjectCount {
    fn of(resources: &[Resource]) -> ObjectCount {
        ObjectCount {
            synced: resources.iter().filter(|r| r.is_synced()).count(),
            total: resources.len(),
        }
    }

    fn cell(&self) -> String {
        format!("{}/{}", self.synced, self.total)
    }
}

fn rfc3339(time: &Option<Time>) -> Option<String> {
    time.as_ref().map(|t| t.0.to_string())
}

fn age_cell(now: Timestamp, time: Option<&str>) -> String {
    time.and_then(|t| t.parse::<Timestamp>().ok())
        .map(|t| age(now.as_second() - t.as_second()))
        .unwrap_or_default()
}

/// A release name (tag, dash form, or ClusterClass name, dot form) read as a release.
fn release_tag(name: &str) -> Option<ReleaseTag> {
    ReleaseTag::parse(name)
        .or_else(|_| ReleaseTag::parse_cluster_class(name))
        .ok()
}

// ----- ClusterAddon ---------------------------------------------------------------------------

/// Which release a ClusterAddon runs and should run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AddonRelease {
    /// `status.appliedClusterStack`: the release whose addons were last applied in full.
    pub applied: Option<String>,
    /// `spec.clusterStack`: the release the Cluster's class asks for.
    pub wanted: Option<String>,
}

impl AddonRelease {
    /// Whether the applied release is the wanted one (dash and dot forms name the same).
    pub fn current(&self) -> bool {
        match (&self.applied, &self.wanted) {
            (Some(a), Some(w)) => a == w || (release_tag(a).is_some() && release_tag(a) == release_tag(w)),
            (None, None) => true,
            _ => false,
        }
    }

    /// `v2`, or `v1→v2` while another is wanted, `→v2` before the first apply (no spaces: a
    /// cell is one word for `awk`).
    fn cell(&self) -> String {
        let short =
            |name: &String| release_tag(name).map_or_else(|| name.clone(), |t| t.version().to_string());
        match (&self.applied, &self.wanted) {
            _ if self.current() => self.wanted.as_ref().map(short).unwrap_or_default(),
            (Some(a), Some(w)) => format!("{}→{}", short(a), short(w)),
            (None, Some(w)) => format!("→{}", short(w)),
            (Some(a), None) => short(a),
            (None, None) => String::new(),
        }
    }
}

/// Where a multi-stage hook is: the first stage not done, else the last.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StagePosition {
    /// 1-based position of `name` among `total` stages.
    pub index: usize,
    pub total: usize,
    pub name: String,
    pub phase: String,
}

impl StagePosition {
    fn of(addon: &ClusterAddon) -> Option<StagePosition> {
        let stages = &addon.status.as_ref()?.stages;
        let total = stages.len();
        let (i, stage) = stages
            .iter()
            .enumerate()
            .find(|(_, s)| s.phase != Recorded::Known(StagePhase::Done))
            .or_else(|| stages.iter().enumerate().next_back())?;
        Some(StagePosition {
            index: i + 1,
            total,
            name: stage.name.clone(),
            phase: stage.phase.to_string(),
        })
    }

    /// `2/2:cni:waitingForPostCondition` (one word).
    fn cell(&self) -> String {
        format!("{}/{}:{}:{}", self.index, self.total, self.name, self.phase)
    }
}

/// One ClusterAddon, as `capstan get addons` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AddonRow {
    pub namespace: String,
    pub name: String,
    /// The Cluster (`spec.clusterRef.name`).
    pub cluster: String,
    /// The cluster stack of the wanted release (`docker-ferrol-1-27`).
    pub stack: Option<String>,
    pub release: AddonRelease,
    /// The hook being handled (`spec.hook`).
    pub hook: Option<String>,
    pub stage: Option<StagePosition>,
    pub ready: Readiness,
    pub objects: ObjectCount,
    /// When a pass last restored drifted objects (the newest `DriftCorrected` Event).
    pub last_drift_correction: Option<String>,
    /// When the applied objects were last checked (`status.lastReconciled`).
    pub last_pass: Option<String>,
    pub created: Option<String>,
}

impl AddonRow {
    /// The row of `addon`; `drift` holds each addon's newest drift correction
    /// ([`last_drift_corrections`]).
    pub fn of(addon: &ClusterAddon, drift: &BTreeMap<(String, String), String>) -> AddonRow {
        let namespace = addon.namespace().unwrap_or_default();
        let name = addon.name_any();
        let status = addon.status.clone().unwrap_or_default();
        let wanted = addon.spec.cluster_stack.clone();
        AddonRow {
            cluster: addon.spec.cluster_ref.name.clone().unwrap_or_default(),
            stack: wanted
                .as_deref()
                .or(status.applied_cluster_stack.as_deref())
                .and_then(release_tag)
                .map(|t| t.stack().to_string()),
            release: AddonRelease {
                applied: status.applied_cluster_stack.clone(),
                wanted,
            },
            hook: addon.spec.hook.clone(),
            stage: StagePosition::of(addon),
            ready: Readiness::of(&status.conditions, status.ready),
            objects: ObjectCount::of(&status.resources),
            last_drift_correction: drift.get(&(namespace.clone(), name.clone())).cloned(),
            last_pass: rfc3339(&status.last_reconciled),
            created: rfc3339(&addon.metadata.creation_timestamp),
            namespace,
            name,
        }
    }
}

/// A table of `layout`: NAMESPACE first with `-A`, the `wide` headers only with `-o wide`,
/// MESSAGE last.
fn frame(layout: Layout, main: &[&'static str], wide: &[&'static str]) -> Table {
    let mut headers = Vec::new();
    if layout.namespaces {
        headers.push("NAMESPACE");
    }
    headers.extend(main);
    if layout.wide {
        headers.extend(wide);
    }
    headers.push("MESSAGE");
    Table::new(headers)
}

/// Adds a row laid out like [`frame`]'s headers.
fn push_row(
    table: &mut Table,
    layout: Layout,
    namespace: &str,
    main: impl IntoIterator<Item = String>,
    wide: impl FnOnce() -> Vec<String>,
    message: &str,
) {
    let mut cells = Vec::new();
    if layout.namespaces {
        cells.push(namespace.to_string());
    }
    cells.extend(main);
    if layout.wide {
        cells.extend(wide());
    }
    cells.push(layout.message(message));
    table.push(cells);
}

/// The table of `capstan get addons`.
pub fn addons_table(rows: &[AddonRow], layout: Layout, now: Timestamp) -> Table {
    let mut table = frame(
        layout,
        &[
            "CLUSTER", "STACK", "RELEASE", "STAGE", "READY", "OBJECTS", "DRIFT", "AGE",
        ],
        &["NAME", "HOOK", "LAST PASS", "REASON"],
    );
    for row in rows {
        let main = [
            row.cluster.clone(),
            row.stack.clone().unwrap_or_default(),
            row.release.cell(),
            row.stage.as_ref().map(StagePosition::cell).unwrap_or_default(),
            row.ready.status.clone(),
            row.objects.cell(),
            age_cell(now, row.last_drift_correction.as_deref()),
            age_cell(now, row.created.as_deref()),
        ];
        let wide = || {
            vec![
                row.name.clone(),
                row.hook.clone().unwrap_or_default(),
                age_cell(now, row.last_pass.as_deref()),
                row.ready.reason.clone(),
            ]
        };
        push_row(&mut table, layout, &row.namespace, main, wide, row.ready.text());
    }
    table
}

/// The newest `DriftCorrected` Event time per ClusterAddon (namespace, name), as RFC 3339.
pub fn last_drift_corrections(events: &[Event]) -> BTreeMap<(String, String), String> {
    let mut newest: BTreeMap<(String, String), Timestamp> = BTreeMap::new();
    for event in events {
        let regarding = &event.involved_object;
        if event.reason.as_deref() != Some(DRIFT_CORRECTED)
            || regarding.kind.as_deref() != Some("ClusterAddon")
        {
            continue;
        }
        let (Some(time), Some(name)) = (event_time(event), regarding.name.clone()) else {
            continue;
        };
        let key = (
            regarding
                .namespace
                .clone()
                .or_else(|| event.metadata.namespace.clone())
                .unwrap_or_default(),
            name,
        );
        let slot = newest.entry(key).or_insert(time);
        *slot = (*slot).max(time);
    }
    newest.into_iter().map(|(k, t)| (k, t.to_string())).collect()
}

/// When an Event was last seen: the newest of its series, its last timestamp, its event time
/// and its first timestamp (`events.k8s.io` and `core/v1` writers fill different ones).
pub fn event_time(event: &Event) -> Option<Timestamp> {
    [
        event
            .series
            .as_ref()
            .and_then(|s| s.last_observed_time.as_ref())
            .map(|t| t.0),
        event.last_timestamp.as_ref().map(|t| t.0),
        event.event_time.as_ref().map(|t| t.0),
        event.first_timestamp.as_ref().map(|t| t.0),
        event.metadata.creation_timestamp.as_ref().map(|t| t.0),
    ]
    .into_iter()
    .flatten()
    .max()
}

// ----- ClusterStack ---------------------------------------------------------------------------

/// One ClusterStack, as `capstan get stacks` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StackRow {
    pub namespace: String,
    pub name: String,
    /// `<provider>-<name>-<major>-<minor>`.
    pub stack: String,
    pub channel: String,
    pub auto_subscribe: bool,
    /// Versions asked for besides the newest (`spec.versions`).
    pub versions: Vec<String>,
    /// Versions ready to use (`status.usableVersions`).
    pub usable: Vec<String>,
    /// The newest release of the source (`status.latestRelease`).
    pub latest: Option<String>,
    /// Where the releases come from: `github:OWNER/REPO`, `oci://HOST/REPO`, `git+URL#REF:PATH`,
    /// `local:PATH`, or `default` (the operator's default source).
    pub source: String,
    /// The `SourceReady` condition's status: the last listing of the source succeeded.
    pub source_ready: String,
    pub ready: Readiness,
    pub created: Option<String>,
}

/// A stack's source in one word.
pub fn source_text(source: Option<&StackSource>) -> String {
    match source {
        None => "default".into(),
        Some(StackSource::Github(g)) => format!("github:{}/{}", g.owner, g.repo),
        Some(StackSource::Oci(o)) => {
            let repo = o.repository.trim_start_matches("oci://");
            format!("oci://{repo}")
        }
        Some(StackSource::Git(g)) => {
            let mut text = format!("git+{}", g.url);
            if let Some(r) = &g.ref_ {
                text.push('#');
                text.push_str(r);
            }
            if let Some(p) = &g.path {
                text.push_str(if g.ref_.is_some() { ":" } else { "#:" });
                text.push_str(p);
            }
            text
        }
        Some(StackSource::Local(l)) => format!("local:{}", l.path),
    }
}

impl StackRow {
    pub fn of(stack: &ClusterStack) -> StackRow {
        let status = stack.status.clone().unwrap_or_default();
        let spec = &stack.spec;
        StackRow {
            namespace: stack.namespace().unwrap_or_default(),
            name: stack.name_any(),
            stack: format!(
                "{}-{}-{}",
                spec.provider,
                spec.name,
                spec.kubernetes_version.replace('.', "-")
            ),
            channel: spec.channel.to_string(),
            auto_subscribe: spec.auto_subscribe,
            versions: spec.versions.clone(),
            usable: status
                .usable_versions
                .as_deref()
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
                .collect(),
            latest: status.latest_release.clone(),
            source: source_text(spec.source.as_ref()),
            source_ready: conditions::find(&status.conditions, "SourceReady")
                .map_or("Unknown", |c| c.status.as_str())
                .into(),
            ready: Readiness::of(&status.conditions, false),
            created: rfc3339(&stack.metadata.creation_timestamp),
        }
    }
}

/// The table of `capstan get stacks`.
pub fn stacks_table(rows: &[StackRow], layout: Layout, now: Timestamp) -> Table {
    let mut table = frame(
        layout,
        &[
            "NAME", "STACK", "CHANNEL", "LATEST", "USABLE", "SOURCE", "READY", "AGE",
        ],
        &["VERSIONS", "AUTO", "SOURCE READY", "REASON"],
    );
    for row in rows {
        let latest = row
            .latest
            .as_deref()
            .map(|l| release_tag(l).map_or_else(|| l.to_string(), |t| t.version().to_string()));
        let main = [
            row.name.clone(),
            row.stack.clone(),
            row.channel.clone(),
            latest.unwrap_or_default(),
            row.usable.join(","),
            row.source.clone(),
            row.ready.status.clone(),
            age_cell(now, row.created.as_deref()),
        ];
        let wide = || {
            vec![
                row.versions.join(","),
                row.auto_subscribe.to_string(),
                row.source_ready.clone(),
                row.ready.reason.clone(),
            ]
        };
        push_row(&mut table, layout, &row.namespace, main, wide, row.ready.text());
    }
    table
}

// ----- ClusterStackRollout --------------------------------------------------------------------

/// One ClusterStackRollout, as `capstan get rollouts` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutRow {
    pub namespace: String,
    pub name: String,
    /// `spec.clusterStack`.
    pub stack: String,
    /// `spec.version` (`latest` or a release version).
    pub version: String,
    /// The release being rolled out (`status.targetRelease`), once chosen.
    pub target: Option<String>,
    /// `Idle`, `Progressing`, `WaitingForApproval`, `Soaking`, `Paused`, `Halted` or `Complete`.
    pub phase: String,
    /// The wave in progress (`status.currentWave`).
    pub wave: Option<String>,
    /// Waves complete, of all.
    pub waves_complete: usize,
    pub waves_total: usize,
    /// The rollout's Clusters by phase.
    pub clusters: RolloutClusters,
    pub paused: bool,
    pub message: String,
    pub created: Option<String>,
}

/// How many of a rollout's Clusters are in each phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutClusters {
    pub total: usize,
    pub pending: usize,
    pub updating: usize,
    pub healthy: usize,
    pub failed: usize,
    pub rolled_back: usize,
    /// Stopped by their pre-flight (never switched, not failures).
    pub blocked: usize,
}

/// An API enum's word as stored (its serde name).
fn word<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

impl RolloutRow {
    pub fn of(rollout: &ClusterStackRollout) -> RolloutRow {
        let status = rollout.status.clone().unwrap_or_default();
        let mut clusters = RolloutClusters {
            total: status.clusters.len(),
            ..RolloutClusters::default()
        };
        for cluster in &status.clusters {
            let count = match cluster.phase {
                ClusterPhase::Pending => &mut clusters.pending,
                ClusterPhase::Updating => &mut clusters.updating,
                ClusterPhase::Healthy => &mut clusters.healthy,
                ClusterPhase::Failed => &mut clusters.failed,
                ClusterPhase::RolledBack => &mut clusters.rolled_back,
                ClusterPhase::Blocked => &mut clusters.blocked,
            };
            *count += 1;
        }
        let ready = Readiness::of(&status.conditions, false);
        let message = status
            .message
            .clone()
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| ready.text().to_string());
        RolloutRow {
            namespace: rollout.namespace().unwrap_or_default(),
            name: rollout.name_any(),
            stack: rollout.spec.cluster_stack.clone(),
            version: rollout.spec.version.clone(),
            target: status.target_release.clone(),
            phase: word(&status.phase),
            wave: status.current_wave.clone(),
            waves_complete: status
                .waves
                .iter()
                .filter(|w| word(&w.phase) == "Complete")
                .count(),
            waves_total: rollout.spec.waves.len(),
            clusters,
            paused: rollout.spec.paused,
            message,
            created: rfc3339(&rollout.metadata.creation_timestamp),
        }
    }

    /// Done with its target, or with nothing to do: what `--fail-not-ready` accepts.
    pub fn is_settled(&self) -> bool {
        self.phase == word(&RolloutPhase::Complete) || self.phase == word(&RolloutPhase::Idle)
    }
}

/// The table of `capstan get rollouts`.
pub fn rollouts_table(rows: &[RolloutRow], layout: Layout, now: Timestamp) -> Table {
    let mut table = frame(
        layout,
        &[
            "NAME", "STACK", "TARGET", "PHASE", "WAVE", "WAVES", "HEALTHY", "FAILED", "AGE",
        ],
        &["VERSION", "PAUSED", "UPDATING", "PENDING", "ROLLED BACK"],
    );
    for row in rows {
        let target = row
            .target
            .as_deref()
            .map(|t| release_tag(t).map_or_else(|| t.to_string(), |tag| tag.version().to_string()));
        let main = [
            row.name.clone(),
            row.stack.clone(),
            target.unwrap_or_else(|| NONE.to_string()),
            row.phase.clone(),
            row.wave.clone().unwrap_or_else(|| NONE.to_string()),
            format!("{}/{}", row.waves_complete, row.waves_total),
            format!("{}/{}", row.clusters.healthy, row.clusters.total),
            row.clusters.failed.to_string(),
            age_cell(now, row.created.as_deref()),
        ];
        let wide = || {
            vec![
                row.version.clone(),
                row.paused.to_string(),
                row.clusters.updating.to_string(),
                row.clusters.pending.to_string(),
                row.clusters.rolled_back.to_string(),
            ]
        };
        push_row(&mut table, layout, &row.namespace, main, wide, &row.message);
    }
    table
}

// ----- ClusterStackRelease --------------------------------------------------------------------

/// One ClusterStackRelease, as `capstan get releases` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseRow {
    pub namespace: String,
    pub name: String,
    pub kubernetes_version: Option<String>,
    pub ready: Readiness,
    pub objects: ObjectCount,
    /// Clusters whose addons were last applied from this release (ClusterAddons of the
    /// namespace with it as `status.appliedClusterStack`).
    pub clusters: usize,
    pub created: Option<String>,
    /// Who signed the release (`status.verifiedBy`), when its stack has a policy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verified_by: Option<String>,
    /// The chart dependencies a policy verified, with their signers (`status.dependencies`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<SignedDependency>,
}

impl ReleaseRow {
    /// Who signed the release and its dependencies, in one word: `release=SIGNER`, then
    /// `NAME@VERSION=SIGNER` per dependency, comma-separated, each signer by the first word of
    /// its name (the key or certificate identity; `-o json` has the whole); empty when nothing
    /// was verified.
    pub fn signed_cell(&self) -> String {
        let short = |signer: &str| signer.split_whitespace().next().unwrap_or_default().to_string();
        self.verified_by
            .iter()
            .map(|signer| format!("release={}", short(signer)))
            .chain(
                self.dependencies
                    .iter()
                    .map(|d| format!("{}@{}={}", d.name, d.version, short(&d.signer))),
            )
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The row of `release`; `addons` are the ClusterAddons listed with it.
    pub fn of(release: &ClusterStackRelease, addons: &[ClusterAddon]) -> ReleaseRow {
        let status = release.status.clone().unwrap_or_default();
        let namespace = release.namespace().unwrap_or_default();
        let name = release.name_any();
        let tag = release_tag(&name);
        let clusters = addons
            .iter()
            .filter(|a| a.namespace().as_deref() == Some(namespace.as_str()))
            .filter_map(|a| a.status.as_ref()?.applied_cluster_stack.as_deref())
            .filter(|applied| *applied == name || (tag.is_some() && release_tag(applied) == tag))
            .count();
        ReleaseRow {
            kubernetes_version: status.kubernetes_version.clone(),
            ready: Readiness::of(&status.conditions, status.ready),
            objects: ObjectCount::of(&status.resources),
            clusters,
            created: rfc3339(&release.metadata.creation_timestamp),
            verified_by: status.verified_by.clone(),
            dependencies: status.dependencies.clone(),
            namespace,
            name,
        }
    }
}

/// The table of `capstan get releases`.
pub fn releases_table(rows: &[ReleaseRow], layout: Layout, now: Timestamp) -> Table {
    let mut table = frame(
        layout,
        &["NAME", "K8S", "READY", "OBJECTS", "CLUSTERS", "AGE"],
        &["SIGNED", "REASON"],
    );
    for row in rows {
        let main = [
            row.name.clone(),
            row.kubernetes_version.clone().unwrap_or_default(),
            row.ready.status.clone(),
            row.objects.cell(),
            row.clusters.to_string(),
            age_cell(now, row.created.as_deref()),
        ];
        let wide = || vec![row.signed_cell(), row.ready.reason.clone()];
        push_row(&mut table, layout, &row.namespace, main, wide, row.ready.text());
    }
    table
}

/// An empty cell's text, for callers printing single values.
pub fn or_none(text: &str) -> &str {
    if text.is_empty() { NONE } else { text }
}

#[cfg(test)]
mod tests {
    use super::*;
    use capstan_operator::api::{ClusterAddonSpec, ClusterAddonStatus, ConditionStatus, StageStatus};
    use k8s_openapi::api::core::v1::ObjectReference;

    fn time(text: &str) -> Time {
        Time(text.parse().expect("timestamp"))
    }

    const NOW: &str = "2026-11-26T12:00:00Z";

    fn ready(status: ConditionStatus, reason: &str, message: &str) -> Condition {
        Condition::new(
            conditions::READY,
            status,
            reason,
            message,
            None,
            time("2026-11-26T11:00:00Z"),
        )
    }

    fn resource(name: &str, synced: bool) -> Resource {
        Resource {
            version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: "kube-system".into(),
            name: name.into(),
            status: if synced {
                Resource::SYNCED
            } else {
                Resource::NOT_SYNCED
            }
            .into(),
            ..Resource::default()
        }
    }

    fn addon(cluster: &str, wanted: &str, status: ClusterAddonStatus) -> ClusterAddon {
        let mut a = ClusterAddon::new(
            &format!("cluster-addon-{cluster}"),
            ClusterAddonSpec {
                cluster_stack: Some(wanted.into()),
                cluster_ref: ObjectReference {
                    name: Some(cluster.into()),
                    ..ObjectReference::default()
                },
                ..ClusterAddonSpec::default()
            },
        );
        a.metadata.namespace = Some("tenant".into());
        a.metadata.creation_timestamp = Some(time("2026-11-26T11:50:00Z"));
        a.status = Some(status);
        a
    }

    fn fixtures() -> Vec<ClusterAddon> {
        vec![
            addon(
                "ready",
                "docker-ferrol-1-27-v2",
                ClusterAddonStatus {
                    ready: true,
                    conditions: vec![ready(ConditionStatus::True, "Succeeded", "")],
                    resources: vec![resource("a", true), resource("b", true)],
                    applied_cluster_stack: Some("docker-ferrol-1-27-v2".into()),
                    ..Default::default()
                },
            ),
            addon(
                "staged",
                "docker-ferrol-1-27-v2",
                ClusterAddonStatus {
                    conditions: vec![ready(
                        ConditionStatus::False,
                        "StageWaiting",
                        "stage cni: waiting for its post-condition",
                    )],
                    stages: vec![
                        StageStatus {
                            name: "crds".into(),
                            action: "apply".into(),
                            phase: "done".into(),
                            ..StageStatus::default()
                        },
                        StageStatus {
                            name: "cni".into(),
                            action: "apply".into(),
                            phase: "waitingForPostCondition".into(),
                            ..StageStatus::default()
                        },
                    ],
                    resources: vec![resource("a", true)],
                    applied_cluster_stack: Some("docker-ferrol-1-27-v1".into()),
                    ..Default::default()
                },
            ),
            addon(
                "new",
                "docker-ferrol-1-27-v0-sha-abc",
                ClusterAddonStatus::default(),
            ),
        ]
    }

    #[test]
    fn addon_rows_and_table() {
        let mut drift = BTreeMap::new();
        drift.insert(
            ("tenant".to_string(), "cluster-addon-ready".to_string()),
            "2026-11-26T11:57:00Z".to_string(),
        );
        let rows: Vec<AddonRow> = fixtures().iter().map(|a| AddonRow::of(a, &drift)).collect();
        assert_eq!(rows[0].stack.as_deref(), Some("docker-ferrol-1-27"));
        assert!(rows[0].release.current());
        assert!(!rows[1].release.current());
        let table = addons_table(&rows, Layout::default(), NOW.parse().expect("now"));
        assert_eq!(
            table.render(false),
            "\
CLUSTER   STACK                RELEASE       STAGE                             READY     OBJECTS   DRIFT   AGE   MESSAGE
ready     docker-ferrol-1-27   v2            -                                 True      2/2       3m      10m   Succeeded
staged    docker-ferrol-1-27   v1→v2         2/2:cni:waitingForPostCondition   False     1/1       -       10m   stage cni: waiting for its post-condition
new       docker-ferrol-1-27   →v0-sha.abc   -                                 Unknown   0/0       -       10m   -
"
        );
    }

    #[test]
    fn wide_and_all_namespaces_add_columns() {
        let rows: Vec<AddonRow> = fixtures()
            .iter()
            .map(|a| AddonRow::of(a, &BTreeMap::new()))
            .collect();
        let layout = Layout {
            namespaces: true,
            wide: true,
        };
        let table = addons_table(&rows[..1], layout, NOW.parse().expect("now"));
        assert_eq!(
            table.headers,
            [
                "NAMESPACE",
                "CLUSTER",
                "STACK",
                "RELEASE",
                "STAGE",
                "READY",
                "OBJECTS",
                "DRIFT",
                "AGE",
                "NAME",
                "HOOK",
                "LAST PASS",
                "REASON",
                "MESSAGE"
            ]
        );
        assert_eq!(table.rows[0][0], "tenant");
        assert_eq!(table.rows[0][9], "cluster-addon-ready");
    }

    #[test]
    fn long_messages_are_cut_except_wide() {
        let long = "x ".repeat(100);
        let a = addon(
            "c",
            "docker-ferrol-1-27-v2",
            ClusterAddonStatus {
                conditions: vec![ready(ConditionStatus::False, "ApplyFailed", &long)],
                ..Default::default()
            },
        );
        let rows = [AddonRow::of(&a, &BTreeMap::new())];
        let now = NOW.parse().expect("now");
        let narrow = addons_table(&rows, Layout::default(), now);
        assert_eq!(
            narrow.rows[0].last().map(|m| m.chars().count()),
            Some(MESSAGE_WIDTH)
        );
        let wide = addons_table(
            &rows,
            Layout {
                wide: true,
                ..Layout::default()
            },
            now,
        );
        assert_eq!(wide.rows[0].last().map(|m| m.chars().count()), Some(199));
    }

    #[test]
    fn json_field_names_are_the_documented_ones() {
        let rows: Vec<AddonRow> = fixtures()
            .iter()
            .map(|a| AddonRow::of(a, &BTreeMap::new()))
            .collect();
        let json = serde_json::to_value(&rows[1]).expect("serializes");
        let keys: Vec<&str> = json
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "cluster",
                "created",
                "hook",
                "lastDriftCorrection",
                "lastPass",
                "name",
                "namespace",
                "objects",
                "ready",
                "release",
                "stack",
                "stage"
            ]
        );
        assert_eq!(
            json["release"],
            serde_json::json!({"applied": "docker-ferrol-1-27-v1", "wanted": "docker-ferrol-1-27-v2"})
        );
        assert_eq!(
            json["stage"],
            serde_json::json!({"index": 2, "total": 2, "name": "cni", "phase": "waitingForPostCondition"})
        );
        assert_eq!(json["objects"], serde_json::json!({"synced": 1, "total": 1}));
    }

    fn rollout(name: &str, status: serde_json::Value) -> ClusterStackRollout {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "capstan.dev/v1alpha1",
            "kind": "ClusterStackRollout",
            "metadata": {"name": name, "namespace": "tenant", "creationTimestamp": "2026-11-26T11:00:00Z"},
            "spec": {
                "clusterStack": "docker-ferrol-1-27",
                "version": "latest",
                "waves": [{"name": "canary"}, {"name": "rest", "maxInFlight": "20%"}]
            },
            "status": status
        }))
        .expect("a rollout")
    }

    #[test]
    fn rollouts_show_target_phase_wave_and_cluster_counts() {
        let halted = rollout(
            "ferrol",
            serde_json::json!({
                "phase": "Halted",
                "targetRelease": "docker-ferrol-1-27-v3",
                "currentWave": "rest",
                "message": "1 Cluster failed (maxFailures 0): tenant/c",
                "waves": [
                    {"name": "canary", "phase": "Complete", "total": 1, "updated": 1, "healthy": 1},
                    {"name": "rest", "phase": "Halted", "total": 3, "updated": 2, "healthy": 1, "failed": 1}
                ],
                "clusters": [
                    {"name": "tenant/a", "wave": "canary", "phase": "Healthy"},
                    {"name": "tenant/b", "wave": "rest", "phase": "Healthy"},
                    {"name": "tenant/c", "wave": "rest", "phase": "Failed"},
                    {"name": "tenant/d", "wave": "rest", "phase": "Pending"}
                ]
            }),
        );
        let fresh = rollout("new", serde_json::json!({}));
        let rows = [RolloutRow::of(&fresh), RolloutRow::of(&halted)];
        assert_eq!(rows[1].phase, "Halted");
        assert_eq!((rows[1].waves_complete, rows[1].waves_total), (1, 2));
        assert_eq!(
            rows[1].clusters,
            RolloutClusters {
                total: 4,
                pending: 1,
                updating: 0,
                healthy: 2,
                failed: 1,
                rolled_back: 0,
                blocked: 0
            }
        );
        assert!(!rows[1].is_settled(), "a halted rollout is not settled");
        assert!(rows[0].is_settled(), "a rollout without status is Idle");
        let now: Timestamp = NOW.parse().expect("now");
        let table = rollouts_table(&rows, Layout::default(), now).render(false);
        let lines: Vec<&str> = table.lines().map(str::trim_end).collect();
        assert_eq!(
            lines,
            [
                "NAME     STACK                TARGET   PHASE    WAVE   WAVES   HEALTHY   FAILED   AGE   MESSAGE",
                "new      docker-ferrol-1-27   -        Idle     -      0/2     0/0       0        60m   -",
                "ferrol   docker-ferrol-1-27   v3       Halted   rest   1/2     2/4       1        60m   1 Cluster failed (maxFailures 0): tenant/c",
            ]
        );
    }

    #[test]
    fn drift_corrections_take_the_newest_event_per_addon() {
        let event = |name: &str, reason: &str, at: &str| Event {
            metadata: kube::api::ObjectMeta {
                namespace: Some("tenant".into()),
                ..Default::default()
            },
            involved_object: ObjectReference {
                kind: Some("ClusterAddon".into()),
                name: Some(name.into()),
                namespace: Some("tenant".into()),
                ..Default::default()
            },
            reason: Some(reason.into()),
            last_timestamp: Some(time(at)),
            ..Default::default()
        };
        let found = last_drift_corrections(&[
            event("a", DRIFT_CORRECTED, "2026-11-26T10:00:00Z"),
            event("a", DRIFT_CORRECTED, "2026-11-26T11:00:00Z"),
            event("a", "Applied", "2026-11-26T11:30:00Z"),
            event("b", DRIFT_CORRECTED, "2026-11-26T09:00:00Z"),
        ]);
        assert_eq!(
            found.into_iter().collect::<Vec<_>>(),
            [
                (("tenant".into(), "a".into()), "2026-11-26T11:00:00Z".into()),
                (("tenant".into(), "b".into()), "2026-11-26T09:00:00Z".into()),
            ]
        );
    }

    #[test]
    fn sources_in_one_word() {
        use capstan_operator::api::{GitHubSource, GitSource, LocalSource, OciSource};
        for (source, want) in [
            (None, "default"),
            (
                Some(StackSource::Github(GitHubSource {
                    owner: "o".into(),
                    repo: "r".into(),
                    ..Default::default()
                })),
                "github:o/r",
            ),
            (
                Some(StackSource::Oci(OciSource {
                    repository: "oci://reg/x".into(),
                    ..Default::default()
                })),
                "oci://reg/x",
            ),
            (
                Some(StackSource::Git(GitSource {
                    url: "https://h/s.git".into(),
                    ref_: Some("main".into()),
                    path: Some("p".into()),
                    ..Default::default()
                })),
                "git+https://h/s.git#main:p",
            ),
            (
                Some(StackSource::Local(LocalSource { path: "/s".into() })),
                "local:/s",
            ),
        ] {
            assert_eq!(source_text(source.as_ref()), want);
        }
    }

    #[test]
    fn releases_count_the_clusters_on_them() {
        let mut release = ClusterStackRelease::new("docker-ferrol-1-27-v1", Default::default());
        release.metadata.namespace = Some("tenant".into());
        let row = ReleaseRow::of(&release, &fixtures());
        assert_eq!(row.clusters, 1);
        assert_eq!(row.ready.status, "Unknown");
        assert_eq!(row.signed_cell(), "", "nothing verified");
        let json = serde_json::to_value(&row).unwrap();
        assert!(
            json.get("verifiedBy").is_none() && json.get("dependencies").is_none(),
            "{json}"
        );
    }

    #[test]
    fn releases_show_who_signed_them_and_their_dependencies() {
        let mut release = ClusterStackRelease::new("docker-ferrol-1-27-v1", Default::default());
        release.metadata.namespace = Some("tenant".into());
        let dependency = |name: &str, signer: &str| SignedDependency {
            chart: "ferrol-cluster-class".into(),
            name: name.into(),
            version: "0.1.0".into(),
            repository: "https://charts.example".into(),
            method: "provenance".into(),
            signer: signer.into(),
        };
        release.status = Some(capstan_operator::api::ClusterStackReleaseStatus {
            verified_by: Some("sha256:ab".into()),
            dependencies: vec![
                dependency("demo", "2F9C (Signer <s@x>)"),
                dependency("other", "sha256:cd"),
            ],
            ..Default::default()
        });
        let row = ReleaseRow::of(&release, &[]);
        assert_eq!(
            row.signed_cell(),
            "release=sha256:ab,demo@0.1.0=2F9C,other@0.1.0=sha256:cd"
        );
        let json = serde_json::to_value(&row).unwrap();
        assert_eq!(json["verifiedBy"], "sha256:ab");
        assert_eq!(json["dependencies"][0]["signer"], "2F9C (Signer <s@x>)");
        assert_eq!(json["dependencies"][1]["method"], "provenance");
        release.status.as_mut().unwrap().verified_by = None;
        assert_eq!(
            ReleaseRow::of(&release, &[]).signed_cell(),
            "demo@0.1.0=2F9C,other@0.1.0=sha256:cd"
        );
    }
}
