//! Prometheus metrics of the operator (served on `/metrics` by [`super::http`]), kept in a
//! `prometheus-client` registry; every series is prefixed `capstan_`.
//!
//! Two kinds: counters and histograms the controllers feed as they work, and the fleet's
//! state, read at each scrape from the controllers' stores ([`Fleet`]): one series per
//! ClusterAddon, ClusterStack and ClusterStackRelease — never one per applied object — so the
//! series grow with the fleet and nothing else (the README lists every series and its labels).

mod fleet_series;

pub use fleet_series::{Census, fleet_series};

use std::sync::atomic::{AtomicI64, AtomicU64};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::runtime::reflector::Store;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};

use capstan_source::{github, oci};

use crate::api::{ClusterAddon, ClusterStack, ClusterStackRelease};

mod declare;
pub use declare::Declared;
use declare::Declaring;

/// Content type of [`Metrics::encode`]'s output: `prometheus-client` writes the OpenMetrics
/// text format (counters as `_total`, a closing `# EOF`), which Prometheus scrapes natively.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The operator's metrics. Cheap to share behind an `Arc`; every method takes `&self`.
#[derive(Debug)]
pub struct Metrics {
    registry: Declaring,
    reconciles: Family<ControllerResult, Counter>,
    reconcile_duration: Family<ControllerLabel, Histogram, fn() -> Histogram>,
    reconcile_errors: Family<ControllerError, Counter>,
    objects: Family<ControllerOutcome, Counter>,
    drift_corrections: Family<ControllerLabel, Counter>,
    drift_checks: Family<DriftCheck, Counter>,
    github_requests: Family<StatusClass, Counter>,
    /// Exported only once a GitHub response reported it ([`RateLimitCollector`]).
    github_rate_limit_remaining: Arc<Mutex<Option<u64>>>,
    oci_requests: Family<StatusClass, Counter>,
    source_polls: Family<SourcePoll, Counter>,
    leader: Gauge<i64, AtomicI64>,
    cluster_api: Family<CapiVersionLabel, Gauge<i64, AtomicI64>>,
    /// What the fleet series are read from; set once the controllers run.
    fleet: Arc<Mutex<Option<Fleet>>>,
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
struct DriftCheck {
    controller: String,
    by: &'static str,
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

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CapiVersionLabel {
    /// `v1beta1`, `v1beta2`, or `none` (no version capstan speaks is served).
    version: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourcePoll {
    /// `github`, `oci`, `git`, `local`.
    source: &'static str,
    /// `success`, `error`.
    result: &'static str,
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
        let mut registry = Declaring::with_prefix("capstan");
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
        let drift_corrections: Family<ControllerLabel, Counter> = Family::default();
        registry.register(
            "drift_corrections",
            "Drifted objects (edited or deleted on the cluster) restored, by controller",
            drift_corrections.clone(),
        );
        let drift_checks: Family<DriftCheck, Counter> = Family::default();
        registry.register(
            "drift_checks",
            "Drift checks of applied releases, by controller and how: `watches` (the drift watches saw every change, nothing sent) or `comparison` (every object compared with the cluster)",
            drift_checks.clone(),
        );
        let github_requests = Family::default();
        registry.register(
            "github_requests",
            "GitHub API responses by status code class",
            github_requests.clone(),
        );
        let github_rate_limit_remaining = Arc::new(Mutex::new(None));
        registry.register_collector(Box::new(RateLimitCollector(Arc::clone(
            &github_rate_limit_remaining,
        ))));
        let oci_requests = Family::default();
        registry.register(
            "oci_requests",
            "OCI registry responses (token endpoints included) by status code class",
            oci_requests.clone(),
        );
        let source_polls = Family::default();
        registry.register(
            "source_polls",
            "Listings of a ClusterStack's source for new releases, by kind of source and result",
            source_polls.clone(),
        );
        let leader = Gauge::default();
        registry.register(
            "leader",
            "1 while this process leads (runs the controllers), else 0",
            leader.clone(),
        );
        let cluster_api = Family::default();
        registry.register(
            "cluster_api_version",
            "1 for the Cluster API version (cluster.x-k8s.io) the operator speaks, chosen by discovery; version=\"none\" is 1 while no version it speaks is served",
            cluster_api.clone(),
        );
        // Zero from the start for the controllers that apply (a dashboard shows 0, not nothing).
        for controller in ["clusterstackrelease", "clusteraddon"] {
            drift_corrections
                .get_or_create(&ControllerLabel {
                    controller: controller.to_string(),
                })
                .inc_by(0);
        }
        let fleet = Arc::new(Mutex::new(None));
        registry.register_collector(Box::new(FleetCollector(Arc::clone(&fleet))));
        registry.register_collector(Box::new(ProcessCollector));
        let source_verifications = Family::default();
        registry.register(
            "source_verifications",
            "Release signature verifications (the cache's recorded ones not counted) by result",
            source_verifications.clone(),
        );
        Metrics {
            source_polls,
            leader,
            cluster_api,
            fleet,
            registry,
            reconciles,
            reconcile_duration,
            reconcile_errors,
            objects,
            drift_corrections,
            drift_checks,
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

    /// One drift check of an applied release of `controller`, `by` the watches or a comparison.
    pub fn drift_checked(&self, controller: &str, by: &'static str) {
        self.drift_checks
            .get_or_create(&DriftCheck {
                controller: controller.to_string(),
                by,
            })
            .inc();
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
            *self
                .github_rate_limit_remaining
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = Some(remaining);
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

    /// One listing of a source of kind `source` (`github`, `oci`, `git`, `local`).
    pub fn source_polled(&self, source: &'static str, ok: bool) {
        let result = if ok { "success" } else { "error" };
        self.source_polls
            .get_or_create(&SourcePoll { source, result })
            .inc();
    }

    /// Whether this process leads now.
    pub fn leading(&self, leading: bool) {
        self.leader.set(i64::from(leading));
    }

    /// The Cluster API version spoken now (`None`: none is served).
    pub fn cluster_api(&self, version: Option<capstan_stack::capi::CapiVersion>) {
        let spoken = version.map_or("none", |v| v.as_str());
        for label in ["v1beta1", "v1beta2", "none"] {
            self.cluster_api
                .get_or_create(&CapiVersionLabel { version: label })
                .set(i64::from(label == spoken));
        }
    }

    /// Reads the fleet series from `fleet` from now on.
    pub fn observe_fleet(&self, fleet: Fleet) {
        *self.fleet.lock().unwrap_or_else(|p| p.into_inner()) = Some(fleet);
    }

    /// Every series registered (not those the fleet and process collectors add as they encode).
    pub fn declared(&self) -> &[Declared] {
        &self.registry.declared
    }

    /// The metrics in the OpenMetrics text format ([`CONTENT_TYPE`]).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail; an encoding error would be a bug in a label.
        if let Err(err) = prometheus_client::encoding::text::encode(&mut out, &self.registry.registry) {
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

/// What the fleet series are read from at each scrape: the controllers' stores and a census
/// of the workload cluster cache (`None` once the controllers stopped).
pub struct Fleet {
    pub stacks: Store<ClusterStack>,
    pub releases: Store<ClusterStackRelease>,
    pub addons: Store<ClusterAddon>,
    /// Whether a ClusterAddon of the store is this process' own (its namespaces and shard).
    pub admits: Box<dyn Fn(&ClusterAddon) -> bool + Send + Sync>,
    pub census: Box<dyn Fn() -> Option<Census> + Send + Sync>,
}

impl std::fmt::Debug for Fleet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fleet").finish_non_exhaustive()
    }
}

/// `capstan_github_rate_limit_remaining`, the rate limit the last GitHub response reported:
/// no series before one did (a 0 from start-up would read as an exhausted limit, and a fleet
/// without a GitHub source has none to report).
#[derive(Debug)]
struct RateLimitCollector(Arc<Mutex<Option<u64>>>);

impl Collector for RateLimitCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(remaining) = *self.0.lock().unwrap_or_else(|p| p.into_inner()) else {
            return Ok(());
        };
        let gauge =
            prometheus_client::metrics::gauge::ConstGauge::new(i64::try_from(remaining).unwrap_or(i64::MAX));
        let metric = encoder.encode_descriptor(
            "github_rate_limit_remaining",
            "GitHub API requests left in the current rate-limit window (last response seen)",
            None,
            gauge.metric_type(),
        )?;
        gauge.encode(metric)
    }
}

/// Encodes [`fleet_series`] of the stores at each scrape.
#[derive(Debug)]
struct FleetCollector(Arc<Mutex<Option<Fleet>>>);

type Labels = Vec<(&'static str, String)>;

impl Collector for FleetCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let series = {
            let guard = self.0.lock().unwrap_or_else(|p| p.into_inner());
            let Some(fleet) = guard.as_ref() else {
                return Ok(());
            };
            let mut addons = fleet.addons.state();
            addons.retain(|addon| (fleet.admits)(addon));
            fleet_series(
                &fleet.stacks.state(),
                &fleet.releases.state(),
                &addons,
                (fleet.census)(),
            )
        };
        for (name, help, rows) in series.families {
            let family = Family::<Labels, Gauge<f64, AtomicU64>>::default();
            for (labels, value) in rows {
                family.get_or_create(&labels).set(value);
            }
            let metric = encoder.encode_descriptor(name, help, None, family.metric_type())?;
            family.encode(metric)?;
        }
        Ok(())
    }
}

/// The operator process' memory and CPU, read from `/proc/self` at each scrape (Linux; elsewhere
/// nothing).
#[derive(Debug)]
struct ProcessCollector;

/// Clock ticks per second of `/proc`'s CPU times (`USER_HZ`, 100 on every Linux ABI).
const USER_HZ: f64 = 100.0;

/// Resident memory in bytes from `/proc/self/status` (`VmRSS:  1234 kB`).
pub fn resident_bytes(status: &str) -> Option<f64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024.0)
}

