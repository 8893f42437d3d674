//! The ClusterStackRelease controller: downloads a release through the verified cache,
//! renders its ClusterClass chart once per input (release digest, namespace, capstan's
//! version) into the render store, server-side-applies the stored manifest to the management
//! cluster, records per-object status, and re-checks drift at least every drift interval.
//!
//! Each step records in status what it did before the next starts (`releaseDigest`,
//! `appliedInputs` + `appliedRevision`, `lastReconciled`), so a restarted operator neither
//! downloads, renders nor applies again what is recorded complete: it only checks drift when
//! the interval says so. On deletion it waits while a Cluster uses the class, then prunes
//! everything it applied (the cluster-stack operator orphans it).

use std::sync::Arc;
use std::time::Duration;

use kube::ResourceExt;
use kube::api::{Api, DeleteParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use sha2::{Digest, Sha256};

use super::{Error, backoff, now, object_ref, owner_reference};
use crate::api::conditions::Condition;
use crate::api::{ClusterStack, ClusterStackRelease, ClusterStackReleaseStatus};
use crate::context::Context;
use crate::metrics::ObjectOutcome;
use crate::sources::{Fetched, Resolved};
use crate::store::{Owner, StoredRender};
use capstan_apply::{ApplyOptions, InventoryRef, PruneScope, parse_stream};
use capstan_stack::name::ReleaseTag;

/// Finalizer: the release's objects are pruned before it goes.
pub const FINALIZER: &str = "clusterstack.x-k8s.io/capstan-release";
/// Name of this controller in metrics.
pub const CONTROLLER: &str = "clusterstackrelease";

pub const DOWNLOADED: &str = "Downloaded";
pub const RENDERED: &str = "Rendered";
pub const APPLIED: &str = "Applied";
pub const PROVIDER_READY: &str = "ProviderReady";
const STEPS: [&str; 3] = [DOWNLOADED, RENDERED, APPLIED];
const STEPS_WITH_PROVIDER: [&str; 4] = [DOWNLOADED, PROVIDER_READY, RENDERED, APPLIED];

/// How long to wait before looking again at a release whose ClusterStack is not (yet) known.
const WAIT_FOR_STACK: Duration = Duration::from_secs(5);
/// How often a release being deleted looks again whether Clusters still use it.
const WAIT_FOR_USERS: Duration = Duration::from_secs(15);

/// Reconciles one ClusterStackRelease.
pub async fn reconcile(release: Arc<ClusterStackRelease>, ctx: Arc<Context>) -> Result<Action, Error> {
    let key = key_of(&release);
    let ctx: &Context = &ctx;
    super::with_finalizer(
        release,
        ctx,
        (FINALIZER, CONTROLLER),
        key,
        |release| async move { apply(&release, ctx).await },
        |release| async move { cleanup(&release, ctx).await },
    )
    .await
}

/// Requeue after a failed reconcile: capped exponential backoff per object.
pub fn error_policy(release: Arc<ClusterStackRelease>, error: &Error, ctx: Arc<Context>) -> Action {
    tracing::warn!(release = %key_of(&release), %error, "reconcile failed");
    Action::requeue(backoff(&ctx, &key_of(&release)))
}

fn key_of(release: &ClusterStackRelease) -> String {
    format!(
        "ClusterStackRelease/{}/{}",
        release.namespace().unwrap_or_default(),
        release.name_any()
    )
}

type Progress<'a> = super::progress::Progress<'a, ClusterStackRelease>;

impl super::progress::Tracked for ClusterStackRelease {
    type Status = ClusterStackReleaseStatus;

    fn status_of(&self) -> Option<&ClusterStackReleaseStatus> {
        self.status.as_ref()
    }

    fn conditions_mut(status: &mut ClusterStackReleaseStatus) -> &mut Vec<Condition> {
        &mut status.conditions
    }

    fn ready(status: &ClusterStackReleaseStatus) -> bool {
        status.ready
    }

    fn set_ready(status: &mut ClusterStackReleaseStatus, ready: bool) {
        status.ready = ready;
    }

    fn ready_note(&self, status: &ClusterStackReleaseStatus) -> String {
        format!(
            "ClusterClass {} applied ({} objects)",
            self.name_any(),
            status.resources.len()
        )
    }
}

/// The conditions a release's `Ready` summarises.
fn steps_of(release: &ClusterStackRelease) -> &'static [&'static str] {
    if release.spec.provider_ref.is_some() {
        &STEPS_WITH_PROVIDER
    } else {
        &STEPS
    }
}

