//! Helm's `lookup` answered from a live cluster, for renders that `helm install` would make
//! against it: capstan's own install chart, ClusterClass charts (management cluster) and addon
//! charts (workload cluster). The engine calls it synchronously from a blocking thread.

use std::rc::Rc;

use kube::api::{Api, DynamicObject, GroupVersionKind, ListParams};
use kube::discovery::Scope;

use capstan_template::funcs::{Lookup, LookupRequest};

/// A [`Lookup`] asking `client`'s cluster, blocking on `handle` (call it off the runtime's
/// worker threads, e.g. inside `spawn_blocking`).
pub fn cluster_lookup(handle: tokio::runtime::Handle, client: kube::Client) -> Lookup {
    Rc::new(move |q: &LookupRequest<'_>| handle.block_on(lookup(client.clone(), q)))
}

/// Helm's `lookup`: the object, or for an empty name the list of them; `None` when the object
/// does not exist.
async fn lookup(client: kube::Client, q: &LookupRequest<'_>) -> Result<Option<serde_json::Value>, String> {
    let what = format!("lookup {} {} {}/{}", q.api_version, q.kind, q.namespace, q.name);
    let (group, version) = q.api_version.split_once('/').unwrap_or(("", q.api_version));
    let gvk = GroupVersionKind::gvk(group, version, q.kind);
    let (resource, caps) = kube::discovery::pinned_kind(&client, &gvk)
        .await
        .map_err(|e| format!("{what}: {e}"))?;
    let api: Api<DynamicObject> = if caps.scope == Scope::Namespaced && !q.namespace.is_empty() {
        Api::namespaced_with(client, q.namespace, &resource)
    } else {
        Api::all_with(client, &resource)
    };
    if q.name.is_empty() {
        let list = api
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("{what}: {e}"))?;
        let items: Vec<serde_json::Value> = list
            .items
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<_, _>>()
            .map_err(|e| format!("{what}: {e}"))?;
        return Ok(Some(serde_json::json!({
            "apiVersion": q.api_version,
            "kind": format!("{}List", q.kind),
            "metadata": {},
            "items": items,
        })));
    }
    match api.get_opt(q.name).await {
        Ok(Some(object)) => serde_json::to_value(object)
            .map(Some)
            .map_err(|e| format!("{what}: {e}")),
        Ok(None) => Ok(None),
        Err(e) => Err(format!("{what}: {e}")),
    }
}
