//! The compiled releases the operator keeps in memory, by release digest: compiling a
//! release's charts costs far more than rendering it for one more Cluster. Older ones are
//! dropped first. Only the cache; the pipeline compiles (`controller::pipeline::compile`).

use std::sync::{Arc, Mutex, MutexGuard};

use capstan_stack::render::CompiledRelease;

/// Compiled releases kept (by release digest).
const KEEP: usize = 16;

#[derive(Default)]
pub struct CompiledReleases {
    /// Oldest first.
    kept: Mutex<Vec<(String, Arc<CompiledRelease>)>>,
}

impl CompiledReleases {
    /// The compiled release of `digest`, when kept.
    pub fn get(&self, digest: &str) -> Option<Arc<CompiledRelease>> {
        self.lock()
            .iter()
            .find(|(d, _)| d == digest)
            .map(|(_, found)| found.clone())
    }

    /// Keeps `compiled` as the newest, dropping the oldest beyond the limit.
    pub fn keep(&self, digest: &str, compiled: CompiledRelease) -> Arc<CompiledRelease> {
        let compiled = Arc::new(compiled);
        let mut kept = self.lock();
        kept.retain(|(d, _)| d != digest);
        kept.push((digest.to_string(), compiled.clone()));
        if kept.len() > KEEP {
            kept.remove(0);
        }
        compiled
    }

    /// A panic elsewhere while the lock was held left the list whole: it is only pushed to and
    /// trimmed.
    fn lock(&self) -> MutexGuard<'_, Vec<(String, Arc<CompiledRelease>)>> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }
}
