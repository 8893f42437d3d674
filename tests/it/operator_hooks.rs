//! The Runtime SDK hooks of `capstan operator` against a real kube-apiserver: capstan's CRDs
//! installed, ClusterAddons created with the status the ClusterAddon controller would write,
//! and the hooks server running in this process on 127.0.0.1 with a generated certificate.
//! Requests are POSTed over HTTPS as Cluster API sends them; every decision is read back from
//! the ClusterAddon's status, where all of the hooks' state lives.
//!
//! The scenario runs twice (issue 47): on a server without Cluster API, the requests' Clusters
//! in v1beta1's shape (`spec.topology.class`), and on one with v1.14.0-rc.1's CRDs serving
//! only v1beta2, the requests' Clusters in v1beta2's shape (`spec.topology.classRef`), with
//! the same answers; the pass overlapping a hook call runs on both CRD sets.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use capstan_operator::api::{self, ClusterAddon};
use capstan_operator::testing::hooks::serve_with;
use capstan_operator::testing::webhook::{Certificate, GeneratedCert, generate};
use capstan_stack::capi::CapiVersion;
use capstan_testenv::{Binaries, TestCluster};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::events::v1::Event;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value as Json, json};

const NS: &str = "tenant";
const API_VERSION: &str = "hooks.runtime.cluster.x-k8s.io/v1alpha1";
const UPGRADE: &str = "/hooks.runtime.cluster.x-k8s.io/v1alpha1/beforeclusterupgrade/before-cluster-upgrade";
const INITIALIZED: &str =
    "/hooks.runtime.cluster.x-k8s.io/v1alpha1/aftercontrolplaneinitialized/after-control-plane-initialized";
const DISCOVERY: &str = "/hooks.runtime.cluster.x-k8s.io/v1alpha1/discovery";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_hooks_block_upgrades_until_addons_are_applied_and_never_past_the_timeout() {
    let test = "runtime_hooks_block_upgrades_until_addons_are_applied_and_never_past_the_timeout";
    let Some(bins) = Binaries::find_or_skip(test) else {
        return;
    };
    let cluster = TestCluster::start(&bins, "hooks").await.expect("cluster starts");
    let client = cluster.client();
    let crds = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        crds.path().join("capstan.yaml"),
        api::crds_yaml().expect("CRD YAML"),
    )
    .expect("write CRDs");
    capstan_testenv::install_crds(&client, crds.path())
        .await
        .expect("capstan CRDs install");
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": NS}})).expect("namespace"),
        )
        .await
        .expect("namespace created");
    hooks_scenario(&cluster, CapiVersion::V1Beta1).await;
}

/// The same scenario where Cluster API serves only v1beta2 and sends v1beta2 Clusters; then
/// the pass overlapping a hook call, on the same server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_hooks_answer_alike_for_v1beta2_clusters() {
    let test = "runtime_hooks_answer_alike_for_v1beta2_clusters";
    let Some(env) = crate::operator_common::start_v1beta2(test, &[], &[]).await else {
        return;
    };
    assert_eq!(env.ns, NS);
    hooks_scenario(&env.cluster, CapiVersion::V1Beta2).await;
    a_pass_overlapping_a_hook_call(&env).await;
}

/// Every hooks case, the requests' Clusters in `capi`'s shape, on `cluster` (capstan's CRDs and
/// namespace [`NS`] there).
async fn hooks_scenario(cluster: &TestCluster, capi: CapiVersion) {
    let client = cluster.client();
    let cert = generate(&[]).expect("certificate");
    let (stop, stopped) = tokio::sync::watch::channel(false);
    // One server that waits long, one whose timeout passes during the test.
    let patient = start_server(&cert, client.clone(), Duration::from_secs(600), stopped.clone()).await;
    let hasty = start_server(&cert, client.clone(), Duration::from_secs(2), stopped.clone()).await;
    let hooks = Hooks::new(&cert, capi);

    discovery_lists_both_handlers(&hooks, patient).await;
    blocks_until_the_new_class_is_applied(&hooks, patient, &client).await;
    released_after_the_timeout_and_recorded(&hooks, hasty, &client).await;
    clusters_without_addons_proceed_at_once(&hooks, patient).await;
    after_control_plane_initialized_succeeds(&hooks, patient).await;
    bad_requests_are_answered(&hooks, patient).await;
    // A second replica: the same state, read from the ClusterAddon, not from memory.
    let replica = start_server(&cert, client.clone(), Duration::from_secs(2), stopped.clone()).await;
    concurrent_calls_on_two_replicas_release_once(&hooks, [hasty, replica], &client).await;
    stop.send(true).expect("servers stop");

    the_operator_serves_the_hooks_with_its_flags(cluster, &client, capi).await;
}

