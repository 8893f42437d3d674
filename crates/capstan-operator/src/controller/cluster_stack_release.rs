//! The ClusterStackRelease controller: downloads a release through the verified cache,
//! renders its ClusterClass chart once per input (release digest, namespace, capstan's
//! version) into the render store, server-side-applies the stored manifest to the management
//! cluster, records per-object status, and re-checks drift at least every drift interval, or
//! at once when a drift watch on its objects sees a change ([`watches`]).
//!
//! Each step records in status what it did before the next starts (`releaseDigest`,
//! `appliedInputs` + `appliedRevision`, `lastReconciled`), so a restarted operator neither
//! downloads, renders nor applies again what is recorded complete: it only checks drift when
//! the interval says so. On deletion it waits while a Cluster uses the class, then prunes
//! everything it applied (the cluster-stack operator orphans it).

pub mod class_version;
pub mod dependencies;
pub mod verify;
pub mod watches;

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use kube::ResourceExt;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;

use super::pipeline::dependency_policy::DependencyPolicy;
use super::pipeline::{self, Parts, ReleaseFiles};
use super::progress::{Because, Failure, WAIT};
use super::release_runner::plan::NoStages;
use super::release_runner::{self, Inventory, ReleaseKind};
use super::report::Outcome;
use super::wake_ups::ReleaseDrift;
use super::{Error, object_ref, owner_reference};
use crate::api::{ClusterStackRelease, ClusterStackReleaseStatus};
use crate::context::Context;
use crate::kube_error::is_not_found;
use crate::store::{Owner, StoredRender};
use crate::watch::{changed, spec_or_deletion};
use crate::wiring::{Running, Wiring, in_scope};
use capstan_apply::InventoryRef;
use capstan_apply::ssa::{INVENTORY_ANNOTATION, MANAGED, MANAGED_LABEL};
use capstan_stack::capi::CapiVersion;
use capstan_stack::capi::to_v1beta2::ClassVersionError;
use capstan_stack::name::ReleaseTag;
use futures::{FutureExt, StreamExt, TryStreamExt};
use kube::Resource;
use kube::api::DynamicObject;
use kube::runtime::utils::WatchStreamExt;
use kube::runtime::{Controller, watcher};

/// Finalizer: the release's objects are pruned before it goes.
pub const FINALIZER: &str = "clusterstack.x-k8s.io/capstan-release";
/// Name of this controller in metrics.
pub const CONTROLLER: &str = "clusterstackrelease";

pub const DOWNLOADED: &str = "Downloaded";
pub use super::pipeline::{APPLIED, RENDERED};
pub const PROVIDER_READY: &str = "ProviderReady";
pub use super::pipeline::dependencies::SOURCE_VERIFIED;
const STEPS: [&str; 3] = [DOWNLOADED, RENDERED, APPLIED];
const STEPS_WITH_PROVIDER: [&str; 4] = [DOWNLOADED, PROVIDER_READY, RENDERED, APPLIED];
const VERIFIED_STEPS: [&str; 4] = [DOWNLOADED, SOURCE_VERIFIED, RENDERED, APPLIED];
const VERIFIED_STEPS_WITH_PROVIDER: [&str; 5] =
    [DOWNLOADED, SOURCE_VERIFIED, PROVIDER_READY, RENDERED, APPLIED];

/// How often a release being deleted looks again whether Clusters still use it.
const WAIT_FOR_USERS: Duration = Duration::from_secs(15);

/// Reconciles one ClusterStackRelease through its finalizer ([`super::reconcile`]).
pub async fn reconcile(
    object: Arc<ClusterStackRelease>,
    controller: Arc<ReleaseController>,
) -> Result<Action, Error> {
    super::reconcile(object, controller).await
}

pub use super::error_policy;

impl super::Finalized for ClusterStackRelease {
    const FINALIZER: &'static str = FINALIZER;
    type Controller = ReleaseController;

    fn apply(
        &self,
        controller: &ReleaseController,
    ) -> impl std::future::Future<Output = Result<Action, Error>> + Send {
        apply(self, controller)
    }

    fn cleanup(
        &self,
        controller: &ReleaseController,
    ) -> impl std::future::Future<Output = Result<Action, Error>> + Send {
        cleanup(self, controller)
    }
}

