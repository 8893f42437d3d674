//! The ClusterAddon controller: brings a release's addons onto the workload cluster of a
//! Cluster that uses the release's ClusterClass, with values injected from the live Cluster
//! API objects (`Cluster`, its control plane and infrastructure cluster), and keeps them there.
//!
//! - **Gates**: the `<cluster>-kubeconfig` Secret, `status.controlPlaneReady` and the workload
//!   API server's `/readyz`; the `ClusterReady` condition names the gate that is missing.
//! - **Render once**: the injected values are computed on every pass (cheap), the user's values
//!   ([`crate::addon::user_values`]) layered over them, and hashed with the release digest and
//!   capstan's version; the addon charts are rendered only when that hash changes, into the
//!   render store. Drift passes apply the stored manifest.
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

use super::error::Invalid;
use super::pipeline::{self, Parts, ReleaseFiles};
use super::progress::{Because, Failure, WAIT};
use super::release_runner::{self, Inventory, ReleaseKind};
use super::wake_ups::AddonDrift;
use super::{Cause, Error, owner_reference};
use crate::addon::condition::{self, Verdict};
use crate::addon::user_values::{GatherError, Layer};
use crate::addon::workload::{Gate, Workload};
use crate::api::{ClusterAddon, ClusterAddonStatus, ClusterStack};
use crate::api::{Recorded, StagePhase};
use crate::context::Context;
use crate::kube_error::is_not_found;
use crate::store::{Owner, StoredRender};
use capstan_apply::InventoryRef;
use capstan_apply::discovery::DiscoveryError;
use capstan_stack::addon_config::{Action as StageAction, Stage, WaitCondition};
use capstan_stack::name::ReleaseTag;
use capstan_stack::render::{ADDON_NAMESPACE, CompiledRelease};
use plan::{StageStep, Step};

pub const FINALIZER: &str = "clusterstack.x-k8s.io/capstan-addon";
pub const CONTROLLER: &str = "clusteraddon";

pub const CLUSTER_READY: &str = "ClusterReady";
/// Condition, once the addons were applied: whether the workload API server answers (false
/// from the first failed probe — after a drift watch there failed, or a failed pass — until
/// it answers again). Not a step of `Ready`, which says the addons are applied.
pub const WORKLOAD_REACHABLE: &str = "WorkloadReachable";
pub use super::pipeline::{APPLIED, RENDERED};
const STEPS: [&str; 3] = [CLUSTER_READY, RENDERED, APPLIED];

/// The inventory of a single-chart addon on the workload cluster.
fn inventory(addon: &ClusterAddon) -> InventoryRef {
    InventoryRef {
        namespace: ADDON_NAMESPACE.into(),
        name: format!("capstan.caddon.{}", addon.name_any()),
    }
}

/// The inventories of `addon` on its workload cluster: the one chart's, the recorded stages',
/// and those of `listed` (the inventory names in [`ADDON_NAMESPACE`]) of its stages of
/// earlier hooks, each once.
fn inventories_of(addon: &ClusterAddon, listed: &[String]) -> Vec<InventoryRef> {
    let single = inventory(addon);
    let stage_prefix = format!("{}.", single.name);
    let recorded = addon.status.iter().flat_map(|s| &s.stages);
    let mut names: Vec<String> = std::iter::once(single.name.clone())
        .chain(recorded.map(|s| stage_inventory(addon, &s.name).name))
        .chain(listed.iter().filter(|n| n.starts_with(&stage_prefix)).cloned())
        .collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .map(|name| InventoryRef {
            namespace: ADDON_NAMESPACE.into(),
            name,
        })
        .collect()
}

/// The inventory of one stage's objects on the workload cluster.
fn stage_inventory(addon: &ClusterAddon, stage: &str) -> InventoryRef {
    InventoryRef {
        namespace: ADDON_NAMESPACE.into(),
        name: format!("capstan.caddon.{}.{stage}", addon.name_any()),
    }
}

/// Reason of `Applied` (and so `Ready`) while the stages of a hook run.
const STAGE_IN_PROGRESS: &str = "StageInProgress";
/// Reason of `Applied` while the recorded stages hold a value this version does not know.
const UNKNOWN_STAGE_STATE: &str = "UnknownStageState";
/// Reason of `Applied` while a stage waits for its pre- or post-condition.
const WAITING_FOR_CONDITION: &str = "WaitingForCondition";

super::finalized_kind!(ClusterAddon, AddonController);

/// The ClusterAddon controller's state: the shared context, its failures and the drift
/// wake-ups of its ClusterAddons (their drift watches live with each workload cluster).
pub struct AddonController {
    pub shared: Arc<Context>,
    failures: super::failures::Failures,
    /// ClusterAddons whose objects a drift watch saw change: woken at once, and their next
    /// pass re-applies even when the drift interval has not passed.
    pub drift: AddonDrift,
}

impl AddonController {
    pub fn new(shared: Arc<Context>) -> AddonController {
        AddonController {
            shared,
            failures: Default::default(),
            drift: Default::default(),
        }
    }
}