/// `capstan operator --hooks-addr … --upgrade-hook-timeout 2s` with the webhook certificate
/// directory: the same answers from the operator process.
async fn the_operator_serves_the_hooks_with_its_flags(
    cluster: &TestCluster,
    client: &Client,
    capi: CapiVersion,
) {
    let cert = generate(&[]).expect("certificate");
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("tls.crt"), &cert.cert_pem).expect("write cert");
    std::fs::write(dir.path().join("tls.key"), &cert.key_pem).expect("write key");
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    let args: Vec<String> = [
        "operator",
        "--kubeconfig",
        &cluster.kubeconfig_path().display().to_string(),
        "--cache-dir",
        &dir.path().join("cache").display().to_string(),
        "--hooks-addr",
        &addr.to_string(),
        "--upgrade-hook-timeout",
        "2s",
        "--webhook-cert-dir",
        &dir.path().display().to_string(),
        // With Cluster API served, the ClusterAddon controller would take these ClusterAddons
        // (made by hand, without Clusters) for ones whose Cluster is gone.
        "--controllers",
        "*,-clusteraddon",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let log = dir.path().join("operator.log");
    let mut operator = capstan_testenv::ChildGuard::spawn(
        "capstan operator",
        std::path::Path::new(env!("CARGO_BIN_EXE_capstan")),
        &args,
        &log,
    )
    .expect("operator starts");
    let hooks = Hooks::new(&cert, capi);
    let started = Instant::now();
    loop {
        if let Some(exit) = operator.exited() {
            panic!("{exit}: {}", std::fs::read_to_string(&log).unwrap_or_default());
        }
        let up = hooks
            .http
            .post(format!("https://{addr}{DISCOVERY}"))
            .body("{}")
            .send()
            .await
            .is_ok();
        if up {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the hooks server did not come up: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    discovery_lists_both_handlers(&hooks, addr).await;

    create_addon(
        client,
        "c4",
        json!({"appliedClusterStack": "docker-ferrol-1-27-v1", "ready": true}),
    )
    .await;
    let answer = hooks.before_upgrade(addr, "c4", "docker-ferrol-1-27-v2").await;
    assert!(retry(&answer) > 0, "{answer}");
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let answer = hooks.before_upgrade(addr, "c4", "docker-ferrol-1-27-v2").await;
    assert_eq!(retry(&answer), 0, "the 2 s timeout holds: {answer}");
    let status = status_of(client, "c4").await;
    assert!(
        status["upgradeHookReleased"]
            .as_str()
            .is_some_and(|m| m.contains("after its timeout of 2s")),
        "{status}"
    );
    operator.kill();
}

async fn start_server(
    cert: &GeneratedCert,
    client: Client,
    timeout: Duration,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("local address");
    let shutdown = async move {
        let _ = stopped.wait_for(|stop| *stop).await;
    };
    let cert = Certificate::Generated(cert.clone());
    tokio::spawn(async move {
        if let Err(e) = serve_with(listener, cert, client, timeout, shutdown).await {
            panic!("hooks server failed: {e}");
        }
    });
    addr
}

struct Hooks {
    http: reqwest::Client,
    /// The shape of the Clusters in the requests (what the Cluster API sending them serves).
    capi: CapiVersion,
}

impl Hooks {
    /// A client trusting `cert`'s CA, sending Clusters in `capi`'s shape.
    fn new(cert: &GeneratedCert, capi: CapiVersion) -> Hooks {
        let http = reqwest::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(cert.ca_pem.as_bytes()).expect("CA"))
            .build()
            .expect("HTTP client");
        Hooks { http, capi }
    }

    /// A `hook` request about Cluster `cluster` (on `class`, when given).
    fn request(&self, hook: &str, cluster: &str, class: Option<&str>) -> Json {
        request(self.capi, hook, cluster, class)
    }

    /// POSTs `body` to `path`: the HTTP status and the JSON answer.
    async fn post(&self, addr: SocketAddr, path: &str, body: Json) -> (u16, Json) {
        let response = self
            .http
            .post(format!("https://{addr}{path}"))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("hooks server answers");
        let status = response.status().as_u16();
        let text = response.text().await.expect("body");
        let json = serde_json::from_str(&text).unwrap_or(Json::String(text));
        (status, json)
    }

    /// `BeforeClusterUpgrade` for Cluster `name` moving to `class`.
    async fn before_upgrade(&self, addr: SocketAddr, name: &str, class: &str) -> Json {
        let (status, answer) = self
            .post(
                addr,
                UPGRADE,
                self.request("BeforeClusterUpgrade", name, Some(class)),
            )
            .await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["kind"], "BeforeClusterUpgradeResponse", "{answer}");
        answer
    }
}

