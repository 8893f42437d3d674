//! Drift seen at once, with no agent in the cluster: for each inventory capstan applied, one
//! metadata-only watch per kind, filtered by the inventory's label. An object deleted, or
//! changed last by another field manager than capstan's, wakes its owner (a ClusterAddon for
//! a workload cluster, a ClusterStackRelease for the management cluster) at once. A watch that
//! had to list again (its resourceVersion expired while it was disconnected) wakes it too:
//! what changed in the gap is not in the new listing's events.
//!
//! While every kind of an inventory is watched, listed and untroubled since the last full
//! pass ([`DriftWatches::covers`]), nothing there can drift unseen, so the interval pass sends
//! no request to the cluster; it stays the fallback for kinds that cannot be watched and for
//! watches that failed since.
//!
//! A workload cluster's watches live in its cache entry ([`crate::addon::workload::Workload`]):
//! dropping the entry (kubeconfig changed, Cluster or ClusterAddon gone, cluster unreachable,
//! evicted) aborts them; a release's live in
//! [`crate::controller::cluster_stack_release::watches`]. Each reconnects with kube's default
//! backoff; its errors are logged and never reach the controller. At most [`MAX_KINDS`] kinds
//! per inventory.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use kube::api::DynamicObject;
use kube::core::PartialObjectMeta;
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, watcher::watcher};

use capstan_apply::FIELD_MANAGER;
use capstan_apply::discovery::Discovery;
use capstan_apply::ssa::{INVENTORY_ID_LABEL, inventory_id};

/// Kinds watched per inventory at most (an addon chart has about ten).
pub const MAX_KINDS: usize = 64;

/// Called when a watched object drifted.
pub type Notify = Arc<dyn Fn() + Send + Sync>;

/// `(group, version, kind)`.
pub type Kind = (String, String, String);

/// The running watches of one workload cluster, by inventory and kind; aborted when dropped.
#[derive(Default)]
pub struct DriftWatches {
    tasks: Mutex<HashMap<(String, Kind), Running>>,
    /// Watch only this namespace (see [`DriftWatches::within`]); `None`: all namespaces.
    namespace: Option<String>,
}

/// One running watch.
struct Running {
    task: tokio::task::JoinHandle<()>,
    health: Arc<Health>,
}

/// What a watch tells about itself.
#[derive(Default)]
struct Health {
    /// Its first listing is complete: from then on every change is an event.
    listed: AtomicBool,
    /// It failed (and reconnected) or listed again since the last full pass.
    troubled: AtomicBool,
}

impl DriftWatches {
    /// Watches that list only `namespace` (an operator whose rights end at its namespaces,
    /// `-n`); cluster-scoped kinds are not watched then.
    pub fn within(namespace: &str) -> DriftWatches {
        DriftWatches {
            tasks: Mutex::default(),
            namespace: Some(namespace.to_string()),
        }
    }

    /// Watches exactly `kinds` for the objects of `inventory` (an inventory id such as
    /// `kube-system/capstan.caddon.x`): new kinds start, kinds no longer applied stop.
    pub async fn ensure(&self, discovery: &Discovery, inventory: &str, kinds: &[Kind], notify: Notify) {
        let wanted: Vec<&Kind> = kinds.iter().take(MAX_KINDS).collect();
        if kinds.len() > MAX_KINDS {
            tracing::warn!(
                inventory,
                kinds = kinds.len(),
                "drift watches: only the first {MAX_KINDS} kinds are watched"
            );
        }
        let missing: Vec<Kind> = {
            let mut tasks = self.lock();
            tasks.retain(|(inv, kind), running| {
                let keep = inv != inventory || wanted.contains(&kind);
                if !keep {
                    running.task.abort();
                }
                keep && !running.task.is_finished()
            });
            wanted
                .iter()
                .filter(|k| !tasks.contains_key(&(inventory.to_string(), (**k).clone())))
                .map(|k| (*k).clone())
                .collect()
        };
        for kind in missing {
            let info = match discovery.resolve(&kind.0, &kind.1, &kind.2).await {
                Ok(info) => info,
                Err(e) => {
                    tracing::debug!(inventory, kind = %kind.2, error = %e, "drift watch not started");
                    continue;
                }
            };
            let selector = format!("{INVENTORY_ID_LABEL}={}", inventory_id(inventory));
            // Metadata only, across namespaces (or in the one namespace).
            let client = discovery.client().clone();
            let api: kube::Api<PartialObjectMeta<DynamicObject>> =
                match watch_scope(self.namespace.as_deref(), info.namespaced) {
                    WatchScope::All => kube::Api::all_with(client, &info.resource),
                    WatchScope::Namespace(ns) => kube::Api::namespaced_with(client, ns, &info.resource),
                    WatchScope::Nowhere => continue,
                };
            let health = Arc::new(Health::default());
            let task = tokio::spawn(watch(
                api,
                selector,
                kind.2.clone(),
                notify.clone(),
                health.clone(),
            ));
            if let Some(old) = self
                .lock()
                .insert((inventory.to_string(), kind), Running { task, health })
            {
                old.task.abort();
            }
        }
    }