impl super::Reconciler for ReleaseController {
    fn shared(&self) -> &Context {
        &self.shared
    }

    fn failures(&self) -> &super::failures::Failures {
        &self.failures
    }
}

type Progress<'a> = super::progress::Progress<'a, ClusterStackRelease>;

/// The ClusterStackRelease controller's state: the shared context, its failures, the drift
/// wake-ups of its releases and their drift watches in the management cluster.
pub struct ReleaseController {
    pub shared: Arc<Context>,
    failures: super::failures::Failures,
    /// Releases whose objects a watch saw change (their ClusterClass, or any object of their
    /// inventory through the drift watches): woken at once, and their next pass re-applies
    /// even when the drift interval has not passed.
    pub drift: ReleaseDrift,
    /// The drift watches of the releases' objects in the management cluster.
    pub watches: watches::ReleaseWatches,
}

impl ReleaseController {
    pub fn new(shared: Arc<Context>) -> ReleaseController {
        ReleaseController {
            shared,
            failures: Default::default(),
            drift: Default::default(),
            watches: Default::default(),
        }
    }
}
super::progress::tracked_kind!(ClusterStackRelease, ClusterStackReleaseStatus);

/// The note of the event sent when the release becomes ready.
fn ready_note(release: &ClusterStackRelease, status: &ClusterStackReleaseStatus) -> String {
    format!(
        "ClusterClass {} applied ({} objects)",
        release.name_any(),
        status.resources.len()
    )
}

/// Whether the release's status has a verdict on its signatures (so `Ready` keeps summarising
/// it until the stack's policy is read again).
fn was_verified(release: &ClusterStackRelease) -> bool {
    release
        .status
        .as_ref()
        .is_some_and(|s| crate::api::conditions::find(&s.conditions, SOURCE_VERIFIED).is_some())
}

/// The conditions a release's `Ready` summarises; `SourceVerified` when its stack has a
/// signature policy.
fn steps_of(release: &ClusterStackRelease, verified: bool) -> &'static [&'static str] {
    match (release.spec.provider_ref.is_some(), verified) {
        (false, false) => &STEPS,
        (true, false) => &STEPS_WITH_PROVIDER,
        (false, true) => &VERIFIED_STEPS,
        (true, true) => &VERIFIED_STEPS_WITH_PROVIDER,
    }
}

async fn apply(release: &ClusterStackRelease, controller: &ReleaseController) -> Result<Action, Error> {
    let ctx = controller.shared.as_ref();
    let mut progress = Progress::new(release, ctx, steps_of(release, was_verified(release)));
    let tag = match ReleaseTag::parse(&release.name_any()) {
        Ok(tag) => tag,
        Err(e) => {
            let message = format!("the name is not a release tag: {e}");
            progress.condition(DOWNLOADED, false, "InvalidName", message);
            progress.save().await?;
            // Nothing changes until the object does.
            return Ok(Action::await_change());
        }
    };
    // 1. The source, from the ClusterStack that owns (or else matches) the release.
    let found = pipeline::stack_of(release, &tag, &ctx.stacks, "; the release has no source");
    let stack = match progress.check(DOWNLOADED, found).await? {
        ControlFlow::Continue(stack) => stack,
        ControlFlow::Break(action) => return Ok(action),
    };
    let verified = verify::has_policy(&stack, ctx) || pipeline::dependencies::has_policy(&stack, ctx);
    progress.set_steps(steps_of(release, verified));
    // 2. Download (nothing is sent when the cache holds the release complete).
    let files = pipeline::fetch(ctx, &stack, &tag).await;
    let files = progress.check(DOWNLOADED, files).await?;
    progress.status.release_digest = Some(files.digest.clone());
    let message = format!(
        "{} verified in the cache (digest {})",
        files.source.describe(),
        &files.digest[..12]
    );
    progress.condition(DOWNLOADED, true, "Downloaded", message);
    progress.save().await?;
    // 3. Who signed it, when the stack has a policy: a refused release goes no further.
    if let ControlFlow::Break(action) = verify::check(&mut progress, &stack, &files, &tag).await? {
        return Ok(action);
    }
    // 4. Who signed its charts' dependencies, when a policy asks: a refused one stops it too.
    let policy = match dependencies::check(&mut progress, &stack, &files).await? {
        ControlFlow::Continue(policy) => policy,
        ControlFlow::Break(action) => return Ok(action),
    };
    // The provider's part of the release (`<X>ClusterStackRelease`), when it has one.
    if let Some(reference) = &release.spec.provider_ref {
        let ensured = super::provider::ensure(provider_cluster(ctx), release, reference).await;
        if let Ok(super::provider::Ensured {
            created: Some(note), ..
        }) = &ensured
        {
            ctx.event(
                &object_ref(release),
                false,
                "ProviderReleaseCreated",
                "Provide",
                note.clone(),
            )
            .await;
        }
        let state = ensured.map(|ensured| ensured.state);
        match progress
            .check(PROVIDER_READY, state.because("ProviderFailed"))
            .await?
        {
            super::provider::State::Ready(what) => {
                progress.condition(PROVIDER_READY, true, "Ready", format!("{what} is ready"));
            }
            super::provider::State::Waiting(why) => {
                progress.condition(PROVIDER_READY, false, "Waiting", why);
                progress.save().await?;
                return Ok(Action::requeue(WAIT));
            }
        }
    }
    // 5. The ClusterClass chart is Cluster API's kinds: without a version served, said (with
    // backoff) instead of an apply refused for kinds the server does not know.
    if let Some(why) = crate::capi_api::not_served() {
        let cause = super::Cause::ClusterApiNotServed(why);
        return Err(progress
            .fail(APPLIED, crate::capi_api::NOT_SERVED_REASON, cause)
            .await);
    }
    render_and_apply(&mut progress, controller, &files, &policy).await
}

