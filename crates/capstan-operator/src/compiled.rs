//! The compiled releases the operator keeps in memory, by release digest and the dependency
//! policy they were compiled under: compiling a release's charts costs far more than rendering
//! it for one more Cluster, and resolving its dependencies checks their signatures. Older ones
//! are dropped first. Only the cache; the pipeline compiles (`controller::pipeline::compile`).

use std::sync::{Arc, Mutex, MutexGuard};

use capstan_source::charts::Verdict;
use capstan_stack::render::CompiledRelease;

/// Compiled releases kept (by key).
const KEEP: usize = 16;

/// A compiled release with the signers its dependencies were verified by (empty when no
/// policy asked for any).
#[derive(Clone)]
pub struct Compiled {
    pub release: Arc<CompiledRelease>,
    pub signed: Arc<Vec<Verdict>>,
}

#[derive(Default)]
pub struct CompiledReleases {
    /// Oldest first.
    kept: Mutex<Vec<(String, Compiled)>>,
}

impl CompiledReleases {
    /// The compiled release kept as `key`.
    pub fn get(&self, key: &str) -> Option<Compiled> {
        self.lock()
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, found)| found.clone())
    }

    /// Keeps `compiled` as the newest, dropping the oldest beyond the limit.
    pub fn keep(&self, key: &str, compiled: Compiled) -> Compiled {
        let mut kept = self.lock();
        kept.retain(|(k, _)| k != key);
        kept.push((key.to_string(), compiled.clone()));
        if kept.len() > KEEP {
            kept.remove(0);
        }
        compiled
    }

    /// A panic elsewhere while the lock was held left the list whole: it is only pushed to and
    /// trimmed.
    fn lock(&self) -> MutexGuard<'_, Vec<(String, Compiled)>> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }
}