impl super::progress::Tracked for ClusterAddon {
    const CONTROLLER: &'static str = CONTROLLER;
    type Status = ClusterAddonStatus;
    const FOREIGN_STATUS_FIELDS: &'static [&'static str] = ClusterAddonStatus::HOOK_FIELDS;

    fn status_of(&self) -> Option<&ClusterAddonStatus> {
        self.status.as_ref()
    }

    fn conditions_mut(status: &mut ClusterAddonStatus) -> &mut Vec<crate::api::conditions::Condition> {
        &mut status.conditions
    }

    fn ready(status: &ClusterAddonStatus) -> bool {
        status.ready
    }

    fn set_ready(status: &mut ClusterAddonStatus, ready: bool) {
        status.ready = ready;
    }

    fn ready_note(&self, status: &ClusterAddonStatus) -> String {
        ready_note(self, status)
    }

    /// A stage's objects join those of the other stages.
    fn set_resources(
        status: &mut ClusterAddonStatus,
        stage: Option<&str>,
        resources: Vec<crate::api::Resource>,
    ) {
        status.record_resources(stage, resources);
    }
}

/// The note of the event sent when the addons become ready: the release applied (the
/// Cluster's class while none is recorded), the Cluster and how many objects.
fn ready_note(addon: &ClusterAddon, status: &ClusterAddonStatus) -> String {
    let release = status
        .applied_cluster_stack
        .as_deref()
        .or(addon.spec.cluster_stack.as_deref())
        .filter(|r| !r.is_empty());
    let cluster = addon.spec.cluster_ref.name.as_deref().unwrap_or_default();
    let objects = status.resources.len() as i64 + status.resources_omitted;
    match release {
        Some(release) => format!("addons of {release} applied to Cluster {cluster} ({objects} objects)"),
        None => format!("addons applied to Cluster {cluster} ({objects} objects)"),
    }
}

/// A workload cluster ready for use, from the workload-cluster cache: its client, version and
/// an [`capstan_apply::Applier`] with its discovery cache, kept across passes.
type Connected = Arc<Workload>;

/// The workload cluster of `cluster` in `namespace`, ready (the one place a ClusterAddon pass
/// acquires it): no request to it while its kubeconfig Secret is unchanged and it is healthy.
async fn connect(ctx: &Context, namespace: &str, cluster: &str) -> Result<Connected, Gate> {
    ctx.workloads.get(&ctx.management, namespace, cluster).await
}

/// Breaks out of a pass with `$flow`'s action, else gives its value.
macro_rules! proceed {
    ($flow:expr) => {
        match $flow {
            ControlFlow::Continue(value) => value,
            ControlFlow::Break(action) => return Ok(action),
        }
    };
}

async fn apply(addon: &ClusterAddon, controller: &AddonController) -> Result<Action, Error> {
    let ctx = controller.shared.as_ref();
    let result = apply_pass(addon, controller).await;
    // The workload cluster may be the cause: the next pass probes it before using it.
    if result.is_err()
        && let (Some(namespace), Some(cluster)) = (addon.namespace(), &addon.spec.cluster_ref.name)
    {
        ctx.workloads.suspect(&namespace, cluster);
    }
    result
}

async fn apply_pass(addon: &ClusterAddon, controller: &AddonController) -> Result<Action, Error> {
    let ctx = controller.shared.as_ref();
    let mut progress = Progress::new(addon, ctx, &STEPS);
    let cluster = proceed!(read_cluster(&mut progress).await?);
    // 1. Which release: the Cluster's class, in `spec.topology.classNamespace` when given.
    let (class, class_namespace, tag) = proceed!(class_of(&mut progress, &cluster).await?);
    // Status never claims the old release for the new class: progressing at once.
    upgrading(&mut progress, &class).await?;
    // 2. Gates.
    let target = proceed!(open_gates(&mut progress, &cluster).await?);
    // 3. The release, through the ClusterStack that follows it.
    let (files, compiled, stack) = proceed!(resolve_release(&mut progress, &class_namespace, &tag).await?);
    // 4. Values from the live objects; a render only when they (or the release) changed.
    let objects = match live_objects(ctx, &cluster).await {
        Ok(objects) => objects,
        Err(missing) => {
            return progress
                .wait(RENDERED, "ObjectsMissing", missing.to_string())
                .await;
        }
    };
    let user_values = match crate::addon::user_values::gather(&ctx.client, &stack, &cluster).await {
        Ok(layers) => layers,
        Err(GatherError::Missing(message)) => {
            return progress.wait(RENDERED, "UserValuesMissing", message).await;
        }
        Err(GatherError::Invalid(message)) => {
            return Err(progress
                .fail(RENDERED, "InvalidUserValues", Cause::UserValues(message))
                .await);
        }
    };
    let with_user_values = user_values_note(&user_values);
    let inputs = RenderInputs {
        objects,
        user_values,
        digest: files.digest.clone(),
    };
    let hash = inputs_hash(&compiled, &inputs, &target).await;
    let hash = progress.check(RENDERED, hash).await?;
    // 5. Render once, then the stages of the current hook or the one chart.
    let kind = AddonRelease {
        addon,
        drift: &controller.drift,
        class: &class,
        tag: &tag,
        compiled: &compiled,
        target: &target,
        inputs,
        hash,
        with_user_values,
    };
    release_runner::run(&mut progress, &kind).await
}

