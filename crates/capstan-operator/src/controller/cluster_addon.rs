//! The ClusterAddon controller: brings a release's addons onto the workload cluster of a
//! Cluster that uses the release's ClusterClass, with values injected from the live Cluster
//! API objects (`Cluster`, its control plane and infrastructure cluster), and keeps them there.
//!
//! - **Gates**: a Cluster API version capstan speaks served (else `ClusterAPINotServed`, an
//!   error with backoff: a Cluster that cannot be read is never taken for gone), the
//!   `<cluster>-kubeconfig` Secret, `status.controlPlaneReady` and the workload
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
//!
//! One pass is split as the rollout controller's: `observe.rs` reads (the Cluster, the
//! workload cluster, the referenced objects, the inputs hash), `plan.rs` decides (each gate,
//! and the stage machine whose actions are steps of the release runner's one plan), `act.rs`
//! acts (a halt at a gate, each stage action); [`super::release_runner`] renders, applies and
//! watches for drift as its plan says.

mod act;
mod names;
mod observe;
mod plan;
pub mod wake_ups;

use std::ops::ControlFlow;
use std::sync::Arc;

use kube::ResourceExt;
use kube::runtime::controller::Action;

use super::Error;
use super::pipeline::{self, ReleaseFiles};
use super::progress::Because;
use super::release_runner;
use super::wake_ups::AddonDrift;
use crate::api::{ClusterAddon, ClusterAddonStatus, ClusterStack};
use crate::context::Context;
use crate::watch::{
    CLUSTER_NAME_LABEL, changed, cluster_trigger, kubeconfig_addon, kubeconfig_secrets, spec_or_deletion,
};
use crate::wiring::{Running, Wiring, in_scope};
use capstan_stack::name::ReleaseTag;
use capstan_stack::render::{ADDON_NAMESPACE, CompiledRelease};
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Secret;
use kube::api::DynamicObject;
use kube::runtime::Controller;
use kube::runtime::reflector::ObjectRef;
use observe::RenderInputs;

pub const FINALIZER: &str = "clusterstack.x-k8s.io/capstan-addon";
pub const CONTROLLER: &str = "clusteraddon";

pub use super::pipeline::{APPLIED, RENDERED};
pub use names::CLUSTER_READY;
use names::{inventories_of, store_owner};
const STEPS: [&str; 3] = [CLUSTER_READY, RENDERED, APPLIED];

/// Reconciles one ClusterAddon through its finalizer ([`super::reconcile`]).
pub async fn reconcile(object: Arc<ClusterAddon>, controller: Arc<AddonController>) -> Result<Action, Error> {
    super::reconcile(object, controller).await
}

pub use super::error_policy;

impl super::Finalized for ClusterAddon {
    const FINALIZER: &'static str = FINALIZER;
    type Controller = AddonController;

    fn apply(
        &self,
        controller: &AddonController,
    ) -> impl std::future::Future<Output = Result<Action, Error>> + Send {
        apply(self, controller)
    }

    fn cleanup(
        &self,
        controller: &AddonController,
    ) -> impl std::future::Future<Output = Result<Action, Error>> + Send {
        cleanup(self, controller)
    }
}

impl super::Reconciler for AddonController {
    fn shared(&self) -> &Context {
        &self.shared
    }

    fn failures(&self) -> &super::failures::Failures {
        &self.failures
    }
}

type Progress<'a> = super::progress::Progress<'a, ClusterAddon>;

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

release_runner::release_status!(ClusterAddonStatus);

/// Breaks out of a pass with `$flow`'s action, else gives its value.
macro_rules! proceed {
    ($flow:expr) => {
        match $flow {
            ControlFlow::Continue(value) => value,
            ControlFlow::Break(action) => return Ok(action),
        }
    };
}

