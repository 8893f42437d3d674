//! The Runtime SDK's wire types, as Cluster API sends and reads them (JSON, camelCase): the
//! discovery call, which lists the handlers this extension serves, and the lifecycle hooks'
//! requests and responses. Paths are `/<group>/<version>/<hook in lower case>/<handler>`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// Group and version of every request and response.
pub const API_VERSION: &str = "hooks.runtime.cluster.x-k8s.io/v1alpha1";

/// Where Cluster API asks which handlers an extension serves.
pub fn discovery_path() -> String {
    format!("/{API_VERSION}/discovery")
}

/// Whether a call succeeded; a `Failure` is handled by the handler's [`FailurePolicy`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ResponseStatus {
    Success,
    Failure,
}

/// What Cluster API does when a handler fails or cannot be reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FailurePolicy {
    /// Carry on as if the handler had answered `Success`.
    Ignore,
    /// Retry the call; the lifecycle step waits.
    Fail,
}

/// The lifecycle hooks capstan serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hook {
    /// Called before a Cluster's topology moves to a new version or class; may block it.
    BeforeClusterUpgrade,
    /// Called once the control plane is first available; cannot block.
    AfterControlPlaneInitialized,
}

impl Hook {
    pub const ALL: [Hook; 2] = [Hook::BeforeClusterUpgrade, Hook::AfterControlPlaneInitialized];

    /// The hook's name in requests and discovery.
    pub fn name(self) -> &'static str {
        match self {
            Hook::BeforeClusterUpgrade => "BeforeClusterUpgrade",
            Hook::AfterControlPlaneInitialized => "AfterControlPlaneInitialized",
        }
    }

    /// The handler's name in discovery (and the last part of its path).
    pub fn handler_name(self) -> &'static str {
        match self {
            Hook::BeforeClusterUpgrade => "before-cluster-upgrade",
            Hook::AfterControlPlaneInitialized => "after-control-plane-initialized",
        }
    }

    /// Where Cluster API calls the handler.
    pub fn path(self) -> String {
        format!(
            "/{API_VERSION}/{}/{}",
            self.name().to_ascii_lowercase(),
            self.handler_name()
        )
    }

    /// How long Cluster API waits for an answer (it allows at most 30 s); answers come from
    /// one read and at most a few writes of a ClusterAddon.
    fn timeout_seconds(self) -> i32 {
        10
    }

    /// `BeforeClusterUpgrade` fails closed: the addons' order is the point of the hook, and
    /// its own timeout bounds the wait while capstan answers. The other only records.
    fn failure_policy(self) -> FailurePolicy {
        match self {
            Hook::BeforeClusterUpgrade => FailurePolicy::Fail,
            Hook::AfterControlPlaneInitialized => FailurePolicy::Ignore,
        }
    }

    /// The hook whose path ends `path` (an ExtensionConfig may put the server below a prefix).
    pub fn of_path(path: &str) -> Option<Hook> {
        Hook::ALL.into_iter().find(|h| path.ends_with(&h.path()))
    }
}

/// The hook a handler answers, as discovery names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupVersionHook {
    pub api_version: String,
    pub hook: String,
}

/// One handler in the discovery response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Handler {
    pub name: String,
    pub request_hook: GroupVersionHook,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_policy: Option<FailurePolicy>,
}

/// The answer to the discovery call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoveryResponse {
    pub api_version: String,
    pub kind: String,
    pub status: ResponseStatus,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default)]
    pub handlers: Vec<Handler>,
}

/// The handlers capstan serves: one per [`Hook`].
pub fn discovery() -> DiscoveryResponse {
    DiscoveryResponse {
        api_version: API_VERSION.into(),
        kind: "DiscoveryResponse".into(),
        status: ResponseStatus::Success,
        message: String::new(),
        handlers: Hook::ALL
            .into_iter()
            .map(|hook| Handler {
                name: hook.handler_name().into(),
                request_hook: GroupVersionHook {
                    api_version: API_VERSION.into(),
                    hook: hook.name().into(),
                },
                timeout_seconds: Some(hook.timeout_seconds()),
                failure_policy: Some(hook.failure_policy()),
            })
            .collect(),
    }
}

/// A lifecycle hook's request: both hooks capstan serves carry the Cluster; the Kubernetes
/// versions come with `BeforeClusterUpgrade`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookRequest {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    /// The ExtensionConfig's settings (capstan has none).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, String>,
    /// The Cluster (`cluster.x-k8s.io`), as the topology controller sees it.
    #[serde(default)]
    pub cluster: Json,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_kubernetes_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_kubernetes_version: Option<String>,
}

/// The Cluster a request names, and the ClusterClass its topology moves to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterOfRequest {
    pub namespace: String,
    pub name: String,
    /// `spec.topology.class` (v1beta1) or `spec.topology.classRef.name` (v1beta2).
    pub class: Option<String>,
}

/// A hook request whose Cluster has no name or namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the request's cluster has no metadata.name and metadata.namespace")]
pub struct NoCluster;

