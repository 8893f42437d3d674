//! The one runner of a release pass, for both kinds that render and apply a release (the
//! ClusterStackRelease to the management cluster, the ClusterAddon to its workload cluster):
//! it observes once (the stored render of the current inputs, what status records as applied,
//! the drift signals and whether the watches cover the inventories) into a [`plan::Snapshot`],
//! lets the pure [`plan::plan`] decide, and acts on the [`plan::Step`] alone — render once,
//! run a stage action, apply, record a watched check, or wait — then ends the pass the same
//! way for both kinds (drift watches, applied recorded, status saved, requeue). Each kind
//! supplies a [`ReleaseKind`]: its inputs hash, render, stage machine and stage actions,
//! inventories, target and status mapping.

pub mod plan;

use std::future::Future;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;

use super::Error;
use super::pipeline::{self, APPLIED, Parts, RENDERED, Watched};
use super::progress::{Failure, Progress, Tracked};
use super::report::{self, Outcome};
use super::wake_ups::DriftWakeUps;
use crate::store::{Owner, StoredRender};
use capstan_apply::{Applier, DesiredObject, InventoryRef};
use plan::{Apply, Drift, Snapshot, Stages, Step};

/// The status fields of a release's progress, as both kinds name them.
pub trait ReleaseStatus {
    /// The inputs hash of the render applied last in full.
    fn applied_inputs(&self) -> Option<&str>;
    /// When the objects were last applied or compared in full (a check the watches vouched
    /// for is kept in memory: [`DriftWakeUps::record_check`]).
    fn last_reconciled(&self) -> Option<&Time>;
    /// `render` was applied in full now.
    fn record_applied(&mut self, render: &StoredRender);
}

/// [`ReleaseStatus`] of a status with `applied_inputs`, `applied_revision` and
/// `last_reconciled`.
macro_rules! release_status {
    ($status:ty) => {
        impl $crate::controller::release_runner::ReleaseStatus for $status {
            fn applied_inputs(&self) -> Option<&str> {
                self.applied_inputs.as_deref()
            }

            fn last_reconciled(&self) -> Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time> {
                self.last_reconciled.as_ref()
            }

            fn record_applied(&mut self, render: &$crate::store::StoredRender) {
                self.applied_inputs = Some(render.inputs.clone());
                self.applied_revision = Some(i64::from(render.revision));
                self.last_reconciled = Some($crate::controller::now());
            }
        }
    };
}
pub(crate) use release_status;

/// One inventory an apply of the release writes, with its objects (of a ClusterAddon's stage
/// `stage`).
pub struct Inventory {
    pub inventory: InventoryRef,
    pub objects: Vec<DesiredObject>,
    pub stage: Option<String>,
}

impl Inventory {
    /// The kinds of its objects (what drift watches watch).
    pub fn kinds(&self) -> Vec<crate::drift::Kind> {
        pipeline::kinds_of(&self.objects)
    }
}

/// What a stage action did.
pub enum Staged {
    /// The pass goes on: observe and plan again.
    Again,
    /// The pass ends with this action (a stage waits, or stops).
    Done(Action),
    /// Every stage is done: the pass ends as a full one, with these inventories watched.
    Finished(Vec<Inventory>),
}

