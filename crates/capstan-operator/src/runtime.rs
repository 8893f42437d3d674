//! The operator process: the controllers with their watches, started under leader election,
//! next to the health, metrics and webhook servers; all stop on the shutdown signal, letting
//! running reconciles finish.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures::future::{FutureExt, Shared};
use futures::{StreamExt, TryStreamExt};
use kube::api::DynamicObject;
use kube::runtime::controller::{self, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::utils::WatchStreamExt;
use kube::runtime::{reflector, watcher};
use kube::{Client, Resource};

use super::api::{ClusterAddon, ClusterStack, ClusterStackRelease};
use super::context::Context;
use super::controller::cluster::ClusterController;
use super::controller::cluster_addon::AddonController;
use super::controller::cluster_stack::StackController;
use super::controller::cluster_stack_release::ReleaseController;
use super::controller::{cluster, cluster_addon, cluster_stack, cluster_stack_release, rollout};
use super::controllers::ControllerKind;
use super::fan_out::FanOut;
use super::http::{self, Health};
use super::leader;
use super::metrics::Metrics;
use super::settings::Settings;
use super::sources::Sources;
use super::watch::{
    CLUSTER_NAME_LABEL, Events, Scope, capi_watch, changed, cluster_trigger, describe, kubeconfig_addon,
    kubeconfig_secrets, objects, watch_all,
};
use capstan_apply::ssa::{INVENTORY_ANNOTATION, MANAGED, MANAGED_LABEL};
use capstan_source::cache::Cache;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};

/// A future every task of the process can wait on: resolves once, on shutdown.
pub type Shutdown = Shared<Pin<Box<dyn Future<Output = ()> + Send>>>;

/// Makes a [`Shutdown`] from a future (e.g. the SIGTERM/SIGINT wait).
pub fn shutdown_on(signal: impl Future<Output = ()> + Send + 'static) -> Shutdown {
    let boxed: Pin<Box<dyn Future<Output = ()> + Send>> = Box::pin(signal);
    boxed.shared()
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("release cache {path}: {message}")]
    Cache { path: String, message: String },
    #[error("{0}")]
    Server(String),
    #[error("leadership lost: another replica holds the lease now")]
    LostLeadership,
}

/// Runs the operator until `shutdown` resolves: the health and metrics servers at once, the
/// controllers while this process leads (always, without leader election). Losing the lease
/// stops the controllers and ends the run with [`RunError::LostLeadership`], so the process
/// exits and restarts as a follower.
pub async fn run(
    client: Client,
    settings: Settings,
    metrics: Arc<Metrics>,
    shutdown: Shutdown,
) -> Result<(), RunError> {
    let health = Health::new();
    if let Some(addr) = settings.health_addr {
        let listener = http::bind(addr)
            .await
            .map_err(|e| RunError::Server(format!("health server on {addr}: {e}")))?;
        tokio::spawn(http::serve_health_on(listener, health.clone(), shutdown.clone()));
    }
    if let Some(addr) = settings.metrics_addr {
        let listener = http::bind(addr)
            .await
            .map_err(|e| RunError::Server(format!("metrics server on {addr}: {e}")))?;
        tokio::spawn(http::serve_metrics_on(
            listener,
            metrics.clone(),
            shutdown.clone(),
        ));
    }

    // Every replica answers admission requests, leader or not.
    if let Some(webhook) = settings.webhook.clone() {
        let addr = webhook.addr;
        let client = client.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            if let Err(e) = super::webhook::server::serve(webhook, client, shutdown).await {
                tracing::error!(%addr, error = %e, "the webhook server stopped");
            }
        });
    }

    // Every replica answers Runtime SDK hooks too: their state is in the ClusterAddons.
    if let Some(hooks) = settings.hooks.clone() {
        let cert = match hooks.cert_dir {
            Some(dir) => super::webhook::Certificate::Files(dir),
            None => super::webhook::Certificate::Generated(
                super::webhook::generate(&hooks.hosts)
                    .map_err(|e| RunError::Server(format!("runtime hooks certificate: {e}")))?,
            ),
        };
        let (addr, timeout) = (hooks.addr, hooks.upgrade_timeout);
        let client = client.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            if let Err(e) = super::hooks::serve(addr, cert, client, timeout, shutdown).await {
                tracing::error!(%addr, error = %e, "the runtime hooks server stopped");
            }
        });
    }

    let mut leadership = match &settings.leader_election {
        None => None,
        Some(election) => {
            health.set_not_ready(format!(
                "waiting to lead (Lease {}/{})",
                election.namespace, election.lease_name
            ));
            tokio::select! {
                led = leader::acquire(client.clone(), election) => {
                    tracing::info!(lease = %election.lease_name, identity = %election.identity, "leading");
                    Some(led.map_err(|e| RunError::Server(e.to_string()))?)
                }
                () = shutdown.clone() => return Ok(()),
            }
        }
    };

    // The controllers stop on shutdown or when the lease is lost.
    let (lost_tx, lost_rx) = tokio::sync::oneshot::channel::<()>();
    let outer = shutdown.clone();
    let stop = shutdown_on(async move {
        tokio::select! {
            () = outer => {}
            _ = lost_rx => {}
        }
    });
    metrics.leading(true);
    let controllers = run_controllers(client, &settings, metrics, stop, health.clone());
    tokio::pin!(controllers);
    let lost = async {
        match leadership.as_mut() {
            Some(leading) => leading.lost().await,
            None => futures::future::pending().await,
        }
    };
    let mut lost_lease = false;
    tokio::select! {
        result = &mut controllers => result?,
        () = lost => {
            tracing::error!("leadership lost: stopping the controllers");
            lost_lease = true;
            health.set_not_ready("leadership lost");
            let _ = lost_tx.send(());
            controllers.await?;
        }
    }
    if lost_lease {
        return Err(RunError::LostLeadership);
    }
    if let Some(leading) = leadership {
        leading.release().await;
    }
    Ok(())
}