/// User plus system CPU seconds from `/proc/self/stat` (fields 14 and 15, after the command's
/// closing parenthesis).
pub fn cpu_seconds(stat: &str) -> Option<f64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state): utime is field 14, stime 15.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / USER_HZ)
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        if let Some(bytes) = std::fs::read_to_string("/proc/self/status")
            .ok()
            .as_deref()
            .and_then(resident_bytes)
        {
            let gauge = prometheus_client::metrics::gauge::ConstGauge::new(bytes);
            let metric = encoder.encode_descriptor(
                "process_resident_memory_bytes",
                "Resident memory of the operator process",
                None,
                gauge.metric_type(),
            )?;
            gauge.encode(metric)?;
        }
        if let Some(seconds) = std::fs::read_to_string("/proc/self/stat")
            .ok()
            .as_deref()
            .and_then(cpu_seconds)
        {
            let counter = prometheus_client::metrics::counter::ConstCounter::new(seconds);
            let metric = encoder.encode_descriptor(
                "process_cpu_seconds",
                "CPU time (user and system) of the operator process",
                None,
                counter.metric_type(),
            )?;
            counter.encode(metric)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleet_series::{FleetSeries, Series};
    use kube::ResourceExt;

    #[test]
    fn the_rate_limit_is_exported_once_github_reported_it() {
        let m = Metrics::new();
        assert!(
            !m.encode().contains("github_rate_limit_remaining"),
            "{}",
            m.encode()
        );
        // A response without the header (a 503 of a proxy) reports none either.
        m.github_response(503, None);
        assert!(
            !m.encode().contains("github_rate_limit_remaining"),
            "{}",
            m.encode()
        );
        m.github_response(200, Some(0));
        let text = m.encode();
        assert!(
            text.lines().any(|l| l == "capstan_github_rate_limit_remaining 0"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE capstan_github_rate_limit_remaining gauge"),
            "{text}"
        );
    }

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

    fn addon(
        cluster: &str,
        wanted: &str,
        applied: Option<&str>,
        ready: bool,
        synced: &[bool],
    ) -> Arc<ClusterAddon> {
        use crate::api::{ClusterAddonSpec, ClusterAddonStatus, Resource};
        let mut a = ClusterAddon::new(
            &format!("cluster-addon-{cluster}"),
            ClusterAddonSpec {
                cluster_stack: Some(wanted.into()),
                cluster_ref: k8s_openapi::api::core::v1::ObjectReference {
                    name: Some(cluster.into()),
                    ..Default::default()
                },
                ..Default::default()
            },
        );
        a.metadata.namespace = Some("t".into());
        a.status = Some(ClusterAddonStatus {
            ready,
            applied_cluster_stack: applied.map(str::to_string),
            resources: synced
                .iter()
                .map(|s| Resource {
                    status: if *s {
                        Resource::SYNCED
                    } else {
                        Resource::NOT_SYNCED
                    }
                    .into(),
                    ..Default::default()
                })
                .collect(),
            last_reconciled: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                "2026-11-26T12:00:00Z".parse().expect("time"),
            )),
            ..Default::default()
        });
        Arc::new(a)
    }

    fn family<'a>(series: &'a FleetSeries, name: &str) -> &'a [Series] {
        series
            .families
            .iter()
            .find(|(n, _, _)| *n == name)
            .map(|(_, _, rows)| rows.as_slice())
            .unwrap_or_else(|| panic!("no family {name}"))
    }

    #[test]
    fn fleet_series_one_per_addon_stack_and_release() {
        let mut release = ClusterStackRelease::new("docker-ferrol-1-27-v1", Default::default());
        release.metadata.namespace = Some("t".into());
        release.status = Some(crate::api::ClusterStackReleaseStatus {
            ready: true,
            ..Default::default()
        });
        let mut stack = ClusterStack::new(
            "ferrol",
            serde_json::from_value(
                serde_json::json!({"provider": "docker", "name": "ferrol", "kubernetesVersion": "1.27"}),
            )
            .expect("spec"),
        );
        stack.metadata.namespace = Some("t".into());
        stack.status = Some(crate::api::ClusterStackStatus {
            latest_release: Some("docker-ferrol-1-27-v2".into()),
            ..Default::default()
        });
        let addons = [
            addon(
                "a",
                "docker-ferrol-1-27-v1",
                Some("docker-ferrol-1-27-v1"),
                true,
                &[true, true],
            ),
            addon(
                "b",
                "docker-ferrol-1-27-v2",
                Some("docker-ferrol-1-27-v1"),
                false,
                &[true, false],
            ),
        ];
        let series = fleet_series(&[Arc::new(stack)], &[Arc::new(release)], &addons, None);
        let labels = |cluster: &str| -> Vec<(&'static str, String)> {
            vec![
                ("namespace", "t".into()),
                ("cluster", cluster.into()),
                ("stack", "docker-ferrol-1-27".into()),
                ("release", "docker-ferrol-1-27-v1".into()),
            ]
        };
        assert_eq!(
            family(&series, "cluster_addon_ready"),
            [(labels("a"), 1.0), (labels("b"), 0.0)]
        );
        let key = |c: &str| vec![("namespace", "t".to_string()), ("cluster", c.to_string())];
        assert_eq!(
            family(&series, "cluster_addon_current"),
            [(key("a"), 1.0), (key("b"), 0.0)]
        );
        assert_eq!(
            family(&series, "cluster_addon_objects"),
            [(key("a"), 2.0), (key("b"), 2.0)]
        );
        assert_eq!(
            family(&series, "cluster_addon_objects_synced"),
            [(key("a"), 2.0), (key("b"), 1.0)]
        );
        assert_eq!(
            family(&series, "cluster_addon_last_pass_timestamp_seconds")[0].1,
            1_795_694_400.0
        );
        // A later check the watches vouched for (kept in memory) is the last pass; an earlier
        // one is not.
        let names: Vec<String> = addons.iter().map(|a| a.name_any()).collect();
        let census = Census {
            addon_checks: std::collections::HashMap::from([
                (("t".to_string(), names[0].clone()), 1_795_694_460),
                (("t".to_string(), names[1].clone()), 1_795_694_000),
            ]),
            ..Census::default()
        };
        let with_checks = fleet_series(&[], &[], &addons, Some(census));
        assert_eq!(
            family(&with_checks, "cluster_addon_last_pass_timestamp_seconds"),
            [(key("a"), 1_795_694_460.0), (key("b"), 1_795_694_400.0)]
        );
        assert_eq!(
            family(&series, "cluster_stack_newest_release"),
            [(
                vec![
                    ("namespace", "t".into()),
                    ("cluster_stack", "ferrol".into()),
                    ("release", "docker-ferrol-1-27-v2".into())
                ],
                1.0
            )]
        );
        let rel = vec![
            ("namespace", "t".to_string()),
            ("release", "docker-ferrol-1-27-v1".to_string()),
        ];
        assert_eq!(
            family(&series, "cluster_stack_release_ready"),
            [(rel.clone(), 1.0)]
        );
        assert_eq!(family(&series, "cluster_stack_release_clusters"), [(rel, 2.0)]);
        // Without a census (controllers not running) no cache series.
        assert!(series.families.iter().all(|(n, _, _)| *n != "workload_clusters"));
    }

    #[test]
    fn observed_fleet_and_process_series_are_encoded() {
        let m = Metrics::new();
        m.leading(true);
        m.source_polled("github", true);
        m.source_polled("oci", false);
        let (stacks, _w1) = kube::runtime::reflector::store::<ClusterStack>();
        let (releases, _w2) = kube::runtime::reflector::store::<ClusterStackRelease>();
        let (addons, _w3) = kube::runtime::reflector::store::<ClusterAddon>();
        m.observe_fleet(Fleet {
            stacks,
            releases,
            addons,
            admits: Box::new(|_| true),
            census: Box::new(|| {
                Some(Census {
                    healthy: 3,
                    suspect: 1,
                    workload_watches: 7,
                    management_watches: 2,
                    ..Census::default()
                })
            }),
        });
        let text = m.encode();
        for line in [
            "capstan_leader 1",
            r#"capstan_source_polls_total{source="github",result="success"} 1"#,
            r#"capstan_source_polls_total{source="oci",result="error"} 1"#,
            r#"capstan_workload_clusters{health="healthy"} 3.0"#,
            r#"capstan_workload_clusters{health="suspect"} 1.0"#,
            r#"capstan_drift_watches{cluster="workload"} 7.0"#,
            r#"capstan_drift_watches{cluster="management"} 2.0"#,
            "# TYPE capstan_cluster_addon_ready gauge",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line:?} in:\n{text}");
        }
        if cfg!(target_os = "linux") {
            assert!(
                text.contains("\ncapstan_process_resident_memory_bytes "),
                "{text}"
            );
            assert!(text.contains("\ncapstan_process_cpu_seconds_total "), "{text}");
        }
    }

    #[test]
    fn proc_files_parse() {
        assert_eq!(resident_bytes("Name:\tx\nVmRSS:\t  2048 kB\n"), Some(2_097_152.0));
        assert_eq!(resident_bytes("Name: x\n"), None);
        let stat = "42 (capstan (op)) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 8 0 1 2 3";
        assert_eq!(cpu_seconds(stat), Some(3.0));
        assert_eq!(cpu_seconds("garbage"), None);
    }
}
