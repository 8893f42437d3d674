//! The HTTPS endpoint Cluster API's Runtime SDK calls: discovery and one POST path per
//! [`Hook`]. `BeforeClusterUpgrade` reads the Cluster's ClusterAddon
//! (`cluster-addon-<cluster>` in its namespace), answers with [`before_cluster_upgrade`] and
//! writes the status change that answer needs (a merge patch of the status subresource,
//! guarded by the resourceVersion read, so concurrent calls on several replicas cannot both
//! start or release a wait). Served by the operator's HTTP stack ([`crate::serve`]).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::events::{Event, EventType, Recorder, Reporter};
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{Method, StatusCode, Uri};
use axum::response::Response;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, Resource};
use tokio::net::TcpListener;

use super::decide::{after_control_plane_initialized, before_cluster_upgrade};
use super::protocol::{Hook, HookRequest, HookResponse, discovery, discovery_path};
use crate::api::ClusterAddon;
use crate::serve::cert::Certificate;
use crate::serve::{self, ServeError, Transport, json, plain, read_body};

/// Largest request accepted: a Cluster object and the request around it.
const MAX_BODY: usize = 4 << 20;
/// Reads and writes of a ClusterAddon per call when another writer got in between.
const CONFLICT_ATTEMPTS: usize = 3;

/// What every call needs.
struct Shared {
    client: Client,
    timeout: Duration,
    recorder: Recorder,
}

/// Serves the hooks on `addr` with `cert` until `shutdown` completes. `client` reads and
/// writes ClusterAddons on the management cluster; `timeout` bounds how long
/// `BeforeClusterUpgrade` blocks one upgrade.
pub async fn serve(
    addr: SocketAddr,
    cert: Certificate,
    client: Client,
    timeout: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let listener = serve::bind(addr).await?;
    serve_with(listener, cert, client, timeout, shutdown).await
}

/// [`serve`] on a bound `listener`.
pub async fn serve_with(
    listener: TcpListener,
    cert: Certificate,
    client: Client,
    timeout: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "capstan".into(),
            instance: std::env::var("POD_NAME").ok(),
        },
    );
    let shared = Arc::new(Shared {
        client,
        timeout,
        recorder,
    });
    // Cluster API calls the paths below the ExtensionConfig's own prefix: matched by their end.
    let router = Router::new().fallback(handle).with_state(shared);
    serve::serve(
        listener,
        &Transport::Https(cert),
        "runtime hooks server",
        router,
        shutdown,
    )
    .await
}

async fn handle(State(shared): State<Arc<Shared>>, method: Method, uri: Uri, body: Body) -> Response {
    let path = uri.path();
    let hook = Hook::of_path(path);
    if hook.is_none() && !path.ends_with(&discovery_path()) {
        let mut paths = vec![discovery_path()];
        paths.extend(Hook::ALL.iter().map(|h| h.path()));
        let text = format!("no runtime hook at {path}; paths: {}\n", paths.join(" "));
        return plain(StatusCode::NOT_FOUND, text);
    }
    if method != Method::POST {
        return plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "runtime hooks answer POSTed requests\n".into(),
        );
    }
    let body = match read_body(body, MAX_BODY).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    match hook {
        None => json(&discovery()),
        Some(hook) => json(&answer(hook, &body, &shared).await),
    }
}

async fn answer(hook: Hook, body: &[u8], shared: &Shared) -> HookResponse {
    let request: HookRequest = match serde_json::from_slice(body) {
        Ok(request) => request,
        Err(e) => return HookResponse::failure(hook, format!("cannot read the {}Request: {e}", hook.name())),
    };
    let cluster = match request.cluster() {
        Ok(cluster) => cluster,
        Err(why) => return HookResponse::failure(hook, why.to_string()),
    };
    match hook {
        Hook::AfterControlPlaneInitialized => {
            tracing::info!(cluster = %format!("{}/{}", cluster.namespace, cluster.name),
                "AfterControlPlaneInitialized: control plane available");
            after_control_plane_initialized()
        }
        Hook::BeforeClusterUpgrade => {
            let Some(class) = cluster.class else {
                // Not a topology Cluster: no stack class, nothing to wait for.
                return HookResponse::success(hook, String::new(), Some(0));
            };
            let api: Api<ClusterAddon> = Api::namespaced(shared.client.clone(), &cluster.namespace);
            let name = format!("cluster-addon-{}", cluster.name);
            match upgrade(&api, &name, &class, shared).await {
                Ok(response) => response,
                Err(why) => HookResponse::failure(hook, why.to_string()),
            }
        }
    }
}

/// Reads the ClusterAddon, decides, writes the status change; again on a write conflict.
async fn upgrade(
    api: &Api<ClusterAddon>,
    name: &str,
    class: &str,
    shared: &Shared,
) -> Result<HookResponse, UpgradeError> {
    for _ in 0..CONFLICT_ATTEMPTS {
        let addon = api.get_opt(name).await.map_err(|source| UpgradeError::Read {
            name: name.to_string(),
            source,
        })?;
        let (response, change) =
            before_cluster_upgrade(addon.as_ref(), class, Timestamp::now(), shared.timeout);
        let (Some(addon), Some(change)) = (addon, change) else {
            return Ok(response);
        };
        let mut patch = change.merge_patch();
        patch["metadata"] = serde_json::json!({"resourceVersion": addon.metadata.resource_version});
        match api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {}
            Err(e) if crate::kube_error::is_conflict(&e) => continue,
            Err(source) => {
                let name = name.to_string();
                return Err(UpgradeError::Record { name, source });
            }
        }
        if change.timed_out {
            report_release(&addon, &response.message, shared).await;
        }
        return Ok(response);
    }
    Err(UpgradeError::Conflicts {
        name: name.to_string(),
    })
}

/// Why a `BeforeClusterUpgrade` request could not be answered (the hook's failure message).
#[derive(Debug, thiserror::Error)]
enum UpgradeError {
    #[error("cannot read ClusterAddon {name}: {source}")]
    Read {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot record the upgrade wait in ClusterAddon {name}: {source}")]
    Record {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("ClusterAddon {name} kept changing while recording the upgrade wait; try again")]
    Conflicts { name: String },
}

/// Tells the ClusterAddon's watchers that an upgrade went on without its addons.
async fn report_release(addon: &ClusterAddon, message: &str, shared: &Shared) {
    tracing::warn!(addon = %addon.metadata.name.as_deref().unwrap_or_default(), "{message}");
    let event = Event {
        type_: EventType::Warning,
        reason: "UpgradeHookTimedOut".into(),
        note: Some(message.to_string()),
        action: "BeforeClusterUpgrade".into(),
        secondary: None,
    };
    if let Err(e) = shared.recorder.publish(&event, &addon.object_ref(&())).await {
        tracing::debug!(error = %e, "publishing the UpgradeHookTimedOut event failed");
    }
}
