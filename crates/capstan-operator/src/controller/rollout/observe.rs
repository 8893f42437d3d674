//! What one rollout reconcile observes: the target release, and every candidate Cluster as
//! [`ClusterInfo`] with its health inputs — Cluster API's conditions, the ClusterAddon's
//! applied release, and, for Clusters in flight only, their control plane's version (once
//! Cluster API reports them Ready and reconciled: before, it cannot decide) and the rollout's
//! `health.checks` evaluated on the workload cluster.

use std::collections::BTreeSet;

use kube::ResourceExt;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::reflector::{ObjectRef, Store};

use super::target::{self, Resolved};
use crate::api::rollout::{ClusterPhase, ClusterStackRollout, ClusterStackRolloutStatus};
use crate::api::{ClusterAddon, ClusterStack, ClusterStackRelease};
use crate::context::Context;
use crate::controller::Error;
use crate::rollout::{Annotations, ClusterInfo, Observed, Target};
use crate::watch::Scope;
use capstan_stack::name::StackName;

/// What the rollout reconciles read besides the rollout: stores of the fleet, filled by the
/// watches that also wake the rollouts.
pub struct Fleet {
    pub clusters: Store<DynamicObject>,
    pub addons: Store<ClusterAddon>,
    pub releases: Store<ClusterStackRelease>,
    pub scope: Scope,
    /// Pre-flight results by Cluster and step, while fresh.
    pub preflight: crate::preflight::cache::PreflightCache,
}

/// The longest a reconcile waits for the fleet's stores to have listed once.
const STORE_SYNC_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

impl Fleet {
    /// Whether every store has listed once. Until then a plan would see a partial fleet right
    /// after a start and take the Clusters not listed yet for gone ones: a wave could finish,
    /// and the next one start, without them.
    pub async fn synced(&self) -> bool {
        let listed = async {
            self.clusters.wait_until_ready().await.is_ok()
                && self.addons.wait_until_ready().await.is_ok()
                && self.releases.wait_until_ready().await.is_ok()
        };
        tokio::time::timeout(STORE_SYNC_WAIT, listed)
            .await
            .unwrap_or(false)
    }
}

/// The annotation `capstan rollout approve` sets: the wave approved.
pub const APPROVE_ANNOTATION: &str = "capstan.dev/approve";
/// The annotation `capstan rollout resume` sets on a halted rollout.
pub const RESUME_ANNOTATION: &str = "capstan.dev/resume";
/// The annotation that lets Blocked Clusters go despite their pre-flight.
pub use crate::api::rollout::FORCE_ANNOTATION;

/// What a reconcile saw, owned; [`Observation::as_input`] lends it to the plan.
pub struct Observation {
    pub namespace: String,
    pub stack: StackName,
    /// The release `spec.version` resolves to now, or why none does.
    pub target: Result<Resolved, String>,
    pub clusters: Vec<ClusterInfo>,
    /// The pre-flight of the Clusters whose switch is due (`namespace/name`).
    pub preflight: std::collections::BTreeMap<String, Vec<crate::api::rollout::PreflightResult>>,
    /// The namespace's ClusterStacks with their newest ready releases (`spec.from` only).
    pub stacks: Vec<crate::rollout::Hop>,
    pub now: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
}

impl Observation {
    pub fn as_input<'a>(&'a self, rollout: &'a ClusterStackRollout) -> Observed<'a> {
        let annotation = |key: &str| {
            rollout
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(key))
                .map(String::as_str)
        };
        Observed {
            spec: &rollout.spec,
            namespace: &self.namespace,
            stack: &self.stack,
            generation: rollout.metadata.generation,
            annotations: Annotations {
                approve: annotation(APPROVE_ANNOTATION),
                resume: annotation(RESUME_ANNOTATION),
                force: annotation(FORCE_ANNOTATION),
            },
            status: rollout.status.as_ref().unwrap_or(&EMPTY_STATUS),
            target: self.target.as_ref().ok().map(|t| Target {
                release: t.release.clone(),
                class: t.class.clone(),
                kubernetes: Some(t.kubernetes.clone()),
            }),
            clusters: &self.clusters,
            preflight: &self.preflight,
            preflight_required: true,
            stacks: &self.stacks,
            now: self.now.clone(),
        }
    }
}

