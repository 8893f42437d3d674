//! [`Applier`]: runs an apply (waves of concurrent server-side applies, CRD establishment,
//! inventory, pruning, readiness) or a diff against one cluster.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::Client;
use kube::api::{ApiResource, DeleteParams, DynamicObject, ListParams, Preconditions, TypeMeta};
use serde_json::Value;

use super::diff::{self, ObjectDiff};
use super::discovery::{self, Discovery, DiscoveryError, ResourceInfo};
use super::guard::{self, PruneScope, Refusal};
use super::health::{self, Readiness};
use super::inventory::{self, Entry, InventoryError, InventoryRef};
use super::object::DesiredObject;
use super::order;
use super::ssa::{self, INVENTORY_ANNOTATION, Ownership, Prepared, Retry, SendOptions};
use super::status::{Action, ObjectKey, ObjectResult, Summary, SyncStatus};

/// Errors that stop an apply or diff as a whole (per-object failures are results instead).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot reach the Kubernetes API server {server}: {message}")]
    Unreachable { server: String, message: String },
    #[error(
        "the Kubernetes API server {server} rejected the credentials ({message}); is the token expired or invalid?"
    )]
    Unauthorized { server: String, message: String },
    #[error("pruning needs an inventory (--inventory NAME)")]
    PruneWithoutInventory,
    #[error(transparent)]
    Inventory(#[from] InventoryError),
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// Deleting an object by name (see [`Applier::delete`]) failed.
    #[error("deleting {what}: {source}")]
    Delete {
        what: String,
        #[source]
        source: kube::Error,
    },
}

/// How an apply runs. [`ApplyOptions::default`] is capstan's default: field manager
/// `capstan`, force on, namespace `default`, 16 requests at once.
#[derive(Debug, Clone)]
pub struct ApplyOptions {
    pub field_manager: String,
    /// Take over fields other managers own (conflicts fail the object when off).
    pub force: bool,
    /// Namespace for namespaced objects that name none.
    pub namespace: String,
    /// Requests in flight at once within a wave.
    pub concurrency: usize,
    /// Server-side dry run: nothing is changed, not even the inventory.
    pub dry_run: bool,
    pub inventory: Option<InventoryRef>,
    /// Delete objects of the inventory that left the desired set.
    pub prune: bool,
    /// Also prune CustomResourceDefinitions (deleting a CRD deletes all its objects).
    pub prune_crds: bool,
    /// Wait this long for applied objects to become ready (see [`health`]).
    pub wait: Option<Duration>,
    /// Limit of the wait for a CRD to become Established before its custom resources.
    pub crd_timeout: Duration,
    /// Decide by server-side dry run instead of the applied hash whether an object drifted,
    /// and send only drifted objects.
    pub only_drifted: bool,
    /// How far pruning may empty the inventory (see [`guard`]); by default an empty desired
    /// set never prunes a non-empty inventory.
    pub prune_scope: PruneScope,
    pub retry: Retry,
    /// Kinds `(group, version, kind)` whose objects of the inventory the caller has watched
    /// since its last complete apply, seeing no change but capstan's own (the operator's drift
    /// watches): their live copies are as the inventory records them, so they are not listed;
    /// one whose recorded hash is its desired hash is unchanged, the others are sent.
    pub watched_kinds: BTreeSet<(String, String, String)>,
    /// Told of each object just before pruning deletes it (the operator's drift watches then
    /// know the deletion is capstan's own, not drift).
    pub before_prune: Option<PruneNotice>,
}

/// Called with an object about to be pruned (see [`ApplyOptions::before_prune`]).
#[derive(Clone)]
pub struct PruneNotice(pub Arc<dyn Fn(&ObjectKey) + Send + Sync>);

impl std::fmt::Debug for PruneNotice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PruneNotice")
    }
}

impl Default for ApplyOptions {
    fn default() -> ApplyOptions {
        ApplyOptions {
            field_manager: crate::FIELD_MANAGER.into(),
            force: true,
            namespace: "default".into(),
            concurrency: 16,
            dry_run: false,
            inventory: None,
            prune: false,
            prune_crds: false,
            wait: None,
            crd_timeout: Duration::from_secs(60),
            only_drifted: false,
            prune_scope: PruneScope::default(),
            retry: Retry::default(),
            watched_kinds: BTreeSet::new(),
            before_prune: None,
        }
    }
}

/// The outcome of an apply.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApplyReport {
    /// One result per object, in apply order; pruned objects last.
    pub results: Vec<ObjectResult>,
    pub summary: Summary,
    /// Objects in the inventory that were not pruned because they no longer carry its id
    /// (someone else owns them now).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub prune_skipped: Vec<ObjectKey>,
    /// The inventory could not be updated after the apply (it still lists every object, as
    /// it was widened before; the next apply corrects it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inventory_error: Option<String>,
}

impl ApplyReport {
    pub fn failed(&self) -> bool {
        self.inventory_error.is_some() || self.results.iter().any(ObjectResult::is_failure)
    }

