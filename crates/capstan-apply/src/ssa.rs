//! Server-side apply of one object: the body capstan sends (namespace settled by scope,
//! ownership labels and annotations added, nothing else changed), its hash, the request with
//! bounded retries of transient failures, and the check whether a live object already matches.

use std::time::Duration;

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::compare;
use super::discovery::{ResourceInfo, api_for};
use super::object::DesiredObject;
use super::status::ObjectKey;

/// The label every object capstan applies carries, set to [`MANAGED`]: what capstan finds
/// its objects by. A label of capstan's own, so the chart's labels — its
/// `app.kubernetes.io/managed-by` among them — are applied as the chart sets them.
pub const MANAGED_LABEL: &str = "capstan.dev/managed";
pub const MANAGED: &str = "true";
/// The recommended label for the tool that manages an object: capstan sets it only on the
/// objects it makes itself (inventories, stored renders, ClusterStackReleases), never on an
/// object it applies. Earlier versions set it on applied objects too (issue 32); the next apply
/// gives the label back to the chart: server-side apply drops a field its manager no longer
/// sends, or sets the chart's value.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
pub const MANAGED_BY: &str = "capstan";
/// Annotation naming the inventory (`namespace/name`) an object belongs to; pruning deletes
/// only objects whose annotation names the pruning inventory.
pub const INVENTORY_ANNOTATION: &str = "capstan.dev/inventory";
/// Label with a short hash of the inventory, so one list request finds an inventory's objects.
pub const INVENTORY_ID_LABEL: &str = "capstan.dev/inventory-id";
/// Annotation with the hash of what capstan last applied (see [`desired_hash`]).
pub const HASH_ANNOTATION: &str = "capstan.dev/applied-hash";

/// An object ready to send.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub key: ObjectKey,
    pub resource: ApiResource,
    pub body: Value,
    /// Hash of `body` without the hash annotation.
    pub hash: String,
}

/// Ownership marks to add.
#[derive(Debug, Clone, Default)]
pub struct Ownership {
    /// `namespace/name` of the inventory, if any.
    pub inventory: Option<String>,
}

/// Settles the namespace by scope (namespaced objects without one get `target_namespace`;
/// cluster-scoped objects lose one), adds ownership labels/annotations and the hash.
pub fn prepare(
    obj: &DesiredObject,
    info: &ResourceInfo,
    target_namespace: &str,
    owner: &Ownership,
) -> Prepared {
    let namespace = info.namespaced.then(|| {
        obj.namespace
            .clone()
            .unwrap_or_else(|| target_namespace.to_string())
    });
    let mut body = obj.data.clone();
    if let Value::Object(map) = &mut body {
        let meta = object_entry(map, "metadata");
        match &namespace {
            Some(ns) => {
                meta.insert("namespace".into(), Value::String(ns.clone()));
            }
            None => {
                meta.remove("namespace");
            }
        }
        let labels = object_entry(meta, "labels");
        labels.insert(MANAGED_LABEL.into(), MANAGED.into());
        if let Some(inv) = &owner.inventory {
            labels.insert(INVENTORY_ID_LABEL.into(), inventory_id(inv).into());
            let annotations = object_entry(meta, "annotations");
            annotations.insert(INVENTORY_ANNOTATION.into(), inv.clone().into());
        }
    }
    default_port_protocols(&obj.group, &obj.kind, &mut body);
    let hash = desired_hash(&body);
    if let Value::Object(map) = &mut body {
        let meta = object_entry(map, "metadata");
        object_entry(meta, "annotations").insert(HASH_ANNOTATION.into(), hash.clone().into());
    }
    Prepared {
        key: obj.key_in(namespace.as_deref()),
        resource: info.resource.clone(),
        body,
        hash,
    }
}

/// Built-in kinds whose pod template (at this path) has container ports.
const POD_TEMPLATES: &[(&str, &str, &[&str])] = &[
    ("", "Pod", &["spec"]),
    ("apps", "Deployment", &["spec", "template", "spec"]),
    ("apps", "DaemonSet", &["spec", "template", "spec"]),
    ("apps", "StatefulSet", &["spec", "template", "spec"]),
    ("apps", "ReplicaSet", &["spec", "template", "spec"]),
    ("batch", "Job", &["spec", "template", "spec"]),
    (
        "batch",
        "CronJob",
        &["spec", "jobTemplate", "spec", "template", "spec"],
    ),
];