/// A `hook` request about Cluster `cluster` (on `class`, when given) in `capi`'s shape.
fn request(capi: CapiVersion, hook: &str, cluster: &str, class: Option<&str>) -> Json {
    let mut spec = match capi {
        CapiVersion::V1Beta1 => json!({"controlPlaneRef": {"kind": "KubeadmControlPlane", "name": cluster}}),
        CapiVersion::V1Beta2 => json!({"controlPlaneRef": {
            "apiGroup": "controlplane.cluster.x-k8s.io", "kind": "KubeadmControlPlane", "name": cluster}}),
    };
    if let Some(class) = class {
        spec["topology"] = match capi {
            CapiVersion::V1Beta1 => json!({"class": class, "version": "v1.27.3"}),
            CapiVersion::V1Beta2 => json!({"classRef": {"name": class}, "version": "v1.27.3"}),
        };
    }
    json!({
        "apiVersion": API_VERSION,
        "kind": format!("{hook}Request"),
        "cluster": {
            "apiVersion": capi.api_version(),
            "kind": "Cluster",
            "metadata": {"name": cluster, "namespace": NS},
            "spec": spec,
        },
        "fromKubernetesVersion": "v1.27.3",
        "toKubernetesVersion": "v1.27.3",
    })
}

fn addons(client: &Client) -> Api<ClusterAddon> {
    Api::namespaced(client.clone(), NS)
}

/// Creates the ClusterAddon of Cluster `cluster` with `status`.
async fn create_addon(client: &Client, cluster: &str, status: Json) {
    let name = format!("cluster-addon-{cluster}");
    let addon: ClusterAddon = serde_json::from_value(json!({
        "apiVersion": "clusterstack.x-k8s.io/v1alpha1",
        "kind": "ClusterAddon",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"clusterRef": {"kind": "Cluster", "name": cluster, "namespace": NS}},
    }))
    .expect("ClusterAddon");
    addons(client)
        .create(&PostParams::default(), &addon)
        .await
        .expect("ClusterAddon created");
    set_status(client, cluster, status).await;
}

async fn set_status(client: &Client, cluster: &str, status: Json) {
    addons(client)
        .patch_status(
            &format!("cluster-addon-{cluster}"),
            &PatchParams::default(),
            &Patch::Merge(json!({"status": status})),
        )
        .await
        .expect("status written");
}

async fn status_of(client: &Client, cluster: &str) -> Json {
    let addon = addons(client)
        .get(&format!("cluster-addon-{cluster}"))
        .await
        .expect("ClusterAddon read");
    serde_json::to_value(addon.status).expect("status")
}

fn retry(answer: &Json) -> i64 {
    answer["retryAfterSeconds"].as_i64().unwrap_or(-1)
}

