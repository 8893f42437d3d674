//! Whether the target release fits a Cluster: its parts rendered offline for the Cluster's
//! values — the ClusterClass as the management cluster gets it, every addon part (each stage)
//! at the release's own Kubernetes version, the target's — where a chart's `kubeVersion`, its
//! values schema or a template's `fail` refuses; and the APIs of the addon objects held
//! against those the target minor no longer serves. `lookup` finds nothing, as in
//! `helm template`.

use capstan_stack::name::KubernetesVersion;
use capstan_stack::render::{CompiledRelease, RenderOptions};
use capstan_stack::user_values::UserValues;
use capstan_stack::values::ClusterObjects;

use crate::rollout::preflight::{ApiInUse, PreflightResult, removed_apis};

/// The check of the target release rendered for the Cluster.
pub const TARGET_RENDERS_CHECK: &str = "TargetRenders";

/// The target release rendered for one Cluster: the objects its addon parts make, or why it
/// does not render.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendered {
    /// The release tag.
    pub release: String,
    /// The addon objects' APIs; else why not, a phrase after the release's name ("does not
    /// render for this Cluster: …", "could not be rendered: …").
    pub objects: Result<Vec<ApiInUse>, String>,
}

impl Rendered {
    /// The verdict of a step to `to`.
    pub fn verdict(&self, to: KubernetesVersion) -> PreflightResult {
        match &self.objects {
            Err(why) => PreflightResult {
                check: TARGET_RENDERS_CHECK.to_string(),
                ok: false,
                reason: format!("{} {why}", self.release),
            },
            Ok(objects) => {
                let verdict = removed_apis(to, &[], objects);
                PreflightResult {
                    check: TARGET_RENDERS_CHECK.to_string(),
                    ok: verdict.ok,
                    reason: if verdict.ok {
                        format!("{} renders for this Cluster at {to}", self.release)
                    } else {
                        verdict.reason
                    },
                }
            }
        }
    }
}

/// The Cluster, its control plane and infrastructure cluster as values templates read them
/// (blocking: JSON read as YAML; the parsed values are not `Send`).
pub fn cluster_objects(
    cluster: &kube::api::DynamicObject,
    control_plane: Option<&kube::api::DynamicObject>,
    infra_cluster: Option<&kube::api::DynamicObject>,
    templates: capstan_stack::capi::CapiVersion,
) -> Result<ClusterObjects, String> {
    // The shape the release's values templates are written for, as the ClusterAddon's render
    // hands them (a v1beta2 Cluster converted for v1beta1 templates).
    crate::clusters::template_objects(cluster, control_plane, infra_cluster, templates)
        .map_err(|e| e.to_string())
}

/// Renders `compiled` for the Cluster of `objects` with the user's values (blocking: the
/// charts run here).
pub fn target_renders(compiled: &CompiledRelease, objects: &ClusterObjects, user: &[UserValues]) -> Rendered {
    let release = compiled.tag().to_string();
    let parts = compiled.render_with_user_values(objects, &RenderOptions::default(), user);
    let objects = parts
        .map_err(|e| format!("does not render for this Cluster: {e}"))
        .map(|parts| {
            let mut found = Vec::new();
            // The class goes to the management cluster: only the addons meet the target minor.
            for part in parts.iter().filter(|p| p.name.starts_with("cluster-addon")) {
                for document in part.manifests.manifests.iter().chain(&part.manifests.hooks) {
                    let seen = ApiInUse {
                        api_version: document.api_version.clone(),
                        kind: document.kind.clone(),
                        seen_in: format!("{release} {}", part.name),
                    };
                    if !found.contains(&seen) {
                        found.push(seen);
                    }
                }
            }
            found
        });
    Rendered { release, objects }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k8s(text: &str) -> KubernetesVersion {
        KubernetesVersion::parse(text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_refused_render_or_a_removed_api_fails_the_check() {
        let rendered = |objects| Rendered {
            release: "docker-ferrol-1-29-v1".into(),
            objects,
        };
        let flow = |api_version: &str| ApiInUse {
            api_version: api_version.into(),
            kind: "FlowSchema".into(),
            seen_in: "docker-ferrol-1-29-v1 cluster-addon".into(),
        };
        let rows = [
            (
                rendered(Ok(vec![flow("flowcontrol.apiserver.k8s.io/v1")])),
                true,
                "docker-ferrol-1-29-v1 renders for this Cluster at 1.29",
            ),
            (
                rendered(Ok(vec![flow("flowcontrol.apiserver.k8s.io/v1beta2")])),
                false,
                "uses APIs Kubernetes 1.29 no longer serves: flowcontrol.apiserver.k8s.io/v1beta2 FlowSchema in docker-ferrol-1-29-v1 cluster-addon (removed in 1.29; use flowcontrol.apiserver.k8s.io/v1)",
            ),
            (
                rendered(Err(
                    "does not render for this Cluster: chart requires kubeVersion: <1.29.0-0".into(),
                )),
                false,
                "docker-ferrol-1-29-v1 does not render for this Cluster: chart requires kubeVersion: <1.29.0-0",
            ),
        ];
        for (rendered, ok, reason) in rows {
            let verdict = rendered.verdict(k8s("1.29"));
            assert_eq!(verdict.check, TARGET_RENDERS_CHECK);
            assert_eq!((verdict.ok, verdict.reason.as_str()), (ok, reason));
        }
    }
}
