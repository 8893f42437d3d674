//! A ClusterStack with `providerRef`: each release clones the provider's
//! `<X>ClusterStackReleaseTemplate.spec.template` into an `<X>ClusterStackRelease` it owns and
//! waits for its `status.ready` before rendering; a deleted release removes the clone.
//! The provider's kinds are small test CRDs (no provider controller runs).

use std::time::Duration;

use crate::operator_common::{NS, eventually};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use serde_json::json;

const GROUP: &str = "infrastructure.clusterstack.test";

fn crd(kind: &str, plural: &str) -> serde_json::Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{GROUP}")},
        "spec": {
            "group": GROUP,
            "names": {"kind": kind, "plural": plural, "singular": kind.to_lowercase(), "listKind": format!("{kind}List")},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    })
}

fn api(env: &crate::operator_common::Env, kind: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(GROUP, "v1", kind));
    Api::namespaced_with(env.client(), NS, &resource)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_release_is_cloned_and_awaited() {
    let test = "provider_release_is_cloned_and_awaited";
    let Some(env) = crate::operator_common::start(test, &["docker-ferrol-1-27-v1"]).await else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let crds = [
        crd(
            "TestClusterStackReleaseTemplate",
            "testclusterstackreleasetemplates",
        ),
        crd("TestClusterStackRelease", "testclusterstackreleases"),
    ];
    let text: Vec<String> = crds
        .iter()
        .map(|c| serde_json::to_string(c).expect("json"))
        .collect();
    std::fs::write(dir.path().join("provider.yaml"), text.join("\n---\n")).expect("write CRDs");
    capstan_testenv::install_crds(&env.client(), dir.path())
        .await
        .expect("provider CRDs install");
    let template: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/v1"), "kind": "TestClusterStackReleaseTemplate",
        "metadata": {"name": "images", "namespace": NS},
        "spec": {"template": {"metadata": {"labels": {"provider": "test"}},
                              "spec": {"nodeImages": ["ubuntu-2204-kube-v1.27"]}}}
    }))
    .expect("template");
    api(&env, "TestClusterStackReleaseTemplate")
        .create(&PostParams::default(), &template)
        .await
        .expect("template created");

    let operator = env.operator(0, &[]);
    let stack: capstan_operator::api::ClusterStack = serde_json::from_value(json!({
        "apiVersion": "clusterstack.x-k8s.io/v1alpha1", "kind": "ClusterStack",
        "metadata": {"name": "ferrol", "namespace": NS},
        "spec": {"provider": "docker", "name": "ferrol", "kubernetesVersion": "1.27",
                 "providerRef": {"apiVersion": format!("{GROUP}/v1"),
                                 "kind": "TestClusterStackReleaseTemplate", "name": "images"},
                 "source": {"github": {"owner": "scs", "repo": "cluster-stacks"}}}
    }))
    .expect("stack");
    env.stacks()
        .create(&PostParams::default(), &stack)
        .await
        .expect("stack created");

    // The clone exists with the template's spec, and the release waits for it.
    let releases = api(&env, "TestClusterStackRelease");
    let clone = eventually(
        "the provider release cloned",
        Duration::from_secs(60),
        &operator,
        || async { releases.get_opt("docker-ferrol-1-27-v1").await.ok().flatten() },
    )
    .await;
    assert_eq!(
        clone.data["spec"],
        json!({"nodeImages": ["ubuntu-2204-kube-v1.27"]})
    );
    assert_eq!(
        clone
            .metadata
            .labels
            .unwrap_or_default()
            .get("provider")
            .map(String::as_str),
        Some("test")
    );
    let message = eventually(
        "the release waiting for the provider",
        Duration::from_secs(30),
        &operator,
        || async {
            let release = env.releases().get("docker-ferrol-1-27-v1").await.ok()?;
            let status = release.status?;
            let condition = status.conditions.iter().find(|c| c.type_ == "ProviderReady")?;
            (condition.status == capstan_operator::api::ConditionStatus::False)
                .then(|| condition.message.clone())
        },
    )
    .await;
    assert_eq!(
        message,
        format!("waiting for TestClusterStackRelease {NS}/docker-ferrol-1-27-v1 to report status.ready")
    );
    assert!(
        env.class_names().await.is_empty(),
        "rendered before the provider was ready"
    );

    // Ready: the release renders and applies.
    releases
        .patch_status(
            "docker-ferrol-1-27-v1",
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": {"ready": true}})),
        )
        .await
        .expect("provider release ready");
    let want = crate::operator_common::names(&["docker-ferrol-1-27-v1"]);
    eventually(
        "the release ready",
        Duration::from_secs(60),
        &operator,
        || async { (env.ready_releases().await == want).then_some(()) },
    )
    .await;
    assert_eq!(env.class_names().await, want);

    // Deleting the stack deletes the release, which removes its clone.
    env.stacks()
        .delete("ferrol", &DeleteParams::default())
        .await
        .expect("stack deleted");
    eventually(
        "the clone removed",
        Duration::from_secs(60),
        &operator,
        || async {
            releases
                .get_opt("docker-ferrol-1-27-v1")
                .await
                .ok()?
                .is_none()
                .then_some(())
        },
    )
    .await;
}