/// Writes out `protocol: TCP` where a built-in object's port leaves it to the default.
/// `protocol` is part of the key of Service ports and container ports, and API servers before
/// v1.24 reject a server-side apply whose list entry omits a key field ("associative list
/// with keys has an element that omits key field"); the server stores TCP either way.
fn default_port_protocols(group: &str, kind: &str, body: &mut Value) {
    fn fill(ports: Option<&mut Value>) {
        if let Some(Value::Array(ports)) = ports {
            for port in ports.iter_mut().filter_map(Value::as_object_mut) {
                port.entry("protocol")
                    .or_insert_with(|| Value::String("TCP".into()));
            }
        }
    }
    if group.is_empty() && kind == "Service" {
        fill(body.pointer_mut("/spec/ports"));
        return;
    }
    let Some((_, _, path)) = POD_TEMPLATES.iter().find(|(g, k, _)| *g == group && *k == kind) else {
        return;
    };
    let pointer: String = path.iter().map(|p| format!("/{p}")).collect();
    let Some(pod) = body.pointer_mut(&pointer) else {
        return;
    };
    for list in ["containers", "initContainers"] {
        if let Some(Value::Array(containers)) = pod.get_mut(list) {
            for container in containers.iter_mut() {
                fill(container.get_mut("ports"));
            }
        }
    }
}

/// `map[key]` as an object, created (or replaced when it is not an object, e.g. `null`).
fn object_entry<'a>(map: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let slot = map
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    match slot {
        Value::Object(m) => m,
        _ => unreachable!("just made an object"),
    }
}

/// The label value identifying an inventory: 16 hex digits of SHA-256 of `namespace/name`.
pub fn inventory_id(inventory: &str) -> String {
    hex(&Sha256::digest(inventory.as_bytes())[..8])
}

/// SHA-256 of the object's canonical JSON (keys sorted at every level), as 32 hex digits.
pub fn desired_hash(v: &Value) -> String {
    let mut text = String::new();
    canonical(v, &mut text);
    hex(&Sha256::digest(text.as_bytes())[..16])
}

fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `live` already is what applying `p` would give: it carries `p`'s hash (so no
/// field capstan applied before has been dropped from the desired object since) and every
/// field of the desired body has the same value in it (so nobody changed one out of band).
/// Fields only the server or others set do not matter, nor what the server normalises
/// (see [`compare`]). A `false` is always safe: the object is then applied, and the server
/// decides.
pub fn live_matches(p: &Prepared, live: &Value) -> bool {
    let hash = live
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(HASH_ANNOTATION))
        .and_then(Value::as_str);
    hash == Some(p.hash.as_str()) && compare::holds(&p.key.group, &p.key.kind, &p.body, live)
}

/// How requests are sent.
#[derive(Debug, Clone)]
pub struct SendOptions {
    pub field_manager: String,
    pub force: bool,
    pub dry_run: bool,
    pub retry: Retry,
}

/// Bounded retries of transient failures (connection errors, 429/5xx, timeouts).
#[derive(Debug, Clone, Copy)]
pub struct Retry {
    /// Attempts in all (1 = no retry).
    pub attempts: u32,
    /// First delay; doubled each time, capped at 2 s.
    pub base_delay: Duration,
    /// Limit of one request.
    pub request_timeout: Duration,
}

impl Default for Retry {
    fn default() -> Retry {
        Retry {
            attempts: 5,
            base_delay: Duration::from_millis(200),
            request_timeout: Duration::from_secs(30),
        }
    }
}

/// A request's failure, with the number of attempts made.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error("{}", api_message(.0))]
    Kube(#[source] kube::Error),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
}

impl SendError {
    /// True when trying again may help.
    pub fn is_transient(&self) -> bool {
        match self {
            SendError::Timeout(_) => true,
            SendError::Kube(e) => is_transient(e),
        }
    }

    /// The API server's status code, when it answered.
    pub fn code(&self) -> Option<u16> {
        match self {
            SendError::Kube(kube::Error::Api(s)) => Some(s.code),
            _ => None,
        }
    }
}

/// The server's own words for an API error; other errors with their causes.
pub fn api_message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) if !status.message.is_empty() => {
            let reason = if status.reason.is_empty() {
                String::new()
            } else {
                format!(" {}", status.reason)
            };
            format!("{} ({}{reason})", status.message, status.code)
        }
        other => {
            let mut msg = other.to_string();
            let mut source = std::error::Error::source(other);
            while let Some(s) = source {
                let text = s.to_string();
                if !msg.contains(&text) {
                    msg.push_str(": ");
                    msg.push_str(&text);
                }
                source = s.source();
            }
            msg
        }
    }
}

