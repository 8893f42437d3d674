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
//! A watch starts from where its inventories' objects were written (the resourceVersions the
//! apply told, [`DriftWatches::wrote`]), so it lists nothing and sees every change since the
//! apply, one made before the watch started included; see [`watcher`].
//!
//! A watch keeps no objects: each event is judged and dropped, so what a watch holds is its
//! task, its connection's stream and the table of the inventories it serves.
//!
//! While every kind of an inventory is watched, listed and untroubled since the inventory's
//! last full pass ([`DriftWatches::covers`]), nothing there can drift unseen, so the interval
//! pass sends no request to the cluster; it stays the fallback for kinds that cannot be
//! watched, for watches in error and for those that listed again since.
//!
//! A workload cluster's watches live in its cache entry ([`crate::addon::workload::Workload`]):
//! dropping the entry (kubeconfig changed, Cluster or ClusterAddon gone, cluster unreachable,
//! evicted) aborts them; the releases' live in
//! [`crate::controller::cluster_stack_release::watches`], one set per namespace scope shared
//! by every release there, each release's inventory forgotten when it is deleted. Each
//! reconnects with a backoff of its own ([`watcher::backoff`]); its errors are logged and
//! never reach the controller. At most [`MAX_KINDS`] kinds
//! per inventory.

mod dispatch;
mod judge;
pub mod watcher;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::runtime::watcher::Event;

use capstan_apply::discovery::Discovery;
use capstan_apply::ssa::{INVENTORY_ID_LABEL, inventory_id};
use capstan_apply::{ObjectKey, PruneNotice};

use dispatch::{Inventories, whom};
pub use dispatch::{Notify, Wake};
use watcher::{LastSeen, Seen, Watcher, usable};

/// Kinds watched per inventory at most (an addon chart has about ten).
pub const MAX_KINDS: usize = 64;

/// `(group, version, kind)`.
pub type Kind = (String, String, String);

