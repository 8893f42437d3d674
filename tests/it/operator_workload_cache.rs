//! The workload-cluster cache, counted on the wire: the workload API server writes an audit
//! log (every request it answers) and the operator reaches it through a TCP proxy that
//! counts connections (each one a TLS handshake). Once the addons are applied, passes that
//! find nothing changed (woken by edits of the Cluster) send nothing to the workload cluster
//! and open no connection; a drift pass re-applies over the kept client (its one HTTP/2
//! connection) without `/readyz`, `/version` or discovery.
//!
//! The figures are printed (`--no-capture`) for docs/benchmarks.md.

use std::time::Duration;

use base64::Engine;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::operator_common::eventually;
use capstan_testenv::audit::{AuditLog, is_overhead};
use capstan_testenv::proxy::TcpProxy;
use capstan_testenv::{Binaries, TestCluster};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const CLUSTER: &str = "cached";
const CLASS: &str = "docker-ferrol-1-27-v1";
/// The next release's class.
const NEXT_CLASS: &str = "docker-ferrol-1-27-v2";
/// Passes woken without any change.
const WOKEN_PASSES: u64 = 5;

/// The operator's `capstan_reconciles_total` of the ClusterAddon controller.
async fn addon_reconciles(metrics_port: u16) -> Option<u64> {
    addon_counter(metrics_port, "capstan_reconciles_total").await
}

/// The operator's `capstan_drift_checks_total` of the ClusterAddon controller (by the watches
/// or by comparison): a check the watches vouch for writes nothing to the status.
pub(crate) async fn addon_drift_checks(metrics_port: u16) -> Option<u64> {
    addon_counter(metrics_port, "capstan_drift_checks_total").await
}

/// The sum of counter `name` over the ClusterAddon controller's series.
async fn addon_counter(metrics_port: u16, name: &str) -> Option<u64> {
    let prefix = format!("{name}{{");
    let mut stream = TcpStream::connect(("127.0.0.1", metrics_port)).await.ok()?;
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .await
        .ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).await.ok()?;
    Some(
        text.lines()
            .filter(|l| l.starts_with(&prefix) && l.contains("controller=\"clusteraddon\""))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>() as u64,
    )
}

/// Wakes the ClusterAddon of `cluster` by an annotation on the Cluster (which changes none of
/// its inputs) and waits for the pass, counted through `capstan_reconciles_total`.
pub(crate) async fn woken_pass(
    env: &crate::operator_common::Env,
    cluster: &str,
    pass: u64,
    operator: &capstan_testenv::ChildGuard,
    metrics_port: u16,
) {
    let seen = addon_reconciles(metrics_port).await.expect("metrics answer");
    env.clusters()
        .patch(
            cluster,
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"annotations": {"capstan.test/pass": pass.to_string()}}})),
        )
        .await
        .expect("Cluster annotated");
    eventually("the woken pass", Duration::from_secs(30), operator, || async {
        (addon_reconciles(metrics_port).await? > seen).then_some(())
    })
    .await;
}

/// A workload cluster that writes an audit log, reached through a counting proxy, with the
/// addons of [`CLUSTER`] applied by an operator.
struct Counted {
    env: crate::operator_common::Env,
    audit: AuditLog,
    proxy: TcpProxy,
    operator: capstan_testenv::ChildGuard,
    metrics_port: u16,
    _workload: TestCluster,
}

