//! Drift seen at once through watches (issue 26 §1): with the drift interval at 1 h, an addon
//! object deleted on the workload cluster, and one edited by another field manager, are
//! repaired within 5 s — the interval pass could not have done it; the same for the objects
//! of a multi-stage addon's stages.

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::json;

use crate::operator_common::eventually;
use capstan_testenv::{Binaries, TestCluster};

const CLUSTER: &str = "watched";
const CLASS: &str = "docker-ferrol-1-27-v1";
const REPAIR: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_is_repaired_within_seconds() {
    let test = "drift_is_repaired_within_seconds";
    let Some(env) = crate::operator_common::start_shared(test, &[CLASS]).await else {
        return;
    };
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let workload = TestCluster::start(&bins, "watched-workload")
        .await
        .expect("workload cluster starts");
    let operator = env.operator(0, &["--drift-interval", "1h"]);
    env.create_stack(&["v1"], "1m").await;
    env.cluster_api(CLUSTER, CLASS, "cp.watched.example", &workload, false)
        .await;
    env.wait_applied(CLUSTER, CLASS, &operator, Duration::from_secs(180))
        .await;
    // The watches start right after the apply; give their initial listing a moment.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let deployments: Api<Deployment> = Api::namespaced(workload.client(), "kube-system");

    // Deleted.
    delete_and_await_repair(&deployments, &operator).await;

    // Edited by someone else: the replica count capstan applied comes back.
    let applied = deployments
        .get("metrics-server")
        .await
        .expect("metrics-server")
        .spec
        .and_then(|s| s.replicas)
        .expect("the chart sets spec.replicas");
    let params = PatchParams {
        field_manager: Some("someone-else".into()),
        ..PatchParams::default()
    };
    deployments
        .patch(
            "metrics-server",
            &params,
            &Patch::Merge(&json!({"spec": {"replicas": applied + 4}})),
        )
        .await
        .expect("metrics-server edited");
    let edited_at = Instant::now();
    eventually(
        "metrics-server's replicas restored",
        REPAIR,
        &operator,
        || async {
            let replicas = deployments.get("metrics-server").await.ok()?.spec?.replicas?;
            (replicas == applied).then_some(())
        },
    )
    .await;
    eprintln!("edited object repaired after {:?}", edited_at.elapsed());
    drop(operator);
}

/// A multi-stage addon: the objects its `apply` stages put on the workload cluster are watched
/// once the stages are done — a deleted one is back within seconds, not at the next drift pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_of_a_staged_addon_is_repaired_within_seconds() {
    let test = "drift_of_a_staged_addon_is_repaired_within_seconds";
    const STAGED: &str = "docker-ferrol-1-27-v0-sha.hipstsw";
    let Some(env) = crate::operator_common::start_shared(test, &["docker-ferrol-1-27-v0-sha-hipstsw"]).await
    else {
        return;
    };
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let workload = TestCluster::start(&bins, "staged-workload")
        .await
        .expect("workload cluster starts");
    let operator = env.operator(0, &["--drift-interval", "1h"]);
    env.create_stack_named("ferrol-custom", "custom", &[], "1m").await;
    env.cluster_api("staged", STAGED, "cp.staged.example", &workload, false)
        .await;
    env.wait_applied("staged", STAGED, &operator, Duration::from_secs(180))
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let deployments: Api<Deployment> = Api::namespaced(workload.client(), "kube-system");
    delete_and_await_repair(&deployments, &operator).await;
    drop(operator);
}

/// Deletes the metrics-server Deployment and waits, at most [`REPAIR`], until it is back.
async fn delete_and_await_repair(deployments: &Api<Deployment>, operator: &capstan_testenv::ChildGuard) {
    deployments
        .delete("metrics-server", &DeleteParams::default())
        .await
        .expect("metrics-server deleted");
    let deleted_at = Instant::now();
    eventually("metrics-server restored", REPAIR, operator, || async {
        deployments
            .get_opt("metrics-server")
            .await
            .ok()
            .flatten()
            .map(drop)
    })
    .await;
    eprintln!("deleted object restored after {:?}", deleted_at.elapsed());
}