fn is_transient(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) => match s.code {
            429 | 502 | 503 | 504 => true,
            // v1.20 answers 500 for objects that do not fit their schema in an apply
            // ("failed to create typed patch object"): only storage trouble is worth a retry.
            500 => ["etcd", "timeout", "try again"]
                .iter()
                .any(|w| s.message.contains(w)),
            _ => false,
        },
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}

/// Runs `op` until it succeeds, fails for good, or the attempts are used up.
/// Returns the result and the number of attempts.
pub async fn with_retry<T, F, Fut>(retry: Retry, mut op: F) -> (Result<T, SendError>, u32)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    let mut delay = retry.base_delay;
    let mut attempt = 0;
    loop {
        attempt += 1;
        let result = match tokio::time::timeout(retry.request_timeout, op()).await {
            Ok(r) => r.map_err(SendError::Kube),
            Err(_) => Err(SendError::Timeout(retry.request_timeout)),
        };
        match result {
            Err(e) if e.is_transient() && attempt < retry.attempts.max(1) => {
                tracing::debug!(attempt, error = %e, "retrying");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(2));
            }
            other => return (other, attempt),
        }
    }
}

/// Server-side applies `p` (with retries); returns the object as the server answered and
/// the number of requests sent.
pub async fn send(
    client: &Client,
    p: &Prepared,
    opts: &SendOptions,
) -> (Result<DynamicObject, SendError>, u32) {
    let api = api_for(client, &p.resource, p.key.namespace.as_deref());
    let mut params = PatchParams::apply(&opts.field_manager);
    params.force = opts.force;
    params.dry_run = opts.dry_run;
    let patch = Patch::Apply(&p.body);
    let send = || api.patch(&p.key.name, &params, &patch);
    if p.key.group != AGGREGATOR_GROUP || opts.dry_run {
        return with_retry(opts.retry, send).await;
    }
    // kube-apiserver before 1.21 cannot server-side-apply aggregator objects: its handler
    // panics ("FieldManager must be installed to run apply") and drops the connection, so no
    // status comes back. Such an object gets a plain create or update instead, at once: every
    // retry of the apply would fail alike (five tries, three seconds of backoff per object).
    let once = Retry {
        attempts: 1,
        ..opts.retry
    };
    match with_retry(once, send).await {
        (Err(e), tried) if e.code().is_none() => {
            let (written, more) =
                with_retry(opts.retry, || write_without_apply(&api, p, &opts.field_manager)).await;
            (written, tried + more)
        }
        (Err(e), tried) if e.is_transient() && opts.retry.attempts > 1 => {
            let rest = Retry {
                attempts: opts.retry.attempts - 1,
                ..opts.retry
            };
            let (answer, more) = with_retry(rest, send).await;
            (answer, tried + more)
        }
        other => other,
    }
}

/// The group of `APIService`, which old API servers cannot server-side-apply.
const AGGREGATOR_GROUP: &str = "apiregistration.k8s.io";