/// What one kind brings to the runner.
pub trait ReleaseKind {
    type Object: Tracked<Status: ReleaseStatus> + Send + Sync + 'static;
    /// Its stage machine ([`plan::NoStages`] for a kind that applies in one go).
    type Stages: Stages + std::fmt::Debug + Send + Sync;
    /// The hash of this pass's render inputs.
    fn inputs(&self) -> &str;
    /// Where its renders are stored.
    fn owner(&self) -> Owner;
    /// Renders the charts (run only on [`Step::Render`]).
    fn render(&self) -> impl Future<Output = Result<Parts, Failure>> + Send;
    /// Records that `render` (`fresh`: just made) is the render of the inputs.
    fn rendered(
        &self,
        progress: &mut Progress<'_, Self::Object>,
        render: &StoredRender,
        fresh: bool,
    ) -> impl Future<Output = ()> + Send;
    /// What its stage machine needs, from the recorded `status` (pure).
    fn stages(&self, status: &<Self::Object as Tracked>::Status) -> Self::Stages;
    /// The inventories `render` names for `object` while the stages stand at `stages` (none
    /// while a stage action is next): what an apply writes, what drift watches cover. Reads
    /// only.
    fn target(
        &self,
        object: &Self::Object,
        render: &StoredRender,
        stages: &Self::Stages,
    ) -> impl Future<Output = Result<Vec<Inventory>, Failure>> + Send;
    /// Drops from the recorded per-object status entries no inventory of `inventories` has
    /// while the stages stand at `stages` (in memory; the step's save writes it).
    fn keep_resources(
        &self,
        _status: &mut <Self::Object as Tracked>::Status,
        _stages: &Self::Stages,
        _inventories: &[Inventory],
    ) {
    }
    /// Acts on stage action `action` of the stored `render`; a stage's apply goes through
    /// [`apply_inventory`] with the plan's `apply`.
    fn stage(
        &self,
        progress: &mut Progress<'_, Self::Object>,
        render: &StoredRender,
        action: <Self::Stages as Stages>::Action,
        apply: Apply,
    ) -> impl Future<Output = Result<Staged, Error>> + Send;
    /// Whether the recorded status says the current inputs were applied in full.
    fn applied(&self, status: &<Self::Object as Tracked>::Status) -> bool {
        status.applied_inputs() == Some(self.inputs())
    }
    /// Records that `render` was applied in full.
    fn record_applied(&self, status: &mut <Self::Object as Tracked>::Status, render: &StoredRender) {
        status.record_applied(render);
    }
    /// The drift watches' wake-ups of this kind.
    fn wake_ups(&self) -> &DriftWakeUps<Self::Object>;
    /// Whether the drift watches saw every change of `inventories` since the last full pass.
    fn watched(&self, _inventories: &[Inventory]) -> bool {
        false
    }
    /// Whether an inventory of `inventories` with objects has no drift watch running (none
    /// started in this process yet, or its cluster's watches were dropped).
    fn unwatched(&self, _inventories: &[Inventory]) -> bool {
        false
    }
    /// Applies to the target.
    fn applier(&self) -> &Applier;
    /// What the drift watches tell an apply of `inventory`: the kinds they followed when
    /// `trusted` (no drift check, no wake-up).
    fn told(&self, _inventory: &InventoryRef, _trusted: bool) -> Watched {
        Watched::default()
    }
    /// An apply of `inventory` wrote its objects of each kind at resourceVersions from
    /// `written`'s on: where its drift watches start (see [`crate::drift::DriftWatches::wrote`]).
    fn wrote(&self, _inventory: &InventoryRef, _written: crate::drift::Written) {}
    /// The `Applied` condition's message after `outcome` of an apply of `render`.
    fn applied_message(&self, outcome: &Outcome, _render: &StoredRender) -> String {
        outcome.summary()
    }
    /// Watches the kinds of `inventories` for drift (after a full pass).
    fn watch_drift(
        &self,
        progress: &Progress<'_, Self::Object>,
        inventories: &[Inventory],
    ) -> impl Future<Output = ()> + Send;
}

