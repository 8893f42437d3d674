//! What the operator watches, and which changes wake a reconcile.
//!
//! - **Scope**: with `-n` the watches are namespaced (one per namespace, merged), so the
//!   operator needs no cluster-wide list or watch rights; with `--shard` (or without, for the
//!   default shard) they carry the shard's label selector ([`crate::shard`]).
//! - **Predicates**: a Cluster wakes its reconciles only when its class, Kubernetes version,
//!   `controlPlaneReady`, deletion or shard changes; a Secret only when it is a Cluster's
//!   `<cluster>-kubeconfig` and its data (or identity, or deletion) changes.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use futures::stream::{self, BoxStream, StreamExt};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DynamicObject, ObjectMeta};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, watcher as watch_api};

use kube::{Client, Resource};

use crate::api::ClusterAddon;
use crate::api::cluster_addon::addon_name;

/// The label Cluster API puts on a Cluster's Secrets (kubeconfig, certificates).
pub const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";

/// A watch's events, from one or several namespaces.
pub type Events<K> = BoxStream<'static, Result<Event<K>, watcher::Error>>;

/// Where the operator looks: its namespaces (all when empty) and its shard.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub namespaces: Vec<String>,
    /// `None`: the default shard.
    pub shard: Option<String>,
}

impl Scope {
    /// One API per watched namespace, or one over all namespaces.
    pub fn apis<K>(&self, client: &Client) -> Vec<Api<K>>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        if self.namespaces.is_empty() {
            return vec![Api::all(client.clone())];
        }
        self.namespaces
            .iter()
            .map(|ns| Api::namespaced(client.clone(), ns))
            .collect()
    }

    /// [`Scope::apis`] of a namespaced kind known at run time (Cluster API's).
    pub fn dynamic_apis<K>(&self, client: &Client, resource: &ApiResource) -> Vec<Api<K>>
    where
        K: Resource<DynamicType = ApiResource, Scope = kube::core::DynamicResourceScope>,
    {
        if self.namespaces.is_empty() {
            return vec![Api::all_with(client.clone(), resource)];
        }
        self.namespaces
            .iter()
            .map(|ns| Api::namespaced_with(client.clone(), ns, resource))
            .collect()
    }

    /// `config` narrowed to the objects of this shard.
    pub fn sharded(&self, config: watcher::Config) -> watcher::Config {
        config.labels(&crate::shard::selector(self.shard.as_deref()))
    }

    /// Whether this operator reconciles an object with `meta`: in a watched namespace and in
    /// its shard. Checked again at reconcile, for objects a trigger or a stale event names.
    pub fn admits(&self, meta: &ObjectMeta) -> bool {
        let in_namespace = self.namespaces.is_empty()
            || meta
                .namespace
                .as_ref()
                .is_some_and(|ns| self.namespaces.contains(ns));
        in_namespace && crate::shard::owns(self.shard.as_deref(), meta)
    }

    /// `event` of a watch wider than the scope (the ClusterStacks', whose store serves every
    /// shard), as the scope's trigger sees it: an object outside the scope is gone, so
    /// [`changed`] forgets it and it wakes a reconcile when it comes back.
    pub fn as_seen_by_trigger<K: Resource>(&self, event: Event<K>) -> Event<K> {
        match event {
            Event::Apply(object) | Event::InitApply(object) if !self.admits(object.meta()) => {
                Event::Delete(object)
            }
            other => other,
        }
    }

    /// `events` of a watch wider than the scope (one the whole process shares,
    /// [`crate::fan_out`]) as a watch of the scope alone would show them: objects of other
    /// namespaces or shards are left out, and one that leaves the scope (relabelled to another
    /// shard) is deleted, as a label-selected watch reports it.
    pub fn narrow<K: Resource + Send + 'static>(&self, events: Events<K>) -> Events<K> {
        let mut narrowing = Narrowing::new(self.clone());
        events
            .filter_map(move |event| {
                futures::future::ready(match event {
                    Ok(event) => narrowing.on(event).map(Ok),
                    Err(error) => Some(Err(error)),
                })
            })
            .boxed()
    }

    /// The objects of `store` this scope admits: a store a watch wider than the scope fills
    /// (see [`Scope::narrow`]).
    pub fn admitted<K>(&self, store: &kube::runtime::reflector::Store<K>) -> Vec<std::sync::Arc<K>>
    where
        K: Resource + Clone + 'static,
        K::DynamicType: Eq + Hash + Clone,
    {
        let mut objects = store.state();
        objects.retain(|object| self.admits(object.meta()));
        objects
    }

    /// Whether namespaces are merged (several `-n`).
    fn merges(&self) -> bool {
        self.namespaces.len() > 1
    }
}

