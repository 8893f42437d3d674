//! The ClusterAddon controller: brings a release's addons onto the workload cluster of a
//! Cluster that uses the release's ClusterClass, with values injected from the live Cluster
//! API objects (`Cluster`, its control plane and infrastructure cluster), and keeps them there.
//!
//! - **Gates**: the `<cluster>-kubeconfig` Secret, `status.controlPlaneReady` and the workload
//!   API server's `/readyz`; the `ClusterReady` condition names the gate that is missing.
//! - **Render once**: the injected values are computed on every pass (cheap) and hashed with
//!   the release digest and capstan's version; the addon charts are rendered only when that
//!   hash changes, into the render store. Drift passes apply the stored manifest.
//! - **Single chart**: applied to the workload cluster with an inventory there and pruning, so
//!   an upgrade (the Cluster's class changes) applies every object of the new release and
//!   removes what it dropped.
//! - **Stages** (`clusteraddon.yaml`): the current hook's stages run in order —
//!   pre-condition, apply or delete, post-condition — each phase recorded in `status.stages`
//!   before the next begins, so a restart neither repeats a finished stage nor skips an
//!   interrupted one.
//! - **Deletion**: with the Cluster gone the finalizer is released without reaching for the
//!   vanished cluster; a ClusterAddon deleted alone first removes its objects.

mod plan;

use std::ops::ControlFlow;
use std::sync::Arc;

use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use sha2::{Digest, Sha256};

use super::cluster_stack_release::{StackLookup, compiled_release, find_stack};
use super::progress::WAIT;
use super::{Error, backoff, now, object_ref, owner_reference};
use crate::addon::condition::{self, Verdict};
use crate::addon::workload::Workload;
use crate::api::conditions::Condition;
use crate::api::{ClusterAddon, ClusterAddonStatus, ClusterStackRelease};
use crate::context::Context;
use crate::store::{Owner, StoredRender};
use capstan_apply::discovery::{Discovery, DiscoveryError};
use capstan_apply::{Applier, ApplyOptions, InventoryRef, PruneScope, parse_stream};
use capstan_stack::addon_config::{Action as StageAction, AddonConfig, WaitCondition};
use capstan_stack::name::ReleaseTag;
use capstan_stack::render::ADDON_NAMESPACE;
use capstan_stack::render::CompiledRelease;
use plan::{StagePhase, StageStep, Step};

pub const FINALIZER: &str = "clusterstack.x-k8s.io/capstan-addon";
pub const CONTROLLER: &str = "clusteraddon";

pub const CLUSTER_READY: &str = "ClusterReady";
pub const RENDERED: &str = "Rendered";
pub const APPLIED: &str = "Applied";
const STEPS: [&str; 3] = [CLUSTER_READY, RENDERED, APPLIED];

/// The inventory of a single-chart addon on the workload cluster.
fn inventory(addon: &ClusterAddon) -> InventoryRef {
    InventoryRef {
        namespace: ADDON_NAMESPACE.into(),
        name: format!("capstan.caddon.{}", addon.name_any()),
    }
}

/// The inventory of one stage's objects on the workload cluster.
fn stage_inventory(addon: &ClusterAddon, stage: &str) -> InventoryRef {
    InventoryRef {
        namespace: ADDON_NAMESPACE.into(),
        name: format!("capstan.caddon.{}.{stage}", addon.name_any()),
    }
}

pub async fn reconcile(addon: Arc<ClusterAddon>, ctx: Arc<Context>) -> Result<Action, Error> {
    let key = key_of(&addon);
    let ctx: &Context = &ctx;
    super::with_finalizer(
        addon,
        ctx,
        (FINALIZER, CONTROLLER),
        key,
        |addon| async move { apply(&addon, ctx).await },
        |addon| async move { cleanup(&addon, ctx).await },
    )
    .await
}

pub fn error_policy(addon: Arc<ClusterAddon>, error: &Error, ctx: Arc<Context>) -> Action {
    tracing::warn!(addon = %key_of(&addon), %error, "reconcile failed");
    // The workload cluster may be the cause: the next pass probes it before using it.
    if let (Some(namespace), Some(cluster)) = (addon.namespace(), &addon.spec.cluster_ref.name) {
        ctx.workloads.suspect(&namespace, cluster);
    }
    Action::requeue(backoff(&ctx, &key_of(&addon)))
}

