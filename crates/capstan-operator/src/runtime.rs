//! The operator process: the controllers with their watches, started under leader election,
//! next to the health, metrics and webhook servers; all stop on the shutdown signal, letting
//! running reconciles finish.

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use kube::runtime::controller;
use kube::runtime::utils::WatchStreamExt;
use kube::runtime::{reflector, watcher};
use kube::{Client, Resource};

use super::api::ClusterStack;
use super::context::Context;
use super::controller::{cluster, cluster_addon, cluster_stack, cluster_stack_release, rollout};
use super::controllers::ControllerKind;
use super::http::{self, Health};
use super::leader;
use super::metrics::Metrics;
use super::settings::Settings;
use super::sources::Sources;
use super::watch::{Scope, changed, describe, objects, spec_or_deletion, watch_all};
use super::wiring::{Build, Census, FleetWatches, Handed, Running, StackEvents, Wiring};
pub use super::wiring::{Shutdown, shutdown_on};
use capstan_source::cache::Cache;

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
/// Each controller module builds its own controller from one [`Wiring`]
/// (`fn controller(&Wiring) -> Running`); `--controllers` picks which run.
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
        stacks,
    ));
    let runs = |kind| settings.controllers.runs(kind);
    // The rollout controller looks at every shard's Clusters: the shared watches cover them.
    let sharded = scope.sharded(watch_config.clone());
    let every_shard = runs(ControllerKind::Rollout);
    let fleet_config = if every_shard {
        watch_config
    } else {
        sharded.clone()
    };
    let fleet = FleetWatches::new(&client, &scope, &ctx, fleet_config, every_shard);
    // The fleet's series read the releases' store, filled by their controller.
    let (releases_store, releases_writer) = reflector::store();
    let wiring = Wiring {
        sharded,
        concurrency: controller::Config::default().concurrency(settings.concurrency),
        client,
        settings,
        scope,
        ctx,
        shutdown: stop,
        fleet: std::sync::Mutex::new(fleet),
        stack_events: Handed::new(stack_events),
        releases_store,
        releases_writer: Handed::new(releases_writer),
        census: Arc::new(Census::default()),
    };
    observe_fleet(&wiring);

    // Without its controller the ClusterStacks' store still serves source lookups.
    let mut controllers = vec![match runs(ControllerKind::ClusterStack) {
        true => cluster_stack::controller(&wiring),
        false => fill_stacks(&wiring),
    }];
    let each: [(ControllerKind, Build); 4] = [
        (
            ControllerKind::ClusterStackRelease,
            cluster_stack_release::controller,
        ),
        (ControllerKind::Cluster, cluster::controller),
        (ControllerKind::ClusterAddon, cluster_addon::controller),
        (ControllerKind::Rollout, rollout::controller),
    ];
    for (kind, controller) in each {
        if runs(kind) {
            controllers.push(controller(&wiring));
        }
    }
    // Started last: every consumer is taken.
    let Wiring {
        fleet,
        shutdown,
        scope,
        ..
    } = wiring;
    let fleet = fleet
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    controllers.extend(fleet.run(&shutdown));
    tracing::info!(
        scope = %describe(&scope),
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

/// Without the ClusterStack controller: the stacks' watch only fills their store.
fn fill_stacks(wiring: &Wiring<'_>) -> Running {
    let Some(stack_events): Option<StackEvents> = wiring.stack_events.take() else {
        return Box::pin(futures::future::ready(()));
    };
    let stop = wiring.shutdown.clone();
    Box::pin(async move {
        tokio::select! {
            () = stack_events.for_each(|_| futures::future::ready(())) => {}
            () = stop => {}
        }
    })
}

/// The fleet's series: the stores of the stacks, releases and ClusterAddons, and the census
/// of the workload cluster cache and of the controllers' drift watches (none without those
/// controllers).
fn observe_fleet(wiring: &Wiring<'_>) {
    let ctx = &wiring.ctx;
    let scope = wiring.scope.clone();
    let shared = Arc::downgrade(ctx);
    let census = wiring.census.clone();
    ctx.metrics.observe_fleet(super::metrics::Fleet {
        stacks: ctx.stacks.clone(),
        releases: wiring.releases_store.clone(),
        addons: wiring.fleet().addons_store.clone(),
        // The store may hold other shards' ClusterAddons too (with the rollout controller):
        // each shard's series are its own.
        admits: Box::new(move |addon| scope.admits(addon.meta())),
        census: Box::new(move || {
            let shared = shared.upgrade()?;
            Some(super::metrics::Census {
                management_watches: census.management_watches.get().map_or(0, |count| count()),
                addon_checks: census
                    .addon_checks
                    .get()
                    .map(|checks| checks())
                    .unwrap_or_default(),
                ..shared.workloads.census()
            })
        }),
    });
}