async fn discovery_lists_both_handlers(hooks: &Hooks, addr: SocketAddr) {
    let (status, answer) = hooks
        .post(
            addr,
            DISCOVERY,
            json!({"apiVersion": API_VERSION, "kind": "DiscoveryRequest"}),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["kind"], "DiscoveryResponse");
    assert_eq!(answer["status"], "Success");
    let handlers: Vec<(String, String, String)> = answer["handlers"]
        .as_array()
        .expect("handlers")
        .iter()
        .map(|h| {
            assert!(
                h["timeoutSeconds"]
                    .as_i64()
                    .is_some_and(|t| (1..=30).contains(&t)),
                "{h}"
            );
            (
                h["name"].as_str().unwrap_or_default().to_string(),
                h["requestHook"]["hook"].as_str().unwrap_or_default().to_string(),
                h["failurePolicy"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(
        handlers,
        [
            (
                "before-cluster-upgrade".into(),
                "BeforeClusterUpgrade".into(),
                "Fail".into()
            ),
            (
                "after-control-plane-initialized".into(),
                "AfterControlPlaneInitialized".into(),
                "Ignore".into()
            ),
        ]
    );
}

async fn blocks_until_the_new_class_is_applied(hooks: &Hooks, addr: SocketAddr, client: &Client) {
    create_addon(
        client,
        "c1",
        json!({"appliedClusterStack": "docker-ferrol-1-27-v1", "ready": true}),
    )
    .await;
    // No upgrade: the Cluster's class is the one applied.
    let answer = hooks.before_upgrade(addr, "c1", "docker-ferrol-1-27-v1").await;
    assert_eq!(
        (answer["status"].as_str(), retry(&answer)),
        (Some("Success"), 0),
        "{answer}"
    );
    assert_eq!(status_of(client, "c1").await.get("upgradeHookSince"), None);

    // Moving to v2: blocks, and the wait's start is in the status.
    let answer = hooks.before_upgrade(addr, "c1", "docker-ferrol-1-27-v2").await;
    assert_eq!(answer["status"], "Success", "{answer}");
    assert!((5..=10).contains(&retry(&answer)), "{answer}");
    assert_eq!(
        answer["message"],
        "waiting for the addons of docker-ferrol-1-27-v2 to be applied (applied: docker-ferrol-1-27-v1, ready: true)"
    );
    let status = status_of(client, "c1").await;
    let since = status["upgradeHookSince"].clone();
    assert!(since.is_string(), "{status}");
    assert_eq!(status["upgradeHookTarget"], "docker-ferrol-1-27-v2");

    // Asked again: still blocks, the start is not moved.
    let answer = hooks.before_upgrade(addr, "c1", "docker-ferrol-1-27-v2").await;
    assert!(retry(&answer) > 0, "{answer}");
    assert_eq!(status_of(client, "c1").await["upgradeHookSince"], since);

    // v2 applied but not ready yet: blocks.
    set_status(
        client,
        "c1",
        json!({"appliedClusterStack": "docker-ferrol-1-27-v2", "ready": false}),
    )
    .await;
    let answer = hooks.before_upgrade(addr, "c1", "docker-ferrol-1-27-v2").await;
    assert!(retry(&answer) > 0, "{answer}");

    // Applied and ready: proceeds, and the wait is forgotten.
    set_status(client, "c1", json!({"ready": true})).await;
    let answer = hooks.before_upgrade(addr, "c1", "docker-ferrol-1-27-v2").await;
    assert_eq!(
        (answer["status"].as_str(), retry(&answer)),
        (Some("Success"), 0),
        "{answer}"
    );
    let status = status_of(client, "c1").await;
    for field in ["upgradeHookSince", "upgradeHookTarget", "upgradeHookReleased"] {
        assert_eq!(status.get(field), None, "{field} cleared: {status}");
    }
    assert_eq!(
        status["appliedClusterStack"], "docker-ferrol-1-27-v2",
        "the rest stays"
    );
}

async fn released_after_the_timeout_and_recorded(hooks: &Hooks, addr: SocketAddr, client: &Client) {
    create_addon(
        client,
        "c2",
        json!({"appliedClusterStack": "docker-ferrol-1-27-v1", "ready": true}),
    )
    .await;
    let started = Instant::now();
    let answer = hooks.before_upgrade(addr, "c2", "docker-ferrol-1-27-v2").await;
    assert!(retry(&answer) > 0, "blocks first: {answer}");
    // The addons never arrive: asked again and again, it lets go after 2 s (the status keeps
    // the start to the second, so up to a second sooner), and well before 10 s.
    let answer = loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let answer = hooks.before_upgrade(addr, "c2", "docker-ferrol-1-27-v2").await;
        if retry(&answer) == 0 {
            break answer;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "still blocked: {answer}"
        );
    };
    let waited = started.elapsed();
    assert!(waited >= Duration::from_secs(1), "released after {waited:?}");
    assert_eq!(answer["status"], "Success");
    let expected = "BeforeClusterUpgrade to docker-ferrol-1-27-v2 let through after its timeout of 2s: \
                    the addons of docker-ferrol-1-27-v2 are not applied (applied: docker-ferrol-1-27-v1, ready: true)";
    assert_eq!(answer["message"], expected);
    let status = status_of(client, "c2").await;
    assert_eq!(status["upgradeHookReleased"], expected, "{status}");
    assert_eq!(status["upgradeHookTarget"], "docker-ferrol-1-27-v2");

    // Called again for the same upgrade: proceeds without a new wait.
    let answer = hooks.before_upgrade(addr, "c2", "docker-ferrol-1-27-v2").await;
    assert_eq!(retry(&answer), 0, "{answer}");
    assert_eq!(status_of(client, "c2").await, status);

    // The release is reported as a Warning event on the ClusterAddon.
    let events: Api<Event> = Api::namespaced(client.clone(), NS);
    let found = events
        .list(&ListParams::default())
        .await
        .expect("events listed")
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("UpgradeHookTimedOut"))
        .collect::<Vec<_>>();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].type_.as_deref(), Some("Warning"));
    assert_eq!(found[0].note.as_deref(), Some(expected));
    assert_eq!(
        found[0].regarding.as_ref().and_then(|r| r.name.as_deref()),
        Some("cluster-addon-c2")
    );

    // The next upgrade waits again, from its own start.
    let answer = hooks.before_upgrade(addr, "c2", "docker-ferrol-1-27-v3").await;
    assert!(retry(&answer) > 0, "{answer}");
    let status = status_of(client, "c2").await;
    assert_eq!(status["upgradeHookTarget"], "docker-ferrol-1-27-v3");
    assert_eq!(status.get("upgradeHookReleased"), None, "{status}");
}

