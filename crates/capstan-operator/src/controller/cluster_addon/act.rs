//! What a ClusterAddon pass does: a halt at a gate (wait, stop, fail, or the ClusterAddon
//! deleting itself when its Cluster is gone), and — as [`AddonRelease`], the kind the release
//! runner renders, applies and watches — each stage action the runner's one plan decides
//! (start the stages, a stage's pre-condition, apply or delete, post-condition, done, an
//! unrecognised phase).

use std::sync::Arc;

use kube::ResourceExt;
use kube::api::{Api, DeleteParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;

use super::super::error::Invalid;
use super::super::pipeline::{self, APPLIED, Parts, RENDERED};
use super::super::progress::{Because, Failure, WAIT};
use super::super::release_runner::plan::Apply;
use super::super::release_runner::{self, Inventory, ReleaseKind, Staged};
use super::super::wake_ups::AddonDrift;
use super::super::{Cause, Error};
use super::names::{
    CLUSTER_READY, STAGE_IN_PROGRESS, UNKNOWN_STAGE_STATE, WAITING_FOR_CONDITION, WORKLOAD_REACHABLE,
    inventory, stage_inventory, store_owner,
};
use super::observe::{Connected, RenderInputs, layered_values};
use super::plan::{self, AddonStages, Applying, Halt, StageAction, StageStep};
use crate::addon::condition::{self, Verdict};
use crate::api::{ClusterAddon, ClusterAddonStatus, Recorded, StagePhase, StageStatus, StagesFor};
use crate::kube_error::is_not_found;
use crate::store::{Owner, StoredRender};
use capstan_apply::InventoryRef;
use capstan_stack::addon_config::{Action as StageKind, Stage, WaitCondition};
use capstan_stack::name::ReleaseTag;
use capstan_stack::render::{ADDON_NAMESPACE, CompiledRelease};

type Progress<'a> = super::super::progress::Progress<'a, ClusterAddon>;

/// Ends a pass at a gate as `halt` says.
pub async fn halt(progress: &mut Progress<'_>, halt: Halt) -> Result<Action, Error> {
    match halt {
        Halt::DeleteSelf => delete_self(progress.ctx, progress.object).await,
        Halt::Wait {
            step,
            reason,
            message,
        } => progress.wait(step, reason, message).await,
        Halt::Stop {
            step,
            reason,
            message,
        } => {
            progress.condition(step, false, reason, message);
            progress.save().await?;
            Ok(Action::await_change())
        }
        Halt::Fail { step, reason, cause } => Err(progress.fail(step, reason, cause).await),
    }
}

/// The Cluster is gone: the ClusterAddon is deleted (its cleanup runs next).
async fn delete_self(ctx: &crate::context::Context, addon: &ClusterAddon) -> Result<Action, Error> {
    let namespace = addon.namespace().unwrap_or_default();
    let api: Api<ClusterAddon> = Api::namespaced(ctx.client.clone(), &namespace);
    match api.delete(&addon.name_any(), &DeleteParams::default()).await {
        Err(e) if !is_not_found(&e) => Err(Error::kube(
            format!("deleting {}", super::super::key_of(addon)),
            e,
        )),
        _ => Ok(Action::await_change()),
    }
}

/// `Applied` false at once with `message`: the Cluster's class changed (status never claims
/// the old release for the new class).
pub async fn upgrading(progress: &mut Progress<'_>, message: String) -> Result<(), Error> {
    progress.condition(APPLIED, false, "Upgrading", message);
    progress.save().await
}

/// The gates are open: the workload API server at `target` is ready (and reachable again,
/// when that was in question).
pub fn gates_open(progress: &mut Progress<'_>, target: &Connected) {
    let message = format!("workload API server {} is ready", target.server);
    if crate::api::conditions::find(&progress.status.conditions, WORKLOAD_REACHABLE).is_some() {
        progress.condition(WORKLOAD_REACHABLE, true, "Reachable", message.clone());
    }
    progress.condition(CLUSTER_READY, true, "Ready", message);
}

/// A fresh stage list for `stages_for` (every stage `Pending`), saved before any stage runs.
async fn start_stages(
    progress: &mut Progress<'_>,
    stages_for: StagesFor,
    stages: Vec<StageStatus>,
) -> Result<(), Error> {
    progress.status.stages_for = Some(Recorded::Known(stages_for));
    progress.status.stages = stages;
    // The list is of the stages of this hook from now on.
    progress.status.resources.clear();
    progress.status.resources_omitted = 0;
    if !progress.status.stages.is_empty() {
        let message = plan::stage_message(&progress.status.stages, 0);
        progress.condition(APPLIED, false, STAGE_IN_PROGRESS, message);
    }
    progress.save().await
}

/// What a stage action of one pass works with: the kind, the stored render and the plan's
/// licence to apply.
struct StageRun<'a> {
    kind: &'a AddonRelease<'a>,
    render: &'a StoredRender,
    apply: Apply,
}

