//! Failures past `failurePolicy.maxFailures`: the rollout halts and, with `Rollback`, the
//! failed Clusters are switched back.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::{Action, Planner, is_failure};
use crate::api::rollout::{ClusterPhase, FailureAction, RolloutPhase, WavePhase, WaveStatus};

impl Planner<'_, '_> {
    pub(super) fn check_failures(&mut self) {
        if self.status.phase == RolloutPhase::Halted {
            return;
        }
        let policy = &self.o.spec.failure_policy;
        let failed: Vec<String> = self
            .status
            .clusters
            .iter()
            .filter(|c| is_failure(c))
            .map(|c| c.name.clone())
            .collect();
        if failed.len() <= policy.max_failures as usize {
            return;
        }
        self.status.phase = RolloutPhase::Halted;
        self.status.halted_at = Some(Time(self.now));
        if let Some(w) = self.current_wave_status() {
            w.phase = WavePhase::Halted;
        }
        let message = format!(
            "halted: {} failed Cluster(s), at most {} tolerated: {}",
            failed.len(),
            policy.max_failures,
            failed.join(", ")
        );
        self.status.message = Some(message.clone());
        self.event("Halted", &message, true);
    }

    pub(super) fn current_wave_status(&mut self) -> Option<&mut WaveStatus> {
        let name = self.status.current_wave.clone()?;
        self.status.waves.iter_mut().find(|w| w.name == name)
    }

    /// With `Rollback`: switches the failed Clusters back to their recorded class and version,
    /// again when an earlier rollback's patch did not take.
    pub(super) fn roll_back(&mut self) {
        if self.o.spec.failure_policy.action != FailureAction::Rollback {
            return;
        }
        let now = self.now;
        let mut rolled = Vec::new();
        for entry in &mut self.status.clusters {
            let Some(from) = entry.from.clone() else {
                continue; // never switched by the rollout: nothing to go back to
            };
            let Some(cluster) = self.clusters.get(&entry.name).copied() else {
                continue;
            };
            let newly = entry.phase == ClusterPhase::Failed && !entry.acknowledged;
            let unfinished =
                entry.phase == ClusterPhase::RolledBack && cluster.class.as_deref() != Some(&from);
            if !newly && !unfinished {
                continue;
            }
            let version = entry
                .from_version
                .clone()
                .filter(|v| cluster.version.as_ref() != Some(v));
            self.actions.push(Action::RollBack {
                cluster: entry.name.clone(),
                class: from.clone(),
                version,
            });
            if newly {
                entry.phase = ClusterPhase::RolledBack;
                entry.since = Some(Time(now));
                entry.message = Some(format!("rolled back to {from}"));
                rolled.push(format!("{} to {from}", entry.name));
            }
        }
        if !rolled.is_empty() {
            let message = format!("rolling back {}", rolled.join(", "));
            self.event("RolledBack", &message, true);
        }
    }
}