/// Runs the controllers until `stop` resolves; `health` turns ready once their caches are.
async fn run_controllers(
    client: Client,
    settings: &Settings,
    metrics: Arc<Metrics>,
    stop: Shutdown,
    health: Arc<Health>,
) -> Result<(), RunError> {
    let cache = Cache::open(&settings.cache_dir).map_err(|e| RunError::Cache {
        path: settings.cache_dir.display().to_string(),
        message: e.to_string(),
    })?;
    let sources =
        Sources::new(cache, Some(metrics.github_observer())).with_oci_observer(metrics.oci_observer());
    let scope = Scope {
        namespaces: settings.namespaces.clone(),
        shard: settings.shard.clone(),
    };
    let watch_config = watcher::Config::default().any_semantic();
    // ClusterStacks: their store serves every source lookup (a Cluster of this shard may use
    // a stack of another), so it holds all of them; only this shard's wake the controller.
    let (stacks, stacks_writer) = reflector::store();
    let trigger_scope = scope.clone();
    let stack_events = watch_all(scope.apis::<ClusterStack>(&client), objects(watch_config.clone()))
        .reflect(stacks_writer)
        .map_ok(move |event| trigger_scope.as_seen_by_trigger(event));
    let stack_events = changed(stack_events, spec_or_deletion::<ClusterStack>, false);
    // The Cluster API version spoken: discovered before any watch starts, then followed.
    super::capi_api::start(&client, &metrics, stop.clone()).await;
    let ctx = Arc::new(Context::new(
        client.clone(),
        settings.clone(),
        sources,
        metrics,
        stacks.clone(),
    ));
    let wiring = Wiring {
        sharded: scope.sharded(watch_config.clone()),
        concurrency: controller::Config::default().concurrency(settings.concurrency),
        client,
        settings,
        scope,
        ctx,
        shutdown: stop,
    };
    // The fleet's series read the releases' and ClusterAddons' stores of their controllers.
    let (releases_store, releases_writer) = reflector::store();
    let runs = |kind| settings.controllers.runs(kind);
    let releases = runs(ControllerKind::ClusterStackRelease)
        .then(|| Arc::new(ReleaseController::new(wiring.ctx.clone())));
    let addons = Arc::new(AddonController::new(wiring.ctx.clone()));
    let mut fleet = FleetWatches::new(&wiring, &watch_config, runs(ControllerKind::Rollout));
    observe_fleet(
        &wiring,
        releases.as_ref(),
        &addons,
        &releases_store,
        &fleet.addons_store,
    );

    let mut controllers = vec![
        // Without its controller the ClusterStacks' store still serves source lookups.
        stack_controller(&wiring, stack_events, stacks, runs(ControllerKind::ClusterStack)),
        match releases {
            Some(controller) => release_controller(&wiring, controller, releases_store, releases_writer),
            None => futures::future::ready(()).boxed(),
        },
    ];
    if runs(ControllerKind::Cluster) {
        controllers.push(cluster_controller(&wiring, &mut fleet));
    }
    if runs(ControllerKind::ClusterAddon) {
        controllers.push(addon_controller(&wiring, addons, &mut fleet));
    }
    if runs(ControllerKind::Rollout) {
        controllers.push(rollout_controller(&wiring, &mut fleet));
    }
    // Started last: every consumer is taken.
    controllers.extend(fleet.run(&wiring.shutdown));
    tracing::info!(
        scope = %describe(&wiring.scope),
        drift_interval = ?settings.drift_interval,
        controllers = %settings.controllers,
        "controllers started"
    );
    // Ready once the controllers run (and, with leader election, this process leads); a
    // reconcile that finds its cache incomplete requeues instead of deciding.
    health.set_ready(true);
    futures::future::join_all(controllers).await;
    tracing::info!("controllers stopped");
    Ok(())
}

