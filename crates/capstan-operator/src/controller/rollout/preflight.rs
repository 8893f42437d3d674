//! The rollout's pre-flight, gathered: which Clusters' next switch is due ([`due`], pure),
//! and each one's evidence read from its workload cluster, the target release rendered for it
//! and its control plane and workers ([`gather_due`]), at most [`CONCURRENCY`] Clusters at a
//! time and once per Cluster and step in [`crate::preflight::cache::TTL`].

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;

use futures::StreamExt;
use kube::ResourceExt;
use kube::api::DynamicObject;

use super::target::Resolved;
use crate::addon::workload::Gate;
use crate::api::rollout::{
    ClusterPhase, ClusterStackRollout, ClusterStackRolloutStatus, HealthCheck, RolloutPhase,
};
use crate::context::Context;
use crate::controller::pipeline;
use crate::preflight::cache::PreflightCache;
use crate::preflight::render::{Rendered, target_renders};
use crate::preflight::{Evidence, helm, keep_recorded, workload};
use crate::rollout::preflight::{PreflightResult, Workers};
use crate::rollout::{ClusterInfo, Hop, StackId, assign_across};
use capstan_stack::name::{KubernetesVersion, ReleaseTag};

/// Clusters whose pre-flight is gathered at once.
pub const CONCURRENCY: usize = 8;

/// A Cluster whose next switch is due, and the step it is due for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Due {
    /// `namespace/name`.
    pub key: String,
    /// The step's release (`docker-ferrol-1-28-v2`), its class and Kubernetes version.
    pub release: String,
    pub kubernetes: String,
    /// The Kubernetes minor the step starts from: the previous step's, else that of the
    /// Cluster's class (`None`: not a stack's class; the skew is not checked).
    pub from: Option<KubernetesVersion>,
    /// The Cluster's status entry is Blocked on this evidence: kept where a fresh look cannot
    /// see it any more ([`keep_recorded`]).
    pub recorded: Vec<PreflightResult>,
}

