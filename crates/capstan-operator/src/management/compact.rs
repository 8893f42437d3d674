//! An object of a kind known only at run time, kept as its compact JSON text: what the stores
//! of a Cluster's ControlPlanes and InfraClusters hold (issue 36 §3). As a `DynamicObject` an
//! object is a tree of maps and strings, each its own allocation — about three times its JSON
//! text; a pass reads one such object at a time and parses it again (tens of microseconds for
//! a Cluster API object), while the store holds one per Cluster for as long as the fleet lives.
//!
//! The watch decodes each object as a `DynamicObject`, strips it ([`super::strip::strip_meta`]) and
//! keeps its text; the metadata that stores and wake-ups key on (name, namespace, uid,
//! resourceVersion, generation) is kept beside it.

use std::borrow::Cow;
use std::sync::Arc;

use kube::api::{ApiResource, DynamicObject, ObjectMeta};
use kube::core::DynamicResourceScope;
use serde::{Deserialize, Deserializer, de::Error as _};

/// An object as compact JSON text, with the metadata a store keys on.
#[derive(Clone, Debug)]
pub struct CompactObject {
    metadata: ObjectMeta,
    json: Arc<str>,
}

impl CompactObject {
    /// `object`, stripped of what no pass reads, as text.
    pub fn new(mut object: DynamicObject) -> Result<CompactObject, serde_json::Error> {
        super::strip::strip_meta(&mut object.metadata);
        let json = serde_json::to_string(&object)?;
        let meta = object.metadata;
        Ok(CompactObject {
            metadata: ObjectMeta {
                name: meta.name,
                namespace: meta.namespace,
                uid: meta.uid,
                resource_version: meta.resource_version,
                generation: meta.generation,
                ..ObjectMeta::default()
            },
            json: json.into(),
        })
    }

    /// The whole object again.
    pub fn object(&self) -> Result<DynamicObject, serde_json::Error> {
        serde_json::from_str(&self.json)
    }

    /// The object's text (compact JSON).
    #[cfg(test)]
    fn json(&self) -> &str {
        &self.json
    }
}

impl<'de> Deserialize<'de> for CompactObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let object = DynamicObject::deserialize(deserializer)?;
        CompactObject::new(object).map_err(D::Error::custom)
    }
}

impl kube::Resource for CompactObject {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn group(resource: &ApiResource) -> Cow<'_, str> {
        resource.group.as_str().into()
    }

    fn version(resource: &ApiResource) -> Cow<'_, str> {
        resource.version.as_str().into()
    }

    fn kind(resource: &ApiResource) -> Cow<'_, str> {
        resource.kind.as_str().into()
    }

    fn api_version(resource: &ApiResource) -> Cow<'_, str> {
        resource.api_version.as_str().into()
    }

    fn plural(resource: &ApiResource) -> Cow<'_, str> {
        resource.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;

    fn control_plane() -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "controlplane.cluster.x-k8s.io/v1beta1",
            "kind": "KubeadmControlPlane",
            "metadata": {
                "name": "cp", "namespace": "fleet", "uid": "u-1", "resourceVersion": "42",
                "generation": 3, "labels": {"team": "a"},
                "annotations": {
                    "kubectl.kubernetes.io/last-applied-configuration": "{\"huge\":true}",
                    "kept": "yes"
                },
                "managedFields": [{"manager": "kubectl", "operation": "Apply"}]
            },
            "spec": {"version": "v1.27.3", "replicas": 3},
            "status": {"ready": true, "initialized": true}
        })
    }

    #[test]
    fn an_object_comes_back_whole_but_what_no_pass_reads() {
        let compact: CompactObject = serde_json::from_value(control_plane()).expect("decodes");
        let object = compact.object().expect("parses again");
        assert_eq!(object.data["spec"]["replicas"], 3);
        assert_eq!(object.data["status"]["ready"], true);
        assert_eq!(
            object.types.as_ref().map(|t| t.kind.as_str()),
            Some("KubeadmControlPlane")
        );
        assert_eq!(
            object
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("team"))
                .map(String::as_str),
            Some("a")
        );
        let annotations = object.metadata.annotations.clone().unwrap_or_default();
        assert_eq!(
            annotations.len(),
            1,
            "the last-applied annotation is gone: {annotations:?}"
        );
        assert_eq!(object.metadata.managed_fields, None);
        assert!(!compact.json().contains("managedFields"));
    }

    #[test]
    fn the_metadata_a_store_keys_on_is_kept_beside_the_text() {
        let compact: CompactObject = serde_json::from_value(control_plane()).expect("decodes");
        let meta = kube::Resource::meta(&compact);
        assert_eq!(meta.name.as_deref(), Some("cp"));
        assert_eq!(meta.namespace.as_deref(), Some("fleet"));
        assert_eq!(meta.uid.as_deref(), Some("u-1"));
        assert_eq!(meta.resource_version.as_deref(), Some("42"));
        assert_eq!(meta.generation, Some(3));
        assert_eq!(meta.labels, None, "labels live in the text only");
        assert_eq!(meta.managed_fields, None::<Vec<ManagedFieldsEntry>>);
    }

    #[test]
    fn a_watch_event_decodes_into_one() {
        let line = serde_json::json!({"type": "MODIFIED", "object": control_plane()}).to_string();
        let event: kube::api::WatchEvent<CompactObject> = serde_json::from_str(&line).expect("decodes");
        let kube::api::WatchEvent::Modified(compact) = event else {
            panic!("not a modification: {event:?}");
        };
        assert_eq!(
            compact.object().expect("parses").metadata.name.as_deref(),
            Some("cp")
        );
    }
}
