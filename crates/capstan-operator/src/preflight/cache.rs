//! How often a Cluster's pre-flight is gathered: once per Cluster and step for [`TTL`], so a
//! rollout pass over a large wave (every pass of a Halt rollout judges every waiting Cluster)
//! asks each workload cluster at most once in five minutes. Evidence that could not be read
//! is kept for [`RETRY`] only: a passing glitch should not hold a Cluster for five minutes.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::rollout::preflight::PreflightResult;

/// How long gathered evidence stands.
pub const TTL: Duration = Duration::from_secs(300);
/// How long evidence with a piece that could not be read stands.
pub const RETRY: Duration = Duration::from_secs(30);

/// Whether evidence gathered `age` ago (`complete`: every piece was read) is used again.
pub fn fresh(age: Duration, complete: bool) -> bool {
    age < if complete { TTL } else { RETRY }
}

/// `(Cluster "namespace/name", the step's release)`.
type Key = (String, String);

struct Entry {
    at: Instant,
    complete: bool,
    results: Vec<PreflightResult>,
}

/// Pre-flight results by Cluster and step.
#[derive(Default)]
pub struct PreflightCache {
    entries: Mutex<HashMap<Key, Entry>>,
}

impl PreflightCache {
    /// The results gathered for `cluster`'s step to `release`, while fresh.
    pub fn get(&self, cluster: &str, release: &str) -> Option<Vec<PreflightResult>> {
        let entries = self.lock();
        let entry = entries.get(&(cluster.to_string(), release.to_string()))?;
        fresh(entry.at.elapsed(), entry.complete).then(|| entry.results.clone())
    }

    /// Keeps `results` of `cluster`'s step to `release`; stale entries go.
    pub fn keep(&self, cluster: &str, release: &str, complete: bool, results: Vec<PreflightResult>) {
        let mut entries = self.lock();
        entries.retain(|_, e| fresh(e.at.elapsed(), e.complete));
        entries.insert(
            (cluster.to_string(), release.to_string()),
            Entry {
                at: Instant::now(),
                complete,
                results,
            },
        );
    }

    /// Forgets `cluster`'s results (a force approval asks for a fresh look).
    #[cfg(test)]
    pub fn forget(&self, cluster: &str) {
        self.lock().retain(|(c, _), _| c != cluster);
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_stands_for_its_ttl_and_a_failed_read_for_less() {
        let table = [
            (Duration::ZERO, true, true),
            (TTL - Duration::from_secs(1), true, true),
            (TTL, true, false),
            (RETRY - Duration::from_secs(1), false, true),
            (RETRY, false, false),
        ];
        for (age, complete, want) in table {
            assert_eq!(fresh(age, complete), want, "{age:?} complete={complete}");
        }
        let cache = PreflightCache::default();
        cache.keep("t/a", "r-v2", true, vec![]);
        assert_eq!(cache.get("t/a", "r-v2"), Some(vec![]));
        assert_eq!(cache.get("t/a", "r-v3"), None);
        cache.forget("t/a");
        assert!(cache.is_empty());
    }
}