/// The Clusters of the current wave (the first wave with Clusters when none has started) that
/// wait for a switch — Pending, Blocked, or new — with the step each waits for: its path's
/// current step; for a Cluster of a rollout across stacks (`spec.from`, resolved against the
/// namespace's `stacks`) that has no path yet, the first step of the path the plan will give
/// it; else the rollout's target. A Cluster on that class already is not switched, so not
/// checked; neither is any Cluster of a Complete rollout that keeps its target, nor any of a
/// paused rollout (nothing is switched, so no workload cluster is asked; a Blocked Cluster
/// keeps its recorded evidence).
pub fn due(
    rollout: &ClusterStackRollout,
    namespace: &str,
    stack: &StackId,
    target: Option<&Resolved>,
    clusters: &[ClusterInfo],
    stacks: &[Hop],
) -> Vec<Due> {
    if rollout.spec.paused {
        return Vec::new();
    }
    let empty = ClusterStackRolloutStatus::default();
    let recorded = rollout.status.as_ref().unwrap_or(&empty);
    let restarts = recorded.phase == RolloutPhase::Complete
        && target.is_some_and(|t| recorded.target_release.as_deref() != Some(t.release.as_str()));
    if recorded.phase == RolloutPhase::Complete && !restarts {
        return Vec::new();
    }
    let status = if restarts { &empty } else { recorded };
    let sources = rollout
        .spec
        .from
        .as_ref()
        .map(|from| crate::rollout::sources(from, stack, stacks).stacks)
        .unwrap_or_default();
    let assignment = assign_across(&rollout.spec, namespace, stack, &sources, clusters);
    let current = match &status.current_wave {
        Some(wave) => wave.clone(),
        None => match assignment.waves.iter().find(|(_, members)| !members.is_empty()) {
            Some((wave, _)) => wave.clone(),
            None => return Vec::new(),
        },
    };
    let rollout_step = match (
        &status.target_release,
        &status.target_class,
        &status.target_kubernetes,
    ) {
        (Some(release), Some(class), Some(kubernetes)) => {
            Some((release.clone(), class.clone(), kubernetes.clone()))
        }
        _ => target.map(|t| (t.release.clone(), t.class.clone(), t.kubernetes.clone())),
    };
    let entries: HashMap<&str, _> = status.clusters.iter().map(|c| (c.name.as_str(), c)).collect();
    let mut found = Vec::new();
    for cluster in clusters {
        let key = cluster.key();
        let entry = entries.get(key.as_str()).copied();
        let wave = entry
            .map(|e| e.wave.as_str())
            .or_else(|| assignment.wave_of(&key));
        let phase = entry.map_or(ClusterPhase::Pending, |e| e.phase);
        if wave != Some(current.as_str()) || !matches!(phase, ClusterPhase::Pending | ClusterPhase::Blocked) {
            continue;
        }
        let index = entry.and_then(|e| e.step).unwrap_or(0) as usize;
        let path_step = entry.and_then(|e| e.path.get(index));
        let previous = entry
            .and_then(|e| index.checked_sub(1).and_then(|i| e.path.get(i)))
            .and_then(|p| p.kubernetes.as_deref())
            .and_then(|k| KubernetesVersion::parse_release(k).ok());
        let from = previous.or_else(|| {
            let class = cluster.class.as_deref()?;
            Some(ReleaseTag::parse_cluster_class(class).ok()?.stack().kubernetes())
        });
        let first_step = || {
            let (release, class, kubernetes) = rollout_step.clone()?;
            if rollout.spec.from.is_none() {
                return Some((release, class, kubernetes));
            }
            // Across stacks: the first step of the path the plan gives it (none: it is
            // Blocked for want of a path, nothing to check).
            let tag = ReleaseTag::parse_cluster_class(cluster.class.as_deref()?).ok()?;
            let goal = crate::rollout::Target {
                release,
                class,
                kubernetes: Some(kubernetes),
            };
            let first = crate::rollout::path::path(tag.stack(), stack, &goal, stacks)
                .ok()?
                .into_iter()
                .next()?;
            Some((first.release, first.class, first.kubernetes.unwrap_or_default()))
        };
        let step = match path_step {
            Some(step) => (
                step.release.clone(),
                step.class.clone(),
                step.kubernetes.clone().unwrap_or_default(),
            ),
            None => match first_step() {
                Some(step) => step,
                None => continue,
            },
        };
        let (release, class, kubernetes) = step;
        if cluster.class.as_deref() == Some(class.as_str()) {
            continue;
        }
        found.push(Due {
            key,
            release,
            kubernetes,
            from,
            recorded: entry
                .filter(|e| e.phase == ClusterPhase::Blocked)
                .map(|e| e.preflight.clone())
                .unwrap_or_default(),
        });
    }
    found
}

