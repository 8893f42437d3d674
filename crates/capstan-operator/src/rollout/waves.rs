//! Which Cluster goes in which wave of a rollout: the first wave whose selector matches it,
//! among the Clusters on a class of the rollout's stack in the rollout's namespace that the
//! rollout's own selector takes. The others are listed with the reason they are left out.

use std::collections::BTreeMap;

use capstan_stack::name::{ReleaseTag, StackName};
use kube::api::DynamicObject;

use super::selector::matches_opt;
use crate::api::rollout::ClusterStackRolloutSpec;
use crate::clusters::ClusterUse;

/// A cluster stack: provider, name and Kubernetes major-minor (`docker-ferrol-1-27`).
pub type StackId = StackName;

/// What the rollout decisions read of one Cluster. [`ClusterInfo::from_cluster`] fills the
/// Cluster's own fields; the controller fills the health inputs from Cluster API's status,
/// the control plane and the ClusterAddon (`rollout plan` leaves them at their defaults).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterInfo {
    pub namespace: String,
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// `spec.topology.class`.
    pub class: Option<String>,
    /// `spec.topology.classNamespace`, else the Cluster's namespace.
    pub class_namespace: String,
    /// `spec.topology.version`.
    pub version: Option<String>,
    /// Cluster API's `Ready` condition is true.
    pub ready: bool,
    /// Cluster API's `TopologyReconciled` condition is true.
    pub topology_reconciled: bool,
    /// The Kubernetes version the control plane runs (its `status.version`).
    pub control_plane_version: Option<String>,
    /// The ClusterAddon's `status.appliedClusterStack` (a ClusterClass name).
    pub addon_applied: Option<String>,
    /// The ClusterAddon's `status.ready`.
    pub addon_ready: bool,
    /// Whether every `health.checks` condition holds; `None`: not evaluated (or no checks).
    pub checks_pass: Option<bool>,
    /// The Cluster has a deletion timestamp.
    pub deleting: bool,
    /// Read as `cluster.x-k8s.io/v1beta2` (its health conditions are v1beta2's).
    pub v1beta2: bool,
    /// v1beta2's `RollingOut` condition is true.
    pub rolling_out: bool,
    /// The versions of `status.controlPlane.versions` (Cluster API v1.14); empty without.
    pub control_plane_versions: Vec<String>,
}

impl ClusterInfo {
    /// A Cluster (`cluster.x-k8s.io`) as the API server returns it; the health inputs are
    /// left false / `None`.
    pub fn from_cluster(obj: &DynamicObject) -> ClusterInfo {
        let usage = ClusterUse::of(obj);
        let version = obj
            .data
            .pointer("/spec/topology/version")
            .and_then(|v| v.as_str())
            .filter(|v| !v.is_empty())
            .map(str::to_string);
        ClusterInfo {
            namespace: usage.namespace,
            name: usage.name,
            labels: obj.metadata.labels.clone().unwrap_or_default(),
            class: usage.class,
            class_namespace: usage.class_namespace,
            version,
            deleting: obj.metadata.deletion_timestamp.is_some(),
            ..ClusterInfo::default()
        }
    }

    /// `namespace/name`, the Cluster's name in a rollout's status.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// The waves of a rollout, in spec order, each with its Clusters (`namespace/name`, sorted),
/// and the Clusters left out with why (sorted).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Assignment {
    pub waves: Vec<(String, Vec<String>)>,
    pub excluded: Vec<(String, String)>,
}

impl Assignment {
    /// The wave of Cluster `key`, if it has one.
    pub fn wave_of(&self, key: &str) -> Option<&str> {
        self.waves
            .iter()
            .find(|(_, clusters)| clusters.binary_search_by(|c| c.as_str().cmp(key)).is_ok())
            .map(|(name, _)| name.as_str())
    }
}

/// Assigns `clusters` to the waves of `spec` for a rollout in `rollout_namespace` of `stack`.
/// A Cluster takes part when its class is a release class of `stack` (same provider, name and
/// Kubernetes major-minor) in `rollout_namespace`, it is not being deleted, and
/// `spec.clusterSelector` matches it; it goes into the first wave whose selector matches.
/// (The controller and the CLI assign across stacks; the tables here read the one-stack case.)
#[cfg(test)]
pub fn assign(
    spec: &ClusterStackRolloutSpec,
    rollout_namespace: &str,
    stack: &StackId,
    clusters: &[ClusterInfo],
) -> Assignment {
    assign_across(spec, rollout_namespace, stack, &[], clusters)
}