/// Ends the pass at a gate as the plan's `Halt` says ([`act::halt`]), else gives the value.
macro_rules! gate {
    ($progress:expr, $flow:expr) => {
        match $flow {
            ControlFlow::Continue(value) => value,
            ControlFlow::Break(halt) => return act::halt($progress, halt).await,
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

/// One pass: the gates (each read, decided, and the pass halted where one is closed), the
/// release and the inputs hash; then the release runner's one plan renders once, runs the
/// stages of the current hook or applies the one chart, and watches for drift.
async fn apply_pass(addon: &ClusterAddon, controller: &AddonController) -> Result<Action, Error> {
    let ctx = controller.shared.as_ref();
    let mut progress = Progress::new(addon, ctx, &STEPS);
    // 0. Cluster API itself: without it no Cluster can be read, and none is gone.
    gate!(
        &mut progress,
        plan::cluster_api_gate(crate::capi_api::not_served())
    );
    let found = match observe::cluster(ctx, addon).await {
        Ok(found) => found,
        Err(e) => return Err(progress.fail(CLUSTER_READY, "ClusterUnreadable", e).await),
    };
    let cluster = gate!(&mut progress, plan::cluster_gate(found));
    // 1. Which release: the Cluster's class, in `spec.topology.classNamespace` when given.
    let usage = crate::clusters::ClusterUse::of(&cluster);
    let (class, class_namespace, tag) = gate!(&mut progress, plan::class_gate(&usage));
    // Status never claims the old release for the new class: progressing at once.
    if let Some(message) = plan::upgrade_note(&progress.status, &class) {
        act::upgrading(&mut progress, message).await?;
    }
    // 2. Gates: the control plane, then a workload API server that is ready.
    gate!(&mut progress, plan::control_plane_gate(&cluster));
    let (namespace, name) = (cluster.namespace().unwrap_or_default(), cluster.name_any());
    let connected = observe::connect(ctx, &namespace, &name).await;
    let applied = progress.status.applied_inputs.is_some();
    let target = gate!(&mut progress, plan::workload_gate(connected, &name, applied));
    act::gates_open(&mut progress, &target);
    // 3. The release, through the ClusterStack that follows it.
    let (files, compiled, stack) = proceed!(resolve_release(&mut progress, &class_namespace, &tag).await?);
    // 4. Values from the live objects; a render only when they (or the release) changed.
    let objects = gate!(
        &mut progress,
        plan::objects_gate(observe::live_objects(ctx, &cluster).await)
    );
    let gathered = crate::addon::user_values::gather(&ctx.client, &stack, &cluster).await;
    let user_values = gate!(&mut progress, plan::user_values_gate(gathered));
    let with_user_values = observe::user_values_note(&user_values);
    let inputs = RenderInputs {
        objects,
        user_values,
        digest: files.digest.clone(),
    };
    let hash = observe::inputs_hash(&compiled, &inputs, &target).await;
    let hash = progress.check(RENDERED, hash).await?;
    // 5. The release runner's one plan: render once, the stages of the current hook or the
    // one chart, drift.
    let kind = act::AddonRelease {
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
    let compiled = super::pipeline::dependencies::compile_for(progress, &stack, &files).await?;
    let compiled = match compiled {
        ControlFlow::Continue(compiled) => compiled,
        ControlFlow::Break(action) => return Ok(ControlFlow::Break(action)),
    };
    Ok(ControlFlow::Continue((files, compiled, stack)))
}

/// Deletion: without the Cluster nothing can be reached; else the addon's objects go first.
async fn cleanup(addon: &ClusterAddon, controller: &AddonController) -> Result<Action, Error> {
    let ctx = controller.shared.as_ref();
    let namespace = addon.namespace().unwrap_or_default();
    let cluster_name = addon.spec.cluster_ref.name.clone().unwrap_or_default();
    // Without Cluster API (uninstalled, its Clusters with it) nothing is left to reach.
    let cluster = match crate::clusters::get(&ctx.client, &namespace, &cluster_name).await {
        Err(e) if crate::kube_error::is_resource_not_served(&e) => None,
        read => read.map_err(|e| Error::kube(format!("reading Cluster {namespace}/{cluster_name}"), e))?,
    };
    let cluster_going = cluster
        .as_ref()
        .is_none_or(|c| c.metadata.deletion_timestamp.is_some());
    if !cluster_going {
        let target = observe::connect(ctx, &namespace, &cluster_name)
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

/// ClusterAddons, woken by their Cluster (class, version, controlPlaneReady, deletion) and
/// its kubeconfig Secret, so work starts as soon as a gate opens; by user values and by
/// drift on their workload cluster.
pub fn controller(wiring: &Wiring<'_>) -> Running {
    let ctx = &wiring.ctx;
    let controller = Arc::new(AddonController::new(ctx.clone()));
    let _ = wiring
        .census
        .addon_checks
        .set(Box::new(controller.drift.checks()));
    let mut fleet = wiring.fleet();
    let addons_store = fleet.addons_store.clone();
    let user_values = wake_ups::user_value_changes(&wiring.client, &wiring.scope, &addons_store);
    let secret_ctx = ctx.clone();
    let addon_events = changed(
        fleet.addons_of(&wiring.scope),
        spec_or_deletion::<ClusterAddon>,
        false,
    );
    // The woken pass reads the Cluster (and its kubeconfig Secret) from the stores these
    // watches fill before they wake it.
    let cluster_changes = changed(fleet.clusters_of(&wiring.scope), cluster_trigger, true);
    Controller::for_stream(addon_events, addons_store)
        .watches_stream_with(
            cluster_changes,
            |cluster: DynamicObject| {
                let namespace = cluster.metadata.namespace.clone().unwrap_or_default();
                let name = cluster.metadata.name.clone().unwrap_or_default();
                Some(ObjectRef::new(&crate::api::cluster_addon::addon_name(&name)).within(&namespace))
            },
            crate::clusters::cluster_key(),
        )
        .watches_stream(
            kubeconfig_secrets(&wiring.client, &wiring.scope, |secrets| {
                ctx.management.reflect_secrets(secrets)
            }),
            move |secret: Secret| {
                let addon = kubeconfig_addon(&secret.metadata)?;
                // A changed kubeconfig drops the cached workload cluster at once.
                let cluster = secret.metadata.labels.as_ref()?.get(CLUSTER_NAME_LABEL)?;
                let namespace = secret.metadata.namespace.as_deref().unwrap_or_default();
                let version = secret.metadata.resource_version.as_deref().unwrap_or_default();
                secret_ctx.workloads.secret_seen(namespace, cluster, version);
                Some(addon)
            },
        )
        .reconcile_on(user_values)
        // Objects their Cluster references (its ControlPlane, InfraCluster) appearing or
        // changing their spec.
        .reconcile_on(ctx.management.wake_ups())
        // Drift watches on the workload clusters wake their ClusterAddon.
        .reconcile_on(controller.drift.wake_ups())
        // Cluster API served again (or another version): each waits no longer.
        .reconcile_all_on(crate::capi_api::chosen_anew())
        .with_config(wiring.concurrency.clone())
        .graceful_shutdown_on(wiring.shutdown.clone())
        .run(in_scope(reconcile, &wiring.scope), error_policy, controller)
        .for_each(|_| futures::future::ready(()))
        .boxed()
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