/// One pass of a release from its render on: observe, plan, act, until a step ends it.
pub async fn run<R: ReleaseKind>(progress: &mut Progress<'_, R::Object>, kind: &R) -> Result<Action, Error> {
    let owner = kind.owner();
    let latest = pipeline::latest(&progress.ctx.store, &owner).await;
    let mut stored = progress
        .check(RENDERED, latest)
        .await?
        .filter(|s| s.inputs == kind.inputs());
    let mut fresh = false;
    loop {
        let stages = kind.stages(&progress.status);
        let target = match &stored {
            Some(render) => {
                kind.rendered(progress, render, fresh).await;
                fresh = false;
                let inventories = kind.target(progress.object, render, &stages).await;
                let inventories = progress.check(APPLIED, inventories).await?;
                kind.keep_resources(&mut progress.status, &stages, &inventories);
                Some((render, inventories))
            }
            None => None,
        };
        let inventories = target.as_ref().map(|(_, inventories)| inventories.as_slice());
        let snapshot = observe(progress, kind, inventories, stages);
        let step = plan::plan(&snapshot);
        tracing::debug!(object = %super::key_of(progress.object), phase = ?snapshot.phase(), ?step, "planned");
        match act(progress, kind, step, &owner, target).await? {
            Acted::Rendered(render) => {
                stored = Some(render);
                fresh = true;
            }
            Acted::Again => {}
            Acted::Done(action) => return Ok(action),
        }
    }
}

/// The snapshot of this pass: `inventories` of the stored render of the inputs (`None`: no
/// stored render has them). Reads the drift wake-up without taking it.
fn observe<R: ReleaseKind>(
    progress: &Progress<'_, R::Object>,
    kind: &R,
    inventories: Option<&[Inventory]>,
    stages: R::Stages,
) -> Snapshot<R::Stages> {
    let object = ObjectRef::from_obj(progress.object);
    // Inventories no watch serves (after a restart, or a workload cluster connected again)
    // are compared now, and watched from then on: not a drift interval later.
    let unwatched = progress.ctx.settings.drift_watches
        && progress.status.applied_inputs().is_some()
        && inventories.is_some_and(|i| kind.unwatched(i));
    let suspect = kind.wake_ups().is_suspect(&object) || take_over_asked(progress) || unwatched;
    // The later of the last full pass (status) and the last check the watches vouched for.
    let checked = kind.wake_ups().last_check(&object);
    let last = progress.status.last_reconciled().max(checked.as_ref());
    let due_in = super::drift_wait(last, &progress.ctx.settings);
    Snapshot {
        stored: inventories.is_some(),
        applied: kind.applied(&progress.status),
        drift: Drift::of(suspect, due_in),
        watched: progress.ctx.settings.drift_watches && inventories.is_some_and(|i| kind.watched(i)),
        stages,
    }
}

/// Whether taking over objects another inventory owns was asked for since the last apply
/// left them to it (the `OwnershipConflict` condition is true): the next pass applies.
fn take_over_asked<K: Tracked>(progress: &Progress<'_, K>) -> bool {
    if !pipeline::takes_over(progress.object.annotations()) {
        return false;
    }
    let mut status = progress.status.clone();
    crate::api::conditions::is_true(K::conditions_mut(&mut status), report::OWNERSHIP_CONFLICT)
}

/// What acting on a step did.
enum Acted {
    /// Rendered and stored the inputs: observe again.
    Rendered(StoredRender),
    /// A stage action is done: observe again.
    Again,
    /// The pass ends.
    Done(Action),
}