fn key_of(addon: &ClusterAddon) -> String {
    format!(
        "ClusterAddon/{}/{}",
        addon.namespace().unwrap_or_default(),
        addon.name_any()
    )
}

type Progress<'a> = super::progress::Progress<'a, ClusterAddon>;

impl super::progress::Tracked for ClusterAddon {
    type Status = ClusterAddonStatus;

    fn status_of(&self) -> Option<&ClusterAddonStatus> {
        self.status.as_ref()
    }

    fn conditions_mut(status: &mut ClusterAddonStatus) -> &mut Vec<Condition> {
        &mut status.conditions
    }

    fn ready(status: &ClusterAddonStatus) -> bool {
        status.ready
    }

    fn set_ready(status: &mut ClusterAddonStatus, ready: bool) {
        status.ready = ready;
    }

    fn ready_note(&self, status: &ClusterAddonStatus) -> String {
        format!(
            "addons of {} applied ({} objects)",
            status.applied_cluster_stack.clone().unwrap_or_default(),
            status.resources.len()
        )
    }
}

async fn apply(addon: &ClusterAddon, ctx: &Context) -> Result<Action, Error> {
    let mut progress = Progress::new(addon, ctx, &STEPS);
    let namespace = addon.namespace().unwrap_or_default();
    let cluster_name = addon.spec.cluster_ref.name.clone().unwrap_or_default();
    let cluster = match read_cluster(&mut progress, &namespace, &cluster_name).await? {
        ControlFlow::Continue(cluster) => cluster,
        ControlFlow::Break(action) => return Ok(action),
    };

    // 1. Which release: the Cluster's class, in `spec.topology.classNamespace` when given.
    let usage = crate::webhook::validate::ClusterUse::of(&cluster);
    let class_namespace = usage.class_namespace;
    let Some(class) = usage.class else {
        return progress
            .wait(
                CLUSTER_READY,
                "NoTopology",
                format!("Cluster {cluster_name} has no spec.topology.class"),
            )
            .await;
    };
    let tag = match ReleaseTag::parse_cluster_class(&class) {
        Ok(tag) => tag,
        Err(e) => {
            let message = format!("class {class} is not a cluster stack class: {e}");
            progress.condition(CLUSTER_READY, false, "NotAStackClass", message);
            progress.save().await?;
            return Ok(Action::await_change());
        }
    };

    // Status never claims the old release for the new class: progressing at once.
    upgrading(&mut progress, &class).await?;

    // 2. Gates.
    let target = match open_gates(&mut progress, &cluster, &namespace, &cluster_name).await? {
        ControlFlow::Continue(target) => target,
        ControlFlow::Break(action) => return Ok(action),
    };

    // 3. The release, through the ClusterStack that follows it.
    let (compiled, digest) = match resolve_release(&mut progress, &class_namespace, &tag).await? {
        ControlFlow::Continue(found) => found,
        ControlFlow::Break(action) => return Ok(action),
    };

    // 4. Values from the live objects; a render only when they (or the release) changed.
    let objects = match live_objects(ctx, &cluster).await {
        Ok(objects) => objects,
        Err(message) => return progress.wait(RENDERED, "ObjectsMissing", message).await,
    };
    let owner = Owner {
        namespace: namespace.clone(),
        short_kind: "caddon",
        name: addon.name_any(),
        reference: owner_reference(addon),
    };
    let render = match render_once(ctx, &compiled, objects, &digest, &owner, &target).await {
        Ok(render) => render,
        Err(message) => return Err(progress.fail(RENDERED, "RenderFailed", message).await),
    };
    progress.condition(
        RENDERED,
        true,
        "Rendered",
        format!("revision {} of the addons of {tag}", render.revision),
    );

    // 5. Apply: stages of the current hook, or the one chart.
    let steps = Steps {
        class: &class,
        render: &render,
        applier: &target.applier,
        target: &target,
    };
    apply_release(&mut progress, compiled.addon_config(), &steps).await
}

