//! The management cluster as a ClusterAddon pass reads it: from reflector stores, so a pass
//! whose inputs did not change sends no GET to the management API server (issue 36 §2).
//!
//! - **Clusters** and the **kubeconfig Secrets** (those labelled with Cluster API's
//!   `cluster.x-k8s.io/cluster-name`, as Cluster API's own cluster cache narrows its Secret
//!   informer) fill their stores from the ClusterAddon controller's watches, before the
//!   event that wakes a pass is handed on: the woken pass reads what woke it.
//! - **ClusterStackReleases** and the kinds a Cluster references (its ControlPlane and
//!   InfraCluster, known only at run time) get a watch of their own each, started on the
//!   first read and shared by every pass. A referenced object that appears, goes or changes
//!   its spec (`generation`) wakes the ClusterAddons of the Clusters naming it, so a pass
//!   waiting for a missing ControlPlane runs as soon as it exists.
//! - A store that has not synced yet, or that misses the object (absent, or outside what the
//!   watch covers), is answered by a GET: a miss is rare (a missing object, a deletion), and
//!   the store never claims an object gone that the API server still has.
//! - Objects enter a store stripped ([`strip_meta`], [`strip_secret`]): no `managedFields`,
//!   no last-applied annotation, and no data in Secrets that are no kubeconfig (Cluster API
//!   labels its CA, etcd and service-account Secrets alike).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::future::FutureExt;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DynamicObject, ObjectMeta};
use kube::runtime::reflector::store::Writer;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::utils::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Client, Resource};
use tokio::sync::mpsc;

mod compact;
pub(crate) mod strip;
pub use compact::CompactObject;
pub use strip::strip_meta;

use crate::api::{ClusterAddon, ClusterStackRelease};
use crate::watch::{Events, Scope, objects, watch_all};
use capstan_apply::discovery::ResourceInfo;

/// Wake-ups queued for the ClusterAddon controller at most.
const WAKE_QUEUE: usize = 1024;

/// The key of a kubeconfig Secret's kubeconfig (the only data a pass reads).
const KUBECONFIG_KEY: &str = "value";

/// [`strip_meta`], and of the data only a kubeconfig Secret's kubeconfig: the other Secrets
/// of a Cluster (keys and certificates) are in the store only so that the watch can be
/// narrowed by label, not by name.
pub fn strip_secret(secret: &mut Secret) {
    strip_meta(&mut secret.metadata);
    secret.string_data = None;
    if crate::watch::kubeconfig_addon(&secret.metadata).is_none() {
        secret.data = None;
    } else if let Some(data) = secret.data.as_mut() {
        data.retain(|key, _| key == KUBECONFIG_KEY);
    }
}

/// [`strip_meta`] of any object.
fn strip<K: Resource>(object: &mut K) {
    strip_meta(object.meta_mut());
}

/// A store that a watch of our own fills; the watch stops when this is dropped.
struct Reflected<K: kube::runtime::reflector::Lookup + Clone + 'static>
where
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    store: Store<K>,
    task: tokio::task::JoinHandle<()>,
}

impl<K: kube::runtime::reflector::Lookup + Clone + 'static> Drop for Reflected<K>
where
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Whether `store` has seen its watch's first list.
pub fn synced<K>(store: &Store<K>) -> bool
where
    K: kube::runtime::reflector::Lookup + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    matches!(store.wait_until_ready().now_or_never(), Some(Ok(())))
}

/// The object of `key` when `store` has synced and holds it; `None` sends the read to the
/// API server.
fn cached<K>(store: &Store<K>, key: &ObjectRef<K>) -> Option<K>
where
    K: kube::runtime::reflector::Lookup + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    if !synced(store) {
        return None;
    }
    store.get(key).map(|object| object.as_ref().clone())
}

/// A referenced kind's group, version and kind, the key of its watch.
type KindKey = (String, String, String);