/// Per kind, the lowest resourceVersion an apply of an inventory wrote (a watch from there
/// sees every later change of the inventory's objects of that kind).
pub type Written = std::collections::BTreeMap<Kind, String>;

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
    /// Where each inventory's history starts, per kind, told by its last apply
    /// ([`DriftWatches::wrote`]) and taken when its watches start.
    written: Mutex<HashMap<String, Written>>,
    /// A watch that followed failed since [`DriftWatches::take_failure`] last looked: the
    /// cluster may be unreachable.
    failed: Arc<AtomicBool>,
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
    /// It follows a resourceVersion (its watch answered, or its first listing is complete):
    /// from then on every change is an event.
    listed: Arc<AtomicBool>,
    /// The resourceVersion it saw last: a restart for more inventories resumes from here.
    seen: Arc<LastSeen>,
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
            written: Mutex::default(),
            failed: Arc::default(),
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
    /// name a joining inventory starts again naming every inventory it serves.
    ///
    /// Where a watch starts: from where the histories of its inventories' objects start (the
    /// lowest resourceVersion their last applies wrote of its kind, [`DriftWatches::wrote`];
    /// for a restart, also the old watch's last seen one), so it sees every change since —
    /// including one made between an apply and the watch's start — and lists nothing. Where
    /// one of them is unknown it lists; the inventories it served before may then miss a
    /// change in the gap, so they count as troubled until their next full pass.
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
        let written: HashMap<&str, Written> = {
            let mut stash = lock(&self.written);
            joining
                .iter()
                .map(|(_, inventory, _)| (*inventory, stash.remove(*inventory).unwrap_or_default()))
                .collect()
        };
        let to_start: Vec<(Kind, Start)> = {
            let mut running = self.lock();
            for (label, _, wanted) in &joining {
                leave(&mut running, label, |kind| !wanted.contains(&kind));
            }
            let mut to_start: HashMap<Kind, Start> = HashMap::new();
            for (label, inventory, wanted) in &joining {
                for kind in wanted {
                    let history = written.get(inventory).and_then(|w| w.get(*kind)).cloned();
                    match running.get(*kind) {
                        Some(watch) => {
                            watch.inventories.join(label, inventory, notify.clone());
                            // A watch whose task ended starts again for the same
                            // inventories; one whose selector misses the inventory, wider.
                            if watch.task.is_finished() || !watch.selects.contains(label) {
                                let start = to_start.entry((*kind).clone()).or_insert_with(|| Start {
                                    inventories: watch.inventories.clone(),
                                    from: Some(watch.seen.get()),
                                });
                                start.from = lowest(start.from.take(), history);
                            }
                        }
                        None => {
                            let start = to_start.entry((*kind).clone()).or_insert_with(|| Start {
                                inventories: Arc::new(Inventories::default()),
                                from: None,
                            });
                            start.inventories.join(label, inventory, notify.clone());
                            start.from = lowest(start.from.take(), history);
                        }
                    }
                }
            }
            to_start.into_iter().collect()
        };
        let joined: BTreeSet<&str> = joining.iter().map(|(label, ..)| label.as_str()).collect();
        for (kind, start) in to_start {
            let Start { inventories, from } = start;
            let from = from.flatten();
            let selects = inventories.labels();
            if from.is_none() && selects.iter().any(|label| !joined.contains(label.as_str())) {
                // Served before, and listed again: the restart's gap is unseen for them.
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
            let api: kube::Api<kube::api::DynamicObject> =
                match watch_scope(self.namespace.as_deref(), info.namespaced) {
                    WatchScope::All => kube::Api::all_with(client.clone(), &info.resource),
                    WatchScope::Namespace(ns) => {
                        kube::Api::namespaced_with(client.clone(), ns, &info.resource)
                    }
                    WatchScope::Nowhere => continue,
                };
            let watcher = Watcher {
                client,
                url: api.resource_url().to_string(),
                selector: selector(&selects),
            };
            let listed = Arc::new(AtomicBool::new(false));
            let seen = Arc::new(LastSeen::default());
            let task = tokio::spawn(watch(
                watcher,
                from,
                kind.clone(),
                Following {
                    listed: listed.clone(),
                    seen: seen.clone(),
                    inventories: inventories.clone(),
                    pruning: self.pruning.clone(),
                    failed: self.failed.clone(),
                },
            ));
            let started = Running {
                task,
                listed,
                seen,
                inventories,
                selects,
            };
            if let Some(old) = self.lock().insert(kind, started) {
                old.task.abort();
            }
        }
    }

    /// An apply of `inventory` wrote its objects of each kind at resourceVersions from
    /// `written`'s on: where its watches start next ([`DriftWatches::ensure_all`]).
    pub fn wrote(&self, inventory: &str, written: Written) {
        lock(&self.written).insert(inventory.to_string(), written);
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

    /// Whether a watch runs for `inventory` (joined by [`DriftWatches::ensure_all`], not
    /// forgotten): after a restart, or once a cluster's cache entry was dropped, none does
    /// until a pass watches it again.
    pub fn serves(&self, inventory: &str) -> bool {
        let label = inventory_id(inventory);
        self.lock()
            .values()
            .any(|watch| !watch.task.is_finished() && watch.inventories.labels().contains(&label))
    }

    /// Whether a watch that was following failed since the last call (and forgets it): its
    /// cluster is worth a probe before the next use.
    pub fn take_failure(&self) -> bool {
        self.failed.swap(false, Ordering::AcqRel)
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
        lock(&self.written).remove(inventory);
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

/// A watch to start: the inventories it serves and where it starts.
struct Start {
    inventories: Arc<Inventories>,
    /// `None`: nothing said yet; `Some(None)`: a history unknown (it lists); `Some(Some(v))`:
    /// every history it serves starts at `v` or later.
    from: Option<Option<String>>,
}

/// Where a watch starts that must see the histories of `so_far` and one starting at
/// `history`: the lower resourceVersion; unknown if either is unknown or not a number.
fn lowest(so_far: Option<Option<String>>, history: Option<String>) -> Option<Option<String>> {
    let Some(so_far) = so_far else {
        return Some(history);
    };
    let (Some(a), Some(b)) = (so_far, history) else {
        return Some(None);
    };
    match (usable(&a), usable(&b)) {
        (Some(x), Some(y)) => Some(Some(if x <= y { a } else { b })),
        _ => Some(None),
    }
}

/// Per kind, the lowest resourceVersion the answers to an apply carried, from its `results`:
/// only kinds whose every applied object was written and told a decimal resourceVersion (an
/// object left alone or failed leaves its kind's history unknown); pruned objects do not count.
pub fn written(results: &[capstan_apply::ObjectResult]) -> Written {
    use capstan_apply::SyncStatus;
    let mut lowest_of: HashMap<Kind, Option<Option<String>>> = HashMap::new();
    for result in results {
        if matches!(result.status, SyncStatus::Pruned) {
            continue;
        }
        let kind = (
            result.key.group.clone(),
            result.key.version.clone(),
            result.key.kind.clone(),
        );
        let version = match result.status {
            SyncStatus::Synced => result.resource_version.clone(),
            _ => None,
        };
        let entry = lowest_of.entry(kind).or_default();
        *entry = lowest(entry.take(), version);
    }
    lowest_of
        .into_iter()
        .filter_map(|(kind, from)| Some((kind, from.flatten()?)))
        .collect()
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

/// What a running watch shares with its owner and reads to dispatch.
struct Following {
    listed: Arc<AtomicBool>,
    seen: Arc<LastSeen>,
    inventories: Arc<Inventories>,
    pruning: Arc<Pruning>,
    /// Set when the watch fails after following ([`DriftWatches::take_failure`]).
    failed: Arc<AtomicBool>,
}

/// The watch of `kind` (from `from` when known), its events dispatched to the inventories it
/// serves by their objects' inventory label.
async fn watch(watcher: Watcher, from: Option<String>, kind: Kind, following: Following) {
    let Following {
        listed,
        seen,
        inventories,
        pruning,
        failed,
    } = following;
    watcher
        .run(from, seen, |seen| {
            let event = match seen {
                Seen::Following { again } => {
                    let wake = whom(&Event::Init, again, false);
                    listed.store(true, Ordering::Release);
                    inventories.wake(wake);
                    return;
                }
                Seen::Failed(error) => {
                    // Not following until it is again: meanwhile the interval pass compares.
                    // It resumes from its resourceVersion and misses nothing; should that have
                    // expired, its listing troubles and wakes every inventory it serves.
                    let was_following = listed.swap(false, Ordering::AcqRel);
                    tracing::debug!(kind = %kind.2, %error, "drift watch error (retrying with backoff)");
                    // The first failure after following wakes the owners at once: the
                    // cluster may be unreachable, which their pass probes and reports.
                    if was_following {
                        failed.store(true, Ordering::Release);
                        inventories.wake(Wake::Everyone);
                    }
                    return;
                }
                Seen::Changed(meta) => Event::Apply(meta),
                Seen::Deleted(meta) => Event::Delete(meta),
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
            inventories.wake(whom(&event, true, pruned));
        })
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use judge::drifted;
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

    fn meta(
        entries: &[(&str, i64, Option<&str>)],
    ) -> kube::core::PartialObjectMeta<kube::api::DynamicObject> {
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
        kube::core::PartialObjectMeta {
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
            seen: Arc::default(),
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
    fn a_kind_s_history_starts_at_the_lowest_version_written_if_every_object_told_one() {
        use capstan_apply::{Action, ObjectResult, SyncStatus};
        let result = |kind: &str, name: &str, status: SyncStatus, version: Option<&str>| ObjectResult {
            key: ObjectKey {
                group: "apps".into(),
                version: "v1".into(),
                kind: kind.into(),
                namespace: Some("ns".into()),
                name: name.into(),
            },
            status,
            action: Action::Configured,
            message: String::new(),
            last_applied_hash: None,
            resource_version: version.map(str::to_string),
        };
        let results = [
            // Compared as numbers, not as text.
            result("Deployment", "a", SyncStatus::Synced, Some("900")),
            result("Deployment", "b", SyncStatus::Synced, Some("1000")),
            // A pruned object does not count.
            result("Deployment", "c", SyncStatus::Pruned, None),
            // An object not written: the kind's history is unknown.
            result("DaemonSet", "a", SyncStatus::Synced, Some("950")),
            result("DaemonSet", "b", SyncStatus::Synced, None),
            result("StatefulSet", "a", SyncStatus::Failed, None),
            // Opaque: not compared.
            result("ReplicaSet", "a", SyncStatus::Synced, Some("12")),
            result("ReplicaSet", "b", SyncStatus::Synced, Some("x7")),
            result("Service", "a", SyncStatus::Synced, Some("20")),
        ];
        let got: Vec<(String, String)> = written(&results)
            .into_iter()
            .map(|(kind, version)| (kind.2, version))
            .collect();
        assert_eq!(
            got,
            [
                ("Deployment".to_string(), "900".to_string()),
                ("Service".to_string(), "20".to_string())
            ]
        );
        let some = |v: &str| Some(v.to_string());
        let table = [
            (None, some("5"), Some(some("5"))),
            (None, None, Some(None)),
            (Some(some("5")), some("40"), Some(some("5"))),
            (Some(some("50")), some("40"), Some(some("40"))),
            (Some(some("50")), None, Some(None)),
            (Some(None), some("40"), Some(None)),
            (Some(some("5")), some("opaque"), Some(None)),
        ];
        for (so_far, history, want) in table {
            assert_eq!(
                lowest(so_far.clone(), history.clone()),
                want,
                "{so_far:?} {history:?}"
            );
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
    fn status_update(
        mut meta: kube::core::PartialObjectMeta<kube::api::DynamicObject>,
    ) -> kube::core::PartialObjectMeta<kube::api::DynamicObject> {
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