/// Steps the plan until the pass is done or has to wait.
async fn apply_release(
    progress: &mut Progress<'_>,
    config: Option<&AddonConfig>,
    steps: &Steps<'_>,
) -> Result<Action, Error> {
    let ctx = progress.ctx;
    let (class, render) = (steps.class, steps.render);
    loop {
        match plan::plan(&progress.status, config, class, &render.inputs) {
            Step::ApplyChart { drift_pass } => return apply_chart(progress, steps, drift_pass).await,
            Step::DriftStages { hook } => {
                let stages = match (config, hook) {
                    (Some(config), Some(hook)) => plan::stages_of(config, hook),
                    _ => &[],
                };
                return drift_stages(progress, stages, render, steps.applier).await;
            }
            Step::StartStages { stages_for, stages } => {
                progress.status.stages_for = Some(stages_for.to_string());
                progress.status.stages = stages;
                progress.save().await?;
            }
            Step::Stage { hook, index, step } => {
                let stage = config.and_then(|c| plan::stages_of(c, hook).get(index));
                let Some(stage) = stage else {
                    let message = format!("stage {index} of {hook} is not in the release");
                    return Err(progress.fail(APPLIED, "NoSuchStage", message).await);
                };
                if let Some(action) = stage_step(progress, index, stage, step, steps).await? {
                    return Ok(action);
                }
            }
            Step::StagesDone { hook, count } => {
                record_applied(progress, class, render);
                let message = format!("{count} stage(s) of {hook} done for {class}");
                progress.condition(APPLIED, true, "StagesDone", message);
                progress.save().await?;
                return Ok(Action::requeue(ctx.settings.drift_interval));
            }
        }
    }
}

/// The addon's Cluster; when it is gone, the ClusterAddon is deleted (no garbage collector
/// took it along) and the pass ends.
async fn read_cluster(
    progress: &mut Progress<'_>,
    namespace: &str,
    cluster_name: &str,
) -> Result<ControlFlow<Action, DynamicObject>, Error> {
    let (ctx, addon) = (progress.ctx, progress.object);
    let clusters: Api<DynamicObject> = Api::namespaced_with(
        ctx.client.clone(),
        namespace,
        &crate::clusters::cluster_resource(),
    );
    match clusters.get_opt(cluster_name).await {
        Ok(Some(cluster)) => Ok(ControlFlow::Continue(cluster)),
        Ok(None) => {
            // The Cluster is gone (no garbage collector took its ClusterAddon along).
            let api: Api<ClusterAddon> = Api::namespaced(ctx.client.clone(), namespace);
            match api.delete(&addon.name_any(), &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(Error::Kube(format!("deleting {}: {e}", key_of(addon)))),
            }
            Ok(ControlFlow::Break(Action::await_change()))
        }
        Err(e) => Err(progress
            .fail(CLUSTER_READY, "ClusterUnreadable", e.to_string())
            .await),
    }
}

/// The compiled release of `tag` in `class_namespace` and its digest: the release, the
/// ClusterStack that follows it, its source, the fetch and the compile.
async fn resolve_release(
    progress: &mut Progress<'_>,
    class_namespace: &str,
    tag: &ReleaseTag,
) -> Result<ControlFlow<Action, (Arc<CompiledRelease>, String)>, Error> {
    let ctx = progress.ctx;
    let releases: Api<ClusterStackRelease> = Api::namespaced(ctx.client.clone(), class_namespace);
    let release = match releases.get_opt(&tag.tag()).await {
        Ok(Some(release)) => release,
        Ok(None) => {
            let message = format!("ClusterStackRelease {class_namespace}/{tag} does not exist");
            return progress
                .wait(RENDERED, "NoRelease", message)
                .await
                .map(ControlFlow::Break);
        }
        Err(e) => return Err(progress.fail(RENDERED, "ReleaseUnreadable", e.to_string()).await),
    };
    let stack = match find_stack(&release, tag, ctx) {
        StackLookup::Found(stack) => stack,
        StackLookup::NotYetKnown(_) => return Ok(ControlFlow::Break(Action::requeue(WAIT))),
        StackLookup::None => {
            let message = format!(
                "no ClusterStack in namespace {class_namespace} follows {}",
                tag.stack()
            );
            return Err(progress.fail(RENDERED, "NoClusterStack", message).await);
        }
    };
    let source = match super::resolve_source(&stack, ctx).await {
        Ok(source) => source,
        Err(message) => return Err(progress.fail(RENDERED, "SourceUnavailable", message).await),
    };
    let fetched = match ctx.sources.fetch(&source, tag).await {
        Ok(fetched) => fetched,
        Err(e) => return Err(progress.fail(RENDERED, "DownloadFailed", e.to_string()).await),
    };
    let digest = match fetched.digest() {
        Ok(digest) => digest,
        Err(e) => return Err(progress.fail(RENDERED, "DownloadFailed", e.to_string()).await),
    };
    match compiled_release(ctx, &source, &fetched, &digest).await {
        Ok(compiled) => Ok(ControlFlow::Continue((compiled, digest))),
        Err(message) => Err(progress.fail(RENDERED, "CompileFailed", message).await),
    }
}

