//! One ClusterAddon a row (`capstan get addons`), and the drift corrections its Events record.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Event;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use serde::Serialize;

use capstan_operator::api::{ClusterAddon, Recorded, StagePhase};

use super::super::table::Table;
use super::{Layout, ObjectCount, Readiness, age_cell, frame, push_row, release_tag, rfc3339};

/// The `Reason` of the Event the operator emits when a pass restored drifted objects.
pub const DRIFT_CORRECTED: &str = "DriftCorrected";

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

#[cfg(test)]
mod tests {
    use super::super::MESSAGE_WIDTH;
    use super::super::fixtures::*;
    use super::*;
    use capstan_operator::api::{ClusterAddonStatus, ConditionStatus};
    use k8s_openapi::api::core::v1::ObjectReference;

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
}
