//! What every controller of the operator is built from ([`Wiring`]): the client, the scope,
//! the shared context, the concurrency, the shutdown, and the watches the process shares
//! (the Clusters and ClusterAddons, each watched once; the ClusterStacks, whose store serves
//! every source lookup; the ClusterStackReleases' store, which the fleet's series read). Each
//! controller module builds its own controller from it: `fn controller(&Wiring) -> Running`.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use futures::StreamExt;
use futures::future::{FutureExt, Shared};
use futures::stream::BoxStream;
use kube::Client;
use kube::Resource;
use kube::api::DynamicObject;
use kube::runtime::reflector::store::Writer;
use kube::runtime::utils::WatchStreamExt;
use kube::runtime::{controller, reflector, watcher};

use crate::api::{ClusterAddon, ClusterStack, ClusterStackRelease};
use crate::context::Context;
use crate::fan_out::FanOut;
use crate::settings::Settings;
use crate::watch::{Events, Scope, objects, watch_all};

/// A future every task of the process can wait on: resolves once, on shutdown.
pub type Shutdown = Shared<Pin<Box<dyn Future<Output = ()> + Send>>>;

/// Makes a [`Shutdown`] from a future (e.g. the SIGTERM/SIGINT wait).
pub fn shutdown_on(signal: impl Future<Output = ()> + Send + 'static) -> Shutdown {
    let boxed: Pin<Box<dyn Future<Output = ()> + Send>> = Box::pin(signal);
    boxed.shared()
}

/// A controller running until the shutdown.
pub type Running = futures::future::BoxFuture<'static, ()>;

/// A value one controller takes, once.
pub struct Handed<T>(Mutex<Option<T>>);

impl<T> Handed<T> {
    pub fn new(value: T) -> Handed<T> {
        Handed(Mutex::new(Some(value)))
    }

    /// The value, to its one taker (`None` after).
    pub fn take(&self) -> Option<T> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// The ClusterStacks' watch as the ClusterStack controller sees it (the events of this shard's
/// stacks; the store, filled as it runs, holds every one).
pub type StackEvents = BoxStream<'static, Result<ClusterStack, watcher::Error>>;

/// What the controllers tell the fleet's series once they run: how many drift watches the
/// release controller keeps in the management cluster, when the drift watches last vouched
/// for each ClusterAddon (nothing before, or without, those controllers).
#[derive(Default)]
pub struct Census {
    pub management_watches: OnceLock<Box<dyn Fn() -> usize + Send + Sync>>,
    pub addon_checks: OnceLock<Box<dyn Fn() -> AddonChecks + Send + Sync>>,
}

/// When the drift watches last vouched for each ClusterAddon (namespace, name), in seconds.
pub type AddonChecks = HashMap<(String, String), i64>;

/// Builds one controller of the process.
pub type Build = fn(&Wiring<'_>) -> Running;

/// What every controller of a run is built from.
pub struct Wiring<'a> {
    pub client: Client,
    pub settings: &'a Settings,
    /// The namespaces and shard this process reconciles.
    pub scope: Scope,
    /// The watch of the kinds split by shard.
    pub sharded: watcher::Config,
    pub ctx: Arc<Context>,
    pub concurrency: controller::Config,
    pub shutdown: Shutdown,
    /// The Clusters and ClusterAddons, watched once for the process.
    pub fleet: Mutex<FleetWatches>,
    /// The ClusterStacks' events, taken by the ClusterStack controller (or by the process, to
    /// fill the store, without it).
    pub stack_events: Handed<StackEvents>,
    /// The ClusterStackReleases' store, which the fleet's series read, and its writer, taken by
    /// the ClusterStackRelease controller.
    pub releases_store: reflector::Store<ClusterStackRelease>,
    pub releases_writer: Handed<Writer<ClusterStackRelease>>,
    pub census: Arc<Census>,
}

impl Wiring<'_> {
    /// The shared watches, for a controller to take its consumers.
    pub fn fleet(&self) -> std::sync::MutexGuard<'_, FleetWatches> {
        self.fleet.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The ClusterStackReleases of this process' shard, as watched.
    pub fn releases(
        &self,
    ) -> impl futures::Stream<Item = Result<watcher::Event<ClusterStackRelease>, watcher::Error>> + Send + use<>
    {
        watch_all(
            self.scope.apis::<ClusterStackRelease>(&self.client),
            objects(self.sharded.clone()),
        )
    }
}

/// The Clusters and ClusterAddons, each watched once for the process ([`FanOut`]): the
/// Cluster store is the management's ([`Management::reflect_clusters`] fills it), the
/// ClusterAddon store serves the ClusterAddon controller, the fleet's series and the
/// rollouts. The rollout controller looks at every shard's Clusters, so with it the watches
/// cover every shard and each sharded controller narrows them to its own
/// ([`Scope::narrow`]); without it they are the shard's.
///
/// [`Management::reflect_clusters`]: crate::management::Management::reflect_clusters
pub struct FleetWatches {
    clusters: FanOut<DynamicObject>,
    addons: FanOut<ClusterAddon>,
    pub addons_store: reflector::Store<ClusterAddon>,
    /// Whether the watches cover every shard (with the rollout controller).
    every_shard: bool,
}

impl FleetWatches {
    pub fn new(
        client: &Client,
        scope: &Scope,
        ctx: &Context,
        config: watcher::Config,
        every_shard: bool,
    ) -> FleetWatches {
        let cluster_of = crate::capi_api::cluster_resource_of;
        let clusters = crate::watch::capi_watch(client, scope, cluster_of, config.clone());
        let (addons_store, addons_writer) = reflector::store();
        let addons = watch_all(scope.apis::<ClusterAddon>(client), objects(config)).reflect(addons_writer);
        FleetWatches {
            clusters: FanOut::new("Clusters", ctx.management.reflect_clusters(clusters)),
            addons: FanOut::new("ClusterAddons", addons.boxed()),
            addons_store,
            every_shard,
        }
    }

    /// Every event of the Clusters' watch, as watched (the rollout controller's).
    pub fn clusters(&mut self) -> Events<DynamicObject> {
        self.clusters.consumer()
    }

    /// Every event of the ClusterAddons' watch, as watched (the rollout controller's).
    pub fn addons(&mut self) -> Events<ClusterAddon> {
        self.addons.consumer()
    }

    /// The Clusters' events for a controller of `scope`.
    pub fn clusters_of(&mut self, scope: &Scope) -> Events<DynamicObject> {
        let events = self.clusters.consumer();
        self.narrowed(scope, events)
    }

    /// The ClusterAddons' events for a controller of `scope`.
    pub fn addons_of(&mut self, scope: &Scope) -> Events<ClusterAddon> {
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
    pub fn run(self, stop: &Shutdown) -> Vec<Running> {
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

/// A reconcile's future, boxed so both branches of [`in_scope`] have one type.
type Reconciling = Pin<Box<dyn Future<Output = Result<controller::Action, crate::controller::Error>> + Send>>;

/// Limits a reconciler to `scope` (its namespaces and shard): objects elsewhere — named by a
/// trigger, or seen before they moved to another shard — are left alone.
pub fn in_scope<K, C, F, Fut>(
    reconcile: F,
    scope: &Scope,
) -> impl FnMut(Arc<K>, Arc<C>) -> Reconciling + use<K, C, F, Fut>
where
    K: Resource + Send + Sync + 'static,
    F: Fn(Arc<K>, Arc<C>) -> Fut + Send + Sync + Clone + 'static,
    Fut: Future<Output = Result<controller::Action, crate::controller::Error>> + Send + 'static,
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