    /// The result for `key`.
    pub fn get(&self, key: &ObjectKey) -> Option<&ObjectResult> {
        self.results.iter().find(|r| &r.key == key)
    }
}

/// Called with each result as soon as it is known (for progress output).
pub type Progress = Arc<dyn Fn(&ObjectResult) + Send + Sync>;

/// Applies and diffs objects on one cluster; keeps a discovery cache across calls.
pub struct Applier {
    client: Client,
    server: String,
    discovery: Discovery,
    progress: Option<Progress>,
    /// Whether each apply and diff first asks for the server's version.
    check_server: bool,
}

/// What is known about the live copy of an object before it is sent.
#[derive(Clone)]
enum Live {
    /// One of capstan's objects (of this inventory), in full.
    Present(Value),
    /// Exists but is not (or no longer) marked as capstan's: its resourceVersion.
    Foreign(String),
    Absent,
    /// Not listed: its resource could not be, or it is not in the inventory (not ours yet).
    Unknown,
    /// Not listed, known from the inventory and the caller's watches (see
    /// [`ApplyOptions::watched_kinds`]): live as last applied, with this hash.
    Recorded(Option<String>),
}

impl Applier {
    /// An applier using `client`; `server` names the cluster in errors (its URL).
    pub fn new(client: Client, server: impl Into<String>) -> Applier {
        Applier {
            discovery: Discovery::new(client.clone()),
            client,
            server: server.into(),
            progress: None,
            check_server: true,
        }
    }

    /// An applier whose caller checks the server's reachability itself (the operator's
    /// workload-cluster cache): applies and diffs do not ask for `/version` first.
    pub fn without_server_check(mut self) -> Applier {
        self.check_server = false;
        self
    }

    pub fn with_progress(mut self, progress: Progress) -> Applier {
        self.progress = Some(progress);
        self
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The discovery cache of this applier's cluster, for other readers of that cluster.
    pub fn discovery(&self) -> &Discovery {
        &self.discovery
    }

    /// Asks the server for its version: an unreachable server or refused credentials become
    /// an error naming the server.
    pub async fn check_server(&self) -> Result<(), Error> {
        let answer = tokio::time::timeout(Duration::from_secs(15), self.client.apiserver_version()).await;
        match answer {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(kube::Error::Api(s))) if s.code == 401 || s.code == 403 => Err(Error::Unauthorized {
                server: self.server.clone(),
                message: format!("{} {}: {}", s.code, s.reason, s.message),
            }),
            Ok(Err(e)) => Err(Error::Unreachable {
                server: self.server.clone(),
                message: ssa::api_message(&e),
            }),
            Err(_) => Err(Error::Unreachable {
                server: self.server.clone(),
                message: "no answer within 15s".into(),
            }),
        }
    }