/// The management cluster's stores, shared by every pass through the operator's context.
pub struct Management {
    client: Client,
    /// The namespaces the watches of our own cover (all when empty).
    namespaces: Vec<String>,
    clusters: Store<DynamicObject>,
    cluster_writer: Mutex<Option<Writer<DynamicObject>>>,
    /// Which Clusters name each ControlPlane and InfraCluster, from the Cluster watch.
    references: Arc<Mutex<References>>,
    secrets: Store<Secret>,
    secret_writer: Mutex<Option<Writer<Secret>>>,
    releases: Mutex<Option<Reflected<ClusterStackRelease>>>,
    /// The ControlPlanes and InfraClusters, as compact text ([`CompactObject`]).
    referenced: Mutex<HashMap<KindKey, Reflected<CompactObject>>>,
    wake_tx: mpsc::Sender<ObjectRef<ClusterAddon>>,
    wake_rx: Mutex<Option<mpsc::Receiver<ObjectRef<ClusterAddon>>>>,
}

impl Management {
    /// Stores for `client`'s cluster; watches of our own cover `namespaces` (all when empty).
    pub fn new(client: Client, namespaces: Vec<String>) -> Management {
        let cluster_writer = Writer::new(crate::clusters::cluster_key());
        let secret_writer = Writer::default();
        let (wake_tx, wake_rx) = mpsc::channel(WAKE_QUEUE);
        Management {
            client,
            namespaces,
            clusters: cluster_writer.as_reader(),
            cluster_writer: Mutex::new(Some(cluster_writer)),
            references: Arc::default(),
            secrets: secret_writer.as_reader(),
            secret_writer: Mutex::new(Some(secret_writer)),
            releases: Mutex::new(None),
            referenced: Mutex::new(HashMap::new()),
            wake_tx,
            wake_rx: Mutex::new(Some(wake_rx)),
        }
    }

    fn scope(&self) -> Scope {
        Scope {
            namespaces: self.namespaces.clone(),
            shard: None,
        }
    }

    /// The store of Clusters [`Management::reflect_clusters`] fills: the process' only one,
    /// every controller reads it.
    pub fn cluster_store(&self) -> Store<DynamicObject> {
        self.clusters.clone()
    }

    /// `events` (a watch of Clusters), stripped and kept in the Cluster store on the way;
    /// only the first watch given fills it.
    pub fn reflect_clusters(&self, events: Events<DynamicObject>) -> Events<DynamicObject> {
        match take(&self.cluster_writer) {
            Some(writer) => {
                let references = self.references.clone();
                events
                    .map_ok(|e| e.modify(strip))
                    .inspect_ok(move |event| lock(&references).on(event))
                    .reflect(writer)
                    .boxed()
            }
            None => events,
        }
    }

    /// `events` (a watch of Cluster API's labelled Secrets), stripped and kept in the Secret
    /// store on the way; only the first watch given fills it.
    pub fn reflect_secrets(&self, events: Events<Secret>) -> Events<Secret> {
        match take(&self.secret_writer) {
            Some(writer) => events.map_ok(|e| e.modify(strip_secret)).reflect(writer).boxed(),
            None => events,
        }
    }

