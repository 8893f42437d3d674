//! Drift seen at once, with no agent in the cluster: one metadata-only watch per kind of each
//! cluster capstan applied to, shared by every inventory there (a ClusterAddon's chart
//! inventory and its stages' inventories), selecting the objects of exactly those inventories
//! (`inventory-id in (…)`): a watch never lists the objects of inventories it does not serve —
//! another Cluster's, when several share one API server, or a release's in a management
//! cluster that is a workload cluster too. A watch whose set grows starts again with the wider
//! selector (the inventories of one pass join together, [`DriftWatches::ensure_all`]). An
//! event is dispatched by that label to its inventory's owner: an object deleted, or changed
//! last by another field manager than capstan's, wakes it (a ClusterAddon for a workload
//! cluster, a ClusterStackRelease for the management cluster) at once. A watch that had to
//! list again (its resourceVersion expired while it was disconnected) wakes every inventory it
//! serves: what changed in the gap is not in the new listing's events.
//!
//! A watch keeps no objects: each event is judged and dropped, so what a watch holds is its
//! task, its connection's stream and the table of the inventories it serves.
//!
//! While every kind of an inventory is watched, listed and untroubled since the inventory's
//! last full pass ([`DriftWatches::covers`]), nothing there can drift unseen, so the interval
//! pass sends no request to the cluster; it stays the fallback for kinds that cannot be
//! watched and for watches that failed since.
//!
//! A workload cluster's watches live in its cache entry ([`crate::addon::workload::Workload`]):
//! dropping the entry (kubeconfig changed, Cluster or ClusterAddon gone, cluster unreachable,
//! evicted) aborts them; the releases' live in
//! [`crate::controller::cluster_stack_release::watches`], one set per namespace scope shared
//! by every release there, each release's inventory forgotten when it is deleted. Each
//! reconnects with kube's default
//! backoff; its errors are logged and never reach the controller. At most [`MAX_KINDS`] kinds
//! per inventory.

mod dispatch;
mod judge;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::DynamicObject;
use kube::core::PartialObjectMeta;
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, watcher::watcher};

use capstan_apply::discovery::Discovery;
use capstan_apply::ssa::{INVENTORY_ID_LABEL, inventory_id};
use capstan_apply::{ObjectKey, PruneNotice};

use dispatch::{Inventories, whom};
pub use dispatch::{Notify, Wake};
pub use judge::drifted;

/// Kinds watched per inventory at most (an addon chart has about ten).
pub const MAX_KINDS: usize = 64;

/// `(group, version, kind)`.
pub type Kind = (String, String, String);

/// The running watches of one cluster, one per kind, each serving every inventory that has
/// objects of its kind there; aborted when dropped.
#[derive(Default)]
pub struct DriftWatches {
    kinds: Mutex<HashMap<Kind, Running>>,
    /// Inventories whose last apply completed ([`DriftWatches::checked`]) and has not been
    /// followed by one that started and did not ([`DriftWatches::unsettle`]).
    settled: Mutex<HashSet<String>>,
    /// Objects capstan is pruning: their deletion is not drift.
    pruning: Arc<Pruning>,
    /// Watch only this namespace (see [`DriftWatches::within`]); `None`: all namespaces.
    namespace: Option<String>,
}

/// How long a notice of capstan's own deletion is kept for its watch event.
const PRUNE_NOTICE_KEPT: Duration = Duration::from_secs(120);

/// `(group, kind, namespace, name)` of an object being deleted.
type Deleted = (String, String, Option<String>, String);

/// Objects capstan is deleting, each with the time it said so.
#[derive(Default)]
struct Pruning(Mutex<HashMap<Deleted, Instant>>);

impl Pruning {
    fn expect(&self, deleted: Deleted) {
        let now = Instant::now();
        let mut expected = lock(&self.0);
        expected.retain(|_, at| now.duration_since(*at) < PRUNE_NOTICE_KEPT);
        expected.insert(deleted, now);
    }

    /// Whether the deletion was capstan's own (said within [`PRUNE_NOTICE_KEPT`]); forgets it.
    fn take(&self, deleted: &Deleted) -> bool {
        lock(&self.0)
            .remove(deleted)
            .is_some_and(|at| at.elapsed() < PRUNE_NOTICE_KEPT)
    }
}