static EMPTY_STATUS: std::sync::LazyLock<ClusterStackRolloutStatus> =
    std::sync::LazyLock::new(ClusterStackRolloutStatus::default);

/// The Clusters of `status` in flight: switched (or rolled back) and not yet healthy.
pub fn in_flight(status: &ClusterStackRolloutStatus) -> impl Iterator<Item = &str> {
    status
        .clusters
        .iter()
        .filter(|c| matches!(c.phase, ClusterPhase::Updating))
        .map(|c| c.name.as_str())
}

/// A Cluster's namespace and the namespace of its class (`spec.topology.classNamespace`, else
/// its own): a rollout of either namespace may move it.
pub fn namespaces_of(cluster: &DynamicObject) -> (String, String) {
    let namespace = cluster.namespace().unwrap_or_default();
    let class_namespace = cluster.data["spec"]["topology"]["classNamespace"]
        .as_str()
        .filter(|ns| !ns.is_empty())
        .map_or_else(|| namespace.clone(), str::to_string);
    (namespace, class_namespace)
}

fn hash_of(parts: impl std::hash::Hash) -> Option<u64> {
    use std::hash::Hasher;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    parts.hash(&mut hasher);
    Some(hasher.finish())
}

/// What of a Cluster a rollout reads: its labels, topology, the health Cluster API reports
/// (either version's, [`crate::rollout::health::read_health`]), deletion and identity.
pub fn cluster_trigger(cluster: &DynamicObject) -> Option<u64> {
    let text = |path: &str| cluster.data.pointer(path).map(|v| v.to_string());
    let info = cluster_info(cluster, None);
    hash_of((
        &cluster.metadata.labels,
        text("/spec/topology"),
        (info.ready, info.topology_reconciled, info.rolling_out),
        &info.control_plane_versions,
        cluster.metadata.deletion_timestamp.is_some(),
        &cluster.metadata.uid,
    ))
}

/// What of a ClusterAddon a rollout reads: the release applied and whether it is ready.
pub fn addon_trigger(addon: &crate::api::ClusterAddon) -> Option<u64> {
    let status = addon.status.as_ref();
    hash_of((
        status.and_then(|s| s.applied_cluster_stack.clone()),
        status.map(|s| s.ready),
    ))
}

/// The Cluster as the plan sees it, with what the management cluster's objects say of its
/// health; the in-flight inputs are filled by [`observe`].
pub fn cluster_info(cluster: &DynamicObject, addon: Option<&crate::api::ClusterAddon>) -> ClusterInfo {
    let mut info = ClusterInfo::from_cluster(cluster);
    if let Ok(fields) = crate::clusters::fields(cluster) {
        crate::rollout::health::read_health(&mut info, &fields);
    }
    info.deleting = cluster.metadata.deletion_timestamp.is_some();
    if let Some(status) = addon.and_then(|a| a.status.as_ref()) {
        info.addon_applied = status.applied_cluster_stack.clone();
        info.addon_ready = status.ready;
    }
    info
}