async fn apply(release: &ClusterStackRelease, ctx: &Context) -> Result<Action, Error> {
    let mut progress = Progress::new(release, ctx, steps_of(release));
    let name = release.name_any();
    let namespace = release.namespace().unwrap_or_default();
    let tag = match ReleaseTag::parse(&name) {
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
    let stack = match find_stack(release, &tag, ctx) {
        StackLookup::Found(stack) => stack,
        StackLookup::NotYetKnown(which) => {
            tracing::debug!(release = %name, stack = %which, "ClusterStack not in the cache yet");
            return Ok(Action::requeue(WAIT_FOR_STACK));
        }
        StackLookup::None => {
            let message = format!(
                "no ClusterStack in namespace {namespace} follows {}; the release has no source",
                tag.stack()
            );
            return Err(progress.fail(DOWNLOADED, "NoClusterStack", message).await);
        }
    };
    let source = match super::resolve_source(&stack, ctx).await {
        Ok(source) => source,
        Err(message) => return Err(progress.fail(DOWNLOADED, "SourceUnavailable", message).await),
    };

    // 2. Download (nothing is sent when the cache holds the release complete).
    let fetched = match ctx.sources.fetch(&source, &tag).await {
        Ok(fetched) => fetched,
        Err(e) => return Err(progress.fail(DOWNLOADED, "DownloadFailed", e.to_string()).await),
    };
    let digest = match fetched.digest() {
        Ok(digest) => digest,
        Err(e) => return Err(progress.fail(DOWNLOADED, "DownloadFailed", e.to_string()).await),
    };
    progress.status.release_digest = Some(digest.clone());
    progress.condition(
        DOWNLOADED,
        true,
        "Downloaded",
        format!(
            "{} verified in the cache (digest {})",
            source.describe(),
            &digest[..12]
        ),
    );
    progress.save().await?;

    // The provider's part of the release (`<X>ClusterStackRelease`), when it has one.
    if let Some(reference) = &release.spec.provider_ref {
        match super::provider::ensure(ctx, release, reference).await {
            Ok(super::provider::State::Ready(what)) => {
                progress.condition(PROVIDER_READY, true, "Ready", format!("{what} is ready"));
            }
            Ok(super::provider::State::Waiting(why)) => {
                progress.condition(PROVIDER_READY, false, "Waiting", why);
                progress.save().await?;
                return Ok(Action::requeue(WAIT_FOR_STACK));
            }
            Err(message) => return Err(progress.fail(PROVIDER_READY, "ProviderFailed", message).await),
        }
    }

    // 3. Render, only when the inputs changed since the stored render.
    let inputs = inputs_hash(&digest, &namespace);
    let owner = store_owner(release);
    let stored = match ctx.store.latest(&owner).await {
        Ok(stored) => stored.filter(|s| s.inputs == inputs),
        Err(e) => return Err(progress.fail(RENDERED, "StoreUnavailable", e.to_string()).await),
    };
    let render = match stored {
        Some(render) => render,
        None => match render_class(ctx, &source, &fetched, &digest, &namespace).await {
            Ok((parts, kubernetes)) => {
                progress.status.kubernetes_version = Some(kubernetes);
                match ctx.store.save(&owner, &inputs, parts).await {
                    Ok(render) => {
                        ctx.event(
                            &object_ref(release),
                            false,
                            "Rendered",
                            "Render",
                            format!(
                                "ClusterClass chart rendered, stored as revision {}",
                                render.revision
                            ),
                        )
                        .await;
                        render
                    }
                    Err(e) => return Err(progress.fail(RENDERED, "StoreFailed", e.to_string()).await),
                }
            }
            Err(message) => return Err(progress.fail(RENDERED, "RenderFailed", message).await),
        },
    };
    progress.condition(
        RENDERED,
        true,
        "Rendered",
        format!("revision {} of the rendered ClusterClass chart", render.revision),
    );
    if progress.status.kubernetes_version.is_none()
        && let Ok(compiled_kube) = kubernetes_of(ctx, &source, &fetched, &digest).await
    {
        progress.status.kubernetes_version = Some(compiled_kube);
    }

    // 4. Apply, or only check drift when the manifest was applied in full before.
    let this = ObjectRef::from_obj(release);
    let applied_before = progress.status.applied_inputs.as_deref() == Some(inputs.as_str());
    let suspect = ctx.take_drift_suspect(&this);
    if applied_before
        && !suspect
        && let Some(wait) = super::drift_wait(progress.status.last_reconciled.as_ref(), ctx)
    {
        progress.save().await?;
        return Ok(Action::requeue(wait));
    }
    apply_render(&mut progress, &render, &inputs, applied_before).await?;
    Ok(Action::requeue(super::drift_requeue(ctx)))
}

async fn apply_render(
    progress: &mut Progress<'_>,
    render: &StoredRender,
    inputs: &str,
    drift_pass: bool,
) -> Result<(), Error> {
    let release = progress.object;
    let ctx = progress.ctx;
    let namespace = release.namespace().unwrap_or_default();
    let objects = match parse_stream(
        &render.manifest(),
        &format!("render revision {}", render.revision),
    ) {
        Ok(objects) => objects,
        Err(e) => return Err(progress.fail(APPLIED, "InvalidManifest", e.to_string()).await),
    };
    let options = ApplyOptions {
        namespace: namespace.clone(),
        inventory: Some(inventory_of(release)),
        prune: true,
        concurrency: 8,
        ..ApplyOptions::default()
    };
    let report = match ctx.applier.apply(&objects, &options).await {
        Ok(report) => report,
        Err(e) => return Err(progress.fail(APPLIED, "ApplyFailed", e.to_string()).await),
    };
    let outcome = super::report::record(ctx, CONTROLLER, &object_ref(release), &report, drift_pass).await;
    progress.status.resources = outcome.resources.clone();
    if let Some(message) = outcome.failure.clone() {
        return Err(progress.fail(APPLIED, "ApplyFailed", message).await);
    }
    progress.status.applied_inputs = Some(inputs.to_string());
    progress.status.applied_revision = Some(i64::from(render.revision));
    progress.status.last_reconciled = Some(now());
    progress.condition(
        APPLIED,
        true,
        "Applied",
        format!("{} from revision {}", outcome.summary(), render.revision),
    );
    progress.save().await
}

/// Renders the ClusterClass chart on a blocking thread; returns the parts and the release's
/// Kubernetes version.
async fn render_class(
    ctx: &Context,
    source: &Resolved,
    fetched: &Fetched,
    digest: &str,
    namespace: &str,
) -> Result<(Vec<(String, String)>, String), String> {
    let compiled = compiled_release(ctx, source, fetched, digest).await?;
    let namespace = namespace.to_string();
    tokio::task::spawn_blocking(move || {
        let env = std::rc::Rc::new(capstan_template::funcs::FuncEnv::system());
        let part = compiled
            .render_class(&namespace, &env)
            .map_err(|e| e.to_string())?;
        Ok((vec![(part.name, part.stream)], compiled.kubernetes().to_string()))
    })
    .await
    .map_err(|e| format!("rendering: {e}"))?
}

async fn kubernetes_of(
    ctx: &Context,
    source: &Resolved,
    fetched: &Fetched,
    digest: &str,
) -> Result<String, String> {
    Ok(compiled_release(ctx, source, fetched, digest)
        .await?
        .kubernetes()
        .to_string())
}

pub(super) async fn compiled_release(
    ctx: &Context,
    source: &Resolved,
    fetched: &Fetched,
    digest: &str,
) -> Result<Arc<capstan_stack::render::CompiledRelease>, String> {
    let cache = ctx.sources.cache().clone();
    let fetched = fetched.clone();
    let describe = source.describe();
    let repositories = ctx.settings.chart_repositories.clone();
    ctx.compiled(digest, move || {
        let opened = fetched.open(&cache).map_err(|e| format!("{describe}: {e}"))?;
        // The charts' missing dependencies, as the reference operator's `--dependency-update`,
        // through the shared cache.
        let resolver = capstan_source::charts::ChartResolver::new(cache.clone(), repositories)?;
        capstan_stack::render::CompiledRelease::with_resolver(&opened.release, Some(&resolver))
            .map_err(|e| e.to_string())
    })
    .await
}

/// The hash of everything a ClusterClass render depends on.
fn inputs_hash(digest: &str, namespace: &str) -> String {
    let mut hasher = Sha256::new();
    for part in ["cluster-class", env!("CARGO_PKG_VERSION"), digest, namespace] {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    capstan_source::cache::hex(&hasher.finalize())
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

pub(super) enum StackLookup {
    Found(Arc<ClusterStack>),
    /// An owner is named but the watch has not delivered it yet.
    NotYetKnown(String),
    None,
}

pub(super) fn find_stack(release: &ClusterStackRelease, tag: &ReleaseTag, ctx: &Context) -> StackLookup {
    let namespace = release.namespace().unwrap_or_default();
    let owner = release
        .owner_references()
        .iter()
        .find(|o| o.kind == "ClusterStack" && o.api_version.starts_with("clusterstack.x-k8s.io/"));
    if let Some(owner) = owner {
        let key = ObjectRef::<ClusterStack>::new(&owner.name).within(&namespace);
        return match ctx.stacks.get(&key) {
            Some(stack) => StackLookup::Found(stack),
            None => StackLookup::NotYetKnown(format!("{namespace}/{}", owner.name)),
        };
    }
    // A release made by hand: the stack of its namespace that follows the same stack name.
    ctx.stacks
        .state()
        .into_iter()
        .find(|s| {
            s.namespace().as_deref() == Some(namespace.as_str())
                && super::stack_name_of(s).as_ref() == Some(tag.stack())
        })
        .map_or(StackLookup::None, StackLookup::Found)
}

/// Deletion: wait while Clusters use the class, then prune what was applied.
async fn cleanup(release: &ClusterStackRelease, ctx: &Context) -> Result<Action, Error> {
    let mut progress = Progress::new(release, ctx, steps_of(release));
    let namespace = release.namespace().unwrap_or_default();
    let name = release.name_any();
    match crate::clusters::list(&ctx.client, &namespace).await {
        Ok(clusters) => {
            let users = crate::clusters::users_of(&clusters, &namespace, &name);
            if !users.is_empty() {
                let message = format!(
                    "deletion waits: the class is in use by Cluster(s) {}",
                    users.join(", ")
                );
                progress.condition(APPLIED, true, "InUse", message.clone());
                progress.save().await?;
                return Err(Error::Waiting {
                    reason: message,
                    retry: WAIT_FOR_USERS,
                });
            }
        }
        Err(e) if e.contains("404") => {
            // No Cluster API installed: no Cluster can use the class.
        }
        Err(e) => {
            let message = format!("deletion waits: cannot tell whether a Cluster uses the class: {e}");
            progress.condition(APPLIED, true, "InUseUnknown", message.clone());
            progress.save().await?;
            return Err(Error::Waiting {
                reason: message,
                retry: WAIT_FOR_USERS,
            });
        }
    }
    let options = ApplyOptions {
        namespace: namespace.clone(),
        inventory: Some(inventory_of(release)),
        prune: true,
        // The deletion: everything goes on purpose.
        prune_scope: PruneScope::Any,
        ..ApplyOptions::default()
    };
    let report = ctx.applier.apply(&[], &options).await.map_err(|e| Error::Step {
        step: "Prune".into(),
        message: e.to_string(),
    })?;
    let pruned = report.summary.pruned;
    ctx.metrics
        .objects(CONTROLLER, ObjectOutcome::Pruned, pruned as u64);
    if report.failed() {
        let problems: Vec<String> = report
            .results
            .iter()
            .filter(|r| r.is_failure())
            .map(|r| format!("{}: {}", r.key, r.message))
            .collect();
        return Err(Error::Step {
            step: "Prune".into(),
            message: problems.join("; "),
        });
    }
    let inventory = inventory_of(release);
    let configmaps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(ctx.client.clone(), &namespace);
    match configmaps.delete(&inventory.name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 404 => {}
        Err(e) => return Err(Error::Kube(format!("deleting inventory {}: {e}", inventory.id()))),
    }
    ctx.store
        .remove_all(&store_owner(release))
        .await
        .map_err(|e| Error::Kube(e.to_string()))?;
    if let Some(reference) = &release.spec.provider_ref {
        super::provider::remove(ctx, release, reference)
            .await
            .map_err(Error::Kube)?;
    }
    ctx.event(
        &object_ref(release),
        false,
        "Pruned",
        "Delete",
        format!("{pruned} object(s) of the release pruned"),
    )
    .await;
    Ok(Action::await_change())
}

/// Whether the release reports ready.
pub fn is_ready(release: &ClusterStackRelease) -> bool {
    release.status.as_ref().is_some_and(|s| s.ready)
}
