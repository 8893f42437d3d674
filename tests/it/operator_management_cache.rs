//! Issue 36 §2, counted on the wire: the management API server writes an audit log, and once
//! a ClusterAddon's addons are applied its passes — woken without a change, or the drift
//! pass — read the Cluster, its ControlPlane and InfraCluster, the kubeconfig Secret and the
//! ClusterStackRelease from the operator's reflector stores: no GET. And the stores are not
//! stale: a ControlPlane that goes, comes back, and a kubeconfig that changes are what the
//! next pass sees.
//!
//! The figures are printed (`--no-capture`) for docs/benchmarks.md.

use std::time::Duration;

use base64::Engine;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::operator_common::{Env, apiserver_metric, eventually};
use crate::operator_workload_cache::woken_pass;
use capstan_operator::api::ClusterAddon;
use capstan_testenv::audit::{AuditLog, is_overhead};
use capstan_testenv::{Binaries, ChildGuard, TestCluster};

const CLUSTER: &str = "mgmt";
const CLASS: &str = "docker-ferrol-1-27-v1";
const WOKEN_PASSES: u64 = 3;

/// An operator that applied the addons of [`CLUSTER`], on a management API server that
/// writes `audit` (when given).
struct Applied {
    env: Env,
    operator: ChildGuard,
    metrics_port: u16,
    _workload: TestCluster,
}

async fn applied(test: &str, audit: Option<&AuditLog>) -> Option<Applied> {
    let published = ["docker-ferrol-1-27-v1"];
    let apiserver_args = audit.map(AuditLog::apiserver_args).unwrap_or_default();
    let env = crate::operator_common::start_with_apiserver_args(test, &published, &apiserver_args).await?;
    let bins = Binaries::find_or_skip(test)?;
    let workload = TestCluster::start(&bins, "mgmt-workload")
        .await
        .expect("workload cluster starts");
    env.cluster_api(CLUSTER, CLASS, "cp.mgmt.example", &workload, false)
        .await;
    let metrics_port = capstan_testenv::registry::free_port();
    let metrics_addr = format!("127.0.0.1:{metrics_port}");
    let operator = env.operator(0, &["--metrics-addr", &metrics_addr]);
    env.create_stack(&["v1"], "1m").await;
    env.wait_applied(CLUSTER, CLASS, &operator, Duration::from_secs(180))
        .await;
    Some(Applied {
        env,
        operator,
        metrics_port,
        _workload: workload,
    })
}