    /// The ClusterAddons to wake because an object their Cluster references changed (taken
    /// once, by the ClusterAddon controller).
    pub fn wake_ups(&self) -> impl futures::Stream<Item = ObjectRef<ClusterAddon>> + Send + 'static {
        futures::stream::unfold(take(&self.wake_rx), |receiver| async move {
            let mut receiver = receiver?;
            let next = receiver.recv().await?;
            Some((next, Some(receiver)))
        })
    }

    /// Cluster `name` of `namespace`, when it exists.
    pub async fn cluster(&self, namespace: &str, name: &str) -> Result<Option<DynamicObject>, kube::Error> {
        let key = ObjectRef::new_with(name, crate::clusters::cluster_key()).within(namespace);
        match cached(&self.clusters, &key) {
            Some(cluster) => Ok(Some(cluster)),
            None => crate::clusters::get(&self.client, namespace, name).await,
        }
    }

    /// Secret `name` of `namespace` (a kubeconfig Secret), when it exists.
    pub async fn kubeconfig_secret(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Secret>, kube::Error> {
        match cached(&self.secrets, &ObjectRef::new(name).within(namespace)) {
            Some(secret) => Ok(Some(secret)),
            None => {
                Api::<Secret>::namespaced(self.client.clone(), namespace)
                    .get_opt(name)
                    .await
            }
        }
    }

    /// ClusterStackRelease `name` of `namespace`, when it exists.
    pub async fn release(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ClusterStackRelease>, kube::Error> {
        let store = {
            let mut releases = lock(&self.releases);
            let reflected = releases.get_or_insert_with(|| {
                let writer = Writer::default();
                let store = writer.as_reader();
                let events = watch_all(self.scope().apis(&self.client), objects(watch_config()));
                Reflected {
                    store,
                    task: spawn(events, writer, |_: &Event<_>, _: &Store<_>| {}),
                }
            });
            reflected.store.clone()
        };
        match cached(&store, &ObjectRef::new(name).within(namespace)) {
            Some(release) => Ok(Some(release)),
            None => {
                Api::<ClusterStackRelease>::namespaced(self.client.clone(), namespace)
                    .get_opt(name)
                    .await
            }
        }
    }

    /// Object `name` in `namespace` of the kind `info` resolves (a Cluster's ControlPlane or
    /// InfraCluster), when it exists; the kind's watch starts on the first read.
    pub async fn referenced(
        &self,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
    ) -> Result<Option<DynamicObject>, kube::Error> {
        let resource = info.resource.clone();
        let store = self.referenced_store(&resource);
        let key = ObjectRef::new_with(name, resource.clone()).within(namespace);
        match cached(&store, &key) {
            Some(object) => object.object().map(Some).map_err(kube::Error::SerdeError),
            None => {
                let namespace = Some(namespace).filter(|_| info.namespaced);
                capstan_apply::discovery::api_for(&self.client, &resource, namespace)
                    .get_opt(name)
                    .await
            }
        }
    }

    /// The store of a referenced kind, its watch started if it was not yet.
    fn referenced_store(&self, resource: &ApiResource) -> Store<CompactObject> {
        let key = (
            resource.group.clone(),
            resource.version.clone(),
            resource.kind.clone(),
        );
        let mut referenced = lock(&self.referenced);
        let reflected = referenced.entry(key).or_insert_with(|| {
            let writer = Writer::new(resource.clone());
            let store = writer.as_reader();
            let events = watch_all(
                self.scope().dynamic_apis(&self.client, resource),
                objects(watch_config()),
            );
            let (references, wake) = (self.references.clone(), self.wake_tx.clone());
            let watched = resource.clone();
            let on_event = move |event: &Event<CompactObject>, before: &Store<CompactObject>| {
                if let Some(object) = changed_reference(event, before, &watched) {
                    let addons = lock(&references).addons_referencing(&watched.kind, object.meta());
                    for addon in addons {
                        // Full (or no ClusterAddon controller): the next pass reads it anyway.
                        let _ = wake.try_send(addon);
                    }
                }
            };
            Reflected {
                store,
                task: spawn(events, writer, on_event),
            }
        });
        reflected.store.clone()
    }
}

/// The config of the watches of our own: served from the API server's watch cache.
fn watch_config() -> watcher::Config {
    watcher::Config::default().any_semantic()
}

/// Runs `events` (stripped) into `writer` until aborted, showing each event and the store as
/// it was before it to `on_event`.
fn spawn<K>(
    events: Events<K>,
    writer: Writer<K>,
    on_event: impl Fn(&Event<K>, &Store<K>) + Send + 'static,
) -> tokio::task::JoinHandle<()>
where
    K: Resource + Clone + Send + Sync + 'static,
    <K as Resource>::DynamicType: Eq + std::hash::Hash + Clone + Send + Sync,
{
    let before = writer.as_reader();
    let stream = events
        .map_ok(|e| e.modify(strip))
        .inspect_ok(move |event| on_event(event, &before))
        .reflect(writer);
    tokio::spawn(async move {
        stream
            .for_each(|event| {
                if let Err(error) = event {
                    // The watch retries with backoff; reads fall back to GETs meanwhile.
                    tracing::warn!(%error, "watching the management cluster");
                }
                futures::future::ready(())
            })
            .await;
    })
}

/// The object of `event` when it should wake the passes of the Clusters referencing it: it
/// appeared, went, or its spec changed (`generation`); status churn waits for the next
/// pass, and the watch's (re)lists wake nothing (a pass waiting for an object reads it by
/// GET until the store has synced).
fn changed_reference<'a, K>(event: &'a Event<K>, before: &Store<K>, resource: &ApiResource) -> Option<&'a K>
where
    K: Resource<DynamicType = ApiResource> + Clone + 'static,
{
    match event {
        Event::Delete(object) => Some(object),
        Event::Apply(object) => {
            let meta = object.meta();
            let name = meta.name.as_deref().unwrap_or_default();
            let mut key = ObjectRef::new_with(name, resource.clone());
            key.namespace = meta.namespace.clone();
            let previous = before.get(&key);
            let same_spec = previous.is_some_and(|p| p.meta().generation == meta.generation);
            (!same_spec).then_some(object)
        }
        Event::Init | Event::InitApply(_) | Event::InitDone => None,
    }
}