/// The running watch of one kind.
struct Running {
    task: tokio::task::JoinHandle<()>,
    /// Its first listing is complete: from then on every change is an event.
    listed: Arc<AtomicBool>,
    /// The inventories it serves, by their objects' label.
    inventories: Arc<Inventories>,
    /// The labels its selector names: an inventory that joins with another starts it again.
    selects: BTreeSet<String>,
}

impl Running {
    /// Running, listed, serving the inventory labelled `label`, and neither failed nor
    /// listed again since that inventory's last full pass.
    fn covers(&self, label: &str) -> bool {
        !self.task.is_finished() && self.listed.load(Ordering::Acquire) && self.inventories.untroubled(label)
    }
}

impl DriftWatches {
    /// Watches that list only `namespace` (an operator whose rights end at its namespaces,
    /// `-n`); cluster-scoped kinds are not watched then.
    pub fn within(namespace: &str) -> DriftWatches {
        DriftWatches {
            kinds: Mutex::default(),
            settled: Mutex::default(),
            pruning: Arc::default(),
            namespace: Some(namespace.to_string()),
        }
    }

    /// Watches exactly `kinds` for the objects of `inventory` (see [`DriftWatches::ensure_all`]).
    pub async fn ensure(&self, discovery: &Discovery, inventory: &str, kinds: &[Kind], notify: Notify) {
        self.ensure_all(discovery, &[(inventory, kinds)], notify).await;
    }

    /// Watches exactly its `kinds` for the objects of each inventory (an inventory id such as
    /// `kube-system/capstan.caddon.x`) of one owner, telling `notify` of their drift: each
    /// joins the watches of kinds already watched, new kinds start a watch, kinds it no longer
    /// applies leave it (a watch serving no inventory stops). A watch whose selector does not
    /// name a joining inventory starts again naming every inventory it serves; the others it
    /// served may miss a change in the gap, so they count as troubled until their next full
    /// pass.
    pub async fn ensure_all(&self, discovery: &Discovery, inventories: &[(&str, &[Kind])], notify: Notify) {
        let mut joining: Vec<(String, &str, Vec<&Kind>)> = Vec::new();
        for (inventory, kinds) in inventories {
            if kinds.len() > MAX_KINDS {
                tracing::warn!(
                    inventory,
                    kinds = kinds.len(),
                    "drift watches: only the first {MAX_KINDS} kinds are watched"
                );
            }
            let wanted = kinds.iter().take(MAX_KINDS).collect();
            joining.push((inventory_id(inventory), inventory, wanted));
        }
        let to_start: Vec<(Kind, Arc<Inventories>)> = {
            let mut running = self.lock();
            for (label, _, wanted) in &joining {
                leave(&mut running, label, |kind| !wanted.contains(&kind));
            }
            let mut to_start: HashMap<Kind, Arc<Inventories>> = HashMap::new();
            for (label, inventory, wanted) in &joining {
                for kind in wanted {
                    match running.get(*kind) {
                        Some(watch) => {
                            watch.inventories.join(label, inventory, notify.clone());
                            // A watch whose task ended starts again for the same
                            // inventories; one whose selector misses the inventory, wider.
                            if watch.task.is_finished() || !watch.selects.contains(label) {
                                to_start.insert((*kind).clone(), watch.inventories.clone());
                            }
                        }
                        None => {
                            let inventories = to_start
                                .entry((*kind).clone())
                                .or_insert_with(|| Arc::new(Inventories::default()));
                            inventories.join(label, inventory, notify.clone());
                        }
                    }
                }
            }
            to_start.into_iter().collect()
        };
        let joined: BTreeSet<&str> = joining.iter().map(|(label, ..)| label.as_str()).collect();
        for (kind, inventories) in to_start {
            let selects = inventories.labels();
            if selects.iter().any(|label| !joined.contains(label.as_str())) {
                // Served before: the restart's gap is unseen for them.
                inventories.trouble_all();
                for label in &joined {
                    inventories.forget_trouble(label);
                }
            }
            let info = match discovery.resolve(&kind.0, &kind.1, &kind.2).await {
                Ok(info) => info,
                Err(e) => {
                    tracing::debug!(kind = %kind.2, error = %e, "drift watch not started");
                    continue;
                }
            };
            // Metadata only, across namespaces (or in the one namespace).
            let client = discovery.client().clone();
            let api: kube::Api<PartialObjectMeta<DynamicObject>> =
                match watch_scope(self.namespace.as_deref(), info.namespaced) {
                    WatchScope::All => kube::Api::all_with(client, &info.resource),
                    WatchScope::Namespace(ns) => kube::Api::namespaced_with(client, ns, &info.resource),
                    WatchScope::Nowhere => continue,
                };
            let listed = Arc::new(AtomicBool::new(false));
            let task = tokio::spawn(watch(
                api,
                selector(&selects),
                kind.clone(),
                listed.clone(),
                inventories.clone(),
                self.pruning.clone(),
            ));
            let started = Running {
                task,
                listed,
                inventories,
                selects,
            };
            if let Some(old) = self.lock().insert(kind, started) {
                old.task.abort();
            }
        }
    }