/// The GETs among `requests` but the test's own (it reads the ClusterAddon's status),
/// health, version and discovery requests, and the ClusterStackRelease controller's read of
/// its inventory ConfigMap (`capstan.cskr.*`: the release's own drift pass, due on the same
/// interval, is a full pass of another controller and may fall into the window).
fn gets(requests: &[String]) -> Vec<&String> {
    requests
        .iter()
        .filter(|r| {
            r.starts_with("get ")
                && !is_overhead(r)
                && !r.contains("/clusteraddons/")
                && !r.contains("/configmaps/capstan.cskr.")
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_addon_pass_sends_no_get_to_the_management_cluster() {
    let test = "an_idle_addon_pass_sends_no_get_to_the_management_cluster";
    let audit = AuditLog::new().expect("audit log");
    let Some(applied) = applied(test, Some(&audit)).await else {
        return;
    };
    let Applied {
        env,
        operator,
        metrics_port,
        ..
    } = &applied;
    // The watches of the referenced kinds and releases start with the first pass.
    tokio::time::sleep(Duration::from_secs(3)).await;
    // Every controller runs (the rollout controller too), and each of the fleet's kinds is
    // watched once for all of them: one store of each (three watches of Clusters and three
    // of ClusterAddons before, each but one with a copy of every object).
    for kind in ["Cluster", "ClusterAddon"] {
        assert_eq!(
            apiserver_metric(&env.cluster, "apiserver_registered_watchers", kind).await,
            1.0,
            "watches of {kind}"
        );
    }
    let checks_before = crate::operator_workload_cache::addon_drift_checks(*metrics_port)
        .await
        .expect("metrics answer");

    let before = audit.requests().len();
    for pass in 0..WOKEN_PASSES {
        woken_pass(env, CLUSTER, pass, operator, *metrics_port).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let woken = audit.requests().split_off(before);
    eprintln!(
        "{WOKEN_PASSES} woken passes: {} management requests: {woken:#?}",
        woken.len()
    );

    let before = audit.requests().len();
    eventually("a drift pass", Duration::from_secs(120), operator, || async {
        let checks = crate::operator_workload_cache::addon_drift_checks(*metrics_port).await?;
        (checks > checks_before).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let drift = audit.requests().split_off(before);
    eprintln!("drift pass: {} management requests: {drift:#?}", drift.len());

    assert!(gets(&woken).is_empty(), "woken passes sent GETs: {woken:#?}");
    assert!(gets(&drift).is_empty(), "the drift pass sent GETs: {drift:#?}");
    // A check the watches vouched for writes no status and reads no stored render: the idle
    // fleet costs the management API server nothing per pass.
    let writes_or_lists: Vec<&String> = drift
        .iter()
        .filter(|r| {
            (r.starts_with("patch ") && r.contains("/clusteraddons/"))
                || (r.starts_with("list ") && r.contains("/secrets"))
        })
        .collect();
    assert!(
        writes_or_lists.is_empty(),
        "the watched drift check wrote status or listed stored renders: {writes_or_lists:#?}"
    );
}

/// The reason of condition `type_` of the ClusterAddon, and its message.
fn condition(addon: &ClusterAddon, type_: &str) -> Option<(String, String)> {
    let status = addon.status.as_ref()?;
    let found = status.conditions.iter().find(|c| c.type_ == type_)?;
    Some((found.reason.clone(), found.message.clone()))
}

async fn wait_reason(env: &Env, operator: &ChildGuard, type_: &str, reason: &str) -> String {
    let what = format!("{type_} {reason}");
    let (_, message) = eventually(&what, Duration::from_secs(60), operator, || async {
        let found = condition(&env.addon(CLUSTER).await?, type_)?;
        (found.0 == reason).then_some(found)
    })
    .await;
    message
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_pass_sees_a_changed_control_plane_and_kubeconfig() {
    let test = "the_next_pass_sees_a_changed_control_plane_and_kubeconfig";
    let Some(applied) = applied(test, None).await else {
        return;
    };
    let Applied {
        env,
        operator,
        metrics_port,
        ..
    } = &applied;
    let control_planes = env.dynamic_in(
        &env.ns,
        "controlplane.cluster.x-k8s.io",
        "v1beta1",
        "KubeadmControlPlane",
    );

    // The ControlPlane goes: the next pass (woken by the Cluster) waits for it.
    let kept: DynamicObject = control_planes.get(CLUSTER).await.expect("ControlPlane");
    control_planes
        .delete(CLUSTER, &DeleteParams::default())
        .await
        .expect("ControlPlane deleted");
    woken_pass(env, CLUSTER, 1, operator, *metrics_port).await;
    let message = wait_reason(env, operator, "Rendered", "ObjectsMissing").await;
    assert!(message.contains("KubeadmControlPlane"), "{message}");

    // It comes back: its watch wakes the addon, which renders again.
    let mut again = kept.clone();
    again.metadata.resource_version = None;
    again.metadata.uid = None;
    again.metadata.creation_timestamp = None;
    again.metadata.managed_fields = None;
    control_planes
        .create(&PostParams::default(), &again)
        .await
        .expect("ControlPlane created again");
    wait_reason(env, operator, "Rendered", "Rendered").await;

    // The kubeconfig changes to one that cannot be used: the next pass says so.
    let secrets: Api<Secret> = Api::namespaced(env.client(), &env.ns);
    let name = format!("{CLUSTER}-kubeconfig");
    let good = secrets.get(&name).await.expect("kubeconfig Secret");
    let bad = base64::engine::general_purpose::STANDARD.encode("not a kubeconfig");
    secrets
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"data": {"value": bad}})),
        )
        .await
        .expect("kubeconfig replaced");
    let message = wait_reason(env, operator, "ClusterReady", "WorkloadNotReady").await;
    assert!(message.contains("is unusable"), "{message}");

    // And back: ready again.
    let value = good.data.as_ref().and_then(|d| d.get("value")).expect("value");
    let good_value = base64::engine::general_purpose::STANDARD.encode(&value.0);
    secrets
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"data": {"value": good_value}})),
        )
        .await
        .expect("kubeconfig restored");
    wait_reason(env, operator, "ClusterReady", "Ready").await;
}
