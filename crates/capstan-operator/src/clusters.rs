//! Cluster API `Cluster`s as the operator reads them: listed as dynamic objects (capstan does
//! not depend on Cluster API's types), and which stack releases they use.

use std::collections::BTreeSet;

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};

use super::webhook::validate::{ClusterUse, release_name_of_class};

/// `cluster.x-k8s.io/v1beta1` `Cluster`.
pub fn cluster_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cluster.x-k8s.io", "v1beta1", "Cluster"),
        "clusters",
    )
}

/// The Clusters that may use the classes of `namespace` — those of every namespace, since
/// `spec.topology.classNamespace` names a class in another one (callers filter with
/// [`releases_in_use`] or [`users_of`]) — or why they could not be listed (a missing Cluster
/// CRD is the API server's 404).
pub async fn list(client: &Client, _namespace: &str) -> Result<Vec<DynamicObject>, kube::Error> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &cluster_resource());
    api.list(&ListParams::default()).await.map(|list| list.items)
}

/// Cluster `name` of `namespace`, when it exists.
pub async fn get(client: &Client, namespace: &str, name: &str) -> Result<Option<DynamicObject>, kube::Error> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &cluster_resource());
    api.get_opt(name).await
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
