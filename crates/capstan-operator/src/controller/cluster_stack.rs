//! The ClusterStack controller: lists every release of the stack's source (all pages, with
//! conditional requests, at most once per `spec.interval`), keeps those of the stack's
//! provider, name, Kubernetes version and channel, creates a ClusterStackRelease for the
//! latest one (when subscribed) and for each `spec.versions` entry, and deletes the releases it
//! owns that are none of: the latest remote, the latest ready, wanted in spec, used by a
//! Cluster or needed by a ClusterStackRollout. The status reports the latest release, the usable versions and one summary line
//! per release.
//!
//! A ClusterStack being deleted deletes its releases (each prunes its own objects once no
//! Cluster uses it); the API server of a management cluster may run no garbage collector.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;

use super::progress::{StatusEvent, Tracked};
use super::{Cause, Error, object_ref, owner_reference, stack_name_of};
use crate::api::conditions::{self, Condition, READY};
use crate::api::rollout::ClusterStackRollout;
use crate::api::{
    Channel, ClusterStack, ClusterStackRelease, ClusterStackReleaseSpec, ClusterStackStatus, ReleaseSummary,
};
use crate::context::Context;
use crate::wiring::{Running, Wiring, in_scope};
use capstan_stack::name::{ReleaseTag, StackName};
use capstan_stack::version::Version;
use futures::{FutureExt, StreamExt};
use kube::runtime::Controller;
use kube::runtime::WatchStreamExt;

mod polls;
mod retention;

pub const FINALIZER: &str = "clusterstack.x-k8s.io/capstan-stack";
pub const CONTROLLER: &str = "clusterstack";

/// Condition: the source's releases were listed.
pub const SOURCE_READY: &str = "SourceReady";
/// Condition: every wanted release is ready.
pub const RELEASES_READY: &str = "ReleasesReady";

/// Label on the releases a ClusterStack creates: the stack's name.
pub const STACK_LABEL: &str = "clusterstack.x-k8s.io/cluster-stack";

/// Reconciles one ClusterStack through its finalizer ([`super::reconcile`]).
pub async fn reconcile(object: Arc<ClusterStack>, controller: Arc<StackController>) -> Result<Action, Error> {
    super::reconcile(object, controller).await
}

pub use super::error_policy;

impl super::Finalized for ClusterStack {
    const FINALIZER: &'static str = FINALIZER;
    type Controller = StackController;

    fn apply(
        &self,
        controller: &StackController,
    ) -> impl std::future::Future<Output = Result<Action, Error>> + Send {
        apply(self, controller)
    }

    fn cleanup(
        &self,
        controller: &StackController,
    ) -> impl std::future::Future<Output = Result<Action, Error>> + Send {
        cleanup(self, controller)
    }
}

impl super::Reconciler for StackController {
    fn shared(&self) -> &Context {
        &self.shared
    }

    fn failures(&self) -> &super::failures::Failures {
        &self.failures
    }
}

type Progress<'a> = super::progress::Progress<'a, ClusterStack>;

/// The ClusterStack controller's state: the shared context, its failures and the last
/// listing of each stack's source.
pub struct StackController {
    pub shared: Arc<Context>,
    failures: super::failures::Failures,
    polls: polls::Polls,
}

impl StackController {
    pub fn new(shared: Arc<Context>) -> StackController {
        StackController {
            shared,
            failures: Default::default(),
            polls: Default::default(),
        }
    }
}

impl Tracked for ClusterStack {
    const CONTROLLER: &'static str = CONTROLLER;
    type Status = ClusterStackStatus;

    fn status_of(&self) -> Option<&ClusterStackStatus> {
        self.status.as_ref()
    }

    fn conditions_mut(status: &mut ClusterStackStatus) -> &mut Vec<Condition> {
        &mut status.conditions
    }

    /// A ClusterStack's readiness is its `Ready` condition alone.
    fn ready(status: &ClusterStackStatus) -> bool {
        conditions::is_true(&status.conditions, READY)
    }

    fn set_ready(_status: &mut ClusterStackStatus, _ready: bool) {}

    fn ready_note(&self, status: &ClusterStackStatus) -> String {
        ready_message(status)
    }

