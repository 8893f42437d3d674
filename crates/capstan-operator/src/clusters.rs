//! Cluster API `Cluster`s as the operator reads them: listed as dynamic objects (capstan does
//! not depend on Cluster API's types), which class each uses ([`ClusterUse`]) and which stack
//! releases they use. The Cluster vocabulary every part of the operator shares — the
//! controllers, the webhook, the hooks and the rollout — lives here (issue 46).

use std::collections::BTreeSet;

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::runtime::reflector::ObjectRef;

use capstan_stack::capi::{CapiError, ClusterFields};
use capstan_stack::name::ReleaseTag;
use capstan_stack::values::{ClusterObjects, ObjectsError};

/// The ClusterStackRelease name a ClusterClass name stands for: release and class names
/// differ only in the version's dots written as dashes (`…-v0-sha.4e0d8f3` and
/// `…-v0-sha-4e0d8f3`). Names that are not stack class names keep that rule too.
pub fn release_name_of_class(class: &str) -> String {
    ReleaseTag::parse_cluster_class(class).map_or_else(|_| class.replace('.', "-"), |tag| tag.tag())
}

/// What a Cluster says about the class it uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterUse {
    pub namespace: String,
    pub name: String,
    /// The class's name, when the Cluster has a topology: `spec.topology.classRef.name`
    /// (`v1beta2`) or `spec.topology.class` (`v1beta1`).
    pub class: Option<String>,
    /// Namespace of the class: `spec.topology.classRef.namespace` (`v1beta2`) or
    /// `spec.topology.classNamespace` (`v1beta1`), else the Cluster's own.
    pub class_namespace: String,
}

impl ClusterUse {
    /// Reads a Cluster (`cluster.x-k8s.io`, `v1beta1` or `v1beta2`) as the API server returns
    /// it. An empty string is no value, as Cluster API defaults it.
    pub fn of(cluster: &DynamicObject) -> ClusterUse {
        let namespace = cluster.metadata.namespace.clone().unwrap_or_default();
        let text = |pointer: &str| {
            cluster
                .data
                .pointer(pointer)
                .and_then(|v| v.as_str())
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        ClusterUse {
            class: text("/spec/topology/classRef/name").or_else(|| text("/spec/topology/class")),
            class_namespace: text("/spec/topology/classRef/namespace")
                .or_else(|| text("/spec/topology/classNamespace"))
                .unwrap_or_else(|| namespace.clone()),
            name: cluster.metadata.name.clone().unwrap_or_default(),
            namespace,
        }
    }

    /// `namespace/name`, as messages name a Cluster.
    pub fn label(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// The `Cluster` resource of the Cluster API version this process speaks now
/// ([`crate::capi_api::current`]): what every request for Clusters uses.
pub fn cluster_resource() -> ApiResource {
    crate::capi_api::cluster_resource_of(crate::capi_api::current())
}

/// The `apiVersion` of Clusters now (`cluster.x-k8s.io/v1beta2`), for owner references.
pub fn api_version() -> String {
    crate::capi_api::current().api_version()
}

/// The key of Clusters in the stores and controllers: one resource whatever the version
/// spoken (a version switch keeps every key), never used for a request.
pub fn cluster_key() -> ApiResource {
    crate::capi_api::cluster_resource_of(capstan_stack::capi::CapiVersion::V1Beta2)
}

/// What capstan reads of a Cluster, typed, from either version ([`ClusterFields`]).
pub fn fields(cluster: &DynamicObject) -> Result<ClusterFields, CapiError> {
    let json = serde_json::to_value(cluster).map_err(|e| CapiError::Field {
        field: "(the object)".into(),
        problem: e.to_string(),
    })?;
    ClusterFields::from_object(&json)
}

/// Whether the Cluster's control plane is initialized (v1beta1 `status.controlPlaneReady`,
/// v1beta2 `status.initialization.controlPlaneInitialized`); an unreadable Cluster's is not.
pub fn control_plane_initialized(cluster: &DynamicObject) -> bool {
    fields(cluster).is_ok_and(|f| f.control_plane_initialized)
}

/// The field [`control_plane_initialized`] reads, as messages name it.
pub fn initialized_field(cluster: &DynamicObject) -> &'static str {
    match capstan_stack::capi::CapiVersion::of_api_version(
        cluster.types.as_ref().map_or("", |t| t.api_version.as_str()),
    ) {
        Some(capstan_stack::capi::CapiVersion::V1Beta2) => "status.initialization.controlPlaneInitialized",
        _ => "status.controlPlaneReady",
    }
}

/// The Cluster and the objects it references as values templates see them, the Cluster in
/// the shape of `templates` ([`ClusterObjects::from_json`]: a v1beta2 Cluster converted for
/// v1beta1 templates, as the cluster-stack operator hands them over).
pub fn template_objects(
    cluster: &DynamicObject,
    control_plane: Option<&DynamicObject>,
    infra_cluster: Option<&DynamicObject>,
    templates: capstan_stack::capi::CapiVersion,
) -> Result<ClusterObjects, ObjectsError> {
    let json = |object: &DynamicObject| serde_json::to_value(object).unwrap_or_default();
    ClusterObjects::from_json(
        &json(cluster),
        control_plane.map(json).as_ref(),
        infra_cluster.map(json).as_ref(),
        templates,
    )
}

/// Whether `owner` names a Cluster (of either version).
pub fn is_cluster_owner(owner: &k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference) -> bool {
    owner.kind == "Cluster" && capstan_stack::capi::CapiVersion::of_api_version(&owner.api_version).is_some()
}

/// The Cluster `addon` belongs to (its controller owner reference), as a store key.
pub fn owner_cluster(addon: &crate::api::ClusterAddon) -> Option<ObjectRef<DynamicObject>> {
    let namespace = addon.metadata.namespace.as_deref()?;
    addon
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|owner| owner.controller == Some(true) && is_cluster_owner(owner))
        .map(|owner| ObjectRef::new_with(&owner.name, cluster_key()).within(namespace))
}

/// The Clusters that may use the classes of `namespace` — those of every namespace, since
/// `spec.topology.classNamespace` names a class in another one (callers filter with
/// [`releases_in_use`] or [`users_of`]) — or why they could not be listed (a missing Cluster
/// CRD is the API server's 404).
pub async fn list(client: &Client, _namespace: &str) -> Result<Vec<DynamicObject>, kube::Error> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &cluster_resource());
    api.list(&ListParams::default()).await.map(|list| list.items)
}