/// The gates: `status.controlPlaneReady`, then a workload API server that is ready (from
/// the workload-cluster cache: no request to it when its kubeconfig Secret did not change).
async fn open_gates(
    progress: &mut Progress<'_>,
    cluster: &DynamicObject,
    namespace: &str,
    cluster_name: &str,
) -> Result<ControlFlow<Action, Arc<Workload>>, Error> {
    let control_plane_ready = cluster
        .data
        .pointer("/status/controlPlaneReady")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    if !control_plane_ready {
        let message = format!("waiting for Cluster {cluster_name}: status.controlPlaneReady is not true");
        return progress
            .wait(CLUSTER_READY, "ControlPlaneNotReady", message)
            .await
            .map(ControlFlow::Break);
    }
    let ctx = progress.ctx;
    let target = match ctx.workloads.get(&ctx.client, namespace, cluster_name).await {
        Ok(target) => target,
        Err(gate) => {
            return progress
                .wait(CLUSTER_READY, "WorkloadNotReady", gate.to_string())
                .await
                .map(ControlFlow::Break);
        }
    };
    progress.condition(
        CLUSTER_READY,
        true,
        "Ready",
        format!("workload API server {} is ready", target.server),
    );
    Ok(ControlFlow::Continue(target))
}

/// What the apply steps of one pass share.
struct Steps<'a> {
    class: &'a str,
    render: &'a StoredRender,
    applier: &'a Applier,
    target: &'a Workload,
}

/// Records that the addons of `class` were applied from `render`.
fn record_applied(progress: &mut Progress<'_>, class: &str, render: &StoredRender) {
    progress.status.applied_cluster_stack = Some(class.to_string());
    progress.status.applied_revision = Some(i64::from(render.revision));
    progress.status.applied_inputs = Some(render.inputs.clone());
    progress.status.last_reconciled = Some(now());
}

/// A single-chart addon: applied with its inventory, unless a drift pass is not yet due.
async fn apply_chart(
    progress: &mut Progress<'_>,
    steps: &Steps<'_>,
    drift_pass: bool,
) -> Result<Action, Error> {
    let ctx = progress.ctx;
    let drifted = ctx.addon_drift.take(&ObjectRef::from_obj(progress.object));
    if drift_pass
        && !drifted
        && let Some(wait) = super::drift_wait(progress.status.last_reconciled.as_ref(), ctx)
    {
        progress.save().await?;
        return Ok(Action::requeue(wait));
    }
    let render = steps.render;
    let manifest = render.manifest();
    let objects = match parse_stream(&manifest, &format!("render revision {}", render.revision)) {
        Ok(objects) => objects,
        Err(e) => return Err(progress.fail(APPLIED, "InvalidManifest", e.to_string()).await),
    };
    let inventory = inventory(progress.object);
    apply_objects(progress, steps.applier, &objects, inventory.clone(), drift_pass).await?;
    watch_drift(progress, steps.target, &objects, &inventory).await;
    record_applied(progress, steps.class, render);
    progress.save().await?;
    Ok(Action::requeue(ctx.settings.drift_interval))
}