    /// Whether the watches of `inventory` see every change of `kinds` since the last full
    /// pass: each kind watched, listed, and its watch neither failed nor listed again since.
    pub fn covers(&self, inventory: &str, kinds: &[Kind]) -> bool {
        let tasks = self.lock();
        !kinds.is_empty()
            && kinds.iter().all(|kind| {
                tasks
                    .get(&(inventory.to_string(), kind.clone()))
                    .is_some_and(|running| {
                        !running.task.is_finished()
                            && running.health.listed.load(Ordering::Acquire)
                            && !running.health.troubled.load(Ordering::Acquire)
                    })
            })
    }

    /// A full pass of `inventory` just compared every object: earlier trouble of its watches
    /// no longer hides anything.
    pub fn checked(&self, inventory: &str) {
        for ((inv, _), running) in self.lock().iter() {
            if inv == inventory {
                running.health.troubled.store(false, Ordering::Release);
            }
        }
    }

    /// How many watches run.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, Kind), Running>> {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for DriftWatches {
    fn drop(&mut self) {
        for running in self.lock().values() {
            running.task.abort();
        }
    }
}

/// Where the watch of one kind lists.
#[derive(Debug, PartialEq, Eq)]
enum WatchScope<'a> {
    All,
    Namespace(&'a str),
    /// Not watched: a cluster-scoped kind, for watches limited to a namespace.
    Nowhere,
}

fn watch_scope(within: Option<&str>, namespaced: bool) -> WatchScope<'_> {
    match (within, namespaced) {
        (None, _) => WatchScope::All,
        (Some(namespace), true) => WatchScope::Namespace(namespace),
        (Some(_), false) => WatchScope::Nowhere,
    }
}

async fn watch(
    api: kube::Api<PartialObjectMeta<DynamicObject>>,
    selector: String,
    kind: String,
    notify: Notify,
    health: Arc<Health>,
) {
    let config = watcher::Config::default().labels(&selector);
    let mut events = watcher(api, config).default_backoff().boxed();
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                health.troubled.store(true, Ordering::Release);
                tracing::debug!(%kind, error = %e, "drift watch error (retrying with backoff)");
                continue;
            }
        };
        let relisted = matches!(event, Event::Init) && health.listed.load(Ordering::Acquire);
        if relisted {
            health.troubled.store(true, Ordering::Release);
        }
        if matches!(event, Event::InitDone) {
            health.listed.store(true, Ordering::Release);
        }
        if relisted || drifted(&event) {
            notify();
        }
    }
}

/// Whether a watch event is drift: a deletion, or a change whose newest field-manager entry
/// (status updates aside) is not capstan's. The initial listing is not.
pub fn drifted(event: &Event<PartialObjectMeta<DynamicObject>>) -> bool {
    match event {
        Event::Delete(_) => true,
        Event::Apply(meta) => last_writer(meta).is_some_and(|manager| manager != FIELD_MANAGER),
        Event::Init | Event::InitApply(_) | Event::InitDone => false,
    }
}

