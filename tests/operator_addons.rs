//! `capstan operator` bringing cluster addons onto a workload cluster: two real API servers
//! (management + workload), no Cluster API controllers. The test plays Cluster API: it
//! creates the Cluster with its control plane and infrastructure objects, sets
//! `status.controlPlaneReady` and writes the `<cluster>-kubeconfig` Secret.
//!
//! A Cluster on docker-ferrol-1-27-v1 gets its addons with values injected from the Cluster;
//! switching to v2 removes the `web` Deployment and updates the rest; switching to v3 (same
//! addon version) changes nothing on the workload cluster; a deleted addon object comes back;
//! a deleted Cluster releases its ClusterAddon without reaching for the workload cluster.

#[path = "support/fake_github.rs"]
mod fake_github;
mod operator_common;
mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use capstan::operator::api::ClusterAddon;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use operator_common::{NS, eventually, names};
use serde_json::json;
use support::{Binaries, TestCluster};

const CLUSTER: &str = "workload";
const HOST: &str = "cp.workload.example";

fn dynamic(env: &operator_common::Env, group: &str, version: &str, kind: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    Api::namespaced_with(env.client(), NS, &resource)
}

async fn create(api: &Api<DynamicObject>, object: serde_json::Value) {
    let object: DynamicObject = serde_json::from_value(object).expect("object");
    api.create(&PostParams::default(), &object)
        .await
        .expect("created");
}

async fn set_class(env: &operator_common::Env, class: &str) {
    env.clusters()
        .patch(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"topology": {"class": class}}})),
        )
        .await
        .expect("class switched");
}

