//! The operator process: the controllers with their watches, started under leader election,
//! next to the health, metrics and webhook servers; all stop on the shutdown signal, letting
//! running reconciles finish.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures::StreamExt;
use futures::future::{FutureExt, Shared};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::controller::{self, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::utils::{PredicateConfig, WatchStreamExt};
use kube::runtime::{reflector, watcher};
use kube::{Client, Resource};

use super::api::{ClusterAddon, ClusterStack, ClusterStackRelease};
use super::context::Context;
use super::controller::{cluster, cluster_addon, cluster_stack, cluster_stack_release};
use super::http::{self, Health};
use super::leader;
use super::metrics::Metrics;
use super::settings::Settings;
use super::sources::Sources;
use capstan_apply::ssa::{INVENTORY_ANNOTATION, MANAGED_BY, MANAGED_BY_LABEL};
use capstan_source::cache::Cache;
use k8s_openapi::api::core::v1::Secret;

/// The label Cluster API puts on a Cluster's Secrets (kubeconfig, certificates).
const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";

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
    let shutdown = stop;
    let cache = Cache::open(&settings.cache_dir).map_err(|e| RunError::Cache {
        path: settings.cache_dir.display().to_string(),
        message: e.to_string(),
    })?;
    let sources =
        Sources::new(cache, Some(metrics.github_observer())).with_oci_observer(metrics.oci_observer());
    let watch_config = watcher::Config::default().any_semantic();

    // ClusterStacks: their store serves the release controller's source lookups.
    let stacks_api: Api<ClusterStack> = Api::all(client.clone());
    let (stacks, stacks_writer) = reflector::store();
    let stack_events = watcher(stacks_api, watch_config.clone())
        .default_backoff()
        .reflect(stacks_writer)
        .applied_objects()
        .predicate_filter(spec_or_deletion::<ClusterStack>, PredicateConfig::default());
    let ctx = Arc::new(Context::new(
        client.clone(),
        settings.clone(),
        sources,
        metrics,
        stacks.clone(),
    ));
    let releases_api: Api<ClusterStackRelease> = Api::all(client.clone());
    let concurrency = controller::Config::default().concurrency(settings.concurrency);

    let stack_controller = Controller::for_stream(stack_events, stacks)
        .owns(releases_api.clone(), watch_config.clone())
        .with_config(concurrency.clone())
        .graceful_shutdown_on(shutdown.clone())
        .run(
            in_namespaces(cluster_stack::reconcile, &settings.namespaces),
            cluster_stack::error_policy,
            ctx.clone(),
        )
        .for_each(|_| futures::future::ready(()));

    let (releases, releases_writer) = reflector::store();
    let release_events = watcher(releases_api, watch_config.clone())
        .default_backoff()
        .reflect(releases_writer)
        .applied_objects()
        .predicate_filter(
            spec_or_deletion::<ClusterStackRelease>,
            PredicateConfig::default(),
        );
    let class_resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cluster.x-k8s.io", "v1beta1", "ClusterClass"),
        "clusterclasses",
    );
    let classes: Api<DynamicObject> = Api::all_with(client.clone(), &class_resource);
    let suspects = ctx.clone();
    let release_controller = Controller::for_stream(release_events, releases)
        .watches_with(
            classes,
            class_resource,
            watcher::Config::default().labels(&format!("{MANAGED_BY_LABEL}={MANAGED_BY}")),
            move |class: DynamicObject| {
                let owner = release_of_applied(&class);
                if let Some(release) = &owner {
                    suspects.suspect_drift(release.clone());
                }
                owner
            },
        )
        .with_config(concurrency.clone())
        .graceful_shutdown_on(shutdown.clone())
        .run(
            in_namespaces(cluster_stack_release::reconcile, &settings.namespaces),
            cluster_stack_release::error_policy,
            ctx.clone(),
        )
        .for_each(|_| futures::future::ready(()));

    // Clusters: each one on a stack class gets its ClusterAddon, made again when it is deleted
    // on its own (its owner reference wakes the Cluster once it is gone; the ClusterAddon's
    // status writes do not).
    let cluster_resource = super::clusters::cluster_resource();
    let clusters: Api<DynamicObject> = Api::all_with(client.clone(), &cluster_resource);
    let deleted_addons = watcher(Api::<ClusterAddon>::all(client.clone()), watch_config.clone())
        .default_backoff()
        .filter_map(|event| {
            futures::future::ready(match event {
                Ok(watcher::Event::Delete(addon)) => Some(Ok(addon)),
                Ok(_) => None,
                Err(error) => Some(Err(error)),
            })
        });
    let cluster_controller =
        Controller::new_with(clusters.clone(), watch_config.clone(), cluster_resource.clone())
            .owns_stream(deleted_addons)
            .with_config(concurrency.clone())
            .graceful_shutdown_on(shutdown.clone())
            .run(
                in_namespaces(cluster::reconcile, &settings.namespaces),
                cluster::error_policy,
                ctx.clone(),
            )
            .for_each(|_| futures::future::ready(()));

    // ClusterAddons, woken by their Cluster (class, controlPlaneReady) and its kubeconfig
    // Secret, so work starts as soon as a gate opens.
    let addons_api: Api<ClusterAddon> = Api::all(client.clone());
    let (addons, addons_writer) = reflector::store();
    let addon_events = watcher(addons_api, watch_config.clone())
        .default_backoff()
        .reflect(addons_writer)
        .applied_objects()
        .predicate_filter(spec_or_deletion::<ClusterAddon>, PredicateConfig::default());
    let secrets: Api<Secret> = Api::all(client.clone());
    let secret_ctx = ctx.clone();
    let drift_wake_ups = ctx.addon_drift.wake_ups();
    let addon_controller = Controller::for_stream(addon_events, addons)
        .watches_with(
            clusters,
            cluster_resource,
            watch_config.clone(),
            |cluster: DynamicObject| {
                let namespace = cluster.metadata.namespace.clone().unwrap_or_default();
                let name = cluster.metadata.name.clone().unwrap_or_default();
                Some(ObjectRef::new(&cluster::addon_name(&name)).within(&namespace))
            },
        )
        .watches(
            secrets,
            watcher::Config::default().labels(CLUSTER_NAME_LABEL),
            move |secret: Secret| {
                let namespace = secret.metadata.namespace.clone().unwrap_or_default();
                let cluster = secret.metadata.labels.as_ref()?.get(CLUSTER_NAME_LABEL)?.clone();
                // A changed kubeconfig drops the cached workload cluster at once.
                if secret.metadata.name.as_deref()
                    == Some(&crate::addon::workload::kubeconfig_secret(&cluster))
                {
                    let version = secret.metadata.resource_version.as_deref().unwrap_or_default();
                    secret_ctx.workloads.secret_seen(&namespace, &cluster, version);
                }
                Some(ObjectRef::new(&cluster::addon_name(&cluster)).within(&namespace))
            },
        )
        // Drift watches on the workload clusters wake their ClusterAddon.
        .reconcile_on(drift_wake_ups)
        .with_config(concurrency.clone())
        .graceful_shutdown_on(shutdown.clone())
        .run(
            in_namespaces(cluster_addon::reconcile, &settings.namespaces),
            cluster_addon::error_policy,
            ctx.clone(),
        )
        .for_each(|_| futures::future::ready(()));

    tracing::info!(
        namespaces = ?settings.namespaces,
        drift_interval = ?settings.drift_interval,
        "controllers started"
    );
    // Ready once the controllers run (and, with leader election, this process leads); a
    // reconcile that finds its cache incomplete requeues instead of deciding.
    health.set_ready(true);
    futures::join!(
        stack_controller,
        release_controller,
        cluster_controller,
        addon_controller
    );
    tracing::info!("controllers stopped");
    Ok(())
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
/// mark or the finalizers; status writes alone do not.
fn spec_or_deletion<K: Resource>(object: &K) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let meta = object.meta();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    meta.generation.hash(&mut hasher);
    meta.deletion_timestamp.is_some().hash(&mut hasher);
    meta.finalizers.hash(&mut hasher);
    meta.uid.hash(&mut hasher);
    Some(hasher.finish())
}

/// A reconcile's future, boxed so both branches of [`in_namespaces`] have one type.
type Reconciling = Pin<Box<dyn Future<Output = Result<controller::Action, super::controller::Error>> + Send>>;

/// Limits a reconciler to `namespaces` (all when empty): objects elsewhere are left alone.
fn in_namespaces<K, F, Fut>(
    reconcile: F,
    namespaces: &[String],
) -> impl FnMut(Arc<K>, Arc<Context>) -> Reconciling
where
    K: Resource + Send + Sync + 'static,
    F: Fn(Arc<K>, Arc<Context>) -> Fut + Send + Sync + Clone + 'static,
    Fut: Future<Output = Result<controller::Action, super::controller::Error>> + Send + 'static,
{
    let namespaces: Vec<String> = namespaces.to_vec();
    move |object: Arc<K>, ctx: Arc<Context>| {
        let wanted = namespaces.is_empty()
            || object
                .meta()
                .namespace
                .as_ref()
                .is_some_and(|ns| namespaces.contains(ns));
        if wanted {
            Box::pin(reconcile(object, ctx))
        } else {
            Box::pin(async { Ok(controller::Action::await_change()) })
        }
    }
}
