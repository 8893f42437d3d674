//! A workload cluster as the operator reaches it: through the `<cluster>-kubeconfig` Secret
//! Cluster API writes next to the Cluster (key `value`), and ready when its API server's
//! `/readyz` answers `ok`. [`super::cache`] keeps what [`connect`] makes, per Cluster.

use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::Api;
use kube::config::{KubeConfigOptions, Kubeconfig};

use capstan_apply::Applier;

/// The Secret Cluster API keeps a Cluster's admin kubeconfig in.
pub fn kubeconfig_secret(cluster: &str) -> String {
    format!("{cluster}-kubeconfig")
}

/// Why a workload cluster cannot be used yet; the text goes into the gate condition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Gate {
    #[error("the kubeconfig Secret {namespace}/{name} does not exist yet")]
    NoKubeconfig { namespace: String, name: String },
    #[error("the kubeconfig Secret {namespace}/{name} is unusable: {problem}")]
    BadKubeconfig {
        namespace: String,
        name: String,
        problem: String,
    },
    #[error("the workload API server {server} is not ready: {problem}")]
    NotReady { server: String, problem: String },
    #[error("reading the kubeconfig Secret {namespace}/{name}: {problem}")]
    Api {
        namespace: String,
        name: String,
        problem: String,
    },
}

impl Gate {
    /// Whether a ClusterAddon that has `applied` its addons reports this closed gate as its
    /// workload cluster being unreachable (`WorkloadReachable` false, a failed pass; `Ready`
    /// still says the addons are applied) rather than waiting at the gate: only an API
    /// server that does not answer, and only once something was applied there.
    pub fn unreachable_after_apply(&self, applied: bool) -> bool {
        applied && matches!(self, Gate::NotReady { .. })
    }
}

/// A client of a workload cluster and the server's URL (for messages).
pub struct Workload {
    pub client: Client,
    pub server: String,
    /// The API server's version (`v1.27.3`): what charts see as `.Capabilities.KubeVersion`.
    pub version: String,
    /// Applies to this cluster; its discovery cache also serves `lookup`, wait conditions and
    /// `delete` stages.
    pub applier: std::sync::Arc<Applier>,
    /// Watches of the objects capstan applied here (stopped when this is dropped).
    pub drift: crate::drift::DriftWatches,
}

/// Reads the kubeconfig Secret of `cluster` in `namespace` from the API server.
pub async fn read_secret(management: &Client, namespace: &str, cluster: &str) -> Result<Secret, Gate> {
    let name = kubeconfig_secret(cluster);
    let secrets: Api<Secret> = Api::namespaced(management.clone(), namespace);
    found(namespace, name.clone(), secrets.get_opt(&name).await)
}

/// Reads the kubeconfig Secret of `cluster` in `namespace` from the management cluster's
/// Secret store (the API server while it has not synced).
pub async fn read_stored_secret(
    management: &crate::management::Management,
    namespace: &str,
    cluster: &str,
) -> Result<Secret, Gate> {
    let name = kubeconfig_secret(cluster);
    found(
        namespace,
        name.clone(),
        management.kubeconfig_secret(namespace, &name).await,
    )
}

/// The Secret `name` a read found, or the gate it leaves closed.
fn found(namespace: &str, name: String, read: Result<Option<Secret>, kube::Error>) -> Result<Secret, Gate> {
    match read {
        Ok(Some(secret)) => Ok(secret),
        Ok(None) => Err(Gate::NoKubeconfig {
            namespace: namespace.to_string(),
            name,
        }),
        Err(e) => Err(Gate::Api {
            namespace: namespace.to_string(),
            name,
            problem: e.to_string(),
        }),
    }
}

/// Connects to the workload cluster the kubeconfig `secret` names and checks `/readyz`.
pub async fn connect(secret: &Secret) -> Result<Workload, Gate> {
    let namespace = secret.metadata.namespace.clone().unwrap_or_default();
    let name = secret.metadata.name.clone().unwrap_or_default();
    let bad = |problem: String| Gate::BadKubeconfig {
        namespace: namespace.clone(),
        name: name.clone(),
        problem,
    };
    let bytes = secret
        .data
        .as_ref()
        .and_then(|d| d.get("value"))
        .ok_or_else(|| bad("no data.value".into()))?;
    let text = std::str::from_utf8(&bytes.0).map_err(|e| bad(format!("not UTF-8: {e}")))?;
    let kubeconfig = Kubeconfig::from_yaml(text).map_err(|e| bad(e.to_string()))?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| bad(e.to_string()))?;
    let server = config.cluster_url.to_string().trim_end_matches('/').to_string();
    let client = capstan_apply::client::client(config).map_err(|e| bad(e.to_string()))?;
    ready(&client, &server).await?;
    let version = client
        .apiserver_version()
        .await
        .map_err(|e| Gate::NotReady {
            server: server.clone(),
            problem: format!("reading its version: {e}"),
        })?
        .git_version;
    // Reachability is the cache's job (`/readyz` here and after a failed pass).
    let applier = std::sync::Arc::new(Applier::new(client.clone(), server.clone()).without_server_check());
    Ok(Workload {
        client,
        server,
        version,
        applier,
        drift: crate::drift::DriftWatches::default(),
    })
}

/// Whether the API server behind `client` answers `/readyz` with `ok` (within 10 s).
pub async fn ready(client: &Client, server: &str) -> Result<(), Gate> {
    let not_ready = |problem: String| Gate::NotReady {
        server: server.to_string(),
        problem,
    };
    let request = http::Request::get("/readyz")
        .body(Vec::new())
        .map_err(|e| not_ready(e.to_string()))?;
    match tokio::time::timeout(Duration::from_secs(10), client.request_text(request)).await {
        Ok(Ok(body)) if body.trim() == "ok" => Ok(()),
        Ok(Ok(body)) => Err(not_ready(format!("/readyz answered {:?}", body.trim()))),
        Ok(Err(e)) => Err(not_ready(e.to_string())),
        Err(_) => Err(not_ready("/readyz gave no answer within 10s".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_unanswering_server_of_applied_addons_is_unreachable() {
        let not_ready = Gate::NotReady {
            server: "https://w:6443".into(),
            problem: "connection refused".into(),
        };
        let no_kubeconfig = Gate::NoKubeconfig {
            namespace: "ns".into(),
            name: "c-kubeconfig".into(),
        };
        let bad = Gate::BadKubeconfig {
            namespace: "ns".into(),
            name: "c-kubeconfig".into(),
            problem: "no data.value".into(),
        };
        let api = Gate::Api {
            namespace: "ns".into(),
            name: "c-kubeconfig".into(),
            problem: "timeout".into(),
        };
        let table = [
            (&not_ready, true, true),
            (&not_ready, false, false),
            (&no_kubeconfig, true, false),
            (&bad, true, false),
            (&api, true, false),
        ];
        for (gate, applied, want) in table {
            assert_eq!(
                gate.unreachable_after_apply(applied),
                want,
                "{gate} applied={applied}"
            );
        }
    }
}