async fn addon(env: &operator_common::Env) -> Option<ClusterAddon> {
    let api: Api<ClusterAddon> = Api::namespaced(env.client(), NS);
    api.get_opt(&format!("cluster-addon-{CLUSTER}"))
        .await
        .ok()
        .flatten()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn addons_follow_the_cluster_class() {
    let test = "addons_follow_the_cluster_class";
    let published = [
        "docker-ferrol-1-27-v1",
        "docker-ferrol-1-27-v2",
        "docker-ferrol-1-27-v3",
    ];
    let Some(env) = operator_common::start(test, &published).await else {
        return;
    };
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let workload = TestCluster::start(&bins, "workload")
        .await
        .expect("workload cluster starts");
    let operator = env.operator(0, &[]);
    env.create_stack(&["v1", "v2"], "5s").await;
    let want = names(&published);
    eventually(
        "v1, v2 and v3 ready",
        Duration::from_secs(90),
        &operator,
        || async { (env.ready_releases().await == want).then_some(()) },
    )
    .await;

    // Cluster API's part: the control plane and infrastructure objects, then the Cluster.
    create(
        &dynamic(
            &env,
            "infrastructure.cluster.x-k8s.io",
            "v1beta1",
            "DockerCluster",
        ),
        json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "DockerCluster",
               "metadata": {"name": CLUSTER, "namespace": NS}, "spec": {}}),
    )
    .await;
    create(
        &dynamic(
            &env,
            "controlplane.cluster.x-k8s.io",
            "v1beta1",
            "KubeadmControlPlane",
        ),
        json!({"apiVersion": "controlplane.cluster.x-k8s.io/v1beta1", "kind": "KubeadmControlPlane",
               "metadata": {"name": CLUSTER, "namespace": NS},
               "spec": {"version": "v1.27.3", "kubeadmConfigSpec": {},
                        "machineTemplate": {"infrastructureRef": {
                            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                            "kind": "DockerMachineTemplate", "name": "cp"}}}}),
    )
    .await;
    create(
        &env.clusters(),
        json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
               "metadata": {"name": CLUSTER, "namespace": NS},
               "spec": {
                   "controlPlaneEndpoint": {"host": HOST, "port": 6443},
                   "controlPlaneRef": {"apiVersion": "controlplane.cluster.x-k8s.io/v1beta1",
                                       "kind": "KubeadmControlPlane", "name": CLUSTER},
                   "infrastructureRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                                         "kind": "DockerCluster", "name": CLUSTER},
                   "topology": {"class": "docker-ferrol-1-27-v1", "version": "v1.27.3"}}}),
    )
    .await;

    // Gates: the ClusterAddon says which one is missing.
    let reason = |addon: &ClusterAddon| {
        addon
            .status
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == "ClusterReady"))
            .map(|c| (c.reason.clone(), c.message.clone()))
    };
    let (why, _) = eventually(
        "the control-plane gate reported",
        Duration::from_secs(30),
        &operator,
        || async { reason(&addon(&env).await?).filter(|(r, _)| r == "ControlPlaneNotReady") },
    )
    .await;
    assert_eq!(why, "ControlPlaneNotReady");
    env.clusters()
        .patch_status(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": {"controlPlaneReady": true}})),
        )
        .await
        .expect("controlPlaneReady set");
    let (_, message) = eventually(
        "the kubeconfig gate reported",
        Duration::from_secs(30),
        &operator,
        || async { reason(&addon(&env).await?).filter(|(r, _)| r == "WorkloadNotReady") },
    )
    .await;
    assert_eq!(
        message,
        format!("the kubeconfig Secret {NS}/{CLUSTER}-kubeconfig does not exist yet")
    );
    let kubeconfig = std::fs::read(workload.kubeconfig_path()).expect("workload kubeconfig");
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": format!("{CLUSTER}-kubeconfig"), "namespace": NS,
                     "labels": {"cluster.x-k8s.io/cluster-name": CLUSTER}},
        "data": {"value": base64_encode(&kubeconfig)},
    }))
    .expect("Secret");
    Api::<Secret>::namespaced(env.client(), NS)
        .create(&PostParams::default(), &secret)
        .await
        .expect("kubeconfig Secret created");

    // v1: every addon, with the Cluster's values in them.
    let deployments: Api<Deployment> = Api::namespaced(workload.client(), "kube-system");
    let labels_of = |d: &Deployment| d.metadata.labels.clone().unwrap_or_default();
    eventually(
        "v1 addons on the workload cluster",
        Duration::from_secs(60),
        &operator,
        || async {
            let addon = addon(&env).await?;
            let status = addon.status?;
            (status.ready && status.applied_cluster_stack.as_deref() == Some("docker-ferrol-1-27-v1"))
                .then_some(())
        },
    )
    .await;
    let metrics_server = deployments.get("metrics-server").await.expect("metrics-server");
    assert_eq!(
        labels_of(&metrics_server).get("domain").map(String::as_str),
        Some(HOST)
    );
    assert_eq!(
        labels_of(&metrics_server)
            .get("clusterAddonVersion")
            .map(String::as_str),
        Some("v1")
    );
    deployments.get("web").await.expect("v1 has the web Deployment");

    // v2: `web` is gone, the rest updated.
    set_class(&env, "docker-ferrol-1-27-v2").await;
    eventually(
        "v2 addons on the workload cluster",
        Duration::from_secs(60),
        &operator,
        || async {
            let status = addon(&env).await?.status?;
            (status.ready && status.applied_cluster_stack.as_deref() == Some("docker-ferrol-1-27-v2"))
                .then_some(())
        },
    )
    .await;
    assert!(
        deployments.get_opt("web").await.expect("get web").is_none(),
        "v2 dropped web"
    );
    let metrics_server = deployments.get("metrics-server").await.expect("metrics-server");
    assert_eq!(
        labels_of(&metrics_server)
            .get("clusterAddonVersion")
            .map(String::as_str),
        Some("v2")
    );

    // v3 has the same addons: nothing on the workload cluster is written.
    let status = addon(&env).await.and_then(|a| a.status).expect("status");
    let versions = |workload: kube::Client, resources: Vec<capstan::operator::api::Resource>| async move {
        let mut out = BTreeMap::new();
        for r in resources {
            let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(&r.group, &r.version, &r.kind));
            let api: Api<DynamicObject> = if r.namespace.is_empty() {
                Api::all_with(workload.clone(), &resource)
            } else {
                Api::namespaced_with(workload.clone(), &r.namespace, &resource)
            };
            let object = api.get(&r.name).await.expect("applied object exists");
            // What an object is, without what the server stamps on each write (kube-apiserver
            // 1.20 bumps resourceVersion on a no-op server-side apply of some objects).
            let mut content = serde_json::to_value(&object).expect("object JSON");
            if let Some(meta) = content.get_mut("metadata").and_then(|m| m.as_object_mut()) {
                for stamp in ["resourceVersion", "managedFields"] {
                    meta.remove(stamp);
                }
            }
            out.insert(format!("{}/{}/{}", r.kind, r.namespace, r.name), content);
        }
        out
    };
    let before = versions(workload.client(), status.resources.clone()).await;
    set_class(&env, "docker-ferrol-1-27-v3").await;
    eventually(
        "v3 recorded applied",
        Duration::from_secs(60),
        &operator,
        || async {
            let status = addon(&env).await?.status?;
            (status.ready && status.applied_cluster_stack.as_deref() == Some("docker-ferrol-1-27-v3"))
                .then_some(())
        },
    )
    .await;
    let status = addon(&env).await.and_then(|a| a.status).expect("status");
    let after = versions(workload.client(), status.resources.clone()).await;
    let changed: Vec<&String> = after
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(v))
        .map(|(k, _)| k)
        .collect();
    assert!(changed.is_empty(), "v3 changed addon objects: {changed:?}");
    assert_eq!(after.len(), before.len());

    // Drift: a deleted addon object is restored within the drift interval (1m).
    deployments
        .delete("metrics-server", &DeleteParams::default())
        .await
        .expect("metrics-server deleted");
    eventually(
        "metrics-server restored",
        Duration::from_secs(90),
        &operator,
        || async {
            deployments
                .get_opt("metrics-server")
                .await
                .ok()
                .flatten()
                .map(drop)
        },
    )
    .await;

    // The Cluster goes (its workload cluster with it): the ClusterAddon is released.
    env.clusters()
        .delete(CLUSTER, &DeleteParams::default())
        .await
        .expect("Cluster deleted");
    eventually(
        "the ClusterAddon released",
        Duration::from_secs(30),
        &operator,
        || async { addon(&env).await.is_none().then_some(()) },
    )
    .await;
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
