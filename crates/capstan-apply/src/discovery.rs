//! Group/version/kind → resource (plural) and scope, from the API server's discovery
//! documents, one request per group-version, cached. A kind missing from a cached
//! group-version (a CRD that appeared since) refetches that group-version once.

use std::collections::HashMap;
use std::sync::Arc;

use kube::Client;
use kube::api::{ApiResource, GroupVersionKind};
use tokio::sync::Mutex;

/// The REST resource behind a kind and whether its objects live in namespaces.
#[derive(Debug, Clone)]
pub struct ResourceInfo {
    pub resource: ApiResource,
    pub namespaced: bool,
}

/// Why a kind could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error("the server has no resource for kind {kind} in {api_version} (is its CRD installed?)")]
    UnknownKind { api_version: String, kind: String },
    #[error("discovery of {api_version}: {source}")]
    Api {
        api_version: String,
        #[source]
        source: kube::Error,
    },
}

type Kinds = HashMap<String, ResourceInfo>;

/// A discovery cache shared by all applies of one client.
pub struct Discovery {
    client: Client,
    cache: Mutex<HashMap<String, Arc<Kinds>>>,
}

impl Discovery {
    pub fn new(client: Client) -> Discovery {
        Discovery {
            client,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// Resolves a kind; a miss in the cache refetches its group-version once.
    pub async fn resolve(
        &self,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Result<ResourceInfo, DiscoveryError> {
        let api_version = if group.is_empty() {
            version.to_string()
        } else {
            format!("{group}/{version}")
        };
        let mut cache = self.cache.lock().await;
        if let Some(info) = cache.get(&api_version).and_then(|kinds| kinds.get(kind)) {
            return Ok(info.clone());
        }
        let kinds = self.fetch(group, version, &api_version).await?;
        let found = kinds.get(kind).cloned();
        cache.insert(api_version.clone(), Arc::new(kinds));
        found.ok_or_else(|| DiscoveryError::UnknownKind {
            api_version,
            kind: kind.to_string(),
        })
    }

    /// Forgets everything (e.g. after CRDs were applied or deleted).
    pub async fn invalidate(&self) {
        self.cache.lock().await.clear();
    }

    async fn fetch(&self, group: &str, version: &str, api_version: &str) -> Result<Kinds, DiscoveryError> {
        let list = if group.is_empty() {
            self.client.list_core_api_resources(version).await
        } else {
            self.client.list_api_group_resources(api_version).await
        };
        let list = match list {
            Ok(list) => list,
            // An unknown group-version is a 404: no kind of it exists (yet).
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(Kinds::new()),
            Err(source) => {
                return Err(DiscoveryError::Api {
                    api_version: api_version.to_string(),
                    source,
                });
            }
        };
        let mut kinds = Kinds::new();
        for r in list.resources {
            // Subresources (`deployments/status`) share their parent's kind.
            if r.name.contains('/') {
                continue;
            }
            let gvk = GroupVersionKind::gvk(group, version, &r.kind);
            kinds.insert(
                r.kind.clone(),
                ResourceInfo {
                    resource: ApiResource::from_gvk_with_plural(&gvk, &r.name),
                    namespaced: r.namespaced,
                },
            );
        }
        Ok(kinds)
    }
}