impl HookRequest {
    /// The request's Cluster, or why it names none.
    pub fn cluster(&self) -> Result<ClusterOfRequest, NoCluster> {
        let text = |pointer: &str| {
            self.cluster
                .pointer(pointer)
                .and_then(Json::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let (Some(name), Some(namespace)) = (text("/metadata/name"), text("/metadata/namespace")) else {
            return Err(NoCluster);
        };
        Ok(ClusterOfRequest {
            namespace,
            name,
            class: text("/spec/topology/class").or_else(|| text("/spec/topology/classRef/name")),
        })
    }
}

/// A lifecycle hook's answer. `retryAfterSeconds` above 0 blocks a blocking hook; the
/// non-blocking hooks' responses have none.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookResponse {
    pub api_version: String,
    pub kind: String,
    pub status: ResponseStatus,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<i32>,
}

impl HookResponse {
    fn new(hook: Hook, status: ResponseStatus, message: String, retry: Option<i32>) -> Self {
        HookResponse {
            api_version: API_VERSION.into(),
            kind: format!("{}Response", hook.name()),
            status,
            message,
            retry_after_seconds: retry,
        }
    }

    /// Success; for a blocking hook, `retry` seconds until Cluster API asks again (0: go on).
    pub fn success(hook: Hook, message: String, retry: Option<i32>) -> Self {
        HookResponse::new(hook, ResponseStatus::Success, message, retry)
    }

    /// Failure with `message` (Cluster API shows it in a condition: keep it free of
    /// timestamps, so the condition does not change on every call).
    pub fn failure(hook: Hook, message: String) -> Self {
        HookResponse::new(hook, ResponseStatus::Failure, message, None)
    }

    /// Whether this answer lets the lifecycle step go on.
    #[cfg(test)]
    pub fn proceeds(&self) -> bool {
        self.status == ResponseStatus::Success && self.retry_after_seconds.unwrap_or(0) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn discovery_lists_both_handlers_with_paths_cluster_api_calls() {
        let json = serde_json::to_value(discovery()).expect("serializes");
        assert_eq!(
            json,
            json!({
                "apiVersion": "hooks.runtime.cluster.x-k8s.io/v1alpha1",
                "kind": "DiscoveryResponse",
                "status": "Success",
                "handlers": [
                    {"name": "before-cluster-upgrade",
                     "requestHook": {"apiVersion": "hooks.runtime.cluster.x-k8s.io/v1alpha1", "hook": "BeforeClusterUpgrade"},
                     "timeoutSeconds": 10, "failurePolicy": "Fail"},
                    {"name": "after-control-plane-initialized",
                     "requestHook": {"apiVersion": "hooks.runtime.cluster.x-k8s.io/v1alpha1", "hook": "AfterControlPlaneInitialized"},
                     "timeoutSeconds": 10, "failurePolicy": "Ignore"},
                ]
            })
        );
        assert_eq!(
            Hook::BeforeClusterUpgrade.path(),
            "/hooks.runtime.cluster.x-k8s.io/v1alpha1/beforeclusterupgrade/before-cluster-upgrade"
        );
        assert_eq!(
            Hook::of_path(
                "/prefix/hooks.runtime.cluster.x-k8s.io/v1alpha1/aftercontrolplaneinitialized/after-control-plane-initialized"
            ),
            Some(Hook::AfterControlPlaneInitialized)
        );
        assert_eq!(Hook::of_path(&discovery_path()), None);
    }

    #[test]
    fn request_names_cluster_and_class_in_either_api_version() {
        let v1beta1: HookRequest = serde_json::from_value(json!({
            "apiVersion": API_VERSION, "kind": "BeforeClusterUpgradeRequest",
            "cluster": {"metadata": {"name": "c1", "namespace": "ns"},
                        "spec": {"topology": {"class": "docker-ferrol-1-27-v2"}}},
            "fromKubernetesVersion": "v1.27.3", "toKubernetesVersion": "v1.27.3"
        }))
        .expect("parses");
        assert_eq!(
            v1beta1.cluster(),
            Ok(ClusterOfRequest {
                namespace: "ns".into(),
                name: "c1".into(),
                class: Some("docker-ferrol-1-27-v2".into())
            })
        );
        let v1beta2: HookRequest = serde_json::from_value(json!({
            "cluster": {"metadata": {"name": "c1", "namespace": "ns"},
                        "spec": {"topology": {"classRef": {"name": "x"}}}}
        }))
        .expect("parses");
        assert_eq!(v1beta2.cluster().expect("cluster").class.as_deref(), Some("x"));
        let nameless = HookRequest::default();
        assert!(nameless.cluster().is_err());
    }

    #[test]
    fn responses_carry_the_hooks_kind_and_retry_only_when_given() {
        let blocking = HookResponse::success(Hook::BeforeClusterUpgrade, "wait".into(), Some(5));
        assert_eq!(
            serde_json::to_value(&blocking).expect("serializes"),
            json!({"apiVersion": API_VERSION, "kind": "BeforeClusterUpgradeResponse",
                   "status": "Success", "message": "wait", "retryAfterSeconds": 5})
        );
        assert!(!blocking.proceeds());
        let done = HookResponse::success(Hook::AfterControlPlaneInitialized, String::new(), None);
        assert_eq!(
            serde_json::to_value(&done).expect("serializes"),
            json!({"apiVersion": API_VERSION, "kind": "AfterControlPlaneInitializedResponse",
                   "status": "Success"})
        );
        assert!(done.proceeds());
    }
}