/// Watches the kinds just applied with `inventory` on the workload cluster: a change there
/// wakes this ClusterAddon at once (see [`crate::addon::drift`]).
async fn watch_drift(
    progress: &Progress<'_>,
    target: &Workload,
    objects: &[capstan_apply::DesiredObject],
    inventory: &InventoryRef,
) {
    let mut kinds: Vec<crate::addon::drift::Kind> = objects
        .iter()
        .map(|o| (o.group.clone(), o.version.clone(), o.kind.clone()))
        .collect();
    kinds.sort();
    kinds.dedup();
    let notify = progress
        .ctx
        .addon_drift
        .notifier(ObjectRef::from_obj(progress.object));
    target
        .drift
        .ensure(target.applier.discovery(), &inventory.id(), &kinds, notify)
        .await;
}

/// Marks `Applied` false at once when the class changed (only while the status still says
/// Applied: later steps set their own progress).
async fn upgrading(progress: &mut Progress<'_>, class: &str) -> Result<(), Error> {
    if let Some(message) = class_change(progress.status.applied_cluster_stack.as_deref(), class)
        && crate::api::conditions::is_true(&progress.status.conditions, APPLIED)
    {
        progress.condition(APPLIED, false, "Upgrading", message);
        progress.save().await?;
    }
    Ok(())
}

/// When the Cluster's class is not the one whose addons were applied last: the message of
/// the `Applied` condition while the new release's addons are brought in.
fn class_change(applied: Option<&str>, class: &str) -> Option<String> {
    match applied {
        Some(applied) if applied != class => Some(format!(
            "the Cluster's class changed from {applied} to {class}: applying the addons of {class}"
        )),
        _ => None,
    }
}

/// Drift pass of a multi-stage addon whose stages ran: the `apply` stages of the recorded
/// hook are applied again from the stored render (unchanged objects are not sent).
async fn drift_stages(
    progress: &mut Progress<'_>,
    stages: &[capstan_stack::addon_config::Stage],
    render: &StoredRender,
    applier: &Applier,
) -> Result<Action, Error> {
    let ctx = progress.ctx;
    if let Some(wait) = super::drift_wait(progress.status.last_reconciled.as_ref(), ctx) {
        progress.save().await?;
        return Ok(Action::requeue(wait));
    }
    let mut resources = Vec::new();
    for stage in stages.iter().filter(|s| s.action == StageAction::Apply) {
        let part = format!("cluster-addon/{}", stage.name);
        let stream = render
            .parts
            .iter()
            .find(|(name, _)| *name == part)
            .map(|(_, stream)| stream.as_str())
            .unwrap_or_default();
        let objects = match parse_stream(stream, &part) {
            Ok(objects) => objects,
            Err(e) => return Err(progress.fail(APPLIED, "InvalidManifest", e.to_string()).await),
        };
        let inventory = stage_inventory(progress.object, &stage.name);
        apply_objects(progress, applier, &objects, inventory, true).await?;
        resources.append(&mut progress.status.resources);
    }
    progress.status.resources = resources;
    progress.status.last_reconciled = Some(now());
    progress.save().await?;
    Ok(Action::requeue(ctx.settings.drift_interval))
}

/// Applies `objects` to the workload cluster with `inventory` (pruning what left it) and
/// records the per-object status and the `Applied` condition.
async fn apply_objects(
    progress: &mut Progress<'_>,
    applier: &Applier,
    objects: &[capstan_apply::DesiredObject],
    inventory: InventoryRef,
    drift_pass: bool,
) -> Result<(), Error> {
    let ctx = progress.ctx;
    let options = ApplyOptions {
        namespace: ADDON_NAMESPACE.into(),
        inventory: Some(inventory),
        prune: true,
        concurrency: 8,
        ..ApplyOptions::default()
    };
    let report = match applier.apply(objects, &options).await {
        Ok(report) => report,
        Err(e) => return Err(progress.fail(APPLIED, "ApplyFailed", e.to_string()).await),
    };
    let outcome =
        super::report::record(ctx, CONTROLLER, &object_ref(progress.object), &report, drift_pass).await;
    progress.status.resources = outcome.resources.clone();
    if let Some(message) = outcome.failure.clone() {
        return Err(progress.fail(APPLIED, "ApplyFailed", message).await);
    }
    progress.condition(APPLIED, true, "Applied", outcome.summary());
    Ok(())
}