/// The fleet's series: the stores of the stacks, releases and ClusterAddons, and the census
/// of the workload cluster cache and of the release controller's drift watches (none without
/// that controller).
fn observe_fleet(
    wiring: &Wiring<'_>,
    releases: Option<&Arc<ReleaseController>>,
    addons: &AddonController,
    releases_store: &reflector::Store<ClusterStackRelease>,
    addons_store: &reflector::Store<ClusterAddon>,
) {
    let ctx = &wiring.ctx;
    let scope = wiring.scope.clone();
    let shared = Arc::downgrade(ctx);
    let release_watches = releases.map(Arc::downgrade);
    let addon_checks = addons.drift.checks();
    ctx.metrics.observe_fleet(super::metrics::Fleet {
        stacks: ctx.stacks.clone(),
        releases: releases_store.clone(),
        addons: addons_store.clone(),
        // The store may hold other shards' ClusterAddons too (with the rollout controller):
        // each shard's series are its own.
        admits: Box::new(move |addon| scope.admits(addon.meta())),
        census: Box::new(move || {
            let shared = shared.upgrade()?;
            let management_watches = release_watches
                .as_ref()
                .and_then(|weak| weak.upgrade())
                .map_or(0, |releases| releases.watches.watch_count());
            Some(super::metrics::Census {
                management_watches,
                addon_checks: addon_checks(),
                ..shared.workloads.census()
            })
        }),
    });
}

/// The Clusters and ClusterAddons, each watched once for the process ([`FanOut`]): the
/// Cluster store is the management's ([`Management::reflect_clusters`] fills it), the
/// ClusterAddon store serves the ClusterAddon controller, the fleet's series and the
/// rollouts. The rollout controller looks at every shard's Clusters, so with it the watches
/// cover every shard and each sharded controller narrows them to its own
/// ([`Scope::narrow`]); without it they are the shard's.
///
/// [`Management::reflect_clusters`]: super::management::Management::reflect_clusters
struct FleetWatches {
    clusters: FanOut<DynamicObject>,
    addons: FanOut<ClusterAddon>,
    addons_store: reflector::Store<ClusterAddon>,
    /// Whether the watches cover every shard (with the rollout controller).
    every_shard: bool,
}

