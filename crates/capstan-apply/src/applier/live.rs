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
    /// Exists and is marked with another inventory (`owner`, see [`crate::ownership`]).
    Owned {
        owner: String,
        resource_version: String,
    },
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
    prepared: &[(Prepared, Recorded)],
    owner: &Ownership,
    opts: &ApplyOptions,
) -> HashMap<ObjectKey, Live> {
    let members = prepared
        .iter()
        .map(|(p, recorded)| ((p.key.clone(), *recorded), &p.resource));
    collect_lists(spawn_lists(client, members, owner, opts)).await
}

/// Whether an object to list is in the apply's inventory (or the apply has none): its live
/// copy is looked for among the inventory's objects. One that is not is looked up only among
/// capstan's objects, for the inventory that owns it (see [`crate::ownership`]).
pub type Recorded = bool;

/// An object to list, and whether it is [`Recorded`].
type Member = (ObjectKey, Recorded);

/// Starts one list task per resource and namespace of `members`; each runs on its own,
/// so the answers' JSON is parsed on all threads.
pub fn spawn_lists<'a>(
    client: &Client,
    members: impl Iterator<Item = ((ObjectKey, Recorded), &'a ApiResource)>,
    owner: &Ownership,
    opts: &ApplyOptions,
) -> Vec<tokio::task::JoinHandle<Vec<(ObjectKey, Live)>>> {
    let selector = match &owner.inventory {
        Some(inv) => format!("{}={}", ssa::INVENTORY_ID_LABEL, ssa::inventory_id(inv)),
        None => format!("{}={}", ssa::MANAGED_LABEL, ssa::MANAGED),
    };
    let mut groups: BTreeMap<ListKey, (&ApiResource, Vec<Member>)> = BTreeMap::new();
    for ((key, recorded), resource) in members {
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
            .push((key, recorded));
    }
    groups
        .into_values()
        .map(|(resource, keys)| {
            tokio::spawn(list_live(
                client.clone(),
                resource.clone(),
                keys,
                selector.clone(),
                owner.inventory.clone(),
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
/// back into JSON), when any member is recorded; whether the others exist, and which inventory
/// marks them, from a list of metadata only: of every object when a recorded member is missing
/// from the first, else of capstan's objects when a member is not recorded. Empty when listing
/// fails (the objects are then sent as `Live::Unknown`).
async fn list_live(
    client: Client,
    resource: ApiResource,
    members: Vec<Member>,
    selector: String,
    ours: Option<String>,
    retry: Retry,
) -> Vec<(ObjectKey, Live)> {
    let ns = members.first().and_then(|(k, _)| k.namespace.clone());
    let mut ours_listed: HashMap<String, Value> = HashMap::new();
    if members.iter().any(|(_, recorded)| *recorded) {
        let Some(listed) = list_full(&client, &resource, ns.as_deref(), &selector, retry).await else {
            return Vec::new();
        };
        ours_listed = listed;
    }
    let missing = |recorded: bool| {
        members
            .iter()
            .any(|(k, r)| *r == recorded && !ours_listed.contains_key(&k.name))
    };
    // Every object, when a recorded one is missing (absent, or no longer marked as ours);
    // else capstan's objects only, when one is not recorded (is another inventory's?).
    let scope = if missing(true) {
        Some(ListParams::default())
    } else if missing(false) {
        Some(ListParams::default().labels(&format!("{}={}", ssa::MANAGED_LABEL, ssa::MANAGED)))
    } else {
        None
    };
    let complete = missing(true);
    let mut others: HashMap<String, (String, Option<String>)> = HashMap::new();
    if let Some(params) = scope {
        let api = discovery::api_for(&client, &resource, ns.as_deref());
        let (meta, _) = ssa::with_retry(retry, || api.list_metadata(&params)).await;
        let Ok(meta) = meta else { return Vec::new() };
        others = meta
            .items
            .into_iter()
            .map(|m| {
                let marked = m
                    .metadata
                    .annotations
                    .and_then(|mut a| a.remove(ssa::INVENTORY_ANNOTATION));
                let name = m.metadata.name.unwrap_or_default();
                (name, (m.metadata.resource_version.unwrap_or_default(), marked))
            })
            .collect();
    }
    members
        .into_iter()
        .map(|(k, recorded)| {
            let live = match ours_listed.remove(&k.name) {
                Some(v) => Live::Present(v),
                None => match others.remove(&k.name) {
                    Some((rv, Some(marked))) if ours.as_deref() != Some(marked.as_str()) => Live::Owned {
                        owner: marked,
                        resource_version: rv,
                    },
                    Some((rv, _)) => Live::Foreign(rv),
                    None if recorded || complete => Live::Absent,
                    // Not among capstan's objects: may exist unmarked.
                    None => Live::Unknown,
                },
            };
            (k, live)
        })
        .collect()
}

/// The objects of `resource` in `ns` that `selector` selects, in full, by name; `None` when
/// the list fails.
async fn list_full(
    client: &Client,
    resource: &ApiResource,
    ns: Option<&str>,
    selector: &str,
    retry: Retry,
) -> Option<HashMap<String, Value>> {
    let params = ListParams::default().labels(selector);
    let url = <DynamicObject as kube::Resource>::url_path(resource, ns);
    let list = ssa::with_retry(retry, || async {
        let req = kube::core::Request::new(&url)
            .list(&params)
            .map_err(kube::Error::BuildRequest)?;
        client.request::<Value>(req).await
    })
    .await
    .0;
    let Ok(Value::Object(mut list)) = list else {
        return None;
    };
    let mut listed: HashMap<String, Value> = HashMap::new();
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
            listed.insert(name, item);
        }
    }
    Some(listed)
}