/// The Cluster's class, its namespace and its release tag; a Cluster without one waits, a
/// class that is no stack's waits for a change.
async fn class_of(
    progress: &mut Progress<'_>,
    cluster: &DynamicObject,
) -> Result<ControlFlow<Action, (String, String, ReleaseTag)>, Error> {
    let usage = crate::clusters::ClusterUse::of(cluster);
    let Some(class) = usage.class else {
        let message = format!("Cluster {} has no spec.topology.class", usage.name);
        let waited = progress.wait(CLUSTER_READY, "NoTopology", message).await;
        return waited.map(ControlFlow::Break);
    };
    match ReleaseTag::parse_cluster_class(&class) {
        Ok(tag) => Ok(ControlFlow::Continue((class, usage.class_namespace, tag))),
        Err(e) => {
            let message = format!("class {class} is not a cluster stack class: {e}");
            progress.condition(CLUSTER_READY, false, "NotAStackClass", message);
            progress.save().await?;
            Ok(ControlFlow::Break(Action::await_change()))
        }
    }
}

/// Steps the stage plan until the pass is done or has to wait, or (`Continue`) to the
/// inventories the runner applies: the one chart's, or the `apply` stages' of the hook that
/// ran (their drift).
async fn run_stages(
    progress: &mut Progress<'_>,
    steps: &Steps<'_>,
) -> Result<ControlFlow<Action, Vec<Inventory>>, Error> {
    let ctx = progress.ctx;
    let (kind, render) = (steps.kind, steps.render);
    let (class, config) = (kind.class, kind.compiled.addon_config());
    loop {
        match plan::plan(&progress.status, config, class) {
            Step::ApplyChart => {
                let objects = pipeline::objects_of(render, None).await;
                let objects = progress.check(APPLIED, objects).await?;
                let chart = Inventory {
                    inventory: inventory(progress.object),
                    objects,
                    stage: None,
                };
                return Ok(ControlFlow::Continue(vec![chart]));
            }
            Step::DriftStages { hook } => {
                let stages = match (config, hook) {
                    (Some(config), Some(hook)) => plan::stages_of(config, hook),
                    _ => &[],
                };
                let applied = applied_stages(progress, stages, steps).await?;
                // Entries of no stage applied here (written by earlier versions, say) go.
                let names: Vec<&str> = applying(stages).map(|s| s.name.as_str()).collect();
                progress
                    .status
                    .resources
                    .retain(|r| names.contains(&r.stage.as_str()));
                return Ok(ControlFlow::Continue(applied));
            }
            Step::StartStages { stages_for, stages } => {
                progress.status.stages_for = Some(Recorded::Known(stages_for));
                progress.status.stages = stages;
                // The list is of the stages of this hook from now on.
                progress.status.resources.clear();
                progress.status.resources_omitted = 0;
                if !progress.status.stages.is_empty() {
                    let message = plan::stage_message(&progress.status.stages, 0);
                    progress.condition(APPLIED, false, STAGE_IN_PROGRESS, message);
                }
                progress.save().await?;
            }
            Step::Stage { hook, index, step } => {
                let stage = config.and_then(|c| plan::stages_of(c, hook).get(index));
                let Some(stage) = stage else {
                    let hook = hook.to_string();
                    let invalid = Invalid::NoSuchStage { hook, index };
                    return Err(progress.fail(APPLIED, "NoSuchStage", invalid).await);
                };
                if let Some(action) = stage_step(progress, index, stage, step, steps).await? {
                    return Ok(ControlFlow::Break(action));
                }
            }
            Step::Unrecognized { field, value } => {
                // Guessing could run a stage again (a `delete` stage included): nothing runs
                // until the status holds values this version knows.
                let message = format!(
                    "status.{field} is {value:?}, which this version of capstan does not know: \
                     no stage runs until it is corrected"
                );
                progress.condition(APPLIED, false, UNKNOWN_STAGE_STATE, message);
                progress.save().await?;
                return Ok(ControlFlow::Break(Action::requeue(super::drift_requeue(
                    &ctx.settings,
                ))));
            }
            Step::StagesDone { hook, count } => {
                // Watched from now on, not from the first drift pass.
                let stages = config.map_or(&[][..], |c| plan::stages_of(c, hook));
                let applied = applied_stages(progress, stages, steps).await?;
                let message = format!("{count} stage(s) of {hook} done for {class}");
                progress.condition(APPLIED, true, "StagesDone", message);
                let done = release_runner::finish(progress, kind, render, &applied).await?;
                return Ok(ControlFlow::Break(done));
            }
        }
    }
}