impl FleetWatches {
    fn new(wiring: &Wiring<'_>, unsharded: &watcher::Config, every_shard: bool) -> FleetWatches {
        let config = if every_shard {
            unsharded.clone()
        } else {
            wiring.sharded.clone()
        };
        let cluster_of = super::capi_api::cluster_resource_of;
        let clusters = capi_watch(&wiring.client, &wiring.scope, cluster_of, config.clone());
        let (addons_store, addons_writer) = reflector::store();
        let addons = watch_all(wiring.scope.apis::<ClusterAddon>(&wiring.client), objects(config))
            .reflect(addons_writer);
        FleetWatches {
            clusters: FanOut::new("Clusters", wiring.ctx.management.reflect_clusters(clusters)),
            addons: FanOut::new("ClusterAddons", addons.boxed()),
            addons_store,
            every_shard,
        }
    }

    /// The Clusters' events for a controller of `scope`.
    fn clusters_of(&mut self, scope: &Scope) -> Events<DynamicObject> {
        let events = self.clusters.consumer();
        self.narrowed(scope, events)
    }

    /// The ClusterAddons' events for a controller of `scope`.
    fn addons_of(&mut self, scope: &Scope) -> Events<ClusterAddon> {
        let events = self.addons.consumer();
        self.narrowed(scope, events)
    }

    /// `events` as a watch of `scope` shows them: narrowed only when the watches are wider.
    fn narrowed<K: Resource + Send + 'static>(&self, scope: &Scope, events: Events<K>) -> Events<K> {
        if self.every_shard {
            scope.narrow(events)
        } else {
            events
        }
    }

    /// The watches some controller consumes, until `stop`; the others are not started
    /// (`--controllers` without the Cluster, ClusterAddon and rollout controllers).
    fn run(self, stop: &Shutdown) -> Vec<Running> {
        let mut running = Vec::new();
        if self.clusters.consumed() {
            running.push(self.clusters.run(stop.clone()));
        }
        if self.addons.consumed() {
            running.push(self.addons.run(stop.clone()));
        }
        running
    }
}

/// What every controller of a run is built from.
struct Wiring<'a> {
    client: Client,
    settings: &'a Settings,
    /// The namespaces and shard this process reconciles.
    scope: Scope,
    /// The watch of the kinds split by shard.
    sharded: watcher::Config,
    ctx: Arc<Context>,
    concurrency: controller::Config,
    shutdown: Shutdown,
}

/// A controller running until the shutdown.
type Running = futures::future::BoxFuture<'static, ()>;

impl Wiring<'_> {
    /// The ClusterStackReleases of this process' shard, as watched.
    fn releases(
        &self,
    ) -> impl futures::Stream<Item = Result<watcher::Event<ClusterStackRelease>, watcher::Error>> + Send + use<>
    {
        watch_all(
            self.scope.apis::<ClusterStackRelease>(&self.client),
            objects(self.sharded.clone()),
        )
    }
}

/// ClusterStacks, woken by their releases; without the controller (`runs` false) the
/// stacks' watch only fills `stacks`.
fn stack_controller(
    wiring: &Wiring<'_>,
    stack_events: futures::stream::BoxStream<'static, Result<ClusterStack, watcher::Error>>,
    stacks: reflector::Store<ClusterStack>,
    runs: bool,
) -> Running {
    if !runs {
        let stop = wiring.shutdown.clone();
        return async move {
            tokio::select! {
                () = stack_events.for_each(|_| futures::future::ready(())) => {}
                () = stop => {}
            }
        }
        .boxed();
    }
    Controller::for_stream(stack_events, stacks)
        .owns_stream(wiring.releases().touched_objects())
        .with_config(wiring.concurrency.clone())
        .graceful_shutdown_on(wiring.shutdown.clone())
        .run(
            in_scope(cluster_stack::reconcile, &wiring.scope),
            cluster_stack::error_policy,
            Arc::new(StackController::new(wiring.ctx.clone())),
        )
        .for_each(|_| futures::future::ready(()))
        .boxed()
}