    /// Whether the watches see every change of `inventory`'s `kinds` since its last full
    /// pass: each kind watched for it, listed, and its watch neither failed nor listed again
    /// since.
    pub fn covers(&self, inventory: &str, kinds: &[Kind]) -> bool {
        let label = inventory_id(inventory);
        let running = self.lock();
        !kinds.is_empty()
            && kinds
                .iter()
                .all(|kind| running.get(kind).is_some_and(|watch| watch.covers(&label)))
    }

    /// A full pass of `inventory` just compared every object: earlier trouble of its watches
    /// no longer hides anything.
    pub fn checked(&self, inventory: &str) {
        let label = inventory_id(inventory);
        for watch in self.lock().values() {
            watch.inventories.forget_trouble(&label);
        }
        lock(&self.settled).insert(inventory.to_string());
    }

    /// The kinds of `inventory` whose objects are live as its last complete apply left them
    /// and recorded them, unless a watch saw a change (which wakes the owner): each watched,
    /// listed, untroubled since. Empty when an apply of the inventory started since and did
    /// not complete (its failed objects are recorded but not live).
    pub fn covered_kinds(&self, inventory: &str) -> BTreeSet<Kind> {
        if !lock(&self.settled).contains(inventory) {
            return BTreeSet::new();
        }
        let label = inventory_id(inventory);
        self.lock()
            .iter()
            .filter(|(_, watch)| watch.covers(&label))
            .map(|(kind, _)| kind.clone())
            .collect()
    }

    /// What an apply tells before pruning an object: its deletion is capstan's own, not
    /// drift, and wakes nothing.
    pub fn prune_notice(&self) -> PruneNotice {
        let pruning = self.pruning.clone();
        PruneNotice(Arc::new(move |key: &ObjectKey| {
            pruning.expect((
                key.group.clone(),
                key.kind.clone(),
                key.namespace.clone(),
                key.name.clone(),
            ))
        }))
    }

    /// An apply of `inventory` starts: until it completes ([`DriftWatches::checked`]), its
    /// inventory may record objects that are not live.
    pub fn unsettle(&self, inventory: &str) {
        lock(&self.settled).remove(inventory);
    }

    /// No longer watches for `inventory` (its owner is gone): its objects' events wake nobody,
    /// and a watch serving no other inventory stops.
    pub fn forget(&self, inventory: &str) {
        leave(&mut self.lock(), &inventory_id(inventory), |_| true);
        lock(&self.settled).remove(inventory);
    }