/// Acts on `step`, with the stored render of the inputs and its inventories when there is
/// one (`target`).
async fn act<R: ReleaseKind>(
    progress: &mut Progress<'_, R::Object>,
    kind: &R,
    step: Step<<R::Stages as Stages>::Action>,
    owner: &Owner,
    target: Option<(&StoredRender, Vec<Inventory>)>,
) -> Result<Acted, Error> {
    let ctx = progress.ctx;
    let apply = match step {
        Step::Render => {
            let parts = kind.render().await;
            let parts = progress.check(RENDERED, parts).await?;
            let saved = pipeline::store(&ctx.store, owner, kind.inputs(), parts).await;
            return Ok(Acted::Rendered(progress.check(RENDERED, saved).await?));
        }
        Step::Wait(wait) => {
            progress.save().await?;
            return Ok(Acted::Done(Action::requeue(wait)));
        }
        Step::Checked => {
            // The watches saw every change since the last full pass: the clock starts again
            // in memory, and the status is written only if something else changed.
            kind.wake_ups().record_check(ObjectRef::from_obj(progress.object));
            ctx.metrics.drift_checked(R::Object::CONTROLLER, "watches");
            progress.save().await?;
            return Ok(Acted::Done(Action::requeue(super::drift_requeue(&ctx.settings))));
        }
        Step::Apply(apply) => apply,
        Step::Stage { action, apply } => {
            let Some((render, _)) = target else {
                return Err(without_render(&format!("{action:?}")));
            };
            return Ok(match kind.stage(progress, render, action, apply).await? {
                Staged::Again => Acted::Again,
                Staged::Done(action) => Acted::Done(action),
                Staged::Finished(inventories) => {
                    Acted::Done(finish(progress, kind, render, &inventories).await?)
                }
            });
        }
    };
    let drift_pass = apply.drift_pass();
    let Some((render, inventories)) = target else {
        return Err(without_render(&format!("{apply:?}")));
    };
    // Unless this pass checks for drift or a watch woke the object, what the watches saw
    // since the last complete apply need not be listed again (issue 36: an upgrade costs its
    // applies, not a list per kind). The wake-up is the apply's to take.
    let woken = kind.wake_ups().take(&ObjectRef::from_obj(progress.object));
    let trusted = plan::trusts_watches(ctx.settings.drift_watches, drift_pass, woken);
    let mut conflicts = Vec::new();
    for inventory in &inventories {
        let outcome = apply_inventory(progress, kind, inventory, apply, trusted).await?;
        let message = kind.applied_message(&outcome, render);
        progress.condition(APPLIED, true, "Applied", message);
        conflicts.extend(outcome.conflicts);
    }
    let shown = crate::api::conditions::find(
        <R::Object as Tracked>::conditions_mut(&mut progress.status),
        report::OWNERSHIP_CONFLICT,
    )
    .is_some();
    if let Some((on, reason, message)) = report::conflict_condition(&conflicts, shown) {
        progress.condition(report::OWNERSHIP_CONFLICT, on, reason, message);
    }
    if drift_pass {
        ctx.metrics.drift_checked(R::Object::CONTROLLER, "comparison");
    }
    finish(progress, kind, render, &inventories)
        .await
        .map(Acted::Done)
}

/// The error of a step that needs a stored render without one: the plan renders first
/// whenever nothing is stored, so a defect if reached.
fn without_render(step: &str) -> Error {
    tracing::error!(step, "the release plan gave a step without a stored render");
    Error::Waiting {
        reason: format!("{step} without a stored render"),
        retry: super::progress::WAIT,
    }
}

/// Applies one inventory's objects (pruning what left it) as the plan's `apply` says and
/// records the per-object status (of its stage); a ClusterAddon's stage runs through here too.
pub async fn apply_inventory<R: ReleaseKind>(
    progress: &mut Progress<'_, R::Object>,
    kind: &R,
    inventory: &Inventory,
    apply: Apply,
    trusted: bool,
) -> Result<Outcome, Error> {
    let watched = kind.told(&inventory.inventory, trusted);
    progress.stage = inventory.stage.clone();
    let applied = pipeline::apply(
        progress,
        APPLIED,
        kind.applier(),
        &inventory.objects,
        inventory.inventory.clone(),
        apply,
        watched,
    )
    .await;
    progress.stage = None;
    if let Ok(outcome) = &applied {
        kind.wrote(&inventory.inventory, outcome.written.clone());
    }
    applied
}

/// The end of a full pass: `inventories` watched for drift, `render` recorded as applied,
/// the status saved, the next drift check requeued.
async fn finish<R: ReleaseKind>(
    progress: &mut Progress<'_, R::Object>,
    kind: &R,
    render: &StoredRender,
    inventories: &[Inventory],
) -> Result<Action, Error> {
    if progress.ctx.settings.drift_watches {
        kind.watch_drift(progress, inventories).await;
    }
    kind.record_applied(&mut progress.status, render);
    kind.wake_ups()
        .forget_check(&ObjectRef::from_obj(progress.object));
    progress.save().await?;
    Ok(Action::requeue(super::drift_requeue(&progress.ctx.settings)))
}
