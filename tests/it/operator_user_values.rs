//! User values for the addons through `capstan operator` on real API servers (management +
//! workload): the ClusterStack's `spec.addonValues`, then a ConfigMap the Cluster names, then
//! the Cluster's annotation, layered over the values the release computes. The applied
//! metrics-server Deployment shows each layer; a change re-renders and re-applies at once
//! (within 30 s, half the drift interval); a change that leaves the values
//! alone renders nothing; values that are not a YAML map stop the render and say where they
//! came from.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::operator_common::{Env, eventually};
use capstan_operator::testing::store::{OWNER_LABEL, REVISION_LABEL};
use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

const CLUSTER: &str = "valued";
const HOST: &str = "cp.valued.example";
const CLASS: &str = "docker-ferrol-1-27-v1";

/// What the test reads of the applied metrics-server Deployment: replicas and labels.
async fn metrics_server(workload: &TestCluster) -> Option<(i32, BTreeMap<String, String>)> {
    let deployments: Api<Deployment> = Api::namespaced(workload.client(), "kube-system");
    let d = deployments.get_opt("metrics-server").await.ok()??;
    let replicas = d.spec.as_ref()?.replicas?;
    Some((replicas, d.metadata.labels.unwrap_or_default()))
}

async fn wait_for(
    what: &str,
    operator: &capstan_testenv::ChildGuard,
    workload: &TestCluster,
    want: impl Fn(i32, &BTreeMap<String, String>) -> bool,
) {
    // Well within the drift interval (1m): a re-apply comes from the change, not a drift pass.
    eventually(what, Duration::from_secs(30), operator, || async {
        let (replicas, labels) = metrics_server(workload).await?;
        want(replicas, &labels).then_some(())
    })
    .await;
}

async fn annotate(env: &Env, annotations: serde_json::Value) {
    env.clusters()
        .patch(
            CLUSTER,
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"annotations": annotations}})),
        )
        .await
        .expect("Cluster annotated");
}

async fn set_stack_values(env: &Env, values: &str) {
    env.stacks()
        .patch(
            "ferrol",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"addonValues": values}})),
        )
        .await
        .expect("ClusterStack values set");
}

async fn write_config_map(env: &Env, values: &str, create: bool) {
    let api: Api<ConfigMap> = Api::namespaced(env.client(), &env.ns);
    let map: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "valued-values", "namespace": env.ns,
                     "labels": {"clusterstack.x-k8s.io/addon-values": "true"}},
        "data": {"values.yaml": values},
    }))
    .expect("ConfigMap");
    if create {
        api.create(&PostParams::default(), &map)
            .await
            .expect("ConfigMap created");
    } else {
        api.replace("valued-values", &PostParams::default(), &map)
            .await
            .expect("ConfigMap replaced");
    }
}

/// The newest stored render of the addon (the render store's revision label).
async fn latest_render(env: &Env) -> u64 {
    let uid = env
        .addon(CLUSTER)
        .await
        .and_then(|a| a.metadata.uid)
        .expect("the ClusterAddon's uid");
    let secrets: Api<Secret> = Api::namespaced(env.client(), &env.ns);
    let list = secrets
        .list(&ListParams::default().labels(&format!("{OWNER_LABEL}={uid}")))
        .await
        .expect("render Secrets listed");
    list.items
        .iter()
        .filter_map(|s| s.metadata.labels.as_ref()?.get(REVISION_LABEL)?.parse().ok())
        .max()
        .expect("a stored render")
}

