//! The per-object result of an apply: a serializable type the operator can put into a CRD's
//! status unchanged, keyed by group/version/kind + namespace + name (never by name alone:
//! real stacks have a KubeadmControlPlaneTemplate and an OpenStackMachineTemplate of the same
//! name).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Identifies one object: its group/version/kind, namespace (none for cluster-scoped
/// objects) and name. Ordered, so result lists and inventories sort stably.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectKey {
    /// API group, empty for the core group.
    pub group: String,
    pub version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectKey {
    /// `group/version` as in `apiVersion` (`v1` for the core group).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

impl fmt::Display for ObjectKey {
    /// `Kind.group/name` or `Kind.group/namespace/name` (`ConfigMap/default/x` for the core
    /// group), unambiguous across groups and namespaces.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.kind)?;
        if !self.group.is_empty() {
            write!(f, ".{}", self.group)?;
        }
        if let Some(ns) = &self.namespace {
            write!(f, "/{ns}")?;
        }
        write!(f, "/{}", self.name)
    }
}

/// Where an object stands after an apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SyncStatus {
    /// Applied (or found unchanged); the live object matches the desired one.
    Synced,
    /// Could not be applied; the message says why (the API server's reason when it gave one).
    Failed,
    /// Deleted because it left the desired set (it carried this inventory's id).
    Pruned,
    /// Should have been deleted, but the deletion failed.
    PruneFailed,
    /// Not applied: another inventory owns the live object (see [`crate::ownership`]); the
    /// message names it. Neither applied nor failed.
    Conflict,
}

/// What the apply did to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Action {
    Created,
    Configured,
    Unchanged,
    Pruned,
    /// Nothing was done because an earlier step failed or the object was not reached.
    None,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Created => "created",
            Action::Configured => "configured",
            Action::Unchanged => "unchanged",
            Action::Pruned => "pruned",
            Action::None => "none",
        }
    }
}

/// The result for one object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectResult {
    #[serde(flatten)]
    pub key: ObjectKey,
    pub status: SyncStatus,
    pub action: Action,
    /// Why it failed, or a note (e.g. "server dry run").
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The hash of the desired object capstan applied (see `apply::ssa::desired_hash`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied_hash: Option<String>,
    /// The object's resourceVersion in the server's answer to this apply: a watch from it sees
    /// every later change. `None` where nothing was written (a dry run, a failure, an object
    /// left alone, a prune). Live state, not part of the recorded result: never serialized.
    #[serde(skip)]
    pub resource_version: Option<String>,
}

impl ObjectResult {
    pub fn is_failure(&self) -> bool {
        matches!(self.status, SyncStatus::Failed | SyncStatus::PruneFailed)
    }

    /// The one-line form the CLI prints: `ConfigMap/default/x created`,
    /// `Deployment.apps/default/y failed: <reason>`.
    pub fn line(&self) -> String {
        match self.status {
            SyncStatus::Failed => format!("{} failed: {}", self.key, self.message),
            SyncStatus::PruneFailed => format!("{} prune failed: {}", self.key, self.message),
            SyncStatus::Conflict => format!("{} not applied: {}", self.key, self.message),
            SyncStatus::Pruned if self.action == Action::Pruned => format!("{} pruned", self.key),
            // Left the set, but was gone before the prune came to it.
            SyncStatus::Pruned => format!("{} {}", self.key, self.message),
            SyncStatus::Synced if self.message.is_empty() => {
                format!("{} {}", self.key, self.action.as_str())
            }
            SyncStatus::Synced => format!("{} {} ({})", self.key, self.action.as_str(), self.message),
        }
    }
}

/// Counts of an apply, for the CLI's summary line and for tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub created: usize,
    pub configured: usize,
    pub unchanged: usize,
    /// Objects deleted by this apply (not those found already gone).
    pub pruned: usize,
    /// Objects of the inventory that left the set and were gone before the prune.
    #[serde(default)]
    pub already_gone: usize,
    pub failed: usize,
    /// Objects left to the inventory that owns them ([`SyncStatus::Conflict`]).
    #[serde(default)]
    pub conflicts: usize,
    /// Server-side apply requests sent (retries included; dry runs of a diff excluded).
    pub apply_requests: usize,
}