/// The manager of the newest `managedFields` entry that is not a status update (ties: any
/// manager other than capstan wins, so a same-second edit is not missed).
fn last_writer(meta: &PartialObjectMeta<DynamicObject>) -> Option<&str> {
    let entries = meta.metadata.managed_fields.as_ref()?;
    let mut newest: Option<(&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time, &str)> = None;
    for entry in entries {
        if entry.subresource.as_deref() == Some("status") {
            continue;
        }
        let (Some(time), Some(manager)) = (entry.time.as_ref(), entry.manager.as_deref()) else {
            continue;
        };
        newest = match newest {
            Some((t, m)) if t.0 > time.0 || (t.0 == time.0 && m != FIELD_MANAGER) => Some((t, m)),
            _ => Some((time, manager)),
        };
    }
    newest.map(|(_, m)| m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, ObjectMeta, Time};

    fn meta(entries: &[(&str, i64, Option<&str>)]) -> PartialObjectMeta<DynamicObject> {
        let managed = entries
            .iter()
            .map(|(manager, secs, subresource)| ManagedFieldsEntry {
                manager: Some(manager.to_string()),
                time: Some(Time(
                    k8s_openapi::jiff::Timestamp::from_second(*secs).expect("time"),
                )),
                subresource: subresource.map(str::to_string),
                ..ManagedFieldsEntry::default()
            })
            .collect();
        PartialObjectMeta {
            types: None,
            metadata: ObjectMeta {
                managed_fields: Some(managed),
                ..ObjectMeta::default()
            },
            _phantom: Default::default(),
        }
    }

    fn kind(name: &str) -> Kind {
        ("apps".into(), "v1".into(), name.into())
    }

    /// A watch of `kind` for inventory `inv` that never ends, in the given health.
    fn running(watches: &DriftWatches, inv: &str, name: &str, listed: bool, troubled: bool) {
        let health = Arc::new(Health::default());
        health.listed.store(listed, Ordering::Release);
        health.troubled.store(troubled, Ordering::Release);
        let task = tokio::spawn(futures::future::pending::<()>());
        watches
            .lock()
            .insert((inv.to_string(), kind(name)), Running { task, health });
    }

    #[tokio::test]
    async fn an_inventory_is_covered_when_each_kind_is_listed_and_untroubled() {
        let both = [kind("Deployment"), kind("DaemonSet")];
        let table: [(&[(bool, bool)], bool); 5] = [
            (&[(true, false), (true, false)], true),
            // Still listing.
            (&[(true, false), (false, false)], false),
            // Failed or listed again since the last full pass.
            (&[(true, true), (true, false)], false),
            // A kind not watched at all.
            (&[(true, false)], false),
            (&[], false),
        ];
        for (health, want) in table {
            let watches = DriftWatches::default();
            for ((listed, troubled), kind) in health.iter().zip(["Deployment", "DaemonSet"]) {
                running(&watches, "inv", kind, *listed, *troubled);
            }
            // Another inventory's watches do not count.
            running(&watches, "other", "DaemonSet", true, false);
            assert_eq!(watches.covers("inv", &both), want, "{health:?}");
            // A full pass forgets the trouble.
            watches.checked("inv");
            let listed = health.len() == 2 && health.iter().all(|(listed, _)| *listed);
            assert_eq!(
                watches.covers("inv", &both),
                listed,
                "after a full pass: {health:?}"
            );
        }
        assert!(!DriftWatches::default().covers("inv", &[]));
    }

    #[test]
    fn watches_within_a_namespace_skip_cluster_scoped_kinds() {
        let table = [
            (None, true, WatchScope::All),
            (None, false, WatchScope::All),
            (Some("tenant"), true, WatchScope::Namespace("tenant")),
            (Some("tenant"), false, WatchScope::Nowhere),
        ];
        for (within, namespaced, want) in table {
            assert_eq!(watch_scope(within, namespaced), want, "{within:?} {namespaced}");
        }
    }

    #[test]
    fn drift_is_a_deletion_or_another_writer() {
        let table = [
            (Event::Apply(meta(&[("capstan", 10, None)])), false),
            (
                Event::Apply(meta(&[("capstan", 10, None), ("kubectl-edit", 20, None)])),
                true,
            ),
            (
                Event::Apply(meta(&[("kubectl-edit", 10, None), ("capstan", 20, None)])),
                false,
            ),
            // A controller's status update is not drift.
            (
                Event::Apply(meta(&[
                    ("capstan", 10, None),
                    ("kube-controller-manager", 20, Some("status")),
                ])),
                false,
            ),
            // The same second: the other writer wins.
            (
                Event::Apply(meta(&[("capstan", 10, None), ("kubectl", 10, None)])),
                true,
            ),
            (Event::Apply(meta(&[])), false),
            (Event::Delete(meta(&[("capstan", 10, None)])), true),
            (Event::InitApply(meta(&[("kubectl", 10, None)])), false),
            (Event::Init, false),
            (Event::InitDone, false),
        ];
        for (event, want) in table {
            assert_eq!(drifted(&event), want, "{event:?}");
        }
    }
}
