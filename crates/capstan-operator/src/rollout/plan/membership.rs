//! Membership: the status' waves follow the spec, its Clusters the fleet. Clusters are
//! assigned to waves by [`assign_across`]; a Cluster that appears while its wave has not
//! finished joins it, one whose wave finished waits for the next rollout; a deleted one leaves
//! unless it failed. A Cluster in the middle of its path stays where it is.

use std::collections::{BTreeMap, HashSet};

use super::Planner;
use crate::api::rollout::{ClusterPhase, ClusterRolloutStatus, WavePhase, WaveStatus};
use crate::rollout::waves::{ClusterInfo, assign_across};

impl Planner<'_, '_> {
    /// Brings the status' waves and Clusters in line with the spec and the fleet.
    pub(super) fn sync_membership(&mut self) {
        let o = self.o;
        let mut waves = Vec::with_capacity(o.spec.waves.len());
        for wave in &o.spec.waves {
            let recorded = self.status.waves.iter().find(|w| w.name == wave.name).cloned();
            waves.push(recorded.unwrap_or_else(|| WaveStatus {
                name: wave.name.clone(),
                ..WaveStatus::default()
            }));
        }
        self.status.waves = waves;
        let current = self
            .status
            .waves
            .iter()
            .position(|w| w.phase != WavePhase::Complete)
            .unwrap_or(self.status.waves.len());

        let assignment = assign_across(o.spec, o.namespace, o.stack, &self.sources, o.clusters);
        let present: BTreeMap<String, &ClusterInfo> = o
            .clusters
            .iter()
            .filter(|c| !c.deleting)
            .map(|c| (c.key(), c))
            .collect();
        // Pending Clusters are placed afresh below, unless in the middle of their path; a
        // switched one stays while it exists; failures stay on record.
        self.status.clusters.retain(|c| match c.phase {
            ClusterPhase::Pending => present.get(&c.name).is_some_and(|cluster| mid_path(c, cluster)),
            ClusterPhase::Updating | ClusterPhase::Healthy => present.contains_key(&c.name),
            ClusterPhase::Failed | ClusterPhase::RolledBack => true,
            // Its evidence stays while it exists.
            ClusterPhase::Blocked => present.contains_key(&c.name),
        });
        let mut recorded: HashSet<String> = self.status.clusters.iter().map(|c| c.name.clone()).collect();
        for (index, (wave, members)) in assignment.waves.iter().enumerate() {
            for key in members {
                if !recorded.insert(key.clone()) {
                    continue;
                }
                if index < current {
                    self.late.push(key.clone());
                    continue;
                }
                self.status.clusters.push(ClusterRolloutStatus {
                    name: key.clone(),
                    wave: wave.clone(),
                    ..ClusterRolloutStatus::default()
                });
            }
        }
        self.status.clusters.sort_by(|a, b| a.name.cmp(&b.name));
    }
}

/// A Pending Cluster in the middle of its path: past its first step, or on the class of one of
/// its steps (a switch whose status was lost). It keeps its path and wave: on an intermediate
/// stack it may be no member of the rollout by its class any more.
fn mid_path(entry: &ClusterRolloutStatus, cluster: &ClusterInfo) -> bool {
    entry.step.unwrap_or(0) > 0
        || entry
            .path
            .iter()
            .any(|step| cluster.class.as_deref() == Some(step.class.as_str()))
}