/// ClusterStackReleases, woken by drift of what they applied.
fn release_controller(
    wiring: &Wiring<'_>,
    controller: Arc<ReleaseController>,
    releases_store: reflector::Store<ClusterStackRelease>,
    releases_writer: reflector::store::Writer<ClusterStackRelease>,
) -> Running {
    // A release that left the watch (deleted, its finalizer gone, or moved to another shard
    // or namespace) stops its drift watches: no reconcile of it will.
    let gone = controller.clone();
    let release_events = changed(
        wiring
            .releases()
            .reflect(releases_writer)
            .inspect_ok(move |event| {
                if let watcher::Event::Delete(release) = event {
                    gone.watches.stop(&ObjectRef::from_obj(release));
                }
            }),
        spec_or_deletion::<ClusterStackRelease>,
        false,
    );
    // A key only (no request): the watch follows the Cluster API version spoken.
    let class_resource =
        super::capi_api::cluster_class_resource_of(capstan_stack::capi::CapiVersion::V1Beta2);
    // With drift watches the ClusterClass is one of the kinds each release's watches follow,
    // and they tell capstan's own applies from drift; this watch, which marks its release on
    // any change, is the mechanism only without them.
    let applied_classes = if wiring.settings.drift_watches {
        futures::stream::empty().boxed()
    } else {
        let managed = watcher::Config::default().labels(&format!("{MANAGED_LABEL}={MANAGED}"));
        let class_of = super::capi_api::cluster_class_resource_of;
        capi_watch(&wiring.client, &wiring.scope, class_of, managed)
            .touched_objects()
            .boxed()
    };
    let suspects = controller.clone();
    Controller::for_stream(release_events, releases_store)
        .watches_stream_with(
            applied_classes,
            move |class: DynamicObject| {
                let owner = release_of_applied(&class);
                if let Some(release) = &owner {
                    suspects.drift.suspect(release.clone());
                }
                owner
            },
            class_resource,
        )
        // Drift watches on the releases' objects wake their release.
        .reconcile_on(controller.drift.wake_ups())
        .with_config(wiring.concurrency.clone())
        .graceful_shutdown_on(wiring.shutdown.clone())
        .run(
            in_scope(cluster_stack_release::reconcile, &wiring.scope),
            cluster_stack_release::error_policy,
            controller,
        )
        .for_each(|_| futures::future::ready(()))
        .boxed()
}

/// Clusters: each one on a stack class gets its ClusterAddon, made again when it is deleted
/// on its own, and set again when its spec or shard changes (its owner reference wakes the
/// Cluster; the ClusterAddon's status writes do not). The controller reads the ClusterAddons
/// from their store: a change it made that the store had not seen yet when it looked wakes it
/// again once the store has it.
fn cluster_controller(wiring: &Wiring<'_>, fleet: &mut FleetWatches) -> Running {
    let cluster_resource = super::clusters::cluster_key();
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
        super::clusters::owner_cluster(&addon)
    })
    .with_config(wiring.concurrency.clone())
    .graceful_shutdown_on(wiring.shutdown.clone())
    .run(
        in_scope(cluster::reconcile, &wiring.scope),
        cluster::error_policy,
        Arc::new(ClusterController::new(
            wiring.ctx.clone(),
            fleet.addons_store.clone(),
        )),
    )
    .for_each(|_| futures::future::ready(()))
    .boxed()
}