/// The pre-flight of every Cluster in `due` (by `namespace/name`), from the cache when fresh.
pub async fn gather_due(
    ctx: &Context,
    cache: &PreflightCache,
    rollout: &ClusterStackRollout,
    due: Vec<Due>,
    clusters: &BTreeMap<String, std::sync::Arc<DynamicObject>>,
) -> BTreeMap<String, Vec<PreflightResult>> {
    let namespace = rollout.namespace().unwrap_or_default();
    let gathered = futures::stream::iter(due)
        .map(|due| {
            let namespace = namespace.clone();
            async move {
                if let Some(results) = cache.get(&due.key, &due.release) {
                    return Some((due.key, results));
                }
                let cluster = clusters.get(&due.key)?;
                let (results, complete) = gather(ctx, rollout, &namespace, &due, cluster).await;
                let results = keep_recorded(&due.recorded, results);
                cache.keep(&due.key, &due.release, complete, results.clone());
                Some((due.key, results))
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect::<Vec<_>>()
        .await;
    gathered.into_iter().flatten().collect()
}

/// One Cluster's pre-flight for its step to `due.release` (of `release_namespace`), and
/// whether every piece could be read.
pub async fn gather(
    ctx: &Context,
    rollout: &ClusterStackRollout,
    release_namespace: &str,
    due: &Due,
    cluster: &DynamicObject,
) -> (Vec<PreflightResult>, bool) {
    let namespace = cluster.namespace().unwrap_or_default();
    let name = cluster.name_any();
    let mut evidence = Evidence::default();
    let checks = &rollout.spec.preflight.checks;
    // The user's checks come last, after the version skew.
    let mut user = Vec::new();
    match ctx.workloads.get(&ctx.management, &namespace, &name).await {
        // Cluster API writes the Secret once the control plane is up: nothing runs there yet.
        Err(Gate::NoKubeconfig { .. }) => {
            let why = "no workload API server yet to evaluate it on";
            evidence
                .others
                .extend(checks.iter().enumerate().map(|(i, c)| check_failed(i, c, why)));
        }
        Err(gate) => {
            let why = format!("the workload cluster cannot be read: {gate}");
            evidence
                .others
                .extend(checks.iter().enumerate().map(|(i, c)| check_failed(i, c, &why)));
            evidence.requested = Some(Err(why.clone()));
            evidence.in_use = Some(Err(why));
        }
        Ok(found) => {
            let (requested, in_use) = futures::join!(
                workload::requested_apis(&found.client, &found.server),
                helm::stored_release_apis(&found.client)
            );
            if requested.is_err() || in_use.is_err() {
                ctx.workloads.suspect(&namespace, &name);
            }
            evidence.requested = Some(requested);
            evidence.in_use = Some(in_use);
            for (i, check) in checks.iter().enumerate() {
                user.push(user_check(&found, i, check).await);
            }
        }
    }
    let inventory = addon_inventory(ctx, &namespace, &name).await;
    match (&mut evidence.in_use, inventory) {
        (_, Ok(found)) if found.is_empty() => {}
        (Some(Ok(in_use)), Ok(found)) => in_use.extend(found),
        (in_use @ None, Ok(found)) => *in_use = Some(Ok(found)),
        (Some(Err(_)), _) => {}
        (in_use, Err(why)) => *in_use = Some(Err(why)),
    }
    evidence.rendered = Some(render_target(ctx, release_namespace, &due.release, cluster).await);
    let to = KubernetesVersion::parse_release(&due.kubernetes);
    if let (Some(from), Ok(to)) = (due.from, &to) {
        evidence.others.push(skew(ctx, cluster, from, *to).await);
    }
    evidence.others.extend(user);
    let complete = !matches!(evidence.requested, Some(Err(_)))
        && !matches!(evidence.in_use, Some(Err(_)))
        && evidence.rendered.as_ref().is_none_or(|r| r.objects.is_ok());
    let results = match to {
        Ok(to) => evidence.verdicts(to),
        Err(e) => vec![PreflightResult {
            check: crate::preflight::TARGET_RENDERS_CHECK.to_string(),
            ok: false,
            reason: format!("{}: its Kubernetes version: {e}", due.release),
        }],
    };
    (results, complete)
}

/// The kinds the Cluster's ClusterAddon says it applied (none without a ClusterAddon).
async fn addon_inventory(
    ctx: &Context,
    namespace: &str,
    cluster: &str,
) -> Result<Vec<crate::rollout::preflight::ApiInUse>, String> {
    let name = crate::api::cluster_addon::addon_name(cluster);
    let api: kube::api::Api<crate::api::ClusterAddon> =
        kube::api::Api::namespaced(ctx.client.clone(), namespace);
    let read = tokio::time::timeout(LIST_TIMEOUT, api.get_opt(&name))
        .await
        .map_err(|_| format!("reading ClusterAddon {namespace}/{name}: no answer within {LIST_TIMEOUT:?}"))?
        .map_err(|e| format!("reading ClusterAddon {namespace}/{name}: {e}"))?;
    Ok(read
        .map(|addon| crate::preflight::inventory_apis(&addon))
        .unwrap_or_default())
}

/// The name of `spec.preflight.checks[i]` in results: `Check <name>`, else `Check checks[i]`.
fn check_name(i: usize, check: &HealthCheck) -> String {
    match &check.name {
        Some(name) => format!("Check {name}"),
        None => format!("Check checks[{i}]"),
    }
}

fn check_failed(i: usize, check: &HealthCheck, why: &str) -> PreflightResult {
    PreflightResult {
        check: check_name(i, check),
        ok: false,
        reason: why.to_string(),
    }
}

/// The longest one user check may take.
const CHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// One of `spec.preflight.checks` on the workload cluster, as `health.checks` are evaluated.
async fn user_check(
    workload: &crate::addon::workload::Workload,
    i: usize,
    check: &HealthCheck,
) -> PreflightResult {
    use crate::addon::condition::{Verdict, evaluate};
    let condition = check.wait_condition();
    let verdict =
        tokio::time::timeout(CHECK_TIMEOUT, evaluate(workload.applier.discovery(), &condition)).await;
    let (ok, reason) = match verdict {
        Ok(Ok(Verdict::Met)) => (true, format!("{} holds", check.conditions)),
        Ok(Ok(Verdict::NotMet(why))) => (false, why),
        Ok(Err(e)) => (false, e.to_string()),
        Err(_) => (false, format!("no verdict within {CHECK_TIMEOUT:?}")),
    };
    PreflightResult {
        check: check_name(i, check),
        ok,
        reason,
    }
}

/// The version skew of a step from `from` to `to`: the control plane's `status.version`, and
/// the workers' versions.
async fn skew(
    ctx: &Context,
    cluster: &DynamicObject,
    from: KubernetesVersion,
    to: KubernetesVersion,
) -> PreflightResult {
    let namespace = cluster.namespace().unwrap_or_default();
    let control_plane = referenced(ctx, &namespace, cluster.data["spec"]["controlPlaneRef"].clone()).await;
    let workers = workers(ctx, &namespace, &cluster.name_any()).await;
    match (control_plane, workers) {
        (Ok(plane), Ok(workers)) => {
            let version = plane.as_ref().and_then(|p| p.data["status"]["version"].as_str());
            crate::rollout::preflight::version_skew(from, to, version, &workers)
        }
        (Err(why), _) | (_, Err(why)) => PreflightResult {
            check: crate::rollout::preflight::VERSION_SKEW_CHECK.to_string(),
            ok: false,
            reason: why,
        },
    }
}

/// The Cluster's MachineDeployments and MachinePools, in the Cluster API version spoken (a
/// kind not served counts as none), each read as [`capstan_stack::capi::WorkersFields`] with
/// the versions its machines are held at ([`crate::rollout::preflight::workers_of`]).
async fn workers(ctx: &Context, namespace: &str, cluster: &str) -> Result<Vec<Workers>, String> {
    use kube::api::{Api, ListParams};
    let selector = format!("cluster.x-k8s.io/cluster-name={cluster}");
    let version = crate::capi_api::current();
    let mut found = Vec::new();
    for kind in capstan_stack::capi::WORKER_KINDS {
        let resource = crate::capi_api::resource_of(version, kind);
        let api: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), namespace, &resource);
        let listed = tokio::time::timeout(LIST_TIMEOUT, api.list(&ListParams::default().labels(&selector)))
            .await
            .map_err(|_| format!("listing {kind}s: no answer within {LIST_TIMEOUT:?}"))?;
        let items = match listed {
            Ok(list) => list.items,
            Err(kube::Error::Api(status)) if status.code == 404 => Vec::new(),
            Err(e) => return Err(format!("listing {kind}s of Cluster {namespace}/{cluster}: {e}")),
        };
        for item in &items {
            let read = serde_json::to_value(item)
                .map_err(|e| e.to_string())
                .and_then(|json| {
                    capstan_stack::capi::WorkersFields::from_object(&json).map_err(|e| e.to_string())
                })
                .map_err(|e| format!("{kind} {namespace}/{}: {e}", item.name_any()))?;
            found.extend(crate::rollout::preflight::workers_of(&read));
        }
    }
    Ok(found)
}

/// The longest a list of a Cluster's workers may take.
const LIST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The step's release rendered for `cluster`, or why it could not be.
async fn render_target(ctx: &Context, namespace: &str, release: &str, cluster: &DynamicObject) -> Rendered {
    let objects = match render_inputs(ctx, namespace, release, cluster).await {
        Ok(inputs) => match tokio::task::spawn_blocking(move || inputs.render()).await {
            Ok(rendered) => return rendered,
            Err(e) => Err(format!("could not be rendered: {e}")),
        },
        Err(why) => Err(format!("could not be rendered: {why}")),
    };
    Rendered {
        release: release.to_string(),
        objects,
    }
}

/// What a render of the target for one Cluster is made from, as text (parsed on the blocking
/// thread: parsed values are not `Send`).
struct RenderInputs {
    compiled: std::sync::Arc<capstan_stack::render::CompiledRelease>,
    cluster: DynamicObject,
    control_plane: Option<DynamicObject>,
    infra_cluster: Option<DynamicObject>,
    user: Vec<crate::addon::user_values::Layer>,
}

impl RenderInputs {
    fn render(self) -> Rendered {
        let parsed = (|| {
            let objects = crate::preflight::render::cluster_objects(
                &self.cluster,
                self.control_plane.as_ref(),
                self.infra_cluster.as_ref(),
                self.compiled.values_template_api(),
            )?;
            let user = self
                .user
                .iter()
                .map(crate::addon::user_values::Layer::parse)
                .collect::<Result<Vec<_>, _>>()?;
            Ok::<_, String>((objects, user))
        })();
        match parsed {
            Ok((objects, user)) => target_renders(&self.compiled, &objects, &user),
            Err(why) => Rendered {
                release: self.compiled.tag().to_string(),
                objects: Err(format!("could not be rendered: {why}")),
            },
        }
    }
}

/// The compiled release (fetched and compiled as a ClusterAddon's), the Cluster's objects and
/// its user values.
async fn render_inputs(
    ctx: &Context,
    namespace: &str,
    release: &str,
    cluster: &DynamicObject,
) -> Result<RenderInputs, String> {
    let tag = ReleaseTag::parse(release).map_err(|e| e.to_string())?;
    let found = ctx
        .management
        .release(namespace, release)
        .await
        .map_err(|e| format!("reading ClusterStackRelease {namespace}/{release}: {e}"))?
        .ok_or_else(|| format!("ClusterStackRelease {namespace}/{release} does not exist"))?;
    let stack = match pipeline::stack_of(&found, &tag, &ctx.stacks, "") {
        Ok(ControlFlow::Continue(stack)) => stack,
        Ok(ControlFlow::Break(_)) => return Err(format!("the ClusterStack of {release} is not seen yet")),
        Err(failure) => return Err(failure.cause.to_string()),
    };
    let files = pipeline::fetch(ctx, &stack, &tag)
        .await
        .map_err(|f| f.cause.to_string())?;
    let policy = if pipeline::dependencies::has_policy(&stack, ctx) {
        pipeline::dependency_policy::of(&stack, ctx)
            .await
            .map_err(|e| e.to_string())?
    } else {
        Default::default()
    };
    let repositories = &ctx.settings.chart_repositories;
    let compiled = pipeline::compile(&ctx.sources, repositories, &ctx.metrics, &files, &policy)
        .await
        .map_err(|e| e.to_string())?;
    let cluster_namespace = cluster.namespace().unwrap_or_default();
    let reference = |field: &str| referenced(ctx, &cluster_namespace, cluster.data["spec"][field].clone());
    let (control_plane, infra_cluster) =
        futures::join!(reference("controlPlaneRef"), reference("infrastructureRef"));
    let user = crate::addon::user_values::gather(&ctx.client, &stack, cluster)
        .await
        .map_err(|e| e.to_string())?;
    Ok(RenderInputs {
        compiled: compiled.release,
        cluster: cluster.clone(),
        control_plane: control_plane?,
        infra_cluster: infra_cluster?,
        user,
    })
}

/// The object a Cluster's reference names (`None` without a reference).
async fn referenced(
    ctx: &Context,
    namespace: &str,
    reference: serde_json::Value,
) -> Result<Option<DynamicObject>, String> {
    let (Some(kind), Some(name)) = (reference["kind"].as_str(), reference["name"].as_str()) else {
        return Ok(None);
    };
    let namespace = reference["namespace"].as_str().unwrap_or(namespace);
    let what = format!("{kind} {namespace}/{name}");
    let discovery = ctx.applier.discovery();
    // v1beta2 names the group only: the version the server prefers for it.
    let api_version = match (reference["apiVersion"].as_str(), reference["apiGroup"].as_str()) {
        (Some(version), _) => version.to_string(),
        (None, Some(group)) => discovery
            .preferred_api_version(group, kind)
            .await
            .map_err(|e| format!("{what}: {e}"))?,
        (None, None) => return Ok(None),
    };
    let info = discovery
        .resolve_api_version(&api_version, kind)
        .await
        .map_err(|e| format!("{what}: {e}"))?;
    ctx.management
        .referenced(&info, namespace, name)
        .await
        .map_err(|e| format!("{what}: {e}"))?
        .map(Some)
        .ok_or_else(|| format!("{what} does not exist"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::rollout::{ClusterRolloutStatus, PathStep};
    use capstan_stack::name::StackName;

    const V1: &str = "docker-ferrol-1-27-v1";
    const V2: &str = "docker-ferrol-1-27-v2";

    fn rollout(status: Option<ClusterStackRolloutStatus>) -> ClusterStackRollout {
        let mut rollout: ClusterStackRollout = serde_json::from_value(serde_json::json!({
            "apiVersion": "capstan.dev/v1alpha1", "kind": "ClusterStackRollout",
            "metadata": {"name": "ferrol", "namespace": "t"},
            "spec": {"clusterStack": "docker-ferrol-1-27", "waves": [
                {"name": "canary", "clusterSelector": {"matchLabels": {"ring": "canary"}}},
                {"name": "rest"}]}}))
        .unwrap_or_else(|e| panic!("{e}"));
        rollout.status = status;
        rollout
    }

    fn cluster(name: &str, ring: &str, class: &str) -> ClusterInfo {
        ClusterInfo {
            namespace: "t".into(),
            name: name.into(),
            labels: [("ring".to_string(), ring.to_string())].into(),
            class: Some(class.into()),
            class_namespace: "t".into(),
            version: Some("v1.27.2".into()),
            ..ClusterInfo::default()
        }
    }

    fn entry(name: &str, wave: &str, phase: ClusterPhase) -> ClusterRolloutStatus {
        ClusterRolloutStatus {
            name: format!("t/{name}"),
            wave: wave.into(),
            phase,
            ..ClusterRolloutStatus::default()
        }
    }

    fn started(
        wave: &str,
        phase: RolloutPhase,
        clusters: Vec<ClusterRolloutStatus>,
    ) -> ClusterStackRolloutStatus {
        ClusterStackRolloutStatus {
            phase,
            target_release: Some(V2.into()),
            target_class: Some(V2.into()),
            target_kubernetes: Some("v1.27.3".into()),
            current_wave: Some(wave.into()),
            clusters,
            ..ClusterStackRolloutStatus::default()
        }
    }

    fn blocked_evidence() -> Vec<PreflightResult> {
        vec![PreflightResult {
            check: crate::preflight::REQUESTED_APIS_CHECK.into(),
            ok: false,
            reason: "extensions/v1beta1 ingresses".into(),
        }]
    }

    /// One row: the status, the Clusters, and the due ones as (name, release, recorded?).
    #[test]
    fn only_clusters_waiting_in_the_current_wave_are_checked() {
        let target = Resolved {
            release: V2.into(),
            class: V2.into(),
            kubernetes: "v1.27.3".into(),
        };
        let fleet = vec![
            cluster("c1", "canary", V1),
            cluster("r1", "rest", V1),
            cluster("r2", "rest", V1),
            cluster("r3", "rest", V1),
        ];
        let mut blocked = entry("r1", "rest", ClusterPhase::Blocked);
        blocked.preflight = blocked_evidence();
        let mut walking = entry("r2", "rest", ClusterPhase::Pending);
        walking.path = [
            ("docker-ferrol-1-28-v1", "v1.28.4"),
            ("docker-ferrol-1-29-v1", "v1.29.1"),
        ]
        .iter()
        .map(|(r, k)| PathStep {
            release: r.to_string(),
            class: r.to_string(),
            kubernetes: Some(k.to_string()),
        })
        .collect();
        walking.step = Some(1);
        let mut old_target = started("rest", RolloutPhase::Complete, vec![]);
        old_target.target_release = Some(V1.into());
        // (name, release, the minor it starts from, evidence recorded).
        type Row = (
            Option<ClusterStackRolloutStatus>,
            Vec<ClusterInfo>,
            Vec<(&'static str, &'static str, &'static str, bool)>,
        );
        let rows: Vec<Row> = vec![
            // Not started: the first wave with Clusters.
            (None, fleet.clone(), vec![("c1", V2, "1.27", false)]),
            // The current wave's Pending, Blocked (with its evidence), path-walking and new Clusters.
            (
                Some(started(
                    "rest",
                    RolloutPhase::Progressing,
                    vec![
                        entry("c1", "canary", ClusterPhase::Healthy),
                        blocked.clone(),
                        walking.clone(),
                    ],
                )),
                fleet.clone(),
                vec![
                    ("r1", V2, "1.27", true),
                    // Its second step starts from its first step's minor.
                    ("r2", "docker-ferrol-1-29-v1", "1.28", false),
                    ("r3", V2, "1.27", false),
                ],
            ),
            // In flight or done: not checked.
            (
                Some(started(
                    "rest",
                    RolloutPhase::Progressing,
                    vec![
                        entry("r1", "rest", ClusterPhase::Updating),
                        entry("r2", "rest", ClusterPhase::Healthy),
                        entry("r3", "rest", ClusterPhase::Failed),
                    ],
                )),
                fleet.clone(),
                vec![],
            ),
            // On the target already: nothing to switch.
            (None, vec![cluster("c1", "canary", V2)], vec![]),
            // Complete: nothing; complete with another target, it starts over.
            (
                Some(started("rest", RolloutPhase::Complete, vec![])),
                fleet.clone(),
                vec![],
            ),
            (Some(old_target), fleet.clone(), vec![("c1", V2, "1.27", false)]),
        ];
        let stack = StackName::parse("docker-ferrol-1-27").unwrap_or_else(|e| panic!("{e}"));
        for (i, (status, clusters, want)) in rows.into_iter().enumerate() {
            let got: Vec<(String, String, String, bool)> =
                due(&rollout(status), "t", &stack, Some(&target), &clusters, &[])
                    .into_iter()
                    .map(|d| {
                        let from = d.from.map(|v| v.to_string()).unwrap_or_default();
                        (d.key, d.release, from, !d.recorded.is_empty())
                    })
                    .collect();
            let want: Vec<(String, String, String, bool)> = want
                .into_iter()
                .map(|(n, r, from, kept)| (format!("t/{n}"), r.to_string(), from.to_string(), kept))
                .collect();
            assert_eq!(got, want, "row {i}");
        }
    }

    /// A rollout across stacks: a new Cluster two minors behind is due for its path's first
    /// step (the stack in between), one a minor behind for the target, one without a path
    /// (the minor in between has no ready release) is not checked.
    #[test]
    fn a_new_cluster_of_a_from_stack_is_checked_for_its_first_step() {
        let mut rollout = rollout(None);
        rollout.spec.cluster_stack = "ferrol-1-29".into();
        rollout.spec.from = Some(crate::api::rollout::FromStacks::Auto);
        let name = |s: &str| StackName::parse(s).unwrap_or_else(|e| panic!("{e}"));
        let release = |stack: &str, k: &str| crate::rollout::Target {
            release: format!("{stack}-v1"),
            class: format!("{stack}-v1"),
            kubernetes: Some(k.into()),
        };
        let hop = |stack: &str, ready: Option<&str>| Hop {
            name: stack.trim_start_matches("docker-").into(),
            stack: name(stack),
            newest_ready: ready.map(|k| release(stack, k)),
        };
        let target = Resolved {
            release: "docker-ferrol-1-29-v1".into(),
            class: "docker-ferrol-1-29-v1".into(),
            kubernetes: "v1.29.1".into(),
        };
        let stack = name("docker-ferrol-1-29");
        let fleet = vec![
            cluster("behind", "canary", "docker-ferrol-1-27-v1"),
            cluster("near", "canary", "docker-ferrol-1-28-v1"),
        ];
        let due_for = |hops: &[Hop]| -> Vec<(String, String)> {
            due(&rollout, "t", &stack, Some(&target), &fleet, hops)
                .into_iter()
                .map(|d| (d.key, d.release))
                .collect()
        };
        let stacks = [
            hop("docker-ferrol-1-27", Some("v1.27.3")),
            hop("docker-ferrol-1-28", Some("v1.28.4")),
            hop("docker-ferrol-1-29", Some("v1.29.1")),
        ];
        assert_eq!(
            due_for(&stacks),
            [
                ("t/behind".to_string(), "docker-ferrol-1-28-v1".to_string()),
                ("t/near".to_string(), "docker-ferrol-1-29-v1".to_string()),
            ]
        );
        let no_ready_1_28 = [
            hop("docker-ferrol-1-27", Some("v1.27.3")),
            hop("docker-ferrol-1-28", None),
            hop("docker-ferrol-1-29", Some("v1.29.1")),
        ];
        assert_eq!(
            due_for(&no_ready_1_28),
            [("t/near".to_string(), "docker-ferrol-1-29-v1".to_string())]
        );
        // Paused: nobody is due, no workload cluster is asked.
        rollout.spec.paused = true;
        assert!(due(&rollout, "t", &stack, Some(&target), &fleet, &stacks).is_empty());
    }
}
