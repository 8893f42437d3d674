//! Group/version/kind → resource (plural) and scope, from the API server's discovery
//! documents, one request per group-version, cached. A kind missing from a cached
//! group-version (a CRD that appeared since) refetches that group-version once.
//!
//! It is the one way capstan turns a kind into a REST resource: the applier, Helm's `lookup`,
//! the operator's wait conditions, `delete` stages and reads of referenced objects all go
//! through [`Discovery::resolve`] and [`Discovery::api`], so a long-lived `Discovery` (one
//! per cluster) asks the server once per group-version.
//!
//! Equal group-version documents are kept once per process ([`shared`]): the operator holds a
//! `Discovery` per workload cluster, and a fleet's clusters mostly serve the same kinds.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Weak};

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use tokio::sync::Mutex;

/// The REST resource behind a kind and whether its objects live in namespaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    pub resource: ApiResource,
    pub namespaced: bool,
}

/// Why a kind could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error("the server has no resource for kind {kind} in {api_version} (is its CRD installed?)")]
    UnknownKind {
        api_version: String,
        kind: String,
        /// Whether the server serves the group-version at all (`false`: it answered 404).
        served: bool,
    },
    #[error("discovery of {api_version}: {source}")]
    Api {
        api_version: String,
        #[source]
        source: kube::Error,
    },
}

type Kinds = HashMap<String, ResourceInfo>;

/// One group-version's discovery document: its kinds, or that the server does not serve it.
#[derive(Default, PartialEq, Eq)]
struct GroupVersion {
    served: bool,
    kinds: Kinds,
}

/// The group-version documents some `Discovery` of this process holds, by group-version.
type Documents = HashMap<String, Vec<Weak<GroupVersion>>>;

static DOCUMENTS: LazyLock<std::sync::Mutex<Documents>> = LazyLock::new(Default::default);

/// `fetched`, or an equal document of `api_version` another `Discovery` holds already: one
/// copy per distinct document, however many clients discovered it (about 9 KiB per workload
/// cluster otherwise — issue 36 §3). Documents no `Discovery` holds any more are dropped here.
fn shared(api_version: &str, fetched: GroupVersion) -> Arc<GroupVersion> {
    let mut documents = DOCUMENTS.lock().unwrap_or_else(|p| p.into_inner());
    let known = documents.entry(api_version.to_string()).or_default();
    known.retain(|document| document.strong_count() > 0);
    if let Some(same) = known
        .iter()
        .filter_map(Weak::upgrade)
        .find(|document| **document == fetched)
    {
        return same;
    }
    let document = Arc::new(fetched);
    known.push(Arc::downgrade(&document));
    document
}

/// A discovery cache shared by all applies of one client.
pub struct Discovery {
    client: Client,
    cache: Mutex<HashMap<String, Arc<GroupVersion>>>,
    /// The preferred version of each group asked for ([`Discovery::preferred_api_version`]).
    preferred: Mutex<HashMap<String, String>>,
}

impl Discovery {
    pub fn new(client: Client) -> Discovery {
        Discovery {
            client,
            cache: Mutex::new(HashMap::new()),
            preferred: Mutex::new(HashMap::new()),
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
        if let Some(info) = cache.get(&api_version).and_then(|gv| gv.kinds.get(kind)) {
            return Ok(info.clone());
        }
        let fetched = shared(&api_version, self.fetch(group, version, &api_version).await?);
        let found = fetched.kinds.get(kind).cloned();
        let served = fetched.served;
        cache.insert(api_version.clone(), fetched);
        found.ok_or_else(|| DiscoveryError::UnknownKind {
            api_version,
            kind: kind.to_string(),
            served,
        })
    }

    /// Resolves `api_version` (`apps/v1`, `v1`) and `kind`.
    pub async fn resolve_api_version(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<ResourceInfo, DiscoveryError> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        self.resolve(group, version, kind).await
    }

    /// The dynamic API of a resolved kind: in `namespace` when the kind is namespaced and one
    /// is given, else across the cluster (all namespaces).
    pub fn api(&self, info: &ResourceInfo, namespace: Option<&str>) -> Api<DynamicObject> {
        api_for(
            &self.client,
            &info.resource,
            namespace.filter(|_| info.namespaced),
        )
    }

    /// The client the APIs of [`Discovery::api`] use.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Forgets everything (e.g. after CRDs were applied or deleted).
    pub async fn invalidate(&self) {
        self.cache.lock().await.clear();
        self.preferred.lock().await.clear();
    }

    /// The apiVersion (`group/version`) the server prefers for `group`, cached: how a
    /// reference that names only the group (Cluster API v1beta2's `{apiGroup, kind, name}`)
    /// is read. An unserved group is [`DiscoveryError::UnknownKind`] for `kind`.
    pub async fn preferred_api_version(&self, group: &str, kind: &str) -> Result<String, DiscoveryError> {
        let mut preferred = self.preferred.lock().await;
        if let Some(api_version) = preferred.get(group) {
            return Ok(api_version.clone());
        }
        let groups = self
            .client
            .list_api_groups()
            .await
            .map_err(|source| DiscoveryError::Api {
                api_version: group.to_string(),
                source,
            })?;
        let found = groups
            .groups
            .iter()
            .find(|g| g.name == group)
            .and_then(|g| {
                g.preferred_version
                    .as_ref()
                    .or_else(|| g.versions.first())
                    .map(|v| v.group_version.clone())
            })
            .ok_or_else(|| DiscoveryError::UnknownKind {
                api_version: group.to_string(),
                kind: kind.to_string(),
                served: false,
            })?;
        preferred.insert(group.to_string(), found.clone());
        Ok(found)
    }

    async fn fetch(
        &self,
        group: &str,
        version: &str,
        api_version: &str,
    ) -> Result<GroupVersion, DiscoveryError> {
        let list = if group.is_empty() {
            self.client.list_core_api_resources(version).await
        } else {
            self.client.list_api_group_resources(api_version).await
        };
        let list = match list {
            Ok(list) => list,
            // An unknown group-version is a 404: no kind of it exists (yet).
            Err(kube::Error::Api(status)) if status.code == 404 => return Ok(GroupVersion::default()),
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
        Ok(GroupVersion { served: true, kinds })
    }
}

/// An `Api` for the object's resource in its namespace.
pub fn api_for(client: &Client, resource: &ApiResource, namespace: Option<&str>) -> Api<DynamicObject> {
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document(plural: &str) -> GroupVersion {
        let gvk = GroupVersionKind::gvk("shared.test", "v1", "Widget");
        GroupVersion {
            served: true,
            kinds: Kinds::from([(
                "Widget".to_string(),
                ResourceInfo {
                    resource: ApiResource::from_gvk_with_plural(&gvk, plural),
                    namespaced: true,
                },
            )]),
        }
    }

    #[test]
    fn equal_documents_are_kept_once_and_different_ones_apart() {
        let first = shared("shared.test/v1", document("widgets"));
        let same = shared("shared.test/v1", document("widgets"));
        let other = shared("shared.test/v1", document("gadgets"));
        assert!(Arc::ptr_eq(&first, &same));
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!(other.kinds["Widget"].resource.plural, "gadgets");
        // A document no client holds any more is dropped from the process' list.
        drop(other);
        let _again = shared("shared.test/v1", document("gadgets"));
        let kept = DOCUMENTS.lock().map(|d| d["shared.test/v1"].len()).unwrap_or(0);
        assert_eq!(kept, 2, "the widgets and the new gadgets");
    }
}