/// Many calls at once, spread over two servers: one wait starts, one release is recorded and
/// reported.
async fn concurrent_calls_on_two_replicas_release_once(
    hooks: &Hooks,
    servers: [SocketAddr; 2],
    client: &Client,
) {
    create_addon(
        client,
        "c5",
        json!({"appliedClusterStack": "docker-ferrol-1-27-v1", "ready": true}),
    )
    .await;
    let burst = || {
        futures::future::join_all(
            (0..8).map(|i| hooks.before_upgrade(servers[i % 2], "c5", "docker-ferrol-1-27-v2")),
        )
    };
    let answers = burst().await;
    assert!(answers.iter().all(|a| retry(a) > 0), "all block: {answers:?}");
    let since = status_of(client, "c5").await["upgradeHookSince"].clone();
    assert!(since.is_string());

    tokio::time::sleep(Duration::from_millis(2100)).await;
    let answers = burst().await;
    assert!(answers.iter().all(|a| retry(a) == 0), "all proceed: {answers:?}");
    let status = status_of(client, "c5").await;
    assert_eq!(status["upgradeHookSince"], since, "one wait: {status}");
    assert!(status["upgradeHookReleased"].is_string(), "{status}");
    let events: Api<Event> = Api::namespaced(client.clone(), NS);
    let reported = events
        .list(&ListParams::default())
        .await
        .expect("events listed")
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("cluster-addon-c5"))
        .collect::<Vec<_>>();
    assert_eq!(reported.len(), 1, "one event: {reported:?}");
    assert_eq!(
        reported[0].series, None,
        "reported once, not repeated: {reported:?}"
    );
}

async fn clusters_without_addons_proceed_at_once(hooks: &Hooks, addr: SocketAddr) {
    let answer = hooks
        .before_upgrade(addr, "not-a-stack", "some-other-class")
        .await;
    assert_eq!(
        (answer["status"].as_str(), retry(&answer)),
        (Some("Success"), 0),
        "{answer}"
    );
    // Without a topology there is no class either.
    let (status, answer) = hooks
        .post(
            addr,
            UPGRADE,
            hooks.request("BeforeClusterUpgrade", "plain", None),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(retry(&answer), 0, "{answer}");
}

async fn after_control_plane_initialized_succeeds(hooks: &Hooks, addr: SocketAddr) {
    let (status, answer) = hooks
        .post(
            addr,
            INITIALIZED,
            hooks.request(
                "AfterControlPlaneInitialized",
                "c1",
                Some("docker-ferrol-1-27-v2"),
            ),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        answer,
        json!({"apiVersion": API_VERSION, "kind": "AfterControlPlaneInitializedResponse", "status": "Success"})
    );
}

async fn bad_requests_are_answered(hooks: &Hooks, addr: SocketAddr) {
    let (status, answer) = hooks.post(addr, UPGRADE, json!({"cluster": {}})).await;
    assert_eq!(status, 200);
    assert_eq!(answer["status"], "Failure");
    assert_eq!(
        answer["message"],
        "the request's cluster has no metadata.name and metadata.namespace"
    );
    let (status, answer) = hooks.post(addr, "/somewhere", json!({})).await;
    assert_eq!(status, 404, "{answer}");
}

/// A ClusterAddon pass that read the addon before a `BeforeClusterUpgrade` call wrote its wait
/// saves its status after that write: the hook's fields stay as the hook wrote them (the pass
/// writes only the fields it owns).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_overlapping_a_hook_call_keeps_the_hooks_fields() {
    let test = "a_pass_overlapping_a_hook_call_keeps_the_hooks_fields";
    let Some(env) = crate::operator_common::start(test, &[]).await else {
        return;
    };
    a_pass_overlapping_a_hook_call(&env).await;
}