    /// Applies `objects`: see the module documentation of [`crate`].
    pub async fn apply(&self, objects: &[DesiredObject], opts: &ApplyOptions) -> Result<ApplyReport, Error> {
        if opts.prune && opts.inventory.is_none() {
            return Err(Error::PruneWithoutInventory);
        }
        if self.check_server {
            self.check_server().await?;
        }
        let owner = Ownership {
            inventory: opts.inventory.as_ref().map(InventoryRef::id),
        };
        let recorded = match &opts.inventory {
            Some(inv) => inventory::read(&self.client, inv, opts.retry).await?,
            None => None,
        };
        let inventory_exists = recorded.is_some();
        let old = recorded.unwrap_or_default();
        if let Some(inv) = opts.inventory.as_ref().filter(|_| opts.prune) {
            guard::check_prune(opts.prune_scope, &inv.id(), objects, &opts.namespace, &old)?;
        }
        // Objects of watched kinds are live as recorded: they need no list.
        let mut recorded: HashMap<ObjectKey, Live> = old
            .iter()
            .filter(|e| is_watched(&opts.watched_kinds, &e.key))
            .map(|e| (e.key.clone(), Live::Recorded(e.hash.clone())))
            .collect();
        let old_keys: HashSet<ObjectKey> = old
            .iter()
            .filter(|e| !recorded.contains_key(&e.key))
            .map(|e| e.key.clone())
            .collect();
        // With an inventory, only objects it lists can be live copies of ours: the others
        // need no list (a first apply into an empty inventory lists nothing).
        let listable = |key: &ObjectKey| opts.inventory.is_none() || old_keys.contains(key);
        // What the inventory holds as far as this apply knows (normalized as written).
        let mut written = inventory_exists.then(|| inventory::union(&[], &old));
        // Kinds this apply defines through CRDs: their discovery may lag their establishment.
        let mut crd_kinds = crd_kinds(objects);
        let requests = AtomicUsize::new(0);
        let mut results = Vec::new();
        let mut entries: Vec<Entry> = Vec::new();
        let mut seen: HashMap<ObjectKey, String> = HashMap::new();

        tracing::debug!(
            objects = objects.len(),
            inventory = old.len(),
            "server checked, inventory read"
        );
        let (mut preprepared, mut prefetched) = self.prefetch(objects, &owner, opts, &listable).await;
        prefetched.extend(recorded.drain());
        // Entries of every object resolved up front: the first widening of the inventory
        // covers them all, so later waves need no write of their own.
        let planned: Vec<Entry> = preprepared
            .values()
            .map(|p| Entry {
                key: p.key.clone(),
                hash: Some(p.hash.clone()),
            })
            .collect();
        tracing::debug!(listed = prefetched.len(), "live objects listed");
        for wave in order::waves(objects, |o| (o.group.as_str(), o.kind.as_str())) {
            let mut prepared = Vec::new();
            for &i in &wave {
                let o = &objects[i];
                let resolved = match preprepared.remove(&i) {
                    Some(p) => Ok(p),
                    None => (self.resolve(o, &crd_kinds, opts).await)
                        .map(|info| ssa::prepare(o, &info, &opts.namespace, &owner)),
                };
                match resolved {
                    Ok(p) => {
                        if let Some(first) = seen.get(&p.key) {
                            let msg = format!("{} repeats {} of {first}", o.origin, p.key);
                            self.push(&mut results, failed(p.key.clone(), msg, None));
                            continue;
                        }
                        seen.insert(p.key.clone(), o.origin.to_string());
                        entries.push(Entry {
                            key: p.key.clone(),
                            hash: Some(p.hash.clone()),
                        });
                        prepared.push(p);
                    }
                    Err(e) => {
                        let key = o.key_in(o.namespace.as_deref().or(Some(&opts.namespace)));
                        self.push(&mut results, failed(key, e.to_string(), None));
                    }
                }
            }
            // Track new objects before they exist, so an interrupted apply leaves none behind
            // (Namespaces right after they are applied: the inventory may live in one).
            let namespaces_only = prepared
                .iter()
                .all(|p| p.key.group.is_empty() && p.key.kind == "Namespace");
            let track = opts.inventory.is_some() && !opts.dry_run && {
                let covered: HashSet<&ObjectKey> = written.iter().flatten().map(|e| &e.key).collect();
                prepared.iter().any(|p| !covered.contains(&p.key))
            };
            if track
                && !namespaces_only
                && let Err(e) = self
                    .widen_inventory(&old, &entries, &planned, opts, &mut written)
                    .await
            {
                // Applying untracked objects could leave them behind forever: stop here.
                for p in prepared {
                    let msg = format!("not applied: {e}");
                    self.push(&mut results, failed(p.key, msg, Some(p.hash)));
                }
                continue;
            }
            let mut live: HashMap<ObjectKey, Live> = HashMap::new();
            let mut unlisted = Vec::new();
            for p in &prepared {
                match prefetched.remove(&p.key) {
                    Some(l) => {
                        live.insert(p.key.clone(), l);
                    }
                    None if listable(&p.key) => unlisted.push(p.clone()),
                    None => {}
                }
            }
            live.extend(self.snapshot(&unlisted, &owner, opts).await);
            let is_crd_wave = prepared.iter().any(|p| order::is_crd(&p.key.group, &p.key.kind));
            let mut wave_results = self.send_wave(prepared, live, opts, &requests).await;
            if is_crd_wave && !opts.dry_run {
                self.wait_established(&mut wave_results, opts.crd_timeout).await;
                self.discovery.invalidate().await;
                // Kinds of CRDs that failed are not waited for again.
                for r in wave_results.iter().filter(|r| r.status == SyncStatus::Failed) {
                    crd_kinds.retain(|_, crd| *crd != r.key.name);
                }
            }
            tracing::debug!(objects = wave_results.len(), "wave applied");
            results.extend(wave_results);
            if track
                && namespaces_only
                && let Err(e) = self
                    .widen_inventory(&old, &entries, &planned, opts, &mut written)
                    .await
            {
                tracing::warn!("{e}");
            }
        }

        let (prune_skipped, inventory_error) = self
            .prune_and_record(&old, entries, written.as_deref(), opts, &mut results)
            .await;
        if let Some(limit) = opts.wait
            && !opts.dry_run
        {
            self.wait_ready(&mut results, opts, limit).await;
        }
        let summary = Summary::of(&results, requests.load(Ordering::Relaxed));
        Ok(ApplyReport {
            results,
            summary,
            prune_skipped,
            inventory_error,
        })
    }

    /// The drift of each object (see [`diff`]), in input order.
    pub async fn diff(
        &self,
        objects: &[DesiredObject],
        opts: &ApplyOptions,
    ) -> Result<Vec<ObjectDiff>, Error> {
        if self.check_server {
            self.check_server().await?;
        }
        let owner = Ownership {
            inventory: opts.inventory.as_ref().map(InventoryRef::id),
        };
        let futures: Vec<_> = objects
            .iter()
            .map(|o| {
                let owner = owner.clone();
                async move {
                    match self.discovery.resolve(&o.group, &o.version, &o.kind).await {
                        Ok(info) => {
                            let p = ssa::prepare(o, &info, &opts.namespace, &owner);
                            self.diff_prepared(&p, opts).await.0
                        }
                        Err(e) => {
                            let key = o.key_in(o.namespace.as_deref().or(Some(&opts.namespace)));
                            ObjectDiff {
                                diff: diff::unified(&key, None, &o.data),
                                key,
                                live: false,
                                message: e.to_string(),
                            }
                        }
                    }
                }
            })
            .collect();
        Ok(futures::stream::iter(futures)
            .buffered(opts.concurrency.max(1))
            .collect()
            .await)
    }

