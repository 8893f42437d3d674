//! What a rollout reconcile does with its plan: records the planned status (optimistic
//! concurrency on the rollout's resourceVersion), publishes the plan's Events, then patches
//! Clusters — `spec.topology.class` (v1beta2: `classRef`), and `spec.topology.version` when the
//! plan gives one, in one merge patch with capstan's field manager. The Cluster is read first and patched only when
//! it is on the class the plan expects, with its resourceVersion in the patch, so a patch
//! repeated from a stale view (or of a Cluster someone else switched meanwhile) changes
//! nothing.

// The rollout switches Clusters under the applier's field manager: capstan is one manager,
// whichever part of it writes.
use capstan_apply::FIELD_MANAGER;
use futures::StreamExt;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};

use crate::api::rollout::{ClusterStackRollout, ClusterStackRolloutStatus};
use crate::context::Context;
use crate::controller::Error;
use crate::rollout::{Action, Plan};
use capstan_stack::capi::CapiVersion;

/// How the status write went.
#[derive(Debug, PartialEq, Eq)]
pub enum Recorded {
    Written,
    /// The planned status is the recorded one.
    Unchanged,
    /// Someone wrote the rollout since it was read: read again and plan again.
    Conflict,
}

/// Writes `plan.status` over `current`'s, unless it is the same; a write of an object that
/// changed since `current` was read is refused by the API server (resourceVersion).
pub async fn record(
    api: &Api<ClusterStackRollout>,
    current: &ClusterStackRollout,
    plan: &Plan,
) -> Result<Recorded, Error> {
    let name = current.name_any();
    let what = || {
        format!(
            "ClusterStackRollout {}/{name}",
            current.namespace().unwrap_or_default()
        )
    };
    let empty = ClusterStackRolloutStatus::default();
    if current.status.as_ref().unwrap_or(&empty) == &plan.status {
        return Ok(Recorded::Unchanged);
    }
    let mut updated = current.clone();
    updated.status = Some(plan.status.clone());
    updated.metadata.managed_fields = None;
    match api.replace_status(&name, &PostParams::default(), &updated).await {
        Ok(_) => Ok(Recorded::Written),
        Err(e) if crate::kube_error::is_conflict(&e) => Ok(Recorded::Conflict),
        Err(e) => Err(Error::kube(format!("writing the status of {}", what()), e)),
    }
}

/// Records on `current`'s status that it cannot go on (Cluster API not served): the
/// `Progressing` condition False with `reason` and `message`, nothing else of the status
/// changed; the next plan replaces it once it can go on.
pub async fn record_blocked(
    api: &Api<ClusterStackRollout>,
    current: &ClusterStackRollout,
    reason: &str,
    message: &str,
) -> Result<(), kube::Error> {
    use crate::api::conditions::{Condition, ConditionStatus, set_condition};
    let mut status = current.status.clone().unwrap_or_default();
    let condition = Condition::new(
        crate::api::rollout::CONDITION_PROGRESSING,
        ConditionStatus::False,
        reason,
        message,
        current.metadata.generation,
        crate::controller::now(),
    );
    if !set_condition(&mut status.conditions, condition).changed() {
        return Ok(());
    }
    let mut updated = current.clone();
    updated.status = Some(status);
    updated.metadata.managed_fields = None;
    api.replace_status(&current.name_any(), &PostParams::default(), &updated)
        .await
        .map(|_| ())
}

/// Publishes the plan's Events on the rollout.
pub async fn publish_events(ctx: &Context, rollout: &ClusterStackRollout, plan: &Plan) {
    let reference = crate::controller::object_ref(rollout);
    for event in &plan.events {
        ctx.event(
            &reference,
            event.warning,
            &event.reason,
            "Rollout",
            event.message.clone(),
        )
        .await;
    }
}

/// The merge patch that moves a Cluster read at `resource_version` to `class` (and
/// `version`), in the Cluster API version it was read in: v1beta1 `spec.topology.class`,
/// v1beta2 `spec.topology.classRef.name` (and `classRef.namespace` when the class lives in
/// another namespace than the Cluster: `class_namespace`); nothing else. Refused with a
/// conflict if the Cluster changed since.
pub fn switch_patch(
    api: CapiVersion,
    resource_version: &str,
    class: &str,
    class_namespace: Option<&str>,
    version: Option<&str>,
) -> serde_json::Value {
    let mut topology = match api {
        CapiVersion::V1Beta1 => serde_json::json!({"class": class}),
        CapiVersion::V1Beta2 => {
            let mut class_ref = serde_json::json!({"name": class});
            if let Some(namespace) = class_namespace {
                class_ref["namespace"] = namespace.into();
            }
            serde_json::json!({"classRef": class_ref})
        }
    };
    if let Some(version) = version {
        topology["version"] = version.into();
    }
    serde_json::json!({
        "metadata": {"resourceVersion": resource_version},
        "spec": {"topology": topology},
    })
}

