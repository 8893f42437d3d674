//! What every reconcile shares: the client, the settings, the sources and cache, the render
//! store, compiled releases, metrics and the event recorder.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, Resource};

use capstan_apply::Applier;

use super::api::{ClusterAddon, ClusterStack, ClusterStackRelease};
use super::metrics::Metrics;
use super::settings::Settings;
use super::sources::Sources;
use super::store::RenderStore;
use capstan_stack::name::ReleaseTag;

/// One listing of a source: when, the source's description, the release tags.
type Poll = (Instant, (String, Vec<ReleaseTag>));

/// Shared state of the controllers.
pub struct Context {
    pub client: Client,
    pub settings: Settings,
    pub sources: Sources,
    pub store: RenderStore,
    pub metrics: Arc<Metrics>,
    /// Applies to the management cluster (keeps its discovery cache).
    pub applier: Applier,
    /// The management cluster's objects a ClusterAddon pass reads, from reflector stores.
    pub management: crate::management::Management,
    /// Connected workload clusters, one per Cluster.
    pub workloads: crate::addon::cache::WorkloadClusters,
    /// ClusterAddons whose objects a drift watch saw change: woken at once, and their next
    /// pass re-applies even when the drift interval has not passed.
    pub addon_drift: AddonDrift,
    /// ClusterStackReleases whose objects a watch saw change (their ClusterClass, or any
    /// object of their inventory through the drift watches): woken at once, and their next
    /// pass re-applies even when the drift interval has not passed.
    pub release_drift: ReleaseDrift,
    /// The drift watches of each release's objects in the management cluster.
    pub release_watches: crate::controller::cluster_stack_release::watches::ReleaseWatches,
    recorder: Recorder,
    /// Failed reconciles in a row per object, for the backoff.
    failures: Mutex<HashMap<String, u32>>,
    pub compiled: crate::compiled::CompiledReleases,
    /// The ClusterStacks as the ClusterStack controller's watch sees them.
    pub stacks: Store<ClusterStack>,
    /// The last listing of each ClusterStack's source: when, which source, the tags.
    polls: Mutex<HashMap<String, Poll>>,
    /// Last error text per object, to emit an event only when it changes.
    last_errors: Mutex<HashMap<String, String>>,
}

impl Context {
    pub fn new(
        client: Client,
        settings: Settings,
        sources: Sources,
        metrics: Arc<Metrics>,
        stacks: Store<ClusterStack>,
    ) -> Context {
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: "capstan".into(),
                instance: std::env::var("POD_NAME").ok(),
            },
        );
        Context {
            store: RenderStore::new(client.clone()),
            applier: Applier::new(client.clone(), "the management cluster"),
            management: crate::management::Management::new(client.clone(), settings.namespaces.clone()),
            workloads: crate::addon::cache::WorkloadClusters::default(),
            addon_drift: AddonDrift::new(),
            release_drift: ReleaseDrift::new(),
            release_watches: Default::default(),
            failures: Mutex::new(HashMap::new()),
            client,
            settings,
            sources,
            metrics,
            recorder,
            compiled: Default::default(),
            stacks,
            last_errors: Mutex::new(HashMap::new()),
            polls: Mutex::new(HashMap::new()),
        }
    }

    /// The workload cluster cache and the drift watches, for the metrics.
    pub fn census(&self) -> crate::metrics::Census {
        crate::metrics::Census {
            management_watches: self.release_watches.watch_count(),
            addon_checks: self
                .addon_drift
                .checks()
                .map(|(object, at)| {
                    (
                        (object.namespace.unwrap_or_default(), object.name),
                        at.0.as_second(),
                    )
                })
                .collect(),
            ..self.workloads.census()
        }
    }

    /// Counts a failure of `key` and returns how many happened in a row.
    pub fn failed(&self, key: &str) -> u32 {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let count = failures.entry(key.to_string()).or_insert(0);
        *count = count.saturating_add(1);
        *count
    }

    /// Forgets the failures of `key` after a success.
    pub fn succeeded(&self, key: &str) {
        self.failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
    }

    /// The last listing recorded for `key`.
    pub fn last_poll(&self, key: &str) -> Option<Poll> {
        self.polls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .cloned()
    }

    pub fn record_poll(&self, key: &str, source: String, tags: Vec<ReleaseTag>) {
        self.polls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.to_string(), (Instant::now(), (source, tags)));
    }

    pub fn forget_poll(&self, key: &str) {
        self.polls.lock().unwrap_or_else(|p| p.into_inner()).remove(key);
    }

    /// Publishes a Kubernetes Event about `object`; a failure is logged, never fatal.
    pub async fn event(
        &self,
        object: &ObjectReference,
        warning: bool,
        reason: &str,
        action: &str,
        note: String,
    ) {
        self.event_related(object, None, warning, reason, action, note)
            .await;
    }

    /// [`Context::event`] naming a second object (`related`). Events of one object with the
    /// same reason and action become one series (kube's recorder keys them without the note);
    /// a different `related` object makes a separate Event.
    pub async fn event_related(
        &self,
        object: &ObjectReference,
        related: Option<ObjectReference>,
        warning: bool,
        reason: &str,
        action: &str,
        note: String,
    ) {
        let name = format!(
            "{}/{}/{}",
            object.kind.as_deref().unwrap_or_default(),
            object.namespace.as_deref().unwrap_or_default(),
            object.name.as_deref().unwrap_or_default()
        );
        if warning {
            tracing::warn!(object = %name, reason, "{note}");
        } else {
            tracing::info!(object = %name, reason, "{note}");
        }
        let event = Event {
            type_: if warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: reason.into(),
            note: Some(truncate(note, 1024)),
            action: action.into(),
            secondary: related,
        };
        if let Err(e) = self.recorder.publish(&event, object).await {
            tracing::debug!(error = %e, reason, "publishing an event failed");
        }
    }

    /// Publishes a warning event for `error` unless the same error was the last one reported
    /// for `key`; `None` clears it (the next error is reported again).
    pub async fn error_event(&self, key: &str, object: &ObjectReference, reason: &str, error: Option<&str>) {
        let fresh = {
            let mut last = self.last_errors.lock().unwrap_or_else(|p| p.into_inner());
            match error {
                None => {
                    last.remove(key);
                    false
                }
                Some(text) => last.insert(key.to_string(), text.to_string()).as_deref() != Some(text),
            }
        };
        if let (true, Some(text)) = (fresh, error) {
            self.event(object, true, reason, "Reconcile", text.to_string())
                .await;
        }
    }
}

