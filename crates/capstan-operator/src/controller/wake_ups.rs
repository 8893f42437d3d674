//! Wake-ups from drift watches: a bounded queue a controller reads (a full queue drops the
//! wake-up; the suspect mark stays for the next pass). The ClusterAddon and
//! ClusterStackRelease controllers each keep their own.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Resource;
use kube::runtime::reflector::ObjectRef;

use crate::api::{ClusterAddon, ClusterStackRelease};

/// Objects of kind `K` a drift watch saw change, and the queue that wakes them.
pub struct DriftWakeUps<K: Resource<DynamicType = ()>> {
    suspects: Arc<Mutex<HashSet<ObjectRef<K>>>>,
    /// When each object's watches last vouched for it (a drift check that sent nothing): kept
    /// here, not written to its status, so an idle fleet writes nothing to the management
    /// cluster (issue 36 §2). A restart forgets it: the first check after one compares.
    checked: Arc<Mutex<HashMap<ObjectRef<K>, Time>>>,
    sender: tokio::sync::mpsc::Sender<ObjectRef<K>>,
    receiver: Mutex<Option<tokio::sync::mpsc::Receiver<ObjectRef<K>>>>,
}

/// ClusterAddons whose objects on their workload cluster drifted.
pub type AddonDrift = DriftWakeUps<ClusterAddon>;
/// ClusterStackReleases whose objects in the management cluster drifted.
pub type ReleaseDrift = DriftWakeUps<ClusterStackRelease>;

/// Wake-ups queued at most.
const DRIFT_QUEUE: usize = 1024;

impl<K> Default for DriftWakeUps<K>
where
    K: Resource<DynamicType = ()> + Send + Sync + 'static,
{
    fn default() -> DriftWakeUps<K> {
        let (sender, receiver) = tokio::sync::mpsc::channel(DRIFT_QUEUE);
        DriftWakeUps {
            suspects: Arc::new(Mutex::new(HashSet::new())),
            checked: Arc::default(),
            sender,
            receiver: Mutex::new(Some(receiver)),
        }
    }
}

impl<K> DriftWakeUps<K>
where
    K: Resource<DynamicType = ()> + Send + Sync + 'static,
{
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
        lock(&self.checked).insert(object, super::now());
    }

    /// When the watches last vouched for `object` in this process.
    pub fn last_check(&self, object: &ObjectRef<K>) -> Option<Time> {
        lock(&self.checked).get(object).cloned()
    }

    /// A full pass of `object` recorded its time in the status (or it went): nothing to keep.
    pub fn forget_check(&self, object: &ObjectRef<K>) {
        lock(&self.checked).remove(object);
    }

    /// Every object's last check the watches vouched for, read at each scrape of the metrics:
    /// seconds by (`namespace`, `name`).
    pub fn checks(&self) -> impl Fn() -> HashMap<(String, String), i64> + Send + Sync + 'static + use<K> {
        let checked = self.checked.clone();
        move || {
            lock(&checked)
                .iter()
                .map(|(object, at)| {
                    let namespace = object.namespace.clone().unwrap_or_default();
                    ((namespace, object.name.clone()), at.0.as_second())
                })
                .collect()
        }
    }

    /// The wake-ups, once (for the controller's `reconcile_on`).
    pub fn wake_ups(&self) -> impl futures::Stream<Item = ObjectRef<K>> + Send + 'static {
        let receiver = lock(&self.receiver).take();
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
