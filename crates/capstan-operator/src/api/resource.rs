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
    /// The stage (`clusteraddon.yaml`) that applies the object; empty outside stages
    /// (capstan).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stage: String,
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

/// The most entries a `status.resources` list holds (a status is stored whole in etcd, whose
/// objects are limited to about 1.5 MB); the objects past it are counted, not listed.
pub const MAX_LISTED: usize = 1000;

/// Replaces the entries of `stage` in `listed` by `fresh`, each marked with the stage, where
/// the stage's entries were (else at the end). The entries of other stages stay; `fresh` gets
/// the room left below `cap`, and what does not fit is left out. Returns how many were.
pub fn record_stage(listed: &mut Vec<Resource>, stage: &str, fresh: Vec<Resource>, cap: usize) -> usize {
    let at = listed
        .iter()
        .position(|r| r.stage == stage)
        .unwrap_or(listed.len());
    // Every entry before `at` is of another stage: `at` stays where the stage goes.
    listed.retain(|r| r.stage != stage);
    let room = cap.saturating_sub(listed.len());
    let omitted = fresh.len().saturating_sub(room);
    let kept = fresh.into_iter().take(room).map(|mut r| {
        r.stage = stage.to_string();
        r
    });
    listed.splice(at..at, kept);
    omitted
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
            ..Resource::default()
        }
    }

    fn named(names: &[&str], stage: &str) -> Vec<Resource> {
        names
            .iter()
            .map(|n| Resource {
                stage: stage.into(),
                ..res("ConfigMap", n, Resource::SYNCED)
            })
            .collect()
    }

    /// `stage/name` of each entry.
    fn listed(list: &[Resource]) -> Vec<String> {
        list.iter().map(|r| format!("{}/{}", r.stage, r.name)).collect()
    }

    #[test]
    fn a_stage_replaces_its_own_entries_in_place_within_the_cap() {
        // (listed before, stage, fresh names, cap, listed after, left out)
        type Case<'a> = (Vec<Resource>, &'a str, Vec<&'a str>, usize, Vec<&'a str>, usize);
        let cases: Vec<Case> = vec![
            // A first stage, then a second one after it.
            (vec![], "cni", vec!["a", "b"], 10, vec!["cni/a", "cni/b"], 0),
            (
                named(&["a", "b"], "cni"),
                "csi",
                vec!["c"],
                10,
                vec!["cni/a", "cni/b", "csi/c"],
                0,
            ),
            // A stage applied again replaces its entries where they were, others stay.
            (
                [named(&["a", "b"], "cni"), named(&["c"], "csi")].concat(),
                "cni",
                vec!["x"],
                10,
                vec!["cni/x", "csi/c"],
                0,
            ),
            // The cap: the stage gets the room left, what does not fit is counted.
            (
                named(&["a", "b"], "cni"),
                "csi",
                vec!["c", "d", "e"],
                3,
                vec!["cni/a", "cni/b", "csi/c"],
                2,
            ),
            (
                named(&["a", "b", "c"], "cni"),
                "csi",
                vec!["d"],
                3,
                vec!["cni/a", "cni/b", "cni/c"],
                1,
            ),
            // Shrinking a stage makes room again.
            (
                [named(&["a", "b"], "cni"), named(&["c"], "csi")].concat(),
                "csi",
                vec!["d"],
                3,
                vec!["cni/a", "cni/b", "csi/d"],
                0,
            ),
            (vec![], "cni", vec![], 3, vec![], 0),
        ];
        for (before, stage, fresh, cap, want, want_omitted) in cases {
            let mut list = before.clone();
            let fresh = named(&fresh, "");
            let omitted = record_stage(&mut list, stage, fresh, cap);
            assert_eq!(
                (listed(&list), omitted),
                (want.iter().map(|s| s.to_string()).collect(), want_omitted),
                "{} + {stage}",
                listed(&before).join(",")
            );
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
