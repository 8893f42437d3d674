//! What the ClusterStackRelease and ClusterAddon controllers both do with a release: resolve
//! it (the ClusterStack that follows it, its source, the fetch, the digest, the compile), hash
//! the inputs of a render, read and write the render store, apply a stored render with an
//! inventory and record the outcome, and prune everything on delete (what a pass does when is
//! [`super::release_runner`]'s).
//!
//! The blocking work (the digest of a local release, the compile, the renders, parsing a
//! stored manifest) runs on tokio's blocking pool, never on the async runtime's workers.

use std::collections::BTreeSet;
use std::ops::ControlFlow;
use std::sync::Arc;

use kube::ResourceExt;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use sha2::{Digest, Sha256};

pub mod dependencies;
pub mod dependency_policy;

use self::dependency_policy::DependencyPolicy;
use super::progress::{Because, Failure, Progress, Tracked, WAIT};
use super::report::Outcome;
use super::{Cause, Error, object_ref};
use crate::api::{ClusterStack, ClusterStackRelease, TAKE_OVER_ANNOTATION};
use crate::compiled::Compiled;
use crate::context::Context;
use crate::metrics::{Metrics, ObjectOutcome};
use crate::sources::{Fetched, Resolved, Sources};
use crate::store::{Owner, RenderStore, StoredRender};
use capstan_apply::{Applier, ApplyOptions, DesiredObject, InventoryRef, parse_stream};
use capstan_source::charts::{self, Verdict};
use capstan_stack::name::ReleaseTag;
use capstan_stack::render::CompiledRelease;

/// Condition: the release's charts were rendered (a stored render has the inputs).
pub const RENDERED: &str = "Rendered";
/// Condition: the stored render was applied.
pub const APPLIED: &str = "Applied";