impl Summary {
    pub fn of(results: &[ObjectResult], apply_requests: usize) -> Summary {
        let mut s = Summary {
            apply_requests,
            ..Summary::default()
        };
        for r in results {
            match (r.status, r.action) {
                (SyncStatus::Failed | SyncStatus::PruneFailed, _) => s.failed += 1,
                (SyncStatus::Conflict, _) => s.conflicts += 1,
                (SyncStatus::Pruned, Action::Pruned) => s.pruned += 1,
                (SyncStatus::Pruned, _) => s.already_gone += 1,
                (SyncStatus::Synced, Action::Created) => s.created += 1,
                (SyncStatus::Synced, Action::Configured) => s.configured += 1,
                (SyncStatus::Synced, _) => s.unchanged += 1,
            }
        }
        s
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} created, {} configured, {} unchanged, {} pruned, {} failed",
            self.created, self.configured, self.unchanged, self.pruned, self.failed
        )?;
        if self.already_gone > 0 {
            write!(f, " ({} already gone)", self.already_gone)?;
        }
        if self.conflicts > 0 {
            write!(f, ", {} owned by another inventory", self.conflicts)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(group: &str, kind: &str, ns: Option<&str>, name: &str) -> ObjectKey {
        ObjectKey {
            group: group.into(),
            version: "v1beta1".into(),
            kind: kind.into(),
            namespace: ns.map(str::to_string),
            name: name.into(),
        }
    }

    #[test]
    fn same_name_different_kinds_are_different_keys() {
        let a = key(
            "controlplane.cluster.x-k8s.io",
            "KubeadmControlPlaneTemplate",
            Some("ns"),
            "x",
        );
        let b = key(
            "infrastructure.cluster.x-k8s.io",
            "OpenStackMachineTemplate",
            Some("ns"),
            "x",
        );
        assert_ne!(a, b);
        assert_eq!(
            a.to_string(),
            "KubeadmControlPlaneTemplate.controlplane.cluster.x-k8s.io/ns/x"
        );
    }

    #[test]
    fn only_deletions_count_as_pruned() {
        let result = |action: Action, message: &str| ObjectResult {
            key: key("", "ConfigMap", Some("ns"), "c"),
            status: SyncStatus::Pruned,
            action,
            message: message.into(),
            last_applied_hash: None,
            resource_version: None,
        };
        let deleted = result(Action::Pruned, "");
        let gone = result(Action::None, "already gone");
        assert_eq!(deleted.line(), "ConfigMap/ns/c pruned");
        assert_eq!(gone.line(), "ConfigMap/ns/c already gone");
        let s = Summary::of(&[deleted, gone.clone(), gone], 0);
        assert_eq!((s.pruned, s.already_gone), (1, 2));
        assert_eq!(
            s.to_string(),
            "0 created, 0 configured, 0 unchanged, 1 pruned, 0 failed (2 already gone)"
        );
    }

    #[test]
    fn result_serializes_flat_in_camel_case() {
        let r = ObjectResult {
            key: key("", "ConfigMap", Some("default"), "c"),
            status: SyncStatus::Failed,
            action: Action::None,
            message: "boom".into(),
            last_applied_hash: Some("abc".into()),
            resource_version: Some("42".into()),
        };
        let json = serde_json::to_value(&r).expect("serializes");
        assert_eq!(
            json,
            serde_json::json!({"group": "", "version": "v1beta1", "kind": "ConfigMap",
                "namespace": "default", "name": "c", "status": "Failed", "action": "none",
                "message": "boom", "lastAppliedHash": "abc"})
        );
        let back: ObjectResult = serde_json::from_value(json).expect("deserializes");
        // The resourceVersion is the answer's, never recorded.
        assert_eq!(
            back,
            ObjectResult {
                resource_version: None,
                ..r
            }
        );
    }
}
