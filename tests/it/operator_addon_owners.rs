//! Two owners of one object (issue 45 §5): two Clusters whose kubeconfigs name one workload
//! API server apply the same addon objects. The second ClusterAddon leaves them to the first
//! (an `OwnershipConflict` condition and a Warning Event naming the first's inventory), stays
//! `Ready`, and neither writes an object again over a quiet spell with the drift watches on
//! (before the fix each restored the other's objects without end). Annotated
//! `capstan.dev/take-over=true`, the second takes them over; the first then reports the
//! conflict and leaves them, and again nothing is written over a quiet spell.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Service, ServiceAccount};
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;

use crate::operator_common::{Env, events_about, eventually};
use capstan_operator::api::ClusterAddon;
use capstan_testenv::{Binaries, ChildGuard, TestCluster};

const CLASS: &str = "docker-ferrol-1-27-v1";
const INVENTORY: &str = "capstan.dev/inventory";
/// How long nothing may be written once the owners have settled.
const QUIET: Duration = Duration::from_secs(12);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_owner_reports_the_conflict_and_neither_loops() {
    let test = "a_second_owner_reports_the_conflict_and_neither_loops";
    let Some(env) = crate::operator_common::start_shared(test, &[CLASS]).await else {
        return;
    };
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let (workload, operator) = env
        .applied_cluster(&bins, "first", CLASS, &["--drift-interval", "1h"])
        .await;
    let first = "kube-system/capstan.caddon.cluster-addon-first";
    let second = "kube-system/capstan.caddon.cluster-addon-second";
    let deployments: Api<Deployment> = Api::namespaced(workload.client(), "kube-system");
    assert_eq!(owner(&deployments).await, first);

    // The second Cluster, on the same workload API server.
    env.cluster_api("second", CLASS, "cp.second.example", &workload, false)
        .await;
    await_conflict(&env, &operator, "second", first).await;
    env.wait_applied("second", CLASS, &operator, Duration::from_secs(60))
        .await;
    let warned = events_about(env.client(), &env.ns, "ClusterAddon", "cluster-addon-second").await;
    assert!(
        warned.iter().any(|e| e.type_.as_deref() == Some("Warning")
            && e.reason.as_deref() == Some("OwnershipConflict")
            && e.note.as_deref().is_some_and(|n| n.contains(first))),
        "no Warning Event naming {first}: {warned:#?}"
    );
    assert_eq!(owner(&deployments).await, first, "the first keeps its objects");
    assert_quiet(&workload, &operator).await;

    // Taking over, asked for.
    let addons: Api<ClusterAddon> = Api::namespaced(env.client(), &env.ns);
    addons
        .patch(
            "cluster-addon-second",
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"annotations": {"capstan.dev/take-over": "true"}}})),
        )
        .await
        .expect("annotated");
    eventually(
        "the second takes over",
        Duration::from_secs(30),
        &operator,
        || async { (owner(&deployments).await == second).then_some(()) },
    )
    .await;
    await_conflict(&env, &operator, "first", second).await;
    // The pass that took the objects over writes the status after them: wait for it.
    eventually(
        "cluster-addon-second's OwnershipConflict cleared (the condition stays, False)",
        Duration::from_secs(30),
        &operator,
        || async {
            let status = env.addon("second").await?.status?;
            let condition = status
                .conditions
                .iter()
                .find(|c| c.type_ == "OwnershipConflict")?;
            (condition.status.to_string() == "False").then_some(())
        },
    )
    .await;
    assert_quiet(&workload, &operator).await;
    assert_eq!(owner(&deployments).await, second);
    drop(operator);
}

/// The inventory that marks metrics-server (an object of the addon chart).
async fn owner(deployments: &Api<Deployment>) -> String {
    let deployment = deployments.get("metrics-server").await.expect("metrics-server");
    deployment
        .metadata
        .annotations
        .and_then(|mut a| a.remove(INVENTORY))
        .unwrap_or_default()
}

/// Waits until Cluster `cluster`'s ClusterAddon reports objects owned by inventory `owner`.
async fn await_conflict(env: &Env, operator: &ChildGuard, cluster: &str, owner: &str) {
    eventually(
        &format!("cluster-addon-{cluster} reports the objects of {owner}"),
        Duration::from_secs(120),
        operator,
        || async {
            let status = env.addon(cluster).await?.status?;
            let condition = status
                .conditions
                .iter()
                .find(|c| c.type_ == "OwnershipConflict")?;
            (condition.status.to_string() == "True" && condition.message.contains(owner)).then_some(())
        },
    )
    .await;
}

/// Over [`QUIET`], no object capstan applied to `workload` is written again (each
/// resourceVersion stays), and the operator keeps running.
async fn assert_quiet(workload: &TestCluster, operator: &ChildGuard) {
    let before = versions(workload).await;
    assert!(!before.is_empty());
    tokio::time::sleep(QUIET).await;
    let after = versions(workload).await;
    let changed: Vec<&String> = before
        .iter()
        .filter(|(name, version)| after.get(*name) != Some(version))
        .map(|(name, _)| name)
        .collect();
    assert!(
        changed.is_empty(),
        "written again within {QUIET:?}: {changed:?}\n{}",
        operator.log_tail(60)
    );
}

/// The resourceVersion of each Deployment, Service and ServiceAccount capstan applied in
/// kube-system.
async fn versions(workload: &TestCluster) -> BTreeMap<String, String> {
    let client = workload.client();
    let params = ListParams::default().labels("capstan.dev/managed=true");
    let mut out = BTreeMap::new();
    macro_rules! list {
        ($kind:ty, $name:literal) => {
            let api: Api<$kind> = Api::namespaced(client.clone(), "kube-system");
            for item in api.list(&params).await.expect("list").items {
                out.insert(
                    format!("{}/{}", $name, item.metadata.name.unwrap_or_default()),
                    item.metadata.resource_version.unwrap_or_default(),
                );
            }
        };
    }
    list!(Deployment, "Deployment");
    list!(Service, "Service");
    list!(ServiceAccount, "ServiceAccount");
    out
}
