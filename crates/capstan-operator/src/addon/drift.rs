//! Drift seen at once, with no agent in the workload cluster: for each inventory capstan
//! applied there, one metadata-only watch per kind, filtered by the inventory's label. An
//! object deleted, or changed last by another field manager than capstan's, wakes the
//! ClusterAddon at once; the interval pass stays the fallback (a change while a watch was
//! reconnecting is seen by the relist only if the object still differs from what capstan
//! applied, so the interval pass catches the rest).
//!
//! Watches live in their workload cluster's cache entry ([`super::workload::Workload`]):
//! dropping the entry (kubeconfig changed, Cluster or ClusterAddon gone, cluster unreachable,
//! evicted) aborts them. Each reconnects with kube's default backoff; its errors are logged
//! and never reach the controller. At most [`MAX_KINDS`] kinds per inventory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use kube::api::DynamicObject;
use kube::core::PartialObjectMeta;
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, watcher::watcher};

use capstan_apply::discovery::Discovery;
use capstan_apply::ssa::{INVENTORY_ID_LABEL, inventory_id};

/// Kinds watched per inventory at most (an addon chart has about ten).
pub const MAX_KINDS: usize = 64;

/// The field manager of capstan's applies.
pub const FIELD_MANAGER: &str = "capstan";

/// Called when a watched object drifted.
pub type Notify = Arc<dyn Fn() + Send + Sync>;

/// `(group, version, kind)`.
pub type Kind = (String, String, String);

/// The running watches of one workload cluster, by inventory and kind; aborted when dropped.
#[derive(Default)]
pub struct DriftWatches {
    tasks: Mutex<HashMap<(String, Kind), tokio::task::JoinHandle<()>>>,
    /// Watch only this namespace (see [`DriftWatches::within`]); `None`: all namespaces.
    namespace: Option<String>,
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
            tasks.retain(|(inv, kind), task| {
                let keep = inv != inventory || wanted.contains(&kind);
                if !keep {
                    task.abort();
                }
                keep && !task.is_finished()
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
            let task = tokio::spawn(watch(api, selector, kind.2.clone(), notify.clone()));
            if let Some(old) = self.lock().insert((inventory.to_string(), kind), task) {
                old.abort();
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

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, Kind), tokio::task::JoinHandle<()>>> {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for DriftWatches {
    fn drop(&mut self) {
        for task in self.lock().values() {
            task.abort();
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
) {
    let config = watcher::Config::default().labels(&selector);
    let mut events = watcher(api, config).default_backoff().boxed();
    while let Some(event) = events.next().await {
        match event {
            Ok(event) if drifted(&event) => notify(),
            Ok(_) => {}
            Err(e) => tracing::debug!(%kind, error = %e, "drift watch error (retrying with backoff)"),
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