/// Whether `annotations` ask for taking over ([`TAKE_OVER_ANNOTATION`] is `true`).
pub fn takes_over(annotations: &std::collections::BTreeMap<String, String>) -> bool {
    annotations
        .get(TAKE_OVER_ANNOTATION)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// Runs `work` on the blocking pool.
pub async fn blocking<T, F>(what: &'static str, work: F) -> Result<T, Cause>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, Cause> + Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|source| Cause::Task { what, source })?
}

/// The ClusterStack a release gets its source from: its owner, else the stack of its
/// namespace that follows the same stack name (a release made by hand). `Break` when the
/// owner is named but the watch has not delivered it yet; `detail` ends the message when
/// there is none.
pub fn stack_of(
    release: &ClusterStackRelease,
    tag: &ReleaseTag,
    stacks: &Store<ClusterStack>,
    detail: &'static str,
) -> Result<ControlFlow<Action, Arc<ClusterStack>>, Failure> {
    let namespace = release.namespace().unwrap_or_default();
    let owner = release
        .owner_references()
        .iter()
        .find(|o| o.kind == "ClusterStack" && o.api_version.starts_with("clusterstack.x-k8s.io/"));
    if let Some(owner) = owner {
        let key = ObjectRef::<ClusterStack>::new(&owner.name).within(&namespace);
        return Ok(match stacks.get(&key) {
            Some(stack) => ControlFlow::Continue(stack),
            None => {
                tracing::debug!(release = %release.name_any(), stack = %owner.name, "ClusterStack not in the cache yet");
                ControlFlow::Break(Action::requeue(WAIT))
            }
        });
    }
    stacks
        .state()
        .into_iter()
        .find(|s| {
            s.namespace().as_deref() == Some(namespace.as_str())
                && super::stack_name_of(s).as_ref() == Some(tag.stack())
        })
        .map(ControlFlow::Continue)
        .ok_or_else(|| {
            Failure::new(
                "NoClusterStack",
                Cause::NoClusterStack {
                    namespace,
                    stack: tag.stack().to_string(),
                    detail,
                },
            )
        })
}

/// A release on disk: where it came from, its files and their digest.
pub struct ReleaseFiles {
    pub source: Resolved,
    pub fetched: Fetched,
    pub digest: String,
    /// The release's tag, which messages name its files by.
    pub release: String,
}

/// Release `tag` of `stack`'s source, complete on disk, with its digest.
pub async fn fetch(ctx: &Context, stack: &ClusterStack, tag: &ReleaseTag) -> Result<ReleaseFiles, Failure> {
    let source = super::resolve_source(stack, ctx)
        .await
        .because("SourceUnavailable")?;
    let fetched = ctx.sources.fetch(&source, tag).await.because("DownloadFailed")?;
    let hashed = fetched.clone();
    let digest = blocking("hashing the release", move || Ok(hashed.digest()?))
        .await
        .because("DownloadFailed")?;
    Ok(ReleaseFiles {
        source,
        fetched,
        digest,
        release: tag.to_string(),
    })
}

/// The compiled release (once per digest and dependency policy, kept with the sources), with
/// the charts' missing dependencies resolved from `repositories` as the reference operator's
/// `--dependency-update` does, each checked against `policy` (the stack's rules, before the
/// operator's `--dependency-policy`, `--keyring` and `--verify-key`). A dependency refused by
/// its policy is [`Cause::DependencyRefused`] with the refusal's reason; each fresh check
/// counts in `capstan_source_verifications_total`.
pub async fn compile(
    sources: &Sources,
    repositories: &charts::Settings,
    metrics: &Metrics,
    files: &ReleaseFiles,
    policy: &DependencyPolicy,
) -> Result<Compiled, Cause> {
    let key = format!("{}/{}", files.digest, policy.fingerprint);
    if let Some(kept) = sources.compiled().get(&key) {
        return Ok(kept);
    }
    let cache = sources.cache().clone();
    let fetched = files.fetched.clone();
    let repositories = charts::Settings {
        overriding_policies: policy.rules.clone(),
        ..repositories.clone()
    };
    let release = files.release.clone();
    let (compiled, verdicts) = blocking("compiling the release", move || {
        let opened = fetched.open(&cache, &release)?;
        let resolver = charts::ChartResolver::new(cache.clone(), repositories).map_err(Cause::Resolver)?;
        // The scratch copy's paths named as the release's files: the copy goes with `opened`.
        let compiled = CompiledRelease::with_resolver(&opened.release, Some(&resolver))
            .map_err(|e| opened.in_release(e));
        Ok((compiled, resolver.verdicts()))
    })
    .await?;
    for verdict in &verdicts {
        metrics.source_verified(match &verdict.outcome {
            charts::Outcome::Signed(_) => "verified",
            charts::Outcome::Refused { reason, .. } => reason,
        });
    }
    let compiled = match compiled {
        Ok(compiled) => compiled,
        Err(error) => {
            return Err(match Verdict::first_refused(&verdicts).map(|v| &v.outcome) {
                Some(charts::Outcome::Refused { reason, .. }) => Cause::DependencyRefused {
                    reason,
                    error: error.error,
                },
                _ => Cause::Compile(Box::new(error)),
            });
        }
    };
    let signed = verdicts
        .into_iter()
        .filter(|v| matches!(v.outcome, charts::Outcome::Signed(_)))
        .collect();
    let compiled = Compiled {
        release: Arc::new(compiled),
        signed: Arc::new(signed),
    };
    Ok(sources.compiled().keep(&key, compiled))
}

/// The hash of what a render depends on: `what` is rendered, capstan's version, then
/// `fields` (each ends in a NUL, so no two lists hash alike).
pub fn inputs_hash<'a>(what: &'a str, fields: impl IntoIterator<Item = &'a str>) -> String {
    let mut hasher = Sha256::new();
    for field in [what, env!("CARGO_PKG_VERSION")].into_iter().chain(fields) {
        hasher.update(field.as_bytes());
        hasher.update([0]);
    }
    capstan_source::cache::hex(&hasher.finalize())
}

/// Rendered parts: part name → manifest stream.
pub type Parts = Vec<(String, String)>;

/// The newest stored render of `owner`.
pub async fn latest(store: &RenderStore, owner: &Owner) -> Result<Option<StoredRender>, Failure> {
    store.latest(owner).await.because("StoreUnavailable")
}

/// Stores `parts`, rendered from `inputs`, as the newest revision of `owner`.
pub async fn store(
    store: &RenderStore,
    owner: &Owner,
    inputs: &str,
    parts: Parts,
) -> Result<StoredRender, Failure> {
    let saved = store.save(owner, inputs, parts).await.because("StoreFailed")?;
    tracing::info!(owner = %owner.name, revision = saved.revision, "rendered");
    Ok(saved)
}

/// The objects of a stored render (of its part `part`, or all of it).
pub async fn objects_of(render: &StoredRender, part: Option<&str>) -> Result<Vec<DesiredObject>, Failure> {
    let (stream, origin) = match part {
        Some(part) => (
            render
                .parts
                .iter()
                .find(|(name, _)| name == part)
                .map(|(_, stream)| stream.clone())
                .unwrap_or_default(),
            part.to_string(),
        ),
        None => (render.manifest(), format!("render revision {}", render.revision)),
    };
    blocking("parsing the stored render", move || {
        Ok(parse_stream(&stream, &origin)?)
    })
    .await
    .because("InvalidManifest")
}

