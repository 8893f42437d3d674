//! A Cluster whose ClusterClass lives in another namespace (`spec.topology.classNamespace`):
//! the ClusterStack and its releases are in `tenant`, the Cluster in `team-a`. The Cluster
//! gets its ClusterAddon and its addons, and the Clusters listed as users of the release
//! include it; deleting the release while the Cluster uses it waits (the finalizer stays).
//!
//! The shared Cluster API CRDs are v1.6.0, whose Cluster has no `classNamespace` (Cluster API
//! added it in v1.8) and so prunes it: the test adds the field to the installed schema first.

use std::time::Duration;

use crate::operator_common::{NS, eventually};
use capstan_operator::api::{ClusterAddon, ClusterStackRelease};
use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::json;

const TEAM: &str = "team-a";
const CLUSTER: &str = "elsewhere";
const CLASS: &str = "docker-ferrol-1-27-v1";
const HOST: &str = "cp.elsewhere.example";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_class_in_another_namespace_brings_its_addons() {
    let test = "a_class_in_another_namespace_brings_its_addons";
    let Some(env) = crate::operator_common::start(test, &[CLASS]).await else {
        return;
    };
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let workload = TestCluster::start(&bins, "workload")
        .await
        .expect("workload cluster starts");
    // The Cluster CRD serves `classNamespace` before the operator watches Clusters: a watch
    // opened under the old schema keeps pruning the field on read until it is reopened, and
    // the operator reads Clusters from its watch (as every informer-fed controller does).
    serve_class_namespace(&env).await;
    let operator = env.operator(0, &[]);
    env.create_stack(&["v1"], "5s").await;
    eventually("v1 ready", Duration::from_secs(90), &operator, || async {
        env.ready_releases()
            .await
            .contains(&CLASS.to_string())
            .then_some(())
    })
    .await;

    env.cluster
        .create_namespace(TEAM)
        .await
        .expect("namespace created");
    let topology = json!({"class": CLASS, "classNamespace": NS, "version": "v1.27.3"});
    env.cluster_api_in(TEAM, CLUSTER, topology, HOST).await;
    env.set_control_plane_ready_in(TEAM, CLUSTER).await;
    env.write_kubeconfig_in(TEAM, CLUSTER, &workload).await;

    // The ClusterAddon is made in the Cluster's namespace and applies the class's addons.
    let addons: Api<ClusterAddon> = Api::namespaced(env.client(), TEAM);
    let name = format!("cluster-addon-{CLUSTER}");
    eventually(
        "the addons of a class in another namespace applied",
        Duration::from_secs(60),
        &operator,
        || async {
            let status = addons.get_opt(&name).await.ok()??.status?;
            (status.ready && status.applied_cluster_stack.as_deref() == Some(CLASS)).then_some(())
        },
    )
    .await;
    let deployments: Api<Deployment> = Api::namespaced(workload.client(), "kube-system");
    let metrics_server = deployments.get("metrics-server").await.expect("metrics-server");
    assert_eq!(
        metrics_server
            .metadata
            .labels
            .unwrap_or_default()
            .get("domain")
            .map(String::as_str),
        Some(HOST),
        "values injected from the Cluster in {TEAM}"
    );

    // The release counts as in use by the Cluster of the other namespace.
    let clusters = capstan_operator::testing::clusters::list(&env.client(), NS)
        .await
        .expect("Clusters listed");
    assert_eq!(
        capstan_operator::testing::clusters::users_of(&clusters, NS, CLASS),
        vec![format!("{TEAM}/{CLUSTER}")]
    );

    // Deleting the release while that Cluster uses it waits: the finalizer stays (kube's
    // finalizer helper drops it after any successful cleanup, so the wait is an error value).
    let releases: Api<ClusterStackRelease> = Api::namespaced(env.client(), NS);
    releases
        .delete(CLASS, &Default::default())
        .await
        .expect("deletion requested");
    tokio::time::sleep(Duration::from_secs(8)).await;
    let kept = releases
        .get_opt(CLASS)
        .await
        .expect("release read")
        .expect("a release in use is not deleted");
    assert!(kept.metadata.deletion_timestamp.is_some());
    assert!(!kept.metadata.finalizers.unwrap_or_default().is_empty());
}

/// Adds `spec.topology.classNamespace` to the installed Cluster CRD's v1beta1 schema (as Cluster
/// API v1.8 has it) and waits until the API server keeps the field.
async fn serve_class_namespace(env: &crate::operator_common::Env) {
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    let crd = crds.get("clusters.cluster.x-k8s.io").await.expect("Cluster CRD");
    let index = crd
        .spec
        .versions
        .iter()
        .position(|v| v.name == "v1beta1")
        .expect("v1beta1 served");
    let mut widened = serde_json::to_value(&crd).expect("CRD as JSON");
    widened
        .pointer_mut(&format!(
            "/spec/versions/{index}/schema/openAPIV3Schema/properties/spec/properties/topology/properties"
        ))
        .and_then(|p| p.as_object_mut())
        .expect("topology properties")
        .insert("classNamespace".into(), json!({"type": "string"}));
    let widened: CustomResourceDefinition = serde_json::from_value(widened).expect("CRD");
    crds.replace("clusters.cluster.x-k8s.io", &PostParams::default(), &widened)
        .await
        .expect("classNamespace added to the Cluster CRD");
    let probe: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
        "metadata": {"name": "probe", "namespace": NS},
        "spec": {"topology": {"class": CLASS, "classNamespace": NS, "version": "v1.27.3"}}}))
    .expect("probe");
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    for _ in 0..100 {
        let created = env.clusters().create(&dry_run, &probe).await.expect("dry run");
        if created.data.pointer("/spec/topology/classNamespace").is_some() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the API server keeps pruning spec.topology.classNamespace");
}
