//! A Cluster's step on its path (see `paths`): the release it is switched to or judged on now,
//! the next step once one is healthy, and a step found taken whose status was lost.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::api::rollout::{ClusterPhase, ClusterRolloutStatus};
use crate::rollout::health::Target;
use crate::rollout::waves::ClusterInfo;

/// An Updating Cluster found on the class of a later step than recorded (the status of that
/// step's switch was lost): it is at that step, switched from the one before, its health
/// timeout counting from now — never switched back to the step recorded.
pub(super) fn found_further(entry: &mut ClusterRolloutStatus, cluster: &ClusterInfo, now: Time) {
    let at = entry.step.unwrap_or(0) as usize;
    let class = cluster.class.as_deref();
    let Some(found) = entry.path.iter().position(|s| Some(s.class.as_str()) == class) else {
        return;
    };
    if found <= at {
        return;
    }
    let before = &entry.path[found - 1];
    entry.from = Some(before.class.clone());
    entry.from_version = before.kubernetes.clone();
    entry.to = Some(entry.path[found].class.clone());
    entry.step = Some(u32::try_from(found).unwrap_or(u32::MAX));
    entry.since = Some(now);
    entry.message = Some(format!(
        "found switched to step {} of {}",
        found + 1,
        entry.path.len()
    ));
}

/// The release `entry` is switched to, or judged healthy on, now: its path's current step,
/// else (a rollout within one stack) the target.
pub(super) fn step_target(entry: &ClusterRolloutStatus, target: &Target) -> Target {
    let at = entry.step.unwrap_or(0) as usize;
    match entry.path.get(at).or(entry.path.last()) {
        Some(step) => Target {
            release: step.release.clone(),
            class: step.class.clone(),
            kubernetes: step.kubernetes.clone(),
        },
        None => target.clone(),
    }
}

/// After `entry`'s current step became healthy: the next step, Pending again (its own
/// pre-flight, window and `maxInFlight` gate its switch), with a message saying so; `None`
/// when the step was the last.
pub(super) fn next_step(entry: &mut ClusterRolloutStatus) -> Option<String> {
    let at = entry.step? as usize;
    let done = entry.path.get(at)?.class.clone();
    let next = entry.path.get(at + 1)?.class.clone();
    let message = format!(
        "step {} of {} healthy on {done}; next {next}",
        at + 1,
        entry.path.len()
    );
    entry.step = Some(u32::try_from(at + 1).unwrap_or(u32::MAX));
    entry.phase = ClusterPhase::Pending;
    entry.since = None;
    entry.from = None;
    entry.from_version = None;
    entry.to = None;
    entry.preflight.clear();
    entry.message = Some(message.clone());
    Some(format!("{}: {message}", entry.name))
}