/// Observes everything the plan of `rollout` needs.
pub async fn observe(
    rollout: &ClusterStackRollout,
    ctx: &Context,
    fleet: &Fleet,
) -> Result<Observation, Error> {
    let namespace = rollout.namespace().unwrap_or_default();
    let stack_name = &rollout.spec.cluster_stack;
    let no_stack = |detail: &'static str| {
        Error::step(
            "Observe",
            "NoClusterStack",
            crate::controller::error::Cause::NoClusterStack {
                namespace: namespace.clone(),
                stack: stack_name.clone(),
                detail,
            },
        )
    };
    let stack = ctx
        .stacks
        .get(&ObjectRef::<ClusterStack>::new(stack_name).within(&namespace))
        .ok_or_else(|| no_stack(" (spec.clusterStack names none)"))?;
    let stack = crate::controller::stack_name_of(&stack)
        .ok_or_else(|| no_stack(" (its provider, name and kubernetesVersion make no stack name)"))?;
    let target = resolve_target(rollout, &namespace, &stack, fleet);
    if let Err(why) = &target {
        tracing::debug!(rollout = %rollout.name_any(), %namespace, "no target release: {why}");
    }
    let flying: BTreeSet<&str> = rollout
        .status
        .as_ref()
        .map(|s| in_flight(s).collect())
        .unwrap_or_default();
    let mut clusters = Vec::new();
    let mut objects = std::collections::BTreeMap::new();
    for cluster in fleet.clusters.state() {
        let (own, class_namespace) = namespaces_of(&cluster);
        if own != namespace && class_namespace != namespace {
            continue;
        }
        let addon = fleet
            .addons
            .get(&ObjectRef::new(&crate::api::cluster_addon::addon_name(&cluster.name_any())).within(&own));
        let mut info = cluster_info(&cluster, addon.as_deref());
        let key = format!("{own}/{}", cluster.name_any());
        if flying.contains(key.as_str()) {
            if crate::rollout::health::control_plane_decides(&info) {
                info.control_plane_version = control_plane_version(ctx, &cluster).await;
            }
            if !rollout.spec.health.checks.is_empty() {
                info.checks_pass = Some(checks_pass(ctx, rollout, &own, &cluster.name_any()).await);
            }
        }
        clusters.push(info);
        objects.insert(key, cluster);
    }
    let stacks = super::stacks::hops(rollout, &namespace, ctx, &fleet.releases);
    let due = super::preflight::due(
        rollout,
        &namespace,
        &stack,
        target.as_ref().ok(),
        &clusters,
        &stacks,
    );
    let preflight = super::preflight::gather_due(ctx, &fleet.preflight, rollout, due, &objects).await;
    Ok(Observation {
        namespace,
        stack,
        target,
        clusters,
        preflight,
        stacks,
        now: crate::controller::now(),
    })
}

/// The rollout's target among the stack's releases in the store.
fn resolve_target(
    rollout: &ClusterStackRollout,
    namespace: &str,
    stack: &StackName,
    fleet: &Fleet,
) -> Result<Resolved, String> {
    let releases = super::stacks::releases_of(namespace, &fleet.releases);
    target::resolve(stack, &rollout.spec.version, &releases).map_err(|e| e.to_string())
}

/// `status.version` of the Cluster's control plane (`spec.controlPlaneRef`); `None` when it
/// cannot be read (the plan then waits).
async fn control_plane_version(ctx: &Context, cluster: &DynamicObject) -> Option<String> {
    let reference = &cluster.data["spec"]["controlPlaneRef"];
    let (kind, name) = (reference["kind"].as_str()?, reference["name"].as_str()?);
    // v1beta2 names the group only: the version the server prefers for it.
    let api_version = match reference["apiVersion"].as_str() {
        Some(api_version) => api_version.to_string(),
        None => {
            let group = reference["apiGroup"].as_str()?;
            ctx.applier
                .discovery()
                .preferred_api_version(group, kind)
                .await
                .ok()?
        }
    };
    let namespace = reference["namespace"]
        .as_str()
        .map_or_else(|| cluster.namespace().unwrap_or_default(), str::to_string);
    let (group, version) = api_version.split_once('/').unwrap_or(("", &api_version));
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    let api: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), &namespace, &resource);
    match api.get_opt(name).await {
        Ok(plane) => plane?.data["status"]["version"].as_str().map(str::to_string),
        Err(error) => {
            tracing::debug!(%error, %name, "reading a control plane for a rollout");
            None
        }
    }
}