/// [`Counted`] with the operator's `extra` flags, the stack's releases `versions` (the
/// Cluster on v1); `None` when the test skips.
async fn counted(test: &str, extra: &[&str], versions: &[&str]) -> Option<Counted> {
    let published: Vec<String> = versions
        .iter()
        .map(|v| format!("docker-ferrol-1-27-{v}"))
        .collect();
    let published: Vec<&str> = published.iter().map(String::as_str).collect();
    let env = crate::operator_common::start_shared(test, &published).await?;
    let bins = Binaries::find_or_skip(test)?;
    let audit = AuditLog::new().expect("audit log");
    let workload = TestCluster::start_with_args(&bins, "cached-workload", &audit.apiserver_args())
        .await
        .expect("workload cluster starts");
    let upstream = workload.server_url().trim_start_matches("https://").to_string();
    let proxy = TcpProxy::start(&upstream).await;
    let proxy_port = proxy.port();

    // The kubeconfig Secret names the proxy (the serving certificate is for 127.0.0.1).
    let mut kubeconfig: serde_json::Value =
        serde_json::from_slice(&std::fs::read(workload.kubeconfig_path()).expect("kubeconfig"))
            .expect("JSON");
    kubeconfig["clusters"][0]["cluster"]["server"] = json!(format!("https://127.0.0.1:{proxy_port}"));
    env.cluster_api(CLUSTER, CLASS, "cp.cached.example", &workload, true)
        .await;
    env.set_control_plane_ready(CLUSTER).await;
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": format!("{CLUSTER}-kubeconfig"), "namespace": env.ns,
                     "labels": {"cluster.x-k8s.io/cluster-name": CLUSTER}},
        "data": {"value": base64::engine::general_purpose::STANDARD
            .encode(serde_json::to_vec(&kubeconfig).expect("JSON"))},
    }))
    .expect("Secret");
    Api::<Secret>::namespaced(env.client(), &env.ns)
        .create(&PostParams::default(), &secret)
        .await
        .expect("kubeconfig Secret created");

    let metrics_port = capstan_testenv::registry::free_port();
    let metrics_addr = format!("127.0.0.1:{metrics_port}");
    let mut args = vec!["--metrics-addr", metrics_addr.as_str()];
    args.extend_from_slice(extra);
    let operator = env.operator(0, &args);
    env.create_stack(versions, "1m").await;
    env.wait_applied(CLUSTER, CLASS, &operator, Duration::from_secs(180))
        .await;
    Some(Counted {
        env,
        audit,
        proxy,
        operator,
        metrics_port,
        _workload: workload,
    })
}

/// The requests the workload API server answered since the `before`th, the drift watches'
/// own included (issue 36 §1: they start from the apply's resourceVersions and list
/// nothing; a watch shows only when it ends).
fn passes_requests(counted: &Counted, before: usize) -> Vec<String> {
    counted.audit.requests().split_off(before)
}

