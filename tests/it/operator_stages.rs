//! Multi-stage addons (`clusteraddon.yaml`) of the shared release
//! docker-ferrol-1-27-v0-sha-hipstsw through `capstan operator`, on real API servers:
//! - a Cluster created on it runs the `AfterControlPlaneInitialized` stages (metrics-server)
//!   and nothing of `BeforeClusterUpgrade`;
//! - a Cluster upgraded to it from v1 runs the `BeforeClusterUpgrade` stage (ngnix) and waits
//!   in `waitingForPostCondition` while the CEL post-condition
//!   `msdeployment.spec.replicas == ngnix.spec.replicas` is false, then finishes once it holds;
//! - an object a stage applied and someone deleted is restored within the drift interval.

use std::time::Duration;

use crate::operator_common::{eventually, names};
use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams};

const STAGED: &str = "docker-ferrol-1-27-v0-sha.hipstsw";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stages_run_in_order_and_honour_their_conditions() {
    let test = "stages_run_in_order_and_honour_their_conditions";
    let published = ["docker-ferrol-1-27-v1", "docker-ferrol-1-27-v0-sha-hipstsw"];
    let Some(env) = crate::operator_common::start_shared(test, &published).await else {
        return;
    };
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let fresh = TestCluster::start(&bins, "fresh")
        .await
        .expect("workload cluster starts");
    let upgraded = TestCluster::start(&bins, "upgraded")
        .await
        .expect("workload cluster starts");
    // The test scales metrics-server out of band to hold a stage's post-condition false; with
    // drift watches that edit is repaired within seconds, before the stage could see it.
    let operator = env.operator(0, &["--drift-watches", "false"]);
    env.create_stack_named("ferrol", "stable", &[], "5s").await;
    env.create_stack_named("ferrol-custom", "custom", &[], "5s").await;
    let want = names(&["docker-ferrol-1-27-v0-sha-hipstsw", "docker-ferrol-1-27-v1"]);
    eventually(
        "both releases ready",
        Duration::from_secs(90),
        &operator,
        || async { (env.ready_releases().await == want).then_some(()) },
    )
    .await;

    // Created on the staged release: its AfterControlPlaneInitialized stage only.
    env.cluster_api("fresh", STAGED, "fresh.example", &fresh, false)
        .await;
    env.wait_applied("fresh", STAGED, &operator, Duration::from_secs(60))
        .await;
    let status = env.addon("fresh").await.and_then(|a| a.status).expect("status");
    assert_eq!(
        status.stages_for.as_deref(),
        Some("AfterControlPlaneInitialized docker-ferrol-1-27-v0-sha.hipstsw")
    );
    let stages: Vec<(String, String, String)> = status
        .stages
        .iter()
        .map(|s| (s.name.clone(), s.action.clone(), s.phase.clone()))
        .collect();
    assert_eq!(
        stages,
        vec![("metrics-server".into(), "apply".into(), "done".into())]
    );
    let fresh_deployments: Api<Deployment> = Api::namespaced(fresh.client(), "kube-system");
    fresh_deployments
        .get("metrics-server")
        .await
        .expect("metrics-server applied");
    assert!(
        fresh_deployments
            .get_opt("cluster-addon-ngnix")
            .await
            .expect("get")
            .is_none(),
        "a BeforeClusterUpgrade stage ran on creation"
    );

    // Upgraded from v1 with metrics-server scaled to 2: ngnix (1 replica) is applied, and the
    // stage waits for its post-condition.
    env.cluster_api(
        "upgraded",
        "docker-ferrol-1-27-v1",
        "upgraded.example",
        &upgraded,
        false,
    )
    .await;
    env.wait_applied(
        "upgraded",
        "docker-ferrol-1-27-v1",
        &operator,
        Duration::from_secs(60),
    )
    .await;
    let deployments: Api<Deployment> = Api::namespaced(upgraded.client(), "kube-system");
    let scale = |replicas: i32| {
        let deployments = deployments.clone();
        async move {
            deployments
                .patch(
                    "metrics-server",
                    &PatchParams::default(),
                    &Patch::Merge(&serde_json::json!({"spec": {"replicas": replicas}})),
                )
                .await
                .expect("metrics-server scaled");
        }
    };
    scale(2).await;
    env.set_class("upgraded", STAGED).await;
    let message = eventually(
        "ngnix waits for its post-condition",
        Duration::from_secs(60),
        &operator,
        || async {
            // The phase is recorded after the apply, the reason once the condition was
            // evaluated: wait for the second write.
            let status = env.addon("upgraded").await?.status?;
            let stage = status.stages.first()?;
            let message = status
                .conditions
                .iter()
                .find(|c| c.type_ == "Applied")
                .map(|c| c.message.clone())
                .unwrap_or_default();
            (stage.name == "ngnix"
                && stage.phase == "waitingForPostCondition"
                && message.starts_with("stage ngnix:"))
            .then_some(message)
        },
    )
    .await;
    assert!(
        message.starts_with("stage ngnix: waitingForPostCondition: `msdeployment.spec.replicas == ngnix.spec.replicas` is false"),
        "{message}"
    );
    deployments
        .get("cluster-addon-ngnix")
        .await
        .expect("ngnix applied before the wait");
    let status = env
        .addon("upgraded")
        .await
        .and_then(|a| a.status)
        .expect("status");
    assert_eq!(
        status.applied_cluster_stack.as_deref(),
        Some("docker-ferrol-1-27-v1")
    );

    // The condition holds: the stage finishes and the upgrade is recorded.
    scale(1).await;
    env.wait_applied("upgraded", STAGED, &operator, Duration::from_secs(60))
        .await;
    let status = env
        .addon("upgraded")
        .await
        .and_then(|a| a.status)
        .expect("status");
    assert_eq!(
        status.stages_for.as_deref(),
        Some("BeforeClusterUpgrade docker-ferrol-1-27-v0-sha.hipstsw")
    );
    assert_eq!(status.stages.len(), 1);
    assert_eq!(status.stages[0].phase, "done");

    // Drift of a multi-stage addon: what its stage applied comes back within the interval.
    fresh_deployments
        .delete("metrics-server", &Default::default())
        .await
        .expect("metrics-server deleted");
    eventually(
        "the stage's metrics-server restored",
        Duration::from_secs(90),
        &operator,
        || async {
            fresh_deployments
                .get_opt("metrics-server")
                .await
                .ok()
                .flatten()
                .map(drop)
        },
    )
    .await;
}
