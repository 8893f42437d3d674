//! One apply, as a struct of its own ([`Run`]): what it read (the inventory), what it has
//! learnt so far (the live copies listed, the objects prepared and seen, the inventory as
//! written) and what it has done (the results, the requests sent), wave by wave; pruning,
//! readiness waits and the live listing are [`super::prune`], [`super::wait`] and
//! [`super::live`].

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::Client;
use kube::api::{ApiResource, TypeMeta};
use serde_json::Value;

use super::live::{self, Live};
use super::options::{ApplyOptions, ApplyReport, Error};
use super::prune::{self, PruneOutcome};
use super::target::Target;
use super::wait;
use crate::diff::{self, ObjectDiff};
use crate::discovery::{self, Discovery, DiscoveryError, ResourceInfo};
use crate::guard;
use crate::inventory::{self, Entry, InventoryError, InventoryRef};
use crate::object::DesiredObject;
use crate::order;
use crate::ownership::{self, Claim};
use crate::ssa::{self, Ownership, Prepared, SendOptions};
use crate::status::{Action, ObjectKey, ObjectResult, Summary, SyncStatus};

/// One apply of `objects` with `opts` to its target.
pub struct Run<'a> {
    target: Target<'a>,
    objects: &'a [DesiredObject],
    opts: &'a ApplyOptions,
    owner: Ownership,
    /// The inventory as read before the apply.
    old: Vec<Entry>,
    /// The objects of `old` whose live copies are listed (not of a watched kind).
    old_keys: HashSet<ObjectKey>,
    /// What the inventory holds as far as this apply knows (normalized as written).
    written: Option<Vec<Entry>>,
    /// Entries of every object resolved up front: the first widening of the inventory
    /// covers them all, so later waves need no write of their own.
    planned: Vec<Entry>,
    /// Kinds this apply defines through CRDs: their discovery may lag their establishment.
    crd_kinds: HashMap<(String, String), String>,
    /// Objects resolved and prepared before the first wave, by input index.
    prepared: HashMap<usize, Prepared>,
    /// Live copies known before their wave (listed up front, or recorded and watched).
    prefetched: HashMap<ObjectKey, Live>,
    /// Apply requests sent, retries included.
    requests: AtomicUsize,
    results: Vec<ObjectResult>,
    /// The inventory entries of the objects prepared so far.
    entries: Vec<Entry>,
    /// Each object prepared so far, with where it came from (a repeat fails).
    seen: HashMap<ObjectKey, String>,
}

