//! `capstan get addons -l SELECTOR`: a ClusterAddon is selected by its Cluster's labels (a
//! ring, a region, a tenant: what Clusters are labelled with), or by its own — the operator
//! labels each with its Cluster's name, `cluster.x-k8s.io/cluster-name`. The API server
//! evaluates the selector on both lists, so its syntax and errors are Kubernetes' own.

use std::collections::BTreeSet;

use anyhow::Context;
use kube::api::{Api, DynamicObject, ListParams};
use kube::{Client, ResourceExt};

use capstan_operator::api::ClusterAddon;
use capstan_operator::clusters::cluster_resource;

/// What `-l` selected: the Clusters with the labels and the ClusterAddons with them, each as
/// (namespace, name).
#[derive(Debug, Default)]
pub struct ByCluster {
    clusters: BTreeSet<(String, String)>,
    addons: BTreeSet<(String, String)>,
}

impl ByCluster {
    /// The Clusters and ClusterAddons of `namespace` (`None`: all) that `selector` selects. No
    /// Cluster API in the cluster (its CRD's 404) selects no Clusters.
    pub async fn list(client: &Client, namespace: Option<&str>, selector: &str) -> anyhow::Result<ByCluster> {
        let params = ListParams::default().labels(selector);
        let clusters: Api<DynamicObject> = match namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &cluster_resource()),
            None => Api::all_with(client.clone(), &cluster_resource()),
        };
        let clusters = match clusters.list_metadata(&params).await {
            Ok(list) => list.items.iter().map(key).collect(),
            Err(e) if capstan_operator::kube_error::is_not_found(&e) => BTreeSet::new(),
            Err(e) => return Err(e).context("listing Clusters by their labels"),
        };
        let addons: Api<ClusterAddon> = match namespace {
            Some(ns) => Api::namespaced(client.clone(), ns),
            None => Api::all(client.clone()),
        };
        let addons = addons
            .list_metadata(&params)
            .await
            .context("listing ClusterAddons by their labels")?
            .items
            .iter()
            .map(key)
            .collect();
        Ok(ByCluster { clusters, addons })
    }

    /// Whether `addon` is selected: its Cluster (`spec.clusterRef`, in its namespace) has the
    /// labels, or it has them itself.
    pub fn selects(&self, addon: &ClusterAddon) -> bool {
        let namespace = addon.namespace().unwrap_or_default();
        let cluster = addon.spec.cluster_ref.name.clone().unwrap_or_default();
        self.addons.contains(&(namespace.clone(), addon.name_any()))
            || self.clusters.contains(&(namespace, cluster))
    }
}

fn key<K: ResourceExt>(object: &K) -> (String, String) {
    (object.namespace().unwrap_or_default(), object.name_any())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addon(namespace: &str, name: &str, cluster: &str) -> ClusterAddon {
        let mut addon = ClusterAddon::new(name, Default::default());
        addon.metadata.namespace = Some(namespace.into());
        addon.spec.cluster_ref.name = Some(cluster.into());
        addon
    }

    #[test]
    fn an_addon_is_selected_by_its_cluster_or_itself() {
        let selected = ByCluster {
            clusters: [("a".to_string(), "c1".to_string())].into(),
            addons: [("b".to_string(), "cluster-addon-c2".to_string())].into(),
        };
        #[rustfmt::skip]
        let table = [
            (addon("a", "cluster-addon-c1", "c1"), true),
            // The Cluster of another namespace.
            (addon("b", "cluster-addon-c1", "c1"), false),
            (addon("b", "cluster-addon-c2", "c2"), true),
            (addon("a", "cluster-addon-c2", "c2"), false),
        ];
        for (addon, want) in table {
            assert_eq!(selected.selects(&addon), want, "{:?}", addon.metadata);
        }
    }
}
