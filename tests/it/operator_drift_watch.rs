//! Drift seen at once through watches (issue 26 §1): with the drift interval at 1 h, an addon
//! object deleted on the workload cluster, and one edited by another field manager, are
//! repaired within 5 s — the interval pass could not have done it; the same for the objects
//! of a multi-stage addon's stages. Two inventories of one cluster share one watch per kind
//! (issue 36 §3), each told of its own objects' drift; so do two ClusterStackReleases of one
//! namespace, and a deleted release's inventory is forgotten (issue 34).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::json;

use crate::operator_common::eventually;
use capstan_testenv::{Binaries, TestCluster};

const CLUSTER: &str = "watched";
const CLASS: &str = "docker-ferrol-1-27-v1";
const REPAIR: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_is_repaired_within_seconds() {
    let test = "drift_is_repaired_within_seconds";
    let Some(env) = crate::operator_common::start_shared(test, &[CLASS]).await else {
        return;
    };
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let (workload, operator) = env
        .applied_cluster(&bins, CLUSTER, CLASS, &["--drift-interval", "1h"])
        .await;
    // The watches start right after the apply; give their initial listing a moment.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let deployments: Api<Deployment> = Api::namespaced(workload.client(), "kube-system");

    // Deleted.
    delete_and_await_repair(&deployments, &operator).await;

    // Edited by someone else: the replica count capstan applied comes back.
    let applied = deployments
        .get("metrics-server")
        .await
        .expect("metrics-server")
        .spec
        .and_then(|s| s.replicas)
        .expect("the chart sets spec.replicas");
    let params = PatchParams {
        field_manager: Some("someone-else".into()),
        ..PatchParams::default()
    };
    deployments
        .patch(
            "metrics-server",
            &params,
            &Patch::Merge(&json!({"spec": {"replicas": applied + 4}})),
        )
        .await
        .expect("metrics-server edited");
    let edited_at = Instant::now();
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
    eprintln!("edited object repaired after {:?}", edited_at.elapsed());
    drop(operator);
}

/// A multi-stage addon: the objects its `apply` stages put on the workload cluster are watched
/// once the stages are done — a deleted one is back within seconds, not at the next drift pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_of_a_staged_addon_is_repaired_within_seconds() {
    let test = "drift_of_a_staged_addon_is_repaired_within_seconds";
    const STAGED: &str = "docker-ferrol-1-27-v0-sha.hipstsw";
    let Some(env) = crate::operator_common::start_shared(test, &["docker-ferrol-1-27-v0-sha-hipstsw"]).await
    else {
        return;
    };
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let workload = TestCluster::start(&bins, "staged-workload")
        .await
        .expect("workload cluster starts");
    let operator = env.operator(0, &["--drift-interval", "1h"]);
    env.create_stack_named("ferrol-custom", "custom", &[], "1m").await;
    env.cluster_api("staged", STAGED, "cp.staged.example", &workload, false)
        .await;
    env.wait_applied("staged", STAGED, &operator, Duration::from_secs(180))
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let deployments: Api<Deployment> = Api::namespaced(workload.client(), "kube-system");
    delete_and_await_repair(&deployments, &operator).await;
    drop(operator);
}

