//! One applied object in a status (`status.resources[]` of ClusterStackRelease and
//! ClusterAddon), keyed by group, version, kind, namespace and name.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// An object capstan applies and how the last attempt ended. Empty fields are left out, as
/// the cluster-stack-operator writes them (the core group is the empty string).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// API group of the object; empty for the core group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// API version of the object (`v1`, `v1beta1`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// Kind of the object.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Namespace of the object; empty for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name of the object.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Outcome of the last apply: [`Resource::SYNCED`] or [`Resource::NOT_SYNCED`].
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// Error of the last apply, as the server or capstan reported it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub error: String,
}

/// The identity of a [`Resource`]: group, version, kind, namespace, name.
pub type ResourceKey<'a> = (&'a str, &'a str, &'a str, &'a str, &'a str);

impl Resource {
    /// `status` of an object whose last apply succeeded.
    pub const SYNCED: &'static str = "synced";
    /// `status` of an object whose last apply failed or has not happened.
    pub const NOT_SYNCED: &'static str = "not-synced";

    pub fn key(&self) -> ResourceKey<'_> {
        (
            &self.group,
            &self.version,
            &self.kind,
            &self.namespace,
            &self.name,
        )
    }

    pub fn is_synced(&self) -> bool {
        self.status == Resource::SYNCED
    }
}

/// Sets the entry of `resources` with `entry`'s key to `entry` (appending a new key); returns
/// whether the list changed.
pub fn set_resource(resources: &mut Vec<Resource>, entry: Resource) -> bool {
    match resources.iter_mut().find(|r| r.key() == entry.key()) {
        Some(old) if *old == entry => false,
        Some(old) => {
            *old = entry;
            true
        }
        None => {
            resources.push(entry);
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(kind: &str, name: &str, status: &str) -> Resource {
        Resource {
            group: "cluster.x-k8s.io".into(),
            version: "v1beta1".into(),
            kind: kind.into(),
            namespace: "ns".into(),
            name: name.into(),
            status: status.into(),
            error: String::new(),
        }
    }

    #[test]
    fn set_resource_replaces_by_key_and_appends_new_keys() {
        let mut list = vec![res("ClusterClass", "a", Resource::NOT_SYNCED)];
        assert!(set_resource(
            &mut list,
            res("ClusterClass", "a", Resource::SYNCED)
        ));
        assert!(!set_resource(
            &mut list,
            res("ClusterClass", "a", Resource::SYNCED)
        ));
        assert!(set_resource(
            &mut list,
            res("ClusterClass", "b", Resource::SYNCED)
        ));
        assert_eq!(list.len(), 2);
        assert!(list.iter().all(Resource::is_synced));
    }

    #[test]
    fn empty_fields_are_left_out() {
        let r = Resource {
            version: "v1".into(),
            kind: "ConfigMap".into(),
            name: "x".into(),
            status: Resource::SYNCED.into(),
            ..Resource::default()
        };
        assert_eq!(
            serde_json::to_value(&r).expect("serializes"),
            serde_json::json!({"version": "v1", "kind": "ConfigMap", "name": "x", "status": "synced"})
        );
    }
}
