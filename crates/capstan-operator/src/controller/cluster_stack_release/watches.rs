//! Drift seen at once in the management cluster: the objects the releases applied (their
//! ClusterClasses and templates) are watched through one [`DriftWatches`] per namespace scope
//! — one watch per kind, shared by every release there, as a workload cluster's watches are
//! shared by its inventories —, each release's inventory joining them after each apply and
//! forgotten when the release is deleted or leaves the operator's watch (another shard or
//! namespace). A drift wakes the release through [`super::ReleaseController::drift`]; the
//! drift pass stays the fallback.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kube::runtime::reflector::ObjectRef;

use crate::api::ClusterStackRelease;
use crate::drift::DriftWatches;

/// Where a set of watches lists: one namespace, or all (`None`).
type Scope = Option<String>;

/// A watched release's scope and the ids of its inventories there.
type Joined = (Scope, Vec<String>);

/// The drift watches of every applied release: one set per scope, and the inventories each
/// release has in them.
#[derive(Default)]
pub struct ReleaseWatches {
    by_scope: Mutex<HashMap<Scope, Arc<DriftWatches>>>,
    /// Each watched release's scope and inventory ids.
    by_release: Mutex<HashMap<ObjectRef<ClusterStackRelease>, Joined>>,
}

impl ReleaseWatches {
    /// The watches `release` joins with `inventories` (made on first use), listing only
    /// `namespace` when given; shared by every release of that scope.
    pub fn of(
        &self,
        release: &ObjectRef<ClusterStackRelease>,
        namespace: Option<&str>,
        inventories: Vec<String>,
    ) -> Arc<DriftWatches> {
        lock(&self.by_release).insert(release.clone(), (namespace.map(str::to_string), inventories));
        self.scope(namespace)
    }

    /// The watches of the scope listing only `namespace` when given (made on first use).
    pub fn scope(&self, namespace: Option<&str>) -> Arc<DriftWatches> {
        let scope: Scope = namespace.map(str::to_string);
        lock(&self.by_scope)
            .entry(scope)
            .or_insert_with(|| Arc::new(namespace.map_or_else(DriftWatches::default, DriftWatches::within)))
            .clone()
    }

    /// Forgets the inventories of `release` in its scope's watches: their objects' events wake
    /// nothing, and a watch no other release needs stops.
    pub fn stop(&self, release: &ObjectRef<ClusterStackRelease>) {
        let Some((scope, inventories)) = lock(&self.by_release).remove(release) else {
            return;
        };
        let watches = lock(&self.by_scope).get(&scope).cloned();
        if let Some(watches) = watches {
            for inventory in &inventories {
                watches.forget(inventory);
            }
        }
    }

    /// How many releases are watched.
    #[cfg(any(test, feature = "testing"))]
    pub fn len(&self) -> usize {
        lock(&self.by_release).len()
    }

    /// How many watches run for all releases together.
    pub fn watch_count(&self) -> usize {
        lock(&self.by_scope).values().map(|w| w.len()).sum()
    }

    #[cfg(any(test, feature = "testing"))]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// The namespace the watches of a release in `release_namespace` list: its own when the
/// operator's rights end at its namespaces (`-n`, `operator_namespaces` not empty), else all
/// (an object of the chart may name another namespace).
pub fn watch_namespace<'a>(operator_namespaces: &[String], release_namespace: &'a str) -> Option<&'a str> {
    (!operator_namespaces.is_empty()).then_some(release_namespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaced_operators_watch_the_release_namespace() {
        let tenants = vec!["tenant".to_string(), "team-b".to_string()];
        let table: [(&[String], &str, Option<&str>); 3] = [
            (&[], "tenant", None),
            (&tenants, "tenant", Some("tenant")),
            (&tenants, "team-b", Some("team-b")),
        ];
        for (operator, release, want) in table {
            assert_eq!(watch_namespace(operator, release), want, "{operator:?} {release}");
        }
    }

    #[tokio::test]
    async fn the_releases_of_a_scope_share_its_watches_until_stopped() {
        let watches = ReleaseWatches::default();
        let release =
            |name: &str, namespace: &str| ObjectRef::<ClusterStackRelease>::new(name).within(namespace);
        let (v1, v2) = (
            release("docker-ferrol-1-27-v1", "tenant"),
            release("docker-ferrol-1-27-v2", "tenant"),
        );
        let inventory = |r: &ObjectRef<ClusterStackRelease>| vec![format!("tenant/capstan.cskr.{}", r.name)];
        let first = watches.of(&v1, Some("tenant"), inventory(&v1));
        assert!(Arc::ptr_eq(
            &first,
            &watches.of(&v2, Some("tenant"), inventory(&v2))
        ));
        let other = watches.of(
            &release("docker-ferrol-1-27-v1", "team-b"),
            Some("team-b"),
            Vec::new(),
        );
        assert!(!Arc::ptr_eq(&first, &other), "another namespace, other watches");
        let everywhere = watches.of(&release("docker-ferrol-1-27-v3", "tenant"), None, Vec::new());
        assert!(!Arc::ptr_eq(&first, &everywhere), "all namespaces, other watches");
        assert_eq!(watches.len(), 4);
        watches.stop(&v1);
        watches.stop(&v2);
        assert_eq!(watches.len(), 2);
        // Stopping a release never watched (or stopped already) is nothing.
        watches.stop(&v2);
        assert_eq!(watches.len(), 2);
    }
}