/// The addon's Cluster; when it is gone, the ClusterAddon is deleted (no garbage collector
/// took it along) and the pass ends.
async fn read_cluster(progress: &mut Progress<'_>) -> Result<ControlFlow<Action, DynamicObject>, Error> {
    let (ctx, addon) = (progress.ctx, progress.object);
    let namespace = addon.namespace().unwrap_or_default();
    let cluster_name = addon.spec.cluster_ref.name.clone().unwrap_or_default();
    match ctx.management.cluster(&namespace, &cluster_name).await {
        Ok(Some(cluster)) => Ok(ControlFlow::Continue(cluster)),
        Ok(None) => {
            let api: Api<ClusterAddon> = Api::namespaced(ctx.client.clone(), &namespace);
            match api.delete(&addon.name_any(), &DeleteParams::default()).await {
                Err(e) if !is_not_found(&e) => {
                    Err(Error::kube(format!("deleting {}", super::key_of(addon)), e))
                }
                _ => Ok(ControlFlow::Break(Action::await_change())),
            }
        }
        Err(e) => Err(progress.fail(CLUSTER_READY, "ClusterUnreadable", e).await),
    }
}

/// The release of `tag` in `class_namespace`, on disk and compiled, and the ClusterStack that
/// follows it: the ClusterStackRelease, the stack, its source, the fetch and the compile.
async fn resolve_release(
    progress: &mut Progress<'_>,
    class_namespace: &str,
    tag: &ReleaseTag,
) -> Result<ControlFlow<Action, (ReleaseFiles, Arc<CompiledRelease>, Arc<ClusterStack>)>, Error> {
    let ctx = progress.ctx;
    let read = ctx
        .management
        .release(class_namespace, &tag.tag())
        .await
        .because("ReleaseUnreadable");
    let Some(release) = progress.check(RENDERED, read).await? else {
        let message = format!("ClusterStackRelease {class_namespace}/{tag} does not exist");
        let waited = progress.wait(RENDERED, "NoRelease", message).await;
        return waited.map(ControlFlow::Break);
    };
    let found = pipeline::stack_of(&release, tag, &ctx.stacks, "");
    let stack = match progress.check(RENDERED, found).await? {
        ControlFlow::Continue(stack) => stack,
        ControlFlow::Break(action) => return Ok(ControlFlow::Break(action)),
    };
    let files = pipeline::fetch(ctx, &stack, tag).await;
    let files = progress.check(RENDERED, files).await?;
    // Its charts' dependencies checked against the stack's policy (`SourceVerified`).
    let compiled = super::cluster_stack_release::dependencies::compile_for(progress, &stack, &files).await?;
    let compiled = match compiled {
        ControlFlow::Continue(compiled) => compiled,
        ControlFlow::Break(action) => return Ok(ControlFlow::Break(action)),
    };
    Ok(ControlFlow::Continue((files, compiled, stack)))
}

/// The gates: `status.controlPlaneReady`, then a workload API server that is ready.
async fn open_gates(
    progress: &mut Progress<'_>,
    cluster: &DynamicObject,
) -> Result<ControlFlow<Action, Connected>, Error> {
    let cluster_name = cluster.name_any();
    let control_plane_ready = crate::clusters::control_plane_initialized(cluster);
    if !control_plane_ready {
        let field = crate::clusters::initialized_field(cluster);
        let message = format!("waiting for Cluster {cluster_name}: {field} is not true");
        let waited = progress
            .wait(CLUSTER_READY, "ControlPlaneNotReady", message)
            .await;
        return waited.map(ControlFlow::Break);
    }
    let namespace = cluster.namespace().unwrap_or_default();
    let target = match connect(progress.ctx, &namespace, &cluster_name).await {
        Ok(target) => target,
        Err(gate) if gate.unreachable_after_apply(progress.status.applied_inputs.is_some()) => {
            // The addons stay applied (`Ready` says so); the pass failed, and says where.
            let cause = Cause::Unreachable {
                cluster: cluster_name,
                gate,
            };
            return Err(progress
                .fail(WORKLOAD_REACHABLE, "WorkloadUnreachable", cause)
                .await);
        }
        Err(gate) => {
            let waited = progress
                .wait(CLUSTER_READY, "WorkloadNotReady", gate.to_string())
                .await;
            return waited.map(ControlFlow::Break);
        }
    };
    let message = format!("workload API server {} is ready", target.server);
    if crate::api::conditions::find(&progress.status.conditions, WORKLOAD_REACHABLE).is_some() {
        progress.condition(WORKLOAD_REACHABLE, true, "Reachable", message.clone());
    }
    progress.condition(CLUSTER_READY, true, "Ready", message);
    Ok(ControlFlow::Continue(target))
}

/// What the stage steps of one pass share.
struct Steps<'a> {
    kind: &'a AddonRelease<'a>,
    render: &'a StoredRender,
}

