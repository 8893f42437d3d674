//! One ClusterStackRollout a row (`capstan get rollouts`).

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use serde::Serialize;

use capstan_operator::api::rollout::{ClusterPhase, ClusterStackRollout, RolloutPhase};

use super::super::table::{NONE, Table};
use super::{Layout, Readiness, age_cell, frame, push_row, release_tag, rfc3339};

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

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;

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
}