/// The keys a relist under way has shown, so that what a watch's follower keeps per object can
/// forget, once the relist is done, the objects it no longer showed (gone while the watch was
/// down).
#[derive(Debug)]
pub struct Relisted<Key>(Option<std::collections::HashSet<Key>>);

impl<Key> Default for Relisted<Key> {
    fn default() -> Relisted<Key> {
        Relisted(None)
    }
}

impl<Key: std::hash::Hash + Eq> Relisted<Key> {
    /// A relist starts (`Event::Init`).
    pub fn start(&mut self) {
        self.0 = Some(std::collections::HashSet::new());
    }

    /// The relist under way showed `key` (`Event::InitApply`).
    pub fn saw(&mut self, key: &Key)
    where
        Key: Clone,
    {
        if let Some(shown) = &mut self.0 {
            shown.insert(key.clone());
        }
    }

    /// The relist is done (`Event::InitDone`): whether `key` was shown by it (every key, when
    /// no relist was under way). Call [`Relisted::finish`] after the last question.
    pub fn kept(&self, key: &Key) -> bool {
        self.0.as_ref().is_none_or(|shown| shown.contains(key))
    }

    /// Ends the relist.
    pub fn finish(&mut self) {
        self.0 = None;
    }
}

/// The state of [`Scope::narrow`]: the objects inside the scope so far.
pub struct Narrowing {
    scope: Scope,
    inside: std::collections::HashSet<(Option<String>, String)>,
    relisted: Relisted<(Option<String>, String)>,
}

impl Narrowing {
    pub fn new(scope: Scope) -> Narrowing {
        Narrowing {
            scope,
            inside: Default::default(),
            relisted: Relisted::default(),
        }
    }

    /// What a watch of the scope alone would have shown for `event`, if anything.
    pub fn on<K: Resource>(&mut self, event: Event<K>) -> Option<Event<K>> {
        let key = |object: &K| {
            let meta = object.meta();
            (meta.namespace.clone(), meta.name.clone().unwrap_or_default())
        };
        match event {
            Event::Apply(object) | Event::InitApply(object) if !self.scope.admits(object.meta()) => {
                self.inside.remove(&key(&object)).then_some(Event::Delete(object))
            }
            Event::Apply(object) => {
                self.inside.insert(key(&object));
                Some(Event::Apply(object))
            }
            Event::InitApply(object) => {
                let key = key(&object);
                self.relisted.saw(&key);
                self.inside.insert(key);
                Some(Event::InitApply(object))
            }
            Event::Delete(object) => {
                let was_inside = self.inside.remove(&key(&object));
                (was_inside || self.scope.admits(object.meta())).then_some(Event::Delete(object))
            }
            Event::Init => {
                self.relisted.start();
                Some(Event::Init)
            }
            Event::InitDone => {
                let relisted = &mut self.relisted;
                self.inside.retain(|key| relisted.kept(key));
                relisted.finish();
                Some(Event::InitDone)
            }
        }
    }
}

/// The events of `watch` run on every API of `apis`, with kube's default backoff, as one
/// stream (see [`Merged`] for several).
pub fn watch_all<K, F, S>(apis: Vec<Api<K>>, watch: F) -> Events<K>
where
    K: Resource + Clone + Send + 'static,
    F: Fn(Api<K>) -> S,
    S: futures::Stream<Item = Result<Event<K>, watcher::Error>> + Send + 'static,
{
    let count = apis.len();
    let streams: Vec<_> = apis
        .into_iter()
        .enumerate()
        .map(|(index, api)| watch(api).default_backoff().map(move |e| (index, e)).boxed())
        .collect();
    if count == 1 {
        return streams
            .into_iter()
            .next()
            .map(|s| s.map(|(_, e)| e).boxed())
            .unwrap_or_else(|| stream::empty().boxed());
    }
    let mut merged = Merged::new(count);
    stream::select_all(streams)
        .flat_map(move |(index, event)| {
            let out: Vec<Result<Event<K>, watcher::Error>> = match event {
                Ok(event) => merged.on(index, event).into_iter().map(Ok).collect(),
                Err(error) => vec![Err(error)],
            };
            stream::iter(out)
        })
        .boxed()
}