/// A ClusterAddon as the runner sees it: the addon charts of the Cluster's release, rendered
/// with the Cluster's values and applied to its workload cluster, in stages when the release
/// has a `clusteraddon.yaml`.
struct AddonRelease<'a> {
    addon: &'a ClusterAddon,
    /// The controller's drift wake-ups.
    drift: &'a AddonDrift,
    class: &'a str,
    tag: &'a ReleaseTag,
    compiled: &'a Arc<CompiledRelease>,
    target: &'a Connected,
    inputs: RenderInputs,
    /// The hash of `inputs` (with the release and the workload cluster's version).
    hash: String,
    /// The `Rendered` message's note of the user values.
    with_user_values: String,
}

release_runner::release_status!(ClusterAddonStatus);

impl ReleaseKind for AddonRelease<'_> {
    type Object = ClusterAddon;

    fn inputs(&self) -> &str {
        &self.hash
    }

    fn owner(&self) -> Owner {
        store_owner(self.addon)
    }

    /// The charts rendered on a blocking thread, with `lookup` answered by the workload
    /// cluster.
    async fn render(&self) -> Result<Parts, Failure> {
        let (compiled, applier) = (self.compiled.clone(), self.target.applier.clone());
        let (inputs, version) = (self.inputs.clone(), self.target.version.clone());
        let handle = tokio::runtime::Handle::current();
        pipeline::blocking("rendering the addons", move || {
            let values = layered_values(&compiled, &inputs)?;
            let lookup = crate::lookup::applier_lookup(handle, applier);
            let env = std::rc::Rc::new(capstan_template::funcs::FuncEnv::system().with_lookup(lookup));
            // The workload cluster's own version, as `helm install` against it would see.
            let kube_version = capstan_chart::objects::KubeVersion::parse(&version).ok();
            let parts = compiled.render_addons(values, kube_version, &env)?;
            Ok(parts.into_iter().map(|p| (p.name, p.stream)).collect())
        })
        .await
        .because("RenderFailed")
    }

    async fn rendered(&self, progress: &mut Progress<'_>, render: &StoredRender, _fresh: bool) {
        let message = format!(
            "revision {} of the addons of {}{}",
            render.revision, self.tag, self.with_user_values
        );
        progress.condition(RENDERED, true, "Rendered", message);
    }

    async fn target(
        &self,
        progress: &mut Progress<'_>,
        render: &StoredRender,
    ) -> Result<ControlFlow<Action, Vec<Inventory>>, Error> {
        run_stages(progress, &Steps { kind: self, render }).await
    }

    fn applied(&self, status: &ClusterAddonStatus) -> bool {
        plan::applied(status, self.class, self.inputs())
    }

    fn record_applied(&self, status: &mut ClusterAddonStatus, render: &StoredRender) {
        status.applied_cluster_stack = Some(self.class.to_string());
        release_runner::ReleaseStatus::record_applied(status, render);
    }

    fn wake_ups(&self) -> &AddonDrift {
        self.drift
    }

    fn watched(&self, inventories: &[Inventory]) -> bool {
        inventories
            .iter()
            .all(|i| self.target.drift.covers(&i.inventory.id(), &i.kinds()))
    }

    fn unwatched(&self, inventories: &[Inventory]) -> bool {
        inventories
            .iter()
            .any(|i| !i.objects.is_empty() && !self.target.drift.serves(&i.inventory.id()))
    }

    fn applier(&self) -> &capstan_apply::Applier {
        &self.target.applier
    }

    fn told(&self, inventory: &InventoryRef, trusted: bool) -> pipeline::Watched {
        let drift = &self.target.drift;
        let id = inventory.id();
        let watched = pipeline::Watched {
            kinds: if trusted {
                drift.covered_kinds(&id)
            } else {
                Default::default()
            },
            before_prune: Some(drift.prune_notice()),
        };
        drift.unsettle(&id);
        watched
    }

    fn wrote(&self, inventory: &InventoryRef, written: crate::drift::Written) {
        self.target.drift.wrote(&inventory.id(), written);
    }

    /// Watches the kinds just applied with each inventory on the workload cluster: a change
    /// there wakes this ClusterAddon at once (see [`crate::drift`]); the pass just compared
    /// every object, so earlier trouble of the watches is forgotten.
    async fn watch_drift(&self, progress: &Progress<'_>, inventories: &[Inventory]) {
        let target = self.target;
        let notify = self.drift.notifier(ObjectRef::from_obj(progress.object));
        // Together: a watch starts once naming every inventory of the addon.
        let wanted: Vec<(String, Vec<crate::drift::Kind>)> = inventories
            .iter()
            .map(|inventory| (inventory.inventory.id(), inventory.kinds()))
            .collect();
        let each: Vec<(&str, &[crate::drift::Kind])> = wanted
            .iter()
            .map(|(id, kinds)| (id.as_str(), kinds.as_slice()))
            .collect();
        target
            .drift
            .ensure_all(target.applier.discovery(), &each, notify)
            .await;
        for (id, _) in &wanted {
            target.drift.checked(id);
        }
    }
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

