//! Whether one Cluster is healthy on a rollout's target, from what the controller observed.

use super::waves::ClusterInfo;
use crate::clusters::release_name_of_class;
use capstan_stack::capi::{CapiVersion, ClusterFields, Condition};

/// Fills `info`'s health inputs from what Cluster API reports, in either version: v1beta1's
/// `Ready` and `TopologyReconciled`; v1beta2's `Available`, `TopologyReconciled`,
/// `RollingOut` and `status.controlPlane.versions`.
pub fn read_health(info: &mut ClusterInfo, fields: &ClusterFields) {
    let is_true =
        |conditions: &[Condition], type_: &str| conditions.iter().any(|c| c.type_ == type_ && c.is_true());
    info.v1beta2 = fields.version == CapiVersion::V1Beta2;
    match fields.version {
        CapiVersion::V1Beta1 => {
            info.ready = is_true(&fields.v1beta1_conditions, "Ready");
            info.topology_reconciled = is_true(&fields.v1beta1_conditions, "TopologyReconciled");
        }
        CapiVersion::V1Beta2 => {
            info.ready = is_true(&fields.conditions, "Available");
            info.topology_reconciled = is_true(&fields.conditions, "TopologyReconciled");
            info.rolling_out = is_true(&fields.conditions, "RollingOut");
            info.control_plane_versions = fields
                .control_plane_versions
                .iter()
                .map(|v| v.version.clone())
                .collect();
        }
    }
}

/// A Cluster's health on the target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Health {
    Healthy,
    /// Why not, for the Cluster's status message (the first unmet rule).
    Unhealthy(String),
}

impl Health {
    pub fn is_healthy(&self) -> bool {
        *self == Health::Healthy
    }
}

/// The release a rollout moves Clusters to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// ClusterStackRelease name, e.g. `docker-ferrol-1-27-v3`.
    pub release: String,
    /// The ClusterClass Clusters are switched to.
    pub class: String,
    /// `versions.kubernetes` of the release, e.g. `v1.27.3`.
    pub kubernetes: Option<String>,
}

/// A release of a Cluster's path, as its status records it.
impl From<Target> for crate::api::rollout::PathStep {
    fn from(t: Target) -> Self {
        crate::api::rollout::PathStep {
            release: t.release,
            class: t.class,
            kubernetes: t.kubernetes,
        }
    }
}

/// The health of `cluster` on `target`: its class is the target's; Cluster API reports it
/// Ready and its topology reconciled; when the switch changed the Kubernetes version
/// (`version_changed`), the control plane runs the target's; its ClusterAddon applied the
/// target release and is ready; and, when the rollout has health checks (`has_checks`), they
/// all pass.
pub fn health(cluster: &ClusterInfo, target: &Target, version_changed: bool, has_checks: bool) -> Health {
    let unhealthy = |why: String| Health::Unhealthy(why);
    if cluster.class.as_deref() != Some(target.class.as_str()) {
        return unhealthy(format!(
            "class is {}, not {}",
            cluster.class.as_deref().unwrap_or("unset"),
            target.class
        ));
    }
    if !cluster.ready {
        let condition = if cluster.v1beta2 { "Available" } else { "Ready" };
        return unhealthy(format!("Cluster is not {condition}"));
    }
    if !cluster.topology_reconciled {
        return unhealthy("topology is not reconciled".to_string());
    }
    if cluster.rolling_out {
        return unhealthy("Cluster is rolling out".to_string());
    }
    if version_changed
        && let Some(kubernetes) = &target.kubernetes
        && !cluster.control_plane_versions.is_empty()
    {
        // Cluster API v1.14 reports every version the control plane's machines run.
        if cluster.control_plane_versions.iter().any(|v| v != kubernetes) {
            return unhealthy(format!(
                "control plane runs {}, not {kubernetes}",
                cluster.control_plane_versions.join(", ")
            ));
        }
    } else if version_changed
        && let Some(kubernetes) = &target.kubernetes
        && cluster.control_plane_version.as_ref() != Some(kubernetes)
    {
        return unhealthy(format!(
            "control plane runs {}, not {kubernetes}",
            cluster
                .control_plane_version
                .as_deref()
                .unwrap_or("an unknown version")
        ));
    }
    let applied = cluster.addon_applied.as_deref().map(release_name_of_class);
    if applied.as_deref() != Some(release_name_of_class(&target.release).as_str()) {
        return unhealthy(format!(
            "addons of {} are not applied (applied: {})",
            target.release,
            cluster.addon_applied.as_deref().unwrap_or("none")
        ));
    }
    if !cluster.addon_ready {
        return unhealthy("addons are not ready".to_string());
    }
    match (has_checks, cluster.checks_pass) {
        (true, None) => unhealthy("health checks not evaluated yet".to_string()),
        (true, Some(false)) => unhealthy("health checks fail".to_string()),
        _ => Health::Healthy,
    }
}

