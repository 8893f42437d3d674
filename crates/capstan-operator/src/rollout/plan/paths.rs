//! Paths across stacks (`spec.from`): which stacks' Clusters the rollout moves, each Cluster's
//! path to the target (one Kubernetes minor per step, [`crate::rollout::path`]), and the step
//! it is at. A Cluster without a path is Blocked with the reason, never switched; each step is
//! a switch of its own with its own health gate, and the next starts only once the step is
//! healthy (never two steps of one Cluster in flight).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::steps::found_further;
use super::{Planner, Target};
use crate::api::rollout::{ClusterPhase, ClusterRolloutStatus, PathStep};
use crate::rollout::path::{NoPath, path, sources};
use crate::rollout::waves::ClusterInfo;
use capstan_stack::name::ReleaseTag;

impl Planner<'_, '_> {
    /// Resolves `spec.from` against the namespace's ClusterStacks; notes an `auto` that finds
    /// none and names that find no ClusterStack.
    pub(super) fn read_sources(&mut self) {
        let Some(from) = &self.o.spec.from else {
            return;
        };
        let found = sources(from, self.o.stack, self.o.stacks);
        self.sources = found.stacks;
        self.notes.extend(found.notes);
    }

    /// Gives every Cluster that has not started its path (Pending or Blocked, not past its
    /// first step) its path from the stack it is on now, or blocks it with why it has none. A
    /// Cluster found on the class of a later step than recorded (a switch whose status was
    /// lost) is at that step: it is never switched to it again.
    pub(super) fn place_on_paths(&mut self, target: &Target) {
        if self.o.spec.from.is_none() {
            return;
        }
        let now = Time(self.now);
        let mut blocked = Vec::new();
        let mut entries = std::mem::take(&mut self.status.clusters);
        for entry in &mut entries {
            let Some(cluster) = self.clusters.get(&entry.name).copied() else {
                continue;
            };
            if entry.phase == ClusterPhase::Updating {
                found_further(entry, cluster, now.clone());
                continue;
            }
            if !matches!(entry.phase, ClusterPhase::Pending | ClusterPhase::Blocked) {
                continue;
            }
            let class = cluster.class.as_deref();
            if let Some(at) = entry.path.iter().position(|s| Some(s.class.as_str()) == class) {
                let at = u32::try_from(at).unwrap_or(u32::MAX);
                if entry.step.is_none_or(|s| s < at) {
                    entry.step = Some(at);
                }
                continue;
            }
            if entry.step.unwrap_or(0) > 0 {
                continue; // in the middle of its path: it keeps it
            }
            match self.path_of(cluster, target) {
                Ok(steps) => {
                    if entry.path.is_empty() && entry.phase == ClusterPhase::Blocked {
                        entry.phase = ClusterPhase::Pending;
                        entry.since = None;
                        entry.message = Some("a path to the target exists now".to_string());
                    }
                    entry.path = steps;
                    entry.step = Some(0);
                }
                Err(NoPath(why)) => {
                    let message = format!("no path to {}: {why}", target.release);
                    if entry.phase != ClusterPhase::Blocked || !entry.path.is_empty() {
                        blocked.push(format!("{} blocked: {message}", entry.name));
                        entry.since = Some(now.clone());
                    }
                    entry.phase = ClusterPhase::Blocked;
                    entry.path.clear();
                    entry.step = None;
                    entry.message = Some(message);
                }
            }
        }
        self.status.clusters = entries;
        for message in blocked {
            self.event("NoPath", &message, true);
        }
    }

    /// `cluster`'s path from the stack of its class to `target`.
    fn path_of(&self, cluster: &ClusterInfo, target: &Target) -> Result<Vec<PathStep>, NoPath> {
        let class = cluster.class.as_deref().unwrap_or_default();
        let tag = ReleaseTag::parse_cluster_class(class)
            .map_err(|_| NoPath(format!("its class {class} is not a release of a cluster stack")))?;
        let steps = path(tag.stack(), self.o.stack, target, self.o.stacks)?;
        Ok(steps.into_iter().map(PathStep::from).collect())
    }

    /// Whether `entry` is blocked for want of a path (a rollout across stacks only).
    pub(super) fn without_path(&self, entry: &ClusterRolloutStatus) -> bool {
        self.o.spec.from.is_some() && entry.path.is_empty()
    }
}