/// The render part of a stage.
fn stage_part(stage: &Stage) -> String {
    format!("cluster-addon/{}", stage.name)
}

/// The inventory and objects of each `apply` stage in `stages`, from the stored render.
async fn applied_stages(
    progress: &mut Progress<'_>,
    stages: &[Stage],
    steps: &Steps<'_>,
) -> Result<Vec<Inventory>, Error> {
    let mut applied = Vec::new();
    for stage in applying(stages) {
        let objects = pipeline::objects_of(steps.render, Some(&stage_part(stage))).await;
        let objects = progress.check(APPLIED, objects).await?;
        applied.push(Inventory {
            inventory: stage_inventory(progress.object, &stage.name),
            objects,
            stage: Some(stage.name.clone()),
        });
    }
    Ok(applied)
}

/// The `apply` stages of `stages`, in order.
fn applying(stages: &[Stage]) -> impl Iterator<Item = &Stage> {
    stages.iter().filter(|s| s.action == StageAction::Apply)
}

/// One step of stage `index`: a condition checked or its objects applied/deleted, then the
/// phase [`plan::advance`] gives recorded; `Some(action)` when the stage has to wait.
async fn stage_step(
    progress: &mut Progress<'_>,
    index: usize,
    stage: &Stage,
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
    let unmet = match condition {
        Some(condition) => condition_unmet(progress, &stage.name, condition, waiting, steps).await?,
        None => None,
    };
    if let Some(recorded) = progress.status.stages.get_mut(index) {
        recorded.phase = Recorded::Known(plan::advance(step, unmet.is_none()));
    }
    // Not applied until every stage is done: `Ready` says which stage the addons are at.
    let message = plan::stage_message(&progress.status.stages, index);
    match &unmet {
        Some(why) => progress.condition(APPLIED, false, WAITING_FOR_CONDITION, format!("{message}: {why}")),
        None => progress.condition(APPLIED, false, STAGE_IN_PROGRESS, message),
    }
    progress.save().await?;
    Ok(unmet.map(|_| Action::requeue(WAIT)))
}

/// Applies (with the stage's inventory) or deletes the objects of `stage`.
async fn run_stage_objects(
    progress: &mut Progress<'_>,
    stage: &Stage,
    steps: &Steps<'_>,
) -> Result<(), Error> {
    let objects = pipeline::objects_of(steps.render, Some(&stage_part(stage))).await;
    let objects = progress.check(APPLIED, objects).await?;
    match stage.action {
        StageAction::Apply => {
            let inventory = Inventory {
                inventory: stage_inventory(progress.object, &stage.name),
                objects,
                stage: Some(stage.name.clone()),
            };
            let drift_watches = progress.ctx.settings.drift_watches;
            let woken = steps.kind.drift.is_suspect(&ObjectRef::from_obj(progress.object));
            let trusted = release_runner::plan::trusts_watches(drift_watches, false, woken);
            release_runner::apply_inventory(progress, steps.kind, &inventory, false, trusted).await?;
            Ok(())
        }
        StageAction::Delete => {
            let deleted = steps.kind.target.applier.delete(&objects, ADDON_NAMESPACE).await;
            progress.check(APPLIED, deleted.because("DeleteFailed")).await
        }
    }
}

/// Evaluates a wait condition of stage `stage` (`phase` is what the stage waits in): `None`
/// when it holds, else why not.
async fn condition_unmet(
    progress: &mut Progress<'_>,
    stage: &str,
    condition: &WaitCondition,
    phase: StagePhase,
    steps: &Steps<'_>,
) -> Result<Option<String>, Error> {
    match condition::evaluate(steps.kind.target.applier.discovery(), condition).await {
        Ok(Verdict::Met) => Ok(None),
        Ok(Verdict::NotMet(why)) => Ok(Some(why)),
        Err(source) => {
            let stage = stage.to_string();
            let cause = Cause::Condition {
                stage,
                phase: phase.as_str(),
                source: Box::new(source),
            };
            Err(progress.fail(APPLIED, "ConditionFailed", cause).await)
        }
    }
}

/// The Cluster and the objects it references, as JSON text per object.
#[derive(Clone)]
struct LiveObjects {
    cluster: DynamicObject,
    control_plane: Option<DynamicObject>,
    infra_cluster: Option<DynamicObject>,
}

/// Why the objects a Cluster references cannot be read yet (the pass waits).
#[derive(Debug, thiserror::Error)]
enum Missing {
    #[error("waiting for {0}, which the Cluster references")]
    Absent(String),
    #[error("{what}: {source}")]
    Unreadable {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("{what}: {source}")]
    Undiscoverable {
        what: String,
        #[source]
        source: DiscoveryError,
    },
}