/// The addon's applied revision and its `Rendered` condition (reason, message).
async fn rendered(env: &Env) -> Option<(Option<i64>, String, String)> {
    let status = env.addon(CLUSTER).await?.status?;
    let condition = status.conditions.iter().find(|c| c.type_ == "Rendered")?;
    Some((
        status.applied_revision,
        condition.reason.clone(),
        condition.message.clone(),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_values_per_stack_and_cluster_are_applied_and_follow_changes() {
    let test = "user_values_per_stack_and_cluster_are_applied_and_follow_changes";
    let Some(env) = crate::operator_common::start_shared(test, &[CLASS]).await else {
        return;
    };
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let workload = TestCluster::start(&bins, "workload")
        .await
        .expect("workload cluster starts");
    let operator = env.operator(0, &[]);
    env.create_stack(&["v1"], "5s").await;
    set_stack_values(
        &env,
        "metrics-server:\n  replicas: 2\n  commonLabels:\n    team: stack\n",
    )
    .await;
    eventually("v1 ready", Duration::from_secs(90), &operator, || async {
        (env.ready_releases().await == [CLASS]).then_some(())
    })
    .await;

    // 1. The stack's values over the computed ones (which keep the Cluster's domain label).
    env.cluster_api(CLUSTER, CLASS, HOST, &workload, false).await;
    env.wait_applied(CLUSTER, CLASS, &operator, Duration::from_secs(90))
        .await;
    let (replicas, labels) = metrics_server(&workload).await.expect("metrics-server applied");
    assert_eq!(replicas, 2, "the stack's replicas");
    assert_eq!(labels.get("team").map(String::as_str), Some("stack"));
    assert_eq!(
        labels.get("domain").map(String::as_str),
        Some(HOST),
        "computed values kept"
    );
    let (_, reason, message) = rendered(&env).await.expect("Rendered condition");
    assert_eq!(reason, "Rendered");
    assert!(
        message.contains(&format!(
            "with user values from ClusterStack {}/ferrol spec.addonValues",
            env.ns
        )),
        "{message}"
    );

    // 2. The Cluster's annotation wins over the stack's.
    annotate(
        &env,
        json!({"clusterstack.x-k8s.io/addon-values": "metrics-server:\n  commonLabels:\n    team: cluster\n"}),
    )
    .await;
    wait_for("the Cluster's label", &operator, &workload, |replicas, labels| {
        replicas == 2 && labels.get("team").map(String::as_str) == Some("cluster")
    })
    .await;

    // 3. A referenced ConfigMap sits between the two; a change to it applies at once.
    write_config_map(&env, "metrics-server:\n  replicas: 3\n", true).await;
    annotate(
        &env,
        json!({"clusterstack.x-k8s.io/addon-values-from": "ConfigMap/valued-values"}),
    )
    .await;
    wait_for(
        "the ConfigMap's replicas",
        &operator,
        &workload,
        |replicas, labels| replicas == 3 && labels.get("team").map(String::as_str) == Some("cluster"),
    )
    .await;
    write_config_map(&env, "metrics-server:\n  replicas: 4\n", false).await;
    wait_for(
        "the changed ConfigMap's replicas",
        &operator,
        &workload,
        |replicas, _| replicas == 4,
    )
    .await;

    // 4. A change to the stack's values re-renders too (the annotation still wins on `team`).
    set_stack_values(
        &env,
        "metrics-server:\n  commonLabels:\n    team: stack\n    tier: gold\n",
    )
    .await;
    wait_for(
        "the stack's new label",
        &operator,
        &workload,
        |replicas, labels| {
            replicas == 4
                && labels.get("tier").map(String::as_str) == Some("gold")
                && labels.get("team").map(String::as_str) == Some("cluster")
        },
    )
    .await;

    // 5. A change that leaves every value alone renders nothing: no new stored render.
    let before = latest_render(&env).await;
    annotate(&env, json!({"example.org/unrelated": "x"})).await;
    env.stacks()
        .patch(
            "ferrol",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"interval": "6s"}})),
        )
        .await
        .expect("ClusterStack interval changed");
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        latest_render(&env).await,
        before,
        "no value changed, yet the addons were rendered again\n{}",
        operator.log_tail(20)
    );

    // 6. Values that are not a YAML map (in the ConfigMap; the webhook guards the others) stop
    //    the render, naming where they came from; the applied objects stay.
    write_config_map(&env, "- replicas: 5\n", false).await;
    let (_, _, message) = eventually(
        "the invalid values reported",
        Duration::from_secs(60),
        &operator,
        || async {
            rendered(&env)
                .await
                .filter(|(_, reason, _)| reason == "InvalidUserValues")
        },
    )
    .await;
    assert!(
        message.starts_with(&format!(
            "ConfigMap {}/valued-values key values.yaml: not a YAML map of Helm values: ",
            env.ns
        )),
        "{message}"
    );
    let (replicas, _) = metrics_server(&workload)
        .await
        .expect("metrics-server still there");
    assert_eq!(replicas, 4);

    // 7. Fixed: applied again; the annotation's removal drops its layer.
    write_config_map(&env, "metrics-server:\n  replicas: 1\n", false).await;
    annotate(&env, json!({"clusterstack.x-k8s.io/addon-values": null})).await;
    wait_for("the fixed values", &operator, &workload, |replicas, labels| {
        replicas == 1 && labels.get("team").map(String::as_str) == Some("stack")
    })
    .await;
}