/// Renders once per inputs, then applies, or only checks drift when the manifest was
/// applied in full before ([`release_runner`] decides and acts).
async fn render_and_apply(
    progress: &mut Progress<'_>,
    controller: &ReleaseController,
    files: &ReleaseFiles,
    policy: &DependencyPolicy,
) -> Result<Action, Error> {
    let release = progress.object;
    let namespace = release.namespace().unwrap_or_default();
    // Where v1beta2 is spoken the objects applied differ (converted): other inputs. Nothing is
    // added for v1beta1, so inputs recorded before issue 47 stay valid.
    let mut inputs = vec![files.digest.as_str(), namespace.as_str()];
    if crate::capi_api::current() == CapiVersion::V1Beta2 {
        inputs.push("cluster-api v1beta2");
    }
    let kind = ClassRelease {
        release,
        controller,
        files,
        policy,
        inputs: pipeline::inputs_hash("cluster-class", inputs),
    };
    release_runner::run(progress, &kind).await
}

/// A ClusterStackRelease as the runner sees it: the ClusterClass chart, rendered for the
/// release's namespace and applied to the management cluster with one inventory.
struct ClassRelease<'a> {
    release: &'a ClusterStackRelease,
    controller: &'a ReleaseController,
    files: &'a ReleaseFiles,
    /// The dependency policy its charts compile under.
    policy: &'a DependencyPolicy,
    inputs: String,
}

release_runner::release_status!(ClusterStackReleaseStatus);

