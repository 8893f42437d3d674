//! What an apply is told and what it reports: [`ApplyOptions`], [`ApplyReport`], the errors
//! that stop it as a whole, and the callbacks it calls.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use crate::guard::{PruneScope, Refusal};
use crate::inventory::{InventoryError, InventoryRef};
use crate::ssa::Retry;
use crate::status::{ObjectKey, ObjectResult, Summary};

/// Errors that stop an apply or diff as a whole (per-object failures are results instead).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot reach the Kubernetes API server {server}: {message}")]
    Unreachable { server: String, message: String },
    #[error(
        "the Kubernetes API server {server} rejected the credentials ({message}); is the token expired or invalid?"
    )]
    Unauthorized { server: String, message: String },
    #[error("pruning needs an inventory (--inventory NAME)")]
    PruneWithoutInventory,
    #[error(transparent)]
    Inventory(#[from] InventoryError),
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// Deleting an object by name (see [`crate::Applier::delete`]) failed.
    #[error("deleting {what}: {source}")]
    Delete {
        what: String,
        #[source]
        source: kube::Error,
    },
}

/// How an apply runs. [`ApplyOptions::default`] is capstan's default: field manager
/// `capstan`, force on, namespace `default`, 16 requests at once.
#[derive(Debug, Clone)]
pub struct ApplyOptions {
    pub field_manager: String,
    /// Take over fields other managers own (conflicts fail the object when off).
    pub force: bool,
    /// Take over objects another inventory owns (see [`crate::ownership`]). When off, with an
    /// inventory, the objects not in it are looked up before they are sent (one list of
    /// capstan's objects per resource and namespace), and one carrying another inventory's mark
    /// is left alone: [`crate::SyncStatus::Conflict`], not recorded in this inventory.
    pub take_over: bool,
    /// Namespace for namespaced objects that name none.
    pub namespace: String,
    /// Requests in flight at once within a wave.
    pub concurrency: usize,
    /// Server-side dry run: nothing is changed, not even the inventory.
    pub dry_run: bool,
    pub inventory: Option<InventoryRef>,
    /// Delete objects of the inventory that left the desired set.
    pub prune: bool,
    /// Also prune CustomResourceDefinitions (deleting a CRD deletes all its objects).
    pub prune_crds: bool,
    /// Wait this long for applied objects to become ready (see [`crate::health`]).
    pub wait: Option<Duration>,
    /// Limit of the wait for a CRD to become Established before its custom resources.
    pub crd_timeout: Duration,
    /// Decide by server-side dry run instead of the applied hash whether an object drifted,
    /// and send only drifted objects.
    pub only_drifted: bool,
    /// How far pruning may empty the inventory (see [`crate::guard`]); by default an empty desired
    /// set never prunes a non-empty inventory.
    pub prune_scope: PruneScope,
    pub retry: Retry,
    /// Kinds `(group, version, kind)` whose objects of the inventory the caller has watched
    /// since its last complete apply, seeing no change but capstan's own (the operator's drift
    /// watches): their live copies are as the inventory records them, so they are not listed;
    /// one whose recorded hash is its desired hash is unchanged, the others are sent.
    pub watched_kinds: BTreeSet<(String, String, String)>,
    /// Told of each object just before pruning deletes it (the operator's drift watches then
    /// know the deletion is capstan's own, not drift).
    pub before_prune: Option<PruneNotice>,
}

/// Called with an object about to be pruned (see [`ApplyOptions::before_prune`]).
#[derive(Clone)]
pub struct PruneNotice(pub Arc<dyn Fn(&ObjectKey) + Send + Sync>);

impl std::fmt::Debug for PruneNotice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PruneNotice")
    }
}

impl Default for ApplyOptions {
    fn default() -> ApplyOptions {
        ApplyOptions {
            field_manager: crate::FIELD_MANAGER.into(),
            force: true,
            take_over: true,
            namespace: "default".into(),
            concurrency: 16,
            dry_run: false,
            inventory: None,
            prune: false,
            prune_crds: false,
            wait: None,
            crd_timeout: Duration::from_secs(60),
            only_drifted: false,
            prune_scope: PruneScope::default(),
            retry: Retry::default(),
            watched_kinds: BTreeSet::new(),
            before_prune: None,
        }
    }
}

/// The outcome of an apply.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApplyReport {
    /// One result per object, in apply order; pruned objects last.
    pub results: Vec<ObjectResult>,
    pub summary: Summary,
    /// Objects in the inventory that were not pruned because they no longer carry its id
    /// (someone else owns them now).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub prune_skipped: Vec<ObjectKey>,
    /// The inventory could not be updated after the apply (it still lists every object, as
    /// it was widened before; the next apply corrects it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inventory_error: Option<String>,
}

impl ApplyReport {
    pub fn failed(&self) -> bool {
        self.inventory_error.is_some() || self.results.iter().any(ObjectResult::is_failure)
    }

    /// The result for `key`.
    pub fn get(&self, key: &ObjectKey) -> Option<&ObjectResult> {
        self.results.iter().find(|r| &r.key == key)
    }
}

/// Called with each result as soon as it is known (for progress output).
pub type Progress = Arc<dyn Fn(&ObjectResult) + Send + Sync>;