/// One step of stage `index`: a condition checked or its objects applied/deleted, then the
/// phase [`plan::advance`] gives recorded; `Some(action)` when the stage has to wait.
async fn stage_step(
    progress: &mut Progress<'_>,
    index: usize,
    stage: &capstan_stack::addon_config::Stage,
    step: StageStep,
    steps: &Steps<'_>,
) -> Result<Option<Action>, Error> {
    let (condition, waiting) = match step {
        StageStep::CheckPre => (&stage.wait_for_pre_condition, StagePhase::WaitingForPreCondition),
        StageStep::CheckPost => (
            &stage.wait_for_post_condition,
            StagePhase::WaitingForPostCondition,
        ),
        StageStep::Run => {
            run_stage_objects(progress, stage, steps).await?;
            (&None, StagePhase::ApplyingOrDeleting)
        }
    };
    let met = match condition {
        Some(condition) => condition_met(progress, &stage.name, condition, waiting, steps.target).await?,
        None => true,
    };
    if let Some(recorded) = progress.status.stages.get_mut(index) {
        recorded.phase = plan::advance(step, met).as_str().into();
    }
    progress.save().await?;
    Ok((!met).then_some(Action::requeue(WAIT)))
}

/// Applies (with the stage's inventory) or deletes the objects of `stage`.
async fn run_stage_objects(
    progress: &mut Progress<'_>,
    stage: &capstan_stack::addon_config::Stage,
    steps: &Steps<'_>,
) -> Result<(), Error> {
    let part = format!("cluster-addon/{}", stage.name);
    let stream = steps
        .render
        .parts
        .iter()
        .find(|(name, _)| *name == part)
        .map(|(_, stream)| stream.as_str())
        .unwrap_or_default();
    let objects = match parse_stream(stream, &part) {
        Ok(objects) => objects,
        Err(e) => return Err(progress.fail(APPLIED, "InvalidManifest", e.to_string()).await),
    };
    match stage.action {
        StageAction::Apply => {
            let inventory = stage_inventory(progress.object, &stage.name);
            apply_objects(progress, steps.applier, &objects, inventory, false).await
        }
        StageAction::Delete => match delete_objects(steps.applier.discovery(), &objects).await {
            Ok(()) => Ok(()),
            Err(message) => Err(progress.fail(APPLIED, "DeleteFailed", message).await),
        },
    }
}

/// Evaluates a wait condition of stage `stage`; when it does not hold, says why in the
/// `Applied` condition (`phase` is what the stage waits in).
async fn condition_met(
    progress: &mut Progress<'_>,
    stage: &str,
    condition: &WaitCondition,
    phase: StagePhase,
    target: &Workload,
) -> Result<bool, Error> {
    let phase = phase.as_str();
    match condition::evaluate(target.applier.discovery(), condition).await {
        Ok(Verdict::Met) => Ok(true),
        Ok(Verdict::NotMet(why)) => {
            let message = format!("stage {stage}: {phase}: {why}");
            progress.condition(APPLIED, false, "WaitingForCondition", message);
            Ok(false)
        }
        Err(e) => {
            let message = format!("stage {stage}: {phase}: {e}");
            Err(progress.fail(APPLIED, "ConditionFailed", message).await)
        }
    }
}

/// Deletes `objects` from the workload cluster (a `delete` stage); absent ones are fine.
async fn delete_objects(
    discovery: &Discovery,
    objects: &[capstan_apply::DesiredObject],
) -> Result<(), String> {
    for key in objects {
        let info = match discovery.resolve(&key.group, &key.version, &key.kind).await {
            Ok(found) => found,
            // The kind is not served: none of its objects exist.
            Err(DiscoveryError::UnknownKind { .. }) => continue,
            Err(e) => return Err(format!("deleting {} {}: {e}", key.kind, key.name)),
        };
        let namespace = key.namespace.as_deref().unwrap_or(ADDON_NAMESPACE);
        let api = discovery.api(&info, Some(namespace));
        match api.delete(&key.name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(format!("deleting {} {}: {e}", key.kind, key.name)),
        }
    }
    Ok(())
}

/// The Cluster and the objects it references, as JSON text per object.
struct LiveObjects {
    cluster: String,
    control_plane: Option<String>,
    infra_cluster: Option<String>,
}