/// ClusterAddons, woken by their Cluster (class, version, controlPlaneReady, deletion) and
/// its kubeconfig Secret, so work starts as soon as a gate opens; by user values and by
/// drift on their workload cluster.
fn addon_controller(
    wiring: &Wiring<'_>,
    controller: Arc<AddonController>,
    fleet: &mut FleetWatches,
) -> Running {
    let ctx = &wiring.ctx;
    let addons_store = fleet.addons_store.clone();
    let user_values = user_value_changes(&wiring.client, &wiring.scope, &addons_store);
    let secret_ctx = ctx.clone();
    let addon_events = changed(
        fleet.addons_of(&wiring.scope),
        spec_or_deletion::<ClusterAddon>,
        false,
    );
    // The woken pass reads the Cluster (and its kubeconfig Secret) from the stores these
    // watches fill before they wake it.
    let cluster_changes = changed(fleet.clusters_of(&wiring.scope), cluster_trigger, true);
    Controller::for_stream(addon_events, addons_store)
        .watches_stream_with(
            cluster_changes,
            |cluster: DynamicObject| {
                let namespace = cluster.metadata.namespace.clone().unwrap_or_default();
                let name = cluster.metadata.name.clone().unwrap_or_default();
                Some(ObjectRef::new(&cluster::addon_name(&name)).within(&namespace))
            },
            super::clusters::cluster_key(),
        )
        .watches_stream(
            kubeconfig_secrets(&wiring.client, &wiring.scope, |secrets| {
                ctx.management.reflect_secrets(secrets)
            }),
            move |secret: Secret| {
                let addon = kubeconfig_addon(&secret.metadata)?;
                // A changed kubeconfig drops the cached workload cluster at once.
                let cluster = secret.metadata.labels.as_ref()?.get(CLUSTER_NAME_LABEL)?;
                let namespace = secret.metadata.namespace.as_deref().unwrap_or_default();
                let version = secret.metadata.resource_version.as_deref().unwrap_or_default();
                secret_ctx.workloads.secret_seen(namespace, cluster, version);
                Some(addon)
            },
        )
        .reconcile_on(user_values)
        // Objects their Cluster references (its ControlPlane, InfraCluster) appearing or
        // changing their spec.
        .reconcile_on(ctx.management.wake_ups())
        // Drift watches on the workload clusters wake their ClusterAddon.
        .reconcile_on(controller.drift.wake_ups())
        .with_config(wiring.concurrency.clone())
        .graceful_shutdown_on(wiring.shutdown.clone())
        .run(
            in_scope(cluster_addon::reconcile, &wiring.scope),
            cluster_addon::error_policy,
            controller,
        )
        .for_each(|_| futures::future::ready(()))
        .boxed()
}

/// ClusterStackRollouts (see [`rollout::run`]).
fn rollout_controller(wiring: &Wiring<'_>, fleet: &mut FleetWatches) -> Running {
    let watched = rollout::Watched {
        clusters: wiring.ctx.management.cluster_store(),
        cluster_events: fleet.clusters.consumer(),
        addons: fleet.addons_store.clone(),
        addon_events: fleet.addons.consumer(),
    };
    rollout::run(
        wiring.client.clone(),
        wiring.scope.clone(),
        watched,
        wiring.ctx.clone(),
        wiring.concurrency.clone(),
        wiring.shutdown.clone(),
    )
    .boxed()
}

/// Label of a ConfigMap or Secret holding a Cluster's user values (`addon-values-from`): a
/// change to one so labelled re-renders the ClusterAddons of its namespace at once (unlabelled
/// ones are read again on the next pass).
pub const USER_VALUES_LABEL: &str = "clusterstack.x-k8s.io/addon-values";

/// The ClusterAddons to look at again when user values change: those using a ClusterStack
/// whose spec (`addonValues`) changed, and those in the namespace of a labelled ConfigMap or
/// Secret that changed. A wake-up with nothing changed renders nothing (the inputs hash).
fn user_value_changes(
    client: &Client,
    scope: &Scope,
    addons: &reflector::Store<ClusterAddon>,
) -> impl futures::Stream<Item = ObjectRef<ClusterAddon>> + Send + 'static {
    // The store may hold other shards' ClusterAddons (see [`FleetWatches`]): only this
    // scope's are woken.
    let (of_stack, scope_of_stack) = (addons.clone(), scope.clone());
    // Every shard reads every ClusterStack (a Cluster's class may come from another shard's).
    let stacks = changed(
        watch_all(
            scope.apis::<ClusterStack>(client),
            objects(watcher::Config::default()),
        ),
        spec_or_deletion::<ClusterStack>,
        false,
    )
    .map_ok(move |stack| addons_of_stack(&scope_of_stack.admitted(&of_stack), &stack))
    .boxed();
    let labelled = watcher::Config::default().labels(USER_VALUES_LABEL);
    let in_namespace = |store: reflector::Store<ClusterAddon>| {
        let scope = scope.clone();
        move |namespace: Option<String>| {
            addons_in(&scope.admitted(&store), namespace.as_deref().unwrap_or_default())
        }
    };
    let config_maps = watch_all(scope.apis::<ConfigMap>(client), objects(labelled.clone()))
        .applied_objects()
        .map_ok({
            let wake = in_namespace(addons.clone());
            move |map| wake(map.metadata.namespace)
        })
        .boxed();
    let secrets = watch_all(scope.apis::<Secret>(client), objects(labelled))
        .applied_objects()
        .map_ok({
            let wake = in_namespace(addons.clone());
            move |secret| wake(secret.metadata.namespace)
        })
        .boxed();
    futures::stream::select_all([stacks, config_maps, secrets]).flat_map(|batch| {
        futures::stream::iter(match batch {
            Ok(refs) => refs,
            // The watch retries with backoff; the pass interval covers the gap.
            Err(error) => {
                tracing::warn!(%error, "watching user values");
                Vec::new()
            }
        })
    })
}

