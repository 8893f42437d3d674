//! The live copies an apply compares with: capstan's objects listed in full, one list per
//! resource and namespace (filtered by the inventory's label, or capstan's), the others only
//! by name and resourceVersion when one is missing; what is known of each object before it
//! is sent is a [`Live`].

use std::collections::{BTreeMap, BTreeSet, HashMap};

use kube::Client;
use kube::api::{ApiResource, DynamicObject, ListParams};
use serde_json::Value;

use super::options::ApplyOptions;
use crate::discovery;
use crate::ssa::{self, Ownership, Prepared, Retry};
use crate::status::ObjectKey;

/// What is known about the live copy of an object before it is sent.
#[derive(Clone)]
pub enum Live {
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

/// The live copies of a wave's objects, one list per resource and namespace, restricted
/// to capstan's objects (of this inventory, when there is one). Objects of a resource
/// whose list failed are missing from the map.
pub async fn snapshot(
    client: &Client,
    prepared: &[Prepared],
    owner: &Ownership,
    opts: &ApplyOptions,
) -> HashMap<ObjectKey, Live> {
    let members = prepared.iter().map(|p| (p.key.clone(), &p.resource));
    collect_lists(spawn_lists(client, members, owner, opts)).await
}

/// Starts one list task per resource and namespace of `members`; each runs on its own,
/// so the answers' JSON is parsed on all threads.
pub fn spawn_lists<'a>(
    client: &Client,
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
                client.clone(),
                resource.clone(),
                keys,
                selector.clone(),
                opts.retry,
            ))
        })
        .collect()
}

/// One list request of a snapshot: group, version, resource, namespace.
type ListKey = (String, String, String, Option<String>);

/// Whether `key`'s kind is one of `watched` (see [`ApplyOptions::watched_kinds`]).
pub fn is_watched(watched: &BTreeSet<(String, String, String)>, key: &ObjectKey) -> bool {
    !watched.is_empty() && watched.contains(&(key.group.clone(), key.version.clone(), key.kind.clone()))
}

/// The answers of [`spawn_lists`]'s tasks.
pub async fn collect_lists(
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