/// [`watch_all`] of Cluster API's kind `resource_of` gives for the version spoken, in
/// `scope`, restarted on the new version when it changes ([`crate::capi_api::following`]).
pub fn capi_watch(
    client: &Client,
    scope: &Scope,
    resource_of: fn(capstan_stack::capi::CapiVersion) -> ApiResource,
    config: watcher::Config,
) -> Events<kube::api::DynamicObject> {
    let (client, scope) = (client.clone(), scope.clone());
    crate::capi_api::following(move |version| {
        watch_all(
            scope.dynamic_apis(&client, &resource_of(version)),
            objects(config.clone()),
        )
    })
}

/// The watcher of `api` with `config` (a helper for [`watch_all`]), its objects without
/// `managedFields`: no reconcile reads them, and the stores hold every Cluster, ClusterAddon
/// and release of the fleet (a few KiB each of field-manager bookkeeping).
pub fn objects<K>(config: watcher::Config) -> impl Fn(Api<K>) -> Events<K>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    move |api| {
        watch_api(api, config.clone())
            .modify(|object| object.meta_mut().managed_fields = None)
            .boxed()
    }
}

/// Several namespaces' watches as one watch. kube's reflector keeps one store per watch and
/// replaces it whole on a (re)list, so one namespace's relist would drop the others' objects.
/// The merge turns each namespace's lists into applies and deletes against what it had, and
/// lists everything once, as one initial list, when every namespace has listed.
#[derive(Debug)]
pub struct Merged<K> {
    /// Per namespace: the objects it has, by name; and the relist being read.
    current: Vec<HashMap<String, K>>,
    relist: Vec<Option<HashMap<String, K>>>,
    listed: Vec<bool>,
    /// Whether the first whole list went out.
    started: bool,
}

impl<K: Resource + Clone> Merged<K> {
    pub fn new(count: usize) -> Merged<K> {
        Merged {
            current: vec![HashMap::new(); count],
            relist: vec![None; count],
            listed: vec![false; count],
            started: false,
        }
    }

    /// The events to pass on for `event` of namespace `index`.
    pub fn on(&mut self, index: usize, event: Event<K>) -> Vec<Event<K>> {
        let name = |object: &K| object.meta().name.clone().unwrap_or_default();
        match event {
            Event::Apply(object) => {
                self.current[index].insert(name(&object), object.clone());
                if self.started {
                    vec![Event::Apply(object)]
                } else {
                    Vec::new()
                }
            }
            Event::Delete(object) => {
                self.current[index].remove(&name(&object));
                if self.started {
                    vec![Event::Delete(object)]
                } else {
                    Vec::new()
                }
            }
            Event::Init => {
                self.relist[index] = Some(HashMap::new());
                Vec::new()
            }
            Event::InitApply(object) => {
                self.relist[index]
                    .get_or_insert_with(HashMap::new)
                    .insert(name(&object), object);
                Vec::new()
            }
            Event::InitDone => {
                let fresh = self.relist[index].take().unwrap_or_default();
                let old = std::mem::replace(&mut self.current[index], fresh);
                self.listed[index] = true;
                if !self.started {
                    if !self.listed.iter().all(|l| *l) {
                        return Vec::new();
                    }
                    self.started = true;
                    let mut out = vec![Event::Init];
                    for objects in &self.current {
                        out.extend(objects.values().cloned().map(Event::InitApply));
                    }
                    out.push(Event::InitDone);
                    return out;
                }
                let mut out: Vec<Event<K>> = old
                    .into_iter()
                    .filter(|(name, _)| !self.current[index].contains_key(name))
                    .map(|(_, gone)| Event::Delete(gone))
                    .collect();
                out.extend(self.current[index].values().cloned().map(Event::Apply));
                out
            }
        }
    }
}

/// What a predicate hashes: the object's fields a reconcile reads; `None`: the object never
/// wakes one.
pub type Trigger<K> = fn(&K) -> Option<u64>;

