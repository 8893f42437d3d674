//! Gathering a Cluster's pre-flight evidence for one step of its path — the I/O shell around
//! the pure verdicts of [`crate::rollout::preflight`], shared by the rollout controller and
//! `capstan preflight`:
//! - [`workload::requested_apis`]: the workload API server's `/metrics`, its record of
//!   deprecated requests (`apiserver_requested_deprecated_apis`);
//! - [`helm::stored_release_apis`]: the Helm releases stored on the workload cluster (Secrets of
//!   type `helm.sh/release.v1`), the apiVersion/kind of their last revision's manifest;
//! - [`render::target_renders`]: the target release rendered offline for the Cluster at the
//!   target Kubernetes version (chart `kubeVersion`, values schema, `fail`), and the APIs its
//!   addon objects use;
//! - the version skew and the user's CEL checks, read by the caller.
//!
//! [`Evidence::verdicts`] turns what was read into [`PreflightResult`]s; evidence that could not
//! be read fails its check with the reason (a step nobody could check is not switched).
//! [`keep_recorded`] keeps the API server's record across its restarts, [`cache`] bounds how
//! often a Cluster is asked.

pub mod cache;
pub mod helm;
pub mod render;
pub mod workload;

use capstan_stack::name::KubernetesVersion;

use crate::rollout::preflight::{
    ApiInUse, DeprecatedRequest, PreflightResult, REMOVED_APIS_CHECK, removed_apis,
};

/// The check of the API server's own record of deprecated requests.
pub const REQUESTED_APIS_CHECK: &str = "RequestedAPIs";
pub use render::TARGET_RENDERS_CHECK;

/// What was read for one step, each piece or why it could not be read.
#[derive(Clone, Debug, Default)]
pub struct Evidence {
    /// The API server's record; `None`: the Cluster has no workload API server yet (no
    /// kubeconfig Secret), so nothing ran there.
    pub requested: Option<Result<Vec<DeprecatedRequest>, String>>,
    /// Objects in use on the workload cluster (Helm releases, the ClusterAddon inventory);
    /// `None` as for `requested`.
    pub in_use: Option<Result<Vec<ApiInUse>, String>>,
    /// The target release's render for the Cluster; `None` when not checked.
    pub rendered: Option<render::Rendered>,
    /// Further results made by the caller (version skew, the user's checks).
    pub others: Vec<PreflightResult>,
}

impl Evidence {
    /// The results of a step to `to`, in a fixed order: the API server's record, objects in
    /// use, the target's render, then the caller's.
    pub fn verdicts(&self, to: KubernetesVersion) -> Vec<PreflightResult> {
        let mut results = Vec::new();
        match &self.requested {
            None => results.push(ok(REQUESTED_APIS_CHECK, "no workload API server yet")),
            Some(Err(why)) => results.push(failed(REQUESTED_APIS_CHECK, why)),
            Some(Ok(requested)) => results.push(PreflightResult {
                check: REQUESTED_APIS_CHECK.to_string(),
                ..removed_apis(to, requested, &[])
            }),
        }
        match &self.in_use {
            None => results.push(ok(REMOVED_APIS_CHECK, "no workload API server yet")),
            Some(Err(why)) => results.push(failed(REMOVED_APIS_CHECK, why)),
            Some(Ok(in_use)) => {
                let mut verdict = removed_apis(to, &[], in_use);
                if verdict.ok {
                    // The counter note belongs to the API server's record, not to objects.
                    verdict.reason = format!("no object in use of an API removed by {to}");
                }
                results.push(verdict);
            }
        }
        if let Some(rendered) = &self.rendered {
            results.push(rendered.verdict(to));
        }
        results.extend(self.others.iter().cloned());
        results
    }
}

fn ok(check: &str, reason: &str) -> PreflightResult {
    PreflightResult {
        check: check.to_string(),
        ok: true,
        reason: reason.to_string(),
    }
}

fn failed(check: &str, reason: &str) -> PreflightResult {
    PreflightResult {
        check: check.to_string(),
        ok: false,
        reason: reason.to_string(),
    }
}

/// `fresh` results with the API server's record kept from `recorded` (the evidence in the
/// Cluster's status for the same step): the record starts again at each restart of the API
/// server, so a removed API it once reported still blocks after a restart forgot it — until
/// someone lets the Cluster go (`capstan rollout approve --force`).
pub fn keep_recorded(recorded: &[PreflightResult], mut fresh: Vec<PreflightResult>) -> Vec<PreflightResult> {
    let Some(before) = recorded.iter().find(|r| r.check == REQUESTED_APIS_CHECK && !r.ok) else {
        return fresh;
    };
    match fresh.iter_mut().find(|r| r.check == REQUESTED_APIS_CHECK) {
        Some(now) if now.ok => {
            *now = before.clone();
            if !now.reason.contains(KEPT_NOTE) {
                now.reason = format!("{} ({KEPT_NOTE})", now.reason);
            }
        }
        Some(_) => {}
        None => fresh.insert(0, before.clone()),
    }
    fresh
}

/// The kinds the ClusterAddon's inventory (`status.resources`) says were applied to the
/// workload cluster, each apiVersion/kind once.
pub fn inventory_apis(addon: &crate::api::ClusterAddon) -> Vec<ApiInUse> {
    let seen_in = format!(
        "ClusterAddon {}/{} inventory",
        addon.metadata.namespace.as_deref().unwrap_or_default(),
        addon.metadata.name.as_deref().unwrap_or_default()
    );
    let mut found: Vec<ApiInUse> = Vec::new();
    for resource in addon.status.iter().flat_map(|s| &s.resources) {
        let api_version = if resource.group.is_empty() {
            resource.version.clone()
        } else {
            format!("{}/{}", resource.group, resource.version)
        };
        let api = ApiInUse {
            api_version,
            kind: resource.kind.clone(),
            seen_in: seen_in.clone(),
        };
        if !found.contains(&api) {
            found.push(api);
        }
    }
    found
}