    /// Applies one wave: objects whose live copy already matches are `unchanged` at once,
    /// the others are sent concurrently. Results in input order.
    async fn send_wave(
        &self,
        prepared: Vec<Prepared>,
        mut live: HashMap<ObjectKey, Live>,
        opts: &ApplyOptions,
        requests: &AtomicUsize,
    ) -> Vec<ObjectResult> {
        // Futures are collected before they are streamed: a stream holding the closure
        // would make `apply`'s future not provably `Send` (not spawnable).
        let mut results: Vec<(usize, ObjectResult)> = Vec::new();
        let mut tasks = Vec::new();
        for (n, p) in prepared.into_iter().enumerate() {
            let live = live.remove(&p.key).unwrap_or(Live::Unknown);
            let matches = match &live {
                Live::Present(l) => ssa::live_matches(&p, l),
                Live::Recorded(hash) => hash.as_deref() == Some(p.hash.as_str()),
                Live::Foreign(_) | Live::Absent | Live::Unknown => false,
            };
            if matches && !opts.only_drifted {
                let r = synced(p, Action::Unchanged, String::new());
                self.report_progress(&r);
                results.push((n, r));
                continue;
            }
            tasks.push(async move {
                let r = self.apply_prepared(p, live, opts, requests).await;
                self.report_progress(&r);
                (n, r)
            });
        }
        let sent: Vec<(usize, ObjectResult)> = futures::stream::iter(tasks)
            .buffer_unordered(opts.concurrency.max(1))
            .collect()
            .await;
        results.extend(sent);
        // Whatever order the answers came in.
        results.sort_by_key(|(n, _)| *n);
        results.into_iter().map(|(_, r)| r).collect()
    }

    /// After the waves: prunes what left the set (when asked) and records the inventory as
    /// the new set plus what could not be pruned. Returns the objects not pruned because
    /// another owner has them now, and the inventory write's failure.
    async fn prune_and_record(
        &self,
        old: &[Entry],
        entries: Vec<Entry>,
        written: Option<&[Entry]>,
        opts: &ApplyOptions,
        results: &mut Vec<ObjectResult>,
    ) -> (Vec<ObjectKey>, Option<String>) {
        let Some(inv) = &opts.inventory else {
            return (Vec::new(), None);
        };
        let new_keys: HashSet<&ObjectKey> = entries.iter().map(|e| &e.key).collect();
        let gone: Vec<Entry> = old
            .iter()
            .filter(|e| !new_keys.contains(&e.key))
            .cloned()
            .collect();
        let mut prune_skipped = Vec::new();
        let mut kept = Vec::new();
        if opts.prune {
            for (entry, outcome) in self.prune(gone, &inv.id(), opts).await {
                match outcome {
                    PruneOutcome::Done(r) => self.push(results, r),
                    PruneOutcome::Keep(r) => {
                        kept.push(entry);
                        self.push(results, r);
                    }
                    PruneOutcome::NotOurs => prune_skipped.push(entry.key),
                }
            }
        } else {
            kept = gone;
        }
        if opts.dry_run {
            return (prune_skipped, None);
        }
        // Objects whose apply failed stay listed: they are still desired. On a failed write
        // the widened inventory written before the waves still covers every object.
        let mut final_entries = entries;
        final_entries.extend(kept);
        let final_set = inventory::union(&[], &final_entries);
        // Unchanged since it was read or widened (a first apply, an idle pass): no write.
        if written == Some(final_set.as_slice()) {
            return (prune_skipped, None);
        }
        let written = inventory::write(&self.client, inv, &final_set, &opts.field_manager, opts.retry).await;
        (prune_skipped, written.err().map(|e| e.to_string()))
    }

    /// Records `old ∪ planned ∪ entries` as the inventory (before the objects are applied)
    /// and remembers it in `written`.
    async fn widen_inventory(
        &self,
        old: &[Entry],
        entries: &[Entry],
        planned: &[Entry],
        opts: &ApplyOptions,
        written: &mut Option<Vec<Entry>>,
    ) -> Result<(), InventoryError> {
        let Some(inv) = &opts.inventory else {
            return Ok(());
        };
        let widened = inventory::union(&inventory::union(old, planned), entries);
        inventory::write(&self.client, inv, &widened, &opts.field_manager, opts.retry).await?;
        *written = Some(widened);
        Ok(())
    }