/// The ClusterAddons whose release (`spec.clusterStack`) is one of `stack`'s.
fn addons_of_stack(addons: &[Arc<ClusterAddon>], stack: &ClusterStack) -> Vec<ObjectRef<ClusterAddon>> {
    let spec = &stack.spec;
    let prefix = format!(
        "{}-{}-{}-",
        spec.provider,
        spec.name,
        spec.kubernetes_version.replace('.', "-")
    );
    addons
        .iter()
        .filter(|a| {
            a.spec
                .cluster_stack
                .as_deref()
                .is_some_and(|c| c.starts_with(&prefix))
        })
        .map(|a| ObjectRef::from_obj(a.as_ref()))
        .collect()
}

/// The ClusterAddons in `namespace`.
fn addons_in(addons: &[Arc<ClusterAddon>], namespace: &str) -> Vec<ObjectRef<ClusterAddon>> {
    addons
        .iter()
        .filter(|a| a.metadata.namespace.as_deref() == Some(namespace))
        .map(|a| ObjectRef::from_obj(a.as_ref()))
        .collect()
}

/// The release whose inventory an applied object carries (`capstan.dev/inventory:
/// <namespace>/capstan.cskr.<release>`).
fn release_of_applied(object: &DynamicObject) -> Option<ObjectRef<ClusterStackRelease>> {
    let inventory = object.meta().annotations.as_ref()?.get(INVENTORY_ANNOTATION)?;
    let (namespace, name) = inventory.split_once('/')?;
    let release = cluster_stack_release::release_of_inventory(name)?;
    Some(ObjectRef::new(release).within(namespace))
}

/// What a watch event must change to start a reconcile: the spec (generation), the deletion
/// mark, the finalizers or the shard (an object that comes back into this shard is taken
/// over at once); status writes alone do not.
fn spec_or_deletion<K: Resource>(object: &K) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let meta = object.meta();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    meta.generation.hash(&mut hasher);
    meta.deletion_timestamp.is_some().hash(&mut hasher);
    meta.finalizers.hash(&mut hasher);
    meta.uid.hash(&mut hasher);
    crate::shard::key_of(meta).hash(&mut hasher);
    // Asking to take over objects another inventory owns is acted on at once.
    let take_over = crate::api::TAKE_OVER_ANNOTATION;
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(take_over))
        .hash(&mut hasher);
    Some(hasher.finish())
}

/// A reconcile's future, boxed so both branches of [`in_scope`] have one type.
type Reconciling = Pin<Box<dyn Future<Output = Result<controller::Action, super::controller::Error>> + Send>>;

/// Limits a reconciler to `scope` (its namespaces and shard): objects elsewhere — named by a
/// trigger, or seen before they moved to another shard — are left alone.
fn in_scope<K, C, F, Fut>(
    reconcile: F,
    scope: &Scope,
) -> impl FnMut(Arc<K>, Arc<C>) -> Reconciling + use<K, C, F, Fut>
where
    K: Resource + Send + Sync + 'static,
    F: Fn(Arc<K>, Arc<C>) -> Fut + Send + Sync + Clone + 'static,
    Fut: Future<Output = Result<controller::Action, super::controller::Error>> + Send + 'static,
{
    let scope = scope.clone();
    move |object: Arc<K>, controller: Arc<C>| {
        if scope.admits(object.meta()) {
            Box::pin(reconcile(object, controller))
        } else {
            Box::pin(async { Ok(controller::Action::await_change()) })
        }
    }
}
