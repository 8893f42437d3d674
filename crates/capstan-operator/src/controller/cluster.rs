//! The Cluster controller: every Cluster API `Cluster` whose `spec.topology.class` is a stack
//! class gets its ClusterAddon, `cluster-addon-<cluster>`, owned by the Cluster, and the
//! ClusterAddon's `spec.clusterStack` follows the class.
//!
//! The ClusterAddon is read from the process' ClusterAddon store, not by GET: every Cluster
//! event (its creation, its gate opening, a class switch) read it before, two GETs per Cluster
//! of a fleet's creation and one per switch. A store that has not synced yet is answered by a
//! GET. One a moment behind is harmless: a patch from a stale copy writes the values the
//! Cluster asks for again; a stale copy that already has them hides a newer change, but that
//! change's event wakes the Cluster again (the runtime wakes it on a ClusterAddon's spec or
//! shard change); a create that finds the ClusterAddon made meanwhile reads it.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};

use super::Error;
use super::failures::Failures;
use crate::api::{ClusterAddon, ClusterAddonSpec};
use crate::clusters::ClusterUse;
use crate::context::Context;
use crate::watch::CLUSTER_NAME_LABEL;
use crate::watch::{changed, cluster_trigger, spec_or_deletion};
use crate::wiring::{Running, Wiring, in_scope};
use capstan_stack::name::ReleaseTag;
use futures::{FutureExt, StreamExt};
use kube::runtime::Controller;

pub const CONTROLLER: &str = "cluster";

pub use crate::api::cluster_addon::addon_name;

/// The Cluster controller's state: the shared context, the ClusterAddon store and its
/// failures.
pub struct ClusterController {
    pub shared: Arc<Context>,
    addons: Store<ClusterAddon>,
    failures: Failures,
}

impl ClusterController {
    pub fn new(shared: Arc<Context>, addons: Store<ClusterAddon>) -> ClusterController {
        ClusterController {
            shared,
            addons,
            failures: Failures::default(),
        }
    }
}

impl super::Reconciler for ClusterController {
    fn shared(&self) -> &Context {
        &self.shared
    }

    fn failures(&self) -> &Failures {
        &self.failures
    }
}

/// Ensures the ClusterAddon of one Cluster.
pub async fn reconcile(
    cluster: Arc<DynamicObject>,
    controller: Arc<ClusterController>,
) -> Result<Action, Error> {
    let ctx = &controller.shared;
    let started = std::time::Instant::now();
    let result = ensure_addon(&cluster, ctx, &controller.addons).await;
    let error = result.as_ref().err().map(Error::metric_label);
    ctx.metrics.reconciled(CONTROLLER, started.elapsed(), error);
    result
}

pub fn error_policy(
    cluster: Arc<DynamicObject>,
    error: &Error,
    controller: Arc<ClusterController>,
) -> Action {
    let key = format!(
        "Cluster/{}/{}",
        cluster.namespace().unwrap_or_default(),
        cluster.name_any()
    );
    super::requeue_after_error(&controller.failures, &key, error)
}

/// What the ClusterAddon store says of one ClusterAddon.
enum Stored {
    Has(Arc<ClusterAddon>),
    /// The store has synced and holds none.
    Absent,
    /// The store has not synced yet: ask the API server.
    Unknown,
}

/// ClusterAddon `name` of `namespace` as `store` has it.
fn stored(store: &Store<ClusterAddon>, namespace: &str, name: &str) -> Stored {
    if !crate::management::synced(store) {
        return Stored::Unknown;
    }
    match store.get(&ObjectRef::new(name).within(namespace)) {
        Some(addon) => Stored::Has(addon),
        None => Stored::Absent,
    }
}