    /// The diff of a prepared object, and whether the live copy exists.
    async fn diff_prepared(&self, p: &Prepared, opts: &ApplyOptions) -> (ObjectDiff, Option<Value>) {
        let api = discovery::api_for(&self.client, &p.resource, p.key.namespace.as_deref());
        let (live, _) = ssa::with_retry(opts.retry, || api.get_opt(&p.key.name)).await;
        let live = match live {
            Ok(l) => l.map(|o| with_types(o, &p.resource)),
            Err(e) => {
                let d = ObjectDiff {
                    key: p.key.clone(),
                    live: false,
                    diff: String::new(),
                    message: format!("reading the live object: {e}"),
                };
                return (d, None);
            }
        };
        let send = SendOptions {
            field_manager: opts.field_manager.clone(),
            force: opts.force,
            dry_run: true,
            retry: opts.retry,
        };
        let (dry, _) = ssa::send(&self.client, p, &send).await;
        let (after, message) = match dry.map(|o| with_types(o, &p.resource)) {
            Ok(v) => (v, String::new()),
            Err(e) => (p.body.clone(), format!("server dry run failed: {e}")),
        };
        let d = ObjectDiff {
            key: p.key.clone(),
            live: live.is_some(),
            diff: diff::unified(&p.key, live.as_ref(), &after),
            message,
        };
        (d, live)
    }

    fn push(&self, results: &mut Vec<ObjectResult>, r: ObjectResult) {
        self.report_progress(&r);
        results.push(r);
    }

    fn report_progress(&self, r: &ObjectResult) {
        if let Some(progress) = &self.progress {
            progress(r);
        }
    }

