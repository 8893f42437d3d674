//! The rollout's status after a decision: the counts per wave, the message and the
//! conditions.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::{Plan, Planner};
use crate::api::conditions::{self, Condition, ConditionStatus, READY};
use crate::api::rollout::{
    CONDITION_HALTED, CONDITION_PROGRESSING, ClusterPhase, ClusterStackRolloutStatus, RolloutPhase,
};

impl Planner<'_, '_> {
    pub(super) fn finish(mut self) -> Plan {
        self.count();
        if let Some(message) = self.message.take() {
            self.status.message = Some(message);
        } else if self.status.phase != RolloutPhase::Halted {
            let mut message = summary(&self.status);
            if !self.late.is_empty() {
                message.push_str(&format!(
                    "; waiting for the next rollout (their wave finished): {}",
                    self.late.join(", ")
                ));
            }
            for note in &self.notes {
                message.push_str(&format!("; {note}"));
            }
            self.status.message = Some(message);
        }
        self.set_conditions();
        Plan {
            status: self.status,
            actions: self.actions,
            events: self.events,
            requeue_after: self.requeue,
        }
    }

    fn count(&mut self) {
        let clusters = &self.status.clusters;
        for wave in &mut self.status.waves {
            let members = clusters.iter().filter(|c| c.wave == wave.name);
            let (mut total, mut updated, mut healthy, mut failed) = (0, 0, 0, 0);
            for c in members {
                total += 1;
                if !matches!(c.phase, ClusterPhase::Pending | ClusterPhase::Blocked) {
                    updated += 1;
                }
                match c.phase {
                    ClusterPhase::Healthy => healthy += 1,
                    ClusterPhase::Failed | ClusterPhase::RolledBack => failed += 1,
                    _ => {}
                }
            }
            (wave.total, wave.updated, wave.healthy, wave.failed) = (total, updated, healthy, failed);
        }
    }

    fn set_conditions(&mut self) {
        let generation = self.o.generation;
        let now = Time(self.now);
        let phase = self.status.phase;
        let reason = format!("{phase:?}");
        let message = self.status.message.clone().unwrap_or_default();
        let condition = |type_: &str, holds: bool| {
            Condition::new(
                type_,
                ConditionStatus::from_bool(holds),
                reason.clone(),
                message.clone(),
                generation,
                now.clone(),
            )
        };
        let progressing = matches!(
            phase,
            RolloutPhase::Progressing
                | RolloutPhase::Soaking
                | RolloutPhase::WaitingForApproval
                | RolloutPhase::WaitingForWindow
        );
        let list = &mut self.status.conditions;
        conditions::set_condition(list, condition(READY, phase == RolloutPhase::Complete));
        conditions::set_condition(list, condition(CONDITION_PROGRESSING, progressing));
        conditions::set_condition(list, condition(CONDITION_HALTED, phase == RolloutPhase::Halted));
    }
}

pub(super) fn summary(status: &ClusterStackRolloutStatus) -> String {
    let target = status.target_release.as_deref().unwrap_or("none");
    match (status.phase, &status.current_wave) {
        (RolloutPhase::Complete, _) => format!("{target} rolled out"),
        (phase, Some(wave)) => {
            let w = status.waves.iter().find(|w| &w.name == wave);
            let (healthy, total) = w.map_or((0, 0), |w| (w.healthy, w.total));
            format!("{phase:?}: wave {wave}, {healthy}/{total} healthy, target {target}")
        }
        (phase, None) => format!("{phase:?}: target {target}"),
    }
}