/// The `lastReconciled` of the ClusterAddon.
async fn last_reconciled(
    env: &crate::operator_common::Env,
) -> Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time> {
    env.addon(CLUSTER).await?.status?.last_reconciled
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steady_pass_reuses_the_workload_connection() {
    let test = "a_steady_pass_reuses_the_workload_connection";
    // Without drift watches: they share the client's one HTTP/2 connection (one connection
    // over the whole run with them too, docs/benchmarks.md), but their lists, and a watch the
    // server ends (audited then) and that is opened again, would blur the count of the
    // requests a pass sends; they are tested in operator_drift_watch and below.
    let Some(counted) = counted(test, &["--drift-watches", "false"], &["v1"]).await else {
        return;
    };
    let Counted {
        env,
        audit,
        proxy,
        operator,
        metrics_port,
        ..
    } = &counted;
    let (env, operator, metrics_port) = (env, operator, *metrics_port);
    let applied_at = last_reconciled(env).await.expect("lastReconciled set");
    tokio::time::sleep(Duration::from_secs(2)).await;

    // Passes that find nothing changed: an annotation on the Cluster wakes each.
    let (connections_before, requests_before) = (proxy.connections(), audit.requests().len());
    for pass in 0..WOKEN_PASSES {
        woken_pass(env, CLUSTER, pass, operator, metrics_port).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let woken_requests: Vec<String> = audit.requests().split_off(requests_before);
    let woken_connections = proxy.connections() - connections_before;
    eprintln!(
        "{WOKEN_PASSES} woken passes: {woken_connections} new connections, {} requests: {woken_requests:?}",
        woken_requests.len()
    );

    // One drift pass (interval 1m) re-applies.
    let (connections_before, requests_before) = (proxy.connections(), audit.requests().len());
    eventually("a drift pass", Duration::from_secs(120), operator, || async {
        let last = last_reconciled(env).await?;
        (last != applied_at).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let drift_requests: Vec<String> = audit.requests().split_off(requests_before);
    let drift_connections = proxy.connections() - connections_before;
    eprintln!(
        "drift pass: {drift_connections} new connections, {} requests: {drift_requests:?}",
        drift_requests.len()
    );

    assert_eq!(woken_connections, 0, "woken passes opened connections");
    assert!(
        woken_requests.is_empty(),
        "woken passes sent requests: {woken_requests:?}"
    );
    // HTTP/2: the first apply, the passes and the drift pass are streams on one connection
    // (over HTTP/1.1 the apply's concurrency opened up to 8). One more is allowed should the
    // server have closed it while idle (kube-apiserver: after 90 s without a stream).
    let total = proxy.connections();
    eprintln!("connections over the whole run: {total}");
    assert!(
        drift_connections <= 1,
        "the drift pass opened {drift_connections} connections"
    );
    assert!(total <= 2, "{total} connections to the workload API server");
    let overhead: Vec<&String> = drift_requests.iter().filter(|r| is_overhead(r)).collect();
    assert!(
        overhead.is_empty(),
        "the drift pass sent health/version/discovery requests: {overhead:?}"
    );
    // The inventory read and one list per kind of the addons (Deployment, Service,
    // ServiceAccount, ConfigMap...), whatever changed: bounded by the kinds, not the objects.
    assert!(
        drift_requests.len() <= 12,
        "the drift pass sent {} requests: {drift_requests:?}",
        drift_requests.len()
    );
}

/// With drift watches listing every kind of the addon, a due drift pass sends nothing to the
/// workload cluster: an idle addon costs its watches only (issue 26 §4). Watch requests show
/// in the audit log only when they end; none ends within the minute.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_addon_costs_no_request_when_idle() {
    let test = "a_watched_addon_costs_no_request_when_idle";
    let Some(counted) = counted(test, &[], &["v1"]).await else {
        return;
    };
    let applied_at = last_reconciled(&counted.env).await.expect("lastReconciled set");
    let checks_before = addon_drift_checks(counted.metrics_port)
        .await
        .expect("metrics answer");
    let requests_before = counted.audit.requests().len();
    eventually(
        "a drift check",
        Duration::from_secs(120),
        &counted.operator,
        || async { (addon_drift_checks(counted.metrics_port).await? > checks_before).then_some(()) },
    )
    .await;
    // The watches vouched for it: nothing written to the management cluster either.
    assert_eq!(
        last_reconciled(&counted.env).await,
        Some(applied_at),
        "the watched check wrote lastReconciled"
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    let requests = passes_requests(&counted, requests_before);
    eprintln!(
        "idle drift pass with watches: {} requests: {requests:?}",
        requests.len()
    );
    assert!(
        requests.is_empty(),
        "the drift pass of a watched addon sent requests: {requests:?}"
    );
}

/// Issue 36 §1: a first apply with its drift watches sends no LIST to the workload cluster
/// but the lookups of its objects among capstan's own (issue 45 §5): the inventory read, the
/// applies and the inventory write; the watches start from the resourceVersions the applies
/// wrote.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_apply_with_its_watches_lists_nothing() {
    let test = "a_first_apply_with_its_watches_lists_nothing";
    let Some(counted) = counted(test, &[], &["v1"]).await else {
        return;
    };
    // A watch that listed would have done so at once; give it the time a loaded machine needs.
    tokio::time::sleep(Duration::from_secs(3)).await;
    // The test's own reads aside: the test API server's start polls until its `default`
    // namespace exists (once or twice).
    let requests: Vec<String> = passes_requests(&counted, 0)
        .into_iter()
        .filter(|r| !is_overhead(r) && r != "get /api/v1/namespaces/default")
        .collect();
    let mut by_verb = std::collections::BTreeMap::<&str, usize>::new();
    for request in &requests {
        *by_verb
            .entry(request.split(' ').next().unwrap_or_default())
            .or_default() += 1;
    }
    eprintln!(
        "first apply with watches: {} requests {by_verb:?}: {requests:#?}",
        requests.len()
    );
    // Issue 45 §5: the objects not in the inventory yet are looked up among capstan's own (a
    // list of metadata per resource and namespace, by capstan's label) to leave another
    // inventory's alone; nothing else is listed, nothing twice.
    let lists = ownership_lookups_only(&requests);
    assert!(!lists.is_empty(), "no object was looked up: {requests:#?}");
    by_verb.remove("list");
    // Pinned: the inventory read, 15 applies and the inventory write; the APIService, which
    // kube-apiserver 1.20 cannot server-side-apply, read and created. Before issue 36 §1/§3
    // the drift watches' first listings added one LIST per kind (11 here).
    let pinned = std::collections::BTreeMap::from([("create", 1), ("get", 2), ("patch", 16)]);
    assert_eq!(by_verb, pinned, "{requests:#?}");
}

/// The LISTs among `requests`, each the lookup of objects not in the inventory among
/// capstan's own (selected by its label), each once; fails on any other.
fn ownership_lookups_only(requests: &[String]) -> Vec<&String> {
    let lists: Vec<&String> = requests.iter().filter(|r| r.starts_with("list ")).collect();
    let others: Vec<&&String> = lists
        .iter()
        .filter(|r| !r.contains("labelSelector=capstan.dev%2Fmanaged%3Dtrue"))
        .collect();
    assert!(
        others.is_empty(),
        "listed more than capstan's objects: {others:#?}"
    );
    let distinct: std::collections::BTreeSet<&&String> = lists.iter().collect();
    assert_eq!(distinct.len(), lists.len(), "listed twice: {lists:#?}");
    lists
}

/// Issue 36 §1: the upgrade of an addon whose drift watches saw every change since its last
/// apply lists nothing but the lookups of the objects new to its inventory — the class switch costs the inventory read, the applies of what
/// changed and the inventory writes; the watches of new kinds start from the applies'
/// resourceVersions and list nothing either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_of_a_watched_addon_lists_nothing() {
    let test = "an_upgrade_of_a_watched_addon_lists_nothing";
    let Some(counted) = counted(test, &[], &["v1", "v2"]).await else {
        return;
    };
    let requests_before = counted.audit.requests().len();
    counted.env.set_class(CLUSTER, NEXT_CLASS).await;
    counted
        .env
        .wait_applied(CLUSTER, NEXT_CLASS, &counted.operator, Duration::from_secs(180))
        .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let requests: Vec<String> = passes_requests(&counted, requests_before)
        .into_iter()
        .filter(|r| !is_overhead(r))
        .collect();
    eprintln!("upgrade with watches: {} requests: {requests:#?}", requests.len());
    // Only the objects new to the inventory are looked up (issue 45 §5).
    ownership_lookups_only(&requests);
    // Pinned: the inventory read, 9 applies of what changed and the inventory write; the
    // APIService applied, read and updated (kube-apiserver 1.20); the object v2 dropped read
    // (still ours?) and pruned. No watch request: the watches of the kinds both releases have
    // go on, none ends.
    let mut by_verb = std::collections::BTreeMap::<&str, usize>::new();
    for request in &requests {
        *by_verb
            .entry(request.split(' ').next().unwrap_or_default())
            .or_default() += 1;
    }
    by_verb.remove("list");
    let pinned = std::collections::BTreeMap::from([("delete", 1), ("get", 3), ("patch", 11), ("update", 1)]);
    assert_eq!(by_verb, pinned, "{requests:#?}");
}