/// [`assign`] for a rollout across stacks: a Cluster on a release class of one of `sources`
/// (the stacks `spec.from` names) takes part as well as one of `stack`.
pub fn assign_across(
    spec: &ClusterStackRolloutSpec,
    rollout_namespace: &str,
    stack: &StackId,
    sources: &[StackId],
    clusters: &[ClusterInfo],
) -> Assignment {
    let mut waves: Vec<(String, Vec<String>)> =
        spec.waves.iter().map(|w| (w.name.clone(), Vec::new())).collect();
    let mut excluded = Vec::new();
    for cluster in clusters {
        match exclusion(spec, rollout_namespace, stack, sources, cluster) {
            Some(reason) => excluded.push((cluster.key(), reason)),
            None => {
                let wave = spec
                    .waves
                    .iter()
                    .position(|w| matches_opt(w.cluster_selector.as_ref(), &cluster.labels));
                match wave.and_then(|i| waves.get_mut(i)) {
                    Some((_, members)) => members.push(cluster.key()),
                    None => excluded.push((cluster.key(), "no wave selects it".to_string())),
                }
            }
        }
    }
    for (_, members) in &mut waves {
        members.sort();
        members.dedup();
    }
    excluded.sort();
    Assignment { waves, excluded }
}

/// Why `cluster` is not part of the rollout at all, if it is not.
fn exclusion(
    spec: &ClusterStackRolloutSpec,
    rollout_namespace: &str,
    stack: &StackId,
    sources: &[StackId],
    cluster: &ClusterInfo,
) -> Option<String> {
    let Some(class) = &cluster.class else {
        return Some("no spec.topology.class".to_string());
    };
    if cluster.class_namespace != rollout_namespace {
        return Some(format!(
            "class namespace {} is not the rollout's namespace {rollout_namespace}",
            cluster.class_namespace
        ));
    }
    match ReleaseTag::parse_cluster_class(class) {
        Ok(tag) if tag.stack() == stack || sources.contains(tag.stack()) => {}
        _ if sources.is_empty() => return Some(format!("class {class} is not a release of {stack}")),
        _ => {
            let from: Vec<String> = sources.iter().map(ToString::to_string).collect();
            return Some(format!(
                "class {class} is not a release of {stack} or of spec.from's {}",
                from.join(", ")
            ));
        }
    }
    if cluster.deleting {
        return Some("being deleted".to_string());
    }
    if !matches_opt(spec.cluster_selector.as_ref(), &cluster.labels) {
        return Some("not selected by spec.clusterSelector".to_string());
    }
    None
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::api::rollout::Wave;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

    pub(crate) fn stack() -> StackId {
        StackName::parse("docker-ferrol-1-27").expect("stack name")
    }

    pub(crate) fn cluster(name: &str, class: &str, labels: &[(&str, &str)]) -> ClusterInfo {
        ClusterInfo {
            namespace: "tenant-a".into(),
            name: name.into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            class: Some(class.into()),
            class_namespace: "tenant-a".into(),
            version: Some("v1.27.1".into()),
            ..ClusterInfo::default()
        }
    }

    pub(crate) fn select(pairs: &[(&str, &str)]) -> Option<LabelSelector> {
        Some(LabelSelector {
            match_labels: Some(
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            match_expressions: None,
        })
    }

    pub(crate) fn wave(name: &str, selector: Option<LabelSelector>) -> Wave {
        Wave {
            name: name.into(),
            cluster_selector: selector,
            ..Wave::default()
        }
    }

    pub(crate) fn spec(waves: Vec<Wave>) -> ClusterStackRolloutSpec {
        ClusterStackRolloutSpec {
            cluster_stack: "docker-ferrol-1-27".into(),
            version: "latest".into(),
            cluster_selector: None,
            paused: false,
            waves,
            health: Default::default(),
            failure_policy: Default::default(),
            from: None,
            preflight: Default::default(),
            windows: Vec::new(),
        }
    }

    const V1: &str = "docker-ferrol-1-27-v1";

    /// One row per rule of wave assignment: the Cluster, and its wave or exclusion reason.
    #[test]
    fn assignment_rules() {
        let rollout = spec(vec![
            wave("canary", select(&[("ring", "canary")])),
            wave("beta", select(&[("ring", "beta")])),
            wave("rest", None),
        ]);
        let other_namespace = ClusterInfo {
            class_namespace: "tenant-b".into(),
            ..cluster("elsewhere", V1, &[])
        };
        let from_other_namespace_using_ours = ClusterInfo {
            namespace: "tenant-c".into(),
            ..cluster("guest", V1, &[])
        };
        let deleting = ClusterInfo {
            deleting: true,
            ..cluster("going", V1, &[])
        };
        let no_class = ClusterInfo {
            class: None,
            ..cluster("bare", V1, &[])
        };
        let rows: Vec<(&str, ClusterInfo, Result<&str, &str>)> = vec![
            (
                "first matching wave wins",
                cluster("c1", V1, &[("ring", "canary")]),
                Ok("canary"),
            ),
            (
                "later wave by its selector",
                cluster("b1", V1, &[("ring", "beta")]),
                Ok("beta"),
            ),
            (
                "no selector takes the rest",
                cluster("r1", V1, &[("ring", "x")]),
                Ok("rest"),
            ),
            (
                "dot form of a hash version is the stack's",
                cluster("h1", "docker-ferrol-1-27-v0-sha.abc", &[]),
                Ok("rest"),
            ),
            (
                "a Cluster of another namespace on a class of ours takes part",
                from_other_namespace_using_ours,
                Ok("rest"),
            ),
            (
                "other provider",
                cluster("p", "openstack-ferrol-1-27-v1", &[]),
                Err("class openstack-ferrol-1-27-v1 is not a release of docker-ferrol-1-27"),
            ),
            (
                "other stack name",
                cluster("n", "docker-scs-1-27-v1", &[]),
                Err("class docker-scs-1-27-v1 is not a release of docker-ferrol-1-27"),
            ),
            (
                "other Kubernetes minor",
                cluster("k", "docker-ferrol-1-28-v1", &[]),
                Err("class docker-ferrol-1-28-v1 is not a release of docker-ferrol-1-27"),
            ),
            (
                "not a stack class",
                cluster("x", "my-own-class", &[]),
                Err("class my-own-class is not a release of docker-ferrol-1-27"),
            ),
            (
                "class in another namespace",
                other_namespace,
                Err("class namespace tenant-b is not the rollout's namespace tenant-a"),
            ),
            ("no class", no_class, Err("no spec.topology.class")),
            ("being deleted", deleting, Err("being deleted")),
        ];
        for (rule, cluster, expected) in rows {
            let key = cluster.key();
            let got = assign(&rollout, "tenant-a", &stack(), &[cluster]);
            match expected {
                Ok(wave) => {
                    assert_eq!(got.wave_of(&key), Some(wave), "{rule}");
                    assert!(got.excluded.is_empty(), "{rule}");
                }
                Err(reason) => {
                    assert_eq!(got.excluded, [(key, reason.to_string())], "{rule}");
                }
            }
        }
    }

    #[test]
    fn rollout_selector_and_unmatched_clusters_are_excluded_and_lists_are_sorted() {
        let mut rollout = spec(vec![wave("canary", select(&[("ring", "canary")]))]);
        rollout.cluster_selector = select(&[("env", "prod")]);
        let clusters = [
            cluster("z", V1, &[("env", "prod"), ("ring", "canary")]),
            cluster("a", V1, &[("env", "prod"), ("ring", "canary")]),
            cluster("dev", V1, &[("env", "dev"), ("ring", "canary")]),
            cluster("plain", V1, &[("env", "prod")]),
        ];
        let got = assign(&rollout, "tenant-a", &stack(), &clusters);
        assert_eq!(
            got.waves,
            [(
                "canary".to_string(),
                vec!["tenant-a/a".to_string(), "tenant-a/z".to_string()]
            )]
        );
        assert_eq!(
            got.excluded,
            [
                (
                    "tenant-a/dev".to_string(),
                    "not selected by spec.clusterSelector".to_string()
                ),
                ("tenant-a/plain".to_string(), "no wave selects it".to_string()),
            ]
        );
    }

    /// Across stacks: Clusters of the `from` stacks take part beside the target's own.
    #[test]
    fn clusters_of_the_from_stacks_take_part() {
        let rollout = spec(vec![wave("all", None)]);
        let sources = [StackName::parse("docker-ferrol-1-25").expect("stack")];
        let clusters = [
            cluster("own", V1, &[]),
            cluster("old", "docker-ferrol-1-25-v4", &[]),
            cluster("between", "docker-ferrol-1-26-v1", &[]),
        ];
        let got = assign_across(&rollout, "tenant-a", &stack(), &sources, &clusters);
        assert_eq!(
            got.waves,
            [(
                "all".to_string(),
                vec!["tenant-a/old".to_string(), "tenant-a/own".to_string()]
            )]
        );
        assert_eq!(
            got.excluded,
            [(
                "tenant-a/between".to_string(),
                "class docker-ferrol-1-26-v1 is not a release of docker-ferrol-1-27 or of spec.from's docker-ferrol-1-25"
                    .to_string()
            )]
        );
    }

    #[test]
    fn from_cluster_reads_topology_labels_and_deletion() {
        let obj: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
            "metadata": {"name": "c1", "namespace": "tenant-b", "labels": {"ring": "canary"},
                         "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"topology": {"class": V1, "classNamespace": "tenant-a", "version": "v1.27.3"}}
        }))
        .expect("Cluster");
        let info = ClusterInfo::from_cluster(&obj);
        assert_eq!(info.key(), "tenant-b/c1");
        assert_eq!(info.class.as_deref(), Some(V1));
        assert_eq!(info.class_namespace, "tenant-a");
        assert_eq!(info.version.as_deref(), Some("v1.27.3"));
        assert_eq!(info.labels.get("ring").map(String::as_str), Some("canary"));
        assert!(info.deleting);
        assert!(!info.ready);
    }
}