    /// Every state entered is an Event (failures as warnings, the wait for releases not), and
    /// so is a change of `Ready` either way.
    fn status_events(&self, before: &ClusterStackStatus, after: &ClusterStackStatus) -> Vec<StatusEvent> {
        let mut events: Vec<StatusEvent> = conditions::entered(&before.conditions, &after.conditions)
            .into_iter()
            .map(|c| StatusEvent {
                warning: c.reason != "ReleasesNotReady",
                reason: c.reason.clone(),
                action: "Reconcile",
                note: c.message.clone(),
            })
            .collect();
        let ready = Self::ready(after);
        if Self::ready(before) != ready {
            events.push(StatusEvent {
                warning: !ready,
                reason: if ready { "Ready" } else { "NotReady" }.into(),
                action: "Reconcile",
                note: ready_message(after),
            });
        }
        events
    }
}

/// Whether the release reports ready.
fn is_ready(release: &ClusterStackRelease) -> bool {
    release.status.as_ref().is_some_and(|s| s.ready)
}

/// The note of a `Ready`/`NotReady` Event: the `Ready` condition's message, or (when ready,
/// where it has none) what the conditions it summarises say.
fn ready_message(status: &ClusterStackStatus) -> String {
    let ready = conditions::find(&status.conditions, READY);
    match ready.map(|c| c.message.as_str()) {
        Some(m) if !m.is_empty() => m.to_string(),
        _ => [SOURCE_READY, RELEASES_READY]
            .iter()
            .filter_map(|t| conditions::find(&status.conditions, t))
            .map(|c| c.message.as_str())
            .filter(|m| !m.is_empty())
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// What a ClusterStack's spec asks for, read.
struct Spec {
    stack_name: StackName,
    interval: Duration,
    /// The releases of `spec.versions`.
    versions: Vec<ReleaseTag>,
}

/// Why a ClusterStack's spec asks for nothing usable (the `SourceReady` message).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct InvalidSpec(String);

fn spec_of(stack: &ClusterStack) -> Result<Spec, InvalidSpec> {
    let Some(stack_name) = stack_name_of(stack) else {
        return Err(InvalidSpec(format!(
            "provider {:?}, name {:?} and kubernetesVersion {:?} do not make a stack name",
            stack.spec.provider, stack.spec.name, stack.spec.kubernetes_version
        )));
    };
    let interval = stack.spec.interval().map_err(|e| InvalidSpec(e.to_string()))?;
    let versions = stack
        .spec
        .versions
        .iter()
        .map(|text| {
            Version::parse(text).map(|v| stack_name.release(v)).map_err(|e| {
                InvalidSpec(format!(
                    "spec.versions: {text:?} is not a stack version: {}",
                    e.problem
                ))
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(Spec {
        stack_name,
        interval,
        versions,
    })
}

async fn apply(stack: &ClusterStack, controller: &StackController) -> Result<Action, Error> {
    let (ctx, polls) = (controller.shared.as_ref(), &controller.polls);
    let mut progress = Progress::new(stack, ctx, &[SOURCE_READY, RELEASES_READY]);
    let spec = match spec_of(stack) {
        Ok(spec) => spec,
        Err(invalid) => {
            progress.condition(SOURCE_READY, false, "InvalidSpec", invalid.to_string());
            progress.save().await?;
            return Ok(Action::await_change());
        }
    };
    // 1. The source's releases of this stack (polled at most once per interval).
    let listing = match list_source(stack, ctx, polls, spec.interval, &spec.versions).await {
        Ok(listing) => listing,
        Err(cause) => return Err(progress.fail(SOURCE_READY, "ListFailed", cause).await),
    };
    let (remote, latest) = listed(&mut progress, &spec, &listing);
    // 2. The releases wanted: the latest (when subscribed) and the spec's.
    let mut wanted: BTreeSet<String> = spec
        .versions
        .iter()
        .filter(|t| remote.contains(t))
        .map(ReleaseTag::tag)
        .collect();
    if stack.spec.auto_subscribe
        && let Some(latest) = &latest
    {
        wanted.insert(latest.tag());
    }
    let releases_api: Api<ClusterStackRelease> =
        Api::namespaced(ctx.client.clone(), &stack.namespace().unwrap_or_default());
    let owned = owned_releases(stack, &releases_api).await?;
    follow_shard(stack, &releases_api, &owned).await?;
    for tag in &wanted {
        if !owned.contains_key(tag) {
            create_release(stack, ctx, &releases_api, tag, &spec.stack_name.to_string()).await?;
        }
    }
    // 3. Releases no longer wanted go, unless a Cluster or a rollout uses them or they are
    //    the latest ready one (what new Clusters can use while a newer release gets ready).
    //    The rollouts are read only when some release is unwanted.
    let latest_tag = latest.as_ref().map(ReleaseTag::tag);
    let not_read_yet = BTreeSet::new();
    let policy = retention::Policy {
        wanted: &wanted,
        latest_remote: latest_tag.as_deref(),
        newest_ready: 1,
        in_use_by_rollouts: &not_read_yet,
    };
    prune_releases(stack, ctx, &releases_api, &owned, &policy).await?;
    // 4. Status from the releases as they are now.
    let owned = owned_releases(stack, &releases_api).await?;
    report(&mut progress, &owned, &wanted);
    progress.save().await?;
    Ok(Action::requeue(next_poll(polls, stack, spec.interval)))
}

/// The listed releases of the stack on its channel, oldest first, and the latest; recorded
/// in `SourceReady` (with the spec's versions the source lacks) and `latestRelease`.
fn listed(
    progress: &mut Progress<'_>,
    spec: &Spec,
    listing: &[ReleaseTag],
) -> (Vec<ReleaseTag>, Option<ReleaseTag>) {
    let (stack_name, channel) = (&spec.stack_name, progress.object.spec.channel);
    let mut remote: Vec<ReleaseTag> = listing
        .iter()
        .filter(|t| t.stack() == stack_name && on_channel(t.version(), channel))
        .cloned()
        .collect();
    remote.sort_by(|a, b| a.version().cmp(b.version()));
    let latest = remote.last().cloned();
    let missing: Vec<String> = spec
        .versions
        .iter()
        .filter(|t| !remote.contains(t))
        .map(ReleaseTag::tag)
        .collect();
    let (reason, message) = match (&latest, missing.is_empty()) {
        (None, _) => (
            "NoRelease",
            format!("the source has no release of {stack_name} on channel {channel}"),
        ),
        (Some(latest), true) => (
            "Listed",
            format!("{} matching release(s), latest {latest}", remote.len()),
        ),
        (Some(latest), false) => (
            "VersionMissing",
            format!(
                "{} matching release(s), latest {latest}; not in the source: {}",
                remote.len(),
                missing.join(", ")
            ),
        ),
    };
    progress.condition(SOURCE_READY, reason == "Listed", reason, message);
    progress.status.latest_release = latest.as_ref().map(ReleaseTag::tag);
    (remote, latest)
}

/// Deletes the owned releases [`retention`] does not keep; the Clusters are listed only
/// when some release is unwanted.
async fn prune_releases(
    stack: &ClusterStack,
    ctx: &Context,
    api: &Api<ClusterStackRelease>,
    owned: &BTreeMap<String, ClusterStackRelease>,
    policy: &retention::Policy<'_>,
) -> Result<(), Error> {
    let releases: Vec<retention::Owned> = owned
        .iter()
        .map(|(name, release)| retention::Owned {
            name: name.clone(),
            version: ReleaseTag::parse(name).ok().map(|t| t.version().clone()),
            ready: is_ready(release),
        })
        .collect();
    if retention::unwanted(&releases, policy).is_empty() {
        return Ok(());
    }
    let namespace = stack.namespace().unwrap_or_default();
    let Some(in_use_by_rollouts) = rollouts_need(ctx, stack, &namespace).await else {
        return Ok(());
    };
    let policy = retention::Policy {
        in_use_by_rollouts: &in_use_by_rollouts,
        ..*policy
    };
    let unwanted = retention::unwanted(&releases, &policy);
    if unwanted.is_empty() {
        return Ok(());
    }
    let used = match crate::clusters::list(&ctx.client, &namespace).await {
        Ok(clusters) => Some(crate::clusters::releases_in_use(&clusters, &namespace)),
        Err(e) => {
            tracing::warn!(stack = %super::key_of(stack), error = %e, "not deleting releases: listing Clusters failed");
            None
        }
    };
    for name in retention::to_delete(&unwanted, used.as_ref()) {
        delete_release(stack, ctx, api, &name).await?;
    }
    Ok(())
}

/// The releases the ClusterStackRollouts of the stack need ([`retention::in_use_by_rollouts`]);
/// none when their kind is not installed, `None` (delete nothing) when they cannot be read.
async fn rollouts_need(ctx: &Context, stack: &ClusterStack, namespace: &str) -> Option<BTreeSet<String>> {
    let api: Api<ClusterStackRollout> = Api::namespaced(ctx.client.clone(), namespace);
    match api.list(&ListParams::default()).await {
        Ok(list) => Some(retention::in_use_by_rollouts(&list.items, &stack.name_any())),
        Err(e) if crate::kube_error::is_not_found(&e) => Some(BTreeSet::new()),
        Err(e) => {
            tracing::warn!(stack = %super::key_of(stack), error = %e, "not deleting releases: listing ClusterStackRollouts failed");
            None
        }
    }
}

/// The status from the owned releases: a summary line each, the usable versions, and
/// `ReleasesReady` for the `wanted` ones.
fn report(
    progress: &mut Progress<'_>,
    owned: &BTreeMap<String, ClusterStackRelease>,
    wanted: &BTreeSet<String>,
) {
    progress.status.summary = owned.values().map(summary_of).collect();
    let mut usable: Vec<Version> = owned
        .values()
        .filter(|r| is_ready(r))
        .filter_map(|r| ReleaseTag::parse(&r.name_any()).ok())
        .map(|t| t.version().clone())
        .collect();
    usable.sort();
    progress.status.usable_versions = (!usable.is_empty()).then(|| {
        let texts: Vec<String> = usable.iter().map(Version::to_string).collect();
        texts.join(", ")
    });
    let not_ready: Vec<&String> = wanted
        .iter()
        .filter(|tag| !owned.get(*tag).is_some_and(is_ready))
        .collect();
    let message = if wanted.is_empty() {
        "no release is wanted (autoSubscribe is off and spec.versions is empty)".to_string()
    } else if not_ready.is_empty() {
        format!("{} release(s) ready", wanted.len())
    } else {
        let details: Vec<String> = not_ready
            .iter()
            .map(|tag| match owned.get(*tag) {
                Some(r) => format!("{tag}: {}", waiting_detail(&summary_of(r))),
                None => format!("{tag}: not created yet"),
            })
            .collect();
        format!("waiting for {}", details.join("; "))
    };
    let ready = not_ready.is_empty();
    let reason = if ready { "Ready" } else { "ReleasesNotReady" };
    progress.condition(RELEASES_READY, ready, reason, message);
}

fn on_channel(version: &Version, channel: Channel) -> bool {
    match channel {
        Channel::Stable => !version.is_hash(),
        Channel::Custom => version.is_hash(),
    }
}

fn poll_key(stack: &ClusterStack) -> String {
    format!("{}/{}", stack.namespace().unwrap_or_default(), stack.name_any())
}

/// Time until the stack's source is due for its next poll.
fn next_poll(polls: &polls::Polls, stack: &ClusterStack, interval: Duration) -> Duration {
    let last = polls.last(&poll_key(stack));
    match last {
        Some((at, _)) => interval.saturating_sub(at.elapsed()).max(Duration::from_secs(1)),
        None => interval,
    }
}

/// The source's release tags: the listing of the last poll while it is younger than
/// `interval` and has every wanted tag, else a new poll.
async fn list_source(
    stack: &ClusterStack,
    ctx: &Context,
    polls: &polls::Polls,
    interval: Duration,
    wanted: &[ReleaseTag],
) -> Result<Vec<ReleaseTag>, Cause> {
    let key = poll_key(stack);
    let source = super::resolve_source(stack, ctx).await?;
    let source_id = source.describe();
    if let Some((at, (id, tags))) = polls.last(&key)
        && id == source_id
        && at.elapsed() < interval
        && wanted.iter().all(|t| tags.contains(t))
    {
        return Ok(tags);
    }
    let tags = ctx.sources.list(&source).await;
    ctx.metrics.source_polled(source.kind(), tags.is_ok());
    let tags = tags?;
    polls.record(&key, source_id, tags.clone());
    Ok(tags)
}

/// The releases of the namespace this stack owns, by name.
async fn owned_releases(
    stack: &ClusterStack,
    api: &Api<ClusterStackRelease>,
) -> Result<BTreeMap<String, ClusterStackRelease>, Error> {
    let uid = stack.uid().unwrap_or_default();
    let list = api
        .list(&ListParams::default())
        .await
        .map_err(|e| Error::kube("listing ClusterStackReleases", e))?;
    Ok(list
        .items
        .into_iter()
        .filter(|r| r.owner_references().iter().any(|o| o.uid == uid))
        .map(|r| (r.name_any(), r))
        .collect())
}

/// Moves the releases `stack` owns into its shard (a relabelled ClusterStack hands its
/// releases to the new shard's operator).
async fn follow_shard(
    stack: &ClusterStack,
    api: &Api<ClusterStackRelease>,
    owned: &BTreeMap<String, ClusterStackRelease>,
) -> Result<(), Error> {
    for (name, release) in owned {
        if let Some(patch) = crate::shard::follow_owner(&stack.metadata, &release.metadata) {
            api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(|e| {
                    Error::kube(
                        format!("moving ClusterStackRelease {name} to the stack's shard"),
                        e,
                    )
                })?;
        }
    }
    Ok(())
}

async fn create_release(
    stack: &ClusterStack,
    ctx: &Context,
    api: &Api<ClusterStackRelease>,
    tag: &str,
    stack_name: &str,
) -> Result<(), Error> {
    let provider_ref = if stack.spec.no_provider {
        None
    } else {
        stack.spec.provider_ref.clone()
    };
    let release = ClusterStackRelease {
        metadata: ObjectMeta {
            name: Some(tag.to_string()),
            namespace: stack.namespace(),
            labels: Some(crate::shard::with_owner_shard(
                BTreeMap::from([
                    (STACK_LABEL.to_string(), stack_name.to_string()),
                    (
                        capstan_apply::ssa::MANAGED_BY_LABEL.to_string(),
                        capstan_apply::ssa::MANAGED_BY.to_string(),
                    ),
                ]),
                &stack.metadata,
            )),
            owner_references: Some(vec![owner_reference(stack)]),
            ..ObjectMeta::default()
        },
        spec: ClusterStackReleaseSpec { provider_ref },
        status: None,
    };
    match api.create(&PostParams::default(), &release).await {
        Ok(created) => {
            // About the new release too: one Event per release, not a series under the first.
            ctx.event_related(
                &object_ref(stack),
                Some(object_ref(&created)),
                false,
                "ReleaseCreated",
                "Subscribe",
                format!("created ClusterStackRelease {tag}"),
            )
            .await;
            Ok(())
        }
        Err(e) if crate::kube_error::is_conflict(&e) => Ok(()),
        Err(e) => Err(Error::kube(format!("creating ClusterStackRelease {tag}"), e)),
    }
}

async fn delete_release(
    stack: &ClusterStack,
    ctx: &Context,
    api: &Api<ClusterStackRelease>,
    name: &str,
) -> Result<(), Error> {
    match api.delete(name, &DeleteParams::default()).await {
        Ok(either) => {
            // Already being deleted (waiting for its finalizer): no new event.
            if let Some(deleted) = either.left() {
                ctx.event_related(
                    &object_ref(stack),
                    Some(object_ref(&deleted)),
                    false,
                    "ReleaseDeleted",
                    "Unsubscribe",
                    format!("deleting ClusterStackRelease {name}: no longer wanted nor used"),
                )
                .await;
            }
            Ok(())
        }
        Err(e) if crate::kube_error::is_not_found(&e) => Ok(()),
        Err(e) => Err(Error::kube(format!("deleting ClusterStackRelease {name}"), e)),
    }
}

/// What a release that is not ready is doing: its message, else its phase.
fn waiting_detail(summary: &ReleaseSummary) -> String {
    if summary.message.is_empty() {
        format!("phase {}", summary.phase)
    } else {
        summary.message.clone()
    }
}

fn summary_of(release: &ClusterStackRelease) -> ReleaseSummary {
    let status = release.status.clone().unwrap_or_default();
    let ready = conditions::find(&status.conditions, READY);
    let phase = if release.metadata.deletion_timestamp.is_some() {
        "deleting".to_string()
    } else if status.ready {
        "done".to_string()
    } else {
        ready.map_or_else(|| "pending".to_string(), |c| c.reason.clone())
    };
    ReleaseSummary {
        name: release.name_any(),
        ready: status.ready,
        phase,
        message: ready.map(|c| c.message.clone()).unwrap_or_default(),
    }
}

/// Deletion: the stack's releases are deleted (each waits for its Clusters and prunes).
async fn cleanup(stack: &ClusterStack, controller: &StackController) -> Result<Action, Error> {
    let ctx = controller.shared.as_ref();
    let namespace = stack.namespace().unwrap_or_default();
    let api: Api<ClusterStackRelease> = Api::namespaced(ctx.client.clone(), &namespace);
    for name in owned_releases(stack, &api).await?.keys() {
        delete_release(stack, ctx, &api, name).await?;
    }
    controller.polls.forget(&poll_key(stack));
    Ok(Action::await_change())
}

/// ClusterStacks, woken by their releases (see [`crate::wiring`]).
pub fn controller(wiring: &Wiring<'_>) -> Running {
    let Some(stack_events) = wiring.stack_events.take() else {
        return futures::future::ready(()).boxed();
    };
    Controller::for_stream(stack_events, wiring.ctx.stacks.clone())
        .owns_stream(wiring.releases().touched_objects())
        .with_config(wiring.concurrency.clone())
        .graceful_shutdown_on(wiring.shutdown.clone())
        .run(
            in_scope(reconcile, &wiring.scope),
            error_policy,
            Arc::new(StackController::new(wiring.ctx.clone())),
        )
        .for_each(|_| futures::future::ready(()))
        .boxed()
}
