//! A rollout's `health.checks` on the real API server: the workload cluster of each Cluster
//! is the same API server (its `<cluster>-kubeconfig` Secret names it), and the check reads
//! the ConfigMap `checks/upgraded` there. The Cluster API simulator reports the Cluster
//! upgraded a second after its switch, so only the check can keep it from being healthy.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, PostParams};
use serde_json::json;

use crate::operator_common::{Env, NS, eventually};
use crate::operator_rollout::{ROLLOUT, create_rollout, fleet, rollouts, simulate, wait_phase};
use capstan_operator::api::rollout::{ClusterPhase, ClusterRolloutStatus, RolloutPhase};

const CHECKS_NS: &str = "checks";
const CLUSTER: &str = "checked-1";

/// The rollout of v2 to [`CLUSTER`] whose one check holds when the ConfigMap
/// `checks/upgraded` says `state: done`.
fn checked_spec(timeout: &str) -> serde_json::Value {
    json!({"clusterStack": "ferrol", "version": "v2",
           "waves": [{"name": "all"}],
           "health": {"timeout": timeout, "checks": [{
               "name": "upgrade marker",
               "objects": [{"key": "marker", "apiVersion": "v1", "kind": "ConfigMap",
                            "name": "upgraded", "namespace": CHECKS_NS}],
               "conditions": "marker.data.state == 'done'"}]}})
}

/// The fleet of [`CLUSTER`] with its kubeconfig Secret naming the same API server, and the
/// namespace the check reads.
async fn checked_fleet(test: &str) -> Option<(Env, capstan_testenv::ChildGuard)> {
    let (env, operator) = fleet(test, &[(CLUSTER, "all")]).await?;
    env.write_kubeconfig(CLUSTER, &env.cluster).await;
    let namespace: Namespace =
        serde_json::from_value(json!({"metadata": {"name": CHECKS_NS}})).expect("Namespace");
    Api::<Namespace>::all(env.client())
        .create(&PostParams::default(), &namespace)
        .await
        .expect("namespace of the checked objects");
    Some((env, operator))
}

async fn write_marker(env: &Env, state: &str) {
    let marker: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "upgraded", "namespace": CHECKS_NS},
        "data": {"state": state},
    }))
    .expect("ConfigMap");
    Api::<ConfigMap>::namespaced(env.client(), CHECKS_NS)
        .create(&PostParams::default(), &marker)
        .await
        .expect("marker ConfigMap created");
}

async fn cluster_status(env: &Env) -> Option<ClusterRolloutStatus> {
    let rollout = rollouts(env).get(ROLLOUT).await.ok()?;
    let key = format!("{NS}/{CLUSTER}");
    rollout.status?.clusters.into_iter().find(|c| c.name == key)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_stays_updating_until_its_health_checks_hold() {
    let test = "a_cluster_stays_updating_until_its_health_checks_hold";
    let Some((env, operator)) = checked_fleet(test).await else {
        return;
    };
    let sim = simulate(&env, Duration::from_secs(1), &[]);
    create_rollout(&env, checked_spec("5m")).await;

    // Cluster API and the addons report it upgraded; the check's object does not exist yet.
    eventually(
        "the simulator reports it upgraded",
        Duration::from_secs(60),
        &operator,
        || async { sim.snapshot(|r| r.healthy_at.contains_key(CLUSTER).then_some(())) },
    )
    .await;
    // Longer than the operator's poll of Clusters in flight (10 s): the check was evaluated.
    tokio::time::sleep(Duration::from_secs(12)).await;
    let status = cluster_status(&env).await.expect("the Cluster in the status");
    assert_eq!(status.phase, ClusterPhase::Updating, "{status:?}");
    assert_eq!(
        status.message.as_deref(),
        Some("health checks fail"),
        "{status:?}"
    );
    assert_eq!(
        rollouts(&env)
            .get(ROLLOUT)
            .await
            .expect("rollout")
            .status
            .map(|s| s.phase),
        Some(RolloutPhase::Progressing)
    );

    write_marker(&env, "done").await;
    wait_phase(&env, &operator, RolloutPhase::Complete, Duration::from_secs(60)).await;
    let status = cluster_status(&env).await.expect("the Cluster in the status");
    assert_eq!(status.phase, ClusterPhase::Healthy, "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_health_check_that_never_holds_fails_the_cluster_at_the_timeout() {
    let test = "a_health_check_that_never_holds_fails_the_cluster_at_the_timeout";
    let Some((env, operator)) = checked_fleet(test).await else {
        return;
    };
    // The object exists; the condition is false.
    write_marker(&env, "pending").await;
    let sim = simulate(&env, Duration::from_secs(1), &[]);
    create_rollout(&env, checked_spec("5s")).await;
    wait_phase(&env, &operator, RolloutPhase::Halted, Duration::from_secs(60)).await;

    let status = cluster_status(&env).await.expect("the Cluster in the status");
    assert_eq!(status.phase, ClusterPhase::Failed, "{status:?}");
    assert_eq!(
        status.message.as_deref(),
        Some("not healthy within 5s: health checks fail"),
        "{status:?}"
    );
    // Cluster API and the addons were fine: only the check failed it.
    assert!(sim.snapshot(|r| r.healthy_at.contains_key(CLUSTER)));
}
