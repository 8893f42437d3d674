//! The ClusterStackRollout controller: the I/O around the pure decision [`crate::rollout::plan`].
//!
//! One reconcile observes (the rollout, the target its `spec.version` resolves to among the
//! stack's ClusterStackReleases, the Clusters of its namespace and those whose
//! `classNamespace` names it, their ClusterAddons and, for Clusters in flight only, their
//! control plane's version and the `health.checks` on the workload cluster), plans, writes
//! the planned status with optimistic concurrency — a conflict re-reads and re-plans — and
//! only then acts: switches or rolls back Clusters (see [`act`]), publishes the plan's
//! Events and requeues as the plan says. So a killed operator finds `from`/`fromVersion`
//! recorded before any switch, and never switches a Cluster twice (each patch also tests
//! the class it expects to replace).

pub mod act;
mod observe;
pub mod preflight;
pub mod stacks;
pub mod target;

pub use observe::{APPROVE_ANNOTATION, RESUME_ANNOTATION};

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, DynamicObject};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};

use super::Error;
use super::failures::Failures;
use crate::api::rollout::ClusterStackRollout;
use crate::api::{ClusterAddon, ClusterStackRelease};
use crate::context::Context;
use crate::watch::{Events, Scope, changed, objects, watch_all};
use observe::Fleet;

pub const CONTROLLER: &str = "rollout";

/// How often a rollout with Clusters in flight is looked at again when nothing wakes it
/// (control planes and workload checks are not watched), at most.
const IN_FLIGHT_POLL: Duration = Duration::from_secs(10);

/// Attempts of one reconcile to write its status when others write in between.
const STATUS_ATTEMPTS: usize = 4;

/// The Clusters and ClusterAddons of every shard in the scope, as the process watches them
/// once for all its controllers (`crate::fan_out`): their stores and events.
pub struct Watched {
    pub clusters: Store<DynamicObject>,
    pub cluster_events: Events<DynamicObject>,
    pub addons: Store<ClusterAddon>,
    pub addon_events: Events<ClusterAddon>,
}

/// ClusterStackRollouts, on the Clusters and ClusterAddons the process watches (see [`run`]).
pub fn controller(wiring: &crate::wiring::Wiring<'_>) -> crate::wiring::Running {
    let mut fleet = wiring.fleet();
    let watched = Watched {
        clusters: wiring.ctx.management.cluster_store(),
        cluster_events: fleet.clusters(),
        addons: fleet.addons_store.clone(),
        addon_events: fleet.addons(),
    };
    drop(fleet);
    Box::pin(run(
        wiring.client.clone(),
        wiring.scope.clone(),
        watched,
        wiring.ctx.clone(),
        wiring.concurrency.clone(),
        wiring.shutdown.clone(),
    ))
}

/// The rollout controller with its watches, until `shutdown`.
pub async fn run(
    client: Client,
    scope: Scope,
    watched: Watched,
    shared: Arc<Context>,
    config: controller::Config,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let watch_config = watcher::Config::default().any_semantic();
    let (rollouts, rollouts_writer) = reflector::store();
    let rollout_events = changed(
        watch_all(
            scope.apis::<ClusterStackRollout>(&client),
            objects(scope.sharded(watch_config.clone())),
        )
        .reflect(rollouts_writer),
        rollout_trigger,
        false,
    );

    let cluster_resource = crate::clusters::cluster_key();
    let Watched {
        clusters,
        cluster_events,
        addons,
        addon_events,
    } = watched;
    let cluster_changes = changed(cluster_events, observe::cluster_trigger, true);
    let addon_changes = changed(addon_events, observe::addon_trigger, false);
    let (releases, releases_writer) = reflector::store();
    let release_changes = changed(
        watch_all(
            scope.apis::<ClusterStackRelease>(&client),
            objects(watch_config.clone()),
        )
        .reflect(releases_writer),
        release_trigger,
        true,
    );

    let fleet = Arc::new(Fleet {
        clusters: clusters.clone(),
        addons,
        releases,
        scope: scope.clone(),
        preflight: Default::default(),
    });
    let for_clusters = (rollouts.clone(), clusters.clone());
    let for_addons = (rollouts.clone(), clusters.clone());
    let for_releases = rollouts.clone();
    let reconciler = Arc::new(RolloutController {
        shared,
        failures: Failures::default(),
        fleet,
    });
    Controller::for_stream(rollout_events, rollouts)
        .watches_stream_with(
            cluster_changes,
            move |cluster: DynamicObject| {
                let (namespace, class_namespace) = observe::namespaces_of(&cluster);
                rollouts_in(&for_clusters.0, &[namespace, class_namespace])
            },
            cluster_resource,
        )
        .watches_stream(addon_changes, move |addon: ClusterAddon| {
            let namespace = addon.namespace().unwrap_or_default();
            // The Cluster's classNamespace names the rollout's namespace when it is another.
            let cluster = addon.spec.cluster_ref.name.clone().unwrap_or_default();
            let class_namespace = for_addons
                .1
                .get(&ObjectRef::new_with(&cluster, crate::clusters::cluster_key()).within(&namespace))
                .map(|c| observe::namespaces_of(&c).1)
                .unwrap_or_else(|| namespace.clone());
            rollouts_in(&for_addons.0, &[namespace, class_namespace])
        })
        .watches_stream(release_changes, move |release: ClusterStackRelease| {
            rollouts_in(&for_releases, &[release.namespace().unwrap_or_default()])
        })
        // Cluster API served again (or another version): each waits no longer.
        .reconcile_all_on(crate::capi_api::chosen_anew())
        .with_config(config)
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, reconciler)
        .for_each(|_| futures::future::ready(()))
        .await;
}

