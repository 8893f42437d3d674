//! Pruning: the objects that left an inventory's set are deleted in reverse install order,
//! each only while it still carries the inventory's id (another owner may have it now), with
//! its uid as precondition; CRDs only when asked.

use futures::StreamExt;
use kube::api::{DeleteParams, Preconditions};

use super::options::ApplyOptions;
use super::target::Target;
use crate::discovery::{self, DiscoveryError};
use crate::inventory::Entry;
use crate::order;
use crate::ssa::{self, INVENTORY_ANNOTATION};
use crate::status::{Action, ObjectResult, SyncStatus};

/// What became of one object pruning was asked to delete.
pub enum PruneOutcome {
    /// Deleted (or already gone): drop from the inventory.
    Done(ObjectResult),
    /// Still there (failed, or kept on purpose): stays in the inventory.
    Keep(ObjectResult),
    /// Carries another inventory's id or none: not ours any more; dropped from the inventory.
    NotOurs,
}

/// Prunes `candidates` in reverse install order (wave by wave, concurrently within one).
pub async fn prune(
    target: Target<'_>,
    candidates: Vec<Entry>,
    inventory_id: &str,
    opts: &ApplyOptions,
) -> Vec<(Entry, PruneOutcome)> {
    let mut waves = order::waves(&candidates, |e| (e.key.group.as_str(), e.key.kind.as_str()));
    waves.reverse();
    let mut out = Vec::new();
    for wave in waves {
        let tasks = wave
            .into_iter()
            .map(|i| {
                let entry = candidates[i].clone();
                async move {
                    let outcome = prune_one(target, &entry, inventory_id, opts).await;
                    (entry, outcome)
                }
            })
            .collect::<Vec<_>>();
        let done: Vec<_> = futures::stream::iter(tasks)
            .buffer_unordered(opts.concurrency.max(1))
            .collect()
            .await;
        let any_crd = done
            .iter()
            .any(|(e, o)| matches!(o, PruneOutcome::Done(_)) && order::is_crd(&e.key.group, &e.key.kind));
        out.extend(done);
        if any_crd {
            target.discovery.invalidate().await;
        }
    }
    out
}

async fn prune_one(
    target: Target<'_>,
    entry: &Entry,
    inventory_id: &str,
    opts: &ApplyOptions,
) -> PruneOutcome {
    let key = &entry.key;
    let result = |status: SyncStatus, action: Action, message: String| ObjectResult {
        key: key.clone(),
        status,
        action,
        message,
        last_applied_hash: entry.hash.clone(),
        resource_version: None,
    };
    // Not counted as pruned: this apply deleted nothing (a crashed apply may have listed
    // objects it never created).
    let gone = || PruneOutcome::Done(result(SyncStatus::Pruned, Action::None, "already gone".into()));
    let prune_failed = |msg: String| PruneOutcome::Keep(result(SyncStatus::PruneFailed, Action::None, msg));
    if order::is_crd(&key.group, &key.kind) && !opts.prune_crds {
        return PruneOutcome::Keep(result(
            SyncStatus::Synced,
            Action::None,
            "kept: CRDs are pruned only when asked (--prune-crds)".into(),
        ));
    }
    let info = match target
        .discovery
        .resolve(&key.group, &key.version, &key.kind)
        .await
    {
        Ok(info) => info,
        // The kind is gone (its CRD was deleted), and so are its objects.
        Err(DiscoveryError::UnknownKind { .. }) => return gone(),
        Err(e) => return prune_failed(e.to_string()),
    };
    let api = discovery::api_for(target.client, &info.resource, key.namespace.as_deref());
    let (live, _) = ssa::with_retry(opts.retry, || api.get_opt(&key.name)).await;
    let live = match live {
        Ok(Some(l)) => l,
        Ok(None) => return gone(),
        Err(e) => return prune_failed(e.to_string()),
    };
    let owner = live
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(INVENTORY_ANNOTATION));
    if owner.map(String::as_str) != Some(inventory_id) {
        return PruneOutcome::NotOurs;
    }
    if opts.dry_run {
        return PruneOutcome::Keep(result(
            SyncStatus::Pruned,
            Action::Pruned,
            "server dry run".into(),
        ));
    }
    let params = DeleteParams {
        dry_run: false,
        preconditions: Some(Preconditions {
            uid: live.metadata.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::background()
    };
    if let Some(notice) = &opts.before_prune {
        (notice.0)(key);
    }
    let (deleted, _) = ssa::with_retry(opts.retry, || api.delete(&key.name, &params)).await;
    match deleted {
        Ok(_) => PruneOutcome::Done(result(SyncStatus::Pruned, Action::Pruned, String::new())),
        Err(e) if e.code() == Some(404) => gone(),
        Err(e) => prune_failed(e.to_string()),
    }
}
