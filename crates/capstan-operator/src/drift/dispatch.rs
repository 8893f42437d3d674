//! How the shared watch of one kind tells its inventories: whom an event wakes (pure), and the
//! table of the inventories it serves, by the value of their objects' inventory label.

use std::collections::HashMap;
use std::sync::Mutex;

use kube::api::DynamicObject;
use kube::core::PartialObjectMeta;
use kube::runtime::watcher::Event;

use capstan_apply::ssa::INVENTORY_ID_LABEL;

use super::judge::drifted;

/// Called when a watched object drifted.
pub type Notify = std::sync::Arc<dyn Fn() + Send + Sync>;

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// Whom an event of a shared watch wakes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wake {
    Nobody,
    /// The inventory whose objects carry this label value: one of its objects drifted.
    Owner(String),
    /// Every inventory served: the watch lists again, changes in the gap are unseen.
    Everyone,
}

/// Whom `event` wakes, given whether the watch had listed before and whether the event is the
/// deletion capstan's own pruning announced.
pub fn whom(event: &Event<PartialObjectMeta<DynamicObject>>, listed: bool, pruned: bool) -> Wake {
    match event {
        Event::Init if listed => Wake::Everyone,
        Event::Apply(meta) | Event::Delete(meta) if drifted(event) && !pruned => meta
            .metadata
            .labels
            .as_ref()
            .and_then(|labels| labels.get(INVENTORY_ID_LABEL))
            .map_or(Wake::Nobody, |label| Wake::Owner(label.clone())),
        _ => Wake::Nobody,
    }
}

/// An inventory served by a watch.
struct Served {
    notify: Notify,
    /// The watch failed or listed again since this inventory's last full pass.
    troubled: bool,
}

/// The inventories a watch serves, by the label value of their objects
/// ([`capstan_apply::ssa::inventory_id`]).
#[derive(Default)]
pub struct Inventories(Mutex<HashMap<String, Served>>);

impl Inventories {
    /// Serves the inventory labelled `label` (named `inventory`, for the logs), telling
    /// `notify`; an inventory served already keeps its trouble.
    pub fn join(&self, label: &str, inventory: &str, notify: Notify) {
        let mut served = lock(&self.0);
        match served.get_mut(label) {
            Some(entry) => entry.notify = notify,
            None => {
                tracing::trace!(inventory, "drift watch joined");
                served.insert(
                    label.to_string(),
                    Served {
                        notify,
                        troubled: false,
                    },
                );
            }
        }
    }

    /// No longer serves the inventory labelled `label`.
    pub fn leave(&self, label: &str) {
        lock(&self.0).remove(label);
    }

    pub fn is_empty(&self) -> bool {
        lock(&self.0).is_empty()
    }

    /// The labels of the inventories served.
    pub fn labels(&self) -> std::collections::BTreeSet<String> {
        lock(&self.0).keys().cloned().collect()
    }

    /// Whether the inventory labelled `label` is served and untroubled.
    pub fn untroubled(&self, label: &str) -> bool {
        lock(&self.0).get(label).is_some_and(|served| !served.troubled)
    }

    /// The inventory labelled `label` had a full pass: earlier trouble hides nothing.
    pub fn forget_trouble(&self, label: &str) {
        if let Some(served) = lock(&self.0).get_mut(label) {
            served.troubled = false;
        }
    }

    /// The watch failed: every inventory may have missed a change.
    pub fn trouble_all(&self) {
        for served in lock(&self.0).values_mut() {
            served.troubled = true;
        }
    }

