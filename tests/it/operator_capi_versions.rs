//! The operator on Cluster API's two worlds (issue 47): v1.6.0's CRDs (v1beta1 only) and
//! v1.14.0-rc.1's CRDs with only v1beta2 served (what v1.16 will be), on the real API server.
//!
//! - A Cluster gets its ClusterAddon through the gates of its version (v1beta2:
//!   `status.initialization.controlPlaneInitialized`), owned by the Cluster in the version the
//!   operator chose, its addons applied with values from the Cluster; on v1beta2 no v1beta1
//!   request reaches the API server (its audit log; discovery aside).
//! - The rollout's switch patch moves `class` (v1beta1) or `classRef` (v1beta2) and the
//!   version under capstan's field manager, and nothing else (managed fields).
//! - Without Cluster API the operator says so: a `ClusterAPINotServed` Warning on the
//!   rollout, and a few log lines instead of a loop.

use std::time::Duration;

use capstan_apply::FIELD_MANAGER;
use capstan_operator::api::ClusterAddon;
use capstan_stack::capi::CapiVersion;
use capstan_testenv::audit::{AuditLog, is_overhead};
use capstan_testenv::{Binaries, TestCluster};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::operator_common::{Env, eventually};

const CLUSTER: &str = "workload";
const HOST: &str = "cp.workload.example";
const V1: &str = "docker-ferrol-1-27-v1";

async fn addon(env: &Env) -> Option<ClusterAddon> {
    let api: Api<ClusterAddon> = Api::namespaced(env.client(), &env.ns);
    api.get_opt(&format!("cluster-addon-{CLUSTER}"))
        .await
        .ok()
        .flatten()
}

/// The ClusterAddon's `ClusterReady` condition: reason and message.
async fn gate(env: &Env) -> Option<(String, String)> {
    addon(env)
        .await?
        .status?
        .conditions
        .iter()
        .find(|c| c.type_ == "ClusterReady")
        .map(|c| (c.reason.clone(), c.message.clone()))
}