async fn live_objects(ctx: &Context, cluster: &DynamicObject) -> Result<LiveObjects, Missing> {
    let referenced = |field: &str| cluster.data.pointer(&format!("/spec/{field}")).cloned();
    let namespace = cluster.namespace().unwrap_or_default();
    Ok(LiveObjects {
        cluster: cluster.clone(),
        control_plane: read_referenced(ctx, &namespace, referenced("controlPlaneRef")).await?,
        infra_cluster: read_referenced(ctx, &namespace, referenced("infrastructureRef")).await?,
    })
}

/// The object a Cluster's `reference` names.
async fn read_referenced(
    ctx: &Context,
    namespace: &str,
    reference: Option<serde_json::Value>,
) -> Result<Option<DynamicObject>, Missing> {
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
    let (mut api_version, kind, name) = (text("apiVersion"), text("kind"), text("name"));
    let ns = reference
        .get("namespace")
        .and_then(|v| v.as_str())
        .unwrap_or(namespace)
        .to_string();
    let what = format!("{kind} {ns}/{name}");
    let unreadable = |source| Missing::Unreadable {
        what: what.clone(),
        source,
    };
    let discovery = ctx.applier.discovery();
    // v1beta2 names the group only: the version the server prefers for it.
    if api_version.is_empty() {
        api_version = discovery
            .preferred_api_version(&text("apiGroup"), &kind)
            .await
            .map_err(|source| Missing::Undiscoverable {
                what: what.clone(),
                source,
            })?;
    }
    let info = discovery
        .resolve_api_version(&api_version, &kind)
        .await
        .map_err(|source| Missing::Undiscoverable {
            what: what.clone(),
            source,
        })?;
    match ctx
        .management
        .referenced(&info, &ns, &name)
        .await
        .map_err(unreadable)?
    {
        Some(object) => Ok(Some(object)),
        None => Err(Missing::Absent(what)),
    }
}

/// The values of the addon charts (by part): computed from the live objects, the user's
/// layered over them (blocking: JSON text read as YAML, templates run).
fn layered_values(
    compiled: &CompiledRelease,
    inputs: &RenderInputs,
) -> Result<Vec<(String, Option<capstan_stack::values::ComputedValues>)>, Cause> {
    let computed = compiled.addon_values(&inputs.objects.parse(compiled.values_template_api())?)?;
    // The user's values join the computed ones here; the hash covers the layered text.
    let user = inputs
        .user_values
        .iter()
        .map(Layer::parse)
        .collect::<Result<Vec<_>, _>>()
        .map_err(Cause::UserValues)?;
    Ok(capstan_stack::user_values::layer_parts(computed, &user))
}

/// The hash of everything a render of the addons depends on: the release digest, the
/// workload cluster's version and the layered values, on a blocking thread (cheap: the
/// charts are rendered only when no stored render has the hash).
async fn inputs_hash(
    compiled: &Arc<CompiledRelease>,
    inputs: &RenderInputs,
    target: &Workload,
) -> Result<String, Failure> {
    let (compiled, inputs, version) = (compiled.clone(), inputs.clone(), target.version.clone());
    pipeline::blocking("computing the addons' values", move || {
        let values = layered_values(&compiled, &inputs)?;
        let texts = values
            .iter()
            .flat_map(|(part, computed)| [part.as_str(), computed.as_ref().map_or("", |c| c.text.as_str())]);
        let fields = [inputs.digest.as_str(), version.as_str()]
            .into_iter()
            .chain(texts);
        Ok(pipeline::inputs_hash("cluster-addon", fields))
    })
    .await
    .because("RenderFailed")
}

fn store_owner(addon: &ClusterAddon) -> Owner {
    Owner {
        namespace: addon.namespace().unwrap_or_default(),
        short_kind: "caddon",
        name: addon.name_any(),
        reference: owner_reference(addon),
    }
}

/// What a render of the addons is made from, besides the release.
#[derive(Clone)]
struct RenderInputs {
    objects: LiveObjects,
    /// The user's values, in the order they are layered.
    user_values: Vec<Layer>,
    /// The release's digest.
    digest: String,
}

/// The `Rendered` message's note of where user values came from (empty without any).
fn user_values_note(layers: &[Layer]) -> String {
    if layers.is_empty() {
        return String::new();
    }
    let sources: Vec<&str> = layers.iter().map(|l| l.source.as_str()).collect();
    format!(", with user values from {}", sources.join(", "))
}

impl LiveObjects {
    /// The objects as values see them: the Cluster in the shape the release's templates
    /// are written for (`templates`; a v1beta2 Cluster converted for v1beta1 templates).
    fn parse(
        &self,
        templates: capstan_stack::capi::CapiVersion,
    ) -> Result<capstan_stack::values::ClusterObjects, Cause> {
        Ok(crate::clusters::template_objects(
            &self.cluster,
            self.control_plane.as_ref(),
            self.infra_cluster.as_ref(),
            templates,
        )?)
    }
}

