//! Prometheus metrics of the operator (served on `/metrics` by [`super::http`]).
//!
//! STUB: the interface the controllers call; the registry behind it comes with the runtime.

use std::time::Duration;

/// The operator's metrics. Cheap to share behind an `Arc`; every method takes `&self`.
#[derive(Debug, Default)]
pub struct Metrics {}

/// What happened to an applied object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectOutcome {
    Applied,
    Failed,
    Pruned,
}

impl Metrics {
    pub fn new() -> Metrics {
        Metrics::default()
    }

    /// One reconcile of `controller` (`clusterstack`, `clusterstackrelease`, `clusteraddon`)
    /// took `duration` and ended well or not.
    pub fn reconciled(&self, controller: &str, duration: Duration, ok: bool) {
        let _ = (controller, duration, ok);
    }

    /// `count` objects of `controller` ended with `outcome`.
    pub fn objects(&self, controller: &str, outcome: ObjectOutcome, count: u64) {
        let _ = (controller, outcome, count);
    }

    /// `count` drifted objects (edited or deleted on the cluster) were restored.
    pub fn drift_corrected(&self, controller: &str, count: u64) {
        let _ = (controller, count);
    }

    /// An observer for GitHub clients that counts their responses.
    pub fn github_observer(self: &std::sync::Arc<Metrics>) -> crate::source::github::Observer {
        let metrics = self.clone();
        std::sync::Arc::new(move |seen: &crate::source::github::ResponseSeen| {
            let _ = (&metrics, seen);
        })
    }

    /// The metrics in Prometheus' text format.
    pub fn encode(&self) -> String {
        String::new()
    }
}
