//! Prometheus metrics of the operator (served on `/metrics` by [`super::http`]), kept in a
//! `prometheus-client` registry; every series is prefixed `capstan_`.

use std::sync::Arc;
use std::sync::atomic::AtomicI64;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use capstan_source::{github, oci};

/// Content type of [`Metrics::encode`]'s output: `prometheus-client` writes the OpenMetrics
/// text format (counters as `_total`, a closing `# EOF`), which Prometheus scrapes natively.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The operator's metrics. Cheap to share behind an `Arc`; every method takes `&self`.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    reconciles: Family<ControllerResult, Counter>,
    reconcile_duration: Family<ControllerLabel, Histogram, fn() -> Histogram>,
    reconcile_errors: Family<ControllerError, Counter>,
    objects: Family<ControllerOutcome, Counter>,
    drift_corrections: Family<ControllerLabel, Counter>,
    github_requests: Family<StatusClass, Counter>,
    github_rate_limit_remaining: Gauge<i64, AtomicI64>,
    oci_requests: Family<StatusClass, Counter>,
    source_verifications: Family<VerificationResult, Counter>,
}

/// What happened to an applied object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectOutcome {
    Applied,
    Failed,
    Pruned,
}

impl ObjectOutcome {
    fn label(self) -> &'static str {
        match self {
            ObjectOutcome::Applied => "applied",
            ObjectOutcome::Failed => "failed",
            ObjectOutcome::Pruned => "pruned",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabel {
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerError {
    controller: String,
    /// The error's kind (`Error::metric_label`): `kube`, `source`, `render`, `apply`, …
    error: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerResult {
    controller: String,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerOutcome {
    controller: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VerificationResult {
    /// `verified`, or the refusal's reason (`NoSignature`, `WrongKey`, …).
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusClass {
    /// `2xx`, `3xx` (the 304 of an idle re-poll), `4xx`, `5xx`.
    code: &'static str,
}

/// Reconcile durations from 5 ms to about 80 s: a cached re-apply is milliseconds, a first
/// download and render of a release tens of seconds.
fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.0, 15))
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("capstan");
        let reconciles = Family::default();
        registry.register(
            "reconciles",
            "Reconciles by controller and result (success, error)",
            reconciles.clone(),
        );
        let reconcile_duration =
            Family::<ControllerLabel, Histogram, fn() -> Histogram>::new_with_constructor(duration_histogram);
        registry.register(
            "reconcile_duration_seconds",
            "Time one reconcile took, by controller",
            reconcile_duration.clone(),
        );
        let reconcile_errors = Family::default();
        registry.register(
            "reconcile_errors",
            "Reconciles that ended in an error, by controller and kind of error",
            reconcile_errors.clone(),
        );
        let objects = Family::default();
        registry.register(
            "objects",
            "Objects applied, failed or pruned, by controller and outcome",
            objects.clone(),
        );
        let drift_corrections = Family::default();
        registry.register(
            "drift_corrections",
            "Drifted objects (edited or deleted on the cluster) restored, by controller",
            drift_corrections.clone(),
        );
        let github_requests = Family::default();
        registry.register(
            "github_requests",
            "GitHub API responses by status code class",
            github_requests.clone(),
        );
        let github_rate_limit_remaining = Gauge::default();
        registry.register(
            "github_rate_limit_remaining",
            "GitHub API requests left in the current rate-limit window (last response seen)",
            github_rate_limit_remaining.clone(),
        );
        let oci_requests = Family::default();
        registry.register(
            "oci_requests",
            "OCI registry responses (token endpoints included) by status code class",
            oci_requests.clone(),
        );
        let source_verifications = Family::default();
        registry.register(
            "source_verifications",
            "Release signature verifications (the cache's recorded ones not counted) by result",
            source_verifications.clone(),
        );
        Metrics {
            registry,
            reconciles,
            reconcile_duration,
            reconcile_errors,
            objects,
            drift_corrections,
            github_requests,
            github_rate_limit_remaining,
            oci_requests,
            source_verifications,
        }
    }

    /// One release's signatures checked against its policy: `verified` or the refusal's reason.
    pub fn source_verified(&self, result: &'static str) {
        self.source_verifications
            .get_or_create(&VerificationResult { result })
            .inc();
    }

    /// One reconcile of `controller` (`clusterstack`, `clusterstackrelease`, `clusteraddon`)
    /// took `duration` and ended well or with an error of kind `error`.
    pub fn reconciled(&self, controller: &str, duration: Duration, error: Option<&'static str>) {
        let result = if error.is_none() { "success" } else { "error" };
        self.reconciles
            .get_or_create(&ControllerResult {
                controller: controller.to_string(),
                result,
            })
            .inc();
        let label = ControllerLabel {
            controller: controller.to_string(),
        };
        self.reconcile_duration
            .get_or_create(&label)
            .observe(duration.as_secs_f64());
        if let Some(error) = error {
            self.reconcile_errors
                .get_or_create(&ControllerError {
                    controller: controller.to_string(),
                    error,
                })
                .inc();
        }
    }

    /// `count` objects of `controller` ended with `outcome`.
    pub fn objects(&self, controller: &str, outcome: ObjectOutcome, count: u64) {
        self.objects
            .get_or_create(&ControllerOutcome {
                controller: controller.to_string(),
                outcome: outcome.label(),
            })
            .inc_by(count);
    }

    /// `count` drifted objects (edited or deleted on the cluster) were restored.
    pub fn drift_corrected(&self, controller: &str, count: u64) {
        self.drift_corrections
            .get_or_create(&ControllerLabel {
                controller: controller.to_string(),
            })
            .inc_by(count);
    }

    /// One GitHub API response with `status`, and the rate limit it reported.
    pub fn github_response(&self, status: u16, rate_limit_remaining: Option<u64>) {
        self.github_requests
            .get_or_create(&StatusClass {
                code: status_class(status),
            })
            .inc();
        if let Some(remaining) = rate_limit_remaining {
            self.github_rate_limit_remaining
                .set(i64::try_from(remaining).unwrap_or(i64::MAX));
        }
    }

    /// An observer for [`github::Config::observer`] that feeds [`Metrics::github_response`].
    pub fn github_observer(self: &Arc<Metrics>) -> github::Observer {
        let metrics = Arc::clone(self);
        Arc::new(move |seen: &github::ResponseSeen| {
            metrics.github_response(seen.status, seen.rate_limit_remaining)
        })
    }

    /// One response of an OCI registry or its token endpoint.
    pub fn oci_response(&self, status: u16) {
        self.oci_requests
            .get_or_create(&StatusClass {
                code: status_class(status),
            })
            .inc();
    }

    /// An observer for [`oci::Config::observer`] that feeds [`Metrics::oci_response`].
    pub fn oci_observer(self: &Arc<Metrics>) -> oci::client::Observer {
        let metrics = Arc::clone(self);
        Arc::new(move |seen: &oci::client::RequestSeen| metrics.oci_response(seen.status))
    }

    /// The metrics in the OpenMetrics text format ([`CONTENT_TYPE`]).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail; an encoding error would be a bug in a label.
        if let Err(err) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            tracing::error!("encoding metrics: {err}");
        }
        out
    }
}

fn status_class(status: u16) -> &'static str {
    match status {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_has_the_series_recorded() {
        let m = Metrics::new();
        m.reconciled("clusterstack", Duration::from_millis(30), None);
        m.reconciled("clusterstack", Duration::from_millis(40), None);
        m.reconciled("clusterstackrelease", Duration::from_secs(2), Some("render"));
        m.objects("clusterstackrelease", ObjectOutcome::Applied, 7);
        m.objects("clusterstackrelease", ObjectOutcome::Failed, 1);
        m.objects("clusterstackrelease", ObjectOutcome::Pruned, 2);
        m.drift_corrected("clusterstackrelease", 3);
        m.github_response(200, Some(4999));
        m.github_response(304, Some(4998));
        m.github_response(503, None);
        m.oci_response(401);
        m.oci_response(200);
        m.oci_response(200);
        let text = m.encode();
        for line in [
            r#"capstan_reconciles_total{controller="clusterstack",result="success"} 2"#,
            r#"capstan_reconciles_total{controller="clusterstackrelease",result="error"} 1"#,
            r#"capstan_reconcile_errors_total{controller="clusterstackrelease",error="render"} 1"#,
            r#"capstan_reconcile_duration_seconds_count{controller="clusterstack"} 2"#,
            r#"capstan_reconcile_duration_seconds_sum{controller="clusterstackrelease"} 2.0"#,
            r#"capstan_objects_total{controller="clusterstackrelease",outcome="applied"} 7"#,
            r#"capstan_objects_total{controller="clusterstackrelease",outcome="failed"} 1"#,
            r#"capstan_objects_total{controller="clusterstackrelease",outcome="pruned"} 2"#,
            r#"capstan_drift_corrections_total{controller="clusterstackrelease"} 3"#,
            r#"capstan_github_requests_total{code="2xx"} 1"#,
            r#"capstan_github_requests_total{code="3xx"} 1"#,
            r#"capstan_github_requests_total{code="5xx"} 1"#,
            // The last response that reported one: a 503 without the header keeps it.
            "capstan_github_rate_limit_remaining 4998",
            r#"capstan_oci_requests_total{code="2xx"} 2"#,
            r#"capstan_oci_requests_total{code="4xx"} 1"#,
            "# EOF",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in:\n{text}");
        }
        // No reconcile errors for a controller that never failed.
        assert!(!text.contains(r#"capstan_reconcile_errors_total{controller="clusterstack","#));
    }
}