/// An object a Cluster names in `controlPlaneRef` or `infrastructureRef`: its kind,
/// namespace (the Cluster's when the reference names none) and name.
type Referenced = (String, String, String);

/// A Cluster by namespace and name.
type ClusterKey = (String, String);

/// What `cluster` names in `controlPlaneRef` and `infrastructureRef`.
fn references_of(cluster: &DynamicObject) -> Vec<Referenced> {
    let cluster_namespace = cluster.metadata.namespace.as_deref().unwrap_or_default();
    ["/spec/controlPlaneRef", "/spec/infrastructureRef"]
        .iter()
        .filter_map(|path| cluster.data.pointer(path))
        .filter_map(|reference| {
            let text = |k: &str| reference.get(k).and_then(|v| v.as_str());
            Some((
                text("kind")?.to_string(),
                text("namespace").unwrap_or(cluster_namespace).to_string(),
                text("name")?.to_string(),
            ))
        })
        .collect()
}

/// Which Clusters name each referenced object, kept as the Cluster watch goes, so an event
/// of a ControlPlane or InfraCluster finds its Clusters without looking at every Cluster —
/// at the creation of a fleet of N Clusters, N² reference checks (the 3,000-Cluster
/// benchmark's profile: `Value::pointer` and string compares among the operator's top
/// symbols).
#[derive(Debug, Default)]
pub struct References {
    by_object: HashMap<Referenced, std::collections::BTreeSet<ClusterKey>>,
    of_cluster: HashMap<ClusterKey, Vec<Referenced>>,
    relisted: crate::watch::Relisted<ClusterKey>,
}

impl References {
    /// Follows one event of the Cluster watch.
    pub fn on(&mut self, event: &Event<DynamicObject>) {
        let key = |cluster: &DynamicObject| {
            (
                cluster.metadata.namespace.clone().unwrap_or_default(),
                cluster.metadata.name.clone().unwrap_or_default(),
            )
        };
        match event {
            Event::Apply(cluster) => self.set(key(cluster), references_of(cluster)),
            Event::InitApply(cluster) => {
                let key = key(cluster);
                self.relisted.saw(&key);
                self.set(key, references_of(cluster));
            }
            Event::Delete(cluster) => self.set(key(cluster), Vec::new()),
            Event::Init => self.relisted.start(),
            Event::InitDone => {
                let gone: Vec<ClusterKey> = self
                    .of_cluster
                    .keys()
                    .filter(|key| !self.relisted.kept(key))
                    .cloned()
                    .collect();
                for key in gone {
                    self.set(key, Vec::new());
                }
                self.relisted.finish();
            }
        }
    }

