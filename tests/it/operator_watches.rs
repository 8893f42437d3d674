//! Watches that fit: `capstan operator -n tenant -n team-b` runs as a user whose rights end at
//! those namespaces (a Role in each, no ClusterRole), so a single cluster-wide watch would be
//! refused; it still brings a Cluster's addons (the two namespaces' watches merged). Then, with the addons applied, changes a
//! reconcile does not read — a Cluster's status phase, another Secret of the
//! Cluster (its CA), a label on the kubeconfig Secret — start no reconcile (counted on
//! `/metrics`), while a change of the kubeconfig's data does.

use std::path::PathBuf;
use std::time::Duration;

use crate::operator_common::{NS, eventually};
use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;

const CLUSTER: &str = "web";
const CLASS: &str = "docker-ferrol-1-27-v1";
const HOST: &str = "cp.web.example";
const USER: &str = "system:serviceaccount:tenant:capstan";
/// A second watched namespace: the watches of both are merged.
const OTHER: &str = "team-b";

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The sum of the series of `name` whose labels contain all of `labels`, in the metrics
/// served at `addr`; `None` when they cannot be read.
pub async fn metric_sum(addr: &str, name: &str, labels: &[&str]) -> Option<f64> {
    let text = reqwest::get(format!("http://{addr}/metrics"))
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    Some(
        text.lines()
            .filter(|line| line.starts_with(&format!("{name}{{")))
            .filter(|line| labels.iter().all(|l| line.contains(l)))
            .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
            .sum(),
    )
}

/// ClusterAddon reconciles so far (success and error).
async fn addon_reconciles(addr: &str) -> Option<f64> {
    metric_sum(addr, "capstan_reconciles_total", &["controller=\"clusteraddon\""]).await
}

/// The ClusterAddon reconcile count once it has not moved for 3 s.
pub async fn settle(metrics: &str, operator: &capstan_testenv::ChildGuard) -> f64 {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut previous = addon_reconciles(metrics).await;
    loop {
        tokio::time::sleep(Duration::from_secs(3)).await;
        let now = addon_reconciles(metrics).await;
        if let (Some(now), true) = (now, now == previous) {
            return now;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "reconciles did not settle\n{}",
            operator.log_tail(40)
        );
        previous = now;
    }
}