/// A Cluster on `capi`'s CRDs gets its addons; returns the env for more checks.
async fn addons_arrive(
    test: &str,
    capi: CapiVersion,
    audit: Option<&AuditLog>,
) -> Option<(Env, TestCluster)> {
    let env = match audit {
        Some(audit) => crate::operator_common::start_v1beta2(test, &[V1], &audit.apiserver_args()).await?,
        None => crate::operator_common::start_for(test, &[V1], capi).await?,
    };
    assert_eq!(env.capi, capi);
    let bins = Binaries::find_or_skip(test)?;
    let workload = TestCluster::start(&bins, "workload")
        .await
        .expect("workload cluster starts");
    let operator = env.operator(0, &[]);
    env.create_stack(&["v1"], "5s").await;
    env.cluster_api(CLUSTER, V1, HOST, &workload, true).await;

    let initialized = match capi {
        CapiVersion::V1Beta1 => "status.controlPlaneReady",
        CapiVersion::V1Beta2 => "status.initialization.controlPlaneInitialized",
    };
    let (_, message) = eventually(
        "the control-plane gate reported",
        Duration::from_secs(60),
        &operator,
        || async {
            gate(&env)
                .await
                .filter(|(reason, _)| reason == "ControlPlaneNotReady")
        },
    )
    .await;
    assert_eq!(
        message,
        format!("waiting for Cluster {CLUSTER}: {initialized} is not true")
    );
    env.open_gates(CLUSTER, &workload).await;
    env.wait_applied(CLUSTER, V1, &operator, Duration::from_secs(90))
        .await;

    let addon = addon(&env).await.expect("ClusterAddon");
    let owner = addon
        .metadata
        .owner_references
        .as_ref()
        .and_then(|owners| owners.first())
        .expect("owner reference");
    assert_eq!(owner.api_version, capi.api_version());
    assert_eq!(owner.kind, "Cluster");
    assert_eq!(addon.spec.cluster_ref.api_version, Some(capi.api_version()));
    // The values come from the Cluster (its control plane endpoint), whichever version.
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(workload.client(), "kube-system");
    let listed = deployments.list(&Default::default()).await.expect("deployments");
    assert!(!listed.items.is_empty(), "addons applied to the workload cluster");
    drop(operator);
    Some((env, workload))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1beta1_cluster_gets_its_addons() {
    addons_arrive("a_v1beta1_cluster_gets_its_addons", CapiVersion::V1Beta1, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1beta2_cluster_gets_its_addons_without_a_v1beta1_request() {
    let test = "a_v1beta2_cluster_gets_its_addons_without_a_v1beta1_request";
    let audit = AuditLog::new().expect("audit log");
    let Some(_env) = addons_arrive(test, CapiVersion::V1Beta2, Some(&audit)).await else {
        return;
    };
    // Discovery (`/apis/cluster.x-k8s.io/v1beta1`, which a v1beta1 manifest's apply asks)
    // aside, nothing asks for v1beta1.
    let deprecated: Vec<String> = audit
        .requests()
        .into_iter()
        .filter(|r| r.contains("/apis/cluster.x-k8s.io/v1beta1/") && !is_overhead(r))
        .collect();
    assert_eq!(deprecated, Vec::<String>::new());
    let spoken: Vec<String> = audit
        .requests()
        .into_iter()
        .filter(|r| r.contains("/apis/cluster.x-k8s.io/v1beta2/") && r.contains("clusters"))
        .collect();
    assert!(!spoken.is_empty(), "the Clusters were read at v1beta2");
}

/// The switch patch on the real API server: `class` or `classRef.name` and the version
/// change, under capstan's field manager, and nothing else.
async fn the_switch_moves_only_the_class_and_version(test: &str, capi: CapiVersion) {
    let Some(env) = crate::operator_common::start_for(test, &[], capi).await else {
        return;
    };
    let clusters = env.clusters();
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": capi.api_version(), "kind": "Cluster",
        "metadata": {"name": "switched", "namespace": env.ns, "labels": {"ring": "canary"}},
        "spec": {"controlPlaneEndpoint": {"host": HOST, "port": 6443},
                 "topology": env.topology(V1, None)},
    }))
    .expect("Cluster");
    let made = clusters
        .create(
            &PostParams {
                field_manager: Some("someone".into()),
                ..PostParams::default()
            },
            &object,
        )
        .await
        .expect("Cluster created");
    let patch = capstan_operator::testing::controller::rollout::act::switch_patch(
        capi,
        made.metadata
            .resource_version
            .as_deref()
            .expect("resourceVersion"),
        "docker-ferrol-1-27-v2",
        None,
        Some("v1.27.4"),
    );
    let switched = clusters
        .patch(
            "switched",
            &PatchParams {
                field_manager: Some(FIELD_MANAGER.into()),
                ..PatchParams::default()
            },
            &Patch::Merge(&patch),
        )
        .await
        .expect("switched");
    let fields =
        capstan_stack::capi::ClusterFields::from_object(&serde_json::to_value(&switched).expect("JSON"))
            .expect("fields");
    assert_eq!(
        fields.class.map(|c| c.name).as_deref(),
        Some("docker-ferrol-1-27-v2")
    );
    assert_eq!(fields.kubernetes_version.as_deref(), Some("v1.27.4"));
    // Everything else as it was.
    let mut before = made.data["spec"].clone();
    let mut after = switched.data["spec"].clone();
    for spec in [&mut before, &mut after] {
        let topology = spec["topology"].as_object_mut().expect("topology");
        topology.remove("version");
        topology.remove(if capi == CapiVersion::V1Beta1 {
            "class"
        } else {
            "classRef"
        });
    }
    assert_eq!(before, after);
    assert_eq!(made.metadata.labels, switched.metadata.labels);
    // capstan's manager owns the class and the version, and nothing else.
    let ours: Vec<serde_json::Value> = switched
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter(|m| m.manager.as_deref() == Some(FIELD_MANAGER))
        .map(|m| m.fields_v1.as_ref().map(|f| f.0.clone()).unwrap_or_default())
        .collect();
    let class = match capi {
        CapiVersion::V1Beta1 => json!({"f:class": {}}),
        CapiVersion::V1Beta2 => json!({"f:classRef": {"f:name": {}}}),
    };
    let mut topology = class.as_object().expect("object").clone();
    topology.insert("f:version".into(), json!({}));
    assert_eq!(ours, vec![json!({"f:spec": {"f:topology": topology}})]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_switch_moves_only_class_and_version_on_v1beta1() {
    the_switch_moves_only_the_class_and_version(
        "the_switch_moves_only_class_and_version_on_v1beta1",
        CapiVersion::V1Beta1,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_switch_moves_only_class_ref_and_version_on_v1beta2() {
    the_switch_moves_only_the_class_and_version(
        "the_switch_moves_only_class_ref_and_version_on_v1beta2",
        CapiVersion::V1Beta2,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_cluster_api_the_rollout_says_so_and_the_log_does_not_loop() {
    let test = "without_cluster_api_the_rollout_says_so_and_the_log_does_not_loop";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let Some(releases) = capstan_testenv::shared_path("cluster-stack-releases") else {
        capstan_testenv::skip_or_fail(test, "shared cluster-stack releases missing (CAPSTAN_SHARED)");
        return;
    };
    // No Cluster API CRDs: capstan's own only.
    let cluster = TestCluster::start(&bins, test).await.expect("cluster starts");
    let client = cluster.client();
    let ours = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        ours.path().join("capstan.yaml"),
        capstan_operator::api::crds_yaml().expect("CRD YAML"),
    )
    .expect("write CRDs");
    capstan_testenv::install_crds(&client, ours.path())
        .await
        .expect("capstan CRDs install");
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "tenant"}})).expect("namespace"),
        )
        .await
        .expect("namespace");
    let logs = tempfile::tempdir().expect("temp dir");
    let cache = tempfile::tempdir().expect("temp dir");
    let args: Vec<String> = [
        "operator",
        "--kubeconfig",
        &cluster.kubeconfig_path().display().to_string(),
        "--cache-dir",
        &cache.path().display().to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let operator = capstan_testenv::ChildGuard::spawn_with_env(
        "capstan operator",
        &crate::operator_common::capstan_binary(),
        &args,
        &[],
        &logs.path().join("operator.log"),
    )
    .expect("operator starts");
    drop(releases);
    let rollouts: Api<capstan_operator::api::rollout::ClusterStackRollout> =
        Api::namespaced(client.clone(), "tenant");
    rollouts
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "capstan.dev/v1alpha1", "kind": "ClusterStackRollout",
                "metadata": {"name": "r", "namespace": "tenant"},
                "spec": {"clusterStack": "ferrol", "version": "latest",
                         "waves": [{"name": "all", "maxInFlight": 1}]},
            }))
            .expect("rollout"),
        )
        .await
        .expect("rollout created");
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client.clone(), "tenant");
    let message = eventually(
        "a Warning on the rollout that Cluster API is not served",
        Duration::from_secs(60),
        &operator,
        || async {
            events
                .list(&Default::default())
                .await
                .ok()?
                .items
                .into_iter()
                .find(|e| {
                    e.involved_object.name.as_deref() == Some("r")
                        && e.type_.as_deref() == Some("Warning")
                        && e.message
                            .as_deref()
                            .is_some_and(|m| m.contains("Cluster API cannot be used"))
                })
                .and_then(|e| e.message)
        },
    )
    .await;
    assert!(message.contains("cluster.x-k8s.io is not served"), "{message}");
    // And a condition on the rollout.
    let progressing = eventually(
        "the rollout's Progressing condition False for it",
        Duration::from_secs(30),
        &operator,
        || async {
            let status = rollouts.get("r").await.ok()?.status?;
            capstan_operator::api::conditions::find(&status.conditions, "Progressing")
                .filter(|c| !c.is_true() && c.reason == "ClusterAPINotServed")
                .cloned()
        },
    )
    .await;
    assert!(
        progressing.message.contains("cluster.x-k8s.io is not served"),
        "{progressing:?}"
    );
    // Twenty seconds more: no loop in the log.
    tokio::time::sleep(Duration::from_secs(20)).await;
    let log = std::fs::read_to_string(logs.path().join("operator.log")).unwrap_or_default();
    let capi_lines = log
        .lines()
        .filter(|l| l.contains("cluster.x-k8s.io") || l.contains("Cluster API") || l.contains("Clusters"))
        .count();
    assert!(capi_lines <= 10, "{capi_lines} lines about Cluster API:\n{log}");
}