    /// How many watches run (one per kind, whatever the number of inventories).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Kind, Running>> {
        lock(&self.kinds)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// The label selector of a watch serving the inventories labelled `labels`: their objects
/// and no others.
fn selector(labels: &BTreeSet<String>) -> String {
    let values: Vec<&str> = labels.iter().map(String::as_str).collect();
    format!("{INVENTORY_ID_LABEL} in ({})", values.join(","))
}

/// The inventory labelled `label` leaves the watches of the kinds `leaves` picks; a watch
/// left serving no inventory stops.
fn leave(running: &mut HashMap<Kind, Running>, label: &str, leaves: impl Fn(&Kind) -> bool) {
    running.retain(|kind, watch| {
        if leaves(kind) {
            watch.inventories.leave(label);
        }
        let serves = !watch.inventories.is_empty();
        if !serves {
            watch.task.abort();
        }
        serves
    });
}

impl Drop for DriftWatches {
    fn drop(&mut self) {
        for watch in self.lock().values() {
            watch.task.abort();
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

/// The watch of `kind`: every object with an inventory label (the label's presence: the
/// objects of every inventory, whoever applied them), its events dispatched to the
/// inventories by that label.
async fn watch(
    api: kube::Api<PartialObjectMeta<DynamicObject>>,
    selector: String,
    kind: Kind,
    listed: Arc<AtomicBool>,
    inventories: Arc<Inventories>,
    pruning: Arc<Pruning>,
) {
    let config = watcher::Config::default().labels(&selector);
    let mut events = watcher(api, config).default_backoff().boxed();
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                inventories.trouble_all();
                tracing::debug!(kind = %kind.2, error = %e, "drift watch error (retrying with backoff)");
                continue;
            }
        };
        let pruned = match &event {
            Event::Delete(meta) => pruning.take(&(
                kind.0.clone(),
                kind.2.clone(),
                meta.metadata.namespace.clone(),
                meta.metadata.name.clone().unwrap_or_default(),
            )),
            _ => false,
        };
        let wake = whom(&event, listed.load(Ordering::Acquire), pruned);
        if matches!(event, Event::InitDone) {
            listed.store(true, Ordering::Release);
        }
        inventories.wake(wake);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, ObjectMeta, Time};

    #[test]
    fn a_watch_selects_the_inventories_it_serves_and_no_others() {
        let one = inventory_id("tenant/capstan.csr.docker-ferrol-1-27-v1");
        let two = inventory_id("kube-system/capstan.caddon.cluster-addon-a");
        let labels = |l: &[&String]| l.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        assert_eq!(
            selector(&labels(&[&one])),
            format!("{INVENTORY_ID_LABEL} in ({one})")
        );
        let (low, high) = if one < two { (&one, &two) } else { (&two, &one) };
        assert_eq!(
            selector(&labels(&[&two, &one])),
            format!("{INVENTORY_ID_LABEL} in ({low},{high})")
        );
        assert_eq!(
            DriftWatches::within("tenant").namespace.as_deref(),
            Some("tenant")
        );
    }

    /// A counter and the [`Notify`] that counts.
    fn counter() -> (Arc<std::sync::atomic::AtomicUsize>, Notify) {
        let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = count.clone();
        (
            count,
            Arc::new(move || {
                counted.fetch_add(1, Ordering::SeqCst);
            }),
        )
    }

    #[tokio::test]
    async fn a_forgotten_inventory_wakes_nobody_and_its_last_watch_stops() {
        let watches = DriftWatches::within("tenant");
        let (a, b) = ("tenant/capstan.cskr.a", "tenant/capstan.cskr.b");
        let (told_a, notify_a) = counter();
        let (told_b, notify_b) = counter();
        // Two releases' inventories share the watch of one kind; `b` has a kind of its own.
        running(&watches, a, "Deployment", true, false);
        running(&watches, b, "Deployment", true, false);
        running(&watches, b, "DaemonSet", true, false);
        for watch in watches.lock().values() {
            watch.inventories.join(&inventory_id(a), a, notify_a.clone());
            watch.inventories.join(&inventory_id(b), b, notify_b.clone());
        }
        watches.lock()[&kind("DaemonSet")]
            .inventories
            .leave(&inventory_id(a));
        assert_eq!(watches.len(), 2);
        watches.checked(b);
        watches.forget(b);
        let wake = |label: &str| {
            for watch in watches.lock().values() {
                watch.inventories.wake(Wake::Owner(inventory_id(label)));
            }
        };
        wake(b);
        assert_eq!(
            told_b.load(Ordering::SeqCst),
            0,
            "a forgotten inventory wakes nobody"
        );
        assert!(watches.covered_kinds(b).is_empty());
        // The shared watch stays for `a`; the one only `b` used stopped.
        assert_eq!(watches.len(), 1);
        wake(a);
        assert_eq!(told_a.load(Ordering::SeqCst), 1);
        watches.forget(a);
        assert!(watches.is_empty());
    }

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