/// Issue 36 §3: two inventories in one cluster (a staged addon's stages, say) with objects of
/// the same two kinds open one WATCH per kind on the API server, not one per inventory and
/// kind (its `apiserver_longrunning_gauge`, less the server's own watches), and each
/// inventory is told of its own objects' drift only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_inventories_share_one_watch_per_kind_and_each_sees_its_drift() {
    let test = "two_inventories_share_one_watch_per_kind_and_each_sees_its_drift";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let cluster = TestCluster::start(&bins, "shared-watches")
        .await
        .expect("cluster starts");
    let client = cluster.client();
    let inventories = [
        "kube-system/capstan.caddon.a.cni",
        "kube-system/capstan.caddon.a.info",
    ];
    let (configmaps, secrets) = apply_labelled(&client, &inventories).await;
    let own = open_watches(&cluster).await;

    let kinds = config_maps_and_secrets();
    let discovery = capstan_apply::discovery::Discovery::new(client.clone());
    let watches = capstan_operator::testing::drift::DriftWatches::default();
    let told: Vec<Arc<AtomicUsize>> = inventories.iter().map(|_| Arc::default()).collect();
    // One owner's inventories join together (as a ClusterAddon's after a pass); each is told
    // of its own objects (the dispatch is by label, not by notifier).
    let notify = |i: usize| -> capstan_operator::testing::drift::Notify {
        let count = told[i].clone();
        Arc::new(move || {
            count.fetch_add(1, Ordering::SeqCst);
        })
    };
    watches
        .ensure(&discovery, inventories[0], &kinds, notify(0))
        .await;
    watches
        .ensure_all(&discovery, &[(inventories[1], &kinds)], notify(1))
        .await;
    // The second joined alone: the watches started again naming both, and the first, served
    // before, may have missed a change in the gap — until its next full pass.
    assert!(!watches.covers(inventories[0], &kinds), "troubled by the restart");
    watches.checked(inventories[0]);
    assert_eq!(watches.len(), kinds.len(), "one watch per kind");
    one_watch_per_kind(&cluster, &own, &watches, &inventories, &kinds).await;

    // Drift of the first inventory's ConfigMap tells the first only; the second's deleted
    // Secret the second only.
    let told_now = || told.iter().map(|c| c.load(Ordering::SeqCst)).collect::<Vec<_>>();
    assert_eq!(told_now(), [0, 0], "the listing is not drift");

    // An inventory the watches do not serve (another Cluster's on the same API server): its
    // objects' changes are not even sent to them — the watches select the inventories they
    // serve, not every object with an inventory label.
    let stranger = capstan_apply::ssa::inventory_id("kube-system/capstan.caddon.b");
    let capstan = PatchParams::apply(capstan_apply::FIELD_MANAGER).force();
    let sent_before = watch_events(&cluster, "ConfigMap").await;
    for round in 0..3 {
        let configmap = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "stranger", "labels": {capstan_apply::ssa::INVENTORY_ID_LABEL: stranger}},
            "data": {"round": round.to_string()}});
        configmaps
            .patch("stranger", &capstan, &Patch::Apply(&configmap))
            .await
            .expect("the other inventory's ConfigMap applied");
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        watch_events(&cluster, "ConfigMap").await - sent_before,
        0.0,
        "events of another inventory's objects sent to the watches"
    );
    let someone = PatchParams {
        field_manager: Some("someone-else".into()),
        ..PatchParams::default()
    };
    configmaps
        .patch("object-0", &someone, &Patch::Merge(&json!({"data": {"a": "2"}})))
        .await
        .expect("ConfigMap edited");
    let deadline = Instant::now() + Duration::from_secs(10);
    while told_now() == [0, 0] && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(told_now(), [1, 0], "the edit of the first inventory's ConfigMap");
    secrets
        .delete("object-1", &DeleteParams::default())
        .await
        .expect("Secret deleted");
    let deadline = Instant::now() + Duration::from_secs(10);
    while told_now() == [1, 0] && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        told_now(),
        [1, 1],
        "the deletion of the second inventory's Secret"
    );

    // The second inventory leaves the Secrets: the watch stays for the first.
    watches
        .ensure(&discovery, inventories[1], &kinds[..1], counting(&told[1]))
        .await;
    assert_eq!(watches.len(), 2);
    assert!(watches.covers(inventories[0], &kinds));
    assert!(!watches.covers(inventories[1], &kinds));
    assert!(watches.covers(inventories[1], &kinds[..1]));
}

/// Issue 36 §1: a drift watch starts from where the apply left the objects, not from a
/// listing: a change another field manager makes between the apply and the watch's start (the
/// gap a listing would hide: it would show the changed object as it is, not as a change)
/// wakes the owner, and the watch lists nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_between_the_apply_and_the_watch_wakes_the_owner() {
    let test = "a_change_between_the_apply_and_the_watch_wakes_the_owner";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let audit = capstan_testenv::audit::AuditLog::new().expect("audit log");
    let cluster = TestCluster::start_with_args(&bins, "gap-watches", &audit.apiserver_args())
        .await
        .expect("cluster starts");
    let client = cluster.client();
    let inventory = capstan_apply::InventoryRef {
        namespace: "default".into(),
        name: "capstan.caddon.gap".into(),
    };
    let objects = capstan_apply::parse_stream(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gap-0}\ndata: {a: '1'}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gap-1}\ndata: {a: '1'}\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata: {name: gap-0}\nstringData: {a: '1'}\n",
        "gap",
    )
    .expect("objects parse");
    let applier = capstan_apply::Applier::new(client.clone(), "gap");
    let opts = capstan_apply::ApplyOptions {
        namespace: "default".into(),
        inventory: Some(inventory.clone()),
        prune: true,
        ..capstan_apply::ApplyOptions::default()
    };
    let report = applier.apply(&objects, &opts).await.expect("applied");
    assert!(!report.failed(), "{report:?}");
    let written = capstan_operator::testing::drift::written(&report.results);
    assert_eq!(written.len(), 2, "both kinds' histories known: {written:?}");

    // The gap: another writer changes a ConfigMap after the apply, before the watch starts.
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let someone = PatchParams {
        field_manager: Some("someone-else".into()),
        ..PatchParams::default()
    };
    configmaps
        .patch("gap-1", &someone, &Patch::Merge(&json!({"data": {"a": "2"}})))
        .await
        .expect("ConfigMap edited");

    let requests_before = audit.requests().len();
    let discovery = capstan_apply::discovery::Discovery::new(client.clone());
    let watches = capstan_operator::testing::drift::DriftWatches::default();
    let told: Arc<AtomicUsize> = Arc::default();
    let id = inventory.id();
    watches.wrote(&id, written);
    watches
        .ensure(&discovery, &id, &config_maps_and_secrets(), counting(&told))
        .await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while told.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        told.load(Ordering::SeqCst),
        1,
        "the change in the gap woke the owner"
    );
    let lists: Vec<String> = audit
        .requests()
        .split_off(requests_before)
        .into_iter()
        .filter(|r| r.starts_with("list "))
        .collect();
    assert!(lists.is_empty(), "the watches listed: {lists:?}");
    assert!(
        watches.covers(&id, &config_maps_and_secrets()),
        "watching from the apply covers the inventory"
    );
}