/// The objects of `events` whose [`Trigger`] value changed since this watch last saw them;
/// with `deletes`, deleted objects too. Unlike kube's `predicate_filter`, an object that left
/// the watch (deleted, or moved out of the label selector: another shard) is forgotten, so it
/// wakes a reconcile when it comes back unchanged.
pub fn changed<K, S>(
    events: S,
    trigger: Trigger<K>,
    deletes: bool,
) -> BoxStream<'static, Result<K, watcher::Error>>
where
    K: Resource + Send + 'static,
    S: futures::Stream<Item = Result<Event<K>, watcher::Error>> + Send + 'static,
{
    let mut changes = Changes::new(trigger, deletes);
    events
        .flat_map(move |event| {
            let out: Vec<Result<K, watcher::Error>> = match event {
                Ok(event) => changes.on(event).into_iter().map(Ok).collect(),
                Err(error) => vec![Err(error)],
            };
            stream::iter(out)
        })
        .boxed()
}

/// The state of [`changed`]: the trigger value last seen per object.
pub struct Changes<K> {
    trigger: Trigger<K>,
    deletes: bool,
    seen: HashMap<(Option<String>, String), u64>,
    relisted: Relisted<(Option<String>, String)>,
}

impl<K: Resource> Changes<K> {
    pub fn new(trigger: Trigger<K>, deletes: bool) -> Changes<K> {
        Changes {
            trigger,
            deletes,
            seen: HashMap::new(),
            relisted: Relisted::default(),
        }
    }

    /// The object `event` passes on, if any.
    pub fn on(&mut self, event: Event<K>) -> Option<K> {
        let key = |object: &K| {
            let meta = object.meta();
            (meta.namespace.clone(), meta.name.clone().unwrap_or_default())
        };
        match event {
            Event::Init => {
                self.relisted.start();
                None
            }
            Event::InitDone => {
                let relisted = &mut self.relisted;
                self.seen.retain(|key, _| relisted.kept(key));
                relisted.finish();
                None
            }
            Event::Delete(object) => {
                self.seen.remove(&key(&object));
                self.deletes.then_some(object)
            }
            Event::Apply(object) | Event::InitApply(object) => {
                let key = key(&object);
                self.relisted.saw(&key);
                let value = (self.trigger)(&object)?;
                (self.seen.insert(key, value) != Some(value)).then_some(object)
            }
        }
    }
}

/// What must change on a Cluster to wake its reconciles: the class (and its namespace), the
/// Kubernetes version, whether the control plane is initialized (`status.controlPlaneReady`,
/// v1beta2 `status.initialization.controlPlaneInitialized`), the deletion mark, the object itself (a
/// Cluster made again) and its shard. Other edits (status, labels, replicas) wait for the next
/// drift pass.
pub fn cluster_trigger(cluster: &DynamicObject) -> Option<u64> {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let text = |path: &str| cluster.data.pointer(path).map(|v| v.to_string());
    // The addon values are templated from the whole Cluster (`.Cluster.spec…`,
    // `.Cluster.metadata.annotations…`, and the user-values annotations), so every change
    // of its spec, labels or annotations may change the render; the inputs hash keeps a
    // change that does not from rendering or applying anything. Status churn (phase,
    // conditions) does not wake it, except `controlPlaneReady`, a gate.
    text("/spec").hash(&mut hasher);
    cluster.metadata.labels.hash(&mut hasher);
    cluster.metadata.annotations.hash(&mut hasher);
    crate::clusters::control_plane_initialized(cluster).hash(&mut hasher);
    cluster.metadata.deletion_timestamp.is_some().hash(&mut hasher);
    cluster.metadata.uid.hash(&mut hasher);
    crate::shard::key_of(&cluster.metadata).hash(&mut hasher);
    Some(hasher.finish())
}

/// What must change on a kubeconfig Secret to wake its ClusterAddon: its data, deletion mark
/// or identity. A relabel or annotation does not; a Secret that is no kubeconfig never does.
pub fn kubeconfig_trigger(secret: &Secret) -> Option<u64> {
    kubeconfig_addon(&secret.metadata)?;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for (key, value) in secret.data.iter().flatten() {
        key.hash(&mut hasher);
        value.0.hash(&mut hasher);
    }
    secret.metadata.deletion_timestamp.is_some().hash(&mut hasher);
    secret.metadata.uid.hash(&mut hasher);
    Some(hasher.finish())
}

