//! The ClusterStacks a rollout across stacks (`spec.from`) reads: every ClusterStack of its
//! namespace with the newest ready release of each, for the plan to resolve `from` and to
//! build each Cluster's path through the minors in between.

use kube::ResourceExt;

use kube::runtime::reflector::Store;

use super::target::{self, ReleaseSeen};
use crate::api::ClusterStackRelease;
use crate::api::rollout::ClusterStackRollout;
use crate::context::Context;
use crate::rollout::{Hop, Target};

/// The namespace's ClusterStacks (those being deleted left out) with their newest ready
/// release; empty for a rollout without `spec.from`.
pub fn hops(
    rollout: &ClusterStackRollout,
    namespace: &str,
    ctx: &Context,
    releases: &Store<ClusterStackRelease>,
) -> Vec<Hop> {
    if rollout.spec.from.is_none() {
        return Vec::new();
    }
    let releases = releases_of(namespace, releases);
    let mut hops: Vec<Hop> = ctx
        .stacks
        .state()
        .iter()
        .filter(|s| s.namespace().as_deref() == Some(namespace) && s.metadata.deletion_timestamp.is_none())
        .filter_map(|s| {
            let stack = crate::controller::stack_name_of(s)?;
            Some(Hop {
                name: s.name_any(),
                newest_ready: newest_ready(&stack, &releases),
                stack,
            })
        })
        .collect();
    hops.sort_by(|a, b| a.name.cmp(&b.name));
    hops
}

/// The namespace's releases as the target and path decisions read them (not being deleted).
pub(super) fn releases_of(namespace: &str, releases: &Store<ClusterStackRelease>) -> Vec<ReleaseSeen> {
    releases
        .state()
        .iter()
        .filter(|r| {
            r.metadata.namespace.as_deref() == Some(namespace) && r.metadata.deletion_timestamp.is_none()
        })
        .map(|r| ReleaseSeen::of(r))
        .collect()
}

/// The newest ready release of `stack` that reports its Kubernetes version.
pub fn newest_ready(stack: &crate::rollout::StackId, releases: &[ReleaseSeen]) -> Option<Target> {
    let resolved = target::resolve(stack, crate::api::rollout::LATEST, releases).ok()?;
    Some(Target {
        release: resolved.release,
        class: resolved.class,
        kubernetes: Some(resolved.kubernetes),
    })
}