impl<'a> Run<'a> {
    /// Reads the inventory, checks what pruning would do, and lists the live copies of every
    /// object whose kind the server knows.
    pub async fn start(
        target: Target<'a>,
        objects: &'a [DesiredObject],
        opts: &'a ApplyOptions,
    ) -> Result<Run<'a>, Error> {
        let recorded = match &opts.inventory {
            Some(inv) => inventory::read(target.client, inv, opts.retry).await?,
            None => None,
        };
        let inventory_exists = recorded.is_some();
        let old = recorded.unwrap_or_default();
        if let Some(inv) = opts.inventory.as_ref().filter(|_| opts.prune) {
            guard::check_prune(opts.prune_scope, &inv.id(), objects, &opts.namespace, &old)?;
        }
        // Objects of watched kinds are live as recorded: they need no list.
        let watched: HashMap<ObjectKey, Live> = old
            .iter()
            .filter(|e| live::is_watched(&opts.watched_kinds, &e.key))
            .map(|e| (e.key.clone(), Live::Recorded(e.hash.clone())))
            .collect();
        let old_keys: HashSet<ObjectKey> = old
            .iter()
            .filter(|e| !watched.contains_key(&e.key))
            .map(|e| e.key.clone())
            .collect();
        tracing::debug!(
            objects = objects.len(),
            inventory = old.len(),
            "server checked, inventory read"
        );
        let mut run = Run {
            target,
            objects,
            opts,
            owner: Ownership {
                inventory: opts.inventory.as_ref().map(InventoryRef::id),
            },
            written: inventory_exists.then(|| inventory::union(&[], &old)),
            old,
            old_keys,
            planned: Vec::new(),
            crd_kinds: crd_kinds(objects),
            prepared: HashMap::new(),
            prefetched: HashMap::new(),
            requests: AtomicUsize::new(0),
            results: Vec::new(),
            entries: Vec::new(),
            seen: HashMap::new(),
        };
        run.prefetch().await;
        run.prefetched.extend(watched);
        run.planned = run
            .prepared
            .values()
            .map(|p| Entry {
                key: p.key.clone(),
                hash: Some(p.hash.clone()),
            })
            .collect();
        tracing::debug!(listed = run.prefetched.len(), "live objects listed");
        Ok(run)
    }

    /// Applies every wave, then prunes, records the inventory and waits as asked.
    pub async fn run(mut self) -> ApplyReport {
        let objects = self.objects;
        for wave in order::waves(objects, |o| (o.group.as_str(), o.kind.as_str())) {
            self.wave(&wave).await;
        }
        self.finish().await
    }

    /// With an inventory, only objects it lists can be live copies of ours: the others need
    /// no list (a first apply into an empty inventory lists nothing) unless another inventory
    /// may own them and taking over is not asked for (see [`crate::ownership`]).
    fn listable(&self, key: &ObjectKey) -> bool {
        self.recorded(key) || !self.opts.take_over
    }

    /// Whether an object whose live copy is `live` is left to another inventory.
    fn left_to_owner(&self, live: Option<&Live>) -> bool {
        let Some(Live::Owned { owner, .. }) = live else {
            return false;
        };
        let claim = ownership::claim(self.owner.inventory.as_deref(), Some(owner), self.opts.take_over);
        matches!(claim, Claim::Conflict { .. })
    }

    /// Whether `key` is in the inventory (or the apply has none).
    fn recorded(&self, key: &ObjectKey) -> bool {
        self.opts.inventory.is_none() || self.old_keys.contains(key)
    }

    /// One wave (indices into `objects`): prepared, tracked in the inventory before they
    /// exist, their live copies known, sent; a wave of CRDs waits for them to be Established.
    async fn wave(&mut self, wave: &[usize]) {
        let opts = self.opts;
        let prepared = self.prepare(wave).await;
        // Track new objects before they exist, so an interrupted apply leaves none behind
        // (Namespaces right after they are applied: the inventory may live in one).
        let namespaces_only = prepared
            .iter()
            .all(|p| p.key.group.is_empty() && p.key.kind == "Namespace");
        let live = self.live_of(&prepared).await;
        // An object left to another inventory is not ours to track.
        let track = opts.inventory.is_some() && !opts.dry_run && {
            let covered: HashSet<&ObjectKey> = self.written.iter().flatten().map(|e| &e.key).collect();
            prepared
                .iter()
                .any(|p| !covered.contains(&p.key) && !self.left_to_owner(live.get(&p.key)))
        };
        if track
            && !namespaces_only
            && let Err(e) = self.widen_inventory().await
        {
            // Applying untracked objects could leave them behind forever: stop here.
            for p in prepared {
                let msg = format!("not applied: {e}");
                self.push(failed(p.key, msg, Some(p.hash)));
            }
            return;
        }
        let is_crd_wave = prepared.iter().any(|p| order::is_crd(&p.key.group, &p.key.kind));
        let mut wave_results = self.send_wave(prepared, live).await;
        if is_crd_wave && !opts.dry_run {
            wait::established(self.target.discovery, &mut wave_results, opts.crd_timeout).await;
            self.target.discovery.invalidate().await;
            // Kinds of CRDs that failed are not waited for again.
            for r in wave_results.iter().filter(|r| r.status == SyncStatus::Failed) {
                self.crd_kinds.retain(|_, crd| *crd != r.key.name);
            }
        }
        tracing::debug!(objects = wave_results.len(), "wave applied");
        self.results.extend(wave_results);
        if track
            && namespaces_only
            && let Err(e) = self.widen_inventory().await
        {
            tracing::warn!("{e}");
        }
    }

    /// The objects of `wave` resolved and prepared; one that cannot be, or repeats an
    /// earlier one, fails.
    async fn prepare(&mut self, wave: &[usize]) -> Vec<Prepared> {
        let (objects, opts) = (self.objects, self.opts);
        let mut prepared = Vec::new();
        for &i in wave {
            let o = &objects[i];
            let resolved = match self.prepared.remove(&i) {
                Some(p) => Ok(p),
                None => (resolve(self.target.discovery, o, &self.crd_kinds, opts).await)
                    .map(|info| ssa::prepare(o, &info, &opts.namespace, &self.owner)),
            };
            match resolved {
                Ok(p) => {
                    if let Some(first) = self.seen.get(&p.key) {
                        let msg = format!("{} repeats {} of {first}", o.origin, p.key);
                        self.push(failed(p.key.clone(), msg, None));
                        continue;
                    }
                    self.seen.insert(p.key.clone(), o.origin.to_string());
                    self.entries.push(Entry {
                        key: p.key.clone(),
                        hash: Some(p.hash.clone()),
                    });
                    prepared.push(p);
                }
                Err(e) => {
                    let key = o.key_in(o.namespace.as_deref().or(Some(&opts.namespace)));
                    self.push(failed(key, e.to_string(), None));
                }
            }
        }
        prepared
    }

    /// The live copies of a wave's objects: known before, else listed now (when listable).
    async fn live_of(&mut self, prepared: &[Prepared]) -> HashMap<ObjectKey, Live> {
        let mut live: HashMap<ObjectKey, Live> = HashMap::new();
        let mut unlisted = Vec::new();
        for p in prepared {
            match self.prefetched.remove(&p.key) {
                Some(l) => {
                    live.insert(p.key.clone(), l);
                }
                None if self.listable(&p.key) => unlisted.push((p.clone(), self.recorded(&p.key))),
                None => {}
            }
        }
        live.extend(live::snapshot(self.target.client, &unlisted, &self.owner, self.opts).await);
        live
    }

    /// After the waves: pruned, the inventory recorded, readiness waited for; the report.
    async fn finish(mut self) -> ApplyReport {
        let (prune_skipped, inventory_error) = self.prune_and_record().await;
        if let Some(limit) = self.opts.wait
            && !self.opts.dry_run
        {
            wait::ready(
                self.target.discovery,
                &mut self.results,
                self.opts.concurrency,
                limit,
            )
            .await;
        }
        let summary = Summary::of(&self.results, self.requests.load(Ordering::Relaxed));
        ApplyReport {
            results: self.results,
            summary,
            prune_skipped,
            inventory_error,
        }
    }

    /// Prunes what left the set (when asked) and records the inventory as the new set plus
    /// what could not be pruned. Returns the objects not pruned because another owner has
    /// them now, and the inventory write's failure.
    async fn prune_and_record(&mut self) -> (Vec<ObjectKey>, Option<String>) {
        let opts = self.opts;
        let Some(inv) = &opts.inventory else {
            return (Vec::new(), None);
        };
        let mut entries = std::mem::take(&mut self.entries);
        // An object left to its owner leaves this inventory (pruning finds it not ours).
        let conflicts: HashSet<&ObjectKey> = self
            .results
            .iter()
            .filter(|r| r.status == SyncStatus::Conflict)
            .map(|r| &r.key)
            .collect();
        entries.retain(|e| !conflicts.contains(&e.key));
        let new_keys: HashSet<&ObjectKey> = entries.iter().map(|e| &e.key).collect();
        let gone: Vec<Entry> = self
            .old
            .iter()
            .filter(|e| !new_keys.contains(&e.key))
            .cloned()
            .collect();
        let mut prune_skipped = Vec::new();
        let mut kept = Vec::new();
        if opts.prune {
            for (entry, outcome) in prune::prune(self.target, gone, &inv.id(), opts).await {
                match outcome {
                    PruneOutcome::Done(r) => self.push(r),
                    PruneOutcome::Keep(r) => {
                        kept.push(entry);
                        self.push(r);
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
        if self.written.as_deref() == Some(final_set.as_slice()) {
            return (prune_skipped, None);
        }
        let written = inventory::write(
            self.target.client,
            inv,
            &final_set,
            &opts.field_manager,
            opts.retry,
        )
        .await;
        (prune_skipped, written.err().map(|e| e.to_string()))
    }

    /// Records `old ∪ planned ∪ entries` as the inventory (before the objects are applied)
    /// and remembers it in `written`.
    async fn widen_inventory(&mut self) -> Result<(), InventoryError> {
        let opts = self.opts;
        let Some(inv) = &opts.inventory else {
            return Ok(());
        };
        let widened = inventory::union(&inventory::union(&self.old, &self.planned), &self.entries);
        inventory::write(self.target.client, inv, &widened, &opts.field_manager, opts.retry).await?;
        self.written = Some(widened);
        Ok(())
    }

    fn push(&mut self, r: ObjectResult) {
        self.target.report(&r);
        self.results.push(r);
    }

    /// The live copies of every object whose kind the server knows already, listed all at
    /// once (concurrently) before the first wave: lists of later waves do not wait for the
    /// earlier waves' applies. (Objects of kinds defined by CRDs of this apply are listed in
    /// their wave.)
    /// Keeps the prepared objects by input index, and the live copies.
    async fn prefetch(&mut self) {
        let (objects, opts, owner) = (self.objects, self.opts, &self.owner);
        let mut resolved = Vec::new();
        for (i, o) in objects.iter().enumerate() {
            if let Ok(info) = self.target.discovery.resolve(&o.group, &o.version, &o.kind).await {
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
                let key = o.key_in(ns);
                let recorded = self.recorded(&key);
                ((key, recorded), &info.resource)
            })
            .filter(|((key, _), _)| self.listable(key));
        let lists = live::spawn_lists(self.target.client, members, owner, opts);
        self.prepared = resolved
            .into_iter()
            .map(|(i, info)| (i, ssa::prepare(&objects[i], &info, &opts.namespace, owner)))
            .collect();
        self.prefetched = live::collect_lists(lists).await;
    }

    /// Applies one wave: objects whose live copy already matches are `unchanged` at once,
    /// the others are sent concurrently. Results in input order.
    async fn send_wave(
        &self,
        prepared: Vec<Prepared>,
        mut live: HashMap<ObjectKey, Live>,
    ) -> Vec<ObjectResult> {
        let opts = self.opts;
        // Futures are collected before they are streamed: a stream holding the closure
        // would make `apply`'s future not provably `Send` (not spawnable).
        let mut results: Vec<(usize, ObjectResult)> = Vec::new();
        let mut tasks = Vec::new();
        for (n, p) in prepared.into_iter().enumerate() {
            let live = live.remove(&p.key).unwrap_or(Live::Unknown);
            if let Live::Owned { owner, .. } = &live
                && let Claim::Conflict { owner } =
                    ownership::claim(self.owner.inventory.as_deref(), Some(owner), opts.take_over)
            {
                let r = conflict(p, &owner);
                self.target.report(&r);
                results.push((n, r));
                continue;
            }
            let matches = match &live {
                Live::Present(l) => ssa::live_matches(&p, l),
                Live::Recorded(hash) => hash.as_deref() == Some(p.hash.as_str()),
                Live::Foreign(_) | Live::Owned { .. } | Live::Absent | Live::Unknown => false,
            };
            if matches && !opts.only_drifted {
                let r = synced(p, Action::Unchanged, String::new());
                self.target.report(&r);
                results.push((n, r));
                continue;
            }
            tasks.push(async move {
                let r = self.apply_prepared(p, live).await;
                self.target.report(&r);
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

    /// Sends one object (in `only_drifted` mode only when a dry run shows drift), and tells
    /// from the answer what the apply did to it.
    async fn apply_prepared(&self, p: Prepared, live: Live) -> ObjectResult {
        let opts = self.opts;
        let done = |action: Action, message: String, p: Prepared| synced(p, action, message);
        if opts.only_drifted && matches!(live, Live::Present(_) | Live::Recorded(_)) {
            let (d, _) = diff_prepared(self.target.client, &p, opts).await;
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
        let (answer, attempts) = ssa::send(self.target.client, &p, &send).await;
        self.requests.fetch_add(attempts as usize, Ordering::Relaxed);
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
                    Live::Foreign(before)
                    | Live::Owned {
                        resource_version: before,
                        ..
                    } => {
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
                let mut message = if opts.dry_run {
                    "server dry run".to_string()
                } else {
                    String::new()
                };
                if let Live::Owned { owner, .. } = &live {
                    let note = format!("taken over from inventory {owner}");
                    message = if message.is_empty() {
                        note
                    } else {
                        format!("{message}, {note}")
                    };
                }
                let mut r = done(action, message, p);
                if !opts.dry_run {
                    r.resource_version = obj.metadata.resource_version;
                }
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
}

/// The diff of a prepared object, and whether the live copy exists.
pub async fn diff_prepared(
    client: &Client,
    p: &Prepared,
    opts: &ApplyOptions,
) -> (ObjectDiff, Option<Value>) {
    let api = discovery::api_for(client, &p.resource, p.key.namespace.as_deref());
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
    let (dry, _) = ssa::send(client, p, &send).await;
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

/// Resolves an object's kind; a kind a CRD of this apply defines is waited for.
async fn resolve(
    discovery: &Discovery,
    o: &DesiredObject,
    crd_kinds: &HashMap<(String, String), String>,
    opts: &ApplyOptions,
) -> Result<ResourceInfo, DiscoveryError> {
    let deadline = Instant::now() + opts.crd_timeout;
    loop {
        match discovery.resolve(&o.group, &o.version, &o.kind).await {
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

fn synced(p: Prepared, action: Action, message: String) -> ObjectResult {
    ObjectResult {
        key: p.key,
        status: SyncStatus::Synced,
        action,
        message,
        last_applied_hash: Some(p.hash),
        resource_version: None,
    }
}

/// An object left to the inventory `owner` (not sent).
fn conflict(p: Prepared, owner: &str) -> ObjectResult {
    ObjectResult {
        key: p.key,
        status: SyncStatus::Conflict,
        action: Action::None,
        message: ownership::conflict_message(owner),
        last_applied_hash: None,
        resource_version: None,
    }
}

fn failed(key: ObjectKey, message: String, hash: Option<String>) -> ObjectResult {
    ObjectResult {
        key,
        status: SyncStatus::Failed,
        action: Action::None,
        message,
        last_applied_hash: hash,
        resource_version: None,
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