/// [`a_pass_overlapping_a_hook_call_keeps_the_hooks_fields`] on `env`'s Cluster API; the pass
/// runs in this process, which discovers the version to speak as the operator does.
async fn a_pass_overlapping_a_hook_call(env: &crate::operator_common::Env) {
    let client = env.client();
    assert_eq!(
        capstan_operator::testing::capi_api::ensure_discovered(&client).await,
        env.capi
    );
    let (v1, v2, v3) = (
        "docker-ferrol-1-27-v1",
        "docker-ferrol-1-27-v2",
        "docker-ferrol-1-27-v3",
    );
    // The control plane is not ready: the pass records that gate and saves.
    env.cluster_api("c9", v3, "127.0.0.1", &env.cluster, true).await;
    let name = "cluster-addon-c9";
    let mut addon: ClusterAddon = serde_json::from_value(json!({
        "apiVersion": "clusterstack.x-k8s.io/v1alpha1",
        "kind": "ClusterAddon",
        "metadata": {"name": name, "namespace": NS,
                     "finalizers": [capstan_operator::testing::controller::cluster_addon::FINALIZER]},
        "spec": {"clusterRef": {"kind": "Cluster", "name": "c9", "namespace": NS}},
    }))
    .expect("ClusterAddon");
    addon = addons(&client)
        .create(&PostParams::default(), &addon)
        .await
        .expect("ClusterAddon created");
    // An earlier wait, for v2, released after its timeout.
    set_status(
        &client,
        "c9",
        json!({"appliedClusterStack": v1, "ready": true,
               "upgradeHookSince": "2026-01-01T00:00:00Z", "upgradeHookTarget": v2,
               "upgradeHookReleased": "let through after its timeout"}),
    )
    .await;
    // The pass's read (the controller's cached copy).
    let read = addons(&client).get(name).await.expect("ClusterAddon read");
    assert_eq!(read.metadata.name, addon.metadata.name);

    // The hook call in between: a new wait, for v3.
    let cert = generate(&[]).expect("certificate");
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let server = start_server(&cert, client.clone(), Duration::from_secs(600), stopped).await;
    let http = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(cert.ca_pem.as_bytes()).expect("CA"))
        .build()
        .expect("HTTP client");
    let answer = Hooks { http, capi: env.capi }
        .before_upgrade(server, "c9", v3)
        .await;
    assert!(retry(&answer) > 0, "the upgrade waits: {answer}");
    stop.send(true).expect("server stops");
    let hooked = status_of(&client, "c9").await;
    assert_eq!(hooked["upgradeHookTarget"], v3, "{hooked}");

    // The pass, from what it read, saves after the hook's write.
    let cache = tempfile::tempdir().expect("temp dir");
    let settings = capstan_operator::Settings::local(cache.path().join("cache"));
    let sources = capstan_operator::testing::sources::Sources::new(
        capstan_source::cache::Cache::open(cache.path().join("releases")).expect("cache"),
        None,
    );
    let (stacks, _writer) = kube::runtime::reflector::store();
    let ctx = std::sync::Arc::new(capstan_operator::testing::context::Context::new(
        client.clone(),
        settings,
        sources,
        std::sync::Arc::new(capstan_operator::Metrics::new()),
        stacks,
    ));
    let controller =
        std::sync::Arc::new(capstan_operator::testing::controller::cluster_addon::AddonController::new(ctx));
    capstan_operator::testing::controller::cluster_addon::reconcile(std::sync::Arc::new(read), controller)
        .await
        .expect("the pass waits for the control plane");

    let status = status_of(&client, "c9").await;
    let gate = status["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "ClusterReady"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(gate["reason"], "ControlPlaneNotReady", "the pass saved: {status}");
    for field in ["upgradeHookSince", "upgradeHookTarget", "upgradeHookReleased"] {
        assert_eq!(
            status[field], hooked[field],
            "{field} as the hook wrote it: {status}"
        );
    }
}
