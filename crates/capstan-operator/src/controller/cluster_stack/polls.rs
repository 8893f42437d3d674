//! The ClusterStack controller's memory of its sources: the last listing of each stack's
//! source (when, which source, the release tags), so a stack polls at most once per interval.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use capstan_stack::name::ReleaseTag;

/// One listing of a source: when, the source's description, the release tags.
pub type Poll = (Instant, (String, Vec<ReleaseTag>));

/// The last listing per stack (`namespace/name`).
#[derive(Default)]
pub struct Polls(Mutex<HashMap<String, Poll>>);

impl Polls {
    /// The last listing recorded for `key`.
    pub fn last(&self, key: &str) -> Option<Poll> {
        self.lock().get(key).cloned()
    }

    pub fn record(&self, key: &str, source: String, tags: Vec<ReleaseTag>) {
        self.lock()
            .insert(key.to_string(), (Instant::now(), (source, tags)));
    }

    pub fn forget(&self, key: &str) {
        self.lock().remove(key);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Poll>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}