/// Wake-ups from drift watches: a bounded queue the controller of `K` reads (a full queue
/// drops the wake-up; the suspect mark stays for the next pass).
pub struct DriftWakeUps<K: Resource<DynamicType = ()>> {
    suspects: Arc<Mutex<HashSet<ObjectRef<K>>>>,
    /// When each object's watches last vouched for it (a drift check that sent nothing): kept
    /// here, not written to its status, so an idle fleet writes nothing to the management
    /// cluster (issue 36 §2). A restart forgets it: the first check after one compares.
    checked: Mutex<HashMap<ObjectRef<K>, Time>>,
    sender: tokio::sync::mpsc::Sender<ObjectRef<K>>,
    receiver: Mutex<Option<tokio::sync::mpsc::Receiver<ObjectRef<K>>>>,
}

/// ClusterAddons whose objects on their workload cluster drifted.
pub type AddonDrift = DriftWakeUps<ClusterAddon>;
/// ClusterStackReleases whose objects in the management cluster drifted.
pub type ReleaseDrift = DriftWakeUps<ClusterStackRelease>;

/// Wake-ups queued at most.
const DRIFT_QUEUE: usize = 1024;

impl<K> DriftWakeUps<K>
where
    K: Resource<DynamicType = ()> + Send + Sync + 'static,
{
    fn new() -> DriftWakeUps<K> {
        let (sender, receiver) = tokio::sync::mpsc::channel(DRIFT_QUEUE);
        DriftWakeUps {
            suspects: Arc::new(Mutex::new(HashSet::new())),
            checked: Mutex::default(),
            sender,
            receiver: Mutex::new(Some(receiver)),
        }
    }

    /// What a drift watch calls for `object`: mark it and wake it.
    pub fn notifier(&self, object: ObjectRef<K>) -> crate::drift::Notify {
        let suspects = self.suspects.clone();
        let sender = self.sender.clone();
        Arc::new(move || {
            lock(&suspects).insert(object.clone());
            let _ = sender.try_send(object.clone());
        })
    }

    /// Marks `object` without waking it (a watch that wakes it on its own).
    pub fn suspect(&self, object: ObjectRef<K>) {
        lock(&self.suspects).insert(object);
    }

    /// Whether a watch saw objects of `object` drift since the last [`DriftWakeUps::take`],
    /// leaving the mark for it.
    pub fn is_suspect(&self, object: &ObjectRef<K>) -> bool {
        lock(&self.suspects).contains(object)
    }

    /// Whether a watch saw objects of `object` drift since the last call.
    pub fn take(&self, object: &ObjectRef<K>) -> bool {
        lock(&self.suspects).remove(object)
    }

    /// The watches vouched for `object` now: the drift clock starts again, in memory.
    pub fn record_check(&self, object: ObjectRef<K>) {
        lock(&self.checked).insert(object, Time(k8s_openapi::jiff::Timestamp::now()));
    }

    /// When the watches last vouched for `object` in this process.
    pub fn last_check(&self, object: &ObjectRef<K>) -> Option<Time> {
        lock(&self.checked).get(object).cloned()
    }

    /// Every object's last check the watches vouched for.
    pub fn checks(&self) -> impl Iterator<Item = (ObjectRef<K>, Time)> + use<K> {
        lock(&self.checked)
            .iter()
            .map(|(object, at)| (object.clone(), at.clone()))
            .collect::<Vec<_>>()
            .into_iter()
    }

    /// A full pass of `object` recorded its time in the status (or it went): nothing to keep.
    pub fn forget_check(&self, object: &ObjectRef<K>) {
        lock(&self.checked).remove(object);
    }

    /// The wake-ups, once (for the controller's `reconcile_on`).
    pub fn wake_ups(&self) -> impl futures::Stream<Item = ObjectRef<K>> + Send + 'static {
        let receiver = self.receiver.lock().unwrap_or_else(|p| p.into_inner()).take();
        futures::stream::unfold(receiver, |receiver| async move {
            let mut receiver = receiver?;
            let next = receiver.recv().await?;
            Some((next, Some(receiver)))
        })
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

fn truncate(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}
