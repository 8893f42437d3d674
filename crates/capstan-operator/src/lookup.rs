//! Helm's `lookup` answered from a live cluster, for renders that `helm install` would make
//! against it: capstan's own install chart, ClusterClass charts (management cluster) and addon
//! charts (workload cluster). The engine calls it synchronously from a blocking thread. Kinds
//! are resolved through the applier's discovery cache, so a render with many lookups (and,
//! in the operator, every render of a cached workload cluster) asks once per group-version.

use std::rc::Rc;
use std::sync::Arc;

use kube::api::ListParams;

use capstan_apply::Applier;
use capstan_template::funcs::{Lookup, LookupRequest};

/// A [`Lookup`] asking `client`'s cluster, blocking on `handle` (call it off the runtime's
/// worker threads, e.g. inside `spawn_blocking`).
pub fn cluster_lookup(handle: tokio::runtime::Handle, client: kube::Client) -> Lookup {
    applier_lookup(handle, Arc::new(Applier::new(client, "the cluster")))
}

/// A [`Lookup`] asking the cluster of `applier`, through its discovery cache.
pub fn applier_lookup(handle: tokio::runtime::Handle, applier: Arc<Applier>) -> Lookup {
    Rc::new(move |q: &LookupRequest<'_>| handle.block_on(lookup(&applier, q)))
}

/// Helm's `lookup`: the object, or for an empty name the list of them; `None` when the object
/// does not exist.
async fn lookup(applier: &Applier, q: &LookupRequest<'_>) -> Result<Option<serde_json::Value>, String> {
    let what = format!("lookup {} {} {}/{}", q.api_version, q.kind, q.namespace, q.name);
    let discovery = applier.discovery();
    let info = discovery
        .resolve_api_version(q.api_version, q.kind)
        .await
        .map_err(|e| format!("{what}: {e}"))?;
    let namespace = Some(q.namespace).filter(|ns| !ns.is_empty());
    let api = discovery.api(&info, namespace);
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