/// Deletion: without the Cluster nothing can be reached; else the addon's objects go first.
async fn cleanup(addon: &ClusterAddon, controller: &AddonController) -> Result<Action, Error> {
    let ctx = controller.shared.as_ref();
    let namespace = addon.namespace().unwrap_or_default();
    let cluster_name = addon.spec.cluster_ref.name.clone().unwrap_or_default();
    let cluster = crate::clusters::get(&ctx.client, &namespace, &cluster_name)
        .await
        .map_err(|e| Error::kube(format!("reading Cluster {namespace}/{cluster_name}"), e))?;
    let cluster_going = cluster
        .as_ref()
        .is_none_or(|c| c.metadata.deletion_timestamp.is_some());
    if !cluster_going {
        let target = connect(ctx, &namespace, &cluster_name)
            .await
            .map_err(|gate| Error::step("Cleanup", "WorkloadNotReady", gate))?;
        let target = &*target;
        let client = target.applier.client();
        let listed = capstan_apply::inventory::list(client, ADDON_NAMESPACE, Default::default())
            .await
            .map_err(|e| Error::step("Cleanup", "PruneFailed", capstan_apply::Error::from(e)))?;
        for inventory in inventories_of(addon, &listed) {
            pipeline::prune_all(&ctx.metrics, CONTROLLER, &target.applier, inventory)
                .await
                .map_err(|cause| Error::step("Cleanup", "PruneFailed", cause))?;
        }
    }
    ctx.store
        .remove_all(&store_owner(addon))
        .await
        .map_err(|cause| Error::step("Cleanup", "StoreFailed", cause))?;
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

#[cfg(test)]
mod ready_note_tests {
    use super::ready_note;
    use crate::api::{ClusterAddon, ClusterAddonSpec, ClusterAddonStatus, Resource};

    #[test]
    fn the_ready_note_names_the_release_and_the_cluster() {
        let addon = |class: Option<&str>| {
            let mut spec = ClusterAddonSpec {
                cluster_stack: class.map(str::to_string),
                ..ClusterAddonSpec::default()
            };
            spec.cluster_ref.name = Some("web".into());
            ClusterAddon::new("cluster-addon-web", spec)
        };
        let status = |applied: Option<&str>, listed: usize, omitted: i64| ClusterAddonStatus {
            applied_cluster_stack: applied.map(str::to_string),
            resources: vec![Resource::default(); listed],
            resources_omitted: omitted,
            ..ClusterAddonStatus::default()
        };
        let v1 = "docker-ferrol-1-27-v1";
        let v2 = "docker-ferrol-1-27-v2";
        let cases = [
            (
                Some(v1),
                status(Some(v1), 24, 0),
                "addons of docker-ferrol-1-27-v1 applied to Cluster web (24 objects)",
            ),
            // Not recorded yet (the release a stage pass applies): the Cluster's class.
            (
                Some(v2),
                status(None, 3, 0),
                "addons of docker-ferrol-1-27-v2 applied to Cluster web (3 objects)",
            ),
            (
                Some(v2),
                status(Some(v1), 1_000, 7),
                "addons of docker-ferrol-1-27-v1 applied to Cluster web (1007 objects)",
            ),
            (
                None,
                status(None, 2, 0),
                "addons applied to Cluster web (2 objects)",
            ),
            (
                Some(""),
                status(None, 2, 0),
                "addons applied to Cluster web (2 objects)",
            ),
        ];
        for (class, status, want) in cases {
            assert_eq!(ready_note(&addon(class), &status), want);
        }
    }
}

#[cfg(test)]
mod inventories_tests {
    use super::inventories_of;
    use crate::api::{ClusterAddon, ClusterAddonSpec, ClusterAddonStatus, StageStatus};

    #[test]
    fn cleanup_covers_every_inventory_of_the_addon_and_no_other() {
        let mut addon = ClusterAddon::new("cluster-addon-web", ClusterAddonSpec::default());
        let names = |addon: &ClusterAddon, listed: &[&str]| -> Vec<String> {
            let listed: Vec<String> = listed.iter().map(|n| n.to_string()).collect();
            inventories_of(addon, &listed)
                .into_iter()
                .map(|i| i.name)
                .collect()
        };
        // Nothing recorded or listed: the one chart's.
        assert_eq!(names(&addon, &[]), ["capstan.caddon.cluster-addon-web"]);
        addon.status = Some(ClusterAddonStatus {
            stages: vec![StageStatus {
                name: "ngnix".into(),
                ..StageStatus::default()
            }],
            ..ClusterAddonStatus::default()
        });
        let listed = [
            // A stage of the creation hook, no longer in the status.
            "capstan.caddon.cluster-addon-web.metrics-server",
            "capstan.caddon.cluster-addon-web.ngnix",
            // Another addon's, and one whose name only starts alike.
            "capstan.caddon.cluster-addon-db",
            "capstan.caddon.cluster-addon-webshop",
            "capstan.cluster-class",
        ];
        assert_eq!(
            names(&addon, &listed),
            [
                "capstan.caddon.cluster-addon-web",
                "capstan.caddon.cluster-addon-web.metrics-server",
                "capstan.caddon.cluster-addon-web.ngnix",
            ]
        );
    }
}