/// The watch events of `kind` the API server of `cluster` has sent, over every watcher.
async fn watch_events(cluster: &TestCluster, kind: &str) -> f64 {
    crate::operator_common::apiserver_metric(cluster, "apiserver_watch_events_total", kind).await
}

/// Issue 34: the ClusterStackReleases of one namespace share its drift watches — one WATCH
/// per kind for two releases — and a deleted release's inventory is forgotten: an edit of its
/// object wakes nothing, while the other release is still told of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_releases_of_a_namespace_share_one_watch_per_kind() {
    use capstan_operator::api::ClusterStackRelease;
    use capstan_operator::testing::controller::cluster_stack_release::watches::ReleaseWatches;
    use kube::runtime::reflector::ObjectRef;
    let test = "the_releases_of_a_namespace_share_one_watch_per_kind";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let cluster = TestCluster::start(&bins, "release-watches")
        .await
        .expect("cluster starts");
    let client = cluster.client();
    let releases = ["docker-ferrol-1-27-v1", "docker-ferrol-1-27-v2"]
        .map(|name| ObjectRef::<ClusterStackRelease>::new(name).within("default"));
    let inventories = releases
        .clone()
        .map(|release| format!("default/capstan.cskr.{}", release.name));
    let names = inventories.each_ref().map(String::as_str);
    let (configmaps, _) = apply_labelled(&client, &names).await;
    let own = open_watches(&cluster).await;

    let kinds = config_maps_and_secrets();
    let discovery = capstan_apply::discovery::Discovery::new(client.clone());
    let watches = ReleaseWatches::default();
    let told: Vec<Arc<AtomicUsize>> = releases.iter().map(|_| Arc::default()).collect();
    for ((release, inventory), count) in releases.iter().zip(&inventories).zip(&told) {
        let scope = watches.of(release, Some("default"), vec![inventory.clone()]);
        scope.ensure(&discovery, inventory, &kinds, counting(count)).await;
        scope.checked(inventory);
    }
    // The second release's joining restarted the watches naming both: the first counts as
    // troubled until its next full pass (here, at once).
    let first = watches.of(&releases[0], Some("default"), vec![inventories[0].clone()]);
    assert!(!first.covers(&inventories[0], &kinds), "troubled by the restart");
    first.checked(&inventories[0]);
    assert_eq!(watches.watch_count(), kinds.len(), "one watch per kind");
    let scope = watches.of(&releases[1], Some("default"), vec![inventories[1].clone()]);
    one_watch_per_kind(&cluster, &own, &scope, &names, &kinds).await;

    // The first release is deleted: its inventory is forgotten, the watches stay for the other.
    watches.stop(&releases[0]);
    assert_eq!(watches.watch_count(), kinds.len());
    assert!(!scope.covers(&inventories[0], &kinds));
    let someone = PatchParams {
        field_manager: Some("someone-else".into()),
        ..PatchParams::default()
    };
    for object in ["object-0", "object-1"] {
        configmaps
            .patch(object, &someone, &Patch::Merge(&json!({"data": {"a": "2"}})))
            .await
            .expect("ConfigMap edited");
    }
    let told_now = || told.iter().map(|c| c.load(Ordering::SeqCst)).collect::<Vec<_>>();
    let deadline = Instant::now() + Duration::from_secs(10);
    // One watch delivers both edits in order: once the second is told, the first was judged.
    while told_now()[1] == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(told_now(), [0, 1], "only the release still watched is told");
    watches.stop(&releases[1]);
    assert_eq!(watches.watch_count(), 0, "no release left: the watches stop");
}

