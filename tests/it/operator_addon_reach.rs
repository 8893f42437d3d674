//! A ClusterAddon's watch over its workload cluster after the operator or the workload API
//! server goes away (issue 45 §18, §19), with the drift interval at 1 h so only the fix can
//! pass:
//!
//! - the operator killed, an addon object deleted meanwhile, the operator started again: the
//!   object is back within seconds (the started operator compares every applied inventory
//!   no watch serves, and watches it from then on: an edit right after is repaired too);
//! - the workload API server stopped: within seconds the ClusterAddon says which workload is
//!   unreachable (`WorkloadReachable` false, a Warning Event), the passes count as failed in
//!   `capstan_reconcile_errors_total{error="workload"}`, and `Ready` stays true (the addons
//!   are applied); started again, the condition turns true.

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::json;

use crate::operator_common::{events_about, eventually};
use capstan_testenv::Binaries;

const CLASS: &str = "docker-ferrol-1-27-v1";
/// Well within the drift interval (1 h), and well beyond a pass.
const REPAIR: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_made_while_the_operator_was_down_is_repaired_within_seconds_of_its_start() {
    let test = "drift_made_while_the_operator_was_down_is_repaired_within_seconds_of_its_start";
    let Some(env) = crate::operator_common::start_shared(test, &[CLASS]).await else {
        return;
    };
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let args = ["--drift-interval", "1h"];
    let (workload, mut operator) = env.applied_cluster(&bins, "restarted", CLASS, &args).await;
    operator.kill();

    let deployments: Api<Deployment> = Api::namespaced(workload.client(), "kube-system");
    deployments
        .delete("metrics-server", &DeleteParams::default())
        .await
        .expect("metrics-server deleted");
    let operator = env.operator(1, &args);
    let started = Instant::now();
    eventually(
        "metrics-server back after the restart",
        REPAIR,
        &operator,
        || async { deployments.get_opt("metrics-server").await.ok()?.map(drop) },
    )
    .await;
    eprintln!(
        "deleted while down, repaired {:?} after the start",
        started.elapsed()
    );

    // Watched from then on.
    let applied = deployments
        .get("metrics-server")
        .await
        .expect("metrics-server")
        .spec
        .and_then(|s| s.replicas)
        .expect("the chart sets spec.replicas");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let params = PatchParams {
        field_manager: Some("someone-else".into()),
        ..PatchParams::default()
    };
    deployments
        .patch(
            "metrics-server",
            &params,
            &Patch::Merge(&json!({"spec": {"replicas": applied + 3}})),
        )
        .await
        .expect("metrics-server edited");
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
    drop(operator);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_workload_is_reported_within_seconds() {
    let test = "an_unreachable_workload_is_reported_within_seconds";
    let Some(env) = crate::operator_common::start_shared(test, &[CLASS]).await else {
        return;
    };
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let metrics_addr = format!("127.0.0.1:{}", capstan_testenv::registry::free_port());
    let args = ["--drift-interval", "1h", "--metrics-addr", &metrics_addr];
    let (mut workload, operator) = env.applied_cluster(&bins, "faraway", CLASS, &args).await;
    // The watches start right after the apply.
    tokio::time::sleep(Duration::from_secs(2)).await;

    workload.kill_apiserver();
    let stopped = Instant::now();
    let server = workload.server_url().trim_end_matches('/').to_string();
    let reachable = |want: &'static str| {
        let env = &env;
        move || async move {
            let status = env.addon("faraway").await?.status?;
            let condition = status
                .conditions
                .iter()
                .find(|c| c.type_ == "WorkloadReachable")?;
            (condition.status.to_string() == want).then(|| (status.ready, condition.message.clone()))
        }
    };
    let (ready, message) = eventually(
        "WorkloadReachable false",
        Duration::from_secs(15),
        &operator,
        reachable("False"),
    )
    .await;
    eprintln!("reported {:?} after the stop: {message}", stopped.elapsed());
    assert!(
        message.contains(&server) && message.contains("faraway"),
        "{message}"
    );
    assert!(ready, "Ready says the addons are applied");
    let events = events_about(env.client(), &env.ns, "ClusterAddon", "cluster-addon-faraway").await;
    assert!(
        events.iter().any(|e| e.type_.as_deref() == Some("Warning")
            && e.note.as_deref().is_some_and(|n| n.contains(&server))),
        "no Warning Event naming {server}: {events:#?}"
    );
    let errors = eventually(
        "the failed pass counted",
        Duration::from_secs(10),
        &operator,
        || async {
            let scrape = reqwest::get(format!("http://{metrics_addr}/metrics"))
                .await
                .ok()?
                .text()
                .await
                .ok()?;
            let line = scrape.lines().find(|l| {
                l.starts_with(r#"capstan_reconcile_errors_total{controller="clusteraddon",error="workload"}"#)
            })?;
            let count: f64 = line.rsplit(' ').next()?.parse().ok()?;
            (count >= 1.0).then_some(count)
        },
    )
    .await;
    eprintln!("{errors} failed passes counted");

    workload
        .start_apiserver()
        .await
        .expect("workload API server starts again");
    eventually(
        "WorkloadReachable true",
        Duration::from_secs(60),
        &operator,
        reachable("True"),
    )
    .await;
    drop(operator);
}