/// Cluster API upgraded under a running operator (v1.6's CRDs replaced by v1.14's serving only
/// v1beta2): its v1beta1 watch is answered 404, it discovers v1beta2 and watches that — the
/// same process makes the ClusterAddon of a v1beta2 Cluster created afterwards, owned by the
/// Cluster as v1beta2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_follows_cluster_api_from_v1beta1_to_v1beta2_without_a_restart() {
    let test = "the_operator_follows_cluster_api_from_v1beta1_to_v1beta2_without_a_restart";
    let Some(mut env) = crate::operator_common::start_own(test, &[V1], CapiVersion::V1Beta1).await else {
        return;
    };
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let workload = TestCluster::start(&bins, "workload")
        .await
        .expect("workload cluster starts");
    let mut operator = env.operator(0, &[]);
    env.create_stack(&["v1"], "5s").await;
    let log = operator.log_path().to_path_buf();
    let said = |text: &'static str| {
        let log = log.clone();
        move || {
            let log = log.clone();
            async move {
                std::fs::read_to_string(&log)
                    .unwrap_or_default()
                    .contains(text)
                    .then_some(())
            }
        }
    };
    eventually(
        "the operator speaking v1beta1",
        Duration::from_secs(30),
        &operator,
        said("speaking Cluster API cluster.x-k8s.io/v1beta1"),
    )
    .await;

    let crds = capstan_testenv::shared_path("capi-crds/v1.14.0-rc.1").expect("v1.14 CRDs");
    capstan_testenv::install_crds_with(&env.client(), &crds, &capstan_testenv::CrdOptions::v1beta2_only())
        .await
        .expect("Cluster API upgraded");
    env.capi = CapiVersion::V1Beta2;
    eventually(
        "the operator switching to v1beta2",
        Duration::from_secs(60),
        &operator,
        said("speaking cluster.x-k8s.io/v1beta2 from now on"),
    )
    .await;
    env.cluster_api(CLUSTER, V1, HOST, &workload, false).await;
    env.wait_applied(CLUSTER, V1, &operator, Duration::from_secs(90))
        .await;
    let addon = addon(&env).await.expect("ClusterAddon");
    let owner = addon
        .metadata
        .owner_references
        .as_ref()
        .and_then(|owners| owners.first())
        .expect("owner reference");
    assert_eq!(owner.api_version, "cluster.x-k8s.io/v1beta2");
    assert_eq!(operator.exited(), None, "the same operator process");
}