/// The kinds among `objects`, sorted, each once (what drift watches watch).
pub fn kinds_of(objects: &[DesiredObject]) -> Vec<crate::drift::Kind> {
    let mut kinds: Vec<crate::drift::Kind> = objects
        .iter()
        .map(|o| (o.group.clone(), o.version.clone(), o.kind.clone()))
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

/// Options of an apply that records its objects in `inventory` (in the inventory's
/// namespace, the default of namespaced objects) and prunes what left it.
fn pruning(inventory: InventoryRef) -> ApplyOptions {
    ApplyOptions {
        namespace: inventory.namespace.clone(),
        inventory: Some(inventory),
        prune: true,
        ..ApplyOptions::default()
    }
}

/// What the drift watches on an apply's target tell it (see [`capstan_apply::ApplyOptions`]):
/// nothing, by default.
#[derive(Default)]
pub struct Watched {
    /// Kinds whose objects are live as the inventory records them
    /// ([`capstan_apply::ApplyOptions::watched_kinds`]).
    pub kinds: BTreeSet<crate::drift::Kind>,
    /// Told of each object before it is pruned.
    pub before_prune: Option<capstan_apply::PruneNotice>,
}

/// Applies `objects` with `inventory` (pruning what left it) as the release plan decided
/// (`apply`: only [`super::release_runner::plan::plan`] makes one), counts and records the
/// outcome (per-object status; condition `step` fails when an object failed).
pub async fn apply<K: Tracked>(
    progress: &mut Progress<'_, K>,
    step: &'static str,
    applier: &Applier,
    objects: &[DesiredObject],
    inventory: InventoryRef,
    apply: super::release_runner::plan::Apply,
    watched: Watched,
) -> Result<Outcome, Error> {
    let options = ApplyOptions {
        concurrency: 8,
        take_over: takes_over(progress.object.annotations()),
        watched_kinds: watched.kinds,
        before_prune: watched.before_prune,
        ..pruning(inventory)
    };
    let report = applier.apply(objects, &options).await.because("ApplyFailed");
    let report = progress.check(step, report).await?;
    let reference = object_ref(progress.object);
    let outcome = super::report::record(
        progress.ctx,
        K::CONTROLLER,
        &reference,
        &report,
        apply.drift_pass(),
    )
    .await;
    progress.set_resources(outcome.resources.clone());
    if let Some(message) = outcome.failure.clone() {
        return Err(progress.fail(step, "ApplyFailed", Cause::Objects(message)).await);
    }
    Ok(outcome)
}

/// Deletion: every object of `inventory` is pruned (on purpose: any scope), then the
/// inventory's ConfigMap goes (both kinds' cleanup). Returns how many objects were pruned.
pub async fn prune_all(
    metrics: &Metrics,
    controller: &str,
    applier: &Applier,
    inventory: InventoryRef,
) -> Result<u64, Cause> {
    let Some(report) = applier.remove(&inventory, &pruning(inventory.clone())).await? else {
        return Ok(0);
    };
    let pruned = report.summary.pruned as u64;
    metrics.objects(controller, ObjectOutcome::Pruned, pruned);
    if report.failed() {
        let problems: Vec<String> = report
            .results
            .iter()
            .filter(|r| r.is_failure())
            .map(|r| format!("{}: {}", r.key, r.message))
            .chain(report.inventory_error.clone())
            .collect();
        return Err(Cause::Objects(problems.join("; ")));
    }
    Ok(pruned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_true_takes_over() {
        for (value, want) in [
            ("true", true),
            ("True", true),
            (" true ", true),
            ("false", false),
            ("", false),
            ("yes", false),
        ] {
            let annotations = [(TAKE_OVER_ANNOTATION.to_string(), value.to_string())].into();
            assert_eq!(takes_over(&annotations), want, "{value:?}");
        }
        assert!(!takes_over(&Default::default()));
    }

    #[test]
    fn inputs_hashes_differ_by_kind_field_and_boundary() {
        let class = inputs_hash("cluster-class", ["sha", "ns"]);
        assert_eq!(class, inputs_hash("cluster-class", ["sha", "ns"]));
        assert_ne!(class, inputs_hash("cluster-addon", ["sha", "ns"]));
        assert_ne!(class, inputs_hash("cluster-class", ["sha", "ns2"]));
        assert_ne!(
            inputs_hash("x", ["ab", "c"]),
            inputs_hash("x", ["a", "bc"]),
            "fields end in a NUL"
        );
        assert_eq!(class.len(), 64);
    }
}