/// The ClusterAddon a Secret wakes: only a Cluster's kubeconfig, `<cluster>-kubeconfig`
/// labelled with its Cluster (Cluster API's other Secrets — CA, etcd, service account,
/// proxy — carry the label too).
pub fn kubeconfig_addon(meta: &ObjectMeta) -> Option<ObjectRef<ClusterAddon>> {
    let cluster = meta.labels.as_ref()?.get(CLUSTER_NAME_LABEL)?;
    let name = meta.name.as_deref()?;
    if name.strip_suffix("-kubeconfig") != Some(cluster.as_str()) {
        return None;
    }
    let namespace = meta.namespace.as_deref()?;
    Some(ObjectRef::new(&addon_name(cluster)).within(namespace))
}

/// The kubeconfig Secrets of `scope`'s namespaces that wake a ClusterAddon, each once per
/// change of [`kubeconfig_trigger`] (a watch on Cluster API's cluster-name label: a field
/// selector cannot match a name suffix, so the name is checked here).
/// Every Secret seen goes through `store` first (the management cluster's Secret store: the
/// caller's, so that this module names none).
pub fn kubeconfig_secrets(
    client: &Client,
    scope: &Scope,
    store: impl FnOnce(Events<Secret>) -> Events<Secret>,
) -> BoxStream<'static, Result<Secret, watcher::Error>> {
    let config = watcher::Config::default()
        .labels(CLUSTER_NAME_LABEL)
        .any_semantic();
    changed(
        store(watch_all(scope.apis::<Secret>(client), objects(config))),
        kubeconfig_trigger,
        true,
    )
}

/// Whether events of several namespaces are merged (for the logs).
pub fn describe(scope: &Scope) -> String {
    let namespaces = if scope.namespaces.is_empty() {
        "all namespaces".to_string()
    } else if scope.merges() {
        format!("namespaces {} (merged watches)", scope.namespaces.join(", "))
    } else {
        format!("namespace {}", scope.namespaces[0])
    };
    format!(
        "{namespaces}, shard {}",
        scope.shard.as_deref().unwrap_or("(default: unlabelled objects)")
    )
}