/// Whether the control plane's version can decide `cluster`'s health: only once Cluster API
/// reports it Ready with its topology reconciled, the rules [`health`] checks before the
/// control plane's. Until then neither the verdict nor its message depends on the version, so
/// the controller does not read the control plane (it is not watched: each read is a request,
/// and every pass of a rollout would make one per Cluster in flight).
pub fn control_plane_decides(cluster: &ClusterInfo) -> bool {
    cluster.ready
        && cluster.topology_reconciled
        && !cluster.rolling_out
        && cluster.control_plane_versions.is_empty()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn target() -> Target {
        Target {
            release: "docker-ferrol-1-27-v2".into(),
            class: "docker-ferrol-1-27-v2".into(),
            kubernetes: Some("v1.27.3".into()),
        }
    }

    /// A Cluster healthy on [`target`] by every rule.
    pub(crate) fn healthy(name: &str) -> ClusterInfo {
        ClusterInfo {
            namespace: "tenant-a".into(),
            name: name.into(),
            class: Some("docker-ferrol-1-27-v2".into()),
            class_namespace: "tenant-a".into(),
            version: Some("v1.27.3".into()),
            ready: true,
            topology_reconciled: true,
            control_plane_version: Some("v1.27.3".into()),
            addon_applied: Some("docker-ferrol-1-27-v2".into()),
            addon_ready: true,
            checks_pass: None,
            ..ClusterInfo::default()
        }
    }

    /// One row per rule: a change to a healthy Cluster, whether the version changed and
    /// checks exist, and the verdict.
    #[test]
    fn health_rules() {
        type Edit = fn(&mut ClusterInfo);
        let rows: [(&str, Edit, bool, bool, Option<&str>); 11] = [
            ("healthy by every rule", |_| {}, true, false, None),
            (
                "class is not the target",
                |c| c.class = Some("docker-ferrol-1-27-v1".into()),
                false,
                false,
                Some("class is docker-ferrol-1-27-v1, not docker-ferrol-1-27-v2"),
            ),
            (
                "not Ready",
                |c| c.ready = false,
                false,
                false,
                Some("Cluster is not Ready"),
            ),
            (
                "topology not reconciled",
                |c| c.topology_reconciled = false,
                false,
                false,
                Some("topology is not reconciled"),
            ),
            (
                "control plane behind when the version changed",
                |c| c.control_plane_version = Some("v1.27.1".into()),
                true,
                false,
                Some("control plane runs v1.27.1, not v1.27.3"),
            ),
            (
                "control plane version irrelevant when it did not change",
                |c| c.control_plane_version = None,
                false,
                false,
                None,
            ),
            (
                "addon of another release",
                |c| c.addon_applied = Some("docker-ferrol-1-27-v1".into()),
                false,
                false,
                Some("addons of docker-ferrol-1-27-v2 are not applied (applied: docker-ferrol-1-27-v1)"),
            ),
            (
                "addon not ready",
                |c| c.addon_ready = false,
                false,
                false,
                Some("addons are not ready"),
            ),
            (
                "checks not evaluated",
                |_| {},
                false,
                true,
                Some("health checks not evaluated yet"),
            ),
            (
                "checks fail",
                |c| c.checks_pass = Some(false),
                false,
                true,
                Some("health checks fail"),
            ),
            ("checks pass", |c| c.checks_pass = Some(true), false, true, None),
        ];
        for (rule, edit, version_changed, has_checks, expected) in rows {
            let mut cluster = healthy("c");
            edit(&mut cluster);
            let got = health(&cluster, &target(), version_changed, has_checks);
            let want = expected.map_or(Health::Healthy, |why| Health::Unhealthy(why.to_string()));
            assert_eq!(got, want, "{rule}");
        }
    }

    /// Where the control plane is not read, its version changes nothing: not the verdict, not
    /// its message (whatever else holds); where it is, it does.
    #[test]
    fn the_control_plane_is_read_only_where_its_version_decides() {
        type Edit = fn(&mut ClusterInfo);
        let rows: [(&str, Edit, bool); 6] = [
            ("healthy but for the control plane", |_| {}, true),
            ("not Ready", |c| c.ready = false, false),
            (
                "topology not reconciled",
                |c| c.topology_reconciled = false,
                false,
            ),
            (
                "neither",
                |c| {
                    c.ready = false;
                    c.topology_reconciled = false;
                },
                false,
            ),
            (
                "upgrading, addon still on the old release",
                |c| {
                    c.topology_reconciled = false;
                    c.addon_applied = Some("docker-ferrol-1-27-v1".into());
                },
                false,
            ),
            (
                "reconciled, addon still on the old release",
                |c| c.addon_applied = Some("docker-ferrol-1-27-v1".into()),
                true,
            ),
        ];
        for (case, edit, decides) in rows {
            let mut cluster = healthy("c");
            edit(&mut cluster);
            assert_eq!(control_plane_decides(&cluster), decides, "{case}");
            let verdicts: Vec<Health> = [None, Some("v1.27.1"), Some("v1.27.3")]
                .into_iter()
                .map(|version| {
                    let mut c = cluster.clone();
                    c.control_plane_version = version.map(str::to_string);
                    health(&c, &target(), true, false)
                })
                .collect();
            let differ = verdicts.iter().any(|v| *v != verdicts[0]);
            assert_eq!(differ, decides, "{case}: {verdicts:?}");
        }
    }

    /// v1beta2's rule: `Available`, `TopologyReconciled`, not `RollingOut`, and the control
    /// plane at the target from `status.controlPlane.versions` where Cluster API reports it.
    #[test]
    fn v1beta2_health_rules() {
        use serde_json::json;
        let cluster = |conditions: serde_json::Value, versions: Option<serde_json::Value>| {
            let mut status = json!({"conditions": conditions});
            if let Some(versions) = versions {
                status["controlPlane"] = json!({"versions": versions});
            }
            let object = json!({
                "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
                "metadata": {"name": "c", "namespace": "tenant-a"},
                "spec": {"topology": {"classRef": {"name": "docker-ferrol-1-27-v2"}, "version": "v1.27.3"}},
                "status": status,
            });
            let mut info = healthy("c");
            info.ready = false;
            info.topology_reconciled = false;
            info.control_plane_version = None;
            read_health(&mut info, &ClusterFields::from_object(&object).expect("fields"));
            info
        };
        let condition = |type_: &str, status: &str| json!({"type": type_, "status": status, "reason": "R", "lastTransitionTime": "2026-01-01T00:00:00Z"});
        let good = || {
            vec![
                condition("Available", "True"),
                condition("TopologyReconciled", "True"),
                condition("RollingOut", "False"),
            ]
        };
        let with = |type_: &str, status: &str| {
            let mut conditions: Vec<serde_json::Value> =
                good().into_iter().filter(|c| c["type"] != type_).collect();
            conditions.push(condition(type_, status));
            json!(conditions)
        };
        let rows: [(&str, serde_json::Value, Option<serde_json::Value>, Option<&str>); 7] = [
            (
                "healthy, versions reported",
                json!(good()),
                Some(json!([{"version": "v1.27.3", "replicas": 3}])),
                None,
            ),
            (
                "not Available",
                with("Available", "False"),
                Some(json!([{"version": "v1.27.3"}])),
                Some("Cluster is not Available"),
            ),
            (
                "a v1beta1 Ready is not v1beta2's",
                with("Available", "Unknown"),
                None,
                Some("Cluster is not Available"),
            ),
            (
                "topology not reconciled",
                with("TopologyReconciled", "False"),
                None,
                Some("topology is not reconciled"),
            ),
            (
                "rolling out",
                with("RollingOut", "True"),
                Some(json!([{"version": "v1.27.3"}])),
                Some("Cluster is rolling out"),
            ),
            (
                "control plane halfway",
                json!(good()),
                Some(json!([{"version": "v1.27.1", "replicas": 1}, {"version": "v1.27.3", "replicas": 2}])),
                Some("control plane runs v1.27.1, v1.27.3, not v1.27.3"),
            ),
            // Without versions (Cluster API before v1.14) the control plane's own is read.
            (
                "no versions reported",
                json!(good()),
                None,
                Some("control plane runs an unknown version, not v1.27.3"),
            ),
        ];
        for (rule, conditions, versions, expected) in rows {
            let info = cluster(conditions, versions);
            let want = expected.map_or(Health::Healthy, |why| Health::Unhealthy(why.to_string()));
            assert_eq!(health(&info, &target(), true, false), want, "{rule}");
        }
        // Versions reported: the control plane object is not read.
        assert!(!control_plane_decides(&cluster(
            json!(good()),
            Some(json!([{"version": "v1.27.3"}]))
        )));
        assert!(control_plane_decides(&cluster(json!(good()), None)));
    }

    #[test]
    fn addon_applied_in_dot_form_matches_a_dash_form_release() {
        let target = Target {
            release: "docker-ferrol-1-27-v0-sha-abc".into(),
            class: "docker-ferrol-1-27-v0-sha.abc".into(),
            kubernetes: None,
        };
        let cluster = ClusterInfo {
            class: Some("docker-ferrol-1-27-v0-sha.abc".into()),
            addon_applied: Some("docker-ferrol-1-27-v0-sha.abc".into()),
            ..healthy("c")
        };
        assert_eq!(health(&cluster, &target, true, false), Health::Healthy);
    }
}