/// Whether every `health.checks` condition holds on the Cluster's workload cluster (one that
/// cannot be reached or evaluated does not hold).
async fn checks_pass(ctx: &Context, rollout: &ClusterStackRollout, namespace: &str, cluster: &str) -> bool {
    let workload = match ctx.workloads.get(&ctx.management, namespace, cluster).await {
        Ok(workload) => workload,
        Err(gate) => {
            tracing::debug!(%gate, %cluster, "rollout health checks wait for the workload cluster");
            return false;
        }
    };
    for check in &rollout.spec.health.checks {
        let condition = check.wait_condition();
        match crate::addon::condition::evaluate(workload.applier.discovery(), &condition).await {
            Ok(crate::addon::condition::Verdict::Met) => {}
            Ok(crate::addon::condition::Verdict::NotMet(_)) => return false,
            Err(error) => {
                tracing::debug!(%error, %cluster, "a rollout health check could not be evaluated");
                ctx.workloads.suspect(namespace, cluster);
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cluster(value: serde_json::Value) -> DynamicObject {
        serde_json::from_value(value).expect("Cluster")
    }

    #[test]
    fn health_inputs_come_from_cluster_api_conditions_and_the_addon() {
        let c = cluster(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
            "metadata": {"name": "a", "namespace": "t"},
            "spec": {"topology": {"class": "docker-ferrol-1-27-v2", "version": "v1.27.3"}},
            "status": {"conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"},
                {"type": "TopologyReconciled", "status": "False", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}
        }));
        let addon: crate::api::ClusterAddon = serde_json::from_value(json!({
            "apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterAddon",
            "metadata": {"name": "cluster-addon-a", "namespace": "t"},
            "spec": {"clusterRef": {"name": "a"}},
            "status": {"appliedClusterStack": "docker-ferrol-1-27-v2", "ready": true}
        }))
        .expect("ClusterAddon");
        let info = cluster_info(&c, Some(&addon));
        assert!(info.ready);
        assert!(!info.topology_reconciled);
        assert_eq!(info.addon_applied.as_deref(), Some("docker-ferrol-1-27-v2"));
        assert!(info.addon_ready);
        let bare = cluster_info(&c, None);
        assert_eq!(bare.addon_applied, None);
        assert!(!bare.addon_ready);
    }

    #[test]
    fn a_cluster_belongs_to_its_namespace_and_its_class_namespace() {
        let own = cluster(
            json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
            "metadata": {"name": "a", "namespace": "t"}, "spec": {"topology": {"class": "x"}}}),
        );
        assert_eq!(namespaces_of(&own), ("t".into(), "t".into()));
        let shared = cluster(
            json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
            "metadata": {"name": "a", "namespace": "t"},
            "spec": {"topology": {"class": "x", "classNamespace": "stacks"}}}),
        );
        assert_eq!(namespaces_of(&shared), ("t".into(), "stacks".into()));
    }

    #[test]
    fn status_churn_other_than_health_does_not_wake_a_rollout() {
        let base = json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
            "metadata": {"name": "a", "namespace": "t"},
            "spec": {"topology": {"class": "x", "version": "v1.27.3"}},
            "status": {"phase": "Provisioned", "conditions": [
                {"type": "Ready", "status": "False", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}});
        let mut phase = base.clone();
        phase["status"]["phase"] = json!("Provisioning");
        let mut ready = base.clone();
        ready["status"]["conditions"][0]["status"] = json!("True");
        let mut class = base.clone();
        class["spec"]["topology"]["class"] = json!("y");
        let t = |v: &serde_json::Value| cluster_trigger(&cluster(v.clone()));
        assert_eq!(t(&base), t(&phase));
        assert_ne!(t(&base), t(&ready));
        assert_ne!(t(&base), t(&class));
    }
}
