//! The fleet's series — per ClusterAddon, ClusterStack and release, never per object —
//! computed from the controllers' stores at each scrape, and the census of the workload cluster
//! cache: pure, table-tested in `metrics`.

use std::sync::Arc;

use kube::ResourceExt;

use capstan_stack::name::ReleaseTag;

use crate::api::{ClusterAddon, ClusterStack, ClusterStackRelease, conditions};

/// The workload clusters the operator keeps connections to, and the drift watches it runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Census {
    /// Cached workload clusters whose last pass succeeded.
    pub healthy: usize,
    /// Cached workload clusters a pass failed on since (probed before the next use).
    pub suspect: usize,
    /// Drift watches running in workload clusters.
    pub workload_watches: usize,
    /// Drift watches running in the management cluster.
    pub management_watches: usize,
    /// When the drift watches last vouched for each ClusterAddon (namespace, name), in
    /// seconds: a check kept in memory, not in `status.lastReconciled`.
    pub addon_checks: std::collections::HashMap<(String, String), i64>,
}

/// One series: its labels and value.
pub type Series = (Vec<(&'static str, String)>, f64);

/// The fleet's series by name (without the `capstan_` prefix), with their help texts.
#[derive(Debug, Default, PartialEq)]
pub struct FleetSeries {
    pub families: Vec<(&'static str, &'static str, Vec<Series>)>,
}

/// The ClusterAddon's gate condition and its reason while the workload cluster does not answer
/// (`controller::cluster_addon`).
const CLUSTER_READY: &str = "ClusterReady";
const WORKLOAD_NOT_READY: &str = "WorkloadNotReady";

/// A release name (tag, or ClusterClass name) read as a release.
fn release_tag(name: &str) -> Option<ReleaseTag> {
    ReleaseTag::parse(name)
        .or_else(|_| ReleaseTag::parse_cluster_class(name))
        .ok()
}

/// The fleet's series from the objects, pure: what the metrics' fleet collector encodes.
pub fn fleet_series(
    stacks: &[Arc<ClusterStack>],
    releases: &[Arc<ClusterStackRelease>],
    addons: &[Arc<ClusterAddon>],
    census: Option<Census>,
) -> FleetSeries {
    let mut ready = Vec::new();
    let mut current = Vec::new();
    let mut objects = Vec::new();
    let mut synced = Vec::new();
    let mut last_pass = Vec::new();
    let mut reachable = Vec::new();
    for addon in addons {
        let namespace = addon.namespace().unwrap_or_default();
        let cluster = addon.spec.cluster_ref.name.clone().unwrap_or_default();
        let status = addon.status.clone().unwrap_or_default();
        let wanted = addon.spec.cluster_stack.clone().unwrap_or_default();
        let applied = status.applied_cluster_stack.clone().unwrap_or_default();
        let release = if applied.is_empty() {
            wanted.clone()
        } else {
            applied.clone()
        };
        let stack = release_tag(&release)
            .map(|t| t.stack().to_string())
            .unwrap_or_default();
        let key = vec![("namespace", namespace.clone()), ("cluster", cluster.clone())];
        let mut labels = key.clone();
        labels.extend([("stack", stack), ("release", release)]);
        ready.push((labels, f64::from(u8::from(status.ready))));
        let on_wanted = !applied.is_empty()
            && (applied == wanted
                || (release_tag(&applied).is_some() && release_tag(&applied) == release_tag(&wanted)));
        current.push((key.clone(), f64::from(u8::from(on_wanted))));
        objects.push((key.clone(), status.resources.len() as f64));
        synced.push((
            key.clone(),
            status.resources.iter().filter(|r| r.is_synced()).count() as f64,
        ));
        let recorded = status.last_reconciled.as_ref().map(|at| at.0.as_second());
        let checked = census
            .as_ref()
            .and_then(|c| c.addon_checks.get(&(namespace.clone(), addon.name_any())))
            .copied();
        if let Some(at) = recorded.max(checked) {
            last_pass.push((key.clone(), at as f64));
        }
        // The gate condition: true once the workload API server answered; false with
        // `WorkloadNotReady` while its kubeconfig or `/readyz` fails (other reasons are about
        // the Cluster, not its reachability, and give no series).
        match conditions::find(&status.conditions, CLUSTER_READY) {
            Some(c) if c.is_true() => reachable.push((key, 1.0)),
            Some(c) if c.reason == WORKLOAD_NOT_READY => reachable.push((key, 0.0)),
            _ => {}
        }
    }
    let mut newest = Vec::new();
    for stack in stacks {
        if let Some(latest) = stack.status.as_ref().and_then(|s| s.latest_release.clone()) {
            newest.push((
                vec![
                    ("namespace", stack.namespace().unwrap_or_default()),
                    ("cluster_stack", stack.name_any()),
                    ("release", latest),
                ],
                1.0,
            ));
        }
    }
    let mut release_ready = Vec::new();
    let mut release_clusters = Vec::new();
    for release in releases {
        let namespace = release.namespace().unwrap_or_default();
        let name = release.name_any();
        let tag = release_tag(&name);
        let status = release.status.clone().unwrap_or_default();
        let ready = status.ready || conditions::is_true(&status.conditions, conditions::READY);
        let labels = vec![("namespace", namespace.clone()), ("release", name.clone())];
        release_ready.push((labels.clone(), f64::from(u8::from(ready))));
        let users = addons
            .iter()
            .filter(|a| a.namespace().as_deref() == Some(namespace.as_str()))
            .filter_map(|a| a.status.as_ref()?.applied_cluster_stack.clone())
            .filter(|applied| *applied == name || (tag.is_some() && release_tag(applied) == tag))
            .count();
        release_clusters.push((labels, users as f64));
    }
    let mut families = vec![
        (
            "cluster_addon_ready",
            "1 when a ClusterAddon's addons are applied and ready, by namespace, cluster, stack and release (the applied one, else the wanted one)",
            ready,
        ),
        (
            "cluster_addon_current",
            "1 when a ClusterAddon's applied release is the one its Cluster's class wants",
            current,
        ),
        (
            "cluster_addon_objects",
            "Objects in a ClusterAddon's status (applied or tried)",
            objects,
        ),
        (
            "cluster_addon_objects_synced",
            "Objects of a ClusterAddon whose last apply succeeded",
            synced,
        ),
        (
            "cluster_addon_last_pass_timestamp_seconds",
            "When a ClusterAddon's applied objects were last checked (status.lastReconciled), Unix time",
            last_pass,
        ),
        (
            "cluster_addon_workload_reachable",
            "1 when a ClusterAddon's workload API server answered, 0 while its kubeconfig or /readyz fails",
            reachable,
        ),
        (
            "cluster_stack_newest_release",
            "The newest release of a ClusterStack's source (status.latestRelease); value always 1",
            newest,
        ),
        (
            "cluster_stack_release_ready",
            "1 when a ClusterStackRelease is ready to use",
            release_ready,
        ),
        (
            "cluster_stack_release_clusters",
            "ClusterAddons whose addons were last applied from the release (Clusters on it)",
            release_clusters,
        ),
    ];
    if let Some(census) = census {
        families.push((
            "workload_clusters",
            "Workload clusters with a cached connection, by health (healthy, suspect: a pass failed since)",
            vec![
                (vec![("health", "healthy".into())], census.healthy as f64),
                (vec![("health", "suspect".into())], census.suspect as f64),
            ],
        ));
        families.push((
            "drift_watches",
            "Drift watches running, by cluster (workload, management)",
            vec![
                (
                    vec![("cluster", "workload".into())],
                    census.workload_watches as f64,
                ),
                (
                    vec![("cluster", "management".into())],
                    census.management_watches as f64,
                ),
            ],
        ));
    }
    FleetSeries { families }
}