impl ReleaseKind for ClassRelease<'_> {
    type Object = ClusterStackRelease;
    type Stages = NoStages;

    fn inputs(&self) -> &str {
        &self.inputs
    }

    fn owner(&self) -> Owner {
        store_owner(self.release)
    }

    async fn render(&self) -> Result<Parts, Failure> {
        let namespace = self.release.namespace().unwrap_or_default();
        render_class(&self.controller.shared, self.files, self.policy, &namespace).await
    }

    async fn rendered(&self, progress: &mut Progress<'_>, render: &StoredRender, fresh: bool) {
        let ctx = self.controller.shared.as_ref();
        if fresh {
            let note = format!(
                "ClusterClass chart rendered, stored as revision {}",
                render.revision
            );
            ctx.event(&object_ref(self.release), false, "Rendered", "Render", note)
                .await;
        }
        if fresh
            && crate::capi_api::current() == CapiVersion::V1Beta2
            && let Ok(Ok(in_version)) = in_version(self.release, render).await
        {
            if let Some(why) = &in_version.kept_v1beta1 {
                let note = class_version::kept_note(why);
                ctx.event(
                    &object_ref(self.release),
                    true,
                    class_version::CONVERSION_REFUSED,
                    "Apply",
                    note,
                )
                .await;
            } else if !in_version.converted.is_empty() {
                let note = class_version::note(&in_version);
                ctx.event(
                    &object_ref(self.release),
                    false,
                    class_version::CONVERTED,
                    "Apply",
                    note,
                )
                .await;
            }
        }
        let message = format!("revision {} of the rendered ClusterClass chart", render.revision);
        progress.condition(RENDERED, true, "Rendered", message);
        if progress.status.kubernetes_version.is_none()
            && let Ok(compiled) = pipeline::compile(
                &ctx.sources,
                &ctx.settings.chart_repositories,
                &ctx.metrics,
                self.files,
                self.policy,
            )
            .await
        {
            progress.status.kubernetes_version = Some(compiled.release.kubernetes().to_string());
        }
    }

    fn stages(&self, _status: &ClusterStackReleaseStatus) -> NoStages {
        NoStages
    }

    async fn target(
        &self,
        release: &ClusterStackRelease,
        render: &StoredRender,
        _stages: &NoStages,
    ) -> Result<Vec<Inventory>, Failure> {
        let objects = in_version(release, render)
            .await?
            .map_err(|e| Failure::new(class_version::reason(&e), e))?
            .objects;
        Ok(vec![Inventory {
            inventory: inventory_of(release),
            objects,
            stage: None,
        }])
    }

    /// A release applies in one go: it has no stage action.
    async fn stage(
        &self,
        _progress: &mut Progress<'_>,
        _render: &StoredRender,
        action: std::convert::Infallible,
        _apply: release_runner::plan::Apply,
    ) -> Result<release_runner::Staged, Error> {
        match action {}
    }

    fn wake_ups(&self) -> &ReleaseDrift {
        &self.controller.drift
    }

    fn applier(&self) -> &capstan_apply::Applier {
        &self.controller.shared.applier
    }

    fn applied_message(&self, outcome: &Outcome, render: &StoredRender) -> String {
        format!("{} from revision {}", outcome.summary(), render.revision)
    }

    fn wrote(&self, inventory: &InventoryRef, written: crate::drift::Written) {
        let ctx = self.controller.shared.as_ref();
        let namespace = self.release.namespace().unwrap_or_default();
        let scope = watches::watch_namespace(&ctx.settings.namespaces, &namespace);
        self.controller
            .watches
            .scope(scope)
            .wrote(&inventory.id(), written);
    }

    fn unwatched(&self, inventories: &[Inventory]) -> bool {
        let ctx = self.controller.shared.as_ref();
        let namespace = self.release.namespace().unwrap_or_default();
        let scope = watches::watch_namespace(&ctx.settings.namespaces, &namespace);
        let watches = self.controller.watches.scope(scope);
        inventories
            .iter()
            .any(|i| !i.objects.is_empty() && !watches.serves(&i.inventory.id()))
    }

    /// Watches the kinds just applied in the management cluster: a change there wakes this
    /// release at once (see [`watches`]).
    async fn watch_drift(&self, _progress: &Progress<'_>, inventories: &[Inventory]) {
        let (ctx, controller) = (self.controller.shared.as_ref(), self.controller);
        let key = ObjectRef::from_obj(self.release);
        let namespace = self.release.namespace().unwrap_or_default();
        let scope = watches::watch_namespace(&ctx.settings.namespaces, &namespace);
        let notify = controller.drift.notifier(key.clone());
        let ids = inventories.iter().map(|i| i.inventory.id()).collect();
        let watches = controller.watches.of(&key, scope, ids);
        for inventory in inventories {
            watches
                .ensure(
                    ctx.applier.discovery(),
                    &inventory.inventory.id(),
                    &inventory.kinds(),
                    notify.clone(),
                )
                .await;
        }
    }
}

/// The stored render's objects in the Cluster API version spoken ([`class_version`]).
async fn in_version(
    release: &ClusterStackRelease,
    render: &StoredRender,
) -> Result<Result<class_version::InVersion, ClassVersionError>, Failure> {
    let objects = pipeline::objects_of(render, None).await?;
    let namespace = release.namespace().unwrap_or_default();
    Ok(class_version::in_version(
        objects,
        crate::capi_api::current(),
        &namespace,
        crate::capi_api::v1beta1_served(),
    ))
}