/// The class a Cluster must have for `action` to apply: before a switch, the class recorded
/// as its `from`; before a rollback, the target it was switched to.
fn expected_class<'a>(status: &'a ClusterStackRolloutStatus, action: &Action) -> Option<&'a str> {
    match action {
        Action::Switch { cluster, .. } => status
            .clusters
            .iter()
            .find(|c| &c.name == cluster)
            .and_then(|c| c.from.as_deref()),
        Action::RollBack { cluster, .. } => status
            .clusters
            .iter()
            .find(|c| &c.name == cluster)
            .and_then(|c| c.to.as_deref())
            .or(status.target_class.as_deref()),
    }
}

/// Clusters switched (or rolled back) at once, at most: each switch is a read and a patch,
/// and one pass may switch a whole wave's maxInFlight (hundreds of Clusters); one after the
/// other, the last of them would wait for all the others' round trips.
const CONCURRENT_SWITCHES: usize = 16;

/// Patches the Clusters the plan switches or rolls back. A Cluster whose class is no longer
/// the one expected (switched already, or by someone else) is left alone: the test fails and
/// the next observation sees where it is. Every action is tried; the first error is returned.
pub async fn apply_actions(ctx: &Context, rollout: &ClusterStackRollout, plan: &Plan) -> Result<(), Error> {
    // Boxed and made up front: a closure in the stream's type would have to hold for any
    // lifetime, which the controller's spawned task cannot prove.
    let switches: Vec<futures::future::BoxFuture<'_, Result<(), Error>>> = plan
        .actions
        .iter()
        .map(|action| Box::pin(apply_action(ctx, rollout, plan, action)) as _)
        .collect();
    let results: Vec<Result<(), Error>> = futures::stream::iter(switches)
        .buffer_unordered(CONCURRENT_SWITCHES)
        .collect()
        .await;
    results.into_iter().collect()
}

async fn apply_action(
    ctx: &Context,
    rollout: &ClusterStackRollout,
    plan: &Plan,
    action: &Action,
) -> Result<(), Error> {
    let (cluster, class, version, verb) = match action {
        Action::Switch {
            cluster,
            class,
            version,
        } => (cluster, class, version, "switching"),
        Action::RollBack {
            cluster,
            class,
            version,
        } => (cluster, class, version, "rolling back"),
    };
    let (namespace, name) = cluster.split_once('/').unwrap_or((
        rollout.metadata.namespace.as_deref().unwrap_or_default(),
        cluster.as_str(),
    ));
    let resource = crate::clusters::cluster_resource();
    let api: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), namespace, &resource);
    let Some(now) = api
        .get_opt(name)
        .await
        .map_err(|e| Error::kube(format!("reading Cluster {cluster}"), e))?
    else {
        return Ok(());
    };
    let fields = match crate::clusters::fields(&now) {
        Ok(fields) => fields,
        Err(error) => {
            tracing::warn!(%cluster, %error, "{verb} Cluster: its fields cannot be read; left alone");
            return Ok(());
        }
    };
    let current = fields.class.as_ref().map(|c| c.name.as_str());
    let expected = expected_class(&plan.status, action);
    if current == Some(class.as_str()) || expected.is_some_and(|e| current != Some(e)) {
        tracing::info!(%cluster, %class, ?current, ?expected, "{verb} Cluster: not on the expected class; left alone");
        return Ok(());
    }
    let resource_version = now.metadata.resource_version.clone().unwrap_or_default();
    let class_home = rollout
        .metadata
        .namespace
        .as_deref()
        .filter(|home| *home != namespace);
    let patch = switch_patch(
        fields.version,
        &resource_version,
        class,
        class_home,
        version.as_deref(),
    );
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..PatchParams::default()
    };
    match api.patch(name, &params, &Patch::Merge(&patch)).await {
        Ok(_) => tracing::info!(%cluster, %class, "{verb} Cluster"),
        // Changed since it was read: the next observation sees where it is.
        Err(e) if crate::kube_error::is_conflict(&e) || crate::kube_error::is_not_found(&e) => {}
        Err(e) => return Err(Error::kube(format!("{verb} Cluster {cluster} to {class}"), e)),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_switch_sets_class_and_version_together_on_the_cluster_read() {
        use CapiVersion::{V1Beta1, V1Beta2};
        let table = [
            (
                switch_patch(V1Beta1, "42", "docker-ferrol-1-27-v2", None, Some("v1.27.4")),
                serde_json::json!({"metadata": {"resourceVersion": "42"},
                    "spec": {"topology": {"class": "docker-ferrol-1-27-v2", "version": "v1.27.4"}}}),
            ),
            (
                switch_patch(V1Beta1, "7", "b", None, None),
                serde_json::json!({"metadata": {"resourceVersion": "7"}, "spec": {"topology": {"class": "b"}}}),
            ),
            (
                switch_patch(V1Beta2, "42", "docker-ferrol-1-27-v2", None, Some("v1.27.4")),
                serde_json::json!({"metadata": {"resourceVersion": "42"},
                    "spec": {"topology": {"classRef": {"name": "docker-ferrol-1-27-v2"}, "version": "v1.27.4"}}}),
            ),
            (
                switch_patch(V1Beta2, "7", "b", Some("stacks"), None),
                serde_json::json!({"metadata": {"resourceVersion": "7"},
                    "spec": {"topology": {"classRef": {"name": "b", "namespace": "stacks"}}}}),
            ),
        ];
        for (patch, want) in table {
            assert_eq!(patch, want);
        }
    }
}