/// Creates the object, or replaces the live one (at its resourceVersion), as
/// `field_manager`: under another manager's name the write would look like someone else's
/// change to the drift watches, and wake the owner for nothing.
async fn write_without_apply(
    api: &Api<DynamicObject>,
    p: &Prepared,
    field_manager: &str,
) -> Result<DynamicObject, kube::Error> {
    let mut object: DynamicObject =
        serde_json::from_value(p.body.clone()).map_err(kube::Error::SerdeError)?;
    let params = kube::api::PostParams {
        field_manager: Some(field_manager.to_string()),
        ..kube::api::PostParams::default()
    };
    match api.get_opt(&p.key.name).await? {
        None => api.create(&params, &object).await,
        Some(live) => {
            object.metadata.resource_version = live.metadata.resource_version;
            api.replace(&p.key.name, &params, &object).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::parse_stream;
    use kube::api::GroupVersionKind;

    fn info(namespaced: bool) -> ResourceInfo {
        let gvk = GroupVersionKind::gvk("", "v1", "ConfigMap");
        ResourceInfo {
            resource: ApiResource::from_gvk_with_plural(&gvk, "configmaps"),
            namespaced,
        }
    }

    fn desired(text: &str) -> DesiredObject {
        parse_stream(text, "t").expect("parses").remove(0)
    }

    #[test]
    fn port_protocols_are_written_out_for_built_in_kinds_only() {
        let mut service =
            serde_json::json!({"spec": {"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]}});
        default_port_protocols("", "Service", &mut service);
        assert_eq!(service["spec"]["ports"][0]["protocol"], "TCP");
        assert_eq!(service["spec"]["ports"][1]["protocol"], "UDP");
        let mut deployment = serde_json::json!({"spec": {"template": {"spec": {
            "containers": [{"name": "a", "ports": [{"containerPort": 8080}]}],
            "initContainers": [{"name": "b", "ports": [{"containerPort": 9090, "protocol": "SCTP"}]}]}}}});
        default_port_protocols("apps", "Deployment", &mut deployment);
        let pod = &deployment["spec"]["template"]["spec"];
        assert_eq!(pod["containers"][0]["ports"][0]["protocol"], "TCP");
        assert_eq!(pod["initContainers"][0]["ports"][0]["protocol"], "SCTP");
        let mut custom = serde_json::json!({"spec": {"ports": [{"port": 80}]}});
        default_port_protocols("example.com", "Service", &mut custom);
        assert!(custom["spec"]["ports"][0].get("protocol").is_none());
    }

    #[test]
    fn namespace_is_settled_by_scope_and_ownership_added() {
        let o =
            desired("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {x: z}}\ndata: {k: v}\n");
        let owner = Ownership {
            inventory: Some("ns/inv".into()),
        };
        let p = prepare(&o, &info(true), "target", &owner);
        assert_eq!(p.key.namespace.as_deref(), Some("target"));
        assert_eq!(p.body["metadata"]["namespace"], "target");
        assert_eq!(p.body["metadata"]["labels"]["x"], "z");
        assert_eq!(p.body["metadata"]["labels"][MANAGED_LABEL], "true");
        assert_eq!(
            p.body["metadata"]["labels"][INVENTORY_ID_LABEL],
            inventory_id("ns/inv")
        );
        assert_eq!(p.body["metadata"]["annotations"][INVENTORY_ANNOTATION], "ns/inv");
        assert_eq!(
            p.body["metadata"]["annotations"][HASH_ANNOTATION],
            p.hash.as_str()
        );
        assert_eq!(p.body["data"], serde_json::json!({"k": "v"}));

        let cluster = desired("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\n");
        let p = prepare(&cluster, &info(false), "target", &Ownership::default());
        assert_eq!(p.key.namespace, None);
        assert!(p.body["metadata"].get("namespace").is_none());
    }

    #[test]
    fn the_labels_a_chart_sets_are_sent_as_they_are() {
        let helm = desired(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: {app.kubernetes.io/managed-by: Helm}\n",
        );
        let p = prepare(&helm, &info(true), "ns", &Ownership::default());
        let labels = p.body["metadata"]["labels"].as_object().expect("labels");
        let names: Vec<&str> = labels.keys().map(String::as_str).collect();
        assert_eq!(names, [MANAGED_BY_LABEL, MANAGED_LABEL]);
        assert_eq!(labels[MANAGED_BY_LABEL], "Helm");
        let plain = desired("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n");
        let p = prepare(&plain, &info(true), "ns", &Ownership::default());
        assert!(p.body["metadata"]["labels"].get(MANAGED_BY_LABEL).is_none());
    }

    #[test]
    fn hash_ignores_key_order_and_sees_values() {
        let a = serde_json::json!({"a": 1, "b": {"c": [1, 2], "d": "x"}});
        let b = serde_json::json!({"b": {"d": "x", "c": [1, 2]}, "a": 1});
        let c = serde_json::json!({"b": {"d": "x", "c": [2, 1]}, "a": 1});
        assert_eq!(desired_hash(&a), desired_hash(&b));
        assert_ne!(desired_hash(&a), desired_hash(&c));
    }

    #[test]
    fn live_matches_needs_hash_and_fields() {
        let o = desired("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n");
        let p = prepare(&o, &info(true), "ns", &Ownership::default());
        let mut live = p.body.clone();
        live["metadata"]["uid"] = "123".into();
        live["data"]["other"] = "set by someone else".into();
        assert!(live_matches(&p, &live));
        live["data"]["k"] = "changed".into();
        assert!(!live_matches(&p, &live));
        let mut stale = p.body.clone();
        stale["metadata"]["annotations"][HASH_ANNOTATION] = "old".into();
        assert!(!live_matches(&p, &stale));
    }
}