/// Renders the ClusterClass chart on a blocking thread.
async fn render_class(
    ctx: &Context,
    files: &ReleaseFiles,
    policy: &DependencyPolicy,
    namespace: &str,
) -> Result<Parts, Failure> {
    let compiled = pipeline::compile(
        &ctx.sources,
        &ctx.settings.chart_repositories,
        &ctx.metrics,
        files,
        policy,
    )
    .await
    .because("CompileFailed")?
    .release;
    let namespace = namespace.to_string();
    pipeline::blocking("rendering the ClusterClass chart", move || {
        let env = std::rc::Rc::new(capstan_template::funcs::FuncEnv::system());
        let part = compiled.render_class(&namespace, &env)?;
        Ok(vec![(part.name, part.stream)])
    })
    .await
    .because("RenderFailed")
}

fn store_owner(release: &ClusterStackRelease) -> Owner {
    Owner {
        namespace: release.namespace().unwrap_or_default(),
        short_kind: "cskr",
        name: release.name_any(),
        reference: owner_reference(release),
    }
}

/// Names of release inventories: this prefix, then the release's name.
const INVENTORY_PREFIX: &str = "capstan.cskr.";

/// The release whose inventory is named `inventory` (in the release's namespace).
pub fn release_of_inventory(inventory: &str) -> Option<&str> {
    inventory.strip_prefix(INVENTORY_PREFIX)
}

/// The inventory of a release's applied objects (a ConfigMap in its namespace).
pub fn inventory_of(release: &ClusterStackRelease) -> InventoryRef {
    InventoryRef {
        namespace: release.namespace().unwrap_or_default(),
        name: format!("{INVENTORY_PREFIX}{}", release.name_any()),
    }
}

/// Deletion: wait while Clusters use the class, then prune what was applied.
async fn cleanup(release: &ClusterStackRelease, controller: &ReleaseController) -> Result<Action, Error> {
    let ctx = controller.shared.as_ref();
    // What is pruned below is no drift; while Clusters hold the release, nothing is repaired.
    controller.watches.stop(&ObjectRef::from_obj(release));
    let mut progress = Progress::new(release, ctx, steps_of(release, was_verified(release)));
    let namespace = release.namespace().unwrap_or_default();
    if let Some(users) = users(ctx, &namespace, &release.name_any()).await {
        progress.condition(APPLIED, true, users.reason(), users.to_string());
        progress.save().await?;
        return Err(Error::Waiting {
            reason: users.to_string(),
            retry: WAIT_FOR_USERS,
        });
    }
    let inventory = inventory_of(release);
    let pruned = pipeline::prune_all(&ctx.metrics, CONTROLLER, &ctx.applier, inventory)
        .await
        .map_err(|cause| Error::step("Prune", "PruneFailed", cause))?;
    ctx.store
        .remove_all(&store_owner(release))
        .await
        .map_err(|cause| Error::step("Prune", "StoreFailed", cause))?;
    if let Some(reference) = &release.spec.provider_ref {
        super::provider::remove(provider_cluster(ctx), release, reference)
            .await
            .map_err(|cause| Error::step(PROVIDER_READY, "ProviderFailed", cause))?;
    }
    let note = format!("{pruned} object(s) of the release pruned");
    ctx.event(&object_ref(release), false, "Pruned", "Delete", note)
        .await;
    Ok(Action::await_change())
}

/// Why a release being deleted still waits for its Clusters.
enum Users {
    /// These Clusters (`namespace/name`) use the class.
    Using(Vec<String>),
    /// The Clusters could not be listed (without Cluster API none can use the class).
    Unknown(kube::Error),
}

impl Users {
    fn reason(&self) -> &'static str {
        match self {
            Users::Using(_) => "InUse",
            Users::Unknown(_) => "InUseUnknown",
        }
    }
}

