//! CEL wait conditions of multi-stage cluster addons against a real kube-apiserver: the
//! post-condition of the shared `docker-ferrol-1-27-v0-sha-hipstsw` release over two real
//! Deployments (missing, equal, scaled apart), cluster-scoped objects, kinds not served, and
//! errors that no retry can fix.

use capstan_operator::testing::addon::condition::{ConditionError, Verdict, evaluate};
use capstan_stack::addon_config::{AddonConfig, ConditionObject, Hook, WaitCondition};
use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

const NS: &str = "kube-system";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_conditions_on_a_real_api_server() {
    let test = "wait_conditions_on_a_real_api_server";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let Some(release) =
        capstan_testenv::shared_path("cluster-stack-releases/docker-ferrol-1-27-v0-sha-hipstsw")
    else {
        capstan_testenv::skip_or_fail(
            test,
            "shared release docker-ferrol-1-27-v0-sha-hipstsw missing (CAPSTAN_SHARED)",
        );
        return;
    };
    let config = AddonConfig::load(&release.join("clusteraddon.yaml")).expect("clusteraddon.yaml loads");
    let condition = config
        .stages(Hook::BeforeClusterUpgrade)
        .iter()
        .find_map(|stage| stage.wait_for_post_condition.clone())
        .expect("the hipstsw release has a post-condition");
    assert_eq!(
        condition.conditions,
        "msdeployment.spec.replicas == ngnix.spec.replicas"
    );

    let cluster = TestCluster::start(&bins, "addon-condition")
        .await
        .expect("cluster starts");
    let client = cluster.client();
    let discovery = capstan_apply::discovery::Discovery::new(client.clone());
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NS);

    // Neither Deployment exists: both named, not an error.
    let Verdict::NotMet(why) = evaluate(&discovery, &condition).await.expect("evaluates") else {
        panic!("met without objects");
    };
    assert!(
        why.contains("Deployment kube-system/metrics-server (msdeployment) not found")
            && why.contains("Deployment kube-system/cluster-addon-ngnix (ngnix) not found"),
        "{why}"
    );

    // One of them: only the other is named.
    create_deployment(&deployments, "metrics-server", 1).await;
    let Verdict::NotMet(why) = evaluate(&discovery, &condition).await.expect("evaluates") else {
        panic!("met with one object missing");
    };
    assert!(
        why.contains("cluster-addon-ngnix (ngnix) not found") && !why.contains("metrics-server"),
        "{why}"
    );

    // Both, same replicas: met.
    create_deployment(&deployments, "cluster-addon-ngnix", 1).await;
    assert_eq!(
        evaluate(&discovery, &condition).await.expect("evaluates"),
        Verdict::Met
    );

    // Scaled apart: not met, saying the expression is false; scaled back: met again.
    scale(&deployments, "cluster-addon-ngnix", 3).await;
    assert_eq!(
        evaluate(&discovery, &condition).await.expect("evaluates"),
        Verdict::NotMet("`msdeployment.spec.replicas == ngnix.spec.replicas` is false".to_string())
    );
    scale(&deployments, "metrics-server", 3).await;
    assert_eq!(
        evaluate(&discovery, &condition).await.expect("evaluates"),
        Verdict::Met
    );

    // A status field no controller has set yet (none runs here): not met, not an error.
    let ready = WaitCondition {
        objects: vec![deployment_object("ngnix", "cluster-addon-ngnix")],
        conditions: "ngnix.status.readyReplicas == ngnix.spec.replicas".to_string(),
    };
    let Verdict::NotMet(why) = evaluate(&discovery, &ready).await.expect("evaluates") else {
        panic!("readyReplicas is not set without a controller");
    };
    assert!(why.contains("not set"), "{why}");

    // Cluster-scoped objects are read without a namespace (one given is ignored).
    let namespace = WaitCondition {
        objects: vec![
            object("ns", "v1", "Namespace", NS, None),
            object("def", "v1", "Namespace", "default", Some(NS)),
        ],
        conditions:
            "ns.status.phase == 'Active' && def.metadata.name == 'default' && size(ns.spec.finalizers) == 1"
                .to_string(),
    };
    assert_eq!(
        evaluate(&discovery, &namespace).await.expect("evaluates"),
        Verdict::Met
    );

    // Kinds not served (yet: a CRD an earlier stage installs) are missing objects.
    let unserved = WaitCondition {
        objects: vec![
            object("w", "example.com/v1", "Widget", "w", Some(NS)),
            object("g", "apps/v1", "Gadget", "g", Some(NS)),
        ],
        conditions: "w.spec.size == g.spec.size".to_string(),
    };
    let Verdict::NotMet(why) = evaluate(&discovery, &unserved).await.expect("evaluates") else {
        panic!("met over kinds that do not exist");
    };
    assert!(
        why.contains("Widget kube-system/w (w): example.com/v1 is not served")
            && why.contains("Gadget kube-system/g (g): kind Gadget of apps/v1 is not served"),
        "{why}"
    );

    // Errors no retry fixes: a namespaced kind without namespace, a broken expression (found
    // before anything is read), a result that is not a bool.
    let no_namespace = WaitCondition {
        objects: vec![object("d", "apps/v1", "Deployment", "metrics-server", None)],
        conditions: "d.spec.replicas == 3".to_string(),
    };
    let err = evaluate(&discovery, &no_namespace)
        .await
        .expect_err("no namespace");
    assert!(matches!(err, ConditionError::NoNamespace { .. }), "{err}");
    let broken = WaitCondition {
        conditions: "msdeployment.spec.replicas = ngnix.spec.replicas".to_string(),
        ..condition.clone()
    };
    let err = evaluate(&discovery, &broken).await.expect_err("syntax");
    assert!(matches!(err, ConditionError::Syntax { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("`msdeployment.spec.replicas = ngnix.spec.replicas`"),
        "{err}"
    );
    let not_bool = WaitCondition {
        conditions: "ngnix.spec.replicas".to_string(),
        ..condition.clone()
    };
    let err = evaluate(&discovery, &not_bool).await.expect_err("an int");
    assert!(err.to_string().contains("gives int 3, not a bool"), "{err}");
}

fn object(key: &str, api_version: &str, kind: &str, name: &str, namespace: Option<&str>) -> ConditionObject {
    ConditionObject {
        key: key.to_string(),
        api_version: api_version.to_string(),
        kind: kind.to_string(),
        name: name.to_string(),
        namespace: namespace.map(str::to_string),
    }
}

fn deployment_object(key: &str, name: &str) -> ConditionObject {
    object(key, "apps/v1", "Deployment", name, Some(NS))
}

/// A minimal valid Deployment (no controller runs, so it never gets pods).
async fn create_deployment(api: &Api<Deployment>, name: &str, replicas: i32) {
    let deployment: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9"}]}
            }
        }
    }))
    .expect("deployment");
    api.create(&PostParams::default(), &deployment)
        .await
        .expect("deployment created");
}

async fn scale(api: &Api<Deployment>, name: &str, replicas: i32) {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": replicas}})),
    )
    .await
    .expect("scaled");
}