async fn live_objects(ctx: &Context, cluster: &DynamicObject) -> Result<LiveObjects, String> {
    let namespace = cluster.namespace().unwrap_or_default();
    let referenced = |field: &str| cluster.data.pointer(&format!("/spec/{field}")).cloned();
    let discovery = ctx.applier.discovery();
    let read = |reference: Option<serde_json::Value>| {
        let namespace = namespace.clone();
        async move {
            let Some(reference) = reference else {
                return Ok(None);
            };
            let text = |k: &str| {
                reference
                    .get(k)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_string()
            };
            let (api_version, kind, name) = (text("apiVersion"), text("kind"), text("name"));
            let ns = reference
                .get("namespace")
                .and_then(|v| v.as_str())
                .map_or(namespace.clone(), str::to_string);
            let info = discovery
                .resolve_api_version(&api_version, &kind)
                .await
                .map_err(|e| format!("{kind} {ns}/{name}: {e}"))?;
            let api = discovery.api(&info, Some(&ns));
            match api.get_opt(&name).await {
                Ok(Some(object)) => serde_json::to_string(&object)
                    .map(Some)
                    .map_err(|e| e.to_string()),
                Ok(None) => Err(format!(
                    "waiting for {kind} {ns}/{name}, which the Cluster references"
                )),
                Err(e) => Err(format!("{kind} {ns}/{name}: {e}")),
            }
        }
    };
    Ok(LiveObjects {
        cluster: serde_json::to_string(cluster).map_err(|e| e.to_string())?,
        control_plane: read(referenced("controlPlaneRef")).await?,
        infra_cluster: read(referenced("infrastructureRef")).await?,
    })
}

/// Rendered parts: part name → manifest stream.
type Parts = Vec<(String, String)>;

/// The stored render for the current inputs, rendering (on a blocking thread, with `lookup`
/// answered by the workload cluster) only when no stored revision has them.
async fn render_once(
    ctx: &Context,
    compiled: &Arc<capstan_stack::render::CompiledRelease>,
    objects: LiveObjects,
    digest: &str,
    owner: &Owner,
    target: &Workload,
) -> Result<StoredRender, String> {
    let compiled = compiled.clone();
    let handle = tokio::runtime::Handle::current();
    let lookup_applier = target.applier.clone();
    let server_version = target.version.clone();
    let stored = ctx.store.latest(owner).await.map_err(|e| e.to_string())?;
    let stored_inputs = stored.as_ref().map(|s| s.inputs.clone());
    let digest = digest.to_string();
    // Values first (cheap); the hash decides whether the charts are rendered again.
    let (inputs, parts) = tokio::task::spawn_blocking(move || -> Result<(String, Option<Parts>), String> {
        let parse = |text: &str, what: &str| {
            capstan_stack::values::parse_object(text, std::path::Path::new(what)).map_err(|e| e.to_string())
        };
        let objects = capstan_stack::values::ClusterObjects {
            cluster: parse(&objects.cluster, "Cluster")?,
            control_plane: objects
                .control_plane
                .as_deref()
                .map(|t| parse(t, "ControlPlane"))
                .transpose()?,
            infra_cluster: objects
                .infra_cluster
                .as_deref()
                .map(|t| parse(t, "InfraCluster"))
                .transpose()?,
        };
        let values = compiled.addon_values(&objects).map_err(|e| e.to_string())?;
        let inputs = inputs_hash(&digest, &server_version, &values);
        if stored_inputs.as_deref() == Some(inputs.as_str()) {
            return Ok((inputs, None));
        }
        let env = std::rc::Rc::new(
            capstan_template::funcs::FuncEnv::system()
                .with_lookup(crate::lookup::applier_lookup(handle, lookup_applier)),
        );
        // The workload cluster's own version, as `helm install` against it would see.
        let kube_version = capstan_chart::objects::KubeVersion::parse(&server_version).ok();
        let parts = compiled
            .render_addons(values, kube_version, &env)
            .map_err(|e| e.to_string())?;
        Ok((
            inputs,
            Some(parts.into_iter().map(|p| (p.name, p.stream)).collect()),
        ))
    })
    .await
    .map_err(|e| format!("rendering: {e}"))??;
    match (parts, stored) {
        // Unchanged inputs: the revision read before the values were computed.
        (None, Some(stored)) => Ok(stored),
        (None, None) => Err("no stored render for unchanged inputs".to_string()),
        (Some(parts), _) => {
            let render = ctx
                .store
                .save(owner, &inputs, parts)
                .await
                .map_err(|e| e.to_string())?;
            tracing::info!(addon = %owner.name, revision = render.revision, "addons rendered");
            Ok(render)
        }
    }
}