    /// The watch of `kind` (one that never ends, listed or not when it starts here) serving
    /// inventory `inv` too, troubled or not.
    fn running(watches: &DriftWatches, inv: &str, name: &str, listed: bool, troubled: bool) {
        let mut kinds = watches.lock();
        let watch = kinds.entry(kind(name)).or_insert_with(|| Running {
            task: tokio::spawn(futures::future::pending::<()>()),
            listed: Arc::new(AtomicBool::new(listed)),
            inventories: Arc::default(),
            selects: BTreeSet::new(),
        });
        watch.inventories.join(&inventory_id(inv), inv, Arc::new(|| {}));
        if troubled {
            watch.inventories.trouble_all();
        }
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
            // Another inventory's watch of a kind does not serve this one.
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

    #[tokio::test]
    async fn kinds_are_covered_only_between_a_complete_apply_and_the_next_start() {
        let watches = DriftWatches::default();
        running(&watches, "inv", "Deployment", true, false);
        running(&watches, "inv", "DaemonSet", true, true);
        running(&watches, "inv", "StatefulSet", false, false);
        running(&watches, "other", "Service", true, false);
        // No apply completed yet: nothing is known live as recorded.
        assert!(watches.covered_kinds("inv").is_empty());
        watches.checked("inv");
        // Trouble forgotten by the full pass; still listing is not covered; another
        // inventory's watch does not count.
        let covered: Vec<String> = watches.covered_kinds("inv").into_iter().map(|k| k.2).collect();
        assert_eq!(covered, ["DaemonSet", "Deployment"]);
        // An apply started and did not complete: nothing again until the next complete one.
        watches.unsettle("inv");
        assert!(watches.covered_kinds("inv").is_empty());
        watches.checked("inv");
        assert_eq!(watches.covered_kinds("inv").len(), 2);
        // A watch that failed since.
        running(&watches, "inv", "Deployment", true, true);
        let covered: Vec<String> = watches.covered_kinds("inv").into_iter().map(|k| k.2).collect();
        assert_eq!(covered, ["DaemonSet"]);
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
            // Before 1.22 a status update names no subresource: its fields tell.
            (Event::Apply(status_update(meta(&[("capstan", 10, None)]))), false),
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

    /// `meta` with a newer entry of another manager owning only status, recorded as API
    /// servers before 1.22 record it (no `subresource`); a second entry owning spec too is
    /// another writer's change.
    fn status_update(mut meta: PartialObjectMeta<DynamicObject>) -> PartialObjectMeta<DynamicObject> {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1;
        let entry = |fields: serde_json::Value| ManagedFieldsEntry {
            manager: Some("kube-apiserver".into()),
            time: Some(Time(k8s_openapi::jiff::Timestamp::from_second(20).expect("time"))),
            fields_v1: Some(FieldsV1(fields)),
            ..ManagedFieldsEntry::default()
        };
        let entries = meta.metadata.managed_fields.get_or_insert_with(Vec::new);
        entries.push(entry(serde_json::json!({"f:status": {"f:conditions": {}}})));
        let mut spec_too = meta.clone();
        let more = spec_too.metadata.managed_fields.get_or_insert_with(Vec::new);
        more.pop();
        more.push(entry(serde_json::json!({"f:status": {}, "f:spec": {}})));
        assert!(
            drifted(&Event::Apply(spec_too)),
            "a write of spec and status is drift"
        );
        meta
    }

    #[test]
    fn capstan_s_own_pruning_is_expected_once() {
        let pruning = Pruning::default();
        let deployment = |name: &str| {
            (
                "apps".to_string(),
                "Deployment".to_string(),
                Some("ns".to_string()),
                name.to_string(),
            )
        };
        pruning.expect(deployment("web"));
        assert!(!pruning.take(&deployment("db")), "another object");
        assert!(pruning.take(&deployment("web")));
        assert!(
            !pruning.take(&deployment("web")),
            "a second deletion is drift again"
        );
        let watches = DriftWatches::default();
        let key = ObjectKey {
            group: "apps".into(),
            version: "v1".into(),
            kind: "Deployment".into(),
            namespace: Some("ns".into()),
            name: "web".into(),
        };
        (watches.prune_notice().0)(&key);
        assert!(watches.pruning.take(&deployment("web")));
    }
}