async fn ensure_addon(
    cluster: &DynamicObject,
    ctx: &Context,
    addons: &Store<ClusterAddon>,
) -> Result<Action, Error> {
    if cluster.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let usage = ClusterUse::of(cluster);
    let Some(class) = usage.class.filter(|c| ReleaseTag::parse_cluster_class(c).is_ok()) else {
        return Ok(Action::await_change());
    };
    let namespace = usage.namespace.clone();
    let name = addon_name(&usage.name);
    let api: Api<ClusterAddon> = Api::namespaced(ctx.client.clone(), &namespace);
    let read = || async {
        api.get_opt(&name)
            .await
            .map_err(|e| Error::kube(format!("reading ClusterAddon {namespace}/{name}"), e))
    };
    let existing = match stored(addons, &namespace, &name) {
        Stored::Has(addon) => Some(addon),
        Stored::Absent => None,
        Stored::Unknown => read().await?.map(Arc::new),
    };
    match existing {
        Some(addon) => follow(&api, cluster, &addon, &class).await?,
        None => {
            let addon = ClusterAddon {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    namespace: Some(namespace.clone()),
                    labels: Some(crate::shard::with_owner_shard(
                        name_label(&usage.name),
                        &cluster.metadata,
                    )),
                    owner_references: Some(vec![OwnerReference {
                        api_version: crate::clusters::api_version(),
                        kind: "Cluster".into(),
                        name: usage.name.clone(),
                        uid: cluster.uid().unwrap_or_default(),
                        controller: Some(true),
                        block_owner_deletion: Some(true),
                    }]),
                    ..ObjectMeta::default()
                },
                spec: ClusterAddonSpec {
                    cluster_stack: Some(class.clone()),
                    version: None,
                    hook: None,
                    cluster_ref: ObjectReference {
                        api_version: Some(crate::clusters::api_version()),
                        kind: Some("Cluster".into()),
                        name: Some(usage.name.clone()),
                        namespace: Some(namespace.clone()),
                        uid: cluster.uid(),
                        ..ObjectReference::default()
                    },
                },
                status: None,
            };
            match api.create(&PostParams::default(), &addon).await {
                Ok(_) => {}
                // Made meanwhile (the store had not seen it yet): it follows the Cluster too.
                Err(e) if crate::kube_error::is_conflict(&e) => {
                    if let Some(addon) = read().await? {
                        follow(&api, cluster, &addon, &class).await?;
                    }
                    return Ok(Action::await_change());
                }
                Err(e) => {
                    return Err(Error::kube(
                        format!("creating ClusterAddon {namespace}/{name}"),
                        e,
                    ));
                }
            }
            tracing::info!(cluster = %usage.name, %namespace, %class, "ClusterAddon created");
        }
    }
    Ok(Action::await_change())
}

/// The label of a ClusterAddon that names its Cluster (`cluster.x-k8s.io/cluster-name`, as
/// Cluster API labels a Cluster's objects and the cluster-stack operator its ClusterAddons):
/// `-l cluster.x-k8s.io/cluster-name=NAME` selects it.
fn name_label(cluster: &str) -> std::collections::BTreeMap<String, String> {
    [(CLUSTER_NAME_LABEL.to_string(), cluster.to_string())].into()
}

/// The merge patch that labels `addon` with the name of `cluster` when it lacks the label (a
/// ClusterAddon made before capstan labelled them), or `None`.
fn name_label_patch(cluster: &str, addon: &ObjectMeta) -> Option<serde_json::Value> {
    let has = addon.labels.as_ref().and_then(|l| l.get(CLUSTER_NAME_LABEL));
    (has.map(String::as_str) != Some(cluster))
        .then(|| serde_json::json!({"metadata": {"labels": {CLUSTER_NAME_LABEL: cluster}}}))
}

