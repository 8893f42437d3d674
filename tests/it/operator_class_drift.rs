//! Drift of the ClusterClass objects seen at once (issue 26 §1): with the drift interval at
//! 1 h, a template of the class deleted in the management cluster, and one edited by another
//! field manager, are repaired within 5 s; an edit by capstan's own field manager is not
//! drift and stays until the next pass. Once as a cluster-wide operator, once as one whose
//! rights end at its namespace (`-n`, a Role only), whose watches list only that namespace.

use std::time::{Duration, Instant};

use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::json;

use crate::operator_common::{Env, NS, eventually};

const CLASS: &str = "docker-ferrol-1-27-v1";
const REPAIR: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn class_drift_is_repaired_within_seconds() {
    let test = "class_drift_is_repaired_within_seconds";
    let Some(env) = crate::operator_common::start(test, &[CLASS]).await else {
        return;
    };
    let operator = env.operator(0, &["--drift-interval", "1h"]);
    repaired_within_seconds(&env, &operator).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn class_drift_is_repaired_by_a_namespaced_operator() {
    let test = "class_drift_is_repaired_by_a_namespaced_operator";
    let Some(env) = crate::operator_common::start(test, &[CLASS]).await else {
        return;
    };
    let kubeconfig = crate::operator_watches::tenant_user(&env, &[NS]).await;
    let kubeconfig = kubeconfig.display().to_string();
    let operator = env.operator(
        0,
        &["--kubeconfig", &kubeconfig, "-n", NS, "--drift-interval", "1h"],
    );
    repaired_within_seconds(&env, &operator).await;
}

fn templates(env: &Env, group: &str, kind: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, "v1beta1", kind));
    Api::namespaced_with(env.client(), NS, &resource)
}

/// The name of the one object of `api` (the release's template of that kind).
async fn only_name(api: &Api<DynamicObject>) -> String {
    let list = api.list(&Default::default()).await.expect("list templates");
    assert_eq!(list.items.len(), 1, "one template of the kind");
    list.items[0].metadata.name.clone().expect("name")
}

/// The worker bootstrap template's `fail-swap-on` kubelet argument.
async fn fail_swap_on(api: &Api<DynamicObject>, name: &str) -> Option<String> {
    let object = api.get(name).await.ok()?;
    let args =
        &object.data["spec"]["template"]["spec"]["joinConfiguration"]["nodeRegistration"]["kubeletExtraArgs"];
    args["fail-swap-on"].as_str().map(str::to_string)
}

/// Merge-patches the `fail-swap-on` argument to `value` as field manager `manager`.
async fn set_fail_swap_on(api: &Api<DynamicObject>, name: &str, manager: &str, value: &str) {
    let params = PatchParams {
        field_manager: Some(manager.into()),
        ..PatchParams::default()
    };
    let patch = json!({"spec": {"template": {"spec": {"joinConfiguration": {"nodeRegistration":
        {"kubeletExtraArgs": {"fail-swap-on": value}}}}}}});
    api.patch(name, &params, &Patch::Merge(&patch))
        .await
        .expect("template edited");
}

async fn repaired_within_seconds(env: &Env, operator: &capstan_testenv::ChildGuard) {
    env.create_stack(&["v1"], "1h").await;
    eventually("v1 ready", Duration::from_secs(120), operator, || async {
        env.ready_releases()
            .await
            .contains(&CLASS.to_string())
            .then_some(())
    })
    .await;
    // The watches start right after the apply; give their initial listing a moment.
    tokio::time::sleep(Duration::from_secs(2)).await;

    // Deleted.
    let clusters = templates(env, "infrastructure.cluster.x-k8s.io", "DockerClusterTemplate");
    let cluster_template = only_name(&clusters).await;
    clusters
        .delete(&cluster_template, &DeleteParams::default())
        .await
        .expect("DockerClusterTemplate deleted");
    let deleted_at = Instant::now();
    eventually("DockerClusterTemplate restored", REPAIR, operator, || async {
        clusters.get_opt(&cluster_template).await.ok().flatten().map(drop)
    })
    .await;
    eprintln!("deleted template restored after {:?}", deleted_at.elapsed());

    // Edited by someone else.
    let bootstrap = templates(env, "bootstrap.cluster.x-k8s.io", "KubeadmConfigTemplate");
    let worker = only_name(&bootstrap).await;
    let applied = fail_swap_on(&bootstrap, &worker)
        .await
        .expect("the chart sets fail-swap-on");
    set_fail_swap_on(&bootstrap, &worker, "someone-else", "edited").await;
    let edited_at = Instant::now();
    eventually("KubeadmConfigTemplate repaired", REPAIR, operator, || async {
        (fail_swap_on(&bootstrap, &worker).await? == applied).then_some(())
    })
    .await;
    eprintln!("edited template repaired after {:?}", edited_at.elapsed());

    // Edited by capstan's own field manager: not drift, left to the pass an hour away.
    set_fail_swap_on(&bootstrap, &worker, "capstan", "by-capstan").await;
    tokio::time::sleep(REPAIR).await;
    assert_eq!(
        fail_swap_on(&bootstrap, &worker).await.as_deref(),
        Some("by-capstan"),
        "an edit by capstan's own field manager was taken for drift\n{}",
        operator.log_tail(40)
    );
}
