//! The applier: server-side apply of dynamic objects with ordering, per-object status,
//! inventory and pruning, drift (diff) and readiness. Used by `capstan apply`/`capstan diff`
//! and by the operator; knows nothing of charts or stacks (it shares only Helm's kind order,
//! from [`capstan_kinds`]).
//!
//! - [`object`]: desired objects from a YAML/JSON stream, with clear errors.
//! - [`discovery`]: kind → resource and scope, cached per group-version.
//! - [`order`]: apply waves (Namespaces, CRDs, Helm's install order, custom resources).
//! - [`ssa`]: the body sent (namespace, ownership marks, hash), the request and its retries.
//! - [`compare`]: whether a live object holds the desired one, through the server's normalisations.
//! - [`status`]: the serializable per-object result.
//! - [`guard`]: refusals of an empty input and of a prune that would empty an inventory.
//! - [`inventory`]: what an owner applied, and pruning what left the set.
//! - [`ownership`]: an object another inventory owns is left to it (a conflict), unless
//!   taking over is asked for.
//! - [`remove`]: an owner's deletion (its inventory's objects, then the inventory), and
//!   objects deleted by name.
//! - [`diff`]: drift as unified diffs from server-side dry runs.
//! - [`health`]: readiness per kind.
//! - [`client`]: the HTTP client (kube's layers, no Nagle delay).
//! - [`applier`]: [`Applier`], which runs all of it.
//!
//! Unchanged objects: each applied object carries the hash of its desired body
//! (`capstan.dev/applied-hash`). Before a wave is applied its objects are listed (one request
//! per resource and namespace, filtered by capstan's labels); an object whose live copy has
//! the same hash and still holds every desired field with the desired value is `unchanged`
//! and not sent at all. Anything else is sent; the server then decides (an apply that
//! changes nothing is reported `unchanged` too, by its resourceVersion).

pub mod applier;
pub mod client;
pub mod compare;
pub mod diff;
pub mod discovery;
pub mod guard;
pub mod health;
pub mod inventory;
pub mod object;
pub mod order;
pub mod ownership;
pub mod remove;
pub mod ssa;
pub mod status;

pub use applier::{Applier, ApplyOptions, ApplyReport, Error, Progress, PruneNotice};
pub use diff::ObjectDiff;
pub use guard::{PruneScope, Refusal};
pub use inventory::InventoryRef;
pub use object::{DesiredObject, Origin, ParseError, parse_stream};
pub use ssa::Retry;
pub use status::{Action, ObjectKey, ObjectResult, Summary, SyncStatus};

/// The field manager of capstan's applies. The operator tells its own applies from drift by
/// it, so every copy names this one constant.
pub const FIELD_MANAGER: &str = "capstan";

#[cfg(test)]
mod tests {
    #[test]
    fn applies_use_the_one_field_manager_by_default() {
        assert_eq!(super::ApplyOptions::default().field_manager, super::FIELD_MANAGER);
    }
}