impl std::fmt::Display for Users {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Users::Using(users) => write!(
                f,
                "deletion waits: the class is in use by Cluster(s) {}",
                users.join(", ")
            ),
            Users::Unknown(e) => write!(
                f,
                "deletion waits: cannot tell whether a Cluster uses the class: {e}"
            ),
        }
    }
}

/// What keeps release `name` of `namespace` from going, if anything.
async fn users(ctx: &Context, namespace: &str, name: &str) -> Option<Users> {
    match crate::clusters::list(&ctx.client, namespace).await {
        Ok(clusters) => {
            let users = crate::clusters::users_of(&clusters, namespace, name);
            (!users.is_empty()).then_some(Users::Using(users))
        }
        // No Cluster API installed (the resource is not served): no Cluster can use the class.
        Err(e) if is_not_found(&e) => None,
        Err(e) => Some(Users::Unknown(e)),
    }
}

/// The management cluster as the provider's part of a release needs it.
fn provider_cluster(ctx: &Context) -> super::provider::Cluster<'_> {
    super::provider::Cluster {
        client: &ctx.client,
        discovery: ctx.applier.discovery(),
    }
}

/// ClusterStackReleases, woken by drift of what they applied.
pub fn controller(wiring: &Wiring<'_>) -> Running {
    let Some(releases_writer) = wiring.releases_writer.take() else {
        return futures::future::ready(()).boxed();
    };
    let controller = Arc::new(ReleaseController::new(wiring.ctx.clone()));
    let watches = Arc::downgrade(&controller);
    let _ = wiring.census.management_watches.set(Box::new(move || {
        watches
            .upgrade()
            .map_or(0, |releases| releases.watches.watch_count())
    }));
    // A release that left the watch (deleted, its finalizer gone, or moved to another shard
    // or namespace) stops its drift watches: no reconcile of it will.
    let gone = controller.clone();
    let release_events = changed(
        wiring
            .releases()
            .reflect(releases_writer)
            .inspect_ok(move |event| {
                if let watcher::Event::Delete(release) = event {
                    gone.watches.stop(&ObjectRef::from_obj(release));
                }
            }),
        spec_or_deletion::<ClusterStackRelease>,
        false,
    );
    // A key only (no request): the watch follows the Cluster API version spoken.
    let class_resource =
        crate::capi_api::cluster_class_resource_of(capstan_stack::capi::CapiVersion::V1Beta2);
    // With drift watches the ClusterClass is one of the kinds each release's watches follow,
    // and they tell capstan's own applies from drift; this watch, which marks its release on
    // any change, is the mechanism only without them.
    let applied_classes = if wiring.settings.drift_watches {
        futures::stream::empty().boxed()
    } else {
        let managed = watcher::Config::default().labels(&format!("{MANAGED_LABEL}={MANAGED}"));
        let class_of = crate::capi_api::cluster_class_resource_of;
        crate::watch::capi_watch(&wiring.client, &wiring.scope, class_of, managed)
            .touched_objects()
            .boxed()
    };
    let suspects = controller.clone();
    Controller::for_stream(release_events, wiring.releases_store.clone())
        .watches_stream_with(
            applied_classes,
            move |class: DynamicObject| {
                let owner = release_of_applied(&class);
                if let Some(release) = &owner {
                    suspects.drift.suspect(release.clone());
                }
                owner
            },
            class_resource,
        )
        // Drift watches on the releases' objects wake their release.
        .reconcile_on(controller.drift.wake_ups())
        // Cluster API served again (or another version): each waits no longer.
        .reconcile_all_on(crate::capi_api::chosen_anew())
        .with_config(wiring.concurrency.clone())
        .graceful_shutdown_on(wiring.shutdown.clone())
        .run(in_scope(reconcile, &wiring.scope), error_policy, controller)
        .for_each(|_| futures::future::ready(()))
        .boxed()
}

/// The release whose inventory an applied object carries (`capstan.dev/inventory:
/// <namespace>/capstan.cskr.<release>`).
fn release_of_applied(object: &DynamicObject) -> Option<ObjectRef<ClusterStackRelease>> {
    let inventory = object.meta().annotations.as_ref()?.get(INVENTORY_ANNOTATION)?;
    let (namespace, name) = inventory.split_once('/')?;
    let release = release_of_inventory(name)?;
    Some(ObjectRef::new(release).within(namespace))
}