/// What a watch event must change to start a reconcile: the spec (generation), the deletion
/// mark, the finalizers or the shard (an object that comes back into this shard is taken
/// over at once); status writes alone do not.
pub fn spec_or_deletion<K: Resource>(object: &K) -> Option<u64> {
    use std::hash::{Hash, Hasher};
    let meta = object.meta();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    meta.generation.hash(&mut hasher);
    meta.deletion_timestamp.is_some().hash(&mut hasher);
    meta.finalizers.hash(&mut hasher);
    meta.uid.hash(&mut hasher);
    crate::shard::key_of(meta).hash(&mut hasher);
    // Asking to take over objects another inventory owns is acted on at once.
    let take_over = crate::api::TAKE_OVER_ANNOTATION;
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(take_over))
        .hash(&mut hasher);
    Some(hasher.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    fn object(name: &str, version: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                resource_version: Some(version.into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    /// Events as `kind name@version`, to compare streams as text.
    fn show(events: &[Event<ConfigMap>]) -> Vec<String> {
        let it = |o: &ConfigMap| {
            format!(
                "{}@{}",
                o.metadata.name.as_deref().unwrap_or(""),
                o.metadata.resource_version.as_deref().unwrap_or("")
            )
        };
        events
            .iter()
            .map(|e| match e {
                Event::Init => "init".to_string(),
                Event::InitDone => "done".to_string(),
                Event::InitApply(o) => format!("list {}", it(o)),
                Event::Apply(o) => format!("apply {}", it(o)),
                Event::Delete(o) => format!("delete {}", it(o)),
            })
            .collect()
    }

    /// A ConfigMap `name` at `version`, in shard `shard` (`None`: the default shard).
    fn sharded(name: &str, version: &str, shard: Option<&str>) -> ConfigMap {
        let mut object = object(name, version);
        object.metadata.labels =
            shard.map(|key| [(crate::shard::SHARD_LABEL.to_string(), key.to_string())].into());
        object
    }

    #[test]
    fn a_narrowed_watch_shows_what_a_watch_of_the_scope_would() {
        let scope = Scope {
            namespaces: Vec::new(),
            shard: Some("a".into()),
        };
        let mut narrowing = Narrowing::new(scope);
        // (event in, what a watch of shard a alone shows)
        let table: Vec<(Event<ConfigMap>, Option<&str>)> = vec![
            (Event::Init, Some("init")),
            (Event::InitApply(sharded("x", "1", Some("a"))), Some("list x@1")),
            (Event::InitApply(sharded("y", "1", Some("b"))), None),
            (Event::InitApply(sharded("z", "1", None)), None),
            (Event::InitDone, Some("done")),
            // Another shard's changes and deletions are not seen.
            (Event::Apply(sharded("y", "2", Some("b"))), None),
            (Event::Delete(sharded("y", "3", Some("b"))), None),
            // Relabelled into the scope: it appears; out of it: it is deleted, once.
            (Event::Apply(sharded("z", "2", Some("a"))), Some("apply z@2")),
            (Event::Apply(sharded("z", "3", Some("b"))), Some("delete z@3")),
            (Event::Apply(sharded("z", "4", Some("b"))), None),
            // Deleted while inside.
            (Event::Delete(sharded("x", "2", Some("a"))), Some("delete x@2")),
            // A relist forgets what it no longer shows: w, gone meanwhile, is not deleted
            // again when it shows up relabelled.
            (Event::Apply(sharded("w", "1", Some("a"))), Some("apply w@1")),
            (Event::Init, Some("init")),
            (Event::InitDone, Some("done")),
            (Event::Apply(sharded("w", "2", Some("b"))), None),
        ];
        for (index, (event, expected)) in table.into_iter().enumerate() {
            let shown = narrowing.on(event).map(|e| show(&[e]).remove(0));
            assert_eq!(shown.as_deref(), expected, "row {index}");
        }
    }

    #[test]
    fn merged_namespaces_list_once_then_relist_without_dropping_the_others() {
        let mut merged = Merged::<ConfigMap>::new(2);
        // Namespace 0 lists a; nothing goes out until namespace 1 has listed too.
        assert!(merged.on(0, Event::Init).is_empty());
        assert!(merged.on(0, Event::InitApply(object("a", "1"))).is_empty());
        assert!(merged.on(0, Event::InitDone).is_empty());
        assert!(merged.on(0, Event::Apply(object("a", "2"))).is_empty());
        assert!(merged.on(1, Event::Init).is_empty());
        assert!(merged.on(1, Event::InitApply(object("b", "1"))).is_empty());
        let first = merged.on(1, Event::InitDone);
        assert_eq!(first.first().map(|e| matches!(e, Event::Init)), Some(true));
        assert_eq!(first.last().map(|e| matches!(e, Event::InitDone)), Some(true));
        let mut listed = show(&first[1..first.len() - 1]);
        listed.sort();
        assert_eq!(listed, vec!["list a@2", "list b@1"]);

        // Then changes pass as they come.
        assert_eq!(
            show(&merged.on(1, Event::Apply(object("c", "3")))),
            vec!["apply c@3"]
        );
        assert_eq!(
            show(&merged.on(0, Event::Delete(object("a", "4")))),
            vec!["delete a@4"]
        );

        // Namespace 1 relists (its watch expired): b is gone, c changed, d is new; namespace
        // 0's objects are not touched (a whole-store relist would have dropped them).
        assert_eq!(
            show(&merged.on(0, Event::Apply(object("e", "5")))),
            vec!["apply e@5"]
        );
        assert!(merged.on(1, Event::Init).is_empty());
        assert!(merged.on(1, Event::InitApply(object("c", "6"))).is_empty());
        assert!(merged.on(1, Event::InitApply(object("d", "6"))).is_empty());
        let mut relisted = show(&merged.on(1, Event::InitDone));
        relisted.sort();
        assert_eq!(relisted, vec!["apply c@6", "apply d@6", "delete b@1"]);
        assert_eq!(merged.current[0].len(), 1, "namespace 0 keeps e");
    }

    /// A trigger on the ConfigMap's data only.
    fn data_of(map: &ConfigMap) -> Option<u64> {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        map.data.hash(&mut hasher);
        Some(hasher.finish())
    }

    fn with_data(name: &str, version: &str, value: &str) -> ConfigMap {
        let mut map = object(name, version);
        map.data = Some([("k".to_string(), value.to_string())].into());
        map
    }

    #[test]
    fn an_object_that_left_wakes_again_when_it_comes_back_unchanged() {
        let mut changes = Changes::new(data_of, false);
        let passed = |out: Option<ConfigMap>| out.map(|m| show(&[Event::Apply(m)]).remove(0));
        // (event, passed on)
        let table: Vec<(Event<ConfigMap>, Option<&str>)> = vec![
            (Event::Init, None),
            (Event::InitApply(with_data("a", "1", "x")), Some("apply a@1")),
            (Event::InitApply(with_data("b", "1", "x")), Some("apply b@1")),
            (Event::InitDone, None),
            // A status write: the trigger value is the same.
            (Event::Apply(with_data("a", "2", "x")), None),
            (Event::Apply(with_data("a", "3", "y")), Some("apply a@3")),
            // Out of the selector (another shard), then back unchanged: woken again.
            (Event::Delete(with_data("a", "4", "y")), None),
            (Event::Apply(with_data("a", "5", "y")), Some("apply a@5")),
            // A relist without b (it left while the watch was down), then b back.
            (Event::Init, None),
            (Event::InitApply(with_data("a", "5", "y")), None),
            (Event::InitDone, None),
            (Event::Apply(with_data("b", "6", "x")), Some("apply b@6")),
        ];
        for (i, (event, want)) in table.into_iter().enumerate() {
            assert_eq!(passed(changes.on(event)).as_deref(), want, "row {i}");
        }
        let mut with_deletes = Changes::new(data_of, true);
        assert!(with_deletes.on(Event::Apply(with_data("a", "1", "x"))).is_some());
        assert!(with_deletes.on(Event::Delete(with_data("a", "2", "x"))).is_some());
    }

    fn cluster(value: serde_json::Value) -> DynamicObject {
        serde_json::from_value(value).expect("cluster")
    }

    #[test]
    fn a_cluster_wakes_reconciles_only_for_what_they_read() {
        let base = json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
            "metadata": {"name": "c", "namespace": "ns", "uid": "u1", "resourceVersion": "1"},
            "spec": {"topology": {"class": "docker-ferrol-1-27-v1", "version": "v1.27.3"},
                     "paused": false},
            "status": {"controlPlaneReady": false, "phase": "Provisioning", "conditions": []},
        });
        let edit = |path: &str, value: serde_json::Value| {
            let mut changed = base.clone();
            *changed.pointer_mut(path).expect("path") = value;
            cluster(changed)
        };
        let with_meta = |key: &str, value: serde_json::Value| {
            let mut changed = base.clone();
            changed["metadata"][key] = value;
            cluster(changed)
        };
        let before = cluster_trigger(&cluster(base.clone()));
        // (what changed, wakes)
        let table: Vec<(&str, DynamicObject, bool)> = vec![
            (
                "class",
                edit("/spec/topology/class", json!("docker-ferrol-1-27-v2")),
                true,
            ),
            ("version", edit("/spec/topology/version", json!("v1.28.0")), true),
            (
                "controlPlaneReady",
                edit("/status/controlPlaneReady", json!(true)),
                true,
            ),
            (
                "deletion",
                with_meta("deletionTimestamp", json!("2026-01-01T00:00:00Z")),
                true,
            ),
            ("made again", with_meta("uid", json!("u2")), true),
            (
                "shard",
                with_meta("labels", json!({crate::shard::SHARD_LABEL: "a"})),
                true,
            ),
            ("status phase", edit("/status/phase", json!("Provisioned")), false),
            // Values may read any of these (`.Cluster.spec`, `.Cluster.metadata`).
            ("paused", edit("/spec/paused", json!(true)), true),
            (
                "conditions",
                edit("/status/conditions", json!([{"type": "Ready"}])),
                false,
            ),
            ("resourceVersion", with_meta("resourceVersion", json!("9")), false),
            ("other label", with_meta("labels", json!({"team": "x"})), true),
            ("annotation", with_meta("annotations", json!({"note": "x"})), true),
            (
                "managedFields",
                with_meta("managedFields", json!([{"manager": "x"}])),
                false,
            ),
        ];
        for (what, changed, wakes) in table {
            assert_eq!(cluster_trigger(&changed) != before, wakes, "{what}");
        }
        // v1beta2: the gate is `status.initialization.controlPlaneInitialized`.
        let v1beta2 = |initialized: bool| {
            cluster(json!({
                "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
                "metadata": {"name": "c", "namespace": "ns", "uid": "u1"},
                "spec": {"topology": {"classRef": {"name": "docker-ferrol-1-27-v1"}, "version": "v1.27.3"}},
                "status": {"initialization": {"controlPlaneInitialized": initialized}, "phase": "Provisioning"},
            }))
        };
        assert_ne!(cluster_trigger(&v1beta2(false)), cluster_trigger(&v1beta2(true)));
    }

    fn secret(name: &str, cluster: Option<&str>, data: &str) -> Secret {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "ns", "uid": "s1",
                         "labels": cluster.map(|c| json!({CLUSTER_NAME_LABEL: c}))},
            "data": {"value": data},
        }))
        .expect("secret")
    }

    #[test]
    fn only_a_clusters_kubeconfig_secret_wakes_its_addon() {
        #[rustfmt::skip]
        let table: &[(&str, Option<&str>, Option<&str>)] = &[
            ("web-kubeconfig", Some("web"), Some("cluster-addon-web")),
            ("web-ca", Some("web"), None),
            ("web-etcd", Some("web"), None),
            ("web-user-kubeconfig", Some("web"), None),
            ("other-kubeconfig", Some("web"), None),
            ("web-kubeconfig", None, None),
        ];
        for (name, cluster, want) in table {
            let got = kubeconfig_addon(&secret(name, *cluster, "eA==").metadata);
            assert_eq!(got.as_ref().map(|r| r.name.as_str()), *want, "{name}");
            if let Some(r) = got {
                assert_eq!(r.namespace.as_deref(), Some("ns"));
            }
        }
        let a = secret("web-kubeconfig", Some("web"), "eA==");
        let mut relabelled = a.clone();
        relabelled
            .metadata
            .labels
            .get_or_insert_default()
            .insert("x".into(), "y".into());
        assert_eq!(kubeconfig_trigger(&a), kubeconfig_trigger(&relabelled));
        assert_ne!(
            kubeconfig_trigger(&a),
            kubeconfig_trigger(&secret("web-kubeconfig", Some("web"), "eQ=="))
        );
    }

    #[test]
    fn a_stack_that_moves_to_another_shard_and_back_wakes_its_reconcile() {
        let shard_a = Scope {
            namespaces: Vec::new(),
            shard: Some("a".into()),
        };
        let labelled = |version: &str, shard: Option<&str>| {
            let mut map = with_data("stack", version, "spec");
            map.metadata.labels =
                shard.map(|s| [(crate::shard::SHARD_LABEL.to_string(), s.to_string())].into());
            map
        };
        let trigger = |map: &ConfigMap| {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            map.data.hash(&mut hasher);
            crate::shard::key_of(&map.metadata).hash(&mut hasher);
            Some(hasher.finish())
        };
        let mut changes = Changes::new(trigger, false);
        let mut seen = |event| changes.on(shard_a.as_seen_by_trigger(event)).is_some();
        assert!(seen(Event::Apply(labelled("1", Some("a")))));
        assert!(!seen(Event::Apply(labelled("2", Some("a")))), "a status write");
        assert!(!seen(Event::Apply(labelled("3", Some("b")))), "moved to shard b");
        assert!(
            !seen(Event::Apply(labelled("4", None))),
            "moved to the default shard"
        );
        assert!(seen(Event::Apply(labelled("5", Some("a")))), "back in shard a");
    }

    #[test]
    fn a_scope_admits_its_namespaces_and_shard() {
        let meta = |ns: &str, shard: Option<&str>| ObjectMeta {
            namespace: Some(ns.into()),
            labels: shard.map(|s| [(crate::shard::SHARD_LABEL.to_string(), s.to_string())].into()),
            ..ObjectMeta::default()
        };
        let all = Scope::default();
        let tenant_a = Scope {
            namespaces: vec!["tenant".into()],
            shard: Some("a".into()),
        };
        assert!(all.admits(&meta("x", None)));
        assert!(!all.admits(&meta("x", Some("a"))));
        assert!(tenant_a.admits(&meta("tenant", Some("a"))));
        assert!(!tenant_a.admits(&meta("other", Some("a"))));
        assert!(!tenant_a.admits(&meta("tenant", None)));
    }
}