/// Cluster `name` of `namespace`, when it exists. A Cluster resource the API server does not
/// serve (at the version spoken) is an error, not an absent Cluster — whoever reads "gone"
/// would delete what belongs to it — and asks for discovery at once.
pub async fn get(client: &Client, namespace: &str, name: &str) -> Result<Option<DynamicObject>, kube::Error> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &cluster_resource());
    match api.get(name).await {
        Ok(cluster) => Ok(Some(cluster)),
        Err(error) if crate::kube_error::is_resource_not_served(&error) => {
            crate::capi_api::rediscover();
            Err(error)
        }
        Err(error) if crate::kube_error::is_not_found(&error) => Ok(None),
        Err(error) => Err(error),
    }
}

/// Names of the ClusterStackReleases in `namespace` whose classes `clusters` use (dot and dash
/// forms of a version name the same release).
pub fn releases_in_use(clusters: &[DynamicObject], namespace: &str) -> BTreeSet<String> {
    clusters
        .iter()
        .map(ClusterUse::of)
        .filter(|c| c.class_namespace == namespace)
        .filter_map(|c| c.class.map(|class| release_name_of_class(&class)))
        .collect()
}

/// The Clusters of `clusters` that use the class of release `release` in `namespace`, as
/// `namespace/name`.
pub fn users_of(clusters: &[DynamicObject], namespace: &str, release: &str) -> Vec<String> {
    clusters
        .iter()
        .map(ClusterUse::of)
        .filter(|c| c.class_namespace == namespace)
        .filter(|c| {
            c.class
                .as_deref()
                .is_some_and(|class| release_name_of_class(class) == release)
        })
        .map(|c| format!("{}/{}", c.namespace, c.name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(spec: serde_json::Value) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1",
            "kind": "Cluster",
            "metadata": {"name": "c1", "namespace": "tenant"},
            "spec": spec,
        }))
        .unwrap()
    }

    #[test]
    fn cluster_use_reads_both_api_versions() {
        let cases = [
            (serde_json::json!({}), None, "tenant"),
            (
                serde_json::json!({"topology": {"class": "a", "version": "v1.30.1"}}),
                Some("a"),
                "tenant",
            ),
            (
                serde_json::json!({"topology": {"class": "a", "classNamespace": "shared"}}),
                Some("a"),
                "shared",
            ),
            (
                serde_json::json!({"topology": {"class": "", "classNamespace": ""}}),
                None,
                "tenant",
            ),
            (
                serde_json::json!({"topology": {"classRef": {"name": "b"}}}),
                Some("b"),
                "tenant",
            ),
            (
                serde_json::json!({"topology": {"classRef": {"name": "b", "namespace": "shared"}}}),
                Some("b"),
                "shared",
            ),
            (
                serde_json::json!({"topology": {"classRef": {"name": "b", "namespace": ""}}}),
                Some("b"),
                "tenant",
            ),
        ];
        for (spec, class, class_namespace) in cases {
            let usage = ClusterUse::of(&cluster(spec.clone()));
            assert_eq!(usage.class.as_deref(), class, "{spec}");
            assert_eq!(usage.class_namespace, class_namespace, "{spec}");
            assert_eq!(usage.label(), "tenant/c1");
        }
    }
}