/// Makes `addon` follow its Cluster's class and shard (a relabelled Cluster hands its
/// ClusterAddon to the new shard's operator) and carry its Cluster's name label: a merge patch
/// of what differs, none when nothing does.
async fn follow(
    api: &Api<ClusterAddon>,
    cluster: &DynamicObject,
    addon: &ClusterAddon,
    class: &str,
) -> Result<(), Error> {
    let mut patch = crate::shard::follow_owner(&cluster.metadata, &addon.metadata)
        .unwrap_or_else(|| serde_json::json!({}));
    if let Some(name) = addon.spec.cluster_ref.name.as_deref()
        && let Some(label) = name_label_patch(name, &addon.metadata)
    {
        merge(&mut patch, label);
    }
    if addon.spec.cluster_stack.as_deref() != Some(class) {
        patch["spec"] = serde_json::json!({"clusterStack": class});
    }
    if patch != serde_json::json!({}) {
        let name = addon.name_any();
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| {
                let namespace = addon.namespace().unwrap_or_default();
                Error::kube(format!("updating ClusterAddon {namespace}/{name}"), e)
            })?;
    }
    Ok(())
}

/// `patch` with `more` merged in (objects key by key).
fn merge(patch: &mut serde_json::Value, more: serde_json::Value) {
    match (patch, more) {
        (serde_json::Value::Object(into), serde_json::Value::Object(from)) => {
            for (key, value) in from {
                merge(into.entry(key).or_insert(serde_json::Value::Null), value);
            }
        }
        (slot, value) => *slot = value,
    }
}

/// Clusters: each one on a stack class gets its ClusterAddon, made again when it is deleted
/// on its own, and set again when its spec or shard changes (its owner reference wakes the
/// Cluster; the ClusterAddon's status writes do not). The controller reads the ClusterAddons
/// from their store: a change it made that the store had not seen yet when it looked wakes it
/// again once the store has it.
pub fn controller(wiring: &Wiring<'_>) -> Running {
    let cluster_resource = crate::clusters::cluster_key();
    let mut fleet = wiring.fleet();
    let changed_addons = changed(
        fleet.addons_of(&wiring.scope),
        spec_or_deletion::<ClusterAddon>,
        true,
    );
    let cluster_events = changed(fleet.clusters_of(&wiring.scope), cluster_trigger, false);
    Controller::for_stream_with(
        cluster_events,
        wiring.ctx.management.cluster_store(),
        cluster_resource,
    )
    // Owned by a Cluster of either version (a version switch keeps the older ones' owner
    // references).
    .watches_stream(changed_addons, |addon: ClusterAddon| {
        crate::clusters::owner_cluster(&addon)
    })
    .with_config(wiring.concurrency.clone())
    .graceful_shutdown_on(wiring.shutdown.clone())
    .run(
        in_scope(reconcile, &wiring.scope),
        error_policy,
        Arc::new(ClusterController::new(
            wiring.ctx.clone(),
            fleet.addons_store.clone(),
        )),
    )
    .for_each(|_| futures::future::ready(()))
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clusteraddon_without_its_clusters_name_label_gets_it() {
        let meta = |labels: &[(&str, &str)]| ObjectMeta {
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..ObjectMeta::default()
        };
        let want = serde_json::json!({"metadata": {"labels": {CLUSTER_NAME_LABEL: "c1"}}});
        assert_eq!(name_label_patch("c1", &ObjectMeta::default()), Some(want.clone()));
        assert_eq!(
            name_label_patch("c1", &meta(&[("other", "x")])),
            Some(want.clone())
        );
        assert_eq!(
            name_label_patch("c1", &meta(&[(CLUSTER_NAME_LABEL, "c2")])),
            Some(want)
        );
        assert_eq!(name_label_patch("c1", &meta(&[(CLUSTER_NAME_LABEL, "c1")])), None);
    }

    #[test]
    fn patches_merge_key_by_key() {
        let mut patch = serde_json::json!({"metadata": {"labels": {"shard": "a"}}});
        merge(
            &mut patch,
            serde_json::json!({"metadata": {"labels": {"name": "c1"}}}),
        );
        merge(&mut patch, serde_json::json!({"spec": {"clusterStack": "x"}}));
        assert_eq!(
            patch,
            serde_json::json!({"metadata": {"labels": {"shard": "a", "name": "c1"}}, "spec": {"clusterStack": "x"}})
        );
    }
}
