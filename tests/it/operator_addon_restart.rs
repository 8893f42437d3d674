//! Restart safety of the ClusterAddon controller: `capstan operator` is killed (SIGKILL) at
//! random points while a Cluster upgrades from docker-ferrol-1-27-v1 (one chart) to the
//! multi-stage docker-ferrol-1-27-v0-sha-hipstsw (a `BeforeClusterUpgrade` stage with a CEL
//! post-condition). After each kill the recorded state only moves forward: a stage's phase
//! never goes back (a stage recorded done is never run again), the applied release never
//! returns to an older one. After the last restart it converges to the state of an
//! uninterrupted run.
//!
//! `CAPSTAN_OPERATOR_KILLS=N` (default 5, what CI runs; `scripts/fault-operator.sh` runs 20)
//! and `CAPSTAN_OPERATOR_SEED=S` as in `operator_restart`.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::operator_common::{eventually, names};
use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::Api;

const STAGED: &str = "docker-ferrol-1-27-v0-sha.hipstsw";
const PHASES: [&str; 5] = [
    "Pending",
    "waitingForPreCondition",
    "applyingOrDeleting",
    "waitingForPostCondition",
    "done",
];

fn rank(phase: &str) -> usize {
    PHASES.iter().position(|p| *p == phase).unwrap_or(0)
}

/// What was last seen: the applied release and each stage's phase per `stagesFor`.
#[derive(Default)]
struct Seen {
    applied: Option<String>,
    phases: BTreeMap<(String, String), usize>,
}

async fn observe(env: &crate::operator_common::Env, seen: &mut Seen, when: &str) {
    let Some(status) = env.addon("upgrading").await.and_then(|a| a.status) else {
        return;
    };
    if let Some(applied) = &status.applied_cluster_stack {
        if seen.applied.as_deref() == Some(STAGED) {
            assert_eq!(applied, STAGED, "{when}: the applied release went back");
        }
        seen.applied = Some(applied.clone());
    }
    let Some(stages_for) = status.stages_for.as_ref().map(ToString::to_string) else {
        return;
    };
    for stage in &status.stages {
        let key = (stages_for.clone(), stage.name.clone());
        let now = rank(&stage.phase.to_string());
        let before = seen.phases.get(&key).copied().unwrap_or(0);
        assert!(
            now >= before,
            "{when}: stage {} of {stages_for} went back from {} to {}",
            stage.name,
            PHASES[before],
            stage.phase
        );
        seen.phases.insert(key, now);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_an_upgrade_never_repeats_a_finished_stage() {
    let test = "sigkill_during_an_upgrade_never_repeats_a_finished_stage";
    let (kills, mut rng) = crate::operator_common::kill_plan(test);
    let published = ["docker-ferrol-1-27-v1", "docker-ferrol-1-27-v0-sha-hipstsw"];
    let Some(env) = crate::operator_common::start_shared(test, &published).await else {
        return;
    };
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let workload = TestCluster::start(&bins, "upgrading")
        .await
        .expect("workload cluster starts");
    env.create_stack_named("ferrol", "stable", &[], "5s").await;
    env.create_stack_named("ferrol-custom", "custom", &[], "5s").await;

    // Settled on v1 first.
    let operator = env.operator(0, &[]);
    let want = names(&["docker-ferrol-1-27-v0-sha-hipstsw", "docker-ferrol-1-27-v1"]);
    eventually(
        "both releases ready",
        Duration::from_secs(90),
        &operator,
        || async { (env.ready_releases().await == want).then_some(()) },
    )
    .await;
    env.cluster_api(
        "upgrading",
        "docker-ferrol-1-27-v1",
        "upgrading.example",
        &workload,
        false,
    )
    .await;
    env.wait_applied(
        "upgrading",
        "docker-ferrol-1-27-v1",
        &operator,
        Duration::from_secs(60),
    )
    .await;
    drop(operator);

    // The upgrade, with kills at random points.
    env.set_class("upgrading", STAGED).await;
    let mut seen = Seen::default();
    for kill in 0..kills {
        let mut operator = env.operator(kill + 1, &[]);
        let wait = 200 + rng.below(2000);
        tokio::time::sleep(Duration::from_millis(wait)).await;
        if let Some(exit) = operator.exited() {
            panic!("the operator died by itself: {exit}\n{}", operator.log_tail(40));
        }
        operator.kill();
        observe(&env, &mut seen, &format!("after kill {kill} at {wait} ms")).await;
    }

    // Converged like an uninterrupted run.
    let operator = env.operator(kills + 1, &[]);
    env.wait_applied("upgrading", STAGED, &operator, Duration::from_secs(90))
        .await;
    observe(&env, &mut seen, "after convergence").await;
    let status = env
        .addon("upgrading")
        .await
        .and_then(|a| a.status)
        .expect("status");
    assert_eq!(
        status.stages_for.as_ref().map(ToString::to_string).as_deref(),
        Some("BeforeClusterUpgrade docker-ferrol-1-27-v0-sha.hipstsw")
    );
    let stages: Vec<(&str, String)> = status
        .stages
        .iter()
        .map(|s| (s.name.as_str(), s.phase.to_string()))
        .collect();
    assert_eq!(stages, vec![("ngnix", "done".to_string())]);
    let deployments: Api<Deployment> = Api::namespaced(workload.client(), "kube-system");
    deployments
        .get("cluster-addon-ngnix")
        .await
        .expect("the stage's Deployment");
    deployments
        .get("metrics-server")
        .await
        .expect("metrics-server still there");
}