    /// Tells whom `wake` names (outside the lock); a relist also troubles everyone. A label
    /// no inventory here carries (another operator's, a forgotten inventory's) wakes nobody.
    pub fn wake(&self, wake: Wake) {
        let notify: Vec<Notify> = {
            let mut served = lock(&self.0);
            match wake {
                Wake::Nobody => Vec::new(),
                Wake::Owner(label) => served.get(&label).map(|s| s.notify.clone()).into_iter().collect(),
                Wake::Everyone => served
                    .values_mut()
                    .map(|s| {
                        s.troubled = true;
                        s.notify.clone()
                    })
                    .collect(),
            }
        };
        for notify in notify {
            notify();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, ObjectMeta, Time};

    use super::*;

    /// Metadata of an object of the inventory labelled `label` (if any), last written by
    /// `manager`.
    fn object(label: Option<&str>, manager: &str) -> PartialObjectMeta<DynamicObject> {
        PartialObjectMeta {
            types: None,
            metadata: ObjectMeta {
                name: Some("web".into()),
                labels: label.map(|l| BTreeMap::from([(INVENTORY_ID_LABEL.to_string(), l.to_string())])),
                managed_fields: Some(vec![ManagedFieldsEntry {
                    manager: Some(manager.into()),
                    time: Some(Time(k8s_openapi::jiff::Timestamp::from_second(10).expect("time"))),
                    ..ManagedFieldsEntry::default()
                }]),
                ..ObjectMeta::default()
            },
            _phantom: Default::default(),
        }
    }

    #[test]
    fn an_event_wakes_the_inventory_its_label_names() {
        let owner = |label: &str| Wake::Owner(label.into());
        let a = Some("aaaa");
        let table = [
            // (event, listed before, pruned by capstan, whom)
            (Event::Apply(object(a, "kubectl")), true, false, owner("aaaa")),
            (
                Event::Apply(object(Some("bbbb"), "kubectl")),
                true,
                false,
                owner("bbbb"),
            ),
            (Event::Apply(object(a, "capstan")), true, false, Wake::Nobody),
            (Event::Delete(object(a, "capstan")), true, false, owner("aaaa")),
            // capstan's own pruning.
            (Event::Delete(object(a, "capstan")), true, true, Wake::Nobody),
            // No label: no inventory to tell.
            (Event::Delete(object(None, "capstan")), true, false, Wake::Nobody),
            // The first listing is not drift; a relist troubles every inventory.
            (Event::Init, false, false, Wake::Nobody),
            (Event::InitApply(object(a, "kubectl")), false, false, Wake::Nobody),
            (Event::InitDone, false, false, Wake::Nobody),
            (Event::Init, true, false, Wake::Everyone),
            (Event::InitApply(object(a, "kubectl")), true, false, Wake::Nobody),
        ];
        for (event, listed, pruned, want) in table {
            assert_eq!(
                whom(&event, listed, pruned),
                want,
                "{event:?} listed {listed} pruned {pruned}"
            );
        }
    }

    /// A counter and the [`Notify`] that counts.
    fn counter() -> (Arc<AtomicUsize>, Notify) {
        let count = Arc::new(AtomicUsize::new(0));
        let counted = count.clone();
        (
            count,
            Arc::new(move || {
                counted.fetch_add(1, Ordering::SeqCst);
            }),
        )
    }

    #[test]
    fn a_shared_watch_tells_only_the_owner_and_everyone_on_a_relist() {
        let served = Inventories::default();
        let (chart, notify_chart) = counter();
        let (stage, notify_stage) = counter();
        served.join("aaaa", "kube-system/chart", notify_chart);
        served.join("bbbb", "kube-system/stage", notify_stage);
        let told = || (chart.load(Ordering::SeqCst), stage.load(Ordering::SeqCst));

        served.wake(Wake::Owner("bbbb".into()));
        assert_eq!(told(), (0, 1));
        served.wake(Wake::Owner("cccc".into()));
        served.wake(Wake::Nobody);
        assert_eq!(told(), (0, 1), "a label no inventory here carries");
        assert!(served.untroubled("aaaa") && served.untroubled("bbbb"));

        served.wake(Wake::Everyone);
        assert_eq!(told(), (1, 2));
        assert!(!served.untroubled("aaaa") && !served.untroubled("bbbb"));
        // One inventory's full pass forgets only its own trouble.
        served.forget_trouble("aaaa");
        assert!(served.untroubled("aaaa") && !served.untroubled("bbbb"));
        // Joining again keeps the trouble; a failed watch troubles everyone.
        let (_, again) = counter();
        served.join("bbbb", "kube-system/stage", again);
        assert!(!served.untroubled("bbbb"));
        served.trouble_all();
        assert!(!served.untroubled("aaaa"));

        served.leave("aaaa");
        assert!(!served.untroubled("aaaa"), "not served any more");
        served.leave("bbbb");
        assert!(served.is_empty());
    }
}