/// The rollouts of the store in any of `namespaces`.
fn rollouts_in(
    store: &Store<ClusterStackRollout>,
    namespaces: &[String],
) -> Vec<ObjectRef<ClusterStackRollout>> {
    store
        .state()
        .iter()
        .filter(|r| {
            r.metadata
                .namespace
                .as_ref()
                .is_some_and(|ns| namespaces.contains(ns))
        })
        .map(|r| ObjectRef::from_obj(r.as_ref()))
        .collect()
}

/// What wakes a rollout about itself: its spec, its annotations (approve, resume), its
/// deletion, the object itself; its own status writes do not.
fn rollout_trigger(rollout: &ClusterStackRollout) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let meta = rollout.meta();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    meta.generation.hash(&mut hasher);
    meta.annotations.hash(&mut hasher);
    meta.deletion_timestamp.is_some().hash(&mut hasher);
    meta.uid.hash(&mut hasher);
    crate::shard::key_of(meta).hash(&mut hasher);
    Some(hasher.finish())
}

/// A release wakes the rollouts of its namespace when it turns ready (or not) or reports
/// its Kubernetes version.
fn release_trigger(release: &ClusterStackRelease) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let status = release.status.as_ref();
    status.map(|s| s.ready).hash(&mut hasher);
    status
        .and_then(|s| s.kubernetes_version.clone())
        .hash(&mut hasher);
    release.metadata.deletion_timestamp.is_some().hash(&mut hasher);
    Some(hasher.finish())
}

/// The rollout controller's state: the shared context, its failures and the fleet it watches.
pub struct RolloutController {
    shared: Arc<Context>,
    failures: Failures,
    fleet: Arc<Fleet>,
}

impl super::Reconciler for RolloutController {
    fn shared(&self) -> &Context {
        &self.shared
    }

    fn failures(&self) -> &Failures {
        &self.failures
    }
}

/// Reconciles one rollout: observe, plan, record, act.
pub async fn reconcile(
    rollout: Arc<ClusterStackRollout>,
    controller: Arc<RolloutController>,
) -> Result<Action, Error> {
    let (ctx, fleet) = (&controller.shared, &controller.fleet);
    if !fleet.scope.admits(rollout.meta()) || rollout.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    // Without a Cluster API to read the Cluster store never syncs: said as an error (an
    // Event, the error counter, the controller's backoff), not waited on in silence.
    let result = match crate::capi_api::not_served() {
        Some(why) => {
            let cause = super::error::Cause::ClusterApiNotServed(why);
            let api: Api<ClusterStackRollout> =
                Api::namespaced(ctx.client.clone(), &rollout.namespace().unwrap_or_default());
            // A condition too; a conflict (the store behind) is written on the next retry.
            if let Err(error) = act::record_blocked(
                &api,
                &rollout,
                crate::capi_api::NOT_SERVED_REASON,
                &cause.to_string(),
            )
            .await
            {
                tracing::debug!(%error, "recording that Cluster API is not served");
            }
            Err(Error::step("Observe", crate::capi_api::NOT_SERVED_REASON, cause))
        }
        None => Ok(()),
    };
    if result.is_ok() && !fleet.synced().await {
        return Ok(Action::requeue(Duration::from_secs(1)));
    }
    let started = std::time::Instant::now();
    let result = match result {
        Ok(()) => step(&rollout, ctx, fleet).await,
        Err(error) => Err(error),
    };
    let error = result.as_ref().err();
    ctx.metrics
        .reconciled(CONTROLLER, started.elapsed(), error.map(Error::metric_label));
    super::reconciled(controller.as_ref(), rollout.as_ref(), error).await;
    result
}

pub use super::error_policy;

/// One pass. The rollout is read again from the API server first: the store may lag behind
/// this controller's own last status write, and a plan on an old status would only conflict.
async fn step(rollout: &ClusterStackRollout, ctx: &Context, fleet: &Fleet) -> Result<Action, Error> {
    let namespace = rollout.namespace().unwrap_or_default();
    let name = rollout.name_any();
    let api: Api<ClusterStackRollout> = Api::namespaced(ctx.client.clone(), &namespace);
    for _ in 0..STATUS_ATTEMPTS {
        let Some(current) = api
            .get_opt(&name)
            .await
            .map_err(|e| Error::kube(format!("reading ClusterStackRollout {namespace}/{name}"), e))?
        else {
            return Ok(Action::await_change());
        };
        if current.metadata.deletion_timestamp.is_some() {
            return Ok(Action::await_change());
        }
        let observed = observe::observe(&current, ctx, fleet).await?;
        let plan = crate::rollout::plan(&observed.as_input(&current));
        match act::record(&api, &current, &plan).await? {
            act::Recorded::Conflict => continue,
            act::Recorded::Written | act::Recorded::Unchanged => {}
        }
        act::publish_events(ctx, &current, &plan).await;
        act::apply_actions(ctx, &current, &plan).await?;
        let in_flight = observe::in_flight(&plan.status).next().is_some();
        let requeue = match (plan.requeue_after, in_flight) {
            (Some(after), true) => Some(after.min(IN_FLIGHT_POLL)),
            (Some(after), false) => Some(after),
            (None, true) => Some(IN_FLIGHT_POLL),
            (None, false) => None,
        };
        return Ok(requeue.map_or_else(Action::await_change, Action::requeue));
    }
    // Others kept writing: the next event (or this requeue) tries again.
    Ok(Action::requeue(Duration::from_secs(1)))
}