    /// Resolves an object's kind; a kind a CRD of this apply defines is waited for.
    async fn resolve(
        &self,
        o: &DesiredObject,
        crd_kinds: &HashMap<(String, String), String>,
        opts: &ApplyOptions,
    ) -> Result<ResourceInfo, DiscoveryError> {
        let deadline = Instant::now() + opts.crd_timeout;
        loop {
            match self.discovery.resolve(&o.group, &o.version, &o.kind).await {
                Err(DiscoveryError::UnknownKind { .. })
                    if !opts.dry_run
                        && Instant::now() < deadline
                        && crd_kinds.contains_key(&(o.group.clone(), o.kind.clone())) =>
                {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                other => return other,
            }
        }
    }

    /// The live copies of every object whose kind the server knows already, listed all at
    /// once (concurrently) before the first wave: lists of later waves do not wait for the
    /// earlier waves' applies. (Objects of kinds defined by CRDs of this apply are listed in
    /// their wave.)
    /// Returns the prepared objects by input index, and the live copies.
    async fn prefetch(
        &self,
        objects: &[DesiredObject],
        owner: &Ownership,
        opts: &ApplyOptions,
        listable: &impl Fn(&ObjectKey) -> bool,
    ) -> (HashMap<usize, Prepared>, HashMap<ObjectKey, Live>) {
        let mut resolved = Vec::new();
        for (i, o) in objects.iter().enumerate() {
            if let Ok(info) = self.discovery.resolve(&o.group, &o.version, &o.kind).await {
                resolved.push((i, info));
            }
        }
        // The lists run while the objects are prepared.
        let members = resolved
            .iter()
            .map(|(i, info)| {
                let o = &objects[*i];
                let ns = info
                    .namespaced
                    .then(|| o.namespace.as_deref().unwrap_or(&opts.namespace));
                (o.key_in(ns), &info.resource)
            })
            .filter(|(key, _)| listable(key));
        let lists = self.spawn_lists(members, owner, opts);
        let prepared = resolved
            .into_iter()
            .map(|(i, info)| (i, ssa::prepare(&objects[i], &info, &opts.namespace, owner)))
            .collect();
        (prepared, collect_lists(lists).await)
    }

    /// The live copies of a wave's objects, one list per resource and namespace, restricted
    /// to capstan's objects (of this inventory, when there is one). Objects of a resource
    /// whose list failed are missing from the map.
    async fn snapshot(
        &self,
        prepared: &[Prepared],
        owner: &Ownership,
        opts: &ApplyOptions,
    ) -> HashMap<ObjectKey, Live> {
        let members = prepared.iter().map(|p| (p.key.clone(), &p.resource));
        collect_lists(self.spawn_lists(members, owner, opts)).await
    }

    /// Starts one list task per resource and namespace of `members`; each runs on its own,
    /// so the answers' JSON is parsed on all threads.
    fn spawn_lists<'a>(
        &self,
        members: impl Iterator<Item = (ObjectKey, &'a ApiResource)>,
        owner: &Ownership,
        opts: &ApplyOptions,
    ) -> Vec<tokio::task::JoinHandle<Vec<(ObjectKey, Live)>>> {
        let selector = match &owner.inventory {
            Some(inv) => format!("{}={}", ssa::INVENTORY_ID_LABEL, ssa::inventory_id(inv)),
            None => format!("{}={}", ssa::MANAGED_LABEL, ssa::MANAGED),
        };
        let mut groups: BTreeMap<ListKey, (&ApiResource, Vec<ObjectKey>)> = BTreeMap::new();
        for (key, resource) in members {
            let k = (
                key.group.clone(),
                key.version.clone(),
                resource.plural.clone(),
                key.namespace.clone(),
            );
            groups
                .entry(k)
                .or_insert_with(|| (resource, Vec::new()))
                .1
                .push(key);
        }
        groups
            .into_values()
            .map(|(resource, keys)| {
                tokio::spawn(list_live(
                    self.client.clone(),
                    resource.clone(),
                    keys,
                    selector.clone(),
                    opts.retry,
                ))
            })
            .collect()
    }

    async fn apply_prepared(
        &self,
        p: Prepared,
        live: Live,
        opts: &ApplyOptions,
        requests: &AtomicUsize,
    ) -> ObjectResult {
        let done = |action: Action, message: String, p: Prepared| synced(p, action, message);
        if opts.only_drifted && matches!(live, Live::Present(_) | Live::Recorded(_)) {
            let (d, _) = self.diff_prepared(&p, opts).await;
            if !d.drifted() && d.message.is_empty() {
                return done(Action::Unchanged, String::new(), p);
            }
        }
        let send = SendOptions {
            field_manager: opts.field_manager.clone(),
            force: opts.force,
            dry_run: opts.dry_run,
            retry: opts.retry,
        };
        let (answer, attempts) = ssa::send(&self.client, &p, &send).await;
        requests.fetch_add(attempts as usize, Ordering::Relaxed);
        match answer {
            Ok(obj) => {
                let after = obj.metadata.resource_version.as_deref();
                let action = match &live {
                    // A server dry run never moves the resourceVersion: compare the objects.
                    Live::Present(l) if opts.dry_run => {
                        if same_object(l, &obj) {
                            Action::Unchanged
                        } else {
                            Action::Configured
                        }
                    }
                    Live::Present(l) => {
                        let before = l.pointer("/metadata/resourceVersion").and_then(Value::as_str);
                        if before == after {
                            Action::Unchanged
                        } else {
                            Action::Configured
                        }
                    }
                    Live::Foreign(before) => {
                        if Some(before.as_str()) == after {
                            Action::Unchanged
                        } else {
                            Action::Configured
                        }
                    }
                    Live::Absent => Action::Created,
                    // Live as last applied with another hash: this apply changed it.
                    Live::Recorded(_) => Action::Configured,
                    // Not listed: created, unless another manager already had a say in it.
                    Live::Unknown => {
                        let others = obj
                            .metadata
                            .managed_fields
                            .iter()
                            .flatten()
                            .any(|m| m.manager.as_deref() != Some(opts.field_manager.as_str()));
                        if others {
                            Action::Configured
                        } else {
                            Action::Created
                        }
                    }
                };
                let message = if opts.dry_run {
                    "server dry run".to_string()
                } else {
                    String::new()
                };
                let mut r = done(action, message, p);
                if attempts > 1 {
                    let note = format!("after {attempts} attempts");
                    r.message = if r.message.is_empty() {
                        note
                    } else {
                        format!("{}, {note}", r.message)
                    };
                }
                r
            }
            Err(e) => {
                let retried = if attempts > 1 {
                    format!(" (after {attempts} attempts)")
                } else {
                    String::new()
                };
                failed(p.key, format!("{e}{retried}"), Some(p.hash))
            }
        }
    }

    /// Waits until each synced CRD of `results` is Established; a CRD that is not by the
    /// deadline fails.
    async fn wait_established(&self, results: &mut [ObjectResult], limit: Duration) {
        let deadline = Instant::now() + limit;
        for r in results.iter_mut() {
            if r.status != SyncStatus::Synced || !order::is_crd(&r.key.group, &r.key.kind) {
                continue;
            }
            if let Err(reason) = self.wait_one(&r.key, deadline).await {
                r.status = SyncStatus::Failed;
                r.message = format!("not Established within {}s: {reason}", limit.as_secs());
            }
        }
    }

    /// Polls one object until it is ready or the deadline passes.
    async fn wait_one(&self, key: &ObjectKey, deadline: Instant) -> Result<(), String> {
        let info = self
            .discovery
            .resolve(&key.group, &key.version, &key.kind)
            .await
            .map_err(|e| e.to_string())?;
        let api = discovery::api_for(&self.client, &info.resource, key.namespace.as_deref());
        loop {
            let last = match api.get(&key.name).await {
                Ok(obj) => {
                    let v = serde_json::to_value(&obj).unwrap_or_default();
                    match health::readiness(&key.group, &key.kind, &v) {
                        Readiness::Ready => return Ok(()),
                        Readiness::Failed(why) => return Err(why),
                        Readiness::Pending(why) => why,
                    }
                }
                Err(e) => ssa::api_message(&e),
            };
            if Instant::now() >= deadline {
                return Err(last);
            }
            tokio::time::sleep(health::POLL).await;
        }
    }

    /// `--wait`: synced objects that are not ready within `limit` fail.
    async fn wait_ready(&self, results: &mut [ObjectResult], opts: &ApplyOptions, limit: Duration) {
        let deadline = Instant::now() + limit;
        let checks = results
            .iter()
            .enumerate()
            .filter(|(_, r)| r.status == SyncStatus::Synced && r.action != Action::None)
            .map(|(i, r)| {
                let key = r.key.clone();
                async move { (i, self.wait_one(&key, deadline).await) }
            })
            .collect::<Vec<_>>();
        let outcomes: Vec<(usize, Result<(), String>)> = futures::stream::iter(checks)
            .buffer_unordered(opts.concurrency.max(1))
            .collect()
            .await;
        for (i, outcome) in outcomes {
            if let Err(reason) = outcome {
                results[i].status = SyncStatus::Failed;
                results[i].message = format!("not ready within {}s: {reason}", limit.as_secs());
            }
        }
    }

    /// Prunes `candidates` in reverse install order (wave by wave, concurrently within one).
    async fn prune(
        &self,
        candidates: Vec<Entry>,
        inventory_id: &str,
        opts: &ApplyOptions,
    ) -> Vec<(Entry, PruneOutcome)> {
        let mut waves = order::waves(&candidates, |e| (e.key.group.as_str(), e.key.kind.as_str()));
        waves.reverse();
        let mut out = Vec::new();
        for wave in waves {
            let tasks = wave
                .into_iter()
                .map(|i| {
                    let entry = candidates[i].clone();
                    async move {
                        let outcome = self.prune_one(&entry, inventory_id, opts).await;
                        (entry, outcome)
                    }
                })
                .collect::<Vec<_>>();
            let done: Vec<_> = futures::stream::iter(tasks)
                .buffer_unordered(opts.concurrency.max(1))
                .collect()
                .await;
            let any_crd = done
                .iter()
                .any(|(e, o)| matches!(o, PruneOutcome::Done(_)) && order::is_crd(&e.key.group, &e.key.kind));
            out.extend(done);
            if any_crd {
                self.discovery.invalidate().await;
            }
        }
        out
    }

    async fn prune_one(&self, entry: &Entry, inventory_id: &str, opts: &ApplyOptions) -> PruneOutcome {
        let key = &entry.key;
        let result = |status: SyncStatus, action: Action, message: String| ObjectResult {
            key: key.clone(),
            status,
            action,
            message,
            last_applied_hash: entry.hash.clone(),
        };
        // Not counted as pruned: this apply deleted nothing (a crashed apply may have listed
        // objects it never created).
        let gone = || PruneOutcome::Done(result(SyncStatus::Pruned, Action::None, "already gone".into()));
        let prune_failed =
            |msg: String| PruneOutcome::Keep(result(SyncStatus::PruneFailed, Action::None, msg));
        if order::is_crd(&key.group, &key.kind) && !opts.prune_crds {
            return PruneOutcome::Keep(result(
                SyncStatus::Synced,
                Action::None,
                "kept: CRDs are pruned only when asked (--prune-crds)".into(),
            ));
        }
        let info = match self.discovery.resolve(&key.group, &key.version, &key.kind).await {
            Ok(info) => info,
            // The kind is gone (its CRD was deleted), and so are its objects.
            Err(DiscoveryError::UnknownKind { .. }) => return gone(),
            Err(e) => return prune_failed(e.to_string()),
        };
        let api = discovery::api_for(&self.client, &info.resource, key.namespace.as_deref());
        let (live, _) = ssa::with_retry(opts.retry, || api.get_opt(&key.name)).await;
        let live = match live {
            Ok(Some(l)) => l,
            Ok(None) => return gone(),
            Err(e) => return prune_failed(e.to_string()),
        };
        let owner = live
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(INVENTORY_ANNOTATION));
        if owner.map(String::as_str) != Some(inventory_id) {
            return PruneOutcome::NotOurs;
        }
        if opts.dry_run {
            return PruneOutcome::Keep(result(
                SyncStatus::Pruned,
                Action::Pruned,
                "server dry run".into(),
            ));
        }
        let params = DeleteParams {
            dry_run: false,
            preconditions: Some(Preconditions {
                uid: live.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::background()
        };
        if let Some(notice) = &opts.before_prune {
            (notice.0)(key);
        }
        let (deleted, _) = ssa::with_retry(opts.retry, || api.delete(&key.name, &params)).await;
        match deleted {
            Ok(_) => PruneOutcome::Done(result(SyncStatus::Pruned, Action::Pruned, String::new())),
            Err(e) if e.code() == Some(404) => gone(),
            Err(e) => prune_failed(e.to_string()),
        }
    }
}

/// One list request of a snapshot: group, version, resource, namespace.
type ListKey = (String, String, String, Option<String>);

/// The answers of [`Applier::spawn_lists`]'s tasks.
/// Whether `key`'s kind is one of `watched` (see [`ApplyOptions::watched_kinds`]).
fn is_watched(watched: &BTreeSet<(String, String, String)>, key: &ObjectKey) -> bool {
    !watched.is_empty() && watched.contains(&(key.group.clone(), key.version.clone(), key.kind.clone()))
}

async fn collect_lists(
    tasks: Vec<tokio::task::JoinHandle<Vec<(ObjectKey, Live)>>>,
) -> HashMap<ObjectKey, Live> {
    let mut out = HashMap::new();
    for task in tasks {
        // A panicked task (never expected) leaves its objects unlisted: they are sent.
        if let Ok(found) = task.await {
            out.extend(found);
        }
    }
    out
}

/// The live copies of `members` (all of one resource and namespace): capstan's objects in
/// full from a list filtered by `selector` (as plain JSON: typed metadata would only be turned
/// back into JSON); whether the others exist from a list of metadata only, when any is missing
/// from the first. Empty when listing fails (the objects are then sent as `Live::Unknown`).
async fn list_live(
    client: Client,
    resource: ApiResource,
    members: Vec<ObjectKey>,
    selector: String,
    retry: Retry,
) -> Vec<(ObjectKey, Live)> {
    let ns = members.first().and_then(|k| k.namespace.clone());
    let params = ListParams::default().labels(&selector);
    let url = <DynamicObject as kube::Resource>::url_path(&resource, ns.as_deref());
    let list = ssa::with_retry(retry, || async {
        let req = kube::core::Request::new(&url)
            .list(&params)
            .map_err(kube::Error::BuildRequest)?;
        client.request::<Value>(req).await
    })
    .await
    .0;
    let Ok(Value::Object(mut list)) = list else {
        return Vec::new();
    };
    let mut ours: HashMap<String, Value> = HashMap::new();
    if let Some(Value::Array(items)) = list.remove("items") {
        for mut item in items {
            let name = item
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            if let Value::Object(map) = &mut item {
                map.entry("apiVersion")
                    .or_insert_with(|| resource.api_version.clone().into());
                map.entry("kind").or_insert_with(|| resource.kind.clone().into());
            }
            ours.insert(name, item);
        }
    }
    let mut others: Option<HashMap<String, String>> = None;
    if members.iter().any(|k| !ours.contains_key(&k.name)) {
        let api = discovery::api_for(&client, &resource, ns.as_deref());
        let all = ListParams::default();
        let (meta, _) = ssa::with_retry(retry, || api.list_metadata(&all)).await;
        let Ok(meta) = meta else { return Vec::new() };
        others = Some(
            meta.items
                .into_iter()
                .map(|m| {
                    let name = m.metadata.name.unwrap_or_default();
                    (name, m.metadata.resource_version.unwrap_or_default())
                })
                .collect(),
        );
    }
    members
        .into_iter()
        .map(|k| {
            let live = match ours.remove(&k.name) {
                Some(v) => Live::Present(v),
                None => match others.as_ref().and_then(|o| o.get(&k.name)) {
                    Some(rv) => Live::Foreign(rv.clone()),
                    None => Live::Absent,
                },
            };
            (k, live)
        })
        .collect()
}

enum PruneOutcome {
    /// Deleted (or already gone): drop from the inventory.
    Done(ObjectResult),
    /// Still there (failed, or kept on purpose): stays in the inventory.
    Keep(ObjectResult),
    /// Carries another inventory's id or none: not ours any more; dropped from the inventory.
    NotOurs,
}

fn synced(p: Prepared, action: Action, message: String) -> ObjectResult {
    ObjectResult {
        key: p.key,
        status: SyncStatus::Synced,
        action,
        message,
        last_applied_hash: Some(p.hash),
    }
}

fn failed(key: ObjectKey, message: String, hash: Option<String>) -> ObjectResult {
    ObjectResult {
        key,
        status: SyncStatus::Failed,
        action: Action::None,
        message,
        last_applied_hash: hash,
    }
}

/// The object as JSON with `apiVersion`/`kind` (list items come without them).
fn with_types(mut obj: kube::api::DynamicObject, resource: &ApiResource) -> Value {
    if obj.types.is_none() {
        obj.types = Some(TypeMeta {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
        });
    }
    serde_json::to_value(&obj).unwrap_or_default()
}

/// `(group, kind)` of each custom resource kind defined by a CRD among `objects`, with the
/// CRD's name.
fn crd_kinds(objects: &[DesiredObject]) -> HashMap<(String, String), String> {
    objects
        .iter()
        .filter(|o| order::is_crd(&o.group, &o.kind))
        .filter_map(|o| {
            let group = o.data.pointer("/spec/group")?.as_str()?;
            let kind = o.data.pointer("/spec/names/kind")?.as_str()?;
            Some(((group.to_string(), kind.to_string()), o.name.clone()))
        })
        .collect()
}

/// Whether a dry run's answer is the live object: equal but for what every write touches
/// (`managedFields` timestamps, the resourceVersion), types aside.
fn same_object(live: &Value, answer: &kube::api::DynamicObject) -> bool {
    let Ok(mut answer) = serde_json::to_value(answer) else {
        return false;
    };
    let mut live = live.clone();
    for object in [&mut live, &mut answer] {
        // List items may come without their types.
        if let Some(top) = object.as_object_mut() {
            top.remove("apiVersion");
            top.remove("kind");
        }
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
            meta.remove("resourceVersion");
        }
    }
    live == answer
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The operator spawns applies on its runtime: their futures must be `Send`.
    #[test]
    fn apply_and_diff_futures_are_send() {
        fn send<T: Send>(_: &T) {}
        fn check(a: &Applier, objects: &[DesiredObject], opts: &ApplyOptions) {
            send(&a.apply(objects, opts));
            send(&a.diff(objects, opts));
        }
        let _ = check;
    }
}