/// `ConfigMap` and `Secret`, as drift watches name kinds.
fn config_maps_and_secrets() -> Vec<capstan_operator::testing::drift::Kind> {
    ["ConfigMap", "Secret"]
        .iter()
        .map(|k| (String::new(), "v1".to_string(), k.to_string()))
        .collect()
}

/// A notifier counting into `count`.
fn counting(count: &Arc<AtomicUsize>) -> capstan_operator::testing::drift::Notify {
    let count = count.clone();
    Arc::new(move || {
        count.fetch_add(1, Ordering::SeqCst);
    })
}

/// One ConfigMap and one Secret per inventory (`object-<i>` in `default`), labelled with its
/// inventory id and written by capstan's field manager.
async fn apply_labelled(client: &kube::Client, inventories: &[&str]) -> (Api<ConfigMap>, Api<Secret>) {
    let capstan = PatchParams::apply(capstan_apply::FIELD_MANAGER).force();
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    for (i, inventory) in inventories.iter().enumerate() {
        let label = capstan_apply::ssa::inventory_id(inventory);
        let metadata = json!({"name": format!("object-{i}"),
            "labels": {capstan_apply::ssa::INVENTORY_ID_LABEL: label}});
        let configmap = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata.clone(),
            "data": {"a": "1"}});
        configmaps
            .patch(&format!("object-{i}"), &capstan, &Patch::Apply(&configmap))
            .await
            .expect("ConfigMap applied");
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": metadata,
            "stringData": {"a": "1"}});
        secrets
            .patch(&format!("object-{i}"), &capstan, &Patch::Apply(&secret))
            .await
            .expect("Secret applied");
    }
    (configmaps, secrets)
}

/// Waits (20 s at most) until `watches` cover every inventory's `kinds` (ConfigMaps and
/// Secrets), then checks that they opened one WATCH per kind on `cluster` since `own` was
/// counted, not one per inventory and kind.
async fn one_watch_per_kind(
    cluster: &TestCluster,
    own: &BTreeMap<String, f64>,
    watches: &capstan_operator::testing::drift::DriftWatches,
    inventories: &[&str],
    kinds: &[capstan_operator::testing::drift::Kind],
) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !inventories
        .iter()
        .all(|inventory| watches.covers(inventory, kinds))
    {
        assert!(Instant::now() < deadline, "the watches did not list within 20 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let opened: BTreeMap<String, f64> = open_watches(cluster)
        .await
        .into_iter()
        .map(|(resource, n)| {
            let before = own.get(&resource).copied().unwrap_or(0.0);
            (resource, n - before)
        })
        .filter(|(_, n)| *n != 0.0)
        .collect();
    eprintln!("watches opened by resource: {opened:?}");
    let one_each = BTreeMap::from([("configmaps".to_string(), 1.0), ("secrets".to_string(), 1.0)]);
    assert_eq!(opened, one_each, "one watch per kind for {inventories:?}");
}

/// The WATCH requests open on the API server of `cluster`, by resource
/// (`apiserver_longrunning_gauge` of Kubernetes 1.20).
async fn open_watches(cluster: &TestCluster) -> BTreeMap<String, f64> {
    let request = http::Request::get("/metrics").body(Vec::new()).expect("request");
    let text = tokio::time::timeout(Duration::from_secs(30), cluster.client().request_text(request))
        .await
        .expect("/metrics answers within 30 s")
        .expect("/metrics");
    let mut open = BTreeMap::new();
    for line in text.lines() {
        let Some((labels, value)) = line
            .strip_prefix("apiserver_longrunning_gauge{")
            .and_then(|rest| rest.rsplit_once("} "))
        else {
            continue;
        };
        let label = |key: &str| {
            labels
                .split(',')
                .find_map(|pair| pair.strip_prefix(&format!("{key}=\"")))
                .map(|v| v.trim_end_matches('"').to_string())
                .unwrap_or_default()
        };
        if label("verb") == "WATCH" {
            *open.entry(label("resource")).or_insert(0.0) += value.trim().parse::<f64>().unwrap_or(0.0);
        }
    }
    open
}

/// Deletes the metrics-server Deployment and waits, at most [`REPAIR`], until it is back.
async fn delete_and_await_repair(deployments: &Api<Deployment>, operator: &capstan_testenv::ChildGuard) {
    deployments
        .delete("metrics-server", &DeleteParams::default())
        .await
        .expect("metrics-server deleted");
    let deleted_at = Instant::now();
    eventually("metrics-server restored", REPAIR, operator, || async {
        deployments
            .get_opt("metrics-server")
            .await
            .ok()
            .flatten()
            .map(drop)
    })
    .await;
    eprintln!("deleted object restored after {:?}", deleted_at.elapsed());
}