/// What a kept record says of itself.
pub const KEPT_NOTE: &str = "recorded earlier: the API server's record starts at its last restart";

#[cfg(test)]
mod tests {
    use super::*;

    fn k8s(text: &str) -> KubernetesVersion {
        KubernetesVersion::parse(text).unwrap_or_else(|e| panic!("{e}"))
    }

    fn ingress_request() -> DeprecatedRequest {
        DeprecatedRequest {
            group: "extensions".into(),
            version: "v1beta1".into(),
            resource: "ingresses".into(),
            removed_release: Some(k8s("1.22")),
        }
    }

    /// One row: the evidence, the step's minor, and each check's (name, ok).
    #[test]
    fn evidence_becomes_one_result_per_check() {
        let helm = ApiInUse {
            api_version: "policy/v1beta1".into(),
            kind: "PodSecurityPolicy".into(),
            seen_in: "Helm release kube-system/psp".into(),
        };
        type Row = (Evidence, &'static str, Vec<(&'static str, bool)>);
        let rows: Vec<Row> = vec![
            (
                Evidence::default(),
                "1.29",
                vec![(REQUESTED_APIS_CHECK, true), (REMOVED_APIS_CHECK, true)],
            ),
            (
                Evidence {
                    requested: Some(Ok(vec![ingress_request()])),
                    in_use: Some(Ok(vec![])),
                    ..Evidence::default()
                },
                "1.21",
                vec![(REQUESTED_APIS_CHECK, true), (REMOVED_APIS_CHECK, true)],
            ),
            (
                Evidence {
                    requested: Some(Ok(vec![ingress_request()])),
                    in_use: Some(Ok(vec![helm.clone()])),
                    ..Evidence::default()
                },
                "1.22",
                vec![(REQUESTED_APIS_CHECK, false), (REMOVED_APIS_CHECK, true)],
            ),
            (
                Evidence {
                    requested: Some(Ok(vec![])),
                    in_use: Some(Ok(vec![helm])),
                    ..Evidence::default()
                },
                "1.25",
                vec![(REQUESTED_APIS_CHECK, true), (REMOVED_APIS_CHECK, false)],
            ),
            // Evidence that could not be read blocks with the reason.
            (
                Evidence {
                    requested: Some(Err("/metrics: 403 Forbidden".into())),
                    in_use: Some(Err("listing Helm releases: timed out".into())),
                    others: vec![ok("Check marker", "holds")],
                    ..Evidence::default()
                },
                "1.29",
                vec![
                    (REQUESTED_APIS_CHECK, false),
                    (REMOVED_APIS_CHECK, false),
                    ("Check marker", true),
                ],
            ),
        ];
        for (evidence, to, want) in rows {
            let results = evidence.verdicts(k8s(to));
            let got: Vec<(&str, bool)> = results.iter().map(|r| (r.check.as_str(), r.ok)).collect();
            assert_eq!(got, want, "to {to}: {results:?}");
        }
    }

    #[test]
    fn the_addons_inventory_names_the_kinds_it_applied() {
        let addon: crate::api::ClusterAddon = serde_json::from_value(serde_json::json!({
            "apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterAddon",
            "metadata": {"name": "cluster-addon-a", "namespace": "t"},
            "spec": {"clusterRef": {"name": "a"}},
            "status": {"resources": [
                {"group": "policy", "version": "v1beta1", "kind": "PodSecurityPolicy", "name": "p1"},
                {"group": "policy", "version": "v1beta1", "kind": "PodSecurityPolicy", "name": "p2"},
                {"version": "v1", "kind": "ConfigMap", "namespace": "kube-system", "name": "c"}]}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let in_use = inventory_apis(&addon);
        assert_eq!(in_use.len(), 2, "{in_use:?}");
        let verdict = removed_apis(k8s("1.25"), &[], &in_use);
        assert!(!verdict.ok);
        assert_eq!(
            verdict.reason,
            "uses APIs Kubernetes 1.25 no longer serves: policy/v1beta1 PodSecurityPolicy in ClusterAddon t/cluster-addon-a inventory (removed in 1.25; no replacement)"
        );
        assert!(removed_apis(k8s("1.24"), &[], &in_use).ok);
    }

    #[test]
    fn the_api_servers_record_survives_its_restart() {
        let evidence = |requested| Evidence {
            requested: Some(Ok(requested)),
            in_use: Some(Ok(vec![])),
            ..Evidence::default()
        };
        let before = evidence(vec![ingress_request()]).verdicts(k8s("1.22"));
        assert!(!before[0].ok);
        // The API server restarted: its record is empty now.
        let after_restart = evidence(vec![]).verdicts(k8s("1.22"));
        assert!(after_restart[0].ok);
        let kept = keep_recorded(&before, after_restart.clone());
        assert!(!kept[0].ok, "{kept:?}");
        assert!(
            kept[0].reason.contains("extensions/v1beta1 ingresses"),
            "{kept:?}"
        );
        assert!(kept[0].reason.ends_with(&format!("({KEPT_NOTE})")), "{kept:?}");
        assert_eq!(kept[1], after_restart[1]);
        // Kept twice, noted once.
        let again = keep_recorded(&kept, after_restart.clone());
        assert_eq!(again, kept);
        // Nothing recorded, or a passing record: the fresh results as they are.
        assert_eq!(keep_recorded(&[], after_restart.clone()), after_restart);
        assert_eq!(
            keep_recorded(&after_restart, after_restart.clone()),
            after_restart
        );
    }
}
