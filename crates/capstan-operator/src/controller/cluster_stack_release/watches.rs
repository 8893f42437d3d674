//! Drift seen at once in the management cluster: the objects a release applied (its
//! ClusterClass and the templates) are watched through [`DriftWatches`], one set per release
//! selecting only that release's objects, started after each apply and stopped when the release is deleted or leaves the operator's
//! watch (another shard or namespace). A drift wakes the release through
//! [`super::ReleaseController::drift`]; the drift pass stays the fallback.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kube::runtime::reflector::ObjectRef;

use crate::api::ClusterStackRelease;
use crate::drift::DriftWatches;

/// The drift watches of every applied release, by release.
#[derive(Default)]
pub struct ReleaseWatches {
    by_release: Mutex<HashMap<ObjectRef<ClusterStackRelease>, Arc<DriftWatches>>>,
}

impl ReleaseWatches {
    /// The watches of `release` (made on first use), listing only `namespace` when given.
    pub fn of(&self, release: &ObjectRef<ClusterStackRelease>, namespace: Option<&str>) -> Arc<DriftWatches> {
        self.lock()
            .entry(release.clone())
            .or_insert_with(|| {
                let watches = namespace.map_or_else(DriftWatches::default, DriftWatches::within);
                Arc::new(watches.for_one_inventory())
            })
            .clone()
    }

    /// Stops the watches of `release` (dropping them aborts their tasks).
    pub fn stop(&self, release: &ObjectRef<ClusterStackRelease>) {
        self.lock().remove(release);
    }

    /// How many releases are watched.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// How many watches run for all releases together.
    pub fn watch_count(&self) -> usize {
        self.lock().values().map(|w| w.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectRef<ClusterStackRelease>, Arc<DriftWatches>>> {
        self.by_release.lock().unwrap_or_else(|p| p.into_inner())
    }
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
    async fn a_release_keeps_its_watches_until_stopped() {
        let watches = ReleaseWatches::default();
        let release = ObjectRef::<ClusterStackRelease>::new("docker-ferrol-1-27-v1").within("tenant");
        let first = watches.of(&release, Some("tenant"));
        assert!(Arc::ptr_eq(&first, &watches.of(&release, Some("tenant"))));
        assert_eq!(watches.len(), 1);
        watches.stop(&release);
        assert!(watches.is_empty());
    }
}
