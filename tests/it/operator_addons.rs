//! `capstan operator` bringing cluster addons onto a workload cluster: two real API servers
//! (management + workload), no Cluster API controllers. The test plays Cluster API: it
//! creates the Cluster with its control plane and infrastructure objects, sets
//! `status.controlPlaneReady` and writes the `<cluster>-kubeconfig` Secret.
//!
//! A Cluster on docker-ferrol-1-27-v1 gets its addons with values injected from the Cluster;
//! switching to v2 removes the `web` Deployment and updates the rest; switching to v3 (same
//! addon version) changes nothing on the workload cluster; a deleted addon object comes back;
//! a ClusterAddon deleted alone removes its objects first and is made again at once; a deleted
//! Cluster releases its ClusterAddon without reaching for the workload cluster.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::operator_common::{eventually, names};
use capstan_operator::api::ClusterAddon;
use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind};

const CLUSTER: &str = "workload";
const HOST: &str = "cp.workload.example";

async fn addon(env: &crate::operator_common::Env) -> Option<ClusterAddon> {
    let api: Api<ClusterAddon> = Api::namespaced(env.client(), &env.ns);
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
    let Some(env) = crate::operator_common::start_shared(test, &published).await else {
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

    // Cluster API's part: the control plane and infrastructure objects, then the Cluster;
    // the gates stay closed for now.
    env.cluster_api(CLUSTER, "docker-ferrol-1-27-v1", HOST, &workload, true)
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
    env.set_control_plane_ready(CLUSTER).await;
    let (_, message) = eventually(
        "the kubeconfig gate reported",
        Duration::from_secs(30),
        &operator,
        || async { reason(&addon(&env).await?).filter(|(r, _)| r == "WorkloadNotReady") },
    )
    .await;
    assert_eq!(
        message,
        format!(
            "the kubeconfig Secret {}/{CLUSTER}-kubeconfig does not exist yet",
            env.ns
        )
    );
    env.write_kubeconfig(CLUSTER, &workload).await;

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
    env.set_class(CLUSTER, "docker-ferrol-1-27-v2").await;
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
    let versions = |workload: kube::Client, resources: Vec<capstan_operator::api::Resource>| async move {
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
    env.set_class(CLUSTER, "docker-ferrol-1-27-v3").await;
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
    // Idle drift passes sent nothing (issue 21): the only correction is the deleted object.
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(env.client(), &env.ns);
    let drift_notes = || async {
        events
            .list(&Default::default())
            .await
            .expect("list events")
            .items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some("DriftCorrected"))
            .map(|e| e.note.unwrap_or_default())
            .collect::<Vec<String>>()
    };
    let notes = eventually(
        "the DriftCorrected Event of the restored object",
        Duration::from_secs(30),
        &operator,
        || async { Some(drift_notes().await).filter(|n| !n.is_empty()) },
    )
    .await;
    assert!(
        notes
            .iter()
            .all(|n| n == "restored 1 drifted object(s): Deployment.apps/kube-system/metrics-server"),
        "drift corrections of objects nobody changed: {notes:?}"
    );

    // The ClusterAddon alone is deleted: its objects leave the workload cluster first, then
    // the Cluster controller makes a new ClusterAddon (no change of the Cluster needed), which
    // brings them back. New uids on both show the round trip.
    let addons: Api<ClusterAddon> = Api::namespaced(env.client(), &env.ns);
    let uid = |meta: &kube::api::ObjectMeta| meta.uid.clone().unwrap_or_default();
    let old_addon = uid(&addon(&env).await.expect("ClusterAddon exists").metadata);
    let old_deployment = uid(&deployments
        .get("metrics-server")
        .await
        .expect("metrics-server exists")
        .metadata);
    addons
        .delete(&format!("cluster-addon-{CLUSTER}"), &DeleteParams::default())
        .await
        .expect("ClusterAddon deleted");
    eventually(
        "a new ClusterAddon, whose addons were removed and applied again",
        Duration::from_secs(90),
        &operator,
        || async {
            let new_addon = uid(&addon(&env).await?.metadata);
            let deployment = deployments.get_opt("metrics-server").await.ok()??;
            (new_addon != old_addon && uid(&deployment.metadata) != old_deployment).then_some(())
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