    fn set(&mut self, cluster: ClusterKey, references: Vec<Referenced>) {
        for old in self.of_cluster.remove(&cluster).unwrap_or_default() {
            if let Some(clusters) = self.by_object.get_mut(&old) {
                clusters.remove(&cluster);
                if clusters.is_empty() {
                    self.by_object.remove(&old);
                }
            }
        }
        if references.is_empty() {
            return;
        }
        for reference in &references {
            self.by_object
                .entry(reference.clone())
                .or_default()
                .insert(cluster.clone());
        }
        self.of_cluster.insert(cluster, references);
    }

    /// The ClusterAddons of the Clusters whose `controlPlaneRef` or `infrastructureRef`
    /// names the object of `kind` with `meta`.
    pub fn addons_referencing(&self, kind: &str, meta: &ObjectMeta) -> Vec<ObjectRef<ClusterAddon>> {
        let referenced = (
            kind.to_string(),
            meta.namespace.clone().unwrap_or_default(),
            meta.name.clone().unwrap_or_default(),
        );
        self.by_object
            .get(&referenced)
            .into_iter()
            .flatten()
            .map(|(namespace, name)| {
                ObjectRef::new(&crate::api::cluster_addon::addon_name(name)).within(namespace)
            })
            .collect()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

fn take<T>(slot: &Mutex<Option<T>>) -> Option<T> {
    lock(slot).take()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
    use std::collections::BTreeMap;
    use strip::LAST_APPLIED_ANNOTATION;

    fn meta(name: &str, annotations: &[(&str, &str)]) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            namespace: Some("fleet".into()),
            labels: Some(BTreeMap::from([(
                crate::watch::CLUSTER_NAME_LABEL.to_string(),
                "web".to_string(),
            )])),
            annotations: Some(
                annotations
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            managed_fields: Some(vec![ManagedFieldsEntry::default()]),
            ..ObjectMeta::default()
        }
    }

    fn secret(name: &str) -> Secret {
        Secret {
            metadata: meta(name, &[(LAST_APPLIED_ANNOTATION, "{…}")]),
            data: Some(BTreeMap::from([
                ("value".to_string(), ByteString(b"kubeconfig".to_vec())),
                ("tls.key".to_string(), ByteString(b"key".to_vec())),
            ])),
            ..Secret::default()
        }
    }

    #[test]
    fn metadata_nobody_reads_is_stripped_and_the_rest_kept() {
        let cases = [
            // (annotations before, annotations after)
            (vec![(LAST_APPLIED_ANNOTATION, "{…}")], None),
            (
                vec![(LAST_APPLIED_ANNOTATION, "{…}"), ("capstan.test/pass", "3")],
                Some(vec![("capstan.test/pass", "3")]),
            ),
            (vec![("a", "b")], Some(vec![("a", "b")])),
            (vec![], None),
        ];
        for (before, after) in cases {
            let mut object = meta("web", &before);
            strip_meta(&mut object);
            let want = after.map(|a| {
                a.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect::<BTreeMap<_, _>>()
            });
            assert_eq!(object.annotations, want, "{before:?}");
            assert_eq!(object.managed_fields, None);
            assert_eq!(object.name.as_deref(), Some("web"));
            assert!(
                object.labels.is_some(),
                "labels are read (the shard, the Cluster)"
            );
        }
    }

    #[test]
    fn a_stored_secret_keeps_only_a_kubeconfig() {
        let mut kubeconfig = secret("web-kubeconfig");
        strip_secret(&mut kubeconfig);
        let keys: Vec<&String> = kubeconfig.data.iter().flatten().map(|(k, _)| k).collect();
        assert_eq!(keys, ["value"]);
        assert_eq!(kubeconfig.metadata.managed_fields, None);
        assert_eq!(kubeconfig.metadata.annotations, None);
        // Cluster API's other Secrets of the Cluster: no data at all.
        for name in ["web-ca", "web-etcd", "web-sa", "other-kubeconfig"] {
            let mut other = secret(name);
            strip_secret(&mut other);
            assert_eq!(other.data, None, "{name}");
            assert_eq!(other.metadata.name.as_deref(), Some(name));
        }
    }

    fn cluster(name: &str, control_plane: &str, namespace: Option<&str>) -> DynamicObject {
        let mut reference = serde_json::json!({"apiVersion": "controlplane.cluster.x-k8s.io/v1beta1",
            "kind": "KubeadmControlPlane", "name": control_plane});
        if let Some(namespace) = namespace {
            reference["namespace"] = namespace.into();
        }
        let object = serde_json::json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
            "metadata": {"name": name, "namespace": "fleet"},
            "spec": {"controlPlaneRef": reference,
                     "infrastructureRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                                           "kind": "DockerCluster", "name": name}}});
        serde_json::from_value(object).expect("a Cluster")
    }

    #[test]
    fn a_referenced_object_wakes_the_addons_of_the_clusters_naming_it() {
        let mut references = References::default();
        for cluster in [
            cluster("web", "web-cp", None),
            cluster("db", "db-cp", None),
            cluster("shared", "web-cp", Some("other")),
        ] {
            references.on(&Event::Apply(cluster));
        }
        let object = |kind: &str, name: &str, namespace: &str| -> DynamicObject {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "controlplane.cluster.x-k8s.io/v1beta1", "kind": kind,
                "metadata": {"name": name, "namespace": namespace}}))
            .expect("an object")
        };
        let woken = |references: &References, object: DynamicObject| -> Vec<String> {
            let kind = object.types.as_ref().map(|t| t.kind.clone()).unwrap_or_default();
            references
                .addons_referencing(&kind, &object.metadata)
                .into_iter()
                .map(|r| format!("{}/{}", r.namespace.unwrap_or_default(), r.name))
                .collect()
        };
        let addon = |cluster: &str| format!("fleet/{}", crate::api::cluster_addon::addon_name(cluster));
        assert_eq!(
            woken(&references, object("KubeadmControlPlane", "web-cp", "fleet")),
            [addon("web")]
        );
        assert_eq!(
            woken(&references, object("KubeadmControlPlane", "web-cp", "other")),
            [addon("shared")]
        );
        assert_eq!(
            woken(&references, object("DockerCluster", "db", "fleet")),
            [addon("db")]
        );
        // Same name, another kind; a name no Cluster uses.
        assert!(woken(&references, object("DockerCluster", "web-cp", "fleet")).is_empty());
        assert!(woken(&references, object("KubeadmControlPlane", "api-cp", "fleet")).is_empty());

        // A Cluster that names another control plane no longer wakes for the old one; two
        // Clusters naming one object both wake.
        references.on(&Event::Apply(cluster("web", "db-cp", None)));
        assert!(woken(&references, object("KubeadmControlPlane", "web-cp", "fleet")).is_empty());
        assert_eq!(
            woken(&references, object("KubeadmControlPlane", "db-cp", "fleet")),
            [addon("db"), addon("web")]
        );
        // Deleted: gone from the index.
        references.on(&Event::Delete(cluster("db", "db-cp", None)));
        assert_eq!(
            woken(&references, object("KubeadmControlPlane", "db-cp", "fleet")),
            [addon("web")]
        );
        assert!(woken(&references, object("DockerCluster", "db", "fleet")).is_empty());
        // A relist that no longer shows a Cluster forgets it.
        references.on(&Event::Init);
        references.on(&Event::InitApply(cluster("web", "db-cp", None)));
        references.on(&Event::InitDone);
        assert!(woken(&references, object("KubeadmControlPlane", "web-cp", "other")).is_empty());
        assert_eq!(
            woken(&references, object("DockerCluster", "web", "fleet")),
            [addon("web")]
        );
        assert_eq!(references.of_cluster.len(), 1);
    }
}