/// Gives `USER` every right in `namespaces` (made when missing) and nothing elsewhere;
/// returns a kubeconfig acting as it.
pub async fn tenant_user(env: &crate::operator_common::Env, namespaces: &[&str]) -> PathBuf {
    let client = env.client();
    for namespace in namespaces {
        let _ = Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone())
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": namespace}})).expect("namespace"),
            )
            .await;
        let role: k8s_openapi::api::rbac::v1::Role = serde_json::from_value(json!({
            "metadata": {"name": "capstan", "namespace": namespace},
            "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
        }))
        .expect("Role");
        Api::namespaced(client.clone(), namespace)
            .create(&PostParams::default(), &role)
            .await
            .expect("Role created");
        let binding: k8s_openapi::api::rbac::v1::RoleBinding = serde_json::from_value(json!({
            "metadata": {"name": "capstan", "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "capstan"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER}],
        }))
        .expect("RoleBinding");
        Api::namespaced(client.clone(), namespace)
            .create(&PostParams::default(), &binding)
            .await
            .expect("RoleBinding created");
    }
    let mut kubeconfig: serde_json::Value =
        serde_json::from_slice(&std::fs::read(env.cluster.kubeconfig_path()).expect("kubeconfig"))
            .expect("kubeconfig is JSON");
    kubeconfig["users"][0]["user"]["as"] = json!(USER);
    let path = env.logs.path().join("tenant-kubeconfig.json");
    std::fs::write(&path, kubeconfig.to_string()).expect("write kubeconfig");
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaced_watches_wake_reconciles_only_for_what_they_read() {
    let test = "namespaced_watches_wake_reconciles_only_for_what_they_read";
    let Some(env) = crate::operator_common::start(test, &[CLASS]).await else {
        return;
    };
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let workload = TestCluster::start(&bins, "workload")
        .await
        .expect("workload cluster starts");
    let kubeconfig = tenant_user(&env, &[NS, OTHER]).await;
    let metrics = format!("127.0.0.1:{}", free_port());
    let operator = env.operator(
        0,
        &[
            "--kubeconfig",
            &kubeconfig.display().to_string(),
            "-n",
            NS,
            "-n",
            OTHER,
            "--metrics-addr",
            &metrics,
        ],
    );
    env.create_stack(&["v1"], "1h").await;
    eventually("v1 ready", Duration::from_secs(90), &operator, || async {
        env.ready_releases()
            .await
            .contains(&CLASS.to_string())
            .then_some(())
    })
    .await;
    env.cluster_api(CLUSTER, CLASS, HOST, &workload, false).await;
    env.wait_applied(CLUSTER, CLASS, &operator, Duration::from_secs(90))
        .await;

    // Settled: no reconcile for 3 s (the next drift pass is about a minute away).
    let settled = settle(&metrics, &operator).await;

    // What a reconcile does not read.
    let secrets: Api<Secret> = Api::namespaced(env.client(), NS);
    let ca: Secret = serde_json::from_value(json!({
        "metadata": {"name": format!("{CLUSTER}-ca"), "namespace": NS,
                     "labels": {"cluster.x-k8s.io/cluster-name": CLUSTER}},
        "data": {"tls.crt": "Y2E="},
    }))
    .expect("Secret");
    secrets
        .create(&PostParams::default(), &ca)
        .await
        .expect("CA Secret created");
    let merge = |value| Patch::Merge(value);
    secrets
        .patch(
            &format!("{CLUSTER}-ca"),
            &PatchParams::default(),
            &merge(json!({"data": {"tls.crt": "Y2Ey"}})),
        )
        .await
        .expect("CA Secret changed");
    secrets
        .patch(
            &format!("{CLUSTER}-kubeconfig"),
            &PatchParams::default(),
            &merge(json!({"metadata": {"labels": {"rotated": "no"}}})),
        )
        .await
        .expect("kubeconfig Secret relabelled");
    secrets
        .patch(
            &format!("{CLUSTER}-kubeconfig"),
            &PatchParams::default(),
            &merge(json!({"data": {"rotated": "eWVz"}})),
        )
        .await
        .expect("a key of the kubeconfig Secret that is not read added");
    // A Secret named like the kubeconfig in the other namespace: no ClusterAddon there.
    let elsewhere: Secret = serde_json::from_value(json!({
        "metadata": {"name": format!("{CLUSTER}-kubeconfig"), "namespace": OTHER,
                     "labels": {"cluster.x-k8s.io/cluster-name": CLUSTER}},
        "data": {"value": "eA=="},
    }))
    .expect("Secret");
    Api::<Secret>::namespaced(env.client(), OTHER)
        .create(&PostParams::default(), &elsewhere)
        .await
        .expect("Secret in the other namespace created");
    let clusters: Api<DynamicObject> = env.clusters();
    clusters
        .patch_status(
            CLUSTER,
            &PatchParams::default(),
            &merge(json!({"status": {"phase": "Provisioned"}})),
        )
        .await
        .expect("Cluster phase set");
    tokio::time::sleep(Duration::from_secs(4)).await;
    let after_noise = addon_reconciles(&metrics).await.expect("metrics");
    assert_eq!(
        after_noise,
        settled,
        "changes a reconcile does not read started reconciles\n{}",
        operator.log_tail(40)
    );

    // What it reads: a new kubeconfig (the same one with a comment: it still connects). Other
    // keys of the Secret are not read, and do not wake it.
    let name = format!("{CLUSTER}-kubeconfig");
    let current = secrets.get(&name).await.expect("kubeconfig Secret");
    let mut value = current
        .data
        .unwrap_or_default()
        .remove("value")
        .expect("kubeconfig in `value`")
        .0;
    value.extend_from_slice(b"\n# rotated\n");
    secrets
        .patch(
            &name,
            &PatchParams::default(),
            &merge(json!({"data": {"value": k8s_openapi::ByteString(value)}})),
        )
        .await
        .expect("kubeconfig Secret data changed");
    eventually(
        "a reconcile after the kubeconfig changed",
        Duration::from_secs(15),
        &operator,
        || async { (addon_reconciles(&metrics).await? > settled).then_some(()) },
    )
    .await;
}