/// The hash of what a render of the addons depends on: capstan's version, the release
/// digest, the workload cluster's version and every part's computed values.
fn inputs_hash(
    digest: &str,
    server_version: &str,
    values: &[(String, Option<capstan_stack::values::ComputedValues>)],
) -> String {
    let mut hasher = Sha256::new();
    for text in ["cluster-addon", env!("CARGO_PKG_VERSION"), digest, server_version] {
        hasher.update(text.as_bytes());
        hasher.update([0]);
    }
    for (part, computed) in values {
        hasher.update(part.as_bytes());
        hasher.update([0]);
        hasher.update(computed.as_ref().map_or("", |c| c.text.as_str()).as_bytes());
        hasher.update([0]);
    }
    capstan_source::cache::hex(&hasher.finalize())
}

/// Deletion: without the Cluster nothing can be reached; else the addon's objects go first.
async fn cleanup(addon: &ClusterAddon, ctx: &Context) -> Result<Action, Error> {
    let namespace = addon.namespace().unwrap_or_default();
    let cluster_name = addon.spec.cluster_ref.name.clone().unwrap_or_default();
    let owner = Owner {
        namespace: namespace.clone(),
        short_kind: "caddon",
        name: addon.name_any(),
        reference: owner_reference(addon),
    };
    let clusters: Api<DynamicObject> = Api::namespaced_with(
        ctx.client.clone(),
        &namespace,
        &crate::clusters::cluster_resource(),
    );
    let cluster = clusters
        .get_opt(&cluster_name)
        .await
        .map_err(|e| Error::Kube(format!("reading Cluster {namespace}/{cluster_name}: {e}")))?;
    let cluster_going = cluster
        .as_ref()
        .is_none_or(|c| c.metadata.deletion_timestamp.is_some());
    if !cluster_going {
        let target = ctx
            .workloads
            .get(&ctx.client, &namespace, &cluster_name)
            .await
            .map_err(|gate| Error::Step {
                step: "Cleanup".into(),
                message: gate.to_string(),
            })?;
        let applier = &target.applier;
        let mut inventories = vec![inventory(addon)];
        if let Some(status) = &addon.status {
            inventories.extend(status.stages.iter().map(|s| stage_inventory(addon, &s.name)));
        }
        for inventory in inventories {
            let options = ApplyOptions {
                namespace: ADDON_NAMESPACE.into(),
                inventory: Some(inventory),
                prune: true,
                // The cleanup: everything goes on purpose.
                prune_scope: PruneScope::Any,
                ..ApplyOptions::default()
            };
            let report = applier.apply(&[], &options).await.map_err(|e| Error::Step {
                step: "Cleanup".into(),
                message: e.to_string(),
            })?;
            if report.failed() {
                return Err(Error::Step {
                    step: "Cleanup".into(),
                    message: "some addon objects could not be removed".into(),
                });
            }
        }
    }
    ctx.store
        .remove_all(&owner)
        .await
        .map_err(|e| Error::Kube(e.to_string()))?;
    ctx.workloads.forget(&namespace, &cluster_name);
    Ok(Action::await_change())
}

#[cfg(test)]
mod class_change_tests {
    use super::class_change;

    #[test]
    fn a_new_class_is_progress() {
        assert_eq!(class_change(None, "docker-ferrol-1-27-v1"), None);
        assert_eq!(
            class_change(Some("docker-ferrol-1-27-v1"), "docker-ferrol-1-27-v1"),
            None
        );
        let message = class_change(Some("docker-ferrol-1-27-v1"), "docker-ferrol-1-27-v2").expect("a change");
        assert!(
            message.contains("from docker-ferrol-1-27-v1 to docker-ferrol-1-27-v2"),
            "{message}"
        );
    }
}