/// A ClusterAddon as the runner sees it: the addon charts of the Cluster's release, rendered
/// with the Cluster's values and applied to its workload cluster, in stages when the release
/// has a `clusteraddon.yaml`.
pub struct AddonRelease<'a> {
    pub addon: &'a ClusterAddon,
    /// The controller's drift wake-ups.
    pub drift: &'a AddonDrift,
    pub class: &'a str,
    pub tag: &'a ReleaseTag,
    pub compiled: &'a Arc<CompiledRelease>,
    pub target: &'a Connected,
    pub inputs: RenderInputs,
    /// The hash of `inputs` (with the release and the workload cluster's version).
    pub hash: String,
    /// The `Rendered` message's note of the user values.
    pub with_user_values: String,
}

impl<'a> ReleaseKind for AddonRelease<'a> {
    type Object = ClusterAddon;
    type Stages = AddonStages<'a>;

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

    fn stages(&self, status: &ClusterAddonStatus) -> AddonStages<'a> {
        AddonStages::new(status, self.compiled.addon_config(), self.class)
    }

    /// The one chart's inventory, or the `apply` stages' of the hook that ran (their drift);
    /// none while a stage action is next.
    async fn target(
        &self,
        addon: &ClusterAddon,
        render: &StoredRender,
        stages: &AddonStages<'a>,
    ) -> Result<Vec<Inventory>, Failure> {
        match stages.applying() {
            None => Ok(Vec::new()),
            Some(Applying::Chart) => Ok(vec![Inventory {
                inventory: inventory(addon),
                objects: pipeline::objects_of(render, None).await?,
                stage: None,
            }]),
            Some(Applying::Stages { hook }) => {
                let stages = match (self.compiled.addon_config(), hook) {
                    (Some(config), Some(hook)) => plan::stages_of(config, hook),
                    _ => &[],
                };
                applied_stages(addon, render, stages).await
            }
        }
    }

    /// Entries of no stage applied here (written by earlier versions, say) go.
    fn keep_resources(
        &self,
        status: &mut ClusterAddonStatus,
        stages: &AddonStages<'a>,
        inventories: &[Inventory],
    ) {
        if let Some(Applying::Stages { .. }) = stages.applying() {
            let names: Vec<&str> = inventories.iter().filter_map(|i| i.stage.as_deref()).collect();
            status.resources.retain(|r| names.contains(&r.stage.as_str()));
        }
    }

    async fn stage(
        &self,
        progress: &mut Progress<'_>,
        render: &StoredRender,
        action: StageAction,
        apply: Apply,
    ) -> Result<Staged, Error> {
        let config = self.compiled.addon_config();
        match action {
            StageAction::Start { stages_for, stages } => {
                start_stages(progress, stages_for, stages).await?;
                Ok(Staged::Again)
            }
            StageAction::Run { hook, index, step } => {
                let stage = config.and_then(|c| plan::stages_of(c, hook).get(index));
                let Some(stage) = stage else {
                    let hook = hook.to_string();
                    let invalid = Invalid::NoSuchStage { hook, index };
                    return Err(progress.fail(APPLIED, "NoSuchStage", invalid).await);
                };
                let run = StageRun {
                    kind: self,
                    render,
                    apply,
                };
                Ok(match stage_step(progress, index, stage, step, &run).await? {
                    Some(action) => Staged::Done(action),
                    None => Staged::Again,
                })
            }
            StageAction::Unrecognized { field, value } => {
                // Guessing could run a stage again (a `delete` stage included): nothing runs
                // until the status holds values this version knows.
                let message = format!(
                    "status.{field} is {value:?}, which this version of capstan does not know: \
                     no stage runs until it is corrected"
                );
                progress.condition(APPLIED, false, UNKNOWN_STAGE_STATE, message);
                progress.save().await?;
                let drift = super::super::drift_requeue(&progress.ctx.settings);
                Ok(Staged::Done(Action::requeue(drift)))
            }
            StageAction::Done { hook, count } => {
                // Watched from now on, not from the first drift pass.
                let stages = config.map_or(&[][..], |c| plan::stages_of(c, hook));
                let applied = applied_stages(progress.object, render, stages).await;
                let applied = progress.check(APPLIED, applied).await?;
                let message = format!("{count} stage(s) of {hook} done for {}", self.class);
                progress.condition(APPLIED, true, "StagesDone", message);
                Ok(Staged::Finished(applied))
            }
        }
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

/// The render part of a stage.
fn stage_part(stage: &Stage) -> String {
    format!("cluster-addon/{}", stage.name)
}

/// The inventory and objects of each `apply` stage in `stages`, from the stored render.
async fn applied_stages(
    addon: &ClusterAddon,
    render: &StoredRender,
    stages: &[Stage],
) -> Result<Vec<Inventory>, Failure> {
    let mut applied = Vec::new();
    for stage in applying(stages) {
        applied.push(Inventory {
            inventory: stage_inventory(addon, &stage.name),
            objects: pipeline::objects_of(render, Some(&stage_part(stage))).await?,
            stage: Some(stage.name.clone()),
        });
    }
    Ok(applied)
}

/// The `apply` stages of `stages`, in order.
fn applying(stages: &[Stage]) -> impl Iterator<Item = &Stage> {
    stages.iter().filter(|s| s.action == StageKind::Apply)
}

/// One step of stage `index`: a condition checked or its objects applied/deleted, then the
/// phase [`plan::advance`] gives recorded; `Some(action)` when the stage has to wait.
async fn stage_step(
    progress: &mut Progress<'_>,
    index: usize,
    stage: &Stage,
    step: StageStep,
    run: &StageRun<'_>,
) -> Result<Option<Action>, Error> {
    let (condition, waiting) = match step {
        StageStep::CheckPre => (&stage.wait_for_pre_condition, StagePhase::WaitingForPreCondition),
        StageStep::CheckPost => (
            &stage.wait_for_post_condition,
            StagePhase::WaitingForPostCondition,
        ),
        StageStep::Run => {
            run_stage_objects(progress, stage, run).await?;
            (&None, StagePhase::ApplyingOrDeleting)
        }
    };
    let unmet = match condition {
        Some(condition) => condition_unmet(progress, &stage.name, condition, waiting, run).await?,
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
    run: &StageRun<'_>,
) -> Result<(), Error> {
    let objects = pipeline::objects_of(run.render, Some(&stage_part(stage))).await;
    let objects = progress.check(APPLIED, objects).await?;
    match stage.action {
        StageKind::Apply => {
            let inventory = Inventory {
                inventory: stage_inventory(progress.object, &stage.name),
                objects,
                stage: Some(stage.name.clone()),
            };
            let drift_watches = progress.ctx.settings.drift_watches;
            let woken = run.kind.drift.is_suspect(&ObjectRef::from_obj(progress.object));
            let trusted = release_runner::plan::trusts_watches(drift_watches, run.apply.drift_pass(), woken);
            release_runner::apply_inventory(progress, run.kind, &inventory, run.apply, trusted).await?;
            Ok(())
        }
        StageKind::Delete => {
            let deleted = run.kind.target.applier.delete(&objects, ADDON_NAMESPACE).await;
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
    run: &StageRun<'_>,
) -> Result<Option<String>, Error> {
    match condition::evaluate(run.kind.target.applier.discovery(), condition).await {
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
